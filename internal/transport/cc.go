package transport

// Congestion control, per QP (docs/protocol.md section 10, "Congestion
// control"). Its state outlives writes: a QP's next write starts from the
// window the last one left. Transmission numbers (QP.txSeq) order every
// send of the QP.

// DCTCP's parameters (RFC 8257).
const (
	// dctcpG is the gain of alpha's moving average (RFC 8257 4.2: 1/16).
	dctcpG = 1.0 / 16
	// dctcpAlpha0 is alpha before any round (RFC 8257 3.3: 1, so that a
	// mark in the first round halves the window).
	dctcpAlpha0 = 1.0
	// lastHopBeta is the cut on a TRIMMED_LASTHOP NACK: cwnd × (1 − β),
	// the standard loss response RFC 8257 3.5 keeps for DCTCP.
	lastHopBeta = 0.5
)

// congestion is a QP's congestion-control state.
type congestion struct {
	kind CongestionControl

	// DCTCP; with CCOff a fixed window (cwnd = Window).
	cwnd          float64 // packets, in [1, Window]
	window        float64 // the QP's Window: cwnd's cap
	alpha         float64
	acked, marked int64  // SACKs and marked SACKs of the current round
	roundEnd      uint64 // txSeq when the round began: it ends with the answer to a later send
	cwrEnd        uint64 // txSeq at the last cut: answers to sends up to it neither cut nor grow
}

func newCongestion(cfg *QPConfig) congestion {
	c := congestion{kind: cfg.CongestionControl, window: float64(cfg.Window), cwnd: float64(cfg.Window)}
	if c.kind == DCTCP {
		c.alpha = dctcpAlpha0
	}
	return c
}

// sendWindow is how many packets may be unacked (sent, neither SACKed
// nor cum-acked): floor(cwnd).
func (c *congestion) sendWindow() int { return int(c.cwnd) }

func (c *congestion) cut(f float64, txSeq uint64) {
	c.cwnd = max(1, c.cwnd*(1-f))
	c.cwrEnd = txSeq
}

// dctcpSACK takes one SACK, the answer to the send numbered s, marked if
// the data packet arrived CE, newly acking n packets. It closes DCTCP's
// observation round when the answered packet was sent after the round
// began (one RTT: RFC 8257's SND.UNA > WindowEnd, by the answered packet
// rather than the cumulative ack, which a sprayed QP's slowest path
// holds back), then cuts once per round on a mark or grows by n/cwnd.
// It reports whether it cut.
func (c *congestion) dctcpSACK(s uint64, marked bool, n int, txSeq uint64) bool {
	c.acked++
	if marked {
		c.marked++
	}
	if s > c.roundEnd {
		c.alpha = (1-dctcpG)*c.alpha + dctcpG*float64(c.marked)/float64(c.acked)
		c.acked, c.marked = 0, 0
		c.roundEnd = txSeq
	}
	if s <= c.cwrEnd {
		return false // the round of the last cut: no second cut, no growth
	}
	if marked {
		c.cut(c.alpha/2, txSeq)
		return true
	}
	if n > 0 {
		c.cwnd = min(c.cwnd+float64(n)/c.cwnd, c.window)
	}
	return false
}

// dctcpTrim takes a NACK for the send numbered s: TRIMMED_LASTHOP (the
// receiver's own port, which every path of the QP crosses) cuts by
// lastHopBeta; TRIMMED (one path of the spray, which the NIC now skips)
// cuts as a mark does, by alpha/2. Once per round, as marks. It reports
// whether it cut.
func (c *congestion) dctcpTrim(s uint64, lastHop bool, txSeq uint64) bool {
	// The trimmed packet met congestion: a marked packet of the round.
	c.acked++
	c.marked++
	if s <= c.cwrEnd {
		return false
	}
	f := c.alpha / 2
	if lastHop {
		f = lastHopBeta
	}
	c.cut(f, txSeq)
	return true
}

// report fills in the state part of a write's Congestion statistics.
func (c *congestion) report(s *Congestion) {
	s.Window, s.Alpha = c.cwnd, c.alpha
}
