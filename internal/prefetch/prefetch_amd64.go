package prefetch

import "unsafe"

// Line asks for the cache line at p, without waiting for it (PREFETCHT0).
// p need not be valid memory: a prefetch never faults.
//
//go:noescape
func Line(p unsafe.Pointer)

// Lines asks for the n cache lines from p on, in one call.
//
//go:noescape
func Lines(p unsafe.Pointer, n uintptr)
