package transport

import (
	"encoding/binary"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// sackPatcher builds SACK frames by patching a frame mrcpkt serialised, so
// that the benchmarks measure the engine, not the codec.
type sackPatcher []byte

func newSACKPatcher(b *testing.B) sackPatcher { return sackFrame(b, 0, 0, 0) }

func (p sackPatcher) frame(psn, cum uint32, bitmap uint64) []byte {
	f := append([]byte(nil), p...)
	put24(f[offBTH+9:], psn)
	put24(f[offExt:], cum)
	put24(f[offExt+4:], PSNAdd(cum, 1))
	binary.BigEndian.PutUint64(f[offExt+8:], bitmap)
	return f
}

// BenchmarkSenderPerPacket: one op is one data packet built and queued and
// its in-order SACK handled (window 64, 1 KiB payloads).
func BenchmarkSenderPerPacket(b *testing.B) {
	e, q, clk := newSender(b, QPConfig{StartPSN: 0xFFFF00})
	sp := newSACKPatcher(b)
	data := make([]byte, 1024*DefaultSegment)
	var out [][]byte
	b.ReportAllocs()
	b.SetBytes(DefaultSegment)
	done := 0
	for done < b.N {
		if _, err := q.Write(WriteRequest{Data: data, RKey: 1}); err != nil {
			b.Fatal(err)
		}
		for q.active != nil && done < b.N {
			out = e.TakeOutput(out[:0])
			if len(out) == 0 {
				b.Fatal("nothing to send, write not complete")
			}
			for _, f := range out {
				psn := get24(f[offBTH+9:])
				clk.advance(1000)
				if err := e.HandleFrame(sp.frame(psn, psn, 0)); err != nil {
					b.Fatal(err)
				}
				done++
			}
		}
		if q.active != nil { // b.N reached mid-write
			q.active = nil
		}
	}
}

// BenchmarkSenderPerPacketPaced: as BenchmarkSenderPerPacket on a RoCE QP
// held below line rate by DCQCN (every 32nd SACK marked, a CNP at most
// every 4 µs): each packet also waits for its pacer deadline, so one op
// adds a NextDeadline and a HandleTimers.
func BenchmarkSenderPerPacketPaced(b *testing.B) {
	e, q, clk := newSender(b, QPConfig{Mode: RoCE, StartPSN: 0xFFFF00, LineRate: 100e9})
	sp := newSACKPatcher(b)
	data := make([]byte, 1024*DefaultSegment)
	var out [][]byte
	b.ReportAllocs()
	b.SetBytes(DefaultSegment)
	done, timers := 0, 0
	for done < b.N {
		if _, err := q.Write(WriteRequest{Data: data, RKey: 1}); err != nil {
			b.Fatal(err)
		}
		for q.active != nil && done < b.N {
			out = e.TakeOutput(out[:0])
			if len(out) == 0 {
				at, ok := e.NextDeadline()
				if !ok {
					b.Fatal("nothing to send and no deadline, write not complete")
				}
				clk.t = at
				e.HandleTimers()
				timers++
				continue
			}
			for _, f := range out {
				psn := get24(f[offBTH+9:])
				clk.advance(1000)
				a := sp.frame(psn, psn, 0)
				if done%32 == 0 {
					a[offExt+3] |= mrcpkt.MarkSkipOnce << 6
				}
				if err := e.HandleFrame(a); err != nil {
					b.Fatal(err)
				}
				done++
			}
		}
		if q.active != nil { // b.N reached mid-write
			q.active = nil
		}
	}
	if b.N > 1000 && timers < b.N/2 {
		b.Fatalf("%d pacer releases for %d packets: the QP was not paced", timers, b.N)
	}
}

// BenchmarkSACKWithHole: SACKs while PSN una is missing and the whole
// window above it is acked: the SACK-gap scan's worst case (one op = one
// SACK).
func BenchmarkSACKWithHole(b *testing.B) {
	e, q, clk := newSender(b, QPConfig{InitialRTO: 1 << 62, MinRTO: 1 << 62, MaxRTO: 1 << 62})
	tr, err := q.Write(WriteRequest{Data: make([]byte, 64*DefaultSegment), RKey: 1})
	if err != nil {
		b.Fatal(err)
	}
	e.TakeOutput(nil)
	sp := newSACKPatcher(b)
	cum := PSNAdd(tr.start, -1)
	f := sp.frame(PSNAdd(tr.start, 63), cum, ^uint64(0)&^1)
	b.ReportAllocs()
	for b.Loop() {
		clk.advance(1000)
		if err := e.HandleFrame(f); err != nil {
			b.Fatal(err)
		}
	}
	if tr.una != 0 || tr.hi != 63 {
		b.Fatalf("una %d hi %d", tr.una, tr.hi)
	}
}

// BenchmarkReceiverPerPacket: one op is one 1 KiB data packet read, checked
// and placed.
func BenchmarkReceiverPerPacket(b *testing.B) {
	clk := &testClock{}
	e, err := New(Config{Addr: addrA, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	q, err := e.OpenQP(QPConfig{LocalQPN: qpnA, PeerQPN: qpnB, Peer: addrB})
	if err != nil {
		b.Fatal(err)
	}
	const size = 256 * DefaultSegment
	if _, err := e.RegisterMR(0x1000, 9, make([]byte, size)); err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Addr: addrB, Clock: &testClock{}})
	if err != nil {
		b.Fatal(err)
	}
	sq, err := s.OpenQP(QPConfig{LocalQPN: qpnB, PeerQPN: qpnA, Peer: addrA})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sq.Write(WriteRequest{Data: make([]byte, size), RemoteVAddr: 0x1000, RKey: 9}); err != nil {
		b.Fatal(err)
	}
	sp := newSACKPatcher(b)
	var frames [][]byte
	for len(frames) < size/DefaultSegment {
		out := s.TakeOutput(nil)
		frames = append(frames, out...)
		if len(out) == 0 {
			b.Fatal("sender stalled")
		}
		for _, f := range out { // ack each so the sender sends the rest
			psn := get24(f[offBTH+9:])
			a := sp.frame(psn, psn, 0)
			put24(a[offBTH+5:], qpnB)
			if err := s.HandleFrame(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.SetBytes(DefaultSegment)
	i := 0
	for b.Loop() {
		if err := e.HandleFrame(frames[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(frames) {
			i = 0
		}
	}
	if b.N >= len(frames) && q.RecvCounters().Messages == 0 {
		b.Fatal("no write completed")
	}
}
