package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestReadMemTotal(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text string
		want uint64
	}{
		{"MemTotal:       24593236 kB\nMemFree:        23000000 kB\n", 24593236 * 1024},
		{"MemFree:        23000000 kB\nMemTotal: 1024 kB\n", 1024 * 1024},
		{"MemTotal:       24593236 MB\n", 0},
		{"MemTotal: lots kB\n", 0},
		{"MemFree: 1 kB\n", 0},
	} {
		p := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readMemTotal(p); got != c.want {
			t.Errorf("%q: %d, want %d", c.text, got, c.want)
		}
	}
	if got := readMemTotal(filepath.Join(dir, "none")); got != 0 {
		t.Errorf("a missing file: %d, want 0", got)
	}
}

// TestLimitHeap: without GOMEMLIMIT the heap's limit becomes 3/4 of the
// memory read, and restore puts back the one before; with it, nothing
// changes.
func TestLimitHeap(t *testing.T) {
	total := machineMemory()
	if total == 0 {
		t.Skip("this machine's memory cannot be read (not Linux)")
	}
	before := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "")
	restore := limitHeap()
	if got, want := debug.SetMemoryLimit(-1), int64(total/4*3); got < want-1 || got > want+1 {
		t.Errorf("limit %d, want 3/4 of %d", got, total)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("restored limit %d, want %d", got, before)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	limitHeap()()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set the limit became %d, want %d kept", got, before)
	}
}
