package transport

import (
	"unsafe"

	"github.com/mrc-fabric/mrcgen/internal/prefetch"
)

// The engine's prefetch hints (package prefetch), for a caller that knows
// which host its next steps will run (a simulator): each stage reads what
// the one before brought in, so a caller asks for them in order, an event
// or so apart. None changes any state, and none takes the engine's lock:
// they are for the goroutine that runs the engine (Config.SingleGoroutine).

// Prefetch asks for the engine's own lines.
func (e *Engine) Prefetch() {
	prefetch.Lines(unsafe.Pointer(e), prefetch.LinesOf(unsafe.Sizeof(*e)))
}

// PrefetchTimers asks, once Prefetch's lines are in, for the head of its
// timer heap, which every frame's NextDeadline reads.
func (e *Engine) PrefetchTimers() {
	if len(e.dls.heap) > 0 {
		prefetch.Line(unsafe.Pointer(&e.dls.heap[0]))
	}
}

// Prefetch asks for the QP's own lines.
func (q *QP) Prefetch() {
	prefetch.Lines(unsafe.Pointer(q), prefetch.LinesOf(unsafe.Sizeof(*q)))
}

// Prefetch asks for the write's own lines.
func (t *Transfer) Prefetch() {
	prefetch.Lines(unsafe.Pointer(t), prefetch.LinesOf(unsafe.Sizeof(*t)))
}

// PrefetchWindow asks, once Prefetch's lines are in, for what a SACK or a
// timer reads of the write's window first: the send log's head, and the
// state of its oldest unacked packet and of its next new one.
func (t *Transfer) PrefetchWindow() {
	if t.sendHead < len(t.sendLog) {
		prefetch.Line(unsafe.Pointer(&t.sendLog[t.sendHead]))
	}
	if len(t.ring) > 0 {
		prefetch.Line(unsafe.Pointer(t.pkt(t.una)))
		prefetch.Line(unsafe.Pointer(t.pkt(t.next)))
	}
}
