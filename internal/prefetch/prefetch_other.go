//go:build !amd64

package prefetch

import "unsafe"

// Line and Lines do nothing where there is no prefetch instruction for
// them (prefetch_amd64.s).
func Line(unsafe.Pointer) {}

func Lines(unsafe.Pointer, uintptr) {}
