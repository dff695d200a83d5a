package sim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// TestFlapSpells: a flap whose down or up spell is shorter than
// MinFlapSpell is refused, by ParseFault and by New, with the spell and
// the minimum named: a RoCE flap every 10 ns scheduled a routing
// convergence per edge until memory ran out, and no link fails and comes
// back that fast.
func TestFlapSpells(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	flows := []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 4096}}
	for _, tc := range []struct {
		spec string
		want string // "" for none
	}{
		{"p0-t0-0:p0-t1-1@10us,period=10ns,duty=50%", "a down spell of 5ns (50% of the 10ns period): want each spell 1µs or more"},
		{"p0-t0-0:p0-t1-1@10us,period=1ms,duty=0.01%", "a down spell of 100ns"},
		{"p0-t0-0:p0-t1-1@10us,period=1ms,duty=99.99%", "an up spell of 101ns (0.01% of the 1ms period)"},
		{"p0-t0-0:p0-t1-1@10us,period=2us,duty=50%", ""},
		{"p0-t0-0:p0-t1-1@10us,period=10us,duty=30%", ""},
	} {
		fl, err := ParseFault(Flap, tc.spec)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.spec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.spec, err, tc.want)
		}
		// The same fault given to New directly.
		fl = Fault{Kind: Flap, A: "p0-t0-0", B: "p0-t1-1", At: 10 * time.Microsecond, Period: 10 * time.Nanosecond, Duty: 0.5}
		if _, err := New(f, src, Options{Transport: RoCE, Flows: flows, Faults: []Fault{fl}}); err == nil || !strings.Contains(err.Error(), "spell") {
			t.Errorf("New took %v: %v", fl, err)
		}
	}
}

// TestFlapConvergences: a RoCE flap's routing convergences come
// --convergence after each of its edges, all of them, but wait in the
// event queue one at a time: with a 5 ms convergence and an edge every
// µs, 5,000 of them were pending at once. tiny's flow of 1 GiB outlasts
// the 8 ms limit; the flap's edges run from 100 µs, one a µs, so those
// up to 3 ms converge by 8 ms: 2901. Its local repairs (default 5 ms)
// follow its down edges, one every 2 µs, the same way: 1451 by 8 ms, one
// pending at a time.
func TestFlapConvergences(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	s := newSim(t, f, src, Options{Transport: RoCE, Convergence: 5 * time.Millisecond, Limit: 8 * time.Millisecond,
		Flows:  []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 1 << 30}},
		Faults: []Fault{{Kind: Flap, A: "p0-t0-0", B: "p0-t1-1", At: 100 * time.Microsecond, Period: 2 * time.Microsecond, Duty: 0.5}}})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	pending, repairs := 0, 0 // after now: the ring still holds the bucket being run
	for _, b := range s.q.ring {
		for _, e := range b {
			switch {
			case e.at <= s.now:
			case e.kind == evConverge:
				pending++
			case e.kind == evRepair:
				repairs++
			}
		}
	}
	for _, h := range []farHeap{s.q.far, s.q.late} {
		for _, e := range h {
			switch e.kind {
			case evConverge:
				pending++
			case evRepair:
				repairs++
			}
		}
	}
	if r.LocalRepairs != 1451 || repairs > 1 {
		t.Errorf("%d local repairs, %d pending at the end: want 1451, and at most one pending", r.LocalRepairs, repairs)
	}
	t.Logf("%d convergences, %d QP pairs moved, %d pending at the end, %v simulated", r.Convergences, r.Rehashed, pending, r.SimulatedUS)
	if r.Convergences != 2901 || pending > 1 {
		t.Errorf("%d convergences, %d pending at the end: want 2901, and at most one pending", r.Convergences, pending)
	}
}

// TestRateFraction: a --rate fault keeps its share of the link's speed
// exactly (to a millionth), where 0.5% became a whole 1%. tiny's nic-0
// with both its links at 0.5% sends one packet to nic-3: its port takes
// 4254 x 80 ps x 200 = 68064000 ps, then three switches at 100 Gb/s
// (3 x 340320 = 1020960) and the links' 320 ns: 69404960 ps.
func TestRateFraction(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	var faults []Fault
	for _, spec := range []string{"p0-t0-0:nic-0:0.5%", "p1-t0-0:nic-0:0.5%"} {
		fl, err := ParseFault(Rate, spec)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, fl)
	}
	s := newSim(t, f, src, Options{Faults: faults, Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 4096}}})
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if got := s.flows[0].doneAt; got != 69_404_960 {
		t.Errorf("one packet over a link at 0.5%%: %d ps, want 69404960", got)
	}
}

