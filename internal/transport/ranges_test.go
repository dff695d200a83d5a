package transport

import (
	"math/rand/v2"
	"testing"
)

// TestPlacedRangesAgainstBits: random placements and removals on the
// range set and on a bit per byte give the same fresh counts, coverage
// answers and removed counts.
func TestPlacedRangesAgainstBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 512
	for round := 0; round < 200; round++ {
		var p placedRanges
		var bits [size]bool
		for op := 0; op < 60; op++ {
			lo := uint64(rng.IntN(size))
			hi := lo + uint64(rng.IntN(size-int(lo)+1))
			switch rng.IntN(4) {
			case 0:
				var want int64
				for i := lo; i < hi; i++ {
					if bits[i] {
						want++
						bits[i] = false
					}
				}
				if got := p.remove(lo, hi); got != want {
					t.Fatalf("round %d: remove [%d,%d): %d bytes, want %d", round, lo, hi, got, want)
				}
			default:
				var want int64
				for i := lo; i < hi; i++ {
					if !bits[i] {
						want++
						bits[i] = true
					}
				}
				if got := p.add(lo, hi); got != want {
					t.Fatalf("round %d: add [%d,%d): %d fresh, want %d (set %v)", round, lo, hi, got, want, p.r)
				}
			}
			qlo := uint64(rng.IntN(size))
			qhi := qlo + uint64(rng.IntN(size-int(qlo)+1))
			want := true
			for i := qlo; i < qhi; i++ {
				want = want && bits[i]
			}
			if got := p.covers(qlo, qhi); got != want {
				t.Fatalf("round %d: covers [%d,%d) = %v, want %v (set %v)", round, qlo, qhi, got, want, p.r)
			}
			for i := 1; i < len(p.r); i++ {
				if p.r[i-1][1] >= p.r[i][0] || p.r[i][0] >= p.r[i][1] {
					t.Fatalf("round %d: ranges not disjoint, sorted and apart: %v", round, p.r)
				}
			}
		}
	}
}
