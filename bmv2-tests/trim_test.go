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

// writeThresholds writes a switch's trim and ECN thresholds for a port class
// (0: fabric-facing, 1: host-facing) over P4Runtime.
func writeThresholds(ctx context.Context, l *lab.Lab, c *lab.Control, toHost, trim, ecn uint64) error {
	e, err := c.Entry(schema.SwitchQueueThresholds, "set_queue_thresholds", []entry.Match{{Value: toHost}},
		trim, ecn, uint64(l.Build.Fabric.Trim.SizeBytes))
	if err != nil {
		return err
	}
	return c.Write(ctx, p4v1.Update_MODIFY, e)
}

// setThresholds is writeThresholds for the test's main line.
func setThresholds(t *testing.T, l *lab.Lab, c *lab.Control, toHost, trim, ecn uint64) {
	t.Helper()
	if err := writeThresholds(ctxFor(t, 10*time.Second), l, c, toHost, trim, ecn); err != nil {
		t.Fatal(err)
	}
}

// restoreThresholds puts the fabric's thresholds back, as the build pushed
// them; it is safe in a cleanup.
func restoreThresholds(t *testing.T, l *lab.Lab, c *lab.Control, toHost uint64) {
	t.Helper()
	tr := l.Build.Fabric.Trim
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := writeThresholds(ctx, l, c, toHost, uint64(tr.ThresholdPackets), uint64(tr.ECNPackets)); err != nil {
		t.Errorf("restore thresholds of %s: %v", c.Device, err)
	}
}

// congest throttles one switch port and lowers the switch's trim
// threshold for the port class (0: fabric-facing, 1: host-facing) through
// P4Runtime; both are undone when the test ends.
func congest(t *testing.T, l *lab.Lab, c *lab.Control, sw string, port uint32, toHost uint64, pps int, threshold uint64) {
	t.Helper()
	f := l.Build.Fabric
	setThresholds(t, l, c, toHost, threshold, uint64(f.Trim.ECNPackets))
	t.Cleanup(func() { restoreThresholds(t, l, c, toHost) })
	ctx := ctxFor(t, 10*time.Second)
	if err := l.SetQueueRate(ctx, sw, port, pps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.SetQueueRate(context.Background(), sw, port, 0); err != nil {
			t.Errorf("restore queue rate: %v", err)
		}
	})
}

// nicEvents reads a NIC's event counters.
func nicEvents(t *testing.T, c *lab.Control) []int64 {
	t.Helper()
	ev, err := c.Counters(ctxFor(t, 10*time.Second), schema.NICEventCounter)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// burst sends n packets as fast as the lab takes them and waits until every
// PSN has come back either as data at the destination or as a NACK at the
// source.
func burst(t *testing.T, l *lab.Lab, fl *flow, first, n uint32) (data, nacks []parsed) {
	t.Helper()
	fl.send(t, first, n, 0, nil)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data = only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData)
		nacks = only(parseAll(t, l.HostFrames(fl.src)), isNACK)
		if uint32(len(data)+len(nacks)) >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return data, nacks
}

// rotation sends one packet per slot of the EV set (n = set size) as fast
// as the lab takes them and returns once every one is answered: delivered
// and its SACK back at the source, or NACKed. Every SKIP mark those answers
// set is then in place before the caller sends anything else: a mark set by
// an answer that returned mid-rotation marks a slot this rotation already
// took, so it is taken (and cleared) in the next rotation, never in this
// one.
func rotation(t *testing.T, l *lab.Lab, fl *flow, first, n uint32) (data, nacks, sacks []parsed) {
	t.Helper()
	data, nacks = burst(t, l, fl, first, n)
	if uint32(len(data)+len(nacks)) != n {
		t.Fatalf("PSNs %d..%d: %d delivered and %d NACKed, want %d answered", first, first+n-1, len(data), len(nacks), n)
	}
	sacks, err := waitOpcode(l, fl.src, isSACK, len(data))
	if err != nil {
		t.Fatal(err)
	}
	return data, nacks, sacks
}

