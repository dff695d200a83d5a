package verify

import "math/bits"

// bitset is a set of small integers (T1s, rows or ports of a sweep).
type bitset []uint64

func (b bitset) has(i int) bool { return b[i>>6]>>(i&63)&1 != 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

func newBits(words, n int, set func(i int) bool) bitset {
	b := make(bitset, words)
	for i := 0; i < n; i++ {
		if set(i) {
			b[i>>6] |= 1 << (i & 63)
		}
	}
	return b
}
