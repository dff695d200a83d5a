package bmv2tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// TestSpray sends N packets of one QP from a host on T0 row 0 to a host on
// row 1 and checks: each is delivered exactly once with its inner packet
// byte-identical (the UDP source port carries EV[31:16]); every plane gets
// exactly N/P; every EV of the set carried exactly N/set; the T0 up-port
// counters show the spread over the T1s. Then, for every packet, the
// switches it crossed (from the lab's wires) are the ones verify's tracer
// predicts for its EV.
func TestSpray(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	const N = 1024
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x000101)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)
	slotsBefore, err := srcCtl.Counters(ctxFor(t, 10*time.Second), schema.NICSlotTx)
	if err != nil {
		t.Fatal(err)
	}
	upBefore := t0UpCounters(t, l)

	start := time.Now()
	fl.send(t, 0, N, 8, func() int { return len(l.HostFrames(fl.dst)) })
	frames, err := l.WaitHostFrames(ctxFor(t, 60*time.Second), fl.dst, N)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spray: %d packets host to host in %v: %.0f packets/s through 5 BMv2 hops each", N, took.Round(time.Millisecond), N/took.Seconds())

	got := only(parseAll(t, frames), mrcpkt.IsData)
	seen := map[uint32]int{}
	perPlane := make([]int, f.Planes)
	perPath := map[[2]int]int{}
	for _, g := range got {
		psn := g.pkt.BTH.PSN
		seen[psn]++
		want := fl.frame(psn)
		inner, err := mrcpkt.InnerBytes(g.Data)
		if err != nil {
			t.Fatal(err)
		}
		sent, _ := mrcpkt.InnerBytes(want)
		// The NIC rewrote the UDP source port (EV[31:16]): compare the rest.
		binary.BigEndian.PutUint16(sent[40:42], g.pkt.UDP.SrcPort)
		if !bytes.Equal(inner, sent) {
			t.Errorf("PSN %d: inner packet differs from what was sent:\n got %x\nwant %x", psn, inner, sent)
		}
		ev := p.SplitEV(plan.EV(uint32(g.pkt.UDP.SrcPort) << 16))
		perPlane[ev.Plane]++
		perPath[[2]int{ev.Plane, ev.T1}]++
	}
	for psn := uint32(0); psn < N; psn++ {
		if seen[psn] != 1 {
			t.Errorf("PSN %d delivered %d times", psn, seen[psn])
		}
	}
	for pl, n := range perPlane {
		if n != N/f.Planes {
			t.Errorf("plane %d carried %d packets, want exactly %d", pl, n, N/f.Planes)
		}
	}
	t.Logf("per plane: %v; per (plane, T1): %v", perPlane, perPath)

	slots, err := srcCtl.Counters(ctxFor(t, 10*time.Second), schema.NICSlotTx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < f.EV.SetSize; i++ {
		if d := slots[i] - slotsBefore[i]; d != N/int64(f.EV.SetSize) {
			t.Errorf("EV slot %d carried %d packets, want %d", i, d, N/f.EV.SetSize)
		}
	}
	upAfter := t0UpCounters(t, l)
	for key, after := range upAfter {
		if key.row != from.Row {
			continue
		}
		d := after - upBefore[key]
		// Per (plane, T1) of the source T0: N / (planes x T1s) data packets.
		if want := int64(N / (f.Planes * f.T1Count)); d != want {
			t.Errorf("p%d-t0-%d up port to T1 %d sent %d data packets, want %d", key.plane, key.row, key.t1, d, want)
		}
	}

	evs := checkPathsMatchVerify(t, l, fl, N)

	// Every delivered packet was acknowledged: one SACK per PSN back at
	// the source, carrying the EV the packet travelled on.
	sacks, err := waitOpcode(l, fl.src, isSACK, N)
	if err != nil {
		t.Fatal(err)
	}
	// Each SACK names the packet it answers (BTH PSN), covers it, and
	// carries the QP of the source; once everything arrived, the last says
	// so: cumulative PSN N-1, nothing above.
	acked := map[uint32]bool{}
	complete := false
	for _, s := range sacks {
		se, psn := s.pkt.SETH, s.pkt.BTH.PSN
		if checkSACK(t, s) < 0 || acked[psn] {
			t.Errorf("bad or duplicate SACK: %+v", se)
			continue
		}
		acked[psn] = true
		if s.pkt.BTH.DstQP != fl.srcQP {
			t.Errorf("SACK for PSN %d goes to QP %#x, want the source's %#x", psn, s.pkt.BTH.DstQP, fl.srcQP)
		}
		if want, ok := evs[psn]; !ok || se.EV != want {
			t.Errorf("SACK for PSN %d echoes EV %#x, the packet used %#x", psn, se.EV, want)
		}
		complete = complete || se.CumPSN == N-1 && se.Bitmap == 0
	}
	if len(acked) != N || !complete {
		t.Errorf("%d PSNs acknowledged, want %d; a SACK with cumulative PSN %d: %v", len(acked), N, N-1, complete)
	}
}

