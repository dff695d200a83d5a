package transport

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

func TestOpcodesAndRETH(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 100, StartPSN: 0xFFFFFE})
	if _, err := q.Write(WriteRequest{Data: make([]byte, 250), RemoteVAddr: 0x1000, RKey: 7}); err != nil {
		t.Fatal(err)
	}
	got := takeSent(t, e)
	want := []sent{
		{0xFFFFFE, mrcpkt.OpWriteFirst, false, false, 0x1000, 100},
		{0xFFFFFF, mrcpkt.OpWriteMiddle, false, false, 0x1064, 100},
		{0x000000, mrcpkt.OpWriteLastImm, false, true, 0x10C8, 50}, // the last asks for an answer
	}
	if !slices.Equal(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}

	e, q, _ = newSender(t, QPConfig{Segment: 100})
	if _, err := q.Write(WriteRequest{Data: make([]byte, 100), RemoteVAddr: 0x1000, RKey: 7}); err != nil {
		t.Fatal(err)
	}
	if got := takeSent(t, e); len(got) != 1 || got[0].op != mrcpkt.OpWriteOnlyImm || got[0].dmaLen != 100 {
		t.Errorf("one-packet write sent %+v, want one 0xCB of 100 bytes", got)
	}
}

// The window and the NIC's receive window: never a PSN at or beyond
// cum_psn + 65, whatever Window says.
func TestWindow(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 8, StartPSN: 0xFFFFFC})
	tr, err := q.Write(WriteRequest{Data: make([]byte, 1000), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := takeSent(t, e); len(got) != 8 {
		t.Fatalf("first burst %d packets, want the window of 8", len(got))
	}
	nic := newRefNIC(tr.StartPSN())
	// Ack packet 0 only: one more may go (PSN index 8).
	handle(t, e, nic.deliver(t, 0))
	if got := takeSent(t, e); !slices.Equal(psns(got), []uint32{PSNAdd(0xFFFFFC, 8)}) {
		t.Errorf("after ack of 0 sent %v, want [index 8]", psns(got))
	}
	// Packets 2..8 arrive but 1 does not: cum stays at 0, nothing new.
	for i := 2; i <= 8; i++ {
		handle(t, e, nic.deliver(t, i))
	}
	for _, s := range takeSent(t, e) {
		if !s.retx {
			t.Errorf("new PSN %#x sent while cum_psn stalls at the window edge", s.psn)
		}
	}

	if err := (&QPConfig{Peer: addrB, Window: 65}).fill(); err == nil {
		t.Error("window 65 accepted")
	}
}

// A SACK whose cum_psn and bitmap cross PSN 0: the sender maps them to the
// right packets and resends exactly the holes the SACK-gap rule finds.
func TestSACKWraparound(t *testing.T) {
	start := uint32(0xFFFFF0)
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 40, StartPSN: start, ReorderThreshold: 3})
	if _, err := q.Write(WriteRequest{Data: make([]byte, 400), RKey: 1}); err != nil {
		t.Fatal(err)
	}
	takeSent(t, e)
	// Arrived: indices 0..13 (PSN 0xFFFFF0..0xFFFFFD), 15 (0xFFFFFF),
	// 17..20 (PSN 1..4). Missing: 14 (0xFFFFFE), 16 (0x000000).
	// cum = 0xFFFFFD, base = 0xFFFFFE, bits 1 (0xFFFFFF), 3..6 (1..4).
	bm := uint64(1<<1 | 1<<3 | 1<<4 | 1<<5 | 1<<6)
	handle(t, e, sackFrame(t, PSNAdd(start, 20), 0xFFFFFD, bm))
	got := takeSent(t, e)
	var retx []uint32
	for _, s := range got {
		if s.retx {
			retx = append(retx, s.psn)
		}
	}
	// 14 has 5 later acked, 16 has 4: both lost by D=3.
	if !slices.Equal(retx, []uint32{0xFFFFFE, 0x000000}) {
		t.Errorf("resent %#x, want [0xfffffe 0x0]", retx)
	}
	tr := q.active
	if tr.una != 14 || tr.hi != 20 {
		t.Errorf("una %d hi %d, want 14 and 20", tr.una, tr.hi)
	}
	// The window slid by 14: new packets 40..53 went out, none at or
	// beyond cum_psn + 65.
	for _, s := range got {
		if d := PSNDiff(s.psn, 0xFFFFFD); d >= 65 {
			t.Errorf("PSN %#x is %d past cum_psn", s.psn, d)
		}
	}
}

