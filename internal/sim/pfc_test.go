package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// TestPFCThresholds: small's defaults, worked out by hand from
// docs/protocol.md 11.2, and every threshold that cannot be lossless
// refused with the threshold named.
func TestPFCThresholds(t *testing.T) {
	f, _, _ := genSource(t, "small")
	// Frames of up to 176 header bytes and a 4096-byte segment: 4272
	// buffered, 4296 on the wire. Buffer: 64 of them. Headroom: two 150 ns
	// T0-T1 delays at 200 Gb/s (40 ps a byte): 7500 bytes; three frames;
	// the 84-byte PAUSE frame.
	want := PFCThresholds{Buffer: 64 * 4272, Headroom: 7500 + 3*4296 + 84}
	want.XOFF = want.Buffer - want.Headroom
	want.XON = want.XOFF - 2*4272
	if got := PFCDefaults(f, DefaultSegment); got != want {
		t.Errorf("defaults on small: %+v, want %+v", got, want)
	}
	if got, err := (PFCConfig{}).Resolve(f, DefaultSegment); err != nil || got != want {
		t.Errorf("PFCConfig{} resolves to %+v, %v; want the defaults", got, err)
	}
	got, err := PFCConfig{XOFFBytes: 100_000, XONBytes: 50_000}.Resolve(f, DefaultSegment)
	if err != nil || got.XOFF != 100_000 || got.XON != 50_000 {
		t.Errorf("XOFF 100000, XON 50000: %+v, %v", got, err)
	}
	if got, _ := (PFCConfig{XOFFBytes: 100_000}).Resolve(f, DefaultSegment); got.XON != 100_000-2*4272 {
		t.Errorf("XOFF 100000 alone: XON %d, want two frames below it", got.XON)
	}

	slow, err := fabric.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	slow.Links.T0T1Ns = 20_000 // 4 km: a round trip holds 2 MB at 200 Gb/s
	far, err := fabric.Resolve(slow)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		f         *fabric.Fabric
		c         PFCConfig
		threshold string
	}{
		{"XOFF eating into the headroom", f, PFCConfig{XOFFBytes: want.XOFF + 1}, "xoff"},
		{"XON at XOFF", f, PFCConfig{XOFFBytes: 100_000, XONBytes: 100_000}, "xon"},
		{"XON above the default XOFF", f, PFCConfig{XONBytes: want.XOFF + 1}, "xon"},
		{"a negative threshold", f, PFCConfig{XONBytes: -1}, "xon"},
		{"links too long for the buffer", far, PFCConfig{}, ""},
	} {
		_, err := tc.c.Resolve(tc.f, DefaultSegment)
		var te *PFCThresholdError
		if !errors.As(err, &te) || te.Threshold != tc.threshold {
			t.Errorf("%s: %v, want a PFCThresholdError on %q", tc.name, err, tc.threshold)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if _, err := New(f, FromGenerator(plan.New(f)), Options{PFC: &PFCConfig{XOFFBytes: want.XOFF + 1},
		Flows: []Flow{{Src: plan.Host{Row: 0}, Dst: plan.Host{Row: 1}, Bytes: 1}}}); err == nil {
		t.Error("New took an XOFF without its headroom")
	}
}

// TestIngressAccount: an ingress port pauses its upstream once when it
// reaches XOFF and resumes it once when it is back down to XON, not on
// every packet in between.
func TestIngressAccount(t *testing.T) {
	th := &PFCThresholds{XOFF: 10, XON: 4}
	var a ingressAccount
	steps := []struct {
		admit, release int64
		pause, resume  bool
	}{
		{admit: 6},
		{admit: 3},                 // 9: below XOFF
		{admit: 1, pause: true},    // 10: at XOFF
		{admit: 5},                 // 15: paused already
		{release: 6},               // 9
		{release: 4},               // 5: above XON
		{release: 1, resume: true}, // 4: at XON
		{release: 2},               // 2: resumed already
		{admit: 7},                 // 9
		{admit: 3, pause: true},    // 12
	}
	for i, st := range steps {
		var pause, resume bool
		if st.admit > 0 {
			pause = a.admit(st.admit, th)
		} else {
			resume = a.release(st.release, th)
		}
		if pause != st.pause || resume != st.resume {
			t.Errorf("step %d (%+v): pause %v resume %v, held %d", i, st, pause, resume, a.held)
		}
	}
	if a.held != 12 || !a.paused {
		t.Errorf("held %d paused %v at the end, want 12 and paused", a.held, a.paused)
	}
}

// TestPFCIncast: TestIncast's 31-to-1 on small, 256 KiB each, RoCE lossy
// and lossless, the same flows and seed, both held to BMv2's ports of
// trim.queue_packets (SwitchBufferPerPort: the lossless ingress buffers
// are that many frames too). Lossy RoCE tail-drops at the
// receiver's T0 and go-back-N waits for timeouts; with PFC nothing is
// dropped, the switches pause their upstreams instead, and the receiver
// runs near its line rate. A data packet only overflows its ingress
// port's buffer if the headroom is too small: with XOFF one frame below
// the buffer it does.
func TestPFCIncast(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := IncastFlows(hosts, 256<<10, 0)
	lossy := run(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE, SwitchBuffer: SwitchBufferPerPort})
	lossless := run(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE, PFC: &PFCConfig{}})
	mrc := run(t, f, src, Options{Flows: flows, Seed: 1})
	for _, r := range []*Result{lossy, lossless, mrc} {
		t.Logf("%s (PFC %v): received %.3f of line rate, FCT max %.1f µs, tail drops %d, ECN marks %d, resends %+v, PFC %+v",
			r.Transport, r.PFC != nil, r.ReceiveGoodput.Max, r.FCT.Max, r.Drops.TailDrop, r.ECNMarks, r.Retransmits, r.PFC)
		if r.Completed != len(flows) {
			t.Fatalf("%s (PFC %v): %d of %d flows complete", r.Transport, r.PFC != nil, r.Completed, len(flows))
		}
	}
	pfc := lossless.PFC
	if lossless.Drops.TailDrop != 0 || pfc.Pauses == 0 || pfc.PausedPortUS <= 0 || pfc.MaxHeldBytes < pfc.XOFF {
		t.Errorf("lossless RoCE: %d tail drops, %d pauses, %.1f port-µs paused, most held %d: want none dropped, ports paused, XOFF reached",
			lossless.Drops.TailDrop, pfc.Pauses, pfc.PausedPortUS, pfc.MaxHeldBytes)
	}
	if r := lossless.Retransmits; r.Timeout+r.SeqError != 0 {
		t.Errorf("lossless RoCE resent %+v: nothing was lost", r)
	}
	if lossy.Drops.TailDrop == 0 {
		t.Error("lossy RoCE dropped nothing: the comparison compares nothing")
	}
	if lossless.ReceiveGoodput.Max < 0.9 || lossless.ReceiveGoodput.Max < lossy.ReceiveGoodput.Max+0.5 {
		t.Errorf("receiver at %.3f of line rate with PFC, %.3f without: want at least 0.9, and 50 points better",
			lossless.ReceiveGoodput.Max, lossy.ReceiveGoodput.Max)
	}

	// The headroom is what keeps it lossless: without it, packets overflow.
	s := newSim(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE, PFC: &PFCConfig{}})
	s.pfc.XOFF = s.pfc.Buffer - largestFrame(DefaultSegment)
	s.pfc.XON = s.pfc.XOFF - 2*largestFrame(DefaultSegment)
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("XOFF one frame below the buffer: %d tail drops", r.Drops.TailDrop)
	if r.Drops.TailDrop == 0 {
		t.Error("with no headroom no data packet overflowed: the incast does not test the headroom")
	}
}

