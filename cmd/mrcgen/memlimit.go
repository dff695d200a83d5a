package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// heapShare is the share of the machine's memory (or of its cgroup's
// limit, when lower) that a simulation's Go heap is kept under, unless
// GOMEMLIMIT says otherwise.
const heapShare = 0.75

// limitHeap keeps the Go heap under heapShare of the memory this process
// may use, and returns a function that restores the limit it found. The
// collector's default lets the heap grow to twice what is live before it
// runs: a whole-fabric simulation with 10 GB live then asks for 20 GB,
// more than a 24 GiB machine can give beside anything else, while under
// the limit the collector runs a little more often and the run fits. A
// GOMEMLIMIT in the environment is the user's choice and is kept; so is
// any limit when the memory cannot be read.
func limitHeap() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	total := machineMemory()
	if total == 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(int64(float64(total) * heapShare))
	return func() { debug.SetMemoryLimit(prev) }
}

// machineMemory is the bytes this process may use: the machine's memory
// (/proc/meminfo's MemTotal), or its cgroup's limit (v2 memory.max) when
// that is lower; 0 when neither can be read (not Linux).
func machineMemory() uint64 {
	total := readMemTotal("/proc/meminfo")
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
			total = v // "max" (no limit) does not parse
		}
	}
	return total
}

// readMemTotal is MemTotal from a meminfo file, in bytes (0: unreadable).
func readMemTotal(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return 0
		}
		return kb * 1024
	}
	return 0
}
