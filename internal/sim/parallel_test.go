package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// resultJSON is r as `mrcgen sim -o json` writes it, without the wall
// clock's figures (the only part of a result that is not a function of
// the inputs and seed).
func resultJSON(t *testing.T, r *Result) []byte {
	t.Helper()
	r.Run = RunFigures{}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkersSameResult: a run's result is byte for byte the same on 1,
// 2, 3 and 8 workers (parallel.go), on both transports, with PFC and the
// explicit queue, with faults of every kind (and RoCE's routing after
// them) and a run cut short with data in flight, with real payload bytes, with flows starting at several
// times, and on collectives, whose step barriers cross workers. small has
// 8 T0 rows and 4 T1s: 8 workers own a row each and half of them a T1;
// 3 own rows 0-2, 3-5 and 6-7.
func TestWorkersSameResult(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	perm := Permutation(hosts, 1<<20, 0, 5)
	// An incast whose senders start 0, 1, ... 6 µs apart, into host 0.
	var staggered []Flow
	for i, h := range hosts[1:8] {
		staggered = append(staggered, Flow{Src: h, Dst: hosts[0], Bytes: 256 << 10, Start: time.Duration(i) * time.Microsecond})
	}
	// Faults of every kind on links between workers (row 5 is on worker 1
	// of 2 and of 3, T1 0 on worker 0) and within one, a T1 powered off
	// and back, a flap whose edges and RoCE repairs come during windows.
	faults := func(t *testing.T, specs ...string) []Fault {
		var fs []Fault
		for _, spec := range specs {
			kind, rest, _ := strings.Cut(spec, " ")
			k := map[string]FaultKind{"cut": LinkDown, "flap": Flap, "switch-down": SwitchDown, "loss": Loss, "rate": Rate}[kind]
			f, err := ParseFault(k, rest)
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, f)
		}
		return fs
	}
	mixed := faults(t, "cut p0-t0-5:p0-t1-0@3us,until=60us", "switch-down p1-t1-2@10us,until=40us",
		"loss p2-t0-3:p2-t1-3:2%", "flap p3-t0-6:p3-t1-1@5us,period=20us,duty=30%,until=200us",
		"rate p1-t0-7:p1-t1-0:25%@1us")
	cuts := faults(t, "cut p0-t0-5:p0-t1-0@3us", "flap p2-t0-1:p2-t1-3@4us,period=10us,duty=40%,until=100us")
	ring := &Collective{Kind: RingAllReduce, Hosts: hosts[:8], Bytes: 2 << 20, Iterations: 2}
	a2a := &Collective{Kind: AllToAll, Hosts: hosts[:16], Bytes: 4 << 20, Iterations: 2}
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"mrc permutation", Options{Flows: perm, Seed: 5}},
		{"mrc permutation, faults of every kind", Options{Flows: perm, Seed: 6, Faults: mixed}},
		{"mrc permutation, faults, cut short", Options{Flows: perm, Seed: 6, Faults: mixed, Limit: 30 * time.Microsecond}},
		{"roce permutation, cut and flap, repairs and convergence", Options{Transport: RoCE, Flows: perm, Seed: 7, Faults: cuts,
			LocalRepair: 2 * time.Microsecond, Convergence: 15 * time.Microsecond}},
		{"roce+pfc permutation, cut and flap", Options{Transport: RoCE, PFC: &PFCConfig{}, Flows: perm, Seed: 8, Faults: cuts,
			LocalRepair: 2 * time.Microsecond, Convergence: 15 * time.Microsecond}},
		{"roce permutation", Options{Transport: RoCE, Flows: perm, Seed: 5}},
		{"roce+pfc permutation", Options{Transport: RoCE, PFC: &PFCConfig{}, Flows: perm, Seed: 5}},
		{"mrc staggered incast, payload, exact queues", Options{Flows: staggered, Payload: true, ExactQueues: true, Seed: 2}},
		{"mrc ring all-reduce", Options{Collective: ring, Seed: 3}},
		{"roce all-to-all, exact queues", Options{Transport: RoCE, Collective: a2a, ExactQueues: true, Seed: 4}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			var want []byte
			for _, n := range []int{1, 2, 3, 8} {
				opt := tc.opt
				opt.Workers = n
				r := run(t, f, src, opt)
				if (r.Completed != r.Flows) != (opt.Limit > 0) || r.Events == 0 {
					t.Fatalf("%d workers: %d of %d flows completed, %d events", n, r.Completed, r.Flows, r.Events)
				}
				if opt.Limit > 0 && r.DataPackets.InFlight == 0 {
					t.Fatalf("%d workers: a run cut short with no data in flight", n)
				}
				got := resultJSON(t, r)
				if n == 1 {
					want = got
					t.Logf("%d flows, %d events, %d packet hops, %.3f µs simulated, %d in flight", r.Flows, r.Events, r.PacketHops, r.SimulatedUS, r.DataPackets.InFlight)
					for _, fr := range r.Faults {
						t.Logf("  %s: %d lost, retired after %.3f µs", fr.Fault, fr.Lost, fr.RetiredUS)
					}
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%d workers: the result differs from one worker's:\n%s", n, firstDiff(want, got))
				}
			}
			// The run loop's prefetches, which small's 32 hosts do not
			// get by themselves (prefetchHosts), change nothing either.
			for _, n := range []int{1, 3} {
				opt := tc.opt
				opt.Workers = n
				s := newSim(t, f, src, opt)
				s.prefetchFrom = 0
				r, err := s.Run()
				if err != nil {
					t.Fatal(err)
				}
				if !s.prefetching {
					t.Fatalf("%d workers: not prefetching", n)
				}
				if got := resultJSON(t, r); !bytes.Equal(got, want) {
					t.Errorf("%d workers, prefetching: the result differs from one worker's:\n%s", n, firstDiff(want, got))
				}
			}
		})
	}
}

