package verify_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
)

// bruteLoss walks every path with links down, one by one, and returns what
// each source host loses: paths, distinct destinations, the most paths one
// destination loses, the most paths lost in one plane.
func bruteLoss(t *testing.T, p *plan.Plan, src verify.Source, down []verify.Link) map[int]verify.HostLoss {
	t.Helper()
	b, err := newBrute(p, src, down)
	if err != nil {
		t.Fatal(err)
	}
	f := p.F
	out := map[int]verify.HostLoss{}
	for s := 0; s < f.Hosts(); s++ {
		srcRow := s / f.T0Down
		perDst := map[int]uint64{}
		perPlane := map[int]uint64{}
		var lost uint64
		for pl := 0; pl < f.Planes; pl++ {
			self := b.self[[2]int{s, pl}]
			for d := 0; d < f.Hosts(); d++ {
				if d == s {
					continue
				}
				dstRow, dstPort := d/f.T0Down, d%f.T0Down
				dn := b.dn[[2]int{pl, dstPort}]
				carriers := [][]uint16{{self.OwnT0, dn}}
				if dstRow != srcRow {
					carriers = nil
					for t1 := 0; t1 < f.T1Count; t1++ {
						carriers = append(carriers, []uint16{self.OwnT0, b.t1[[2]int{pl, t1}], b.row[[2]int{pl, dstRow}], dn})
					}
				}
				for _, c := range carriers {
					if got, _ := b.send(s, pl, c); got != d {
						lost++
						perDst[d]++
						perPlane[pl]++
					}
				}
			}
		}
		if lost == 0 {
			continue
		}
		hl := verify.HostLoss{Host: s, Lost: lost, Pairs: uint64(len(perDst))}
		for _, v := range perDst {
			hl.MaxPairPaths = max(hl.MaxPairPaths, v)
		}
		for _, v := range perPlane {
			hl.PlaneLost = max(hl.PlaneLost, v)
		}
		out[s] = hl
	}
	return out
}

// TestSweepAgrees checks the sweep's what-ifs, host by host, against the
// brute force walking every path with the links down, for every single
// link of tiny and small and random pairs of links (also in two planes),
// and against a full verify --fail run (Run with the links down).
func TestSweepAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	for _, preset := range []string{"tiny", "small"} {
		t.Run(preset, func(t *testing.T) {
			p := newPlan(t, preset)
			src := generated(p)
			sw, err := verify.NewSweeper(context.Background(), p, src)
			if err != nil {
				t.Fatal(err)
			}
			links := sw.Links()
			f := p.F
			if want := f.Planes * f.T0Count * (f.T1Count + f.T0Down); len(links) != want {
				t.Fatalf("%d links, want %d", len(links), want)
			}
			sets := [][]verify.Link{}
			for _, l := range links {
				sets = append(sets, []verify.Link{l})
			}
			for range 60 {
				a, b := links[rng.IntN(len(links))], links[rng.IntN(len(links))]
				if a != b {
					sets = append(sets, []verify.Link{a, b})
				}
			}
			for _, set := range sets {
				var detail []verify.HostLoss
				wi, err := sw.WhatIf(set, &detail)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteLoss(t, p, src, set)
				if len(detail) != len(want) {
					t.Fatalf("%v: %d hosts lose paths, brute force %d\nsweep %+v\nbrute %+v", set, len(detail), len(want), detail, want)
				}
				var lost, pairs uint64
				for _, d := range detail {
					if w := want[d.Host]; d != w {
						t.Fatalf("%v: host %d: sweep %+v, brute force %+v", set, d.Host, d, w)
					}
					lost += d.Lost
					pairs += d.Pairs
				}
				if wi.LostPaths != lost || wi.HostPairs != pairs || wi.Hosts != uint64(len(detail)) {
					t.Fatalf("%v: what-if %+v, hosts sum to %d lost, %d pairs, %d hosts", set, wi, lost, pairs, len(detail))
				}
				rep, err := verify.Run(context.Background(), p, src, verify.Options{Down: set})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Paths-rep.Delivered != wi.LostPaths {
					t.Fatalf("%v: verify --fail loses %d paths, the sweep %d", set, rep.Paths-rep.Delivered, wi.LostPaths)
				}
				// Run's classes sum the pairs per source row.
				perRow := map[int]uint64{}
				for _, l := range rep.Lost {
					perRow[l.SrcRow] += l.Pairs
				}
				sweepRow := map[int]uint64{}
				for _, d := range detail {
					sweepRow[d.Host/f.T0Down] += d.Lost
				}
				for r, v := range perRow {
					if sweepRow[r] != v {
						t.Fatalf("%v: row %d: verify --fail loses %d paths, the sweep %d", set, r, v, sweepRow[r])
					}
				}
			}
		})
	}
}

// BenchmarkSweep131k: the baseline walk and index (NewSweeper), one
// single-failure what-if of each class, a sampled sweep of 20,000 links and
// one of 2,000 pairs (µs/what-if: wall time of one what-if within a sweep,
// on every core).
func BenchmarkSweep131k(b *testing.B) {
	p := newPlan(b, "mrc-131k")
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			if _, err := verify.NewSweeper(context.Background(), p, generated(p)); err != nil {
				b.Fatal(err)
			}
		}
	})
	sw, err := verify.NewSweeper(context.Background(), p, generated(p))
	if err != nil {
		b.Fatal(err)
	}
	t0 := plan.Switch{Role: plan.RoleT0, Plane: 3, Index: 100}
	for _, c := range []struct {
		name string
		link verify.Link
	}{{"whatif-t0-t1", verify.Link{Switch: t0, Port: p.T0UpPort(7)}}, {"whatif-host", verify.Link{Switch: t0, Port: p.T0DownPort(5)}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sw.WhatIf([]verify.Link{c.link}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, double := range []bool{false, true} {
		name, n := "sample-20000", 20000
		if double {
			name, n = "sample-2000-double", 2000
		}
		b.Run(name, func(b *testing.B) {
			var rep *verify.SweepReport
			for b.Loop() {
				var err error
				if rep, err = sw.Sweep(context.Background(), verify.SweepOptions{Sample: n, Seed: 1, Double: double}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(n)*1e6, "µs/what-if")
			b.ReportMetric(rep.CoreSeconds/float64(n)*1e6, "core-µs/what-if")
		})
	}
}
