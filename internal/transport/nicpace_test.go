package transport

import (
	"slices"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// With Config.NICRate the engine hands its NIC one packet per packet time
// at that rate, the writes with something to send taking turns, and
// NextDeadline brings it back when the NIC is free again. Two QPs start a
// 3-packet write each at once: 104-byte frames (94 of headers and 10 of
// payload) plus 16 of overhead at 8 Gb/s take 120 ns each.
func TestNICRatePacesAndAlternates(t *testing.T) {
	clk := &testClock{t: time.Unix(1_000_000, 0)}
	e, err := New(Config{Addr: addrA, Clock: clk, NICRate: 8e9, NICFrameOverhead: 16})
	if err != nil {
		t.Fatal(err)
	}
	var qps []*QP
	for i, peer := range []uint32{0x0202, 0x0303} {
		q, err := e.OpenQP(QPConfig{LocalQPN: uint32(0x0101 + i), PeerQPN: peer, Peer: addrB, Segment: 10, CongestionControl: CCOff})
		if err != nil {
			t.Fatal(err)
		}
		qps = append(qps, q)
	}
	for _, q := range qps {
		if _, err := q.Write(WriteRequest{Data: make([]byte, 30), RKey: 1}); err != nil {
			t.Fatal(err)
		}
	}
	type tx struct {
		at  time.Duration
		qp  uint32
		psn uint32
	}
	var got []tx
	start := clk.t
	for len(got) < 6 {
		for _, f := range e.TakeOutput(nil) {
			p, err := mrcpkt.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tx{clk.t.Sub(start), p.BTH.DstQP, p.BTH.PSN})
		}
		at, ok := e.NextDeadline()
		if !ok {
			break
		}
		clk.t = at
		e.HandleTimers()
	}
	want := []tx{{0, 0x0202, 0}, {120, 0x0202, 1}, {240, 0x0303, 0}, {360, 0x0202, 2}, {480, 0x0303, 1}, {600, 0x0303, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("sends (time, QP, PSN):\n got %v\nwant %v", got, want)
	}
}
