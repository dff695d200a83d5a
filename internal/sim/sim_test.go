package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

func genSource(t testing.TB, name string) (*fabric.Fabric, *plan.Plan, Source) {
	t.Helper()
	return genSourceWith(t, name, func(*fabric.Description) {})
}

// genSourceWith is genSource on the preset name as change leaves it.
func genSourceWith(t testing.TB, name string, change func(*fabric.Description)) (*fabric.Fabric, *plan.Plan, Source) {
	t.Helper()
	d, err := fabric.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	change(&d)
	f, err := fabric.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(f)
	return f, p, FromGenerator(p)
}

func newSim(t testing.TB, f *fabric.Fabric, src Source, opt Options) *Sim {
	t.Helper()
	s, err := New(f, src, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t testing.TB, f *fabric.Fabric, src Source, opt Options) *Result {
	t.Helper()
	r, err := newSim(t, f, src, opt).Run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPermutation runs a permutation on small (every link of the fabric
// is used at its full rate) with MRC and with RoCE, the same flows and
// seed. MRC sprays each flow over every path; RoCE's flows collide on the
// T1s their hashes pick. MRC's worst host does better than RoCE's worst,
// and MRC's median host reaches 85% of its NIC's speed in payload.
func TestPermutation(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := Permutation(hosts, 8<<20, 0, 1)
	mrc := run(t, f, src, Options{Flows: flows, Seed: 1})
	roce := run(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE})
	for _, r := range []*Result{mrc, roce} {
		t.Logf("%s: %d/%d complete, goodput min %.3f p50 %.3f max %.3f, FCT p99 %.1f µs, tail drops %d, resends %+v",
			r.Transport, r.Completed, r.Flows, r.Goodput.Min, r.Goodput.P50, r.Goodput.Max, r.FCT.P99, r.Drops.TailDrop, r.Retransmits)
	}
	if mrc.Completed != len(flows) || roce.Completed != len(flows) {
		t.Fatalf("completed: MRC %d, RoCE %d of %d", mrc.Completed, roce.Completed, len(flows))
	}
	if mrc.Goodput.Min <= roce.Goodput.Min {
		t.Errorf("MRC's worst host %.3f, RoCE's %.3f: MRC should do better", mrc.Goodput.Min, roce.Goodput.Min)
	}
	if mrc.Goodput.P50 < 0.85 {
		t.Errorf("MRC's median host at %.3f of its NIC's speed, want >= 0.85", mrc.Goodput.P50)
	}
	if mrc.Trims.Fabric+mrc.Drops.TailDrop+mrc.Drops.LinkDown != 0 {
		t.Errorf("MRC on a non-blocking permutation trimmed %d and dropped %d", mrc.Trims.Fabric, mrc.Drops.TailDrop)
	}
	// 8 MiB in 4 KiB packets is 16 passes of small's 128 slots, twice K:
	// with SACKs coalesced (ack_every 3) and the planes reordering the
	// packets, every healthy slot must still be echoed in time (protocol.md
	// 4, Choosing K).
	if mrc.NIC.PathFailed != 0 {
		t.Errorf("MRC retired %d healthy paths on a fault-free fabric", mrc.NIC.PathFailed)
	}
}

// TestCutLosesKPerSlot is the BMv2 lab's failover figure in simulation: on
// tiny, a flow with a window below the EV set size, a T0-T1 link cut under
// it. With the sender's loss reports off (the lab's stream sets no METH
// LOST), every slot whose EV crossed the link has exactly K sends
// unanswered when its slot is retired (docs/protocol.md 5): the data
// packets lost on the link and those that crossed it just before the cut
// but whose echo was lost on the way back (the lab's test paces its stream
// so that nothing is in flight at the cut: all K are then data). With
// them, each such slot fails at its turn after the first resend of what
// it lost: fewer packets lost, sooner. The slots are retired within K
// passes of the rotation, the flow completes with every byte, and the
// RoCE flow on that link stalls until routing converges.
func TestCutLosesKPerSlot(t *testing.T) {
	// tiny with a SACK for every packet, as the lab's failover test asks
	// for one on every packet: a coalesced SACK echoes one packet's EV of
	// three, so some of a slot's K unanswered sends may have arrived.
	f, p, src := genSourceWith(t, "tiny", func(d *fabric.Description) { d.NIC.AckEvery = 1 })
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	const window = 8
	cut := []Fault{{Kind: LinkDown, A: "p0-t0-0", B: "p0-t1-1", At: 20 * time.Microsecond}}
	K := f.Failover.UnansweredSends
	// Slots of plane 0 whose T1 (after the QP's offset) is 1: a quarter of
	// the set.
	affected := f.EV.SetSize / (f.Planes * f.T1Count)
	var lost [2]int64
	var retired [2]uint64
	for _, report := range []bool{false, true} {
		s := newSim(t, f, src, Options{Payload: true, Window: window, Faults: cut, NoLossReport: !report,
			Flows: []Flow{{Src: a, Dst: b, Bytes: 2 << 20}}})
		r, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		perSlot := map[SlotKey]int{}
		for k, n := range s.LostBySlot(0) {
			if k.Host != p.Index(a) {
				continue // the other way: the receiver's echoes are not its data
			}
			base := k
			base.Echo = false
			perSlot[base] += n
		}
		t.Logf("MRC, loss reports %v: FCT %.1f µs, lost %d, by slot %v; paths failed %d (%d reported), last retired %.2f µs and %d packets after the cut, resends %+v",
			report, r.FCT.Max, r.Faults[0].Lost, s.LostBySlot(0), r.NIC.PathFailed, r.NIC.LossReported, r.Faults[0].RetiredUS, r.Faults[0].RetiredPackets, r.Retransmits)
		if r.Completed != 1 || r.Corrupt != 0 {
			t.Fatalf("flow: completed %d, corrupt %d", r.Completed, r.Corrupt)
		}
		if len(perSlot) != affected || int(r.NIC.PathFailed) != affected {
			t.Errorf("loss reports %v: %d slots lost sends, %d retired; want %d (plane 0, T1 1)", report, len(perSlot), r.NIC.PathFailed, affected)
		}
		for k, n := range perSlot {
			// Without reports a slot fails after exactly K sends with no
			// echo (the lab's figure); with them, at the turn after the
			// sender's first resend of what it lost, sooner.
			if k.Backup || !report && n != K || report && (n < 1 || n > K) {
				t.Errorf("loss reports %v: slot %+v: %d sends lost (data or echo), want K = %d (at most K with reports) on its base EV", report, k, n, K)
			}
		}
		// Within K passes of each slot's first loss, which comes at most one
		// pass after the cut: (K + 1) x set size packets of the QP.
		if limit := uint64((K + 1) * f.EV.SetSize); r.Faults[0].RetiredPackets == 0 || r.Faults[0].RetiredPackets > limit {
			t.Errorf("loss reports %v: last slot retired %d packets after the cut, want within (K + 1) x set size = %d", report, r.Faults[0].RetiredPackets, limit)
		}
		i := 0
		if report {
			i = 1
		}
		lost[i], retired[i] = r.Faults[0].Lost, r.Faults[0].RetiredPackets
	}
	if lost[1] >= lost[0] || retired[1] >= retired[0] {
		t.Errorf("with loss reports %d packets lost and the last slot retired %d packets after the cut, without %d and %d: want fewer and sooner",
			lost[1], retired[1], lost[0], retired[0])
	}

	// RoCE: the plane-0 QP of the pair goes by the T1 its hash picks; cut
	// that T1's link from the sender's T0, which takes the T1 out of its
	// ECMP group --local-repair later; the flow completes after that, and
	// before routing converges.
	conv, repair := 2*time.Millisecond, 500*time.Microsecond
	probe := newSim(t, f, src, Options{Transport: RoCE, Flows: []Flow{{Src: a, Dst: b, Bytes: 1}}})
	t1 := probe.ecmp(probe.hostOf(a), probe.hostOf(b), 0, 0)
	rcut := []Fault{{Kind: LinkDown, A: "p0-t0-0", B: p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: t1}), At: 20 * time.Microsecond}}
	rr := run(t, f, src, Options{Transport: RoCE, Payload: true, Faults: rcut, Convergence: conv, LocalRepair: repair,
		Flows: []Flow{{Src: a, Dst: b, Bytes: 2 << 20}}})
	t.Logf("RoCE: FCT %.1f µs, QP pairs moved %d, lost %d, resends %+v", rr.FCT.Max, rr.Rehashed, rr.Faults[0].Lost, rr.Retransmits)
	if rr.Completed != 1 || rr.Corrupt != 0 {
		t.Fatalf("RoCE flow: completed %d, corrupt %d", rr.Completed, rr.Corrupt)
	}
	if rr.Faults[0].Lost == 0 || rr.Rehashed != 1 || rr.FCT.Max < us(ps(20*time.Microsecond+repair)) || rr.FCT.Max >= us(ps(20*time.Microsecond+conv)) {
		t.Errorf("RoCE: lost %d on its path, moved %d QP paths, completed in %.1f µs: want losses, one move, and completion after the cut + %v, before the cut + %v",
			rr.Faults[0].Lost, rr.Rehashed, rr.FCT.Max, repair, conv)
	}
}

