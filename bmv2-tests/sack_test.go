package bmv2tests

import (
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// arriving is the flow's data packet with the given PSN as it arrives at the
// destination NIC's port in plane pl, by the base EV of slot (already
// through the fabric: the carrier used up down to the NIC's own uDL).
func (f *flow) arriving(t *testing.T, psn uint32, pl, slot int) []byte {
	t.Helper()
	p := f.l.Build.Plan
	ev := p.EVSet()[slot]
	if x := p.SplitEV(ev); x.Plane != pl {
		t.Fatalf("slot %d is in plane %d, not %d", slot, x.Plane, pl)
	}
	pk, err := mrcpkt.Parse(f.frame(psn))
	if err != nil {
		t.Fatal(err)
	}
	pk.UDP.SrcPort = uint16(uint32(ev) >> 16)
	pk.Outer = &mrcpkt.IPv6{Src: p.HostAddr(f.from), Dst: p.NICPortSID(pl, f.to), DSCP: pk.Inner.DSCP,
		ECN: mrcpkt.ECNECT0, FlowLabel: uint32(ev) & 0xffff, HopLimit: mrcpkt.HopLimit - 3}
	if err := pk.FixLengths(); err != nil {
		t.Fatal(err)
	}
	frame, err := mrcpkt.Serialize(pk)
	if err != nil {
		t.Fatal(err)
	}
	return frame
}

// TestSACKReceiveState puts data packets straight on the destination NIC's
// plane ports, one at a time, in an order a sprayed QP sees: across planes,
// with a hole, a duplicate inside the window, one behind it, one 64 past
// the first missing PSN (its SACK's bits end at it), one beyond the window
// W and the window's last PSN, and the 24-bit PSN wrapping in the middle. After each, the SACK that comes
// back to the source host must carry exactly the receive state the protocol
// document says, and the destination host gets exactly the new packets.
//
// By construction: each packet goes only after the SACK of the previous one
// is back at the source host.
func TestSACKReceiveState(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	fl := newFlow(l, from, to, 0x000b0b)
	const start = 0xfffffd // r2 is 0xffffff, r3 wraps to 0
	fl.startPSN = start
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)
	// A slot of each plane.
	slotOf := func(pl int) int { return pl }
	psn := func(r uint32) uint32 { return (start + r) & 0xffffff }
	before := nicEvents(t, dstCtl)

	// The window W (tiny's 256): a packet 64 or more past the first
	// missing PSN is answered by 64 bits that end at it.
	w := uint32(p.F.ReceiveWindow)
	if w < 128 {
		t.Fatalf("the lab's receive window %d: the test needs one wider than two SACK bitmaps", w)
	}
	steps := []struct {
		what    string
		r       uint32 // PSN - start
		plane   int
		deliver bool
		cum     uint32 // relative
		base    uint32 // relative
		bitmap  uint64
	}{
		{"in order", 0, 0, true, 0, 1, 0},
		{"in order, other plane", 1, 1, true, 1, 2, 0},
		{"after a hole (r2 missing)", 3, 0, true, 1, 2, 1 << 1},
		{"after the hole, across the wrap", 4, 1, true, 1, 2, 1<<1 | 1<<2},
		{"duplicate in the window", 3, 1, false, 1, 2, 1<<1 | 1<<2},
		{"the hole filled: cumulative jumps over the wrap", 2, 0, true, 4, 5, 0},
		{"duplicate behind the window", 1, 0, false, 4, 5, 0},
		{"64 past the first missing: the SACK's 64 bits end at it", 5 + 64, 1, true, 4, 5 + 1, 1 << 63},
		{"beyond the window (W past the first missing)", 5 + w, 1, false, 4, 5, 0},
		{"last PSN of the window", 5 + w - 1, 0, true, 4, 5 + w - 64, 1 << 63},
	}
	sacksFor := map[uint32]int{}
	seenSACKs := 0
	for i, s := range steps {
		n := psn(s.r)
		delivered := len(only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData))
		if err := l.Inject(fl.dst, uint32(s.plane+1), fl.arriving(t, n, s.plane, slotOf(s.plane))); err != nil {
			t.Fatal(err)
		}
		want := sacksFor[n] + 1
		var got parsed
		waitFor(t, 10*time.Second, "no SACK for step "+s.what, func() bool {
			sacks := only(parseAll(t, l.HostFrames(fl.src)), isSACK)
			for _, sk := range sacks[seenSACKs:] {
				sacksFor[sk.pkt.BTH.PSN]++
				if sk.pkt.BTH.PSN == n && sacksFor[n] == want {
					got = sk
				}
			}
			seenSACKs = len(sacks)
			return got.pkt != nil
		})
		se := got.pkt.SETH
		if wantCum := psn(s.cum); se.CumPSN != wantCum || se.BasePSN != psn(s.base) || se.Bitmap != s.bitmap {
			t.Errorf("step %d (%s, PSN %#06x): SACK cum %#06x base %#06x bitmap %#x; want cum %#06x base %#06x bitmap %#x",
				i, s.what, n, se.CumPSN, se.BasePSN, se.Bitmap, wantCum, psn(s.base), s.bitmap)
		}
		if got.pkt.BTH.DstQP != fl.srcQP || se.EV != uint32(p.EVSet()[slotOf(s.plane)]) {
			t.Errorf("step %d: SACK to QP %#x echoing EV %#x; want QP %#x, EV %#x", i, got.pkt.BTH.DstQP, se.EV, fl.srcQP, uint32(p.EVSet()[slotOf(s.plane)]))
		}
		// The SACK went back by the plane the packet came in on.
		if ev := p.SplitEV(mustEV(t, got)); ev.Plane != s.plane {
			t.Errorf("step %d: SACK came back in plane %d, the packet arrived in plane %d", i, ev.Plane, s.plane)
		}
		// Delivered or not: the destination host sees it (or not) by the
		// time its SACK is back at the source.
		now := len(only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData))
		if (now == delivered+1) != s.deliver || now > delivered+1 {
			t.Errorf("step %d (%s): %d packets delivered, want %v", i, s.what, now-delivered, s.deliver)
		}
	}
	after := nicEvents(t, dstCtl)
	for _, c := range []struct {
		name  string
		index int
		want  int64
	}{
		{"delivered", schema.NICEventDataDelivered, 7},
		{"duplicates", schema.NICEventDuplicate, 2},
		{"beyond the window", schema.NICEventBeyondWindow, 1},
		{"SACKs sent", schema.NICEventAckSent, int64(len(steps))},
	} {
		if got := after[c.index] - before[c.index]; got != c.want {
			t.Errorf("destination NIC counted %d %s, want %d", got, c.name, c.want)
		}
	}
}

// mustEV is the EV a frame seen at a host carried: UDP source port only
// (the outer header is gone), so only its plane and T1 are known.
func mustEV(t *testing.T, fr parsed) plan.EV {
	t.Helper()
	return plan.EV(uint32(fr.pkt.UDP.SrcPort) << 16)
}
