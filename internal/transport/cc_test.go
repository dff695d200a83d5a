package transport

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// deliverMarked is deliver with the SACK's mark SKIP_ONCE: the data packet
// arrived ECN CE.
func (n *refNIC) deliverMarked(t testing.TB, i int) []byte {
	f := n.deliver(t, i)
	f[offExt+3] |= mrcpkt.MarkSkipOnce << 6
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// DCTCP: a mark cuts the window by alpha/2 once per round, the window
// then bounds the unacked packets, marks on packets sent before the cut do
// not cut again, and a round ends with the answer to a packet sent after
// it began (alpha's update from that round's marked fraction).
func TestDCTCPCutsOnceARound(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 16})
	if q.cfg.CongestionControl != DCTCP {
		t.Fatalf("MRC's default congestion control is %v, want DCTCP", q.cfg.CongestionControl)
	}
	tr, err := q.Write(WriteRequest{Data: make([]byte, 1000), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := takeSent(t, e); len(got) != 16 {
		t.Fatalf("first burst %d packets, want the window of 16", len(got))
	}
	nic := newRefNIC(tr.StartPSN())
	// Packet 0's answer closes the first round (sends 1..16 began it):
	// no mark in it, alpha 1 -> 15/16. The window stays at its cap.
	handle(t, e, nic.deliver(t, 0))
	alpha := 15.0 / 16
	if c := q.cc; !near(c.alpha, alpha) || c.cwnd != 16 {
		t.Fatalf("after an unmarked round: alpha %v cwnd %v, want %v and 16", c.alpha, c.cwnd, alpha)
	}
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{16}) {
		t.Fatalf("after the ack of 0 sent %v, want [16]", got)
	}
	// Packet 1 arrived CE: the window is cut by alpha/2, and 15 unacked
	// packets are beyond it: nothing new goes.
	handle(t, e, nic.deliverMarked(t, 1))
	want := 16 * (1 - alpha/2)
	if c := q.cc; c.cwnd != want {
		t.Fatalf("after a mark: cwnd %v, want 16 x (1 - alpha/2) = %v", c.cwnd, want)
	}
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("sent %v with 15 unacked and a window of %v", psns(got), want)
	}
	// 2..8 arrive CE too, but were sent before the cut: no second cut.
	// The unacked fall to 8, the window's floor(8.5): still nothing.
	for i := 2; i <= 8; i++ {
		handle(t, e, nic.deliverMarked(t, i))
	}
	if got := takeSent(t, e); len(got) != 0 || q.cc.cwnd != want {
		t.Fatalf("marks of the cut's round: sent %v, cwnd %v (want nothing and %v)", psns(got), q.cc.cwnd, want)
	}
	// 9 brings the unacked to 7: one new packet.
	handle(t, e, nic.deliverMarked(t, 9))
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{17}) {
		t.Fatalf("with 7 unacked and a window of 8 sent %v, want [17]", got)
	}
	// 17 was sent after the cut: its unmarked answer grows the window by
	// one packet over cwnd and ends the round (sends after 16 began it):
	// 9 marked answers of 10.
	handle(t, e, nic.deliver(t, 17))
	alpha = (1-dctcpG)*alpha + dctcpG*9/10
	if c := q.cc; !near(c.alpha, alpha) || !near(c.cwnd, want+1/want) {
		t.Errorf("next round: alpha %v cwnd %v, want %v and %v", c.alpha, c.cwnd, alpha, want+1/want)
	}
	if s := tr.Stats(); s.Congestion.ECNCuts != 1 || s.Congestion.Marks != 9 || s.Congestion.MinWindow != want {
		t.Errorf("stats %+v, want 1 cut, 9 marks, lowest window %v", s.Congestion, want)
	}
}

