package transport

import (
	"runtime"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// newVirtualSender is newSender on an engine with VirtualPayload: writes
// of Length bytes, frames that are headers alone.
func newVirtualSender(t testing.TB, cfg QPConfig) (*Engine, *QP, *testClock) {
	t.Helper()
	return newSenderOn(t, Config{VirtualPayload: true}, cfg)
}

// totalAlloc is the bytes the program has allocated so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestWriteStateIsPerWindow: what a write allocates for its packets'
// state does not grow with its length. A 1 GiB write (262,144 packets of
// 4 KiB) allocates what a write of four windows does, once started and
// while it runs: per-packet state for the whole write made a simulation
// of a thousand hosts run out of memory.
func TestWriteStateIsPerWindow(t *testing.T) {
	const window, segment = 64, 4096
	start := func(packets int) (*Engine, *Transfer, uint64) {
		e, q, _ := newVirtualSender(t, QPConfig{Window: window, Segment: segment, CongestionControl: CCOff})
		before := totalAlloc()
		tr, err := q.Write(WriteRequest{Length: packets * segment, RKey: 1})
		if err != nil {
			t.Fatal(err)
		}
		return e, tr, totalAlloc() - before
	}
	_, _, small := start(4 * window)
	e, tr, large := start(1 << 18)
	if large > small+4096 {
		t.Errorf("starting a write of 262,144 packets allocated %d bytes, one of %d packets %d: the state grows with the write", large, 4*window, small)
	}

	// Run 64 windows of the large write, each packet answered in order:
	// past the first windows, nothing more is allocated (frames are
	// recycled, SACKs patched in place; the send log, which nothing asks
	// for a deadline here, is compacted in place).
	sack := sackFrame(t, 0, 0, 0)
	var out [][]byte
	run := func(packets int) {
		for done := 0; done < packets; {
			out = e.TakeOutput(out[:0])
			if len(out) == 0 {
				t.Fatal("nothing to send, write not complete")
			}
			for _, f := range out {
				psn := get24(f[offBTH+9:])
				put24(sack[offBTH+9:], psn)
				put24(sack[offExt:], psn)
				put24(sack[offExt+4:], PSNAdd(psn, 1))
				if err := e.HandleFrame(sack); err != nil {
					t.Fatal(err)
				}
				done++
			}
			e.Recycle(out)
		}
	}
	run(16 * window)
	before := totalAlloc()
	run(64 * window)
	if grown := totalAlloc() - before; grown > 4096 {
		t.Errorf("%d packets of a running write allocated %d bytes, want none", 64*window, grown)
	}
	if tr.una < 80*window-2*window || len(tr.ring) != 2*window || cap(tr.sendLog) > 8*window {
		t.Errorf("una %d, ring of %d, send log of capacity %d: want una near %d, a ring of %d, a log of at most %d", tr.una, len(tr.ring), cap(tr.sendLog), 80*window, 2*window, 8*window)
	}
}

// TestForgottenPacketAnswer: a SACK for a packet whose ring entry a later
// packet has taken (sent more than the ring's size before next) is a
// forgotten packet's answer, as onSACK documents: the packet is acked, the
// SACK counts as no duplicate, gives no RTT or late sample, and DCTCP
// takes it for the answer to a send older than its last cut or round: a
// mark on it cuts nothing. Its NACK (a trimmed copy) cuts nothing either.
// While the packet's entry is still its own (a window below una), the
// same late copy is a duplicate, widens the reorder window, and its mark
// cuts.
func TestForgottenPacketAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		through int // packets answered in order after the resend's SACK
		forgot  bool
	}{
		{"just below una", 7, false}, // next = 16: packet 0's entry is its own
		{"ring reused", 8, true},     // next = 17: packet 16 took it
		{"far below una", 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 8, CongestionControl: DCTCP, NoTailProbe: true,
				InitialRTO: 10 * time.Millisecond, MinRTO: 5 * time.Millisecond})
			tr, nic := startWrite(t, e, q, 400)
			if len(tr.ring) != 16 {
				t.Fatalf("ring of %d, want 16: twice the window of 8", len(tr.ring))
			}
			// Packet 0's first copy is late; the SACK-gap rule resends it,
			// and the resend's SACK acks it.
			clk.advance(time.Millisecond)
			for i := 1; i <= 4; i++ {
				handle(t, e, nic.deliver(t, i))
			}
			at, _ := e.NextDeadline()
			clk.t = at
			e.HandleTimers()
			if got := psns(takeSent(t, e)); len(got) != 1 || got[0] != tr.StartPSN() {
				t.Fatalf("SACK-gap resent %v, want packet 0", got)
			}
			clk.advance(time.Millisecond)
			handle(t, e, nic.deliver(t, 0))
			for i := 5; i <= tc.through; i++ {
				handle(t, e, nic.deliver(t, i))
			}
			takeSent(t, e)
			if want := tc.through + 1 + 8; tr.una != tc.through+1 || tr.next != want {
				t.Fatalf("una %d next %d, want %d and %d", tr.una, tr.next, tc.through+1, want)
			}
			if tr.remembered(0) == tc.forgot {
				t.Fatalf("packet 0 remembered: %v, want %v", tr.remembered(0), !tc.forgot)
			}

			// The first copy arrives, marked.
			before := tr.Stats()
			srtt, samples, window, cwnd := tr.rtt.srtt, tr.rtt.samples, tr.rtt.reorderWindow(), q.cc.cwnd
			clk.advance(time.Millisecond)
			late := nic.deliver(t, 0)
			late[offExt+3] |= mrcpkt.MarkSkipOnce << 6
			handle(t, e, late)
			s := tr.Stats()
			if s.Congestion.Marks != before.Congestion.Marks+1 {
				t.Errorf("marks %d, want %d", s.Congestion.Marks, before.Congestion.Marks+1)
			}
			if tr.rtt.srtt != srtt || tr.rtt.samples != samples {
				t.Errorf("an answer to an acked packet gave an RTT sample: SRTT %v (was %v), %d samples (was %d)", tr.rtt.srtt, srtt, tr.rtt.samples, samples)
			}
			if got := takeSent(t, e); len(got) != 0 {
				t.Errorf("a late answer sent %+v, want nothing", got)
			}
			if tc.forgot {
				if s.Duplicates != before.Duplicates || tr.rtt.reorderWindow() != window || q.cc.cwnd != cwnd || s.Congestion.ECNCuts != before.Congestion.ECNCuts {
					t.Errorf("forgotten packet's answer: %d duplicates (was %d), reorder window %v (was %v), cwnd %v (was %v), %d ECN cuts (was %d): want all unchanged",
						s.Duplicates, before.Duplicates, tr.rtt.reorderWindow(), window, q.cc.cwnd, cwnd, s.Congestion.ECNCuts, before.Congestion.ECNCuts)
				}
				// Its trimmed copy: no cut, no resend.
				handle(t, e, nackFrame(t, tr.StartPSN(), mrcpkt.NACKTrimmed))
				if s := tr.Stats(); s.Congestion.TrimCuts != before.Congestion.TrimCuts || q.cc.cwnd != cwnd {
					t.Errorf("forgotten packet's NACK: %d trim cuts (was %d), cwnd %v (was %v): want no cut", s.Congestion.TrimCuts, before.Congestion.TrimCuts, q.cc.cwnd, cwnd)
				}
				if got := takeSent(t, e); len(got) != 0 {
					t.Errorf("a forgotten packet's NACK sent %+v, want nothing", got)
				}
				return
			}
			if s.Duplicates != before.Duplicates+1 || tr.rtt.reorderWindow() <= window || s.Congestion.ECNCuts != before.Congestion.ECNCuts+1 {
				t.Errorf("late copy of a remembered packet: %d duplicates (was %d), reorder window %v (was %v), %d ECN cuts (was %d): want one more duplicate, a wider window, a cut",
					s.Duplicates, before.Duplicates, tr.rtt.reorderWindow(), window, s.Congestion.ECNCuts, before.Congestion.ECNCuts)
			}
		})
	}
}

