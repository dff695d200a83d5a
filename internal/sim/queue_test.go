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

// TestQueueLongTies: thousands of events at a few times in one bucket, as
// hosts that start together make (sortTies' case), of every kind, port and
// time on the way, with many equal ties: the queue pops exactly the
// reference order, equal ties in the order they were scheduled.
func TestQueueLongTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	q := newQueue()
	var ref refHeap
	kinds := []uint8{evTimer, evPortFree, evArrive, evArrive, evPause}
	for seq := uint64(1); seq <= 20_000; seq++ {
		e := event{at: 3<<bucketShift + 1000*rng.Int64N(3), arg: int32(seq),
			kind: kinds[rng.IntN(len(kinds))], port: int16(rng.IntN(8)), gen: uint32(rng.IntN(4))}
		q.push(e)
		heap.Push(&ref, seqEvent{e, seq})
	}
	for i := 0; q.len() > 0; i++ {
		e, _ := q.pop()
		want := heap.Pop(&ref).(seqEvent)
		if e != want.event {
			t.Fatalf("pop %d: got %+v, want %+v", i, e, want.event)
		}
	}
}

// TestQueueSpares: a finished bucket's memory goes to buckets near the one
// being run, not to one far ahead holding a timer, and the queue keeps few
// spares: on mrc-1k under load the spares had been half the live heap.
func TestQueueSpares(t *testing.T) {
	q := newQueue()
	for b := int64(0); b < 20; b++ {
		for i := 0; i < 5000; i++ {
			q.push(event{at: b<<bucketShift + int64(i)})
		}
	}
	for q.len() > 0 {
		q.pop()
	}
	if len(q.spare) > maxSpares {
		t.Errorf("%d spares kept, want at most %d", len(q.spare), maxSpares)
	}
	if len(q.spare) == 0 {
		t.Fatal("no spare kept")
	}
	far := q.cur + spareReach + 100
	q.push(event{at: far << bucketShift})
	if c := cap(q.ring[far&ringMask]); c > 16 {
		t.Errorf("a bucket %d ahead took %d events' memory, want a new small one", far-q.cur, c)
	}
	near := q.cur + 1
	q.push(event{at: near << bucketShift})
	if c := cap(q.ring[near&ringMask]); c < 5000 {
		t.Errorf("the next bucket took %d events' memory, want a spare's (5000 or more)", c)
	}
	// A near bucket that filled its own small slice (while no spare was
	// kept) takes a spare when it grows, with what it held.
	kept := q.spare
	q.spare = nil
	next := q.cur + 2
	for i := range 16 {
		q.push(event{at: next<<bucketShift + int64(i)})
	}
	q.spare = kept
	q.push(event{at: next<<bucketShift + 16})
	if cb := q.ring[next&ringMask]; cap(cb) < 5000 || len(cb) != 17 || cb[0].at != next<<bucketShift || cb[16].at != next<<bucketShift+16 {
		t.Errorf("a full near bucket grew to %d events' memory holding %d, want a spare's (5000 or more) holding its 17", cap(cb), len(cb))
	}
}

// TestQueueAhead: with nothing scheduled meanwhile, the event ahead(k)
// names is the one pop returns k+1 pops later while they share a bucket,
// and ahead names nothing beyond the bucket.
func TestQueueAhead(t *testing.T) {
	q := newQueue()
	const n = 100 // more than insertion sort's few: the radix sort's bucket
	for i := n - 1; i >= 0; i-- {
		q.push(event{at: int64(i) * 100, arg: int32(i)})
	}
	q.push(event{at: 1 << bucketShift, arg: n}) // the next bucket
	for i := 0; i < n; i++ {
		e, ok := q.pop()
		if !ok || e.arg != int32(i) {
			t.Fatalf("pop %d: %+v %v", i, e, ok)
		}
		for k := 0; k < 4; k++ {
			a := q.ahead(k)
			if j := i + 1 + k; j < n {
				if a == nil || a.arg != int32(j) {
					t.Fatalf("after pop %d: ahead(%d) is %+v, want #%d", i, k, a, j)
				}
			} else if a != nil {
				t.Fatalf("after pop %d: ahead(%d) is %+v beyond the bucket", i, k, a)
			}
		}
	}
}
