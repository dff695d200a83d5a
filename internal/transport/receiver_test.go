package transport

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// dataFrom builds the frames a sender on B writes to A (QP qpnA), through
// a sending engine, so the receiver reads what the sender really sends.
func dataFrom(t *testing.T, data []byte, seg int, vaddr uint64, rkey uint32) [][]byte {
	t.Helper()
	e, err := New(Config{Addr: addrB, Clock: &testClock{}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.OpenQP(QPConfig{LocalQPN: qpnB, PeerQPN: qpnA, Peer: addrA, Segment: seg, Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Write(WriteRequest{Data: data, RemoteVAddr: vaddr, RKey: rkey}); err != nil {
		t.Fatal(err)
	}
	return e.TakeOutput(nil)
}

func TestReceiverPlacesInAnyOrder(t *testing.T) {
	clk := &testClock{}
	e, err := New(Config{Addr: addrA, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.OpenQP(QPConfig{LocalQPN: qpnA, PeerQPN: qpnB, Peer: addrB})
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, 1000)
	mr, err := e.RegisterMR(0x10000, 0x77, mem)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 600)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	frames := dataFrom(t, data, 64, 0x10000+100, 0x77) // 10 packets into [100, 700)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	// The immediate packet last: not complete before it.
	last := -1
	for i, f := range frames {
		if p, _ := mrcpkt.Parse(f); p.BTH.Opcode == mrcpkt.OpWriteLastImm {
			last = i
		}
	}
	frames[last], frames[len(frames)-1] = frames[len(frames)-1], frames[last]

	// Damage: a bad rkey, an address past the region, a DMA length that
	// is not the payload's, a duplicate.
	bad := func(mut func(p *mrcpkt.Packet)) []byte {
		p, err := mrcpkt.Parse(frames[0])
		if err != nil {
			t.Fatal(err)
		}
		mut(p)
		return serialize(t, p)
	}
	for _, f := range [][]byte{
		bad(func(p *mrcpkt.Packet) { p.RETH.RKey = 0x78 }),
		bad(func(p *mrcpkt.Packet) { p.RETH.VAddr = 0x10000 + 990 }),
		bad(func(p *mrcpkt.Packet) { p.RETH.VAddr = 0x10000 - 1 }),
		bad(func(p *mrcpkt.Packet) { p.RETH.VAddr = ^uint64(0) - 10 }),
		bad(func(p *mrcpkt.Packet) { p.RETH.DMALen = 1 << 31 }),
	} {
		handle(t, e, f)
	}
	for i, f := range frames[:len(frames)-1] {
		handle(t, e, f)
		if i == 2 {
			handle(t, e, f) // a duplicate
		}
	}
	if n := len(q.Received()); n != 0 {
		t.Fatalf("complete before the immediate packet: %d", n)
	}
	handle(t, e, frames[len(frames)-1])
	rs, err := q.WaitReceived(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; r.VAddr != 0x10000+100 || r.Length != 600 || r.Packets != 10 || r.Duplicates != 1 {
		t.Errorf("received %+v", r)
	}
	if !bytes.Equal(mr.Bytes()[100:700], data) {
		t.Error("placed bytes differ from the data")
	}
	if !bytes.Equal(mem[:100], make([]byte, 100)) || !bytes.Equal(mem[700:], make([]byte, 300)) {
		t.Error("bytes outside the write changed")
	}
	want := RecvCounters{Packets: 16, Bytes: 600, Duplicates: 1, BadRKey: 1, OutOfBounds: 4, Messages: 1}
	if c := q.RecvCounters(); c != want {
		t.Errorf("counters %+v\nwant     %+v", c, want)
	}
}

// Completion needs every byte: with one middle packet missing the write is
// not complete, whatever else arrived.
func TestReceiverNeedsEveryByte(t *testing.T) {
	e, err := New(Config{Addr: addrA, Clock: &testClock{}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.OpenQP(QPConfig{LocalQPN: qpnA, PeerQPN: qpnB, Peer: addrB})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.RegisterMR(0, 1, make([]byte, 512)); err != nil {
		t.Fatal(err)
	}
	frames := dataFrom(t, make([]byte, 512), 64, 0, 1)
	for i, f := range frames {
		if i != 3 {
			handle(t, e, f)
		}
	}
	if n := len(q.Received()); n != 0 {
		t.Fatal("complete with packet 3 missing")
	}
	handle(t, e, frames[3])
	if n := len(q.Received()); n != 1 {
		t.Fatal("not complete with every packet")
	}
	// A second write into the same bytes completes on its own.
	for _, f := range frames {
		handle(t, e, f)
	}
	if c := q.RecvCounters(); c.Messages != 2 || c.Duplicates != 0 {
		t.Errorf("second write: %+v", c)
	}
}
