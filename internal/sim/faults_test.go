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
// up to 3 ms converge by 8 ms: 2901.
func TestFlapConvergences(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	s := newSim(t, f, src, Options{Transport: RoCE, Convergence: 5 * time.Millisecond, Limit: 8 * time.Millisecond,
		Flows:  []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 1 << 30}},
		Faults: []Fault{{Kind: Flap, A: "p0-t0-0", B: "p0-t1-1", At: 100 * time.Microsecond, Period: 2 * time.Microsecond, Duty: 0.5}}})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, b := range s.q.ring {
		for _, e := range b {
			if e.kind == evConverge {
				pending++
			}
		}
	}
	for _, h := range []farHeap{s.q.far, s.q.late} {
		for _, e := range h {
			if e.kind == evConverge {
				pending++
			}
		}
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
// limit or convergence delay that is negative or beyond MaxTime, a loss
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
