package prefetch

import "unsafe"

// Line asks for the cache line at p, without waiting for it (PREFETCHT0):
// a hint the processor may drop, which changes no memory.
//
//go:noescape
func Line(p unsafe.Pointer)

// Lines asks for the n cache lines from p on, in one call.
//
//go:noescape
func Lines(p unsafe.Pointer, n uintptr)
