package transport

import (
	"math"
	"slices"
	"testing"

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
// per round; the trimmed packet is resent at once either way.
func TestDCTCPTrimCuts(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 16})
	if _, err := q.Write(WriteRequest{Data: make([]byte, 1000), RKey: 1}); err != nil {
		t.Fatal(err)
	}
	takeSent(t, e)
	q.cc.alpha = 0.25 // as after rounds with a quarter of the packets marked
	handle(t, e, nackFrame(t, 3, mrcpkt.NACKTrimmed))
	if got := takeSent(t, e); len(got) != 1 || got[0].psn != 3 || !got[0].retx {
		t.Fatalf("TRIMMED NACK for 3 sent %+v, want 3 again", got)
	}
	if q.cc.cwnd != 14 { // 16 x (1 - 0.25/2)
		t.Fatalf("TRIMMED: cwnd %v, want 16 x (1 - alpha/2) = 14", q.cc.cwnd)
	}
	// 5 was sent before the cut: no second cut in its round, whatever
	// the reason.
	handle(t, e, nackFrame(t, 5, mrcpkt.NACKTrimmedLastHop))
	if q.cc.cwnd != 14 {
		t.Fatalf("a second NACK of the round: cwnd %v, want 14", q.cc.cwnd)
	}
	// 3's resend (and 5's) went after the cut: their trims are news.
	handle(t, e, nackFrame(t, 3, mrcpkt.NACKTrimmedLastHop))
	if q.cc.cwnd != 7 {
		t.Fatalf("TRIMMED_LASTHOP: cwnd %v, want 14 / 2 = 7", q.cc.cwnd)
	}
	if s := q.active.Stats(); s.Congestion.TrimCuts != 2 || s.Retransmits.TrimNACK != 3 {
		t.Errorf("stats %+v retx %+v, want 2 trim cuts and 3 trim resends", s.Congestion, s.Retransmits)
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
	}{{MRC, CCDefault, DCTCP}, {RoCE, CCDefault, CCOff}, {MRC, CCOff, CCOff}, {RoCE, CCOff, CCOff}} {
		cfg := QPConfig{Peer: addrB, Mode: c.mode, CongestionControl: c.cc}
		if err := cfg.fill(); err != nil || cfg.CongestionControl != c.want {
			t.Errorf("%v %v: %v (err %v), want %v", c.mode, c.cc, cfg.CongestionControl, err, c.want)
		}
	}
	for _, cfg := range []QPConfig{
		{Mode: RoCE, CongestionControl: DCTCP},
		{CongestionControl: 9},
	} {
		cfg.Peer = addrB
		if err := cfg.fill(); err == nil {
			t.Errorf("%v %v accepted", cfg.Mode, cfg.CongestionControl)
		}
	}
}