// TestBadOptions: New refuses what the command's flags refuse: a time
// limit or convergence delay that is negative or beyond MaxTime, a window
// the NIC cannot receive (the first QP opened refused it, mid-run), a loss
// that is not a percentage, a rate it cannot keep, each with its reason.
func TestBadOptions(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	flows := []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 4096}}
	link := Fault{A: "p0-t0-0", B: "p0-t1-1"}
	with := func(k FaultKind, change func(*Fault)) []Fault {
		fl := link
		fl.Kind = k
		change(&fl)
		return []Fault{fl}
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		opt  Options
		want string
	}{
		{"negative limit", Options{Limit: -time.Second}, "limit -1s: want a simulated time above 0 and at most 24h0m0s"},
		{"limit beyond a day", Options{Limit: 25 * time.Hour}, "limit 25h0m0s"},
		{"negative convergence", Options{Convergence: -time.Second}, "convergence -1s"},
		{"negative local repair", Options{LocalRepair: -time.Millisecond}, "local repair -1ms: want a simulated time above 0"},
		{"negative RoCE QPs", Options{Transport: RoCE, RoCEQPs: -1}, "-1 RoCE QPs per plane and host pair: want 1 to 128, what a NIC holds over 2 planes"},
		{"RoCE QPs beyond a NIC", Options{Transport: RoCE, RoCEQPs: 129}, "129 RoCE QPs per plane and host pair: want 1 to 128"},
		{"RoCE QPs on MRC", Options{RoCEQPs: 2}, "2 RoCE QPs per plane and host pair: a count RoCE's QPs alone take"},
		{"a window beyond the NIC's", Options{Window: 257}, "window 257 packets: want 1 to the NIC's receive window, nic.window_packets 256"},
		{"NaN loss", Options{Faults: with(Loss, func(f *Fault) { f.Percent = nan })}, "NaN% is not a percentage: want 0% to 100%"},
		{"loss above 100%", Options{Faults: with(Loss, func(f *Fault) { f.Percent = 101 })}, "101% is not a percentage"},
		{"rate too fine", Options{Faults: with(Rate, func(f *Fault) { f.Percent = 0.00001 })}, "a rate is kept to 0.0001% of the link's speed"},
		{"NaN duty", Options{Faults: with(Flap, func(f *Fault) { f.Period, f.Duty = time.Millisecond, nan })}, "duty NaN%"},
		{"until before at", Options{Faults: with(LinkDown, func(f *Fault) { f.At, f.Until = time.Millisecond, time.Microsecond })}, "until 1µs: want a time after 1ms"},
		{"at beyond a day", Options{Faults: with(LinkDown, func(f *Fault) { f.At = 30 * time.Hour })}, "at 30h0m0s: want a simulated time from 0 to 24h0m0s"},
	} {
		tc.opt.Flows = flows
		_, err := New(f, src, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestOverlappingFaults: faults on one link combine, whatever their order:
// it is down while any of them takes it (or its switch) down, and fails
// (a new epoch: what was on it is lost) only when the first does; it
// loses a packet with the chance that any of its losses does,
// independently; it runs at the slowest of its rates. A switch is down
// while any of its faults says so. Each fault used to set the link as if
// it were alone: a flap coming up reopened a link a cut held down, and a
// second loss replaced the first.
func TestOverlappingFaults(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	link := func(k FaultKind, a, b string, pct float64) Fault {
		return Fault{Kind: k, A: a, B: b, Percent: pct, At: time.Microsecond, Period: 10 * time.Microsecond, Duty: 0.5}
	}
	const (
		loss50 = iota
		loss20
		cut
		flap
		swDown
		swDown2
		rate50
		rate25
	)
	faults := []Fault{
		loss50:  link(Loss, "p0-t0-0", "p0-t1-1", 50),
		loss20:  link(Loss, "p0-t1-1", "p0-t0-0", 20), // the same cable, named from its other end
		cut:     link(LinkDown, "p0-t0-0", "p0-t1-1", 0),
		flap:    link(Flap, "p0-t0-0", "p0-t1-1", 0),
		swDown:  {Kind: SwitchDown, A: "p0-t1-1", At: time.Microsecond},
		swDown2: {Kind: SwitchDown, A: "p0-t1-1", At: time.Microsecond},
		rate50:  link(Rate, "p0-t0-0", "p0-t1-1", 50),
		rate25:  link(Rate, "p0-t0-0", "p0-t1-1", 25),
	}
	s := newSim(t, f, src, Options{Faults: faults, Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 4096}}})
	ls := s.faults[cut].links[0]
	t1 := s.faults[swDown].sw
	type state struct {
		down      bool
		epoch     uint32
		loss      float64
		rate      int64
		switchOff bool
	}
	now := func() state {
		d := s.device(t1)
		return state{ls.down, ls.epoch, ls.loss, ls.rate, d.down}
	}
	for i, step := range []struct {
		fault int
		on    bool
		want  state
	}{
		{loss50, true, state{loss: 0.5, rate: fullRate}},
		{loss20, true, state{loss: 0.6, rate: fullRate}}, // 1 - 0.5 x 0.8
		{loss50, false, state{loss: 0.2, rate: fullRate}},
		{loss20, false, state{rate: fullRate}},
		{cut, true, state{down: true, epoch: 1, rate: fullRate}},
		{flap, true, state{down: true, epoch: 1, rate: fullRate}},
		{flap, false, state{down: true, epoch: 1, rate: fullRate}}, // the cut holds it down
		{cut, false, state{epoch: 1, rate: fullRate}},
		{swDown, true, state{down: true, epoch: 2, rate: fullRate, switchOff: true}},
		{swDown2, true, state{down: true, epoch: 2, rate: fullRate, switchOff: true}},
		{swDown, false, state{down: true, epoch: 2, rate: fullRate, switchOff: true}}, // the second holds it
		{flap, true, state{down: true, epoch: 2, rate: fullRate, switchOff: true}},
		{swDown2, false, state{down: true, epoch: 2, rate: fullRate}}, // the flap holds the link
		{flap, false, state{epoch: 2, rate: fullRate}},
		{rate50, true, state{epoch: 2, rate: fullRate / 2}},
		{rate25, true, state{epoch: 2, rate: fullRate / 4}},
		{rate25, false, state{epoch: 2, rate: fullRate / 2}},
		{rate50, false, state{epoch: 2, rate: fullRate}},
	} {
		gen := uint32(0)
		if step.on {
			gen = 1
		}
		s.fault(step.fault, gen)
		if got := now(); math.Abs(got.loss-step.want.loss) > 1e-12 || got.down != step.want.down || got.epoch != step.want.epoch ||
			got.rate != step.want.rate || got.switchOff != step.want.switchOff {
			t.Errorf("step %d (fault %d on %v): %+v, want %+v", i, step.fault, step.on, got, step.want)
		}
	}
}

