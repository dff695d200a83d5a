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

// stream drives one QP the way a transport would, at most window packets in
// flight, and keeps the books the failover tests assert on. A packet is out
// of flight once its SACK is back at the source host (the source NIC has
// then taken the echo into its slot state) or once the source NIC sent it
// on a path the test has cut (the lab's wire drops it); such a packet is
// sent again at once, as the transport would, with METH's retransmission
// flag. Sends complete in order (send k waits for every send up to
// k-window), so with a window below the EV set size, when the rotation comes
// back to a slot, the slot's previous send is out of flight: its echo, if
// any, has been counted by the NIC.
type stream struct {
	t      *testing.T
	l      *lab.Lab
	fl     *flow
	window int
	// cut says whether a packet on an EV with these fields crosses a link
	// the test has cut (nil: none).
	cut     func(plan.EVFields) bool
	next    uint32         // next new PSN
	sends   []streamSend   // every data packet the NIC sent, in order
	acked   map[uint32]int // PSN -> SACKs back at the source
	pending []uint32       // PSNs lost on the cut path, to send again
	traceAt int
	sackAt  int
}

type streamSend struct {
	psn    uint32
	ev     plan.EVFields
	lost   bool // sent on the cut path
	retx   bool
	acked  bool
	slot   int
	backup bool
}

func newStream(t *testing.T, l *lab.Lab, fl *flow, window int) *stream {
	return &stream{t: t, l: l, fl: fl, window: window, acked: map[uint32]int{}, traceAt: len(l.Trace())}
}

// poll reads what the wire and the source host saw since the last call.
func (s *stream) poll() {
	p := s.l.Build.Plan
	frames := s.l.TraceFrom(s.traceAt)
	s.traceAt += len(frames)
	for _, fr := range frames {
		if fr.Device != s.fl.src || fr.Port == plan.NICHostPort {
			continue
		}
		pk, err := mrcpkt.Parse(fr.Data)
		if err != nil || pk.Outer == nil || pk.BTH.DstQP != s.fl.qp || !mrcpkt.IsData(pk.BTH.Opcode) {
			continue
		}
		ev, _ := mrcpkt.EV(pk)
		// The send of that PSN not seen on the wire yet (planes leave by
		// different ports, so not necessarily in the order sent; a PSN is
		// sent again only once its last send was seen lost).
		found := false
		for i := range s.sends {
			if s.sends[i].slot < 0 && s.sends[i].psn == pk.BTH.PSN {
				found = true
				s.sends[i].ev = p.SplitEV(plan.EV(ev))
				slot, backup, ok := p.EVSlot(plan.EV(ev))
				if !ok {
					s.t.Fatalf("PSN %d left on EV %#x, which names no slot", pk.BTH.PSN, ev)
				}
				s.sends[i].slot, s.sends[i].backup = slot, backup
				if s.cut != nil && s.cut(s.sends[i].ev) {
					s.sends[i].lost = true
					s.pending = append(s.pending, pk.BTH.PSN)
				}
				break
			}
		}
		if !found {
			s.t.Fatalf("the NIC sent PSN %d, which the test did not send (again)", pk.BTH.PSN)
		}
	}
	host := s.l.HostFrames(s.fl.src)
	for _, fr := range host[s.sackAt:] {
		pk, err := mrcpkt.Parse(fr.Data)
		if err != nil || pk.BTH.Opcode != mrcpkt.OpSACK || pk.BTH.DstQP != s.fl.srcQP {
			continue
		}
		checkSACK(s.t, parsed{fr, pk})
		s.acked[pk.BTH.PSN]++
		for i := range s.sends {
			if s.sends[i].psn == pk.BTH.PSN && !s.sends[i].lost && !s.sends[i].acked {
				s.sends[i].acked = true
				break
			}
		}
	}
	s.sackAt = len(host)
}

// done reports whether send i is out of flight.
func (s *stream) done(i int) bool { return s.sends[i].acked || s.sends[i].lost }

