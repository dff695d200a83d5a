package transport

import (
	"context"
	"fmt"
	"math/bits"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// MemoryRegion is registered memory that peers write into: [Base,
// Base+size) under remote key RKey. The engine keeps one bit per byte
// saying whether it has been placed, to tell completion and duplicates; a
// virtual region (RegisterVirtualMR) stores nothing and keeps the placed
// ranges instead.
type MemoryRegion struct {
	Base    uint64
	RKey    uint32
	buf     []byte
	size    uint64
	placed  []uint64 // bit per byte (nil for a virtual region)
	ranges  placedRanges
	setBits int64
}

// Bytes returns the region's memory (nil for a virtual region). Read it
// once the write into it has completed (QP.WaitReceived).
func (m *MemoryRegion) Bytes() []byte { return m.buf }

// Size is the region's length in bytes.
func (m *MemoryRegion) Size() uint64 { return m.size }

// mark sets the placed bits of [lo, hi) and returns how many were not set.
func (m *MemoryRegion) mark(lo, hi uint64) int64 {
	if m.placed == nil {
		n := m.ranges.add(lo, hi)
		m.setBits += n
		return n
	}
	var n int64
	for lo < hi {
		w := lo >> 6
		b := lo & 63
		k := min(64-b, hi-lo)
		mask := ^uint64(0) >> (64 - k) << b
		n += int64(bits.OnesCount64(mask &^ m.placed[w]))
		m.placed[w] |= mask
		lo += k
	}
	m.setBits += n
	return n
}

// full reports whether every byte of [lo, hi) is placed.
func (m *MemoryRegion) full(lo, hi uint64) bool {
	if m.placed == nil {
		return m.ranges.covers(lo, hi)
	}
	for lo < hi {
		w := lo >> 6
		b := lo & 63
		k := min(64-b, hi-lo)
		mask := ^uint64(0) >> (64 - k) << b
		if m.placed[w]&mask != mask {
			return false
		}
		lo += k
	}
	return true
}

// clearRange forgets the placement of [lo, hi), so that a later write into
// the same bytes is tracked afresh.
func (m *MemoryRegion) clearRange(lo, hi uint64) {
	if m.placed == nil {
		m.setBits -= m.ranges.remove(lo, hi)
		return
	}
	for lo < hi {
		w := lo >> 6
		b := lo & 63
		k := min(64-b, hi-lo)
		mask := ^uint64(0) >> (64 - k) << b
		m.setBits -= int64(bits.OnesCount64(m.placed[w] & mask))
		m.placed[w] &^= mask
		lo += k
	}
}

// recvState is a QP's receive side: its counters and the incoming write.
type recvState struct {
	c        RecvCounters
	msg      inbound
	received []Received
	notify   chan struct{} // closed and replaced at each completed write
}

// inbound is the write being received. Its extent is learnt from its first
// packet (first or only opcode: the start address) and its immediate packet
// (last-with-immediate or only-with-immediate: the end).
type inbound struct {
	active              bool
	mr                  *MemoryRegion
	haveFirst, haveLast bool
	start, end          uint64 // region offsets
	packets, dups       int64
	first               time.Duration // since the engine's origin
}

// onData places one data packet: checks the rkey and the bounds (a bad
// packet is counted and ignored), copies the payload to its address, and
// completes the write once its every byte is placed and its immediate
// packet has arrived.
func (q *QP) onData(r *rxFrame, now time.Duration) {
	s := &q.recv
	s.c.Packets++
	mr := q.e.mr(r.rkey)
	if mr == nil {
		s.c.BadRKey++
		return
	}
	size := uint64(r.size)
	if uint64(r.dmaLen) != size || r.vaddr < mr.Base || r.vaddr-mr.Base > mr.size ||
		size > mr.size-(r.vaddr-mr.Base) {
		s.c.OutOfBounds++
		return
	}
	off := r.vaddr - mr.Base
	if mr.buf != nil {
		copy(mr.buf[off:], r.payload)
	}
	fresh := mr.mark(off, off+size)
	m := &s.msg
	if !m.active {
		*m = inbound{active: true, mr: mr, first: now}
	}
	switch {
	case fresh == 0 && size > 0:
		s.c.Duplicates++
		m.dups++
	case fresh < int64(size):
		s.c.Overlaps++
		m.dups++
	}
	if fresh > 0 {
		m.packets++
	}
	s.c.Bytes += fresh
	if m.mr != mr {
		return // a packet of some other write: placed, but not this write's
	}
	switch r.op {
	case mrcpkt.OpWriteFirst, mrcpkt.OpWriteOnly:
		m.haveFirst, m.start = true, off
	case mrcpkt.OpWriteOnlyImm:
		m.haveFirst, m.start = true, off
		m.haveLast, m.end = true, off+size
	case mrcpkt.OpWriteLastImm:
		m.haveLast, m.end = true, off+size
	}
	if !m.haveFirst || !m.haveLast || m.end < m.start {
		return
	}
	if mr.setBits < int64(m.end-m.start) || !mr.full(m.start, m.end) {
		return
	}
	s.c.Messages++
	s.received = append(s.received, Received{
		VAddr:      mr.Base + m.start,
		Length:     int64(m.end - m.start),
		Packets:    m.packets,
		Duplicates: m.dups,
		First:      q.e.at(m.first),
		Done:       q.e.at(now),
	})
	mr.clearRange(m.start, m.end)
	*m = inbound{}
	close(s.notify)
	s.notify = make(chan struct{})
}

// RecvCounters returns the QP's receive counters.
func (q *QP) RecvCounters() RecvCounters {
	q.e.lock()
	defer q.e.unlock()
	return q.recv.c
}

// Received returns the writes received on the QP so far, in completion
// order.
func (q *QP) Received() []Received {
	q.e.lock()
	defer q.e.unlock()
	return append([]Received(nil), q.recv.received...)
}

// WaitReceived blocks until at least n writes have completed on the QP, or
// ctx ends, and returns them.
func (q *QP) WaitReceived(ctx context.Context, n int) ([]Received, error) {
	for {
		q.e.lock()
		if len(q.recv.received) >= n {
			r := append([]Received(nil), q.recv.received...)
			q.e.unlock()
			return r, nil
		}
		ch := q.recv.notify
		q.e.unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return q.Received(), fmt.Errorf("QP %#x on %v: waiting for %d received writes: %w",
				q.cfg.LocalQPN, q.e.cfg.Addr, n, ctx.Err())
		}
	}
}