// The SACK-gap rule: D-1 later acks are not enough, D are, once the packet
// is older than the reorder window (5/4 largest recent RTT + SRTT/4), which a
// timer enforces; once resent, a packet is not judged again on evidence
// from packets sent before its resend, and not resent by this rule again
// within an RTT.
func TestSACKGapRule(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 20, ReorderThreshold: 3, InitialRTO: time.Second, MinRTO: time.Second})
	tr, nic := startWrite(t, e, q, 200)
	clk.advance(time.Millisecond) // every RTT sample is 1ms: window 1.5ms
	handle(t, e, nic.deliver(t, 0))
	// 1 is lost. 2 and 3 arrive: 2 later acks.
	handle(t, e, nic.deliver(t, 2))
	handle(t, e, nic.deliver(t, 3))
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("resent %v on %d later acks, D is 3", psns(got), 2)
	}
	// The third later ack: lost by count, but 1 is only 1ms old.
	handle(t, e, nic.deliver(t, 4))
	// 5, 6, 7 lost too; 8, 9, 10 arrive.
	for i := 8; i <= 10; i++ {
		handle(t, e, nic.deliver(t, i))
	}
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("resent %v within the reorder window", psns(got))
	}
	at, ok := e.NextDeadline()
	if want := tr.e.at(tr.t0).Add(1500 * time.Microsecond); !ok || !at.Equal(want) {
		t.Fatalf("deadline %v after start, want the reorder window 1.5ms", at.Sub(tr.e.at(tr.t0)))
	}
	clk.t = at
	e.HandleTimers()
	if got := takeSent(t, e); !slices.Equal(psns(got), []uint32{1, 5, 6, 7}) {
		t.Fatalf("at the reorder deadline resent %v, want [1 5 6 7]", psns(got))
	}
	// The resent 5, 6, 7 arrive soon after: they were sent after 1's
	// resend, so 1 (lost again) has its evidence, but within one RTT of
	// its last resend: the rule waits, with a deadline.
	clk.advance(200 * time.Microsecond)
	for i := 5; i <= 7; i++ {
		handle(t, e, nic.deliver(t, i))
	}
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("resent %v within an RTT of the last SACK-gap resend", psns(got))
	}
	at, _ = e.NextDeadline()
	if d := at.Sub(tr.e.at(tr.t0)); d != 3000*time.Microsecond {
		t.Fatalf("deadline %v after start, want 3ms (resent at 1.5ms + reorder window)", d)
	}
	clk.t = at
	e.HandleTimers()
	if got := takeSent(t, e); !slices.Equal(psns(got), []uint32{1}) {
		t.Fatalf("at the deadline resent %v, want [1]", psns(got))
	}
	if s := tr.Stats(); s.Retransmits.SACKGap != 5 || s.Retransmits.Total() != 5 {
		t.Errorf("retransmits %+v, want 5 SACK gap", s.Retransmits)
	}
}

// Without congestion control a NACK resends at once, unless the SACK state
// already covers the PSN; a stale NACK costs nothing.
func TestTrimNACK(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 10, CongestionControl: CCOff})
	tr, nic := startWrite(t, e, q, 100)
	handle(t, e, nackFrame(t, 3, mrcpkt.NACKTrimmed))
	if got := takeSent(t, e); len(got) != 1 || got[0].psn != 3 || !got[0].retx {
		t.Fatalf("NACK for 3: sent %+v", got)
	}
	handle(t, e, nackFrame(t, 4, mrcpkt.NACKTrimmedLastHop))
	if got := takeSent(t, e); len(got) != 1 || got[0].psn != 4 {
		t.Fatalf("NACK TRIMMED_LASTHOP for 4: sent %+v", got)
	}
	handle(t, e, nic.deliver(t, 6)) // 6 is in the bitmap now
	takeSent(t, e)
	handle(t, e, nackFrame(t, 6, mrcpkt.NACKTrimmed))
	if got := takeSent(t, e); len(got) != 0 {
		t.Errorf("NACK for a SACKed PSN resent %v", psns(got))
	}
	if s := tr.Stats(); s.Retransmits.TrimNACK != 2 || s.NACKs != 3 {
		t.Errorf("stats %+v, want 2 trim resends of 3 NACKs", s)
	}
}

