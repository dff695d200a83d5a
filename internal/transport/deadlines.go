package transport

import (
	"container/heap"
	"slices"
	"time"
)

// The engine's timer queue. Each QP's active write caches its deadline
// (Transfer.cachedDeadline) until its state changes; the engine keeps the
// QPs whose write has one in a min-heap by (deadline, open order), and the
// QPs whose write changed since in a dirty list. NextDeadline and
// HandleTimers first bring the heap up to date from the dirty list, so that
// each costs what changed, not one visit per open QP: a simulated RoCE host
// of an all-to-all has 248 QPs and asks after every frame.

// deadlineQueue is the heap and the dirty list.
type deadlineQueue struct {
	heap  qpHeap
	dirty []*QP
	due   []*QP // HandleTimers' scratch
}

// deadlineState is a QP's place in the engine's deadlineQueue.
type deadlineState struct {
	order   int           // the QP's open order: ties, and HandleTimers' order
	at      time.Duration // its write's deadline since the engine's origin, while in the heap
	index   int           // its index in the heap, -1 when not in it
	isDirty bool
}

// markDirty records that q's write, or q's having one, changed.
func (e *Engine) markDirty(q *QP) {
	if !q.dls.isDirty {
		q.dls.isDirty = true
		e.dls.dirty = append(e.dls.dirty, q)
	}
}

// refreshDeadlines brings the heap up to date with the dirty QPs.
func (e *Engine) refreshDeadlines() {
	d := &e.dls
	for i, q := range d.dirty {
		d.dirty[i] = nil
		q.dls.isDirty = false
		at, ok := time.Duration(0), false
		if t := q.active; t != nil {
			if dl, has := t.cachedDeadline(); has {
				at, ok = t.t0+dl, true
			}
		}
		d.set(q, at, ok)
	}
	d.dirty = d.dirty[:0]
}

// set puts q in the heap at deadline at, or takes it out (ok false).
func (d *deadlineQueue) set(q *QP, at time.Duration, ok bool) {
	switch {
	case !ok:
		if q.dls.index >= 0 {
			heap.Remove(&d.heap, q.dls.index)
		}
	case q.dls.index < 0:
		q.dls.at = at
		heap.Push(&d.heap, q)
	default:
		q.dls.at = at
		heap.Fix(&d.heap, q.dls.index)
	}
}

// next is the earliest deadline in the heap.
func (d *deadlineQueue) next() (time.Duration, bool) {
	if len(d.heap) == 0 {
		return 0, false
	}
	return d.heap[0].dls.at, true
}

// dueAt returns the QPs whose deadline is at or before now, in open order.
func (d *deadlineQueue) dueAt(now time.Duration) []*QP {
	d.due = d.due[:0]
	d.collect(0, now)
	slices.SortFunc(d.due, func(a, b *QP) int { return a.dls.order - b.dls.order })
	return d.due
}

// collect walks the heap from node i down every branch whose root is due
// (a node's children are never earlier than it).
func (d *deadlineQueue) collect(i int, now time.Duration) {
	if i >= len(d.heap) || d.heap[i].dls.at > now {
		return
	}
	d.due = append(d.due, d.heap[i])
	d.collect(2*i+1, now)
	d.collect(2*i+2, now)
}

// qpHeap orders QPs by (deadline, open order) for container/heap; each
// QP knows its index.
type qpHeap []*QP

func (h qpHeap) Len() int { return len(h) }

func (h qpHeap) Less(i, j int) bool {
	a, b := &h[i].dls, &h[j].dls
	if a.at != b.at {
		return a.at < b.at
	}
	return a.order < b.order
}

func (h qpHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].dls.index, h[j].dls.index = i, j
}

func (h *qpHeap) Push(x any) {
	q := x.(*QP)
	q.dls.index = len(*h)
	*h = append(*h, q)
}

func (h *qpHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	q.dls.index = -1
	return q
}
