package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Sweep takes links down (each alone, or in pairs) and sums up what each
// what-if costs, per class of link.
func (s *Sweeper) Sweep(ctx context.Context, opt SweepOptions) (*SweepReport, error) {
	nLinks := s.linkCount()
	rep := &SweepReport{Links: nLinks, Double: opt.Double, HostPaths: s.HostPaths, PlanePaths: s.PlanePaths}
	if opt.Double && opt.Sample <= 0 {
		return nil, fmt.Errorf("sweep: double failures need --sample (every pair of %d links is too many)", nLinks)
	}
	var sets [][]Link
	if opt.Sample > 0 {
		rep.Sampled, rep.Seed = true, opt.Seed
		sets = s.sample(opt)
	}
	total := nLinks
	if sets != nil {
		total = len(sets)
	}
	rep.WhatIfs = total
	get := func(i int, one *[1]Link) []Link {
		if sets != nil {
			return sets[i]
		}
		one[0] = s.linkAt(i)
		return one[:]
	}
	accs, core, err := s.runWhatIfs(ctx, total, get, opt.Progress)
	if err != nil {
		return nil, err
	}
	for _, m := range mergeClasses(accs) {
		rep.Classes = append(rep.Classes, m.class())
	}
	sort.Slice(rep.Classes, func(i, j int) bool { return rep.Classes[i].Class > rep.Classes[j].Class })
	rep.CoreSeconds = core.Seconds()
	return rep, nil
}

// sample draws opt.Sample links, or pairs of distinct links with
// opt.Double, from opt.Seed.
func (s *Sweeper) sample(opt SweepOptions) [][]Link {
	nLinks := s.linkCount()
	var sets [][]Link
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6d7263))
	for range opt.Sample {
		a := s.linkAt(rng.IntN(nLinks))
		if !opt.Double {
			sets = append(sets, []Link{a})
			continue
		}
		b := s.linkAt(rng.IntN(nLinks - 1))
		if b == a {
			b = s.linkAt(nLinks - 1)
		}
		sets = append(sets, []Link{a, b})
	}
	return sets
}

// setClass names the class of a what-if: its link's class, or for two
// links both classes, sorted, joined by "+".
func (s *Sweeper) setClass(set []Link) string {
	name := s.LinkClass(set[0])
	if len(set) == 2 {
		a, b := s.LinkClass(set[0]), s.LinkClass(set[1])
		if a > b {
			a, b = b, a
		}
		name = a + "+" + b
	}
	return name
}

// runWhatIfs runs the what-ifs get(0..total-1) on every core, in chunks
// taken in turn, each worker summing up its own per class. It returns the
// workers' sums and the CPU time the what-ifs took, summed over workers.
func (s *Sweeper) runWhatIfs(ctx context.Context, total int, get func(i int, one *[1]Link) []Link, progress func(done, total int)) ([]map[string]*classAcc, time.Duration, error) {
	workers := runtime.GOMAXPROCS(0)
	accs := make([]map[string]*classAcc, workers)
	var core atomic.Int64
	var next, done atomic.Int64
	const chunk = 512
	errs := make([]error, workers)
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	for wk := range workers {
		accs[wk] = map[string]*classAcc{}
		wg.Go(func() {
			sc := newScratch()
			var one [1]Link
			acc := accs[wk]
			for {
				start := int(next.Add(chunk) - chunk)
				if start >= total || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				for i := start; i < min(start+chunk, total); i++ {
					set := get(i, &one)
					name := s.setClass(set)
					a := acc[name]
					if a == nil {
						a = newClassAcc(name)
						acc[name] = a
					}
					wi, err := s.whatIf(set, sc, nil, func(n, lost, _, _, _ uint64) {
						a.addShare(n, float64(lost)/float64(s.HostPaths))
					})
					if err != nil {
						errs[wk] = err
						return
					}
					a.add(wi)
				}
				core.Add(int64(time.Since(t0)))
				d := done.Add(int64(min(start+chunk, total) - start))
				if progress != nil {
					progressMu.Lock()
					progress(int(d), total)
					progressMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return accs, time.Duration(core.Load()), nil
}