// TestLargeWindow: a window of 4,096 packets (the NIC's receive window
// made larger) over a write that wraps the ring of 8,192 entries twice,
// with losses the SACK-gap rule repairs: every packet arrives, and the
// state stays the window's.
func TestLargeWindow(t *testing.T) {
	const window, packets = 4096, 2*8192 + 100
	e, q, clk := newVirtualSender(t, QPConfig{CongestionControl: CCOff, ReceiveWindow: window, Window: window})
	tr, err := q.Write(WriteRequest{Length: packets * DefaultSegment, RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.ring) != 2*window {
		t.Fatalf("ring of %d, want %d", len(tr.ring), 2*window)
	}
	nic := newRefNIC(tr.StartPSN())
	lost := map[int]bool{100: true, 5000: true, 9000: true, 16400: true}
	for step := 0; !tr.isComplete; step++ {
		if step > 100*packets {
			t.Fatalf("not complete after %d steps: una %d next %d", step, tr.una, tr.next)
		}
		out := e.TakeOutput(nil)
		if len(out) == 0 {
			at, ok := e.NextDeadline()
			if !ok {
				t.Fatalf("nothing to send, no deadline: una %d next %d", tr.una, tr.next)
			}
			clk.t = at
			e.HandleTimers()
			continue
		}
		for _, f := range out {
			clk.advance(50 * time.Nanosecond)
			i := PSNDiff(get24(f[offBTH+9:]), tr.StartPSN())
			if lost[i] {
				delete(lost, i) // the first copy only
				continue
			}
			handle(t, e, nic.deliver(t, i))
		}
		if tr.next-tr.una > window {
			t.Fatalf("%d packets in flight, more than the window of %d", tr.next-tr.una, window)
		}
	}
	if nic.expected != packets {
		t.Errorf("the NIC has %d packets in order, want %d", nic.expected, packets)
	}
	if s := tr.Stats(); s.Retransmits.SACKGap < 4 || s.PacketsSent > packets+8 {
		t.Errorf("resends %+v, %d packets sent: want the 4 losses resent by the SACK-gap rule, little else", s.Retransmits, s.PacketsSent)
	}
	if cap(tr.sendLog) > 8*window {
		t.Errorf("send log of capacity %d, want at most %d", cap(tr.sendLog), 8*window)
	}
}

// BenchmarkWriteStart1GiB: starting a 1 GiB virtual write (262,144
// packets of 4 KiB), its first window sent; its B/op is the write's
// state, the window's and not the write's.
func BenchmarkWriteStart1GiB(b *testing.B) {
	e, q, _ := newVirtualSender(b, QPConfig{Segment: 4096})
	var out [][]byte
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.Write(WriteRequest{Length: 1 << 30, RKey: 1}); err != nil {
			b.Fatal(err)
		}
		out = e.TakeOutput(out[:0])
		e.Recycle(out)
		q.active = nil
	}
}

