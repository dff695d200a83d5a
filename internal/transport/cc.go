package transport

import (
	"math"
	"time"
)

// Congestion control, per QP (docs/protocol.md section 10, "Congestion
// control"). Its state outlives writes: a QP's next write starts from the
// window or rate the last one left. Times are durations since the QP was
// opened; transmission numbers (QP.txSeq) order every send of the QP.

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

// Delay's parameters (Swift, Kumar et al., SIGCOMM 2020, section 3.1).
const (
	// delayBeta scales a cut by how far the RTT is above the target:
	// cwnd × (1 − β (rtt − target) / rtt).
	delayBeta = 0.8
	// delayMaxCut bounds one cut: at most half the window.
	delayMaxCut = 0.5
)

// DCQCN's parameters (Zhu et al., SIGCOMM 2015).
const (
	dcqcnG           = 1.0 / 256             // alpha's gain
	dcqcnCNPInterval = 50 * time.Microsecond // N: at most one CNP per QP per N
	dcqcnAlphaPeriod = 55 * time.Microsecond // K: alpha decays once per K without a CNP
	dcqcnRateTimer   = 55 * time.Microsecond // T: a rate-increase event per T
	dcqcnByteCounter = 10_000_000            // B: a rate-increase event per B bytes sent
	dcqcnF           = 5                     // fast-recovery events before additive increase
	dcqcnAIRate      = 40e6                  // R_AI, bits/s
	dcqcnHAIRate     = 200e6                 // R_HAI, bits/s
	dcqcnMinRate     = 100e6                 // the rate never goes below it, bits/s
	dcqcnAlpha0      = 1.0                   // alpha before the first CNP
	nsPerSecond      = float64(time.Second)  // for pacing gaps
	maxRateEvents    = 1 << 20               // bound on the timer events one catch-up runs
)

// congestion is a QP's congestion-control state.
type congestion struct {
	kind CongestionControl

	// DCTCP; with CCOff a fixed window (cwnd = Window).
	cwnd          float64 // packets, in [1, Window]
	window        float64 // the QP's Window: cwnd's cap
	alpha         float64 // DCTCP's or DCQCN's
	acked, marked int64   // SACKs and marked SACKs of the current round
	roundEnd      uint64  // txSeq when the round began: it ends with the answer to a later send
	cwrEnd        uint64  // txSeq at the last cut: answers to sends up to it neither cut nor grow

	// Delay: the smallest RTT sample so far, and the queueing delay
	// tolerated above it.
	minRTT, target time.Duration

	// DCQCN.
	line, rc, rt float64 // line, current and target rate, bits/s
	lastCNP      time.Duration
	alphaAt      time.Duration // alpha's timer runs from here
	timerAt      time.Duration // the rate timer runs from here
	tCount       int           // rate-timer events since the last CNP
	bcCount      int           // byte-counter events since the last CNP
	bytes        int64         // bytes sent since the last byte-counter event
	paceAt       time.Duration // when the pacer releases the next packet
}