// Trim NACKs: TRIMMED (one path of the spray) cuts by alpha/2 as a mark
// does, TRIMMED_LASTHOP (the receiver's port, on every path) halves; once
// per round; the trimmed packets are resent as the window makes room.
func TestDCTCPTrimCuts(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 16})
	_, nic := startWrite(t, e, q, 1000)
	q.cc.alpha = 0.25 // as after rounds with a quarter of the packets marked
	handle(t, e, nackFrame(t, 3, mrcpkt.NACKTrimmed))
	if q.cc.cwnd != 14 { // 16 x (1 - 0.25/2)
		t.Fatalf("TRIMMED: cwnd %v, want 16 x (1 - alpha/2) = 14", q.cc.cwnd)
	}
	if got := takeSent(t, e); len(got) != 0 { // 15 in the network, window 14
		t.Fatalf("TRIMMED NACK for 3 with the window full sent %v", psns(got))
	}
	// 5 was sent before the cut: no second cut in its round, whatever
	// the reason.
	handle(t, e, nackFrame(t, 5, mrcpkt.NACKTrimmedLastHop))
	if q.cc.cwnd != 14 {
		t.Fatalf("a second NACK of the round: cwnd %v, want 14", q.cc.cwnd)
	}
	// Two acks: 12 in the network, room for the two trimmed packets.
	handle(t, e, nic.deliver(t, 0))
	handle(t, e, nic.deliver(t, 1))
	if got := takeSent(t, e); !slices.Equal(psns(got), []uint32{3, 5}) || !got[0].retx || !got[1].retx {
		t.Fatalf("after two acks sent %+v, want 3 and 5 resent", got)
	}
	// 3's resend went after the cut: its trim is news.
	before := q.cc.cwnd
	handle(t, e, nackFrame(t, 3, mrcpkt.NACKTrimmedLastHop))
	if !near(q.cc.cwnd, before/2) {
		t.Fatalf("TRIMMED_LASTHOP: cwnd %v, want %v / 2", q.cc.cwnd, before)
	}
	if s := q.active.Stats(); s.Congestion.TrimCuts != 2 || s.Retransmits.TrimNACK != 2 {
		t.Errorf("stats %+v retx %+v, want 2 trim cuts and 2 trim resends", s.Congestion, s.Retransmits)
	}
	// Down to the floor of one packet, never below.
	for i := 0; i < 10; i++ {
		q.cc.cut(lastHopBeta, q.txSeq)
	}
	if q.cc.cwnd != 1 {
		t.Errorf("cwnd %v after ten halvings, want the floor 1", q.cc.cwnd)
	}
}

// With CCOff marks and trims change nothing: the same packets go as for
// unmarked answers, and the window stays at Window.
func TestCCOffIgnoresMarks(t *testing.T) {
	var runs [2][]uint32
	for k, mark := range []bool{false, true} {
		e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 8, CongestionControl: CCOff})
		tr, err := q.Write(WriteRequest{Data: make([]byte, 300), RKey: 1})
		if err != nil {
			t.Fatal(err)
		}
		runs[k] = psns(takeSent(t, e))
		nic := newRefNIC(tr.StartPSN())
		for i := 0; i < 20; i++ {
			f := nic.deliver(t, i)
			if mark {
				f = nic.deliverMarked(t, i)
				handle(t, e, nackFrame(t, uint32(i+8), mrcpkt.NACKTrimmedLastHop))
			}
			handle(t, e, f)
			for _, s := range takeSent(t, e) {
				if !s.retx {
					runs[k] = append(runs[k], s.psn)
				}
			}
		}
		if c := tr.Stats().Congestion; c.Window != 8 || c.ECNCuts+c.TrimCuts != 0 || (mark && c.Marks != 20) {
			t.Errorf("mark %v: %+v, want the window at 8, no cuts", mark, c)
		}
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Errorf("new packets sent differ with marks:\n%v\n%v", runs[0], runs[1])
	}
}

func TestCongestionControlConfig(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		cc   CongestionControl
		want CongestionControl
	}{{MRC, CCDefault, DCTCP}, {RoCE, CCDefault, DCQCN}, {MRC, CCOff, CCOff}, {RoCE, CCOff, CCOff}} {
		cfg := QPConfig{Peer: addrB, Mode: c.mode, CongestionControl: c.cc}
		if err := cfg.fill(); err != nil || cfg.CongestionControl != c.want || cfg.LineRate != DefaultLineRate {
			t.Errorf("%v %v: %v, line rate %g (err %v), want %v", c.mode, c.cc, cfg.CongestionControl, cfg.LineRate, err, c.want)
		}
	}
	for _, cfg := range []QPConfig{
		{Mode: MRC, CongestionControl: DCQCN},
		{Mode: RoCE, CongestionControl: DCTCP},
		{CongestionControl: 9},
		{Mode: RoCE, LineRate: 0.999e6}, // below rpg_min_rate
		{Mode: RoCE, LineRate: math.NaN()},
		{Mode: RoCE, LineRate: math.Inf(1)},
	} {
		cfg.Peer = addrB
		if err := cfg.fill(); err == nil {
			t.Errorf("%v %v line rate %g accepted", cfg.Mode, cfg.CongestionControl, cfg.LineRate)
		}
	}
}