// TestPFCHeadOfLine is why PFC is feared: a victim flow from nic-04 (row
// 1) to nic-03, an idle host on the incast receiver's T0, shares no queue
// the incast congests, only the T1-to-T0 links into that T0. With PFC,
// the T0 pauses each of those links whenever the incast's packets it
// holds from it reach XOFF, and the victim's packets wait behind the
// incast's in the T1's queue: its completion time is many times its time
// alone. On lossy RoCE nothing pauses, but the incast's senders, starting
// at line rate under DCQCN, overflow the T1 queues the victim shares and
// go-back-N resends its dropped packets: x2.0 to x60.4 over seeds 1-6,
// as the drops fall on the victim's QPs or not (logged, not compared:
// under the T1s an earlier hash drew, seed 1's was x3.5). MRC trims what
// it would queue too long: its victim is barely slowed.
//
// By construction, with one RoCE QP a plane (RoCEQPs 1: small's default
// of 2 gives the victim a second QP a plane, hashed elsewhere): in every
// plane the T1 the victim's QP is hashed to also carries at least two of
// the incast's QPs (checked below), whose
// windows (2 x 64 packets) exceed XOFF (about 59 packets) while the
// receiver's port (31 senders into one 200 Gb/s port per plane) drains
// them at a fraction of their rate, so the link the victim needs is
// paused for most of the incast.
func TestPFCHeadOfLine(t *testing.T) {
	f, p, src := genSource(t, "small")
	h := func(i int) plan.Host { return p.HostByIndex(i) }
	receiver, victimSrc, victimDst := h(0), h(4), h(3)
	victim := Flow{Src: victimSrc, Dst: victimDst, Bytes: 1 << 20, Start: 20 * time.Microsecond}
	var flows []Flow
	for i := 1; i < f.Hosts(); i++ {
		if src := h(i); src != victimSrc && src != victimDst {
			flows = append(flows, Flow{Src: src, Dst: receiver, Bytes: 1 << 20})
		}
	}
	probe := newSim(t, f, src, Options{Transport: RoCE, RoCEQPs: 1, Seed: 1, Flows: flows}) // the runs' seed: their hashes
	for plane := 0; plane < f.Planes; plane++ {
		t1 := probe.ecmp(probe.hostOf(victimSrc), probe.hostOf(victimDst), plane, 0)
		shared := 0
		for _, fl := range flows {
			if fl.Src.Row != receiver.Row && probe.ecmp(probe.hostOf(fl.Src), probe.hostOf(receiver), plane, 0) == t1 {
				shared++
			}
		}
		if shared < 2 {
			t.Fatalf("plane %d: the victim's T1 %d carries %d of the incast's QPs, want 2 or more", plane, t1, shared)
		}
	}

	victimFCT := func(opt Options) (alone, loaded float64, r *Result) {
		opt.Seed = 1
		opt.Flows = []Flow{victim}
		a := run(t, f, src, opt)
		opt.Flows = append(append([]Flow(nil), flows...), victim)
		r = run(t, f, src, opt)
		v := r.FlowResults[len(r.FlowResults)-1]
		if a.Completed != 1 || v.FCTUS < 0 {
			t.Fatalf("%v, PFC %v: the victim did not complete", opt.Transport, opt.PFC != nil)
		}
		return a.FlowResults[0].FCTUS, v.FCTUS, r
	}
	alone, lossless, rl := victimFCT(Options{Transport: RoCE, RoCEQPs: 1, PFC: &PFCConfig{}})
	aloneLossy, lossy, _ := victimFCT(Options{Transport: RoCE, RoCEQPs: 1})
	aloneMRC, mrc, _ := victimFCT(Options{})
	t.Logf("victim %s -> %s: alone %.1f µs; with the incast, lossless RoCE %.1f µs (x%.1f; PFC %+v), lossy RoCE %.1f µs (x%.1f), MRC %.1f µs (x%.2f)",
		p.HostName(victim.Src), p.HostName(victim.Dst), alone, lossless, lossless/alone, rl.PFC, lossy, lossy/aloneLossy, mrc, mrc/aloneMRC)
	if rl.Completed != len(flows)+1 || rl.Drops.TailDrop != 0 {
		t.Errorf("lossless: %d of %d flows complete, %d tail drops", rl.Completed, len(flows)+1, rl.Drops.TailDrop)
	}
	// Measured: x23.4 lossless, x60.4 lossy, x1.02 MRC (seed 1).
	if lossless < 10*alone {
		t.Errorf("with PFC the victim took %.1f µs, %.1f times its %.1f µs alone: want 10 times or more", lossless, lossless/alone, alone)
	}
	if mrc > 1.5*aloneMRC {
		t.Errorf("MRC's victim took %.1f µs, %.2f times its %.1f µs alone: want 1.5 times at most", mrc, mrc/aloneMRC, aloneMRC)
	}
}