func TestRTTEstimator(t *testing.T) {
	e := newRTTEstimator(10*time.Millisecond, time.Millisecond, 100*time.Millisecond)
	if e.rto != 10*time.Millisecond || e.rtt() != 10*time.Millisecond {
		t.Fatalf("initial RTO %v rtt %v", e.rto, e.rtt())
	}
	e.sample(2 * time.Millisecond) // SRTT 2, RTTVAR 1, RTO 2+4 = 6
	if e.srtt != 2*time.Millisecond || e.rttvar != time.Millisecond || e.rto != 6*time.Millisecond {
		t.Fatalf("after 2ms: srtt %v rttvar %v rto %v", e.srtt, e.rttvar, e.rto)
	}
	e.sample(4 * time.Millisecond) // RTTVAR 3/4*1+1/4*2 = 1.25, SRTT 7/8*2+1/8*4 = 2.25, RTO 7.25
	if e.srtt != 2250*time.Microsecond || e.rttvar != 1250*time.Microsecond || e.rto != 7250*time.Microsecond {
		t.Fatalf("after 4ms: srtt %v rttvar %v rto %v", e.srtt, e.rttvar, e.rto)
	}
	e.backoff()
	if e.rto != 14500*time.Microsecond {
		t.Errorf("backoff: %v", e.rto)
	}
	for range 10 {
		e.backoff()
	}
	if e.rto != 100*time.Millisecond {
		t.Errorf("backoff cap: %v", e.rto)
	}
	// A late copy (DSACK) widens the reorder window, not SRTT.
	srtt := e.srtt
	e.late(8 * time.Millisecond)
	if e.srtt != srtt || e.reorderWindow() != 10*time.Millisecond+srtt/4 {
		t.Errorf("late 8ms: srtt %v (was %v), reorder window %v, want 5/4 x 8ms + srtt/4", e.srtt, srtt, e.reorderWindow())
	}
	// It lasts lateBuckets buckets of samples at full value, halving
	// after each further lateBuckets with no late copy; the RTT samples'
	// own maximum is forgotten after 64 to 128.
	for range (lateBuckets - 1) * maxRTTBucket {
		e.sample(10 * time.Microsecond)
	}
	if e.reorderWindow() < 10*time.Millisecond {
		t.Errorf("reorder window %v after %d samples of 10µs, want the late copy's 8ms x 5/4 still", e.reorderWindow(), (lateBuckets-1)*maxRTTBucket)
	}
	for range 12 * lateBuckets * maxRTTBucket {
		e.sample(10 * time.Microsecond)
	}
	if w := e.reorderWindow(); w > 20*time.Microsecond {
		t.Errorf("reorder window %v after %d more samples of 10µs, want the late copy forgotten", w, 12*lateBuckets*maxRTTBucket)
	}
	for range 50 {
		e.sample(10 * time.Microsecond)
	}
	if e.rto != time.Millisecond {
		t.Errorf("floor: RTO %v after 10µs samples, want the 1ms floor", e.rto)
	}
}

// MaxRTO caps every duration a timer is built from, however late a copy
// or slow a path.
func TestRTTEstimatorCap(t *testing.T) {
	e := newRTTEstimator(10*time.Millisecond, time.Millisecond, 100*time.Millisecond)
	e.sample(time.Millisecond)
	e.late(10 * time.Second)
	if w := e.reorderWindow(); w != 100*time.Millisecond {
		t.Errorf("reorder window %v after a copy 10s late, want the 100ms cap", w)
	}
	for range 20 {
		e.sample(time.Second)
	}
	if e.rtt() != 100*time.Millisecond || e.rto != 100*time.Millisecond || e.reorderWindow() != 100*time.Millisecond {
		t.Errorf("after 1s samples: rtt %v, RTO %v, reorder window %v, want 100ms each", e.rtt(), e.rto, e.reorderWindow())
	}
}