// DCQCN's parameters are NVIDIA ConnectX's firmware defaults (cc.go has
// the table's address): each one pinned, in the firmware's own units.
func TestDCQCNDefaults(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"dce_tcp_g (1/1024ths kept)", 1024 * (1 - dcqcnG), 1019},
		{"dce_tcp_rtt (µs)", dcqcnAlphaPeriod.Seconds() * 1e6, 1},
		{"initial_alpha_value (1/1024ths)", 1024 * dcqcnAlpha0, 1023},
		{"min_time_between_cnps, rate_reduce_monitor_period (µs)", dcqcnCNPInterval.Seconds() * 1e6, 4},
		{"rpg_time_reset (µs)", dcqcnRateTimer.Seconds() * 1e6, 300},
		{"rpg_byte_reset (bytes)", dcqcnByteCounter, 32767},
		{"rpg_threshold", dcqcnF, 1},
		{"rpg_ai_rate (Mb/s)", dcqcnAIRate / 1e6, 5},
		{"rpg_hai_rate (Mb/s)", dcqcnHAIRate / 1e6, 50},
		{"rpg_min_rate (Mb/s)", dcqcnMinRate / 1e6, 1},
		{"rpg_min_dec_fac (%)", 100 * dcqcnMinDecFac, 50},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// DCQCN's rate machine, event by event, with the firmware's defaults: a
