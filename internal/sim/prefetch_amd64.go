package sim

import "unsafe"

// prefetch asks the processor to bring the cache line at p in, without
// waiting for it: the run loop names the packet of the event after the one
// it runs, whose first touch was a cache miss of every hop at scale.
//
//go:noescape
func prefetch(p unsafe.Pointer)
