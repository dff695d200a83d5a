package transport

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestDeadlineQueue: after any sequence of deadlines set, moved and
// removed, the queue's earliest deadline and its due QPs (in open order)
// are what a walk over every QP finds.
func TestDeadlineQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	base := time.Unix(1_000_000, 0)
	qps := make([]*QP, 40)
	for i := range qps {
		qps[i] = &QP{dls: deadlineState{order: i, index: -1}}
	}
	has := make([]bool, len(qps))
	var d deadlineQueue
	for step := 0; step < 20_000; step++ {
		i := rng.IntN(len(qps))
		if rng.IntN(4) == 0 {
			d.set(qps[i], time.Time{}, false)
			has[i] = false
		} else {
			// Few distinct times: ties are common.
			d.set(qps[i], base.Add(time.Duration(rng.IntN(50))*time.Microsecond), true)
			has[i] = true
		}
		now := base.Add(time.Duration(rng.IntN(50)) * time.Microsecond)
		var wantNext time.Time
		wantOK := false
		var wantDue []int
		for j, q := range qps {
			if !has[j] {
				continue
			}
			if !wantOK || q.dls.at.Before(wantNext) {
				wantNext, wantOK = q.dls.at, true
			}
			if !q.dls.at.After(now) {
				wantDue = append(wantDue, j)
			}
		}
		if next, ok := d.next(); ok != wantOK || !next.Equal(wantNext) {
			t.Fatalf("step %d: next %v %v, want %v %v", step, next, ok, wantNext, wantOK)
		}
		var due []int
		for _, q := range d.dueAt(now) {
			due = append(due, q.dls.order)
		}
		if !slices.Equal(due, wantDue) {
			t.Fatalf("step %d: due at %v: %v, want %v", step, now.Sub(base), due, wantDue)
		}
		for k, q := range d.heap {
			if q.dls.index != k {
				t.Fatalf("step %d: QP %d at heap index %d thinks it is at %d", step, q.dls.order, k, q.dls.index)
			}
		}
	}
}
