package verify_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
)

// TestSummarizeTinyByHand: p0-t0-0 -- p0-t1-1 down in tiny. Every host has
// 2 planes x (2 T1s x 2 hosts on the other T0 + 1 on its own) = 10 paths;
// each loses the (plane 0, T1 1) path to each of the 2 hosts on the other
// T0: 2 of 10. Each of the 4 host pairs between the rows loses 1 of its 4
// (plane, T1) paths, in both directions.
func TestSummarizeTinyByHand(t *testing.T) {
	p := newPlan(t, "tiny")
	down := []verify.Link{{Switch: plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, Port: 3}}
	rep, err := verify.Run(context.Background(), p, generated(p), verify.Options{Down: down})
	if err != nil {
		t.Fatal(err)
	}
	s := verify.Summarize(p, rep)
	if len(s.Hosts) != 4 {
		t.Fatalf("hosts %+v", s.Hosts)
	}
	for i, h := range s.Hosts {
		if h != (verify.HostShare{Host: i, Lost: 2, Paths: 10}) {
			t.Errorf("host %d: %+v, want 2 of 10", i, h)
		}
	}
	want := []verify.RowPairShare{{SrcRow: 0, DstRow: 1, HostPairs: 4, Lost: 4, Paths: 16}, {SrcRow: 1, DstRow: 0, HostPairs: 4, Lost: 4, Paths: 16}}
	if len(s.RowPairs) != 2 || s.RowPairs[0] != want[0] || s.RowPairs[1] != want[1] {
		t.Errorf("row pairs %+v, want %+v", s.RowPairs, want)
	}
	if len(s.PlaneT1) != 1 || s.PlaneT1[0] != (verify.PlaneT1Loss{Plane: 0, T1: 1, Lost: 8}) {
		t.Errorf("plane/T1 %+v", s.PlaneT1)
	}
	line := s.Line(p)
	if want := "summary: 4 of 4 hosts lose paths (20.0% of the fabric's): 4 hosts (nic-0, nic-1, nic-2, nic-3) lose 20.0% of their paths"; line != want {
		t.Errorf("line\n got %s\nwant %s", line, want)
	}
	if g := s.RowPairGroups(); len(g) != 1 || g[0].Fraction() != 0.25 || len(g[0].Members) != 2 {
		t.Errorf("row pair groups %+v", g)
	}

	// Nothing down: nothing to summarise.
	rep, err = verify.Run(context.Background(), p, generated(p), verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := verify.Summarize(p, rep); len(s.Hosts) != 0 || len(s.RowPairs) != 0 || !strings.HasPrefix(s.Line(p), "summary: no host") {
		t.Errorf("no failure: %+v %q", s, s.Line(p))
	}
}

// TestSummarizeAgreesWithBruteForce takes random links down in small
// (switch links and NIC links) and compares every host's and row pair's
// lost share with a path-by-path count of the brute-force model.
func TestSummarizeAgreesWithBruteForce(t *testing.T) {
	p := newPlan(t, "small")
	f := p.F
	rng := rand.New(rand.NewPCG(12, 34))
	for trial := 0; trial < 6; trial++ {
		var down []verify.Link
		for n := 1 + rng.IntN(3); len(down) < n; {
			s := plan.Switch{Role: plan.RoleT0, Plane: rng.IntN(f.Planes), Index: rng.IntN(f.T0Count)}
			if rng.IntN(2) == 0 {
				s = plan.Switch{Role: plan.RoleT1, Plane: rng.IntN(f.Planes), Index: rng.IntN(f.T1Count)}
			}
			down = append(down, verify.Link{Switch: s, Port: rng.IntN(p.Ports(s))})
		}
		rep, err := verify.Run(context.Background(), p, generated(p), verify.Options{Down: down})
		if err != nil {
			t.Fatal(err)
		}
		s := verify.Summarize(p, rep)
		b, err := newBrute(p, generated(p), down)
		if err != nil {
			t.Fatal(err)
		}
		hostLost := map[int]uint64{}
		rowLost := map[[2]int]uint64{}
		for src := 0; src < f.Hosts(); src++ {
			sh := p.HostByIndex(src)
			for pl := 0; pl < f.Planes; pl++ {
				for dst := 0; dst < f.Hosts(); dst++ {
					if dst == src {
						continue
					}
					dh := p.HostByIndex(dst)
					t1s := f.T1Count
					if dh.Row == sh.Row {
						t1s = 1
					}
					for t1 := 0; t1 < t1s; t1++ {
						if got, _ := b.send(src, pl, p.Path(pl, sh, dh, t1)); got != dst {
							hostLost[src]++
							rowLost[[2]int{sh.Row, dh.Row}]++
						}
					}
				}
			}
		}
		if len(s.Hosts) != len(hostLost) {
			t.Fatalf("down %v: %d hosts affected, brute force %d", down, len(s.Hosts), len(hostLost))
		}
		for _, h := range s.Hosts {
			if h.Lost != hostLost[h.Host] || h.Paths != verify.HostPaths(p) {
				t.Errorf("down %v: host %d lost %d of %d, brute force %d", down, h.Host, h.Lost, h.Paths, hostLost[h.Host])
			}
		}
		if len(s.RowPairs) != len(rowLost) {
			t.Fatalf("down %v: %d row pairs affected, brute force %d", down, len(s.RowPairs), len(rowLost))
		}
		for _, r := range s.RowPairs {
			if r.Lost != rowLost[[2]int{r.SrcRow, r.DstRow}] {
				t.Errorf("down %v: rows %d->%d lost %d, brute force %d", down, r.SrcRow, r.DstRow, r.Lost, rowLost[[2]int{r.SrcRow, r.DstRow}])
			}
		}
	}
}
