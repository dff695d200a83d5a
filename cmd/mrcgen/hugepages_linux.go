package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// madvCollapse is Linux's MADV_COLLAPSE (6.1): back a range with huge
// pages now, copying what 4 KiB pages it holds (the syscall package
// predates it).
const madvCollapse = 25

const hugePage = 2 << 20

// adviseHugePages asks Linux to back the process's anonymous memory (the
// Go heap) with transparent huge pages, every `every` until the returned
// stop is called: MADV_HUGEPAGE on each writable private mapping of 2 MiB
// or more, and MADV_COLLAPSE on the 2 MiB blocks of it not collapsed
// before, which turns the 4 KiB pages the heap already touched into huge
// ones. A simulation of the whole of mrc-131k touches 10 GB at random,
// and with 4 KiB pages nearly every access misses the TLB as well as the
// caches: the same run took 17 min 24 s with huge pages set system-wide
// against 23 min 54 s without. Go's heap asks for none, and Linux's default policy
// (transparent_hugepage "madvise", as here) gives none unasked. The
// advice is only advice: kernels without it, or with huge pages "never",
// refuse it and nothing changes.
func adviseHugePages(every time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var a hugeAdvisor
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			a.advise()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// hugeAdvisor remembers the 2 MiB blocks it has collapsed, so that each
// pass collapses only what the heap mapped since.
type hugeAdvisor struct {
	collapsed map[uintptr]bool
}

func (a *hugeAdvisor) advise() {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	if a.collapsed == nil {
		a.collapsed = map[uintptr]bool{}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		start, end, ok := anonWritable(sc.Bytes())
		if !ok {
			continue
		}
		lo, hi := (start+hugePage-1)&^(hugePage-1), end&^(hugePage-1)
		if lo >= hi {
			continue
		}
		madvise(start, end-start, syscall.MADV_HUGEPAGE)
		// Collapse each block not collapsed yet, one by one: a call for a
		// range stops at the first block it cannot collapse.
		for p := lo; p < hi; p += hugePage {
			if !a.collapsed[p] {
				a.collapsed[p] = true
				madvise(p, hugePage, madvCollapse)
			}
		}
	}
}

// anonWritable reads a line of /proc/self/maps: the range of a private,
// writable mapping of no file (the heap, "[anon: ...]" names included).
func anonWritable(line []byte) (start, end uintptr, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 5 || !bytes.Equal(f[1], []byte("rw-p")) || !bytes.Equal(f[4], []byte("0")) {
		return 0, 0, false
	}
	if len(f) > 5 && !bytes.HasPrefix(f[5], []byte("[anon")) {
		return 0, 0, false // a file, the stack, [heap] (C's), [vvar]...
	}
	r := bytes.SplitN(f[0], []byte("-"), 2)
	if len(r) != 2 {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(r[0]), 16, 64)
	e, err2 := strconv.ParseUint(string(r[1]), 16, 64)
	if err1 != nil || err2 != nil || e <= s || e-s < hugePage {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}

// madvise gives Linux the advice; a refusal changes nothing, and is
// ignored.
func madvise(addr, n uintptr, advice int) {
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, addr, n, uintptr(advice))
}