// TestTrim congests the T1 -> T0 port of one path: packets sent over it are
// trimmed to the trim size with DSCP TRIMMED, the receiving NIC answers each
// with a NACK carrying the same EV and PSN, the sender's NIC marks those EVs
// SKIP for one rotation (as it does for EVs whose SACK reports an ECN
// mark), and the congested port's counters agree with what the hosts saw.
//
// The counts hold by construction: the first burst is exactly one rotation
// of the EV set (every slot taken once), and the next rotation starts only
// once every NACK and SACK of the first is back, with the port unthrottled
// and the thresholds restored, so that nothing in the later rotations is
// trimmed or ECN-marked (no queue holds more than the packets of one
// (plane, T1), set/4, below both thresholds).
func TestTrim(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	from, to := plan.Host{Row: 0, Port: 1}, plan.Host{Row: 1, Port: 1}
	fl := newFlow(l, from, to, 0x000202)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)
	n := uint32(f.EV.SetSize)
	perPath := f.EV.SetSize / (f.Planes * f.T1Count)
	if perPath >= f.Trim.ThresholdPackets || perPath >= f.Trim.ECNPackets {
		t.Fatalf("%d packets per (plane, T1) in a rotation: not below the thresholds (trim %d, ECN %d); the later rotations would not be clean",
			perPath, f.Trim.ThresholdPackets, f.Trim.ECNPackets)
	}

	// Congest p0-t1-0's port towards the destination's T0: 1 packet/s and
	// trim threshold 1. The rotation's perPath (4) packets on that port
	// arrive within milliseconds: the first is queued, the second waits a
	// second behind it, so the ones after find the queue busy and are
	// trimmed.
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0})
	dstT0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: to.Row})
	port, ok := l.Port(t1, dstT0)
	if !ok {
		t.Fatalf("%s has no port to %s", t1, dstT0)
	}
	t1Ctl := control(t, l, t1)
	congest(t, l, t1Ctl, t1, port, 0, 1, 1)
	txBefore, err := t1Ctl.Counters(ctxFor(t, 10*time.Second), schema.SwitchTxCounter)
	if err != nil {
		t.Fatal(err)
	}
	evBefore := nicEvents(t, srcCtl)

	data, nacks, sacks := rotation(t, l, fl, 0, n)
	if len(nacks) == 0 {
		t.Fatal("no packet was trimmed: the congestion did not build up")
	}
	answered := map[uint32]bool{}
	for _, d := range data {
		answered[d.pkt.BTH.PSN] = true
	}
	trimmedSlots := map[int]bool{}
	for _, nk := range nacks {
		if nk.pkt.BTH.Opcode != mrcpkt.OpNACK || nk.pkt.NETH == nil {
			t.Fatalf("source host got a non-NACK: %+v", nk.pkt.BTH)
		}
		ne := nk.pkt.NETH
		ev := p.SplitEV(plan.EV(ne.EV))
		if ne.Reason != mrcpkt.NACKTrimmed || ev.Plane != 0 || ev.T1 != 0 {
			t.Errorf("NACK PSN %d: reason %#x, EV plane %d T1 %d; want TRIMMED, plane 0, T1 0", ne.PSN, ne.Reason, ev.Plane, ev.T1)
		}
		if ne.PSN != nk.pkt.BTH.PSN || answered[ne.PSN] {
			t.Errorf("NACK PSN %d (BTH %d) is wrong or its packet was also delivered", ne.PSN, nk.pkt.BTH.PSN)
		}
		answered[ne.PSN] = true
		trimmedSlots[ev.Salt] = true
	}
	if len(answered) != int(n) {
		t.Errorf("%d distinct PSNs answered, want %d", len(answered), n)
	}

	// What crossed the congested port, as the lab's wire saw it.
	trimmedOnWire := 0
	for _, fr := range l.Trace() {
		if fr.Device != t1 || fr.Port != port {
			continue
		}
		pkt, err := mrcpkt.Parse(fr.Data)
		if err != nil || pkt.Outer == nil || pkt.BTH.DstQP != fl.qp {
			continue
		}
		if int(pkt.Outer.DSCP) == f.DSCP.Trimmed {
			trimmedOnWire++
			if len(fr.Data) != f.Trim.SizeBytes {
				t.Errorf("trimmed packet is %d bytes, want %d", len(fr.Data), f.Trim.SizeBytes)
			}
			if int(pkt.Outer.PayloadLength) != f.Trim.SizeBytes-54 {
				t.Errorf("trimmed packet's outer payload length %d, want %d", pkt.Outer.PayloadLength, f.Trim.SizeBytes-54)
			}
		}
	}
	txAfter, err := t1Ctl.Counters(ctxFor(t, 10*time.Second), schema.SwitchTxCounter)
	if err != nil {
		t.Fatal(err)
	}
	idx := int(port)*schema.PortClasses + schema.ClassTrimmed
	if d := txAfter[idx] - txBefore[idx]; d != int64(trimmedOnWire) || d != int64(len(nacks)) {
		t.Errorf("congested port counted %d trimmed, the wire saw %d, the source got %d NACKs", d, trimmedOnWire, len(nacks))
	}
	// A SACK marked SKIP_ONCE (the packet met an ECN mark) skips the EV
	// too. None is expected (no queue reaches the ECN threshold), but the
	// count comes from the wire either way.
	ecnMarked := 0
	for _, s := range sacks {
		if s.pkt.SETH.Mark == mrcpkt.MarkSkipOnce {
			ecnMarked++
			trimmedSlots[p.SplitEV(plan.EV(s.pkt.SETH.EV)).Salt] = true
		}
	}
	evAfter := nicEvents(t, srcCtl)
	if d := evAfter[schema.NICEventSkipSet] - evBefore[schema.NICEventSkipSet]; d != int64(len(nacks)+ecnMarked) {
		t.Errorf("sender marked %d SKIPs for %d NACK TRIMMED and %d SACKs marked SKIP_ONCE", d, len(nacks), ecnMarked)
	}
	t.Logf("trim: %d of %d packets trimmed at %s port %d (%d bytes, DSCP %d), %d NACKs, %d ECN-marked SACKs, slots %v marked SKIP",
		len(nacks), n, t1, port, f.Trim.SizeBytes, f.DSCP.Trimmed, len(nacks), ecnMarked, keys(trimmedSlots))

	// Next rotation, uncongested: each SKIP slot is passed over exactly once.
	if err := l.SetQueueRate(ctxFor(t, 10*time.Second), t1, port, 0); err != nil {
		t.Fatal(err)
	}
	restoreThresholds(t, l, t1Ctl, 0)
	before := nicEvents(t, srcCtl)
	l.ResetCaptures()
	data, nacks, sacks = rotation(t, l, fl, n, n)
	mid := nicEvents(t, srcCtl)
	if d := mid[schema.NICEventSkipTaken] - before[schema.NICEventSkipTaken]; d != int64(len(trimmedSlots)) {
		t.Errorf("next rotation passed over %d SKIP slots, want %d", d, len(trimmedSlots))
	}
	if len(nacks) != 0 || marked(sacks) != 0 {
		t.Errorf("next rotation: %d trimmed, %d ECN-marked; want none", len(nacks), marked(sacks))
	}
	l.ResetCaptures()
	_, nacks, sacks = rotation(t, l, fl, 2*n, n)
	after := nicEvents(t, srcCtl)
	if d := after[schema.NICEventSkipTaken] - mid[schema.NICEventSkipTaken]; d != 0 {
		t.Errorf("the rotation after that still passed over %d slots: SKIP lasted more than one rotation", d)
	}
	if len(nacks) != 0 || marked(sacks) != 0 {
		t.Errorf("third rotation: %d trimmed, %d ECN-marked; want none", len(nacks), marked(sacks))
	}
	t.Logf("trim: next rotation passed over %d SKIP slots, the one after %d",
		mid[schema.NICEventSkipTaken]-before[schema.NICEventSkipTaken], after[schema.NICEventSkipTaken]-mid[schema.NICEventSkipTaken])
}