// TestPFCLinkFlap: a T1-T0 link into the incast receiver's T0 flaps while
// the incast pauses it. What was queued for the link is lost as without
// PFC (go-back-N resends it), and each failure clears the pause across
// the link at both ends: a port left paused by a PAUSE whose RESUME died
// with the link would hold the QPs hashed to it (routing does not move
// them: the link is back before it converges) until the time limit. Two
// runs of the same seed give the same JSON.
func TestPFCLinkFlap(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := IncastFlows(hosts, 1<<20, 0)
	out := func(seed uint64) (*Result, []byte) {
		r := run(t, f, src, Options{Flows: flows, Seed: seed, Transport: RoCE, PFC: &PFCConfig{}, Limit: 100 * time.Millisecond,
			Faults: []Fault{
				{Kind: Flap, A: "p0-t0-0", B: "p0-t1-1", At: 20 * time.Microsecond, Until: 200 * time.Microsecond, Period: 10 * time.Microsecond, Duty: 0.3},
				{Kind: Loss, A: "p1-t0-0", B: "p1-t1-2", Percent: 1},
			}})
		r.Run = RunFigures{}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return r, b
	}
	r, x := out(7)
	_, y := out(7)
	_, z := out(8)
	t.Logf("flap: %d of %d complete, FCT max %.1f µs, lost on the link %d, resends %+v, PFC %+v",
		r.Completed, r.Flows, r.FCT.Max, r.Faults[0].Lost, r.Retransmits, r.PFC)
	if r.Completed != len(flows) {
		t.Errorf("%d of %d flows complete: a port stayed paused?", r.Completed, len(flows))
	}
	if r.Faults[0].Lost == 0 || r.PFC.Pauses == 0 || r.Drops.TailDrop != 0 {
		t.Errorf("lost %d on the flapping link, %d pauses, %d tail drops: want losses, pauses, no tail drop",
			r.Faults[0].Lost, r.PFC.Pauses, r.Drops.TailDrop)
	}
	if !bytes.Equal(x, y) {
		t.Error("two runs of seed 7 with PFC differ")
	}
	if bytes.Equal(x, z) {
		t.Error("seeds 7 and 8 gave the same result: the seed is not used")
	}
}
