package lab

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// fakeLab is a Lab with devices but no processes: what the host side of
// the wires sees, without BMv2. It captures host frames, as the BMv2 tests'
// lab does.
func fakeLab(names ...string) *Lab {
	return fakeLabWith(Options{CaptureHostFrames: true}, names...)
}

// fakeLabWith is fakeLab with the capture options of opt.
func fakeLabWith(opt Options, names ...string) *Lab {
	capture, err := newHostCapture(opt)
	if err != nil {
		panic(err)
	}
	l := &Lab{Devices: map[string]*Device{}, capture: capture, links: map[port]*wire{}}
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

// TestHostCaptureIsOptInAndBounded: a lab keeps no host frame unless asked
// (its hosts get them all the same), and when asked keeps the first
// HostFramesLimit per NIC since ResetCaptures and counts the rest.
func TestHostCaptureIsOptInAndBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Off: nothing kept, however many frames; an attached host and the
	// delivery count see every one.
	off := fakeLabWith(Options{}, "nic-0")
	h, err := off.AttachHost("nic-0")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const n = 5000
	for i := range n {
		off.deliverHost("nic-0", Frame{Seq: uint64(i), Data: make([]byte, 64)})
	}
	if got := off.HostFrames("nic-0"); len(got) != 0 {
		t.Errorf("capture off: %d frames kept", len(got))
	}
	if got := off.capture.frames["nic-0"]; len(got) != 0 {
		t.Errorf("capture off: the lab holds %d frames", len(got))
	}
	if got := off.HostDeliveries(); got != n {
		t.Errorf("capture off: HostDeliveries %d, want %d", got, n)
	}
	if got := h.Pending(); got != n {
		t.Errorf("capture off: the attached host has %d frames, want %d", got, n)
	}
	if _, err := off.WaitHostFrames(ctx, "nic-0", 1); err == nil || !strings.Contains(err.Error(), "CaptureHostFrames") {
		t.Errorf("WaitHostFrames without a capture: %v", err)
	}

	// On, limit 100: the first 100 of each NIC kept in order, the rest
	// counted; ResetCaptures empties both.
	const limit = 100
	on := fakeLabWith(Options{CaptureHostFrames: true, HostFramesLimit: limit}, "nic-0", "nic-1")
	for i := range limit + 37 {
		on.deliverHost("nic-0", Frame{Seq: uint64(i)})
	}
	on.deliverHost("nic-1", Frame{Seq: 1})
	got := on.HostFrames("nic-0")
	if len(got) != limit {
		t.Fatalf("limit %d: %d frames kept", limit, len(got))
	}
	for i, f := range got {
		if f.Seq != uint64(i) {
			t.Fatalf("frame %d kept is %d: want the first %d in order", i, f.Seq, limit)
		}
	}
	if d := on.HostFramesDropped("nic-0"); d != 37 {
		t.Errorf("nic-0: %d dropped, want 37", d)
	}
	if d, k := on.HostFramesDropped("nic-1"), len(on.HostFrames("nic-1")); d != 0 || k != 1 {
		t.Errorf("nic-1: %d kept, %d dropped; want 1 and 0", k, d)
	}
	if got, err := on.WaitHostFrames(ctx, "nic-0", limit); err != nil || len(got) != limit {
		t.Errorf("WaitHostFrames up to the limit: %d, %v", len(got), err)
	}
	if _, err := on.WaitHostFrames(ctx, "nic-0", limit+1); err == nil || !strings.Contains(err.Error(), "at most 100") {
		t.Errorf("WaitHostFrames beyond the limit: %v", err)
	}
	on.ResetCaptures()
	if k, d := len(on.HostFrames("nic-0")), on.HostFramesDropped("nic-0"); k != 0 || d != 0 {
		t.Errorf("after ResetCaptures: %d kept, %d dropped", k, d)
	}
	on.deliverHost("nic-0", Frame{Seq: 500})
	if got := on.HostFrames("nic-0"); len(got) != 1 || got[0].Seq != 500 {
		t.Errorf("after ResetCaptures the capture keeps again: %+v", got)
	}

	if _, err := newHostCapture(Options{CaptureHostFrames: true, HostFramesLimit: -1}); err == nil {
		t.Error("a negative limit accepted")
	}
}