// waitDone waits until every send before n is out of flight.
func (s *stream) waitDone(n int) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.poll()
		ok := true
		for i := 0; i < n; i++ {
			if !s.done(i) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s -> %s: sends before %d not all answered or lost after 20s", s.fl.src, s.fl.dst, n)
		}
		time.Sleep(300 * time.Microsecond)
	}
}

// send hands the NIC n new PSNs, and again every PSN lost on the way, until
// n new ones went out and nothing lost is left to resend.
func (s *stream) send(n int) {
	s.t.Helper()
	for left := n; left > 0 || len(s.pending) > 0; {
		s.waitDone(len(s.sends) - s.window + 1)
		var psn uint32
		retx := false
		if len(s.pending) == 0 && left > 0 && !s.inReceiveWindow(s.next) {
			// A PSN lost more than once (its resend crossed the cut too)
			// holds the receiver's cumulative PSN back: a new PSN 64 or
			// more beyond it is outside the receive window, and its SACK
			// cannot cover it. Wait until everything is answered or seen
			// lost; the loss is resent first.
			s.waitDone(len(s.sends))
			continue
		}
		if len(s.pending) > 0 {
			psn, s.pending = s.pending[0], s.pending[1:]
			retx = true
		} else {
			psn = s.next
			s.next++
			left--
		}
		frame := s.fl.frame(psn)
		if retx {
			frame[14+40+8+12] |= mrcpkt.METHRetransmission
		}
		s.sends = append(s.sends, streamSend{psn: psn, retx: retx, slot: -1})
		if err := s.l.SendFromHost(s.fl.src, frame); err != nil {
			s.t.Fatal(err)
		}
		if len(s.pending) == 0 && left == 0 {
			// Resends of the last losses come from the final polls.
			s.waitDone(len(s.sends))
		}
	}
	s.waitDone(len(s.sends))
}

// inReceiveWindow reports whether PSN psn is within the receiving NIC's
// window: below the oldest PSN not yet acked plus the fabric's
// nic.window_packets W, the rule the transport engine keeps (every PSN
// below cum_psn + W + 1).
func (s *stream) inReceiveWindow(psn uint32) bool {
	w := int32(s.l.Build.Plan.F.ReceiveWindow)
	for _, x := range s.sends {
		if s.acked[x.psn] == 0 && int32(psn-x.psn) >= w {
			return false
		}
	}
	return true
}

// quiet waits until nothing is in flight.
func (s *stream) quiet() { s.waitDone(len(s.sends)) }

