package sim

import (
	"cmp"
	"slices"
)

// Event kinds, in the order events of the same time run at a device
// (event.tie): what changes the fabric first (a fault at time t acts on
// what is sent at t), then a host's timer (a deadline its engine set for
// t has come before anything arriving at t is read), frames leaving (a
// frame that ends at t has left when another arrives at t, as the default
// queue has it), flows starting, and arrivals.
const (
	evFault    uint8 = iota // a fault begins or ends
	evConverge              // routing converges after a fault (RoCE)
	evRepair                // RoCE: T0s next to a failure repair their ECMP groups
	evTimer                 // a host's transport timer
	evPortFree              // PFC: a port has sent its frame
	evFlow                  // a flow starts
	evArrive                // a packet reaches a device's port
	evPause                 // PFC: a PAUSE or RESUME frame reaches a port
)

// event is one thing to happen at a time (picoseconds) at a device. Events
// at the same time run by their kind and then their port (tie), and only
// events with the same time, port and kind in the order they were
// scheduled: those come from one device (a port has one peer), which
// scheduled them in an order of its own. So the order of a device's events
// does not depend on the order other devices ran theirs in, nor on which
// worker of a parallel run scheduled them (parallel.go). A bucket of the
// ring keeps the scheduling order under its sort (see sortFrom), and a
// heap's events carry their scheduling number (seqEvent). 24 bytes: the
// ring moves every event several times.
type event struct {
	at   int64
	dev  int32
	arg  int32 // a packet, a flow, a fault
	gen  uint32
	port int16
	kind uint8
}

// seqEvent is an event in a heap, with its scheduling number.
type seqEvent struct {
	event
	seq uint64
}

// tie orders events of the same time: by kind; arrivals by how long they
// were on their way (gen: the picoseconds from their sending to their
// arrival), the one sent first first, as a FIFO would have them; then in
// an order drawn from the time and the port (as a switch's arbiter serves
// its input ports in turn, where a fixed order would always serve port 0
// first, and always trim the last port's packet when a queue reaches the
// threshold); and by port, when the draws are the same.
func (e *event) tie() (hi, lo uint64) {
	hi = uint64(e.kind) << 32
	if e.kind == evArrive {
		hi |= uint64(^e.gen)
	}
	lo = uint64(uint16(e.port))
	if e.kind == evArrive {
		lo |= mix64(uint64(e.at)^uint64(uint16(e.port))<<48) >> 48 << 16
	}
	return hi, lo
}

// sameTie: e and f have the same time and tie.
func (e *event) sameTie(f *event) bool {
	if e.at != f.at {
		return false
	}
	eh, el := e.tie()
	fh, fl := f.tie()
	return eh == fh && el == fl
}

// runsBefore: e runs before f, f having been scheduled first (or both in
// the same order by other means) when the two have the same time and tie.
func (e *event) runsBefore(f *event) bool {
	if e.at != f.at {
		return e.at < f.at
	}
	eh, el := e.tie()
	fh, fl := f.tie()
	if eh != fh {
		return eh < fh
	}
	return el < fl
}

func (a *seqEvent) before(b *seqEvent) bool {
	if !a.sameTie(&b.event) {
		return a.runsBefore(&b.event)
	}
	return a.seq < b.seq
}

// queue is a calendar queue: events within the horizon sit in a ring of
// buckets (1<<bucketShift picoseconds wide); the bucket being run is
// sorted once, when reached. Events beyond the horizon (timers, flow starts,
// faults) wait in a heap. Push and pop are O(1) amortized for the packet
// events that make up nearly all of a run, where a heap would pay
// log2(packets in flight) for each.
type queue struct {
	ring   [][]event
	cur    int64 // absolute number of the bucket being run
	head   int   // next event of the current bucket
	sorted bool  // the current bucket is sorted from head on
	inRing int
	far    farHeap
	late   farHeap // events for the bucket being run, scheduled after it was sorted
	seq    uint64
	// last is where pop took its event from, for unpop: the bucket
	// (lastSeq < 0) or late, with its scheduling number.
	lastSeq int64
	tmp     []event
	keys    []tieKey // sortTies' keys
	// spare are the slices of run buckets, for empty buckets to take
	// instead of growing their own from nothing.
	spare [][]event
}

const (
	bucketShift = 16 // 65.5 ns buckets
	ringBits    = 15 // 32,768 buckets: a 2.1 ms horizon
	ringSize    = 1 << ringBits
	ringMask    = ringSize - 1
)