// CNP cuts RC by alpha/2; the first sets RT to the old RC, a later one
// only if the rate timer (T = 300 µs) fired since the last (the
// firmware's clamp_tgt_rate_after_time_inc); CNPs closer than N = 4 µs are
// not taken; alpha decays by 1019/1024 per K = 1 µs; the first F = 1
// event of either counter is fast recovery, then additive increase (5
// Mb/s), and hyper increase (50 Mb/s) once both counters have passed F;
// RC never goes below 1 Mb/s.
func TestDCQCNRateMachine(t *testing.T) {
	const line = 10e9
	cfg := QPConfig{Peer: addrB, Mode: RoCE, LineRate: line}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	c := newCongestion(&cfg)
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	// alpha 1023/1024: RC = line (1 - 1023/2048); then alpha =
	// (1019/1024) (1023/1024) + 5/1024 = 1047557/1048576.
	if c.paced() || !c.cnp(0) || c.rc != line*1025/2048 || c.rt != line || c.alpha != 1047557.0/1048576 || !c.paced() {
		t.Fatalf("first CNP: rc %g rt %g alpha %v paced %v, want %g %g %v true", c.rc, c.rt, c.alpha, c.paced(), line*1025/2048, line, 1047557.0/1048576)
	}
	if c.cnp(us(3)) || c.rc != line*1025/2048 {
		t.Fatalf("a CNP 3µs after the last was taken: rc %g", c.rc)
	}
	// At 4µs: alpha has decayed 4 periods; no timer event since the last
	// CNP, so RT stays at the line rate (not clamped to RC).
	alpha := 1047557.0 / 1048576 * math.Pow(1019.0/1024, 4)
	rc := line * 1025 / 2048 * (1 - alpha/2)
	if !c.cnp(us(4)) || !near(c.rc, rc) || c.rt != line {
		t.Fatalf("CNP at 4µs: rc %g rt %g, want %g and %g (unclamped)", c.rc, c.rt, rc, line)
	}
	alpha = 1019.0/1024*alpha + 5.0/1024
	if !near(c.alpha, alpha) {
		t.Fatalf("alpha after the CNP at 4µs: %v, want %v", c.alpha, alpha)
	}
	// 299µs later alpha has decayed 299 times and nothing else happened;
	// at 300µs the timer's first event: fast recovery, RC halfway to RT.
	c.advance(us(4 + 299))
	if !near(c.alpha, alpha*math.Pow(1019.0/1024, 299)) || !near(c.rc, rc) {
		t.Fatalf("at 303µs: alpha %v rc %g, want %v and %g", c.alpha, c.rc, alpha*math.Pow(1019.0/1024, 299), rc)
	}
	c.advance(us(4 + 300))
	rc = (line + rc) / 2
	if !near(c.rc, rc) || c.rt != line || c.tCount != 1 {
		t.Fatalf("timer event 1: rc %g rt %g (t %d), want %g %g", c.rc, c.rt, c.tCount, rc, line)
	}
	// A CNP after a timer event clamps RT to RC.
	old := c.rc
	if !c.cnp(us(305)) || c.rt != old {
		t.Fatalf("CNP after the timer fired: rt %g, want the old rc %g", c.rt, old)
	}
	rt, rc := c.rt, c.rc
	// Byte counter: its first event (32,767 bytes) is fast recovery
	// (max(T, BC) = 1 = F); its second is additive increase (RT + 5 Mb/s).
	c.sent(us(305), 32766)
	if c.bcCount != 0 {
		t.Fatalf("32,766 bytes made %d byte-counter events, want 0", c.bcCount)
	}
	c.sent(us(305), 1)
	rc = (rt + rc) / 2
	if c.bcCount != 1 || !near(c.rc, rc) || c.rt != rt {
		t.Fatalf("byte-counter event 1: rc %g rt %g, want %g %g", c.rc, c.rt, rc, rt)
	}
	c.sent(us(305), 32767)
	rt += 5e6
	rc = (rt + rc) / 2
	if c.bcCount != 2 || c.rt != rt || !near(c.rc, rc) {
		t.Fatalf("byte-counter event 2: rt %g rc %g, want %g %g", c.rt, c.rc, rt, rc)
	}
	// The timer's first event since that CNP: fast recovery still for the
	// timer (min(T, BC) = 1), so additive; its second, both counters past
	// F: hyper increase by (min(T, BC) - F) × 50 Mb/s.
	c.advance(us(305 + 300))
	rt += 5e6
	rc = (rt + rc) / 2
	if c.tCount != 1 || c.rt != rt || !near(c.rc, rc) {
		t.Fatalf("timer event 1 after the clamp: rt %g rc %g, want %g %g", c.rt, c.rc, rt, rc)
	}
	c.advance(us(305 + 600))
	rt += 50e6
	rc = (rt + rc) / 2
	if c.tCount != 2 || c.rt != rt || !near(c.rc, rc) {
		t.Fatalf("timer event 2 after the clamp: rt %g rc %g, want %g %g", c.rt, c.rc, rt, rc)
	}
	// The target never passes the line rate: after enough hyper
	// increases RT is the line rate itself.
	c.advance(us(305 + 300*400))
	if c.rt != line || c.rc != line {
		t.Fatalf("400 timer events later: rt %g rc %g, want the line rate %g", c.rt, c.rc, line)
	}
	// CNP after CNP, 4µs apart (4 alpha periods between): alpha follows
	// its recurrence (towards about 0.147, cuts of about 7%), and RC falls
	// to the 1 Mb/s minimum and stays there.
	at := us(305 + 300*400)
	if !c.cnp(at) {
		t.Fatal("a CNP long after the last not taken")
	}
	alpha = c.alpha
	for i := 0; i < 300; i++ {
		at += 4 * time.Microsecond
		if !c.cnp(at) {
			t.Fatalf("CNP %d, 4µs after the last, not taken", i)
		}
		alpha = 1019.0/1024*(alpha*math.Pow(1019.0/1024, 4)) + 5.0/1024
	}
	if c.rc != 1e6 || !near(c.alpha, alpha) {
		t.Errorf("after 300 CNPs: rc %g alpha %v, want the minimum 1e6 and alpha %v", c.rc, c.alpha, alpha)
	}
	// Left alone, the timer brings RC back to line rate, then pacing stops.
	c.advance(at + time.Second)
	if c.rc != line || c.paced() {
		t.Errorf("a second later: rc %g paced %v, want line rate %g, not paced", c.rc, c.paced(), line)
	}
}

