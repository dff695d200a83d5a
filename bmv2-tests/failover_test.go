package bmv2tests

import (
	"context"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// TestFailover takes a T0-T1 link down in the middle of a stream: packets
// on the EVs crossing it are lost; once the test's control path marks those
// EVs ASSUMED_BAD on the sending NIC (one ternary ev_state entry over the
// EV's plane and T1 bits, written over P4Runtime), no packet uses them and
// every other EV keeps carrying traffic.
//
// The loss count holds by construction: every phase keeps fewer packets in
// flight than the ECN and trim thresholds (a packet is out of flight once it
// is delivered, NACKed, or sent by the NIC onto the failed path, whose
// wire is cut), so no queue marks or trims, no EV is skipped, and the
// packets lost are exactly those the NIC sent on the failed (plane, T1), as
// the lab's wire shows them.
func TestFailover(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	from, to := plan.Host{Row: 0, Port: 1}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x000404)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 4, 0)
	evStart := nicEvents(t, srcCtl)

	const failPlane, failT1 = 0, 1
	t0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: failPlane, Index: from.Row})
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: failPlane, Index: failT1})
	// answered counts the packets delivered at the destination or NACKed
	// back to the source (trimmed on a busy queue: answered, not lost).
	answered := func() int {
		return len(l.HostFrames(fl.dst)) + len(only(parseAll(t, l.HostFrames(fl.src)), isNACK))
	}
	waitAnswered := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for answered() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d packets answered", answered(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// In flight at most window packets: a queue holds fewer than that, below
	// both thresholds (enq_qdepth counts the packets ahead).
	window := min(f.Trim.ECNPackets, f.Trim.ThresholdPackets)

	// Phase 1: healthy.
	const phase = 256
	fl.send(t, 0, phase, window, answered)
	waitAnswered(phase)

	// Phase 2: the link goes down mid-stream.
	down := time.Now()
	if err := l.SetLink(ctxFor(t, 10*time.Second), t0, t1, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.SetLink(context.Background(), t0, t1, true); err != nil {
			t.Errorf("restore link: %v", err)
		}
	})
	// A packet the NIC sent onto the failed path is out of flight: the cut
	// wire drops it.
	sent := newSentEVs(l, fl)
	onFailed := func() map[uint32]bool {
		out := map[uint32]bool{}
		for psn, ev := range sent.update() {
			if psn >= phase && psn < 2*phase && ev.Plane == failPlane && ev.T1 == failT1 {
				out[psn] = true
			}
		}
		return out
	}
	sentAt := map[uint32]time.Time{}
	before2 := answered()
	for i := uint32(0); i < phase; i++ {
		sentAt[phase+i] = time.Now()
		fl.send(t, phase+i, 1, 0, nil)
		deadline := time.Now().Add(10 * time.Second)
		for int(i+1)-(answered()-before2)-len(onFailed()) >= window {
			if time.Now().After(deadline) {
				t.Fatalf("phase 2 stalled: %d sent, %d answered, %d sent on the failed path", i+1, answered()-before2, len(onFailed()))
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	// Every packet of phase 2 is either answered or was seen leaving on the
	// failed path: wait for both to add up (the lab's wire may record the
	// last packets on the failed path a moment after the send loop ends).
	deadline := time.Now().Add(30 * time.Second)
	for answered()-before2+len(onFailed()) < phase {
		if time.Now().After(deadline) {
			t.Fatalf("phase 2: %d answered + %d sent on the failed path, of %d", answered()-before2, len(onFailed()), phase)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lostOnWire := onFailed()
	waitAnswered(before2 + phase - len(lostOnWire))

	// The control path marks the failed path's EVs ASSUMED_BAD: one ternary
	// entry matching every EV with that plane and T1, whatever its salt.
	l1 := f.EV
	mask := uint64((1<<l1.PlaneBits-1)<<(l1.T1Bits+l1.SaltBits) | (1<<l1.T1Bits-1)<<l1.SaltBits)
	value := uint64(p.MakeEV(plan.EVFields{Plane: failPlane, T1: failT1}))
	bad, err := srcCtl.Entry(schema.NICEVState, "ev_assumed_bad", []entry.Match{{Value: value, Mask: mask}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srcCtl.Write(ctxFor(t, 10*time.Second), p4v1.Update_INSERT, bad); err != nil {
		t.Fatal(err)
	}
	marked := time.Now()
	t.Cleanup(func() {
		if err := srcCtl.Write(context.Background(), p4v1.Update_DELETE, bad); err != nil {
			t.Errorf("remove ev_state entry: %v", err)
		}
	})

	// Phase 3: after the mark, nothing is lost: every packet is answered.
	before := answered()
	fl.send(t, 2*phase, phase, window, func() int { return answered() - before })
	waitAnswered(before + phase)

	// A packet is lost when it is neither delivered nor NACKed: a packet
	// trimmed on a busy queue is answered (its sender retransmits at once)
	// and says nothing about the failed link.
	got := only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData)
	seen := map[uint32]mrcpkt.UDP{}
	for _, g := range got {
		seen[g.pkt.BTH.PSN] = g.pkt.UDP
	}
	nacked := map[uint32]bool{}
	for _, nk := range only(parseAll(t, l.HostFrames(fl.src)), isNACK) {
		nacked[nk.pkt.NETH.PSN] = true
	}
	lost, lastLoss := 0, time.Time{}
	for psn := uint32(0); psn < 3*phase; psn++ {
		udp, ok := seen[psn]
		if !ok && nacked[psn] {
			continue
		}
		switch {
		case psn < phase && !ok:
			t.Errorf("PSN %d lost before the link went down", psn)
		case psn >= phase && psn < 2*phase && !ok:
			lost++
			if sentAt[psn].After(lastLoss) {
				lastLoss = sentAt[psn]
			}
			if !lostOnWire[psn] {
				t.Errorf("PSN %d lost, but the NIC did not send it on plane %d T1 %d", psn, failPlane, failT1)
			}
		case psn >= 2*phase && !ok:
			t.Errorf("PSN %d lost after its EVs were marked ASSUMED_BAD", psn)
		case psn >= phase && ok:
			ev := p.SplitEV(plan.EV(uint32(udp.SrcPort) << 16))
			if ev.Plane == failPlane && ev.T1 == failT1 {
				t.Errorf("PSN %d crossed the failed link and arrived", psn)
			}
		}
	}
	// Every other (plane, T1) keeps carrying traffic after the mark.
	paths := map[[2]int]int{}
	for psn := uint32(2 * phase); psn < 3*phase; psn++ {
		ev := p.SplitEV(plan.EV(uint32(seen[psn].SrcPort) << 16))
		paths[[2]int{ev.Plane, ev.T1}]++
	}
	for pl := 0; pl < f.Planes; pl++ {
		for s := 0; s < f.T1Count; s++ {
			n := paths[[2]int{pl, s}]
			if (pl == failPlane && s == failT1) != (n == 0) {
				t.Errorf("after the mark, plane %d T1 %d carried %d packets", pl, s, n)
			}
		}
	}
	// With the link down and before the mark, exactly the packets the NIC
	// sent on the failed path were lost: by the wire, and, as no EV was
	// skipped, a quarter of the phase (tiny's EVs cross each (plane, T1)
	// equally).
	for psn := range lostOnWire {
		if _, ok := seen[psn]; ok || nacked[psn] {
			t.Errorf("PSN %d was sent on the failed path and still answered", psn)
		}
	}
	if want := phase * (f.EV.SetSize / (f.Planes * f.T1Count)) / f.EV.SetSize; lost != len(lostOnWire) || lost != want {
		t.Errorf("lost %d packets while the link was down; the NIC sent %d on plane %d T1 %d; want %d", lost, len(lostOnWire), failPlane, failT1, want)
	}
	skips := nicEvents(t, srcCtl)[schema.NICEventSkipTaken] - evStart[schema.NICEventSkipTaken]
	if skips != 0 {
		t.Errorf("the sender skipped %d EV slots: something was trimmed or ECN-marked", skips)
	}
	t.Logf("failover: %d packets trimmed and NACKed on the way", len(nacked))
	t.Logf("failover: link %s-%s down: %d of %d packets lost; last loss %v after the link went down; EVs marked ASSUMED_BAD %v after it; then 0 of %d lost, %d paths in use",
		t0, t1, lost, phase, lastLoss.Sub(down).Round(time.Microsecond), marked.Sub(down).Round(time.Millisecond), phase, len(paths))
}

// sentEVs follows the lab's wire: per PSN of the flow, the EV its data
// packet left the source NIC with.
type sentEVs struct {
	l    *lab.Lab
	fl   *flow
	next int
	evs  map[uint32]plan.EVFields
}

func newSentEVs(l *lab.Lab, fl *flow) *sentEVs {
	return &sentEVs{l: l, fl: fl, evs: map[uint32]plan.EVFields{}}
}

// update reads what the wire saw since the last call and returns every EV
// seen so far (the caller must not change the map).
func (s *sentEVs) update() map[uint32]plan.EVFields {
	frames := s.l.TraceFrom(s.next)
	s.next += len(frames)
	for _, fr := range frames {
		if fr.Device != s.fl.src || fr.Port == plan.NICHostPort {
			continue
		}
		p, err := mrcpkt.Parse(fr.Data)
		if err != nil || p.Outer == nil || p.BTH.DstQP != s.fl.qp || !mrcpkt.IsData(p.BTH.Opcode) {
			continue
		}
		if ev, ok := mrcpkt.EV(p); ok {
			s.evs[p.BTH.PSN] = s.l.Build.Plan.SplitEV(plan.EV(ev))
		}
	}
	return s.evs
}
