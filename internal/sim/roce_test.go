package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// qpT1s maps every RoCE QP end of s (by host, peer, plane and number) to
// the T1 its frames go through.
func qpT1s(s *Sim) map[string]int {
	m := map[string]int{}
	for _, hs := range s.hosts {
		if hs == nil {
			continue
		}
		for _, q := range hs.byQPN {
			if q != nil && q.plane >= 0 {
				m[fmt.Sprintf("%d>%d p%d k%d", hs.id, q.peer.id, q.plane, q.k)] = q.t1
			}
		}
	}
	return m
}

// roceEnd is host a's end of its k-th plane-p RoCE QP with b.
func roceEnd(t *testing.T, s *Sim, a, b plan.Host, plane, k int) *qpEnd {
	t.Helper()
	ha, hb := s.hostOf(a), s.hostOf(b)
	q := ha.qps[qpKey{peer: hb.id, plane: int16(plane), k: int16(k)}]
	if q == nil {
		t.Fatalf("no plane-%d QP %d from %v to %v", plane, k, a, b)
	}
	return q
}

// TestRoCECutRepairs: a cut T0-T1 link on tiny, under two flows whose
// plane-0 QPs both go through that T1: nic-0 (under T0 0, the cut link's
// T0) to nic-3, and nic-2 (under T0 1) to nic-1. T0 0 sees its link go
// down and takes the T1 out of its group --local-repair (1 ms) after the
// cut at 20 µs: the QP ends under it (nic-0's, nic-1's) move at 1,020 µs.
// nic-2's frames reach the T1 and find no way down to T0 0; T0 1 cannot
// see that, and moves its ends (nic-2's, nic-3's) only when BGP converges
// (3 ms): at 3,020 µs. nic-0's flow completes between the two, nic-2's
// after the second. Both pairs had data on the path when it was cut: 2
// stalled.
func TestRoCECutRepairs(t *testing.T) {
	f, p, src := genSource(t, "tiny")
	n0, n1, n2, n3 := p.HostByIndex(0), p.HostByIndex(1), p.HostByIndex(2), p.HostByIndex(3)
	flows := []Flow{{Src: n0, Dst: n3, Bytes: 4 << 20}, {Src: n2, Dst: n1, Bytes: 4 << 20}}
	// A seed under which both pairs' plane-0 QPs share a T1 (each pair's
	// hash is its own draw: a half of the seeds).
	seed, x := uint64(0), -1
	for sd := uint64(1); sd <= 20 && x < 0; sd++ {
		probe := newSim(t, f, src, Options{Transport: RoCE, Seed: sd, Flows: flows})
		a, b := probe.ecmp(probe.hostOf(n0), probe.hostOf(n3), 0, 0), probe.ecmp(probe.hostOf(n2), probe.hostOf(n1), 0, 0)
		if a == b {
			seed, x = sd, a
		}
	}
	if x < 0 {
		t.Fatal("no seed of 20 puts both pairs on one plane-0 T1")
	}
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: x})
	cut := Fault{Kind: LinkDown, A: "p0-t0-0", B: t1, At: 20 * time.Microsecond}
	s := newSim(t, f, src, Options{Transport: RoCE, Seed: seed, Flows: flows, Faults: []Fault{cut},
		LocalRepair: time.Millisecond, Convergence: 3 * time.Millisecond})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d, T1 %s: FCTs %.1f and %.1f µs; %d local repairs, %d convergences, %d paths moved, stalled %v",
		seed, t1, r.FlowResults[0].FCTUS, r.FlowResults[1].FCTUS, r.LocalRepairs, r.Convergences, r.Rehashed, *r.Faults[0].StalledQPs)
	for _, c := range []struct {
		what string
		q    *qpEnd
		at   int64 // ps
	}{
		{"nic-0's frames (its T0 repairs)", roceEnd(t, s, n0, n3, 0, 0), 1_020_000_000},
		{"nic-3's frames (BGP)", roceEnd(t, s, n3, n0, 0, 0), 3_020_000_000},
		{"nic-2's frames (BGP)", roceEnd(t, s, n2, n1, 0, 0), 3_020_000_000},
		{"nic-1's frames (its T0 repairs)", roceEnd(t, s, n1, n2, 0, 0), 1_020_000_000},
	} {
		if c.q.movedAt != c.at || c.q.t1 == x {
			t.Errorf("%s: moved at %d ps to T1 %d, want at %d ps off T1 %d", c.what, c.q.movedAt, c.q.t1, c.at, x)
		}
	}
	for i, fr := range r.FlowResults {
		lo, hi := []float64{1000, 3000}[i], []float64{3000, 1e9}[i] // µs after their start at 0, 20 µs before the moves
		if fr.FCTUS <= lo || fr.FCTUS >= hi {
			t.Errorf("flow %d (%s to %s): completed in %.1f µs, want between %.0f and %.0f", i, fr.Src, fr.Dst, fr.FCTUS, lo, hi)
		}
	}
	if r.LocalRepairs != 1 || r.Convergences != 1 || *r.Faults[0].StalledQPs != 2 {
		t.Errorf("%d local repairs, %d convergences, %d QP pairs stalled: want 1, 1 and 2", r.LocalRepairs, r.Convergences, *r.Faults[0].StalledQPs)
	}
}

