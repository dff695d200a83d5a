package transporttest

import (
	"container/heap"
	"time"
)

// Clock is the simulator's virtual clock: Now is the time of the event being
// run. The simulator calls the engines' HandleTimers itself, so After is
// never used; it returns a channel that never fires.
type Clock struct {
	base time.Time
	now  time.Duration
}

// Now returns the virtual time.
func (c *Clock) Now() time.Time { return c.base.Add(c.now) }

// After returns nil: the simulator fires the engines' deadlines itself.
func (c *Clock) After(time.Duration) <-chan time.Time { return nil }

// Elapsed returns the virtual time since the simulation began.
func (c *Clock) Elapsed() time.Duration { return c.now }

type event struct {
	at  time.Duration
	seq uint64 // ties run in the order they were scheduled
	fn  func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = event{}
	*q = old[:len(old)-1]
	return e
}

var _ heap.Interface = (*eventQueue)(nil)
