package transport

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// chanPort is one host port of an in-memory NIC pair.
type chanPort struct {
	out chan<- []byte // to the NIC
	in  <-chan []byte // from the NIC
}

func (p chanPort) Send(ctx context.Context, f []byte) error {
	select {
	case p.out <- f:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p chanPort) Recv(ctx context.Context) ([]byte, error) {
	select {
	case f, ok := <-p.in:
		if !ok {
			return nil, errors.New("port closed")
		}
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run moves a write from A to B through an in-memory NIC that loses every
// 7th data packet once and SACKs the rest truthfully; the write completes
// with B's memory equal to A's buffer. Then cancelling ctx stops Run with
// ctx's error, and a failing port stops it with the port's.
func TestRunOverPort(t *testing.T) {
	ea, err := New(Config{Addr: addrA})
	if err != nil {
		t.Fatal(err)
	}
	eb, err := New(Config{Addr: addrB})
	if err != nil {
		t.Fatal(err)
	}
	qa, err := ea.OpenQP(QPConfig{LocalQPN: qpnA, PeerQPN: qpnB, Peer: addrB, Segment: 256, StartPSN: 0xFFFFF8,
		MinRTO: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	qb, err := eb.OpenQP(QPConfig{LocalQPN: qpnB, PeerQPN: qpnA, Peer: addrA})
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, 64<<10)
	if _, err := eb.RegisterMR(0x9000, 5, mem); err != nil {
		t.Fatal(err)
	}
	aOut, aIn, bOut, bIn := make(chan []byte, 64), make(chan []byte, 1024), make(chan []byte, 64), make(chan []byte, 1024)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The NIC pair: A's data to B, SACKs back to A.
	go func() {
		nic := newRefNIC(0xFFFFF8)
		dropped := map[int]bool{}
		n := 0
		for {
			select {
			case f := <-aOut:
				i := PSNDiff(get24(f[offBTH+9:]), 0xFFFFF8)
				if n++; n%7 == 0 && !dropped[i] {
					dropped[i] = true
					continue
				}
				if !nic.arrived[i] {
					bIn <- f
				}
				aIn <- nic.deliver(t, i)
			case <-bOut:
			case <-ctx.Done():
				return
			}
		}
	}()
	runA, runB := make(chan error, 1), make(chan error, 1)
	actx, acancel := context.WithCancel(ctx)
	go func() { runA <- ea.Run(actx, chanPort{out: aOut, in: aIn}) }()
	closedIn := make(chan []byte)
	go func() { runB <- eb.Run(ctx, chanPort{out: bOut, in: mergeClose(bIn, closedIn)}) }()

	data := payload(len(mem))
	tr, err := qa.Write(WriteRequest{Data: data, RemoteVAddr: 0x9000, RKey: 5})
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qb.WaitReceived(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem, data) {
		t.Fatal("B's memory differs from A's buffer")
	}
	if st.Retransmits.Total() < st.Packets/7-1 || st.Duration() <= 0 {
		t.Errorf("stats %+v: about one packet in 7 must have been resent", st)
	}
	acancel()
	if err := <-runA; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v, want context.Canceled", err)
	}
	close(closedIn)
	if err := <-runB; err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Run on a failed port: %v, want the port's error", err)
	}
}

// mergeClose forwards a until b is closed, then closes its result.
func mergeClose(a <-chan []byte, b <-chan []byte) <-chan []byte {
	out := make(chan []byte)
	go func() {
		defer close(out)
		for {
			select {
			case f := <-a:
				select {
				case out <- f:
				case <-b:
					return
				}
			case <-b:
				return
			}
		}
	}()
	return out
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}