// TestRoCET1DownRepairsLocally: a T1 powering off is seen by every T0
// next to it, and each takes it out of its group --local-repair (1 ms)
// later: every QP end on it moves then, none waits for BGP (9 s here: the
// flows complete long before, with no convergence run), and no other QP
// end moves.
func TestRoCET1DownRepairsLocally(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 8)
	if err != nil {
		t.Fatal(err)
	}
	coll := func() *Collective { return &Collective{Kind: AllToAll, Hosts: hosts, Bytes: 8 << 20, Iterations: 1} }
	before := qpT1s(newSimOpened(t, f, src, Options{Transport: RoCE, Seed: 1, Collective: coll()}))
	down := Fault{Kind: SwitchDown, A: "p0-t1-0", At: 20 * time.Microsecond}
	s := newSim(t, f, src, Options{Transport: RoCE, Seed: 1, Collective: coll(), Faults: []Fault{down},
		LocalRepair: time.Millisecond, Convergence: 9 * time.Second})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	on := 0
	for _, hs := range s.hosts {
		if hs == nil {
			continue
		}
		for _, q := range hs.byQPN {
			if q == nil || q.plane < 0 {
				continue
			}
			key := fmt.Sprintf("%d>%d p%d k%d", hs.id, q.peer.id, q.plane, q.k)
			wasOn := q.plane == 0 && before[key] == 0 && hs.at.Row != q.peer.at.Row
			switch {
			case wasOn && (q.movedAt != 1_020_000_000 || q.t1 == 0):
				t.Errorf("%s: on the T1 that failed; moved at %d ps to T1 %d, want at 1,020,000,000 ps", key, q.movedAt, q.t1)
			case !wasOn && (q.movedAt != 0 || q.t1 != before[key]):
				t.Errorf("%s: moved at %d ps from T1 %d to %d, want it kept", key, q.movedAt, before[key], q.t1)
			}
			if wasOn {
				on++
			}
		}
	}
	t.Logf("%d QP ends on p0-t1-0, %d paths moved, %d pairs stalled; slowdown p99 %.2f, %.0f µs simulated",
		on, r.Rehashed, *r.Faults[0].StalledQPs, r.Collective.Slowdown.P99, r.SimulatedUS)
	if on == 0 || r.Rehashed != on || r.LocalRepairs != 1 || r.Convergences != 0 || r.Completed != r.Flows || r.SimulatedUS > 1e6 {
		t.Errorf("%d ends on the T1, %d moved, %d local repairs, %d convergences, %d of %d flows in %.0f µs: want every end on it moved by one local repair, no convergence, all flows within a second",
			on, r.Rehashed, r.LocalRepairs, r.Convergences, r.Completed, r.Flows, r.SimulatedUS)
	}
}