// The timeout resends what is unacked and overdue, doubles the RTO, and
// leaves SACKed packets alone.
func TestTimeout(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 4, InitialRTO: 5 * time.Millisecond, MinRTO: time.Millisecond})
	tr, nic := startWrite(t, e, q, 40)
	clk.advance(time.Millisecond)
	handle(t, e, nic.deliver(t, 2)) // RTT sample 1ms: RTO = 1 + 4*0.5 = 3ms
	at, ok := e.NextDeadline()
	if !ok || at.Sub(tr.e.at(tr.t0)) != 3*time.Millisecond {
		t.Fatalf("deadline %v after start (ok %v), want 3ms", at.Sub(tr.e.at(tr.t0)), ok)
	}
	clk.advance(time.Millisecond)
	e.HandleTimers()
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("early timer resent %v", psns(got))
	}
	clk.advance(time.Millisecond) // 3ms after the sends
	e.HandleTimers()
	got := takeSent(t, e)
	if !slices.Equal(psns(got), []uint32{0, 1, 3}) {
		t.Errorf("timeout resent %v, want [0 1 3] (2 is SACKed)", psns(got))
	}
	if s := tr.Stats(); s.Retransmits.Timeout != 3 || s.RTO != 6*time.Millisecond {
		t.Errorf("timeouts %d RTO %v, want 3 and the doubled 6ms", s.Retransmits.Timeout, s.RTO)
	}
	for _, i := range []int{0, 1, 3} {
		if tr.Complete() {
			t.Fatalf("write complete before PSN %d is acked", i)
		}
		handle(t, e, nic.deliver(t, i))
	}
	select {
	case <-tr.Done():
	default:
		t.Fatal("write not complete with every PSN acked")
	}
	if !tr.Complete() {
		t.Fatal("Complete false with Done closed")
	}
	if _, ok := e.NextDeadline(); ok {
		t.Error("a deadline remains after completion")
	}
}

