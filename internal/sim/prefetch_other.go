//go:build !amd64

package sim

import "unsafe"

// prefetch does nothing where the simulator has no prefetch instruction
// (prefetch_amd64.s).
func prefetch(unsafe.Pointer) {}