// TestDataplaneFailover cuts a T0-T1 link in the middle of a stream, with no
// P4Runtime write to any NIC while the stream runs: the sending NIC finds
// the failed path by itself (failover.unanswered_sends sends with no echo),
// moves those slots to their same-plane backup EVs, and nothing more is
// lost; per-plane load stays equal; probes bring the slots back once the
// link is up again; a second cut (a flap) is handled the same way.
//
// By construction: the stream keeps fewer packets in flight than the EV set
// has slots, and fewer than the ECN and trim thresholds (nothing is marked
// or trimmed, no slot is skipped); the link is cut and restored while
// nothing is in flight; so each failed slot's count of sends without an
// echo holds exactly its sends since the cut, and exactly K sends per
// failed slot are lost before the NIC retires it.
func TestDataplaneFailover(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	K, N := f.Failover.UnansweredSends, f.Failover.ProbePasses
	S := f.EV.SetSize
	from, to := plan.Host{Row: 0, Port: 1}, plan.Host{Row: 1, Port: 1}
	fl := newFlow(l, from, to, 0x000909)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)

	cut := plan.EVFields{Plane: 0, T1: 1}
	var failedSlots []int
	for slot, ev := range p.EVSet() {
		if x := p.SplitEV(ev); x.Plane == cut.Plane && x.T1 == cut.T1 {
			failedSlots = append(failedSlots, slot)
		}
	}
	F := len(failedSlots)
	t0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: cut.Plane, Index: from.Row})
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: cut.Plane, Index: cut.T1})
	window := min(f.Trim.ECNPackets, f.Trim.ThresholdPackets, S-1)
	st := newStream(t, l, fl, window)
	events := func() []int64 { return nicEvents(t, srcCtl) }
	delta := func(a, b []int64, i int) int64 { return b[i] - a[i] }

	// Healthy: two rotations.
	st.send(2 * S)
	ev0 := events()

	setLink := func(up bool) {
		t.Helper()
		st.quiet()
		if err := l.SetLink(ctxFor(t, 10*time.Second), t0, t1, up); err != nil {
			t.Fatal(err)
		}
		if up {
			st.cut = nil
		} else {
			st.cut = crosses(cut)
		}
	}
	t.Cleanup(func() {
		if err := l.SetLink(context.Background(), t0, t1, true); err != nil {
			t.Errorf("restore link: %v", err)
		}
	})
	writesBefore := l.Writes()

	// The cut, and K passes: every failed slot loses exactly K sends,
	// then takes its backup.
	setLink(false)
	cutAt := len(st.sends)
	cutTime := time.Now()
	st.send((K + 2) * S)
	ev1 := events()
	lost, firstLoss, lastLoss := 0, -1, -1
	lostPerSlot := map[int]int{}
	for i := cutAt; i < len(st.sends); i++ {
		if st.sends[i].lost {
			lost++
			lostPerSlot[st.sends[i].slot]++
			if firstLoss < 0 {
				firstLoss = i
			}
			lastLoss = i
		}
	}
	if got := delta(ev0, ev1, schema.NICEventPathFailed); got != int64(F) {
		t.Errorf("the NIC declared %d paths failed, want the %d slots crossing the cut (slots %v)", got, F, failedSlots)
	}
	if lost != K*F {
		t.Errorf("%d packets lost on the cut path, want exactly K x failed slots = %d x %d", lost, K, F)
	}
	for _, s := range failedSlots {
		if lostPerSlot[s] != K {
			t.Errorf("slot %d lost %d sends before the NIC retired it, want K = %d", s, lostPerSlot[s], K)
		}
	}
	// The bound: the NIC retires a slot at its K+1-th pass after the first
	// loss, so the last loss comes within K passes of the QP's packets.
	if bound := K * S; lastLoss-firstLoss >= bound {
		t.Errorf("losses spread over %d sends of the QP (sends %d to %d after the cut), bound K x set size = %d", lastLoss-firstLoss+1, firstLoss-cutAt, lastLoss-cutAt, bound)
	}
	detected := lastLoss + 1
	for i := detected; i < len(st.sends); i++ {
		s := st.sends[i]
		if s.lost {
			t.Errorf("send %d (PSN %d) lost after detection", i, s.psn)
		}
		if slicesContains(failedSlots, s.slot) != s.backup {
			t.Errorf("send %d (PSN %d) on slot %d, backup %v: after detection exactly the failed slots use their backup", i, s.psn, s.slot, s.backup)
		}
	}
	t.Logf("dataplane failover: link %s-%s cut: %d packets lost (K=%d x %d slots), all within %d sends of the QP after the first loss; %d sent after the cut before the last slot was retired, %v after the cut",
		t0, t1, lost, K, F, lastLoss-firstLoss+1, detected-cutAt, time.Since(cutTime).Round(time.Millisecond))

	// Per-plane load stays equal: any S consecutive sends take every slot
	// once, backups in their base EV's plane.
	planes := func() []int64 {
		c, err := srcCtl.Counters(ctxFor(t, 10*time.Second), schema.NICPlaneTx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pl0 := planes()
	st.send(4 * S)
	pl1 := planes()
	for pl := 0; pl < f.Planes; pl++ {
		if d := pl1[pl] - pl0[pl]; d != int64(4*S/f.Planes) {
			t.Errorf("plane %d sent %d of %d data packets with the link down, want %d", pl, d, 4*S, 4*S/f.Planes)
		}
	}
	ev2 := events()
	if got := delta(ev1, ev2, schema.NICEventProbeSent); got < int64(F*(4/N)) {
		t.Errorf("%d probes sent in 4 passes with %d slots failed, want at least %d (one every %d passes)", got, F, F*(4/N), N)
	}
	if got := delta(ev0, ev2, schema.NICEventRevived); got != 0 {
		t.Errorf("%d slots revived with the link down", got)
	}

	// Restore: probes are answered within N passes (plus one for the
	// answer's way back); the slots are GOOD and take their base EVs again.
	setLink(true)
	restoredAt := len(st.sends)
	st.send((N + 2) * S)
	ev3 := events()
	if got := delta(ev2, ev3, schema.NICEventRevived); got != int64(F) {
		t.Errorf("%d slots revived in %d passes after the link came back, want %d", got, N+2, F)
	}
	for i := len(st.sends) - S; i < len(st.sends); i++ {
		if s := st.sends[i]; s.backup || s.lost {
			t.Errorf("send %d (PSN %d) on slot %d: backup %v, lost %v; after revival every slot uses its base EV", i, s.psn, s.slot, s.backup, s.lost)
		}
	}
	for i := restoredAt; i < len(st.sends); i++ {
		if st.sends[i].lost {
			t.Errorf("send %d lost with the link up", i)
		}
	}

	// A flap: down again, the same story.
	setLink(false)
	flapAt := len(st.sends)
	st.send((K + 2) * S)
	ev4 := events()
	lost2 := 0
	for i := flapAt; i < len(st.sends); i++ {
		if st.sends[i].lost {
			lost2++
		}
	}
	if got := delta(ev3, ev4, schema.NICEventPathFailed); got != int64(F) || lost2 != K*F {
		t.Errorf("second cut: %d paths failed (want %d), %d packets lost (want %d)", got, F, lost2, K*F)
	}
	setLink(true)

	// Every PSN arrived, SACKed; no P4Runtime write reached any NIC.
	for psn := uint32(0); psn < st.next; psn++ {
		if st.acked[psn] == 0 {
			t.Errorf("PSN %d never acknowledged", psn)
		}
	}
	for dev, n := range l.Writes() {
		if l.Devices[dev].Role == plan.RoleNIC.String() && n != writesBefore[dev] {
			t.Errorf("%d P4Runtime writes to %s during the stream", n-writesBefore[dev], dev)
		}
	}
	t.Logf("dataplane failover: %d PSNs, %d sends, %d probes sent, %d answered; flap: %d more lost",
		st.next, len(st.sends), delta(ev0, ev4, schema.NICEventProbeSent), delta(ev0, ev4, schema.NICEventProbeAnswerRx), lost2)
}

// crosses is a stream's cut for one (plane, T1).
func crosses(c plan.EVFields) func(plan.EVFields) bool {
	return func(x plan.EVFields) bool { return x.Plane == c.Plane && x.T1 == c.T1 }
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestOperatorDrain is the operator's path: a controller marks every EV of
// one (plane, T1) ASSUMED_BAD on the sending NIC over P4Runtime (one
// ternary ev_state entry over the EV's plane and T1 bits), for example to
// drain a link before maintenance. From then on no packet uses those EVs
// (their slots are passed over), so cutting the link loses nothing; once
// the entry is gone they carry traffic again. The controller's state wins
// over the dataplane's own.
//
// By construction: the stream keeps fewer packets in flight than the ECN
// and trim thresholds, so no slot is skipped for congestion, and the link is
// cut and restored while nothing is in flight.
func TestOperatorDrain(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	from, to := plan.Host{Row: 0, Port: 1}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x000404)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)
	const drainPlane, drainT1 = 0, 1
	t0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: drainPlane, Index: from.Row})
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: drainPlane, Index: drainT1})
	window := min(f.Trim.ECNPackets, f.Trim.ThresholdPackets)
	st := newStream(t, l, fl, window)
	S := f.EV.SetSize
	st.send(S)
	ev0 := nicEvents(t, srcCtl)

	l1 := f.EV
	mask := uint64((1<<l1.PlaneBits-1)<<(l1.T1Bits+l1.SaltBits) | (1<<l1.T1Bits-1)<<l1.SaltBits)
	value := uint64(p.MakeEV(plan.EVFields{Plane: drainPlane, T1: drainT1}))
	bad, err := srcCtl.Entry(schema.NICEVState, "ev_assumed_bad", []entry.Match{{Value: value, Mask: mask}})
	if err != nil {
		t.Fatal(err)
	}
	st.quiet()
	if err := srcCtl.Write(ctxFor(t, 10*time.Second), p4v1.Update_INSERT, bad); err != nil {
		t.Fatal(err)
	}
	marked := true
	t.Cleanup(func() {
		if marked {
			if err := srcCtl.Write(context.Background(), p4v1.Update_DELETE, bad); err != nil {
				t.Errorf("remove ev_state entry: %v", err)
			}
		}
	})
	drainedAt := len(st.sends)
	st.send(2 * S)
	// Drained: now the link can go without a loss.
	st.quiet()
	if err := l.SetLink(ctxFor(t, 10*time.Second), t0, t1, false); err != nil {
		t.Fatal(err)
	}
	st.cut = crosses(plan.EVFields{Plane: drainPlane, T1: drainT1})
	st.send(2 * S)
	st.quiet()
	if err := l.SetLink(ctxFor(t, 10*time.Second), t0, t1, true); err != nil {
		t.Fatal(err)
	}
	st.cut = nil
	ev1 := nicEvents(t, srcCtl)
	used := map[[2]int]int{}
	for i := drainedAt; i < len(st.sends); i++ {
		s := st.sends[i]
		if s.lost {
			t.Errorf("send %d (PSN %d) lost while its path was drained", i, s.psn)
		}
		if s.ev.Plane == drainPlane && s.ev.T1 == drainT1 {
			t.Errorf("send %d (PSN %d) used the drained plane %d T1 %d", i, s.psn, drainPlane, drainT1)
		}
		used[[2]int{s.ev.Plane, s.ev.T1}]++
	}
	if want := len(used); want != f.Planes*f.T1Count-1 {
		t.Errorf("while drained, %d (plane, T1) pairs carried traffic, want every other one (%d)", want, f.Planes*f.T1Count-1)
	}
	// Each drained slot was passed over once per pass, counted; the
	// dataplane retired nothing (nothing went unanswered).
	if got := ev1[schema.NICEventBadTaken] - ev0[schema.NICEventBadTaken]; got == 0 {
		t.Error("no slot was passed over as ASSUMED_BAD by the controller")
	}
	if got := ev1[schema.NICEventPathFailed] - ev0[schema.NICEventPathFailed]; got != 0 {
		t.Errorf("the dataplane retired %d paths while the controller had drained them", got)
	}

	// Undrained: the EVs carry traffic again.
	if err := srcCtl.Write(ctxFor(t, 10*time.Second), p4v1.Update_DELETE, bad); err != nil {
		t.Fatal(err)
	}
	marked = false
	back := len(st.sends)
	st.send(S)
	n := 0
	for i := back; i < len(st.sends); i++ {
		if s := st.sends[i]; s.ev.Plane == drainPlane && s.ev.T1 == drainT1 {
			n++
		}
	}
	if want := S / (f.Planes * f.T1Count); n != want {
		t.Errorf("after the drain, plane %d T1 %d carried %d of %d packets, want %d", drainPlane, drainT1, n, S, want)
	}
	t.Logf("operator drain: %d packets while plane %d T1 %d was drained and its link cut, none lost; %d slot passes skipped by the controller's state",
		back-drainedAt, drainPlane, drainT1, ev1[schema.NICEventBadTaken]-ev0[schema.NICEventBadTaken])
}