// TestDeterministic: the same inputs and seed give the same JSON but for
// the run's wall-clock figures; another seed draws another permutation and
// other loss, so other timings.
func TestDeterministic(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, _ := SpreadHosts(p, 16)
	out := func(seed uint64) []byte {
		r := run(t, f, src, Options{Flows: Permutation(hosts, 1<<20, 0, seed), Seed: seed,
			Faults: []Fault{{Kind: Loss, A: "p1-t0-2", B: "p1-t1-3", Percent: 2}, {Kind: LinkDown, A: "p0-t0-1", B: "p0-t1-0", At: 5 * time.Microsecond}}})
		r.Run = RunFigures{}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	x, y, z := out(7), out(7), out(8)
	if !bytes.Equal(x, y) {
		t.Error("two runs of seed 7 differ")
	}
	if bytes.Equal(x, z) {
		t.Error("seeds 7 and 8 gave the same result: the seed is not used")
	}
}

func BenchmarkPermutationSmall(b *testing.B) { benchPermutation(b, "small", 8<<20, 1) }

// BenchmarkPermutation1k: every one of mrc-1k's 1,024 hosts sends 2 MiB
// (issue 20's run is 16 MiB): the cost of a hop at scale, where the
// devices' state no longer fits a core's caches.
func BenchmarkPermutation1k(b *testing.B) { benchPermutation(b, "mrc-1k", 2<<20, 1) }

// BenchmarkPermutation1kWorkers2 is BenchmarkPermutation1k on two workers
// (parallel.go): run the two alternately to compare.
func BenchmarkPermutation1kWorkers2(b *testing.B) { benchPermutation(b, "mrc-1k", 2<<20, 2) }

// BenchmarkPermutation131k2k: 2,048 of mrc-131k's hosts, spread over all
// of its T0s, send 4 MiB each: the cost of a hop where every one of the
// 6,144 switches carries packets, as on the whole fabric.
func BenchmarkPermutation131k2k(b *testing.B) {
	benchPermutationHosts(b, "mrc-131k", 2048, 4<<20, 1)
}

// benchPermutation runs a permutation of every host of preset, size bytes
// each, and reports packet hops per second.
func benchPermutation(b *testing.B, preset string, size int64, workers int) {
	benchPermutationHosts(b, preset, 0, size, workers)
}

// benchPermutationHosts is benchPermutation on n hosts spread over the
// fabric (0: all).
func benchPermutationHosts(b *testing.B, preset string, n int, size int64, workers int) {
	f, p, src := genSource(b, preset)
	hosts, err := SpreadHosts(p, n)
	if err != nil {
		b.Fatal(err)
	}
	var hops int64
	for i := 0; i < b.N; i++ {
		r := run(b, f, src, Options{Flows: Permutation(hosts, size, 0, 1), Seed: 1, Workers: workers})
		hops += r.PacketHops
	}
	b.ReportMetric(float64(hops)/b.Elapsed().Seconds(), "hops/s")
}

// TestCollective: a ring all-reduce on 16 of small's hosts, 2 iterations:
// 30 steps each, each waiting for the previous; on an idle fabric no step
// is faster than its ideal (a host's share over its NIC's speed).
func TestCollective(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, _ := SpreadHosts(p, 16)
	r := run(t, f, src, Options{Collective: &Collective{Kind: RingAllReduce, Hosts: hosts, Bytes: 16 << 20, Iterations: 2}})
	c := r.Collective
	t.Logf("%s: %d of %d steps, step time %+v µs, slowdown %+v", c.Kind, c.Completed, c.Steps, c.StepTime, c.Slowdown)
	if c.Steps != 2*2*15 || c.Completed != c.Steps || len(c.PerStep) != c.Steps {
		t.Fatalf("%d of %d steps completed", c.Completed, c.Steps)
	}
	for i, st := range c.PerStep {
		if st.Slowdown < 1 {
			t.Errorf("step %d took %.2f µs, faster than its ideal %.2f µs", i, st.TimeUS, st.IdealUS)
		}
		if i > 0 && st.StartUS < c.PerStep[i-1].StartUS+c.PerStep[i-1].TimeUS-1e-6 {
			t.Errorf("step %d started before step %d completed", i, i-1)
		}
	}
	a2a := run(t, f, src, Options{Collective: &Collective{Kind: AllToAll, Hosts: hosts[:8], Bytes: 2 << 20, Iterations: 2}})
	if a2a.Collective.Completed != 2 || a2a.Completed != 2*8*7 {
		t.Errorf("all-to-all: %d steps, %d transfers", a2a.Collective.Completed, a2a.Completed)
	}
	t.Logf("all-to-all: slowdown %+v", a2a.Collective.Slowdown)
}

// TestIncast is issue 21's check: every other host of small writes 1 MiB
// into one (31 to 1), the fabric otherwise idle. With DCTCP the receiver's
// NIC runs at 90% of its speed or more and no RTO fires (a coalesced SACK
// never waits on a packet the window holds back: the sender asks for an
// answer when it can send nothing more); without congestion control the
// trims' resends flood the fabric and the receiver does far worse.
func TestIncast(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := IncastFlows(hosts, 1<<20, 0)
	if len(flows) != 31 {
		t.Fatalf("%d flows, want 31", len(flows))
	}
	mrc := run(t, f, src, Options{Flows: flows, Seed: 1})
	off := run(t, f, src, Options{Flows: flows, Seed: 1, NoCongestionControl: true})
	for _, r := range []*Result{mrc, off} {
		t.Logf("%s (no CC %v): received %.3f of line rate, FCT max %.1f µs, trims %+v, resends %+v",
			r.Transport, r == off, r.ReceiveGoodput.Max, r.FCT.Max, r.Trims, r.Retransmits)
		if r.Completed != len(flows) {
			t.Fatalf("%d of %d flows complete", r.Completed, len(flows))
		}
	}
	if mrc.ReceiveGoodput.Max < 0.90 {
		t.Errorf("MRC with DCTCP: the receiver at %.3f of its line rate, want at least 0.90", mrc.ReceiveGoodput.Max)
	}
	if mrc.Retransmits.Timeout != 0 {
		t.Errorf("MRC with DCTCP: %d RTO resends, want none", mrc.Retransmits.Timeout)
	}
	if off.ReceiveGoodput.Max > mrc.ReceiveGoodput.Max-0.2 {
		t.Errorf("without congestion control the receiver ran at %.3f, with DCTCP %.3f: want at least 20 points worse", off.ReceiveGoodput.Max, mrc.ReceiveGoodput.Max)
	}
	// The delay-based option holds the same bounds.
	delay := run(t, f, src, Options{Flows: flows, Seed: 1, DelayCC: true})
	t.Logf("%s with Delay: received %.3f of line rate, trims %+v, resends %+v", delay.Transport, delay.ReceiveGoodput.Max, delay.Trims, delay.Retransmits)
	if delay.Completed != len(flows) || delay.ReceiveGoodput.Max < 0.90 || delay.Retransmits.Timeout != 0 {
		t.Errorf("MRC with Delay: %d of %d flows complete, the receiver at %.3f of its line rate, %d RTO resends; want all, 0.90 and none",
			delay.Completed, len(flows), delay.ReceiveGoodput.Max, delay.Retransmits.Timeout)
	}
}

// TestDelayCCAllToAll: on an all-to-all of small (8 MiB, 3 iterations)
// with the ECN threshold at 8 packets, where marks are frequent, the
// delay-based option's p99 step slowdown is below DCTCP's: every flow
// through a queue sees its delay, where marks reach some flows and miss
// others (docs/protocol.md 10). It cuts on delay, not marks. (At the
// default threshold, 14, neither sees a mark there and both run at the
// fabric's floor.)
func TestDelayCCAllToAll(t *testing.T) {
	f, p, src := genSourceWith(t, "small", func(d *fabric.Description) { d.Trim.ECNPackets = 8 })
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	coll := func() *Collective {
		return &Collective{Kind: AllToAll, Hosts: hosts, Bytes: 8 << 20, Iterations: 3}
	}
	dctcp := run(t, f, src, Options{Collective: coll(), Seed: 1})
	delay := run(t, f, src, Options{Collective: coll(), Seed: 1, DelayCC: true})
	t.Logf("p99 step slowdown: DCTCP %.3f, Delay %.3f", dctcp.Collective.Slowdown.P99, delay.Collective.Slowdown.P99)
	if delay.Collective.Completed != delay.Collective.Steps || delay.Collective.Slowdown.P99 >= dctcp.Collective.Slowdown.P99 {
		t.Errorf("Delay: %d of %d steps, p99 slowdown %.3f; want all, below DCTCP's %.3f",
			delay.Collective.Completed, delay.Collective.Steps, delay.Collective.Slowdown.P99, dctcp.Collective.Slowdown.P99)
	}
	if _, err := New(f, src, Options{Collective: coll(), DelayCC: true, Transport: RoCE}); err == nil {
		t.Error("RoCE with the delay-based option: no error, want one (RoCE runs DCQCN)")
	}
}

// QPsPerPair splits each MRC flow over that many QPs of the pair, every
// byte arriving; RoCE refuses a count (it takes RoCEQPs per plane), and so
// does a negative one.
func TestQPsPerPair(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 8)
	if err != nil {
		t.Fatal(err)
	}
	flows := []Flow{{Src: hosts[0], Dst: hosts[5], Bytes: 1<<20 + 3}}
	r := run(t, f, src, Options{Flows: flows, QPsPerPair: 3, Payload: true})
	if r.QPsPerPair != 3 || r.Completed != 1 || r.Corrupt != 0 {
		t.Errorf("3 QPs per pair: result says %d QPs, %d flows complete, %d corrupt", r.QPsPerPair, r.Completed, r.Corrupt)
	}
	s := newSim(t, f, src, Options{Flows: flows, QPsPerPair: 3})
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.hostOf(hosts[0]).qps); n != 3 {
		t.Errorf("the sender opened %d QPs, want 3", n)
	}
	if r := run(t, f, src, Options{Flows: flows}); r.QPsPerPair != 1 {
		t.Errorf("default: %d QPs per pair, want 1", r.QPsPerPair)
	}
	// small's 800 Gb/s NIC: NCCL's 8 channels to a network peer, 2 on each
	// of its 4 planes.
	if r := run(t, f, src, Options{Flows: flows, Transport: RoCE}); r.QPsPerPair != 8 {
		t.Errorf("RoCE: %d QPs per pair, want 2 per plane (8)", r.QPsPerPair)
	}
	for _, o := range []Options{{Flows: flows, QPsPerPair: -1}, {Flows: flows, Transport: RoCE, QPsPerPair: 2}} {
		if _, err := New(f, src, o); err == nil || !strings.Contains(err.Error(), "QPs per host pair") {
			t.Errorf("%+v: error %v, want one naming the QPs per host pair", o, err)
		}
	}
}

