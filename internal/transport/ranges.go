package transport

import "sort"

// placedRanges is a set of disjoint, non-adjacent byte ranges [lo, hi),
// sorted: what a virtual memory region has had placed. Data arrives mostly
// in order, so the set stays a handful of ranges.
type placedRanges struct {
	r [][2]uint64
}

// add places [lo, hi) and returns how many of its bytes were not placed
// before.
func (p *placedRanges) add(lo, hi uint64) int64 {
	if lo >= hi {
		return 0
	}
	// The first range that ends at or after lo may touch [lo, hi).
	i := sort.Search(len(p.r), func(i int) bool { return p.r[i][1] >= lo })
	fresh := int64(hi - lo)
	nlo, nhi := lo, hi
	j := i
	for ; j < len(p.r) && p.r[j][0] <= hi; j++ {
		a, b := p.r[j][0], p.r[j][1]
		if ov := int64(min(b, hi)) - int64(max(a, lo)); ov > 0 {
			fresh -= ov
		}
		nlo, nhi = min(nlo, a), max(nhi, b)
	}
	// Ranges i..j-1 merge into [nlo, nhi).
	if i == j {
		p.r = append(p.r, [2]uint64{})
		copy(p.r[i+1:], p.r[i:])
	} else {
		p.r = append(p.r[:i+1], p.r[j:]...)
	}
	p.r[i] = [2]uint64{nlo, nhi}
	return fresh
}

// covers reports whether every byte of [lo, hi) is placed.
func (p *placedRanges) covers(lo, hi uint64) bool {
	if lo >= hi {
		return true
	}
	i := sort.Search(len(p.r), func(i int) bool { return p.r[i][1] > lo })
	return i < len(p.r) && p.r[i][0] <= lo && p.r[i][1] >= hi
}

// remove forgets [lo, hi) and returns how many placed bytes it held.
func (p *placedRanges) remove(lo, hi uint64) int64 {
	if lo >= hi {
		return 0
	}
	var n int64
	out := p.r[:0:0]
	for _, x := range p.r {
		a, b := x[0], x[1]
		if b <= lo || a >= hi {
			out = append(out, x)
			continue
		}
		n += int64(min(b, hi) - max(a, lo))
		if a < lo {
			out = append(out, [2]uint64{a, lo})
		}
		if b > hi {
			out = append(out, [2]uint64{hi, b})
		}
	}
	p.r = out
	return n
}