func newQueue() *queue { return &queue{ring: make([][]event, ringSize)} }

func (q *queue) len() int { return q.inRing + len(q.far) + len(q.late) }

// push schedules e (its at must not be before the event being run).
func (q *queue) push(e event) {
	q.seq++
	b := e.at >> bucketShift
	switch {
	case b >= q.cur+ringSize:
		q.far.push(seqEvent{e, q.seq})
	case b <= q.cur && q.sorted:
		// The bucket being run is sorted: newcomers wait in a heap beside
		// it, and pop takes the earlier of the two (a newcomer scheduled
		// after every event of the bucket goes after those of its time).
		q.late.push(seqEvent{e, q.seq})
	case b <= q.cur:
		q.add(q.cur, e)
		q.inRing++
	default:
		q.add(b, e)
		q.inRing++
	}
}

// appendDoubling is append(s, x), but a full slice doubles its capacity
// (to at least least elements): append grows a slice of more than 256 elements by a
// quarter, and a busy bucket of the ring (thousands of events at a
// thousand hosts) was copied a dozen times on its way to its size, half of
// a run's allocation.
func appendDoubling[T any](s []T, x T, least int) []T {
	if len(s) == cap(s) {
		n := make([]T, len(s), max(2*cap(s), least))
		copy(n, s)
		s = n
	}
	return append(s, x)
}

// each calls fn for every event still to run, in no particular order.
func (q *queue) each(fn func(event)) {
	for i, b := range q.ring {
		if int64(i) == q.cur&ringMask {
			b = b[q.head:]
		}
		for _, e := range b {
			fn(e)
		}
	}
	for _, h := range []farHeap{q.far, q.late} {
		for _, e := range h {
			fn(e.event)
		}
	}
}

// spareReach is how many buckets ahead of the one being run an empty
// bucket takes a spare's memory, and maxSpares how many spares the queue
// keeps. A spare has the size of the busiest bucket it served: handed to a
// bucket far ahead, which holds a timer or two, it sat there unused until
// that bucket's time, and at a thousand hosts under load such buckets held
// 20 times the memory of every event in the queue.
const (
	spareReach = 64 // 4.2 µs: packets' arrivals, which fill buckets
	maxSpares  = 4
)

// add appends e to bucket b. A bucket near the one being run that is
// empty or full takes a spare larger than what it holds rather than grow
// its own: at the whole of mrc-131k a bucket ends with about half a
// million events (12 MB), and buckets that had their first event while far
// ahead (a timer) grew theirs from a few by doubling, each leaving about
// its final size behind as garbage: some 8 GB of it at each of the
// collections two minutes apart, 17 GB of heap for 9 GB live.
func (q *queue) add(b int64, e event) {
	i := b & ringMask
	cb := q.ring[i]
	if len(cb) == cap(cb) && b < q.cur+spareReach {
		if n := len(q.spare); n > 0 && cap(q.spare[n-1]) > len(cb) {
			cb = append(q.spare[n-1], cb...)
			q.spare = q.spare[:n-1]
		}
	}
	q.ring[i] = appendDoubling(cb, e, 16)
}

// ahead is the event k places after the one pop returns next, when both
// are in the sorted bucket being run (a guess: a newcomer may still go
// before them), or nil.
func (q *queue) ahead(k int) *event {
	cb := q.ring[q.cur&ringMask]
	if i := q.head + k; q.sorted && i < len(cb) {
		return &cb[i]
	}
	return nil
}

// pop returns the next event, or false when none is left.
func (q *queue) pop() (event, bool) {
	for {
		cb := q.ring[q.cur&ringMask]
		if q.head < len(cb) {
			if !q.sorted {
				q.sortFrom(cb, q.head)
				q.sorted = true
			}
			if len(q.late) > 0 && q.late[0].runsBefore(&cb[q.head]) {
				return q.popLate(), true
			}
			e := cb[q.head]
			q.head++
			q.inRing--
			q.lastSeq = -1
			return e, true
		}
		if len(q.late) > 0 {
			return q.popLate(), true
		}
		// The bucket is done: its slice becomes a spare, move on.
		if cap(cb) > 0 && len(q.spare) < maxSpares {
			q.spare = append(q.spare, cb[:0])
		}
		q.ring[q.cur&ringMask] = nil
		q.head, q.sorted = 0, false
		if q.inRing == 0 {
			if len(q.far) == 0 {
				return event{}, false
			}
			q.cur = q.far[0].at >> bucketShift
		} else {
			q.cur++
		}
		// Far events now within the horizon join the ring.
		for len(q.far) > 0 && q.far[0].at>>bucketShift < q.cur+ringSize {
			e := q.far.pop().event
			b := e.at >> bucketShift
			q.add(b, e)
			q.inRing++
		}
	}
}