// TestSendLogStaysShort: a packet trimmed and waiting for room in the
// congestion window keeps its send at the send log's head, as it counts
// again once resent; behind it, the rest of the window, lost and resent
// at every timeout, must not lengthen the log without bound.
func TestSendLogStaysShort(t *testing.T) {
	const window = 8
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: window, CongestionControl: DCTCP, NoTailProbe: true,
		MinRTO: time.Millisecond, MaxRTO: time.Millisecond})
	tr, _ := startWrite(t, e, q, 1000)
	handle(t, e, nackFrame(t, tr.StartPSN(), mrcpkt.NACKTrimmed))
	if !tr.isOut(0) || len(takeSent(t, e)) != 0 {
		t.Fatal("packet 0's trimmed copy: want it out and waiting for the window")
	}
	for range 200 {
		at, ok := e.NextDeadline()
		if !ok {
			t.Fatal("no deadline")
		}
		clk.t = at
		e.HandleTimers()
		takeSent(t, e) // lost
	}
	if s := tr.Stats(); s.Retransmits.Timeout < 200*(window-1) || !tr.isOut(0) {
		t.Fatalf("%d timeout resends, packet 0 out: %v; want the other %d resent at each of 200 timeouts, packet 0 waiting", s.Retransmits.Timeout, tr.isOut(0), window-1)
	}
	if n := len(tr.sendLog) - tr.sendHead; n > 4*64 {
		t.Errorf("send log of %d entries after %d sends, want at most %d", n, tr.Stats().PacketsSent, 4*64)
	}
}