// DCQCN through the engine: a marked SACK is a CNP (one per 4 µs), and
// the QP's sends are then paced at RC through NextDeadline and
// HandleTimers: new packets and a go-back-N round alike. A packet waiting
// in the round has no timer running: its timer starts when it goes.
func TestDCQCNPacesSends(t *testing.T) {
	const seg = 1000
	frameBits := 8 * (dataHdrLen + seg)
	line := float64(frameBits) * 1e6 // one frame per µs
	const rto = 50 * time.Microsecond
	e, q, clk := newSender(t, QPConfig{Mode: RoCE, Segment: seg, Window: 4, LineRate: line,
		InitialRTO: rto, MinRTO: rto, MaxRTO: rto})
	if q.cfg.CongestionControl != DCQCN {
		t.Fatalf("RoCE's default congestion control is %v, want DCQCN", q.cfg.CongestionControl)
	}
	tr, err := q.Write(WriteRequest{Data: make([]byte, 40*seg), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := takeSent(t, e); len(got) != 4 {
		t.Fatalf("at line rate the window of 4 goes at once: sent %d", len(got))
	}
	nic := newRefNIC(tr.StartPSN())
	clk.advance(20 * time.Microsecond)
	// CNP: RC = line (1 - alpha/2) with alpha = 1023/1024, line ×
	// 1025/2048: a frame per 2048/1025 µs, 1,998 ns (rounded down).
	handle(t, e, nic.deliverMarked(t, 0))
	const gap = 1998 * time.Nanosecond
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{4}) {
		t.Fatalf("after the CNP sent %v, want [4] (the pacer was idle)", got)
	}
	handle(t, e, nic.deliverMarked(t, 1)) // too soon for a second CNP
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("sent %v less than 1,998 ns after the last send at about half the line rate", psns(got))
	}
	at, ok := e.NextDeadline()
	if want := clk.t.Add(gap); !ok || !at.Equal(want) {
		t.Fatalf("next deadline %v after now, want the pacer's %v", at.Sub(clk.t), gap)
	}
	clk.t = at
	e.HandleTimers()
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{5}) {
		t.Fatalf("at the pacer's deadline sent %v, want [5]", got)
	}
	if s := tr.Stats().Congestion; s.CNPs != 1 || s.Marks != 2 || s.Rate != line*1025/2048 {
		t.Fatalf("congestion %+v, want 1 CNP of 2 marks, rate %g", s, line*1025/2048)
	}
	// 2 arrives (6 goes: the pacer has long been free), 3 is lost, 4
	// arrives: a sequence error, go back to 3, paced at one frame per
	// 1,998 ns from 6's send, each resend counted when it goes. At 60µs
	// 3's first send (at 0) is older than the 50µs RTO: as it waits to be
	// resent, no timer of its is due. (DCQCN's rate timer, 300µs from the
	// CNP, has not fired, and its byte counter, 32,767 bytes, has not
	// counted 32 frames: the rate is the CNP's.)
	clk.advance(38 * time.Microsecond)
	handle(t, e, nic.deliver(t, 2))
	if got := psns(takeSent(t, e)); !slices.Equal(got, []uint32{6}) {
		t.Fatalf("after the ack of 2 sent %v, want [6]", got)
	}
	handle(t, e, nic.deliver(t, 4))
	var resent []uint32
	for _, s := range takeSent(t, e) {
		resent = append(resent, s.psn)
	}
	for len(resent) < 4 {
		at, ok := e.NextDeadline()
		if !ok || at.Sub(clk.t) != gap {
			t.Fatalf("resent %v so far; next deadline %v out, want %v", resent, at.Sub(clk.t), gap)
		}
		clk.t = at
		e.HandleTimers()
		got := takeSent(t, e)
		if len(got) != 1 {
			t.Fatalf("a pacer deadline sent %d frames, want 1", len(got))
		}
		resent = append(resent, got[0].psn)
	}
	if !slices.Equal(resent, []uint32{3, 4, 5, 6}) || tr.Stats().Retransmits.SeqError != 4 {
		t.Errorf("go-back-N resent %v (%d counted), want [3 4 5 6], 4", resent, tr.Stats().Retransmits.SeqError)
	}
}