func newCongestion(cfg *QPConfig) congestion {
	c := congestion{kind: cfg.CongestionControl, window: float64(cfg.Window), cwnd: float64(cfg.Window), lastCNP: noTime}
	switch c.kind {
	case DCTCP, Delay:
		c.alpha = dctcpAlpha0
		c.target = cfg.DelayTarget
	case DCQCN:
		c.alpha = dcqcnAlpha0
		c.line, c.rc, c.rt = cfg.LineRate, cfg.LineRate, cfg.LineRate
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
// It reports whether it cut. Delay keeps the same rounds and alpha (its
// trim reactions use them) and cuts on the RTT sample instead (delayCut);
// sample is negative when the SACK gives none.
func (c *congestion) dctcpSACK(s uint64, marked bool, sample time.Duration, n int, txSeq uint64) bool {
	c.acked++
	if marked {
		c.marked++
	}
	if s > c.roundEnd {
		c.alpha = (1-dctcpG)*c.alpha + dctcpG*float64(c.marked)/float64(c.acked)
		c.acked, c.marked = 0, 0
		c.roundEnd = txSeq
	}
	if c.kind == Delay {
		return c.delayCut(s, sample, n, txSeq)
	}
	if s <= c.cwrEnd {
		return false // the round of the last cut: no second cut, no growth
	}
	if marked {
		c.cut(c.alpha/2, txSeq)
		return true
	}
	c.grow(n)
	return false
}

// grow is the additive increase of DCTCP and Delay: n newly acked packets
// add n/cwnd, one packet per window's worth, up to the window's cap.
func (c *congestion) grow(n int) {
	if n > 0 {
		c.cwnd = min(c.cwnd+float64(n)/c.cwnd, c.window)
	}
}

// delayCut is Delay's reaction to a SACK: with an RTT sample above the
// QP's smallest one by more than the target, a cut of β (rtt − target) /
// rtt, at most delayMaxCut, once per round; otherwise, DCTCP's growth of
// n/cwnd (also after a cut in the same round: the delay has come down).
func (c *congestion) delayCut(s uint64, sample time.Duration, n int, txSeq uint64) bool {
	if sample >= 0 && (c.minRTT == 0 || sample < c.minRTT) {
		c.minRTT = sample
	}
	target := c.minRTT + c.target
	if sample > target {
		if s <= c.cwrEnd {
			return false
		}
		c.cut(min(delayBeta*float64(sample-target)/float64(sample), delayMaxCut), txSeq)
		return true
	}
	c.grow(n)
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

// windowed reports whether the QP runs a congestion window that SACKs and
// trims move (DCTCP or Delay), in which a trimmed packet's resend waits
// its turn.
func (c *congestion) windowed() bool { return c.kind == DCTCP || c.kind == Delay }

// paced reports whether DCQCN holds sends back: its rate is below the
// line rate.
func (c *congestion) paced() bool { return c.kind == DCQCN && c.rc < c.line }

// mayRelease reports whether a packet may be sent at now.
func (c *congestion) mayRelease(now time.Duration) bool { return !c.paced() || now >= c.paceAt }

// sent accounts a packet of size bytes sent at now: the pacer's next
// release, and DCQCN's byte counter.
func (c *congestion) sent(now time.Duration, size int) {
	if c.kind != DCQCN {
		return
	}
	if c.rc < c.line {
		c.paceAt = max(c.paceAt, now) + time.Duration(float64(8*size)/c.rc*nsPerSecond)
	}
	if c.lastCNP == noTime {
		return
	}
	c.bytes += int64(size)
	if c.bytes >= dcqcnByteCounter {
		c.bytes -= dcqcnByteCounter
		c.bcCount++
		c.increase()
	}
}

// advance runs DCQCN's timers up to now: alpha decays by (1 − g) per
// period K without a CNP, and the rate timer fires a rate-increase event
// per period T. Both run from the last CNP; before the first, the QP is at
// line rate and nothing runs. Events run in order, so running them late,
// when the engine next looks at the QP, gives what running each on time
// would have given: nothing else happens in between.
func (c *congestion) advance(now time.Duration) {
	if c.kind != DCQCN || c.lastCNP == noTime {
		return
	}
	if k := (now - c.alphaAt) / dcqcnAlphaPeriod; k > 0 {
		c.alpha *= math.Pow(1-dcqcnG, float64(k))
		c.alphaAt += k * dcqcnAlphaPeriod
	}
	for i := 0; c.rc < c.line && now-c.timerAt >= dcqcnRateTimer && i < maxRateEvents; i++ {
		c.timerAt += dcqcnRateTimer
		c.tCount++
		c.increase()
	}
}

// increase is one rate-increase event (QCN's reaction point, as DCQCN
// takes it): fast recovery towards the target rate while neither counter
// has passed F, additive increase of the target once one has, hyper
// increase once both have.
func (c *congestion) increase() {
	if c.rc >= c.line {
		return
	}
	switch {
	case max(c.tCount, c.bcCount) <= dcqcnF:
	case min(c.tCount, c.bcCount) > dcqcnF:
		c.rt += float64(min(c.tCount, c.bcCount)-dcqcnF) * dcqcnHAIRate
	default:
		c.rt += dcqcnAIRate
	}
	c.rc = min((c.rt+c.rc)/2, c.line)
}

// cnp takes a SACK marked SKIP_ONCE as a CNP, unless one was taken less
// than N ago (the receiving NIC would have sent none): the target rate
// becomes the current rate, the current rate is cut by alpha/2, alpha
// grows, and the timers and byte counter restart. It reports whether it
// was taken.
func (c *congestion) cnp(now time.Duration) bool {
	if c.lastCNP != noTime && now-c.lastCNP < dcqcnCNPInterval {
		return false
	}
	c.advance(now)
	c.lastCNP = now
	c.rt = c.rc
	c.rc = max(c.rc*(1-c.alpha/2), dcqcnMinRate)
	c.alpha = (1-dcqcnG)*c.alpha + dcqcnG
	c.alphaAt, c.timerAt = now, now
	c.tCount, c.bcCount, c.bytes = 0, 0, 0
	return true
}

// report fills in the state part of a write's Congestion statistics.
func (c *congestion) report(s *Congestion) {
	s.Window, s.Alpha, s.Rate = c.cwnd, c.alpha, c.rc
}