// waitOpcode waits until nic's host has received n frames passing keep.
func waitOpcode(l *lab.Lab, nic string, keep func(uint8) bool, n int) ([]parsed, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got []parsed
		for _, fr := range l.HostFrames(nic) {
			if p, err := mrcpkt.Parse(fr.Data); err == nil && keep(p.BTH.Opcode) {
				got = append(got, parsed{fr, p})
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) < n {
				return got, fmt.Errorf("%s: %d of %d frames", nic, len(got), n)
			}
			return got, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type upKey struct{ plane, row, t1 int }

// t0UpCounters reads the data packets every T0 sent on each up port.
func t0UpCounters(t *testing.T, l *lab.Lab) map[upKey]int64 {
	t.Helper()
	p := l.Build.Plan
	out := map[upKey]int64{}
	for _, s := range p.Switches() {
		if s.Role != plan.RoleT0 {
			continue
		}
		c, err := l.Control(ctxFor(t, 10*time.Second), p.Name(s))
		if err != nil {
			t.Fatal(err)
		}
		cells, err := c.Counters(ctxFor(t, 10*time.Second), schema.SwitchTxCounter)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		for s1 := 0; s1 < p.F.T1Count; s1++ {
			out[upKey{s.Plane, s.Index, s1}] = cells[p.T0UpPort(s1)*schema.PortClasses+schema.ClassData]
		}
		c.Close()
	}
	return out
}

// checkPathsMatchVerify is the differential check: for every packet of the
// flow, the switches that transmitted it, in order, are the hops verify's
// tracer walks for the EV the sending NIC chose.
func checkPathsMatchVerify(t *testing.T, l *lab.Lab, fl *flow, n int) map[uint32]uint32 {
	t.Helper()
	p := l.Build.Plan
	tracer, err := verify.NewTracer(p, l.Build)
	if err != nil {
		t.Fatal(err)
	}
	type hopList struct {
		ev       uint32
		evKnown  bool
		switches []string
	}
	paths := map[uint32]*hopList{}
	trace := l.Trace()
	sort.Slice(trace, func(i, j int) bool { return trace[i].Seq < trace[j].Seq })
	for _, fr := range trace {
		pkt, err := mrcpkt.Parse(fr.Data)
		if err != nil || pkt.BTH.DstQP != fl.qp || !mrcpkt.IsData(pkt.BTH.Opcode) {
			continue
		}
		h := paths[pkt.BTH.PSN]
		if h == nil {
			h = &hopList{}
			paths[pkt.BTH.PSN] = h
		}
		dev := l.Devices[fr.Device]
		if fr.Device == fl.src && pkt.Outer != nil {
			if ev, ok := mrcpkt.EV(pkt); ok {
				h.ev, h.evKnown = ev, true
			}
			continue
		}
		if dev.Role != plan.RoleNIC.String() {
			h.switches = append(h.switches, fr.Device)
		}
	}
	checked := 0
	evs := map[uint32]uint32{}
	for psn := uint32(0); psn < uint32(n); psn++ {
		h := paths[psn]
		if h == nil || !h.evKnown {
			t.Errorf("PSN %d: not seen leaving %s", psn, fl.src)
			continue
		}
		ev := plan.EV(h.ev)
		evs[psn] = h.ev
		carrier, err := tracer.Carrier(fl.from, fl.to, ev)
		if err != nil {
			t.Fatal(err)
		}
		hops, dst, err := tracer.Walk(fl.from, p.SplitEV(ev).Plane, carrier)
		if err != nil {
			t.Fatalf("PSN %d: verify cannot walk EV %#x: %v", psn, h.ev, err)
		}
		if dst != fl.to {
			t.Fatalf("PSN %d: verify walks EV %#x to %s, not %s", psn, h.ev, p.HostName(dst), fl.dst)
		}
		var want []string
		for _, s := range hops {
			want = append(want, p.Name(s))
		}
		if len(want) != len(h.switches) {
			t.Errorf("PSN %d EV %#x: lab path %v, verify predicts %v", psn, h.ev, h.switches, want)
			continue
		}
		for i := range want {
			if want[i] != h.switches[i] {
				t.Errorf("PSN %d EV %#x: lab path %v, verify predicts %v", psn, h.ev, h.switches, want)
				break
			}
		}
		checked++
	}
	t.Logf("differential: %d of %d packets took exactly the switches verify predicts for their EV", checked, n)
	return evs
}
