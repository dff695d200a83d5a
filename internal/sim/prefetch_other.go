//go:build !amd64

package sim

import "unsafe"

// prefetch and prefetchLines do nothing where the simulator has no
// prefetch instruction (prefetch_amd64.s).
func prefetch(unsafe.Pointer) {}

func prefetchLines(unsafe.Pointer, uintptr) {}
