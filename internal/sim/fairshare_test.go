package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// TestMaxMinFluid works a small case by hand. Links 0, 1 and 2 carry 1
// byte per ps each. A crosses 0 and 1, B 1 and 2, C 2 only, all from 0; D
// crosses 0 from time 10.
//
// From 0: link 1 holds A and B, link 2 B and C: every share is 1/2 (link 0
// has A alone but A is held to 1/2 by link 1). A (1 byte) and C (1 byte)
// finish at 2. B then has 1 of its 2 bytes left, alone at rate 1: done at
// 3. Nothing runs from 3 to 10; D (4 bytes) alone at rate 1 is done at 14.
func TestMaxMinFluid(t *testing.T) {
	subs := []subflow{
		{bytes: 1, links: [4]int{0, 1, -1, -1}},
		{bytes: 2, links: [4]int{1, 2, -1, -1}},
		{bytes: 1, links: [4]int{2, -1, -1, -1}},
		{bytes: 4, start: 10, links: [4]int{0, -1, -1, -1}},
	}
	maxMinFluid(subs, 3, 1)
	for i, want := range []float64{2, 3, 2, 14} {
		if got := subs[i].done; math.Abs(got-want) > 1e-9 {
			t.Errorf("subflow %c done at %v, want %v", 'A'+i, got, want)
		}
	}
}

// TestMaxMinFluidUnequal: a link shared by three, one of which a second
// link holds to a quarter. Link 0 (capacity 1): X, Y, Z; link 1: Z and
// three others W1-W3 (1/4 each). Z gets 1/4, X and Y share the rest of
// link 0: 3/8 each. With 3 bytes each, X and Y finish at 8; the W's (1
// byte each) and Z (1 byte) finish at 4, after which X and Y have 3 - 4 *
// 3/8 = 1.5 bytes left at 1/2 each: done at 7.
func TestMaxMinFluidUnequal(t *testing.T) {
	subs := []subflow{
		{bytes: 3, links: [4]int{0, -1, -1, -1}},
		{bytes: 3, links: [4]int{0, -1, -1, -1}},
		{bytes: 1, links: [4]int{0, 1, -1, -1}},
		{bytes: 1, links: [4]int{1, -1, -1, -1}},
		{bytes: 1, links: [4]int{1, -1, -1, -1}},
		{bytes: 1, links: [4]int{1, -1, -1, -1}},
	}
	maxMinFluid(subs, 2, 1)
	for i, want := range []float64{7, 7, 4, 4, 4, 4} {
		if got := subs[i].done; math.Abs(got-want) > 1e-9 {
			t.Errorf("subflow %d done at %v, want %v", i, got, want)
		}
	}
}

// TestRoCEPathsAlone: one RoCE flow on tiny meets no other, so each of its
// two plane QPs has its whole 200 Gb/s port: the fair share is the payload
// share of a data frame, 4096 / (4096 + 134 headers + 24 preamble, FCS and
// gap) = 0.962858. Each plane's QP crosses two T0-T1 cables, each with
// half the bytes; the busiest is plane 0's cable at row 0.
func TestRoCEPathsAlone(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	r := run(t, f, src, Options{Transport: RoCE, Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 1 << 20}}})
	rp := r.RoCEPaths
	if rp == nil || rp.FairShare == nil {
		t.Fatalf("RoCE paths %+v, want a fair share", rp)
	}
	if got := rp.FairShare.Min; math.Abs(got-0.962858) > 1e-6 {
		t.Errorf("fair share %.7f, want 0.962858", got)
	}
	if !strings.HasPrefix(rp.BusiestLink, "p0-t0-0:p0-t1-") || rp.BusiestLinkShare != 0.5 {
		t.Errorf("busiest link %q with %v of the bytes, want p0-t0-0:p0-t1-* with 0.5", rp.BusiestLink, rp.BusiestLinkShare)
	}
	if !strings.HasPrefix(rp.BusiestT1, "p0-t1-") || rp.BusiestT1Share != 0.5 {
		t.Errorf("busiest T1 %q with %v, want p0-t1-* with 0.5", rp.BusiestT1, rp.BusiestT1Share)
	}
	if mrc := run(t, f, src, Options{Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 1 << 20}}}); mrc.RoCEPaths != nil {
		t.Errorf("an MRC run reports RoCE paths %+v", mrc.RoCEPaths)
	}
}

// TestRoCEFairSharePermutation: on small's 16 MiB permutation, seed 1,
// RoCE's hashes leave its worst host 32.1% of its NIC at max-min fair
// rates, what an independent review computed from the same paths; the
// runs themselves give lossy RoCE 15.2% (README, What MRC buys).
func TestRoCEFairSharePermutation(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, f, src, Options{Transport: RoCE, Flows: Permutation(hosts, 16<<20, 0, 1), Seed: 1})
	fs := r.RoCEPaths.FairShare
	if got := math.Round(fs.Min * 1000); got != 321 {
		t.Errorf("fair share's worst host %.4f, want 0.321", fs.Min)
	}
	if r.Goodput.Min > fs.Min {
		t.Errorf("RoCE's worst host %.3f beats the fair share %.3f on its own paths", r.Goodput.Min, fs.Min)
	}
}