// RoCE: NO_TRIM data; go-back-N from cum_psn + 1 on a sequence error, at
// most once per RTT and once per hole before an RTO; the bitmap is not
// trusted.
func TestRoCEGoBackN(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Mode: RoCE, Segment: 10, Window: 8, InitialRTO: 10 * time.Millisecond, MinRTO: time.Millisecond})
	tr, err := q.Write(WriteRequest{Data: make([]byte, 200), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	fs := e.TakeOutput(nil)
	p, err := mrcpkt.Parse(fs[0])
	if err != nil || p.Inner.DSCP != 5 {
		t.Fatalf("RoCE data DSCP %d (err %v), want NO_TRIM 5", p.Inner.DSCP, err)
	}
	nic := newRefNIC(tr.StartPSN())
	clk.advance(time.Millisecond)
	handle(t, e, nic.deliver(t, 0))
	takeSent(t, e) // the window slides by one
	// 1 lost; 2 arrives: sequence error, go back to 1: 1..8 again.
	clk.advance(100 * time.Microsecond)
	handle(t, e, nic.deliver(t, 2))
	got := takeSent(t, e)
	if !slices.Equal(psns(got), []uint32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("go-back-N sent %v, want 1..8 (2 included: RoCE has no SACK)", psns(got))
	}
	// 3 arrives right after: within one RTT, no second go-back-N.
	handle(t, e, nic.deliver(t, 3))
	if got := takeSent(t, e); len(got) != 0 {
		t.Errorf("second go-back-N within an RTT: %v", psns(got))
	}
	// Later but the same hole, before an RTO: still none.
	clk.advance(2 * time.Millisecond)
	handle(t, e, nic.deliver(t, 4))
	if got := takeSent(t, e); len(got) != 0 {
		t.Errorf("second go-back-N for the same hole before an RTO: %v", psns(got))
	}
	if s := tr.Stats(); s.Retransmits.SeqError != 8 || s.Retransmits.Total() != 8 {
		t.Errorf("retransmits %+v, want 8 sequence-error resends", s.Retransmits)
	}
	// The hole fills: cum jumps to 4, the window moves on.
	handle(t, e, nic.deliver(t, 1))
	if tr.una != 5 {
		t.Errorf("una %d after the hole filled, want 5", tr.una)
	}
}

// Issue 22: MaxRTO caps every timer. With MaxRTO 100ms, packet 0 is resent
// by 25 timer rounds, the 25th copy is acked, then the copy sent before it
// arrives late (a duplicate SACK). That copy's delay widens the reorder
// window, but the next timer is still at most MaxRTO out.
func TestMaxRTOCapsEveryTimer(t *testing.T) {
	const maxRTO = 100 * time.Millisecond
	for _, mode := range []Mode{MRC, RoCE} {
		t.Run(mode.String(), func(t *testing.T) {
			e, q, clk := newSender(t, QPConfig{Mode: mode, Segment: 10, Window: 3,
				InitialRTO: 10 * time.Millisecond, MinRTO: time.Millisecond, MaxRTO: maxRTO, NoTailProbe: true})
			tr, nic := startWrite(t, e, q, 30)
			clk.advance(time.Millisecond)
			handle(t, e, nic.deliver(t, 1)) // RTT 1ms; 0 and 2 are lost, again and again
			takeSent(t, e)
			for round := 1; round <= 25; round++ {
				at, ok := e.NextDeadline()
				if !ok {
					t.Fatalf("round %d: no deadline", round)
				}
				if d := at.Sub(clk.t); d > maxRTO {
					t.Fatalf("round %d: timer %v out, MaxRTO is %v", round, d, maxRTO)
				}
				clk.t = at
				e.HandleTimers()
				if got := psns(takeSent(t, e)); !slices.Contains(got, 0) || !slices.Contains(got, 2) {
					t.Fatalf("round %d: timer resent %v, want 0 and 2 among them", round, got)
				}
			}
			clk.advance(time.Millisecond)
			handle(t, e, nic.deliver(t, 0)) // the 25th resend of 0 arrives
			clk.advance(time.Millisecond)
			handle(t, e, nic.deliver(t, 0)) // and the 24th, late
			if s := tr.Stats(); s.Duplicates != 1 || s.Complete {
				t.Fatalf("duplicates %d complete %v, want 1 and 2 still missing", s.Duplicates, s.Complete)
			}
			at, ok := e.NextDeadline()
			if !ok {
				t.Fatal("no deadline with packet 2 missing")
			}
			if d := at.Sub(clk.t); d > maxRTO {
				t.Errorf("after the duplicate SACK the next timer is %v out, MaxRTO is %v (RTO %v, reorder window %v)",
					d, maxRTO, tr.rtt.rto, tr.rtt.reorderWindow())
			}
		})
	}
}

// A duplicate SACK measures the late copy's delay from the send before the
// last one (the copy whose resend proved needless), not from the first send.
// Here the first copy of packet 0 was trimmed and NACKed; the second, sent
// at 1ms, is late; the timer sends a third at 6ms, acked at 7ms; the second
// arrives at 8ms: 7ms late, not the 8ms since the first send.
func TestDuplicateSACKMeasuresFromTheSendBefore(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 8,
		InitialRTO: 10 * time.Millisecond, MinRTO: 5 * time.Millisecond, NoTailProbe: true})
	tr, nic := startWrite(t, e, q, 90)
	clk.advance(time.Millisecond)
	handle(t, e, nackFrame(t, 0, mrcpkt.NACKTrimmed))
	for i := 1; i < 8; i++ {
		handle(t, e, nic.deliver(t, i)) // RTT 1ms
	}
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{0}) {
		t.Fatalf("after the NACK sent %v, want [0]", got)
	}
	at, _ := e.NextDeadline()
	if d := at.Sub(tr.e.at(tr.t0)); d != 6*time.Millisecond {
		t.Fatalf("timer %v after start, want 6ms (resent at 1ms + the 5ms RTO floor)", d)
	}
	clk.t = at
	e.HandleTimers()
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{0}) {
		t.Fatalf("timer resent %v, want [0]", got)
	}
	clk.advance(time.Millisecond)
	handle(t, e, nic.deliver(t, 0)) // the third copy, at 7ms
	clk.advance(time.Millisecond)
	handle(t, e, nic.deliver(t, 0)) // the second, at 8ms
	if s := tr.Stats(); s.Duplicates != 1 || s.Complete {
		t.Fatalf("duplicates %d complete %v, want 1 and packet 8 in flight", s.Duplicates, s.Complete)
	}
	// 5/4 x 7ms + SRTT/4 (1ms/4).
	if w, want := tr.rtt.reorderWindow(), 8750*time.Microsecond+250*time.Microsecond; w != want {
		t.Errorf("reorder window %v, want %v: the late copy was sent at 1ms", w, want)
	}
}