// marked counts the SACKs marked SKIP_ONCE.
func marked(sacks []parsed) int {
	n := 0
	for _, s := range sacks {
		if s.pkt.SETH != nil && s.pkt.SETH.Mark == mrcpkt.MarkSkipOnce {
			n++
		}
	}
	return n
}

// TestTrimLastHop congests the destination T0's port to the receiving NIC:
// packets are trimmed with DSCP TRIMMED_LASTHOP, NACKed with that reason,
// and the sender does not penalise the EVs.
func TestTrimLastHop(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	fl := newFlow(l, from, to, 0x000303)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)

	dstT0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: to.Row})
	port, ok := l.Port(dstT0, fl.dst)
	if !ok {
		t.Fatalf("%s has no port to %s", dstT0, fl.dst)
	}
	t0Ctl := control(t, l, dstT0)
	congest(t, l, t0Ctl, dstT0, port, 1, 20, 2)
	evBefore := nicEvents(t, srcCtl)

	const n = 64
	data, nacks := burst(t, l, fl, 0, n)
	if len(data)+len(nacks) != n || len(nacks) == 0 {
		t.Fatalf("of %d packets, %d arrived and %d were NACKed (want some NACKed)", n, len(data), len(nacks))
	}
	for _, nk := range nacks {
		if nk.pkt.NETH == nil || nk.pkt.NETH.Reason != mrcpkt.NACKTrimmedLastHop {
			t.Errorf("NACK: %+v, want reason TRIMMED_LASTHOP", nk.pkt.NETH)
		}
	}
	// Packets queued past the ECN threshold on the way (not on the last hop,
	// where nothing is marked) come back in SACKs marked SKIP_ONCE: those
	// skip their EV, the TRIMMED_LASTHOP NACKs must not.
	sacks, err := waitOpcode(l, fl.src, isSACK, len(data))
	if err != nil {
		t.Fatal(err)
	}
	ecnMarked := 0
	for _, s := range sacks {
		if s.pkt.SETH.Mark == mrcpkt.MarkSkipOnce {
			ecnMarked++
		}
	}
	evAfter := nicEvents(t, srcCtl)
	if d := evAfter[schema.NICEventSkipSet] - evBefore[schema.NICEventSkipSet]; d != int64(ecnMarked) {
		t.Errorf("%d EVs marked SKIP for %d ECN-marked SACKs: TRIMMED_LASTHOP penalised %d", d, ecnMarked, d-int64(ecnMarked))
	}
	t.Logf("last hop: %d of %d packets trimmed at %s port %d, NACKed TRIMMED_LASTHOP, no EV penalised", len(nacks), n, dstT0, port)
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}