// TestFaultsCharged: what a link loses is charged to the fault that
// caused it, not to the first fault named on the link: a loss and, later,
// a cut on one link each count their own packets.
func TestFaultsCharged(t *testing.T) {
	f, p, src := genSource(t, "tiny")
	hosts, _ := SpreadHosts(p, 0)
	var faults []Fault
	for _, spec := range []struct {
		k    FaultKind
		spec string
	}{{Loss, "p0-t0-0:p0-t1-1:30%@0us,until=20us"}, {LinkDown, "p0-t0-0:p0-t1-1@30us,until=40us"}} {
		fl, err := ParseFault(spec.k, spec.spec)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, fl)
	}
	r := run(t, f, src, Options{Faults: faults, Seed: 1, Flows: AllToAllFlows(hosts, 1<<20, 0)})
	t.Logf("loss: %d lost, cut: %d lost; drops %+v", r.Faults[0].Lost, r.Faults[1].Lost, r.Drops)
	if r.Faults[0].Lost != r.Drops.RandomLoss || r.Faults[1].Lost != r.Drops.LinkDown || r.Drops.RandomLoss == 0 || r.Drops.LinkDown == 0 {
		t.Errorf("loss charged %d, cut %d; the fabric lost %d at random, %d to the cut: want each charged its own", r.Faults[0].Lost, r.Faults[1].Lost, r.Drops.RandomLoss, r.Drops.LinkDown)
	}
}