// Under DCTCP a trimmed packet's resend takes its turn in the congestion
// window: it leaves the window's count when NACKed, waits while the window
// is full, and goes ahead of new packets once acks make room.
func TestTrimNACKWaitsForTheWindow(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 10})
	tr, err := q.Write(WriteRequest{Data: make([]byte, 200), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := takeSent(t, e); len(got) != 10 {
		t.Fatalf("first window: %d packets", len(got))
	}
	nic := newRefNIC(tr.StartPSN())
	// The trim halves the window (alpha starts at 1): 5 with 9 still in
	// the network, so nothing may go.
	handle(t, e, nackFrame(t, 3, mrcpkt.NACKTrimmed))
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("NACK with the window full: sent %v", psns(got))
	}
	// Acks for 0-2 and 4-7 leave 8 and 9 in the network: room for three,
	// the trimmed 3 first.
	for _, psn := range []int{0, 1, 2, 4, 5, 6, 7} {
		handle(t, e, nic.deliver(t, psn))
	}
	got := takeSent(t, e)
	if len(got) == 0 || got[0].psn != 3 || !got[0].retx {
		t.Fatalf("after the acks: sent %+v, want 3 resent first", got)
	}
	for _, g := range got[1:] {
		if g.retx || g.psn < 10 {
			t.Errorf("after the resend: %+v, want new packets only", g)
		}
	}
	if s := tr.Stats(); s.Retransmits.TrimNACK != 1 {
		t.Errorf("trim resends %d, want 1", s.Retransmits.TrimNACK)
	}
}

// The tail-loss probe (RACK-TLP): the last two packets of a write are
// lost, so no D later packets will ever be acked after them. Two SRTTs
// after the last SACK the newest unacked packet goes again, asking for an
// answer; its SACK vouches for the SACK-gap rule, which resends the other
// once it is older than the reorder window. No RTO fires. Without the probe
// the next timer is the RTO's.
func TestTailLossProbe(t *testing.T) {
	for _, probe := range []bool{true, false} {
		t.Run(fmt.Sprintf("probe=%v", probe), func(t *testing.T) {
			e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 8, CongestionControl: CCOff,
				InitialRTO: 10 * time.Millisecond, MinRTO: 5 * time.Millisecond, NoTailProbe: !probe})
			tr, nic := startWrite(t, e, q, 80)
			clk.advance(time.Millisecond)
			for i := range 6 {
				handle(t, e, nic.deliver(t, i)) // RTT 1ms; 6 and 7 are lost
			}
			at, ok := e.NextDeadline()
			if !ok {
				t.Fatal("no deadline with 6 and 7 missing")
			}
			if !probe {
				if d := at.Sub(tr.e.at(tr.t0)); d < 5*time.Millisecond {
					t.Fatalf("without the probe the timer is %v after start, want the RTO (at least the 5ms floor)", d)
				}
				return
			}
			if d := at.Sub(tr.e.at(tr.t0)); d != 3*time.Millisecond {
				t.Fatalf("probe due %v after start, want 3ms (the last SACK at 1ms + 2 SRTT)", d)
			}
			clk.t = at
			e.HandleTimers()
			got := takeSent(t, e)
			if len(got) != 1 || got[0].psn != PSNAdd(tr.StartPSN(), 7) || !got[0].retx || !got[0].ackReq {
				t.Fatalf("probe sent %+v, want packet 7 resent asking for an answer", got)
			}
			clk.advance(time.Millisecond)
			handle(t, e, nic.deliver(t, 7))
			if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{PSNAdd(tr.StartPSN(), 6)}) {
				t.Fatalf("after the probe's SACK sent %v, want packet 6 (older than the reorder window)", got)
			}
			handle(t, e, nic.deliver(t, 6))
			s := tr.Stats()
			if !s.Complete || s.Retransmits.TailProbe != 1 || s.Retransmits.SACKGap != 1 || s.Retransmits.Timeout != 0 {
				t.Errorf("complete %v, resends %+v: want complete, 1 tail probe, 1 SACK gap, no timeout", s.Complete, s.Retransmits)
			}
		})
	}
}

