package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesOf: a value spans one line more than it fills, as it may start
// anywhere in a line.
func TestLinesOf(t *testing.T) {
	for _, c := range []struct{ size, want uintptr }{{0, 1}, {1, 2}, {64, 2}, {65, 3}, {192, 4}, {456, 9}} {
		if got := LinesOf(c.size); got != c.want {
			t.Errorf("LinesOf(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

// TestLines: asking for lines changes no byte of them, nor of the memory
// after them; none asked for (n 0) reads nothing, not even p.
func TestLines(t *testing.T) {
	b := make([]byte, 1024)
	for i := range b {
		b[i] = byte(i)
	}
	Lines(unsafe.Pointer(&b[0]), 8)
	Line(unsafe.Pointer(&b[512]))
	Lines(nil, 0)
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d is %d after the prefetch", i, b[i])
		}
	}
}
