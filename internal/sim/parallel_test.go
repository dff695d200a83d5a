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
// explicit queue, with real payload bytes, with flows starting at several
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
	ring := &Collective{Kind: RingAllReduce, Hosts: hosts[:8], Bytes: 2 << 20, Iterations: 2}
	a2a := &Collective{Kind: AllToAll, Hosts: hosts[:16], Bytes: 4 << 20, Iterations: 2}
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"mrc permutation", Options{Flows: perm, Seed: 5}},
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
				if r.Completed != r.Flows || r.Events == 0 {
					t.Fatalf("%d workers: %d of %d flows completed, %d events", n, r.Completed, r.Flows, r.Events)
				}
				got := resultJSON(t, r)
				if n == 1 {
					want = got
					t.Logf("%d flows, %d events, %d packet hops, %.3f µs simulated", r.Flows, r.Events, r.PacketHops, r.SimulatedUS)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%d workers: the result differs from one worker's:\n%s", n, firstDiff(want, got))
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
	cut, err := ParseFault(LinkDown, "p0-t0-0:p0-t1-0@1us")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Flows: perm, Workers: 2, Faults: []Fault{cut}}, "2 workers: a run with faults runs on one worker"},
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
