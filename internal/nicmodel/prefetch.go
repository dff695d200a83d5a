package nicmodel

import (
	"unsafe"

	"github.com/mrc-fabric/mrcgen/internal/prefetch"
)

// The NIC's prefetch hints (package prefetch), for a caller that knows
// which NIC its next steps will run: each stage reads what the one before
// brought in, so a caller asks for them in this order, an event or so
// apart. None changes the NIC's state.

// prefetchQPs is how many QP state indexes PrefetchRegIndex and
// PrefetchRegs ask for (the first ones: a host of a permutation uses two).
const prefetchQPs = 4

// Prefetch asks for the NIC's own lines up to its counters: the scratch
// pointer, its tables and the registers' index, which every frame reads.
func (n *NIC) Prefetch() {
	prefetch.Lines(unsafe.Pointer(n), prefetch.LinesOf(unsafe.Offsetof(n.c)))
}

// PrefetchRegIndex asks, once Prefetch's lines are in, for the index of
// its QPs' registers.
func (n *NIC) PrefetchRegIndex() {
	if len(n.regs) > 0 {
		prefetch.Line(unsafe.Pointer(&n.regs[0]))
	}
}

// PrefetchRegs asks, once PrefetchRegIndex's line is in, for the
// registers of the first QP state indexes.
func (n *NIC) PrefetchRegs() {
	for _, r := range n.regs[:min(len(n.regs), prefetchQPs)] {
		if r != nil {
			prefetch.Lines(unsafe.Pointer(r), prefetch.LinesOf(unsafe.Sizeof(*r)))
		}
	}
}
