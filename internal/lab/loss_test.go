package lab

import "testing"

// The wire's loss draw: the rate it promises, the same packets for the
// same seed and wire, others for another seed or wire.
func TestLossDraw(t *testing.T) {
	const n = 200000
	p := uint64(1<<32) / 100
	lost := func(seed, id uint64) (count int, first []uint64) {
		for i := uint64(1); i <= n; i++ {
			if lossDraw(seed, id, i) < p {
				count++
				if len(first) < 20 {
					first = append(first, i)
				}
			}
		}
		return count, first
	}
	c1, f1 := lost(1, 3)
	if c1 < n/100*9/10 || c1 > n/100*11/10 {
		t.Errorf("1%% loss dropped %d of %d", c1, n)
	}
	if c, f := lost(1, 3); c != c1 || !equal(f, f1) {
		t.Errorf("same seed and wire: %d %v, then %d %v", c1, f1, c, f)
	}
	if _, f := lost(2, 3); equal(f, f1) {
		t.Errorf("another seed drops the same packets %v", f)
	}
	if _, f := lost(1, 4); equal(f, f1) {
		t.Errorf("another wire drops the same packets %v", f)
	}
	if lossDraw(1, 1, 1) >= 1<<32 {
		t.Error("a draw is not below 2^32: loss 1 would not drop everything")
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
