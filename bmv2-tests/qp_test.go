package bmv2tests

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// TestQPsAtOnce runs three QPs at once through the NICs: A from nic-0 to a
// host on the same T0 (the carrier turns at that T0: two uSIDs), B from
// nic-0 to a host on the other T0 with T1 offset 1 and the SAME peer QPN as
// A (the NIC keys the data it sends by peer host and peer QPN, so the two
// never share state), and C, a single-path QP (the RoCEv2 baseline), from
// another NIC. Each QP rotates over its own slots from slot 0 (C stays on
// slot 0), every packet is delivered once to its own host, and every SACK
// goes back to the QP that sent the data and tells the truth.
//
// By construction: the three QPs together keep fewer packets in flight than
// the ECN and trim thresholds.
func TestQPsAtOnce(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	S := f.EV.SetSize
	a := newFlow(l, plan.Host{Row: 0, Port: 0}, plan.Host{Row: 0, Port: 1}, 0x000c0c)
	b := newFlow(l, plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}, 0x000c0c)
	b.srcQP = 0x800c0d // another local QP on nic-0
	c := newFlow(l, plan.Host{Row: 1, Port: 0}, plan.Host{Row: 0, Port: 0}, 0x000c0e)
	c.singlePath = true
	ctl := map[string]*lab.Control{}
	for _, fl := range []*flow{a, b, c} {
		for _, d := range []string{fl.src, fl.dst} {
			if ctl[d] == nil {
				ctl[d] = control(t, l, d)
			}
		}
	}
	openQPs(t, ctl[a.src], ctl[a.dst], a, 0)
	openQPs(t, ctl[b.src], ctl[b.dst], b, 1)
	openQPs(t, ctl[c.src], ctl[c.dst], c, 1)

	flows := []*flow{a, b, c}
	n := 2 * S
	window := min(f.Trim.ECNPackets, f.Trim.ThresholdPackets) - 1
	deliveredTo := func(fl *flow) int {
		k := 0
		for _, d := range only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData) {
			if d.pkt.BTH.DstQP == fl.qp && d.pkt.Inner.Src == p.HostAddr(fl.from) {
				k++
			}
		}
		return k
	}
	srcs := []string{a.src, c.src} // b.src is a.src
	before := map[string][]int64{}
	for _, d := range srcs {
		before[d] = nicEvents(t, ctl[d])
	}
	start := len(l.Trace())
	for i := 0; i < n; i++ {
		for _, fl := range flows {
			deadline := time.Now().Add(10 * time.Second)
			for {
				// Sent so far: i packets of every QP, plus packet i of the
				// QPs before fl in this round.
				inFlight := 0
				for _, g := range flows {
					sent := i
					if indexOf(flows, g) < indexOf(flows, fl) {
						sent = i + 1
					}
					inFlight += sent - deliveredTo(g)
				}
				if inFlight < window {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("stalled at packet %d of %s -> %s", i, fl.src, fl.dst)
				}
				time.Sleep(time.Millisecond)
			}
			if err := l.SendFromHost(fl.src, fl.frame(uint32(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, fl := range flows {
		waitFor(t, 20*time.Second, fl.src+" -> "+fl.dst+": not every packet delivered", func() bool { return deliveredTo(fl) >= n })
		waitFor(t, 20*time.Second, fl.src+" -> "+fl.dst+": not every SACK back", func() bool {
			k := 0
			for _, s := range only(parseAll(t, l.HostFrames(fl.src)), isSACK) {
				if s.pkt.BTH.DstQP == fl.srcQP {
					k++
				}
			}
			return k >= n
		})
	}

	// Every echo found its slot's word under the QP's epoch (the
	// single-path QP's too), and no healthy path was retired.
	for _, d := range srcs {
		after := nicEvents(t, ctl[d])
		for _, e := range []struct {
			what  string
			index int
		}{{"stale echoes", schema.NICEventStaleEcho}, {"paths retired", schema.NICEventPathFailed}} {
			if got := after[e.index] - before[d][e.index]; got != 0 {
				t.Errorf("%s counted %d %s", d, got, e.what)
			}
		}
	}

	// What each QP's packets did on the wire, from its source NIC.
	for _, fl := range flows {
		seen := map[uint32]int{}
		k := 0
		for _, fr := range l.TraceFrom(start) {
			if fr.Device != fl.src || fr.Port == plan.NICHostPort {
				continue
			}
			pk, err := mrcpkt.Parse(fr.Data)
			if err != nil || pk.Outer == nil || !mrcpkt.IsData(pk.BTH.Opcode) || pk.BTH.DstQP != fl.qp || pk.Inner.Dst != p.HostAddr(fl.to) {
				continue
			}
			seen[pk.BTH.PSN]++
			ev, _ := mrcpkt.EV(pk)
			slot, backup, ok := p.EVSlot(plan.EV(ev))
			x := p.SplitEV(plan.EV(ev))
			base := p.SplitEV(p.EVSet()[slot])
			wantSlot := int(pk.BTH.PSN) % S
			offset := 0
			if fl != a {
				offset = 1
			}
			if fl.singlePath {
				wantSlot = 0
			}
			if !ok || backup || slot != wantSlot || x.Plane != base.Plane || x.T1 != (base.T1+offset)%f.T1Count {
				t.Errorf("%s -> %s PSN %d: EV %#08x (slot %d, backup %v, %+v); want slot %d, T1 %d + offset %d", fl.src, fl.dst, pk.BTH.PSN, ev, slot, backup, x, wantSlot, base.T1, offset)
			}
			// The carrier: block | T0 | T1 | T0 | uDL, or block | T0 | uDL
			// when both hosts share the T0.
			da := pk.Outer.Dst.As16()
			usids := 0
			for j := 4; j < 16; j += 2 {
				if binary.BigEndian.Uint16(da[j:]) != 0 {
					usids++
				}
			}
			want := 4
			if fl.from.Row == fl.to.Row {
				want = 2
			}
			if usids != want {
				t.Errorf("%s -> %s PSN %d: carrier %v holds %d uSIDs, want %d", fl.src, fl.dst, pk.BTH.PSN, pk.Outer.Dst, usids, want)
			}
			k++
		}
		if k != n || len(seen) != n {
			t.Errorf("%s -> %s: %d data packets on the wire for %d PSNs, want %d", fl.src, fl.dst, k, len(seen), n)
		}
		// Each delivered once, to its own host; SACKs to its own QP.
		got := map[uint32]int{}
		for _, d := range only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData) {
			if d.pkt.BTH.DstQP == fl.qp && d.pkt.Inner.Src == p.HostAddr(fl.from) {
				got[d.pkt.BTH.PSN]++
			}
		}
		for psn := uint32(0); psn < uint32(n); psn++ {
			if got[psn] != 1 {
				t.Errorf("%s -> %s: PSN %d delivered %d times", fl.src, fl.dst, psn, got[psn])
			}
		}
		complete := false
		for _, s := range only(parseAll(t, l.HostFrames(fl.src)), isSACK) {
			if s.pkt.BTH.DstQP == fl.srcQP {
				checkSACK(t, s)
				complete = complete || s.pkt.SETH.CumPSN == uint32(n-1)
			}
		}
		if !complete {
			t.Errorf("%s -> %s: no SACK with cumulative PSN %d", fl.src, fl.dst, n-1)
		}
	}
}

func indexOf(flows []*flow, fl *flow) int {
	for i, g := range flows {
		if g == fl {
			return i
		}
	}
	return -1
}