// The receiving NIC answers an in-order packet at once only if its PSN is
// AckEvery - 1 modulo AckEvery or it asks (BTH's ack request); the others
// wait for a later SACK. A sender asks on every resend and on the write's
// last packet; on the packet that closes its window only when that window
// is below AckEvery (a larger one always has room for the packet that
// brings the SACK), so a window-limited sender keeps the coalescing. When
// the window is shut and nothing in the network is sure to be answered
// (trims took what was), one asking packet goes beyond it instead of the
// sender waiting for an RTO.
func TestAckRequest(t *testing.T) {
	asked := func(s []sent) []uint32 {
		var r []uint32
		for _, x := range s {
			if x.ackReq {
				r = append(r, x.psn)
			}
		}
		return r
	}
	write := func(t *testing.T, cfg QPConfig) (*Engine, *QP, *refNIC) {
		e, q, _ := newSender(t, cfg)
		tr, err := q.Write(WriteRequest{Data: make([]byte, 1000), RKey: 1})
		if err != nil {
			t.Fatal(err)
		}
		return e, q, newRefNIC(tr.StartPSN())
	}
	t.Run("window of AckEvery or more", func(t *testing.T) {
		e, _, nic := write(t, QPConfig{Segment: 10, Window: 4, AckEvery: 3})
		got := takeSent(t, e)
		if !slices.Equal(psns(got), []uint32{0, 1, 2, 3}) || len(asked(got)) != 0 {
			t.Fatalf("first burst %v asking on %v, want 0..3 and none asking", psns(got), asked(got))
		}
		handle(t, e, nic.deliver(t, 0))
		if got := takeSent(t, e); !slices.Equal(psns(got), []uint32{4}) || len(asked(got)) != 0 {
			t.Fatalf("after 0's ack sent %v asking on %v, want 4, not asking", psns(got), asked(got))
		}
	})
	t.Run("window below AckEvery", func(t *testing.T) {
		e, _, nic := write(t, QPConfig{Segment: 10, Window: 2, AckEvery: 3, CongestionControl: CCOff})
		got := takeSent(t, e)
		if !slices.Equal(psns(got), []uint32{0, 1}) || !slices.Equal(asked(got), []uint32{1}) {
			t.Fatalf("first burst %v asking on %v, want 0, 1 and 1 asking (it closes the window)", psns(got), asked(got))
		}
		handle(t, e, nic.deliver(t, 0))
		if got := takeSent(t, e); !slices.Equal(psns(got), []uint32{2}) || !slices.Equal(asked(got), []uint32{2}) {
			t.Fatalf("after 0's ack sent %v asking on %v, want 2, asking", psns(got), asked(got))
		}
	})
	t.Run("trims take the answered packets", func(t *testing.T) {
		e, q, nic := write(t, QPConfig{Segment: 10, Window: 4, AckEvery: 3})
		takeSent(t, e)
		handle(t, e, nic.deliver(t, 0))
		takeSent(t, e) // 4
		// 4 is trimmed: DCTCP cuts the window below the 3 in flight (1,
		// 2, 3). PSN 2 (2 modulo 3) is answered at once when it arrives:
		// 4's resend waits for room.
		handle(t, e, nackFrame(t, 4, mrcpkt.NACKTrimmed))
		if q.cc.cwnd >= 3 {
			t.Fatalf("cwnd %v after the trim, want below the 3 in flight", q.cc.cwnd)
		}
		if got := takeSent(t, e); len(got) != 0 {
			t.Fatalf("with PSN 2 in flight and the window shut, sent %v", psns(got))
		}
		// 2 is trimmed too: 1 and 3 may sit at the receiver waiting for a
		// SACK nothing will bring. 4's resend goes at once, asking, past
		// the window; 2's waits, as an answer is coming now.
		handle(t, e, nackFrame(t, 2, mrcpkt.NACKTrimmed))
		got := takeSent(t, e)
		if !slices.Equal(psns(got), []uint32{4}) || !got[0].retx || !got[0].ackReq {
			t.Fatalf("with nothing sure to be answered in flight sent %+v, want 4 resent, asking", got)
		}
		// The answers free the window: 2's resend goes first, asking, as
		// every resend does.
		handle(t, e, nic.deliver(t, 1))
		handle(t, e, nic.deliver(t, 3))
		handle(t, e, nic.deliver(t, 4))
		got = takeSent(t, e)
		if len(got) == 0 || got[0].psn != 2 || !got[0].retx || !got[0].ackReq {
			t.Fatalf("after the acks sent %+v, want 2 resent first, asking", got)
		}
	})
}

