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
	var sets [][]Link
	switch {
	case opt.Double && opt.Sample <= 0:
		return nil, fmt.Errorf("sweep: double failures need --sample (every pair of %d links is too many)", nLinks)
	case opt.Sample > 0:
		rep.Sampled, rep.Seed = true, opt.Seed
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
					name := s.LinkClass(set[0])
					if len(set) == 2 {
						a, b := s.LinkClass(set[0]), s.LinkClass(set[1])
						if a > b {
							a, b = b, a
						}
						name = a + "+" + b
					}
					a := acc[name]
					if a == nil {
						a = &classAcc{c: SweepClass{Class: name}, buckets: map[int]*ShareBucket{}}
						acc[name] = a
					}
					wi, err := s.whatIf(set, sc, nil, func(n, lost, _, _, _ uint64) {
						a.addShare(n, float64(lost)/float64(s.HostPaths))
					})
					if err != nil {
						errs[wk] = err
						return
					}
					c := &a.c
					c.WhatIfs++
					c.LostPaths.add(float64(wi.LostPaths))
					c.Hosts.add(float64(wi.Hosts))
					c.HostPairs.add(float64(wi.HostPairs))
					c.MaxPairPaths.add(float64(wi.MaxPairPaths))
					c.EVSlots.add(float64(wi.EVSlots))
					c.MaxHostShare.add(wi.MaxHostShare)
					c.MaxPlaneShare.add(wi.MaxPlaneShare)
				}
				core.Add(int64(time.Since(t0)))
				d := done.Add(int64(min(start+chunk, total) - start))
				if opt.Progress != nil {
					progressMu.Lock()
					opt.Progress(int(d), total)
					progressMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	merged := map[string]*classAcc{}
	for _, acc := range accs {
		for name, a := range acc {
			m := merged[name]
			if m == nil {
				m = &classAcc{c: SweepClass{Class: name}, buckets: map[int]*ShareBucket{}}
				merged[name] = m
			}
			m.c.WhatIfs += a.c.WhatIfs
			m.c.LostPaths.merge(a.c.LostPaths)
			m.c.Hosts.merge(a.c.Hosts)
			m.c.HostPairs.merge(a.c.HostPairs)
			m.c.MaxPairPaths.merge(a.c.MaxPairPaths)
			m.c.EVSlots.merge(a.c.EVSlots)
			m.c.MaxHostShare.merge(a.c.MaxHostShare)
			m.c.MaxPlaneShare.merge(a.c.MaxPlaneShare)
			for j, b := range a.buckets {
				mb := m.buckets[j]
				if mb == nil {
					c := *b
					m.buckets[j] = &c
					continue
				}
				mb.Hosts += b.Hosts
				mb.mixed = mb.mixed || b.mixed || mb.share != b.share
			}
		}
	}
	for _, m := range merged {
		keys := make([]int, 0, len(m.buckets))
		for j := range m.buckets {
			keys = append(keys, j)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(keys)))
		for _, j := range keys {
			b := *m.buckets[j]
			if !b.mixed {
				b.Share = b.share
			}
			m.c.Shares = append(m.c.Shares, b)
		}
		rep.Classes = append(rep.Classes, m.c)
	}
	sort.Slice(rep.Classes, func(i, j int) bool { return rep.Classes[i].Class > rep.Classes[j].Class })
	rep.CoreSeconds = time.Duration(core.Load()).Seconds()
	return rep, nil
}