// TestRunContextStops: a run whose context is done stops at the end of
// the window it is in (parallel.go: a window is one T0-T1 delay, 150 ns
// on small) with the context's error (mrcgen sim's Ctrl-C and SIGTERM),
// and one whose context is done from the start runs no event.
func TestRunContextStops(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := Permutation(hosts, 8<<20, 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newSim(t, f, src, Options{Flows: flows, Seed: 1}).RunContext(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), " 0 events in") {
		t.Fatalf("a cancelled context: %v, want context.Canceled after 0 events", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	s := newSim(t, f, src, Options{Flows: flows, Seed: 1})
	var seen, cancelledAt, last int64
	s.testEvent = func(e event) {
		last = e.at
		if seen++; seen == 100_000 {
			cancel()
			cancelledAt = e.at
		}
	}
	_, err = s.RunContext(ctx)
	end := (cancelledAt/150_000 + 1) * 150_000
	next, _ := s.q.nextAt()
	if !errors.Is(err, context.Canceled) || last >= end || next < end || seen > 110_000 {
		t.Fatalf("cancelled at event 100,000 (%d ps): %v after %d events, the last at %d ps and the next at %d; want context.Canceled, and every event before %d ps run and none after",
			cancelledAt, err, seen, last, next, end)
	}
}
