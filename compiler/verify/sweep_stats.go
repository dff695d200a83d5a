package verify

import (
	"math"
	"sort"
)

// Stat summarises one figure over the what-ifs of a class.
type Stat struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
	sum  float64
	n    int
}

func (s *Stat) add(v float64) {
	if s.n == 0 || v < s.Min {
		s.Min = v
	}
	if s.n == 0 || v > s.Max {
		s.Max = v
	}
	s.sum += v
	s.n++
	s.Mean = s.sum / float64(s.n)
}

func (s *Stat) merge(o Stat) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	if s.n == 0 || o.Max > s.Max {
		s.Max = o.Max
	}
	s.sum += o.sum
	s.n += o.n
	s.Mean = s.sum / float64(s.n)
}

// classAcc sums up the what-ifs of one class as they come.
type classAcc struct {
	c       SweepClass
	buckets map[int]*ShareBucket
	// last is the bucket of the last share added (hosts that lose alike
	// come in runs).
	last      *ShareBucket
	lastShare float64
}

func (a *classAcc) addShare(n uint64, share float64) {
	if a.last != nil && share == a.lastShare {
		a.last.Hosts += n
		return
	}
	j := int(math.Floor(-math.Log2(share)))
	b := a.buckets[j]
	if b == nil {
		b = &ShareBucket{Lo: math.Exp2(float64(-j - 1)), Hi: math.Exp2(float64(-j)), share: share}
		a.buckets[j] = b
	}
	if b.share != share {
		b.mixed = true
	}
	b.Hosts += n
	a.last, a.lastShare = b, share
}

func newClassAcc(name string) *classAcc {
	return &classAcc{c: SweepClass{Class: name}, buckets: map[int]*ShareBucket{}}
}

// add sums up one what-if of the class (its hosts' shares go to addShare).
func (a *classAcc) add(wi WhatIf) {
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

// merge adds o's what-ifs to a's.
func (a *classAcc) merge(o *classAcc) {
	a.c.WhatIfs += o.c.WhatIfs
	a.c.LostPaths.merge(o.c.LostPaths)
	a.c.Hosts.merge(o.c.Hosts)
	a.c.HostPairs.merge(o.c.HostPairs)
	a.c.MaxPairPaths.merge(o.c.MaxPairPaths)
	a.c.EVSlots.merge(o.c.EVSlots)
	a.c.MaxHostShare.merge(o.c.MaxHostShare)
	a.c.MaxPlaneShare.merge(o.c.MaxPlaneShare)
	for j, b := range o.buckets {
		mb := a.buckets[j]
		if mb == nil {
			c := *b
			a.buckets[j] = &c
			continue
		}
		mb.Hosts += b.Hosts
		mb.mixed = mb.mixed || b.mixed || mb.share != b.share
	}
}

// mergeClasses merges the workers' sums class by class.
func mergeClasses(accs []map[string]*classAcc) map[string]*classAcc {
	merged := map[string]*classAcc{}
	for _, acc := range accs {
		for name, a := range acc {
			m := merged[name]
			if m == nil {
				m = newClassAcc(name)
				merged[name] = m
			}
			m.merge(a)
		}
	}
	return merged
}

// class is the class's summary, its share buckets from the largest shares
// down.
func (a *classAcc) class() SweepClass {
	keys := make([]int, 0, len(a.buckets))
	for j := range a.buckets {
		keys = append(keys, j)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(keys)))
	c := a.c
	for _, j := range keys {
		b := *a.buckets[j]
		if !b.mixed {
			b.Share = b.share
		}
		c.Shares = append(c.Shares, b)
	}
	return c
}
