package sim

import "unsafe"

// prefetch asks the processor to bring the cache line at p in, without
// waiting for it: the run loop names the memory the events after the one
// it runs will read first (prefetchAhead), each a cache miss at scale.
//
//go:noescape
func prefetch(p unsafe.Pointer)

// prefetchLines is prefetch of the n cache lines from p on: a struct of
// several lines in one call.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n uintptr)