// firstDiff shows the first line where a and b differ, with its neighbours.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < min(len(la), len(lb)); i++ {
		if la[i] != lb[i] {
			lo := max(0, i-3)
			return "one worker:\n" + strings.Join(la[lo:min(len(la), i+2)], "\n") + "\nthese:\n" + strings.Join(lb[lo:min(len(lb), i+2)], "\n")
		}
	}
	return "lengths differ"
}

// TestWorkersRefused: more workers than the run can use are refused with
// the reason, and the count is capped at the fabric's T0 rows.
func TestWorkersRefused(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	perm := Permutation(hosts, 64<<10, 0, 1)
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Flows: perm, Workers: -1}, "-1 workers: want 1 to 256"},
		{Options{Flows: perm, Workers: 257}, "257 workers: want 1 to 256"},
	} {
		if _, err := New(f, src, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("workers %d: %v, want an error with %q", tc.opt.Workers, err, tc.want)
		}
	}
	s := newSim(t, f, src, Options{Flows: perm, Workers: 64})
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if s.workers != 8 || len(s.shards) != 8 {
		t.Errorf("64 workers on small's 8 rows: %d workers, %d parts; want 8", s.workers, len(s.shards))
	}
	// Every link between two workers is a T0-T1 link.
	for id, d := range s.devs {
		if d == nil {
			continue
		}
		for _, pt := range d.ports {
			if pt.peer < 0 || s.owner[id] == s.owner[pt.peer] || s.devs[pt.peer] == nil {
				continue
			}
			if peer := s.devs[pt.peer]; d.kind == kindNIC || peer.kind == kindNIC || d.kind == peer.kind {
				t.Errorf("device %d (kind %d) and %d are on workers %d and %d: not a T0-T1 link", id, d.kind, pt.peer, s.owner[id], s.owner[pt.peer])
			}
		}
	}
}
