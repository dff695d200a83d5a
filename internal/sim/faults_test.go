package sim

import (
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
