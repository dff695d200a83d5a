package prefetch

import "testing"

// TestLinesOf: a value spans one line more than it fills, as it may start
// anywhere in a line.
func TestLinesOf(t *testing.T) {
	for _, c := range []struct{ size, want uintptr }{{0, 1}, {1, 2}, {64, 2}, {65, 3}, {192, 4}, {456, 9}} {
		if got := LinesOf(c.size); got != c.want {
			t.Errorf("LinesOf(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}