// TestBackupFailsToo cuts both up links of the source's T0 in plane 0, so
// that every plane-0 slot loses its base EV and then its backup: each such
// slot loses exactly K sends on each, is then passed over (BOTH_BAD) while
// plane 1 carries the QP alone, and keeps being probed; once the links are
// back, probes make every slot GOOD again. No P4Runtime write reaches a NIC.
//
// By construction, as in TestDataplaneFailover: fewer packets in flight
// than live slots and than the thresholds; links cut and restored with
// nothing in flight.
func TestBackupFailsToo(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	K, N, S := f.Failover.UnansweredSends, f.Failover.ProbePasses, f.EV.SetSize
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x000a0a)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)
	const deadPlane = 0
	t0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: deadPlane, Index: from.Row})
	var t1s []string
	for s := 0; s < f.T1Count; s++ {
		t1s = append(t1s, p.Name(plan.Switch{Role: plan.RoleT1, Plane: deadPlane, Index: s}))
	}
	dead := S / f.Planes // plane-0 slots
	window := min(f.Trim.ECNPackets, f.Trim.ThresholdPackets, S-dead) - 1
	st := newStream(t, l, fl, window)
	st.send(S)
	ev0 := nicEvents(t, srcCtl)
	writes := l.Writes()

	setLinks := func(up bool) {
		t.Helper()
		st.quiet()
		for _, t1 := range t1s {
			if err := l.SetLink(ctxFor(t, 10*time.Second), t0, t1, up); err != nil {
				t.Fatal(err)
			}
		}
		st.cut = nil
		if !up {
			st.cut = func(x plan.EVFields) bool { return x.Plane == deadPlane }
		}
	}
	t.Cleanup(func() {
		for _, t1 := range t1s {
			if err := l.SetLink(context.Background(), t0, t1, true); err != nil {
				t.Errorf("restore link: %v", err)
			}
		}
	})
	setLinks(false)
	cutAt := len(st.sends)
	st.send((2*K + 3) * S / f.Planes)
	ev1 := nicEvents(t, srcCtl)
	lost := 0
	for i := cutAt; i < len(st.sends); i++ {
		if st.sends[i].lost {
			lost++
		}
	}
	for _, c := range []struct {
		what  string
		index int
		want  int64
	}{
		{"base EVs retired", schema.NICEventPathFailed, int64(dead)},
		{"backups retired", schema.NICEventBackupFailed, int64(dead)},
	} {
		if got := ev1[c.index] - ev0[c.index]; got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	if lost != 2*K*dead {
		t.Errorf("%d packets lost with plane %d cut off, want 2K x %d slots = %d", lost, deadPlane, dead, 2*K*dead)
	}
	// The last packets all went by plane 1, on base EVs.
	for i := len(st.sends) - S/f.Planes; i < len(st.sends); i++ {
		if s := st.sends[i]; s.ev.Plane == deadPlane || s.backup || s.lost {
			t.Errorf("send %d (PSN %d): plane %d, backup %v, lost %v; want plane 1's base EVs only", i, s.psn, s.ev.Plane, s.backup, s.lost)
		}
	}
	if got := ev1[schema.NICEventFailedTaken] - ev0[schema.NICEventFailedTaken]; got == 0 {
		t.Error("no slot was passed over for having both EVs failed")
	}

	// Back: every dead slot is probed within N passes and revived.
	setLinks(true)
	st.send((N + 2) * S)
	ev2 := nicEvents(t, srcCtl)
	if got := ev2[schema.NICEventRevived] - ev1[schema.NICEventRevived]; got != int64(dead) {
		t.Errorf("%d slots revived after the links came back, want %d", got, dead)
	}
	perPlane := make([]int, f.Planes)
	for i := len(st.sends) - S; i < len(st.sends); i++ {
		s := st.sends[i]
		perPlane[s.ev.Plane]++
		if s.backup || s.lost {
			t.Errorf("send %d (PSN %d) after revival: backup %v, lost %v", i, s.psn, s.backup, s.lost)
		}
	}
	for pl, n := range perPlane {
		if n != S/f.Planes {
			t.Errorf("after revival, plane %d carried %d of the last %d packets, want %d", pl, n, S, S/f.Planes)
		}
	}
	for dev, n := range l.Writes() {
		if l.Devices[dev].Role == plan.RoleNIC.String() && n != writes[dev] {
			t.Errorf("%d P4Runtime writes to %s", n-writes[dev], dev)
		}
	}
	t.Logf("backup fails too: plane %d cut off at %s: %d lost (2K x %d slots), %d probes sent, %d slots revived after the links came back",
		deadPlane, t0, lost, dead, ev2[schema.NICEventProbeSent]-ev0[schema.NICEventProbeSent], ev2[schema.NICEventRevived]-ev1[schema.NICEventRevived])
}