func (q *queue) popLate() event {
	e := q.late.pop()
	q.lastSeq = int64(e.seq)
	return e.event
}

// unpop puts back e, the event pop returned last, as if it had never been
// popped: it runs next, and before any event scheduled after it with the
// same time and tie. Nothing may be pushed between the pop and the unpop.
func (q *queue) unpop(e event) {
	if q.lastSeq < 0 {
		q.head--
		q.inRing++
		return
	}
	q.late.push(seqEvent{e, uint64(q.lastSeq)})
}

// nextAt is the time of the next event (false: none is left).
func (q *queue) nextAt() (int64, bool) {
	e, ok := q.pop()
	if ok {
		q.unpop(e)
	}
	return e.at, ok
}

// farHeap is a min-heap of events by (at, seq). Its own push and pop, not
// container/heap's: those pass each event through an interface, which
// allocated on every pop.
type farHeap []seqEvent

func (h *farHeap) push(e seqEvent) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].before(&a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *farHeap) pop() seqEvent {
	a := *h
	e := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a[r].before(&a[l]) {
			m = r
		}
		if !a[m].before(&a[i]) {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return e
}

// sortFrom sorts b[from:] by time and tie, keeping the order of equal
// times and ties: the order the events joined the bucket, which is their
// scheduling order (a bucket's far events join it, in order, before any
// other event can). Insertion sort for a few, else a stable LSD radix sort
// on the time's offset within the bucket (two bytes), and then each run of
// equal times sorted by tie: by insertion when it is short, else by
// sortTies.
func (q *queue) sortFrom(b []event, from int) {
	s := b[from:]
	if len(s) < 48 {
		insertionSort(s)
		return
	}
	if cap(q.tmp) < len(s) {
		q.tmp = make([]event, len(s))
	}
	tmp := q.tmp[:len(s)]
	src, dst := s, tmp
	for shift := 0; shift < bucketShift; shift += 8 {
		var count [257]int
		for i := range src {
			count[(src[i].at>>shift)&0xff+1]++
		}
		for i := 1; i < 257; i++ {
			count[i] += count[i-1]
		}
		for i := range src {
			k := (src[i].at >> shift) & 0xff
			dst[count[k]] = src[i]
			count[k]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j].at == s[i].at {
			j++
		}
		if j-i <= shortTieRun {
			insertionSort(s[i:j])
		} else {
			q.sortTies(s[i:j])
		}
		i = j
	}
}

// shortTieRun is the longest run of equal times sortFrom sorts by
// insertion.
const shortTieRun = 16

// insertionSort sorts s by time and tie, keeping the order of equal ones.
func insertionSort(s []event) {
	for i := 1; i < len(s); i++ {
		if !s[i].runsBefore(&s[i-1]) {
			continue
		}
		e := s[i]
		j := i
		for ; j > 0 && e.runsBefore(&s[j-1]); j-- {
			s[j] = s[j-1]
		}
		s[j] = e
	}
}

// tieKey is an event's tie with its place in the bucket, which orders
// equal ties as they were scheduled.
type tieKey struct {
	hi, lo uint64
	i      int
}

// sortTies sorts s, events of one time, by tie, keeping the order of
// equal ties: a run of equal times is long where many hosts do the same
// at the same time (every host of a permutation starting at once sends
// its packets in step), and an insertion sort of it was quadratic (a
// third of a run's time on 2,048 of mrc-131k's hosts).
func (q *queue) sortTies(s []event) {
	keys := q.keys[:0]
	for i := range s {
		hi, lo := s[i].tie()
		keys = append(keys, tieKey{hi, lo, i})
	}
	slices.SortFunc(keys, func(a, b tieKey) int {
		if c := cmp.Compare(a.hi, b.hi); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	tmp := q.tmp[:len(s)]
	for i, k := range keys {
		tmp[i] = s[k.i]
	}
	copy(s, tmp)
	q.keys = keys
}
