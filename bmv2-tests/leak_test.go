package bmv2tests

import (
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// wireCount follows the lab's wire and counts the frames keep accepts.
type wireCount struct {
	l    *lab.Lab
	keep func(lab.Frame, *mrcpkt.Packet) bool
	next int
	n    int
}

func (w *wireCount) count() int {
	frames := w.l.TraceFrom(w.next)
	w.next += len(frames)
	for _, fr := range frames {
		if p, err := mrcpkt.Parse(fr.Data); err == nil && w.keep(fr, p) {
			w.n++
		}
	}
	return w.n
}

// waitFor polls cond until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTrimOccupancyLeak overfills a throttled last-hop port with data that
// may not be trimmed (DSCP NO_TRIM), so that its queue really tail-drops,
// lets the queue drain, and then sends trimmable packets one at a time: none
// may be trimmed. With an occupancy count that only ingress increments and
// egress decrements, every tail drop stayed in the count, and a port that
// had dropped more packets than its trim threshold trimmed everything for
// ever after.
//
// By construction: the burst keeps fewer packets between the NIC and the T1s
// than the ECN and trim thresholds, so only the throttled port queues; the
// drops are counted by the switch itself (data received for the port less
// data sent); the queue is known empty once a packet sent after the whole
// burst reached the switch has come out of it (one FIFO queue); and the
// trimmable packets go one at a time, each after the previous was answered.
func TestTrimOccupancyLeak(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	fl := newFlow(l, from, to, 0x000606)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)

	// The last-hop port of plane 0 towards the destination: half the EVs
	// (all of plane 0) cross it.
	dstT0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: to.Row})
	port, ok := l.Port(dstT0, fl.dst)
	if !ok {
		t.Fatalf("%s has no port to %s", dstT0, fl.dst)
	}
	var upPorts []uint32
	for s := 0; s < f.T1Count; s++ {
		up, ok := l.Port(dstT0, p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: s}))
		if !ok {
			t.Fatalf("%s has no port to T1 %d", dstT0, s)
		}
		upPorts = append(upPorts, up)
	}
	t0Ctl := control(t, l, dstT0)
	const threshold, pps = 8, 10
	congest(t, l, t0Ctl, dstT0, port, 1, pps, threshold)

	counters := func(name string) []int64 {
		t.Helper()
		c, err := t0Ctl.Counters(ctxFor(t, 10*time.Second), name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rxBefore, txBefore := counters(schema.SwitchRxCounter), counters(schema.SwitchTxCounter)
	received := func() int64 { // data packets dstT0 received from the T1s
		rx := counters(schema.SwitchRxCounter)
		var n int64
		for _, up := range upPorts {
			i := int(up)*schema.PortClasses + schema.ClassData
			n += rx[i] - rxBefore[i]
		}
		return n
	}
	sent := func(class int) int64 { // packets dstT0 sent to the host port
		i := int(port)*schema.PortClasses + class
		return counters(schema.SwitchTxCounter)[i] - txBefore[i]
	}
	planeBefore, err := srcCtl.Counters(ctxFor(t, 10*time.Second), schema.NICPlaneTx)
	if err != nil {
		t.Fatal(err)
	}

	// Phase 1: the burst, NO_TRIM, at most window packets upstream of the
	// T1s (their frames to the T0s are out of the upstream queues).
	window := min(f.Trim.ECNPackets, f.Trim.ThresholdPackets) / 2
	upstream := &wireCount{l: l, keep: func(fr lab.Frame, pkt *mrcpkt.Packet) bool {
		d := l.Devices[fr.Device]
		return d.Role == plan.RoleT1.String() && pkt.BTH.DstQP == fl.qp && mrcpkt.IsData(pkt.BTH.Opcode)
	}}
	const n = 300
	fl.dscp = uint8(f.DSCP.NoTrim)
	fl.send(t, 0, n, window, upstream.count)
	// Every packet has left the T1s (none is lost upstream): the NIC's
	// counters are final.
	waitFor(t, 30*time.Second, "the burst did not all pass the T1s", func() bool { return upstream.count() == n })
	planeAfter, err := srcCtl.Counters(ctxFor(t, 10*time.Second), schema.NICPlaneTx)
	if err != nil {
		t.Fatal(err)
	}
	toPort := planeAfter[0] - planeBefore[0] // plane 0's packets all go to port
	waitFor(t, 30*time.Second, "the burst's plane-0 packets did not all reach "+dstT0, func() bool { return received() == toPort })
	// One packet left the queue after the last arrived: it holds fewer
	// than its capacity, so the next packet for it is not dropped.
	leftAtArrival := sent(schema.ClassData)
	waitFor(t, 30*time.Second, "the throttled queue did not move", func() bool { return sent(schema.ClassData) > leftAtArrival })

	// From here on a second QP between the same NICs: the burst's tail
	// drops left holes in the first one's receive state, beyond whose
	// window the receiving NIC delivers nothing.
	fl2 := newFlow(l, from, to, 0x000616)
	fl2.dscp = uint8(f.DSCP.NoTrim)
	openQPs(t, srcCtl, dstCtl, fl2, 0)
	// A packet behind the whole burst: once one on plane 0 is delivered,
	// the throttled queue holds nothing of the burst any more.
	psn := uint32(0)
	for {
		fl2.send(t, psn, 1, 0, nil)
		var delivered *parsed
		waitFor(t, 30*time.Second, "the packet behind the burst was not delivered", func() bool {
			for _, d := range only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData) {
				if d.pkt.BTH.DstQP == fl2.qp && d.pkt.BTH.PSN == psn {
					delivered = &d
					return true
				}
			}
			return false
		})
		if p.SplitEV(plan.EV(uint32(delivered.pkt.UDP.SrcPort)<<16)).Plane == 0 {
			break
		}
		psn++
		if psn > uint32(f.Planes) {
			t.Fatalf("no packet after the burst took plane 0")
		}
	}
	drops := received() - sent(schema.ClassData)
	if drops <= threshold {
		t.Fatalf("%d of %d packets were tail-dropped at %s port %d: not more than the trim threshold %d, the test shows nothing",
			drops, toPort, dstT0, port, threshold)
	}

	// Phase 2: the queue is empty; trimmable packets one at a time must not
	// be trimmed.
	if err := l.SetQueueRate(ctxFor(t, 10*time.Second), dstT0, port, 0); err != nil {
		t.Fatal(err)
	}
	l.ResetCaptures()
	trimmedBefore := sent(schema.ClassTrimmed)
	fl2.dscp = uint8(f.DSCP.Trimmable)
	m := uint32(2 * f.EV.SetSize)
	first := psn + 1
	ours := func(frames []parsed) int { // phase 2's PSNs only
		k := 0
		for _, fr := range frames {
			if qp := fr.pkt.BTH.DstQP; (qp == fl2.qp || qp == fl2.srcQP) && fr.pkt.BTH.PSN >= first && fr.pkt.BTH.PSN < first+m {
				k++
			}
		}
		return k
	}
	answered := func() int {
		return ours(only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData)) + ours(only(parseAll(t, l.HostFrames(fl.src)), isNACK))
	}
	fl2.send(t, first, m, 1, answered)
	waitFor(t, 30*time.Second, "the trimmable packets were not all answered", func() bool { return answered() == int(m) })
	nacks := ours(only(parseAll(t, l.HostFrames(fl.src)), isNACK))
	trimmed := sent(schema.ClassTrimmed) - trimmedBefore
	if nacks != 0 || trimmed != 0 {
		t.Errorf("after %d tail drops and an empty queue, %d of %d trimmable packets sent one at a time were trimmed (%d NACKs): the occupancy count leaked",
			drops, trimmed, m, nacks)
	}
	t.Logf("leak: %d NO_TRIM packets, %d to %s port %d (throttled to %d/s, capacity %d): %d tail-dropped; then %d trimmable packets one at a time: %d trimmed",
		n, toPort, dstT0, port, pps, f.Trim.QueuePackets, drops, m, trimmed)
}