// A trimmed packet whose resend waits for room in the DCTCP window is not
// lost: the SACK-gap rule leaves it to the window, however many later
// packets are acked and however old it is. Taking it, as the engine once
// did, resent it past the window and flagged it LOST, which failed a
// healthy path at the NIC: 1,369 of them in a 31-to-1 incast on small.
func TestSACKGapLeavesTrimmedPackets(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 16, InitialRTO: 10 * time.Millisecond, MinRTO: 5 * time.Millisecond})
	tr, nic := startWrite(t, e, q, 160)
	clk.advance(time.Millisecond)
	handle(t, e, nackFrame(t, 0, mrcpkt.NACKTrimmed)) // the window (16 x (1 - 1/2)) is full: 0 waits
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("the NACK with the window full sent %v", psns(got))
	}
	for i := 1; i <= 4; i++ {
		handle(t, e, nic.deliver(t, i)) // D = 3 later packets acked...
	}
	clk.advance(3 * time.Millisecond) // ...and 0 older than the reorder window
	e.HandleTimers()
	takeSent(t, e)
	if s := tr.Stats(); s.Retransmits.SACKGap != 0 {
		t.Errorf("resends %+v: want no SACK-gap resend of a trimmed packet", s.Retransmits)
	}
}

// Delay cuts on an RTT sample above the QP's smallest plus the target, by
// β (rtt − target) / rtt and at most half, once per round; it grows as
// DCTCP below the target, also in the round of a cut; the smallest sample
// moves the target down.
func TestDelayCut(t *testing.T) {
	const us = time.Microsecond
	c := newCongestion(&QPConfig{CongestionControl: Delay, Window: 16, DelayTarget: 4 * us})
	c.cwnd = 8
	if c.delayCut(1, 2*us, 1, 1) || c.minRTT != 2*us || !near(c.cwnd, 8+1.0/8) {
		t.Fatalf("first sample 2 µs: cwnd %v, min RTT %v; want growth to %v and 2 µs", c.cwnd, c.minRTT, 8+1.0/8)
	}
	w := c.cwnd
	if c.delayCut(2, 6*us, 1, 2) || !near(c.cwnd, w+1/w) {
		t.Fatalf("6 µs, the target exactly: cwnd %v, want growth to %v", c.cwnd, w+1/w)
	}
	w = c.cwnd
	if !c.delayCut(3, 10*us, 1, 5) || !near(c.cwnd, w*(1-0.8*4/10)) || c.cwrEnd != 5 {
		t.Fatalf("10 µs: cwnd %v, cwrEnd %d; want a cut to %v x (1 - 0.8 x 4/10) = %v, round to send 5", c.cwnd, c.cwrEnd, w, w*(1-0.8*4/10))
	}
	w = c.cwnd
	if c.delayCut(4, 30*us, 1, 6) || c.cwnd != w {
		t.Fatalf("30 µs for a send of the cut's round: cwnd %v, want no second cut (%v)", c.cwnd, w)
	}
	if c.delayCut(5, 3*us, 2, 6) || !near(c.cwnd, w+2/w) {
		t.Fatalf("3 µs in the cut's round: cwnd %v, want growth to %v", c.cwnd, w+2/w)
	}
	w = c.cwnd
	if !c.delayCut(7, 40*us, 1, 9) || !near(c.cwnd, w/2) {
		t.Fatalf("40 µs: cwnd %v, want the largest cut, half: %v", c.cwnd, w/2)
	}
	w = c.cwnd
	if c.delayCut(8, -1, 1, 9) || !near(c.cwnd, w+1/w) {
		t.Fatalf("no sample: cwnd %v, want growth to %v", c.cwnd, w+1/w)
	}
	// A smaller sample lowers the target: 5.5 µs is now above 1 + 4.
	w = c.cwnd
	if c.delayCut(10, 1*us, 1, 9) || c.minRTT != us {
		t.Fatalf("1 µs: min RTT %v, want 1 µs", c.minRTT)
	}
	w = c.cwnd
	if !c.delayCut(11, 5500*time.Nanosecond, 1, 12) || !near(c.cwnd, w*(1-0.8*0.5/5.5)) {
		t.Fatalf("5.5 µs over a 1 µs minimum: cwnd %v, want %v", c.cwnd, w*(1-0.8*0.5/5.5))
	}
}

