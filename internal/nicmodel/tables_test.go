package nicmodel

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestExactTable: inserts, modifies and deletes of keys below, around and
// far beyond the dense part (fixed or growing) or the inline cells answer
// as a map does, with P4Runtime's errors for a second insert and for a
// modify or delete of no entry.
func TestExactTable(t *testing.T) {
	type table interface {
		get(uint64) (uint32, bool)
		write(Op, uint64, uint32) error
	}
	fixed, growing, sparse := newExact[uint32](16), newGrowingExact[uint32](64), newExact[uint32](0)
	for _, tc := range []struct {
		name  string
		table table
	}{
		{"fixed dense", &fixed},
		{"growing dense", &growing},
		{"sparse only", &sparse},
		{"small", &smallTable[uint32]{}},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		tb, want := tc.table, map[uint64]uint32{}
		keys := []uint64{0, 1, 5, 8, 9, 15, 16, 17, 31, 63, 64, 65, 200, 1 << 40}
		for step := 0; step < 5000; step++ {
			k := keys[rng.IntN(len(keys))]
			op := []Op{Insert, Modify, Delete}[rng.IntN(3)]
			v := rng.Uint32()
			_, had := want[k]
			err := tb.write(op, k, v)
			switch {
			case op == Insert && had, op != Insert && !had:
				wantErr := ErrExists
				if op != Insert {
					wantErr = ErrNotFound
				}
				if !errors.Is(err, wantErr) {
					t.Fatalf("%s, step %d: %v of key %d (present %v): %v, want %v", tc.name, step, op, k, had, err, wantErr)
				}
			case err != nil:
				t.Fatalf("%s, step %d: %v of key %d: %v", tc.name, step, op, k, err)
			case op == Delete:
				delete(want, k)
			default:
				want[k] = v
			}
			for _, q := range keys {
				got, ok := tb.get(q)
				if w, wok := want[q]; ok != wok || got != w {
					t.Fatalf("%s, step %d: key %d: %d %v, want %d %v", tc.name, step, q, got, ok, w, wok)
				}
			}
		}
	}
}