// A SACK answering a packet that another packet's SACK already acked is
// not a duplicate: the two SACKs crossed on the way back. Packet 0 is lost
// and resent; packet 5's SACK, sent after the resend arrived, comes back
// before the resend's own. Only a second answer to packet 0, its late
// first copy arriving, is a duplicate, and only that widens the reorder
// window.
func TestCrossedSACKsAreNotDuplicates(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 8, CongestionControl: CCOff, NoTailProbe: true,
		InitialRTO: 10 * time.Millisecond, MinRTO: 5 * time.Millisecond})
	tr, nic := startWrite(t, e, q, 80)
	clk.advance(time.Millisecond)
	for i := 1; i <= 4; i++ {
		handle(t, e, nic.deliver(t, i)) // RTT 1ms; 0 is late
	}
	at, _ := e.NextDeadline()
	clk.t = at
	e.HandleTimers()
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{PSNAdd(tr.StartPSN(), 0)}) {
		t.Fatalf("SACK-gap resent %v, want packet 0", got)
	}
	clk.advance(time.Millisecond)
	answer0 := nic.deliver(t, 0) // the resend arrives...
	handle(t, e, nic.deliver(t, 5))
	window := tr.rtt.reorderWindow() // with packet 5's RTT sample
	clk.advance(time.Millisecond)
	handle(t, e, answer0) // ...its answer a millisecond after packet 5's
	if s := tr.Stats(); s.Duplicates != 0 || tr.rtt.reorderWindow() != window {
		t.Fatalf("crossed SACKs: %d duplicates, reorder window %v (was %v); want none and unchanged", s.Duplicates, tr.rtt.reorderWindow(), window)
	}
	clk.advance(time.Millisecond)
	handle(t, e, nic.deliver(t, 0)) // the first copy, late
	if s := tr.Stats(); s.Duplicates != 1 || tr.rtt.reorderWindow() <= window {
		t.Errorf("a late copy: %d duplicates, reorder window %v (was %v); want 1 and wider", s.Duplicates, tr.rtt.reorderWindow(), window)
	}
}

// TestRecycledHeadersAreReused: frames given back with Recycle carry the
// next header-only data frames (a simulator's virtual payloads), each one
// whole and correct, and frames of another size are not kept.
func TestRecycledHeadersAreReused(t *testing.T) {
	clk := &testClock{t: time.Unix(1_000_000, 0)}
	e, err := New(Config{Addr: addrA, Clock: clk, VirtualPayload: true})
	if err != nil {
		t.Fatal(err)
	}
	open := func(local uint32) *QP {
		q, err := e.OpenQP(QPConfig{LocalQPN: local, PeerQPN: qpnB, Peer: addrB, Window: 4})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	q1, q2 := open(qpnA), open(qpnA+1)
	if _, err := q1.Write(WriteRequest{Length: 4 * DefaultSegment, RKey: 1}); err != nil {
		t.Fatal(err)
	}
	first := e.TakeOutput(nil)
	if len(first) != 4 {
		t.Fatalf("%d frames, want the window's 4", len(first))
	}
	given := map[*byte]bool{}
	for _, f := range first {
		given[&f[:1][0]] = true
	}
	e.Recycle(append(first, make([]byte, 10, 200))) // the odd one is not a header frame
	if _, err := q2.Write(WriteRequest{Length: 4 * DefaultSegment, RemoteVAddr: 0x1000, RKey: 2}); err != nil {
		t.Fatal(err)
	}
	second := e.TakeOutput(nil)
	if len(second) != 4 {
		t.Fatalf("%d frames, want the window's 4", len(second))
	}
	for i, f := range second {
		if !given[&f[:1][0]] {
			t.Errorf("frame %d: new memory, want a recycled frame's", i)
		}
		p, err := mrcpkt.Parse(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if p.BTH.DstQP != qpnB || p.RETH.RKey != 2 || p.RETH.VAddr != 0x1000+uint64(i*DefaultSegment) || p.RETH.DMALen != DefaultSegment {
			t.Errorf("frame %d: qp %#x rkey %d vaddr %#x len %d, want q2's write", i, p.BTH.DstQP, p.RETH.RKey, p.RETH.VAddr, p.RETH.DMALen)
		}
	}
	if n := len(e.spareHeaders); n != 0 {
		t.Errorf("%d spare frames left, want none (4 taken back, 4 used, the odd one refused)", n)
	}
}