// Delay takes its samples only from packets the receiving NIC answers at
// once: a coalesced answer has waited for later packets, which is no
// queue's delay. Marks do not cut.
func TestDelaySamplesAnsweredAtOnce(t *testing.T) {
	const us = time.Microsecond
	e, q, clk := newSender(t, QPConfig{Segment: 10, Window: 16, CongestionControl: Delay, DelayTarget: 4 * us, AckEvery: 3})
	tr, err := q.Write(WriteRequest{Data: make([]byte, 1000), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := takeSent(t, e); len(got) != 16 || tr.StartPSN() != 0 {
		t.Fatalf("first burst %d packets from PSN %d, want 16 from 0", len(got), tr.StartPSN())
	}
	nic := newRefNIC(tr.StartPSN())
	clk.advance(2 * us)
	handle(t, e, nic.deliver(t, 2)) // PSN 2: answered at once; 2 µs
	if q.cc.minRTT != 2*us || q.cc.cwnd != 16 {
		t.Fatalf("after a 2 µs sample: min RTT %v cwnd %v, want 2 µs and 16", q.cc.minRTT, q.cc.cwnd)
	}
	clk.advance(18 * us)
	handle(t, e, nic.deliver(t, 0))       // PSN 0: coalesced, 20 µs is not a sample
	handle(t, e, nic.deliverMarked(t, 1)) // coalesced and marked: no cut either
	if q.cc.cwnd != 16 || q.cc.minRTT != 2*us {
		t.Fatalf("after coalesced answers: cwnd %v min RTT %v, want 16 and 2 µs", q.cc.cwnd, q.cc.minRTT)
	}
	handle(t, e, nic.deliver(t, 5)) // PSN 5: at once, 20 µs
	if want := 16 * (1 - delayMaxCut); q.cc.cwnd != want {
		t.Fatalf("after a 20 µs sample: cwnd %v, want 16 x (1 - %v) = %v", q.cc.cwnd, delayMaxCut, want)
	}
	handle(t, e, nic.deliver(t, 8)) // at once, 20 µs, but sent in the cut's round
	if s := tr.Stats(); s.Congestion.DelayCuts != 1 || s.Congestion.ECNCuts != 0 || s.Congestion.Marks != 1 {
		t.Errorf("stats %+v, want 1 delay cut, no ECN cut, 1 mark", s.Congestion)
	}
}

// DCQCN's pacer is a token bucket filling at the current rate: a packet
// held back by a rate cut to 1 Mb/s goes as soon as the rate timer has
// raised the rate again, not at the release the low rate had fixed. The
// QP's deadline is the timer's event, 300 µs after the last CNP, when
// that comes before the release.
func TestDCQCNTimerReleasesHeldPacket(t *testing.T) {
	const line = 10e9
	cfg := QPConfig{Peer: addrB, Mode: RoCE, LineRate: line}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	c := newCongestion(&cfg)
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	// CNPs 4 µs apart bring RC to the 1 Mb/s floor; no timer event runs
	// (300 µs never pass without a CNP), so RT stays the line rate.
	at := us(0)
	for i := 0; i < 300; i++ {
		if !c.cnp(at) {
			t.Fatalf("CNP %d at %v not taken", i, at)
		}
		at += us(4)
	}
	last := at - us(4)
	if c.rc != 1e6 || c.rt != line {
		t.Fatalf("after 300 CNPs rc %g rt %g, want 1e6 and the line rate", c.rc, c.rt)
	}
	// A 1,000-byte packet at 1 Mb/s: the next waits 8 ms.
	c.sent(last, 1000)
	if c.paceAt != last+8*time.Millisecond {
		t.Fatalf("release %v after the last CNP, want 8ms", c.paceAt-last)
	}
	if w := c.wake(); w != last+us(300) {
		t.Fatalf("wake %v after the last CNP, want the rate timer's 300µs", w-last)
	}
	// The timer's event: RC halfway to RT, (10e9 + 1e6) / 2; the 7.7 ms
	// still to wait at 1 Mb/s are 7,700 bits, 1,539 ns at 5.0005 Gb/s.
	c.advance(last + us(300))
	if c.rc != 5.0005e9 {
		t.Fatalf("rc after the timer's event %g, want 5.0005e9", c.rc)
	}
	if got := c.paceAt - (last + us(300)); got != 1539*time.Nanosecond {
		t.Errorf("release %v after the timer's event, want 1.539µs", got)
	}
}