// newSimOpened is a run of opt stopped right after its flows started:
// every QP open, each on the T1 its hash picks with nothing failed.
func newSimOpened(t *testing.T, f *fabric.Fabric, src Source, opt Options) *Sim {
	t.Helper()
	opt.Limit = time.Nanosecond
	s := newSim(t, f, src, opt)
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRoCEResilientHash: on small's all-to-all (2 QPs a plane, 1,984 QP
// ends a plane), a cut T0-T1 link moves exactly the QP ends on it: at the
// local repair those that T0 sends through that T1, at the convergence
// those the other T0s send through it towards that T0; every other end
// keeps its T1, where a hash modulo the group's size moved most of them.
// The link comes back at 30 µs; the convergence due 40 µs after the cut
// (at 50 µs) finds it up for less than the convergence delay and keeps it
// out, the one 40 µs after it came back (at 70 µs) puts every QP back on
// its first T1: the map is the one before the cut.
func TestRoCEResilientHash(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	coll := func() *Collective { return &Collective{Kind: AllToAll, Hosts: hosts, Bytes: 32 << 20, Iterations: 1} }
	base := Options{Transport: RoCE, Seed: 1, Collective: coll()}
	before := qpT1s(newSimOpened(t, f, src, base))
	const row, x = 2, 1 // the cut link: p0-t0-2 to p0-t1-1
	cut := Fault{Kind: LinkDown, A: "p0-t0-2", B: "p0-t1-1", At: 10 * time.Microsecond, Until: 30 * time.Microsecond}
	at := func(limit time.Duration) map[string]int {
		opt := base
		opt.Collective = coll()
		opt.Faults = []Fault{cut}
		opt.LocalRepair, opt.Convergence, opt.Limit = 2*time.Microsecond, 40*time.Microsecond, limit
		s := newSim(t, f, src, opt)
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return qpT1s(s)
	}
	rowOf := func(id int) int { return p.HostByIndex(id).Row }
	for _, c := range []struct {
		what  string
		limit time.Duration
		moves func(src, dst, plane, t1 int) bool
	}{
		{"before the local repair", 11 * time.Microsecond, func(int, int, int, int) bool { return false }},
		{"after the local repair", 13 * time.Microsecond, func(a, b, pl, t1 int) bool {
			return pl == 0 && t1 == x && rowOf(a) == row && rowOf(b) != row
		}},
		{"after the convergence", 51 * time.Microsecond, func(a, b, pl, t1 int) bool {
			return pl == 0 && t1 == x && rowOf(a) != rowOf(b) && (rowOf(a) == row || rowOf(b) == row)
		}},
		{"after the link came back", 71 * time.Microsecond, func(int, int, int, int) bool { return false }},
	} {
		after := at(c.limit)
		if len(after) != len(before) {
			t.Fatalf("%s: %d QP ends, want %d", c.what, len(after), len(before))
		}
		moved, kept := 0, 0
		for k, t1 := range before {
			var a, b, pl, qk int
			fmt.Sscanf(k, "%d>%d p%d k%d", &a, &b, &pl, &qk)
			want := c.moves(a, b, pl, t1)
			switch {
			case want && after[k] == t1:
				t.Errorf("%s: %s still on T1 %d, want it moved", c.what, k, t1)
			case !want && after[k] != t1:
				t.Errorf("%s: %s moved from T1 %d to %d, want it kept", c.what, k, t1, after[k])
			case want:
				moved++
			default:
				kept++
			}
		}
		t.Logf("%s: %d QP ends moved, %d kept", c.what, moved, kept)
		if c.limit > 11*time.Microsecond && c.limit < 70*time.Microsecond && moved == 0 {
			t.Errorf("%s: no QP end moved: the case tests nothing", c.what)
		}
	}
}

// TestRoCEQPs: --roce-qps 2 opens two QPs a plane for each host pair,
// four on tiny's two planes where the default (one a plane: tiny's 200
// Gb/s NIC is 2 of NCCL's 14 GB/s channels) opens two, and splits the
// flow's bytes evenly over them, every byte arriving. Each QP is hashed
// on its own: over small's host pairs a pair's two QPs of a plane take
// different T1s about 3 times in 4 (4 T1s), where a hash without the QP's
// number always put them together.
func TestRoCEQPs(t *testing.T) {
	f, p, src := genSource(t, "tiny")
	a, b := p.HostByIndex(0), p.HostByIndex(3)
	flows := []Flow{{Src: a, Dst: b, Bytes: 1<<20 + 3}}
	for _, c := range []struct {
		qps, want int
		parts     []int64
	}{
		{0, 2, []int64{524289, 524290}},
		{2, 4, []int64{262144, 262144, 262144, 262147}},
	} {
		s := newSim(t, f, src, Options{Transport: RoCE, RoCEQPs: c.qps, Payload: true, Flows: flows})
		r, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(s.hostOf(a).qps); n != c.want || r.QPsPerPair != c.want || r.Completed != 1 || r.Corrupt != 0 {
			t.Errorf("--roce-qps %d: the sender opened %d QPs, the result says %d per pair, %d flows complete, %d corrupt; want %d QPs, the flow whole",
				c.qps, n, r.QPsPerPair, r.Completed, r.Corrupt, c.want)
		}
		var got []int64
		for _, pt := range s.parts {
			got = append(got, pt.bytes)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.parts) {
			t.Errorf("--roce-qps %d: the flow's parts are %v bytes, want %v", c.qps, got, c.parts)
		}
	}

	fs, ps, srcs := genSource(t, "small")
	s := newSim(t, fs, srcs, Options{Transport: RoCE, Flows: []Flow{{Src: ps.HostByIndex(0), Dst: ps.HostByIndex(1), Bytes: 1}}})
	apart, n := 0, 0
	for i := 0; i < fs.Hosts(); i++ {
		for j := i + 1; j < fs.Hosts(); j++ {
			ha, hb := s.hostOf(ps.HostByIndex(i)), s.hostOf(ps.HostByIndex(j))
			for pl := 0; pl < fs.Planes; pl++ {
				if s.ecmp(ha, hb, pl, 0) != s.ecmp(ha, hb, pl, 1) {
					apart++
				}
				n++
			}
		}
	}
	t.Logf("a pair's two QPs of a plane on different T1s: %d of %d", apart, n)
	if apart*100 < n*65 || apart*100 > n*85 {
		t.Errorf("a pair's two QPs of a plane on different T1s %d times in %d, want about 3 in 4", apart, n)
	}
}

// TestRoCEStalledCount: the QP pairs a fault stalls, worked out by hand on
// tiny with --roce-qps 2: nic-0 writes 4 MiB to each of the 3 others.
// Cutting nic-0's plane-0 link stalls every plane-0 QP of its 3 pairs,
// 2 each: 6. T0 1 of plane 0 powering off stalls the plane-0 QPs of the 2
// pairs with a host under it (nic-2 and nic-3), 2 each: 4; the pair under
// T0 0 alone never reaches it. A cut before the flows start stalls the
// QPs as their writes start on it: 6 again. A QP with nothing left to
// send waits on nothing: nic-0's 64 KiB to nic-1 is done by 20 µs, when
// its link is cut under nic-2's 4 MiB to nic-3: none stalled.
func TestRoCEStalledCount(t *testing.T) {
	f, p, src := genSource(t, "tiny")
	n := p.HostByIndex
	var fan []Flow
	for i := 1; i < 4; i++ {
		fan = append(fan, Flow{Src: n(0), Dst: n(i), Bytes: 4 << 20, Start: 5 * time.Microsecond})
	}
	idle := []Flow{{Src: n(0), Dst: n(1), Bytes: 64 << 10}, {Src: n(2), Dst: n(3), Bytes: 4 << 20}}
	nic0 := p.HostName(n(0))
	for _, c := range []struct {
		flows []Flow
		fault Fault
		want  int
	}{
		{fan, Fault{Kind: LinkDown, A: "p0-t0-0", B: nic0, At: 20 * time.Microsecond}, 6},
		{fan, Fault{Kind: SwitchDown, A: "p0-t0-1", At: 20 * time.Microsecond}, 4},
		{fan, Fault{Kind: LinkDown, A: "p0-t0-0", B: nic0, At: time.Microsecond}, 6},
		{idle, Fault{Kind: LinkDown, A: "p0-t0-0", B: nic0, At: 20 * time.Microsecond}, 0},
	} {
		r := run(t, f, src, Options{Transport: RoCE, RoCEQPs: 2, Flows: c.flows, Faults: []Fault{c.fault},
			LocalRepair: 100 * time.Microsecond, Convergence: 200 * time.Microsecond})
		if c.want == 0 && (r.FlowResults[0].FCTUS <= 0 || r.FlowResults[0].FCTUS >= 20) {
			t.Errorf("%v: the short flow took %.1f µs, want it done before the cut", c.fault, r.FlowResults[0].FCTUS)
		}
		if got := r.Faults[0].StalledQPs; got == nil || *got != c.want {
			t.Errorf("%v: %v QP pairs stalled, want %d", c.fault, got, c.want)
		}
	}
}
