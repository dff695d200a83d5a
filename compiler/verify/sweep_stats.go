package verify

import "math"

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
