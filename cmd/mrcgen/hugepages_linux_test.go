package main

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestAnonWritable(t *testing.T) {
	for _, c := range []struct {
		line       string
		start, end uintptr
		ok         bool
	}{
		{"36e0dc000000-36e0e7400000 rw-p 00000000 00:00 0 ", 0x36e0dc000000, 0x36e0e7400000, true},
		{"c000000000-c004000000 rw-p 00000000 00:00 0          [anon: Go: heap]", 0xc000000000, 0xc004000000, true},
		{"36e0e7400000-36e0e8000000 ---p 00000000 00:00 0 ", 0, 0, false},        // reserved
		{"0162f000-016af000 rw-p 0122f000 fe:00 1234 /tmp/mrcgen", 0, 0, false},  // a file
		{"7ffd0000000-7ffd0400000 rw-p 00000000 00:00 0   [stack]", 0, 0, false}, // the stack
		{"36867000-36888000 rw-p 00000000 00:00 0  [heap]", 0, 0, false},         // C's heap, small anyway
		{"7ff94c000000-7ff94c021000 rw-p 00000000 00:00 0 ", 0, 0, false},        // below 2 MiB
		{"zz-yy rw-p 00000000 00:00 0 ", 0, 0, false},
	} {
		s, e, ok := anonWritable([]byte(c.line))
		if s != c.start || e != c.end || ok != c.ok {
			t.Errorf("%q: %#x-%#x %v, want %#x-%#x %v", c.line, s, e, ok, c.start, c.end, c.ok)
		}
	}
}

// TestHugeAdvisor: memory the heap holds in 4 KiB pages is backed by huge
// pages after one pass of the advisor (AnonHugePages grows by most of it),
// and a second pass collapses nothing again.
func TestHugeAdvisor(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		t.Skipf("transparent huge pages are off here (%q, %v)", mode, err)
	}
	buf := make([]byte, 256<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	before := anonHugeKB(t)
	var a hugeAdvisor
	a.advise()
	after := anonHugeKB(t)
	if after-before < 128<<10 {
		t.Errorf("AnonHugePages %d kB -> %d kB after advice: want most of a 256 MiB buffer in huge pages", before, after)
	}
	n := len(a.collapsed)
	a.advise()
	if len(a.collapsed) > n+64 {
		t.Errorf("a second pass collapsed %d more blocks, where nothing had grown much", len(a.collapsed)-n)
	}
	runtime.KeepAlive(buf)
}

func anonHugeKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "AnonHugePages:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				v, err := strconv.Atoi(f[0])
				if err == nil {
					return v
				}
			}
		}
	}
	t.Skip("no AnonHugePages in smaps_rollup")
	return 0
}
