package sim

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// TestQueueOrder: the calendar queue pops exactly the order of a heap by
// (time, scheduling order), events scheduled while others run included,
// near and far beyond the horizon.
func TestQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	q := newQueue()
	var ref refHeap // container/heap's, independent of the queue's own heap
	var seq uint64
	push := func(at int64) {
		seq++
		q.push(event{at: at, arg: int32(seq)})
		heap.Push(&ref, seqEvent{event{at: at, arg: int32(seq)}, seq})
	}
	now := int64(0)
	for i := 0; i < 1000; i++ {
		push(rng.Int64N(1 << 30))
	}
	// Dense buckets too (the radix sort's case), with equal times.
	for i := 0; i < 5000; i++ {
		push(1<<20 + rng.Int64N(1<<(bucketShift+2))&^7)
	}
	pops := 0
	for q.len() > 0 {
		e, ok := q.pop()
		want := heap.Pop(&ref).(seqEvent)
		if !ok || e.at != want.at || e.arg != want.arg {
			t.Fatalf("pop %d: got at %d #%d, want at %d #%d", pops, e.at, e.arg, want.at, want.arg)
		}
		if e.at < now {
			t.Fatalf("time went back: %d after %d", e.at, now)
		}
		now = e.at
		pops++
		// Schedule more, mostly soon (same bucket, same time), some far.
		for k := rng.IntN(3); k > 0 && pops < 200_000; k-- {
			switch rng.IntN(4) {
			case 0:
				push(now)
			case 1:
				push(now + rng.Int64N(1<<bucketShift))
			case 2:
				push(now + rng.Int64N(1<<(bucketShift+ringBits+2)))
			default:
				push(now + rng.Int64N(1<<20))
			}
		}
	}
	if len(ref) != 0 || pops < 6000 {
		t.Fatalf("%d popped, %d left in the reference", pops, len(ref))
	}
}

// refHeap is the reference order: container/heap by (at, seq).
type refHeap []seqEvent

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i].before(&h[j]) }
func (h refHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)        { *h = append(*h, x.(seqEvent)) }
func (h *refHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
