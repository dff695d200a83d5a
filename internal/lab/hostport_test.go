package lab

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// fakeLab is a Lab with devices but no processes: what the host side of
// the wires sees, without BMv2.
func fakeLab(names ...string) *Lab {
	l := &Lab{Devices: map[string]*Device{}, hostRx: map[string][]Frame{}, links: map[port]*wire{}}
	l.cond = sync.NewCond(&l.mu)
	for _, n := range names {
		role := plan.RoleNIC.String()
		if n[0] == 'p' {
			role = "t0"
		}
		l.Devices[n] = &Device{Device: artifacts.Device{Name: n, Role: role}}
	}
	return l
}

func TestHostPortReceivesInOrderBesideTheCapture(t *testing.T) {
	l := fakeLab("nic-0", "nic-1", "p0-t0-0")
	h, err := l.AttachHost("nic-0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AttachHost("nic-0"); err == nil {
		t.Error("a second host attached to nic-0")
	}
	if _, err := l.AttachHost("p0-t0-0"); err == nil {
		t.Error("a host attached to a switch")
	}
	const n = 1000
	go func() {
		for i := range n {
			l.deliverHost("nic-0", Frame{Seq: uint64(i), Device: "nic-0"})
			l.deliverHost("nic-1", Frame{Seq: uint64(i), Device: "nic-1"})
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		f, err := h.Recv(ctx)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Seq != uint64(i) || f.Device != "nic-0" {
			t.Fatalf("frame %d: got %+v", i, f)
		}
	}
	// The capture saw the same frames.
	if got, err := l.WaitHostFrames(ctx, "nic-0", n); err != nil || len(got) != n {
		t.Fatalf("capture: %d frames, %v", len(got), err)
	}
	if got := l.HostDeliveries(); got < n {
		t.Errorf("HostDeliveries %d, want at least %d", got, n)
	}
	if p := h.Pending(); p != 0 {
		t.Errorf("%d frames pending after receiving all", p)
	}

	// Recv honours its context, and Close ends it and frees the port.
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := h.Recv(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Recv on an idle port: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := h.Recv(ctx); done <- err }()
	h.Close()
	if err := <-done; !errors.Is(err, ErrDetached) {
		t.Errorf("Recv across Close: %v", err)
	}
	if err := h.Send([]byte{1}); !errors.Is(err, ErrDetached) {
		t.Errorf("Send after Close: %v", err)
	}
	if h2, err := l.AttachHost("nic-0"); err != nil {
		t.Errorf("attach after Close: %v", err)
	} else {
		h2.Close()
	}
}

func TestWaitHostDeliveriesMissesNothing(t *testing.T) {
	l := fakeLab("nic-0")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := l.HostDeliveries()
	go l.deliverHost("nic-0", Frame{})
	got, err := l.WaitHostDeliveries(ctx, seen)
	if err != nil || got != seen+1 {
		t.Fatalf("WaitHostDeliveries: %d, %v", got, err)
	}
	// Already past: returns at once.
	if got, err := l.WaitHostDeliveries(ctx, seen); err != nil || got != seen+1 {
		t.Fatalf("WaitHostDeliveries past: %d, %v", got, err)
	}
	short, c := context.WithTimeout(ctx, 20*time.Millisecond)
	defer c()
	if _, err := l.WaitHostDeliveries(short, seen+1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitHostDeliveries with nothing new: %v", err)
	}
}
