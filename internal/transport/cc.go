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

// DCQCN's parameters: NVIDIA ConnectX (mlx5) firmware defaults, what a
// RoCE NIC runs unless its operator changes them (mlxconfig / sysfs
// ecn/roce_rp and ecn/roce_np), the same on every ConnectX port speed from
// 25 to 400 Gb/s. The table:
// https://networking-docs.nvidia.com/doca/archive/3-4-0/dcqcn-cc-parameters
// (also https://community.mellanox.com/docs/DOC-2790, "DCQCN Parameters").
// The 2015 paper's values (Zhu et al., SIGCOMM 2015: g 1/256, K 55 µs, T
// 55 µs, B 10 MB, F 5, R_AI 40 Mb/s) were tuned for 40 Gb/s; the firmware's
// differ, and how each relates to the line rate is in docs/protocol.md 10.
const (
	// dcqcnG is alpha's gain: dce_tcp_g = 1019 in 1/1024ths is the weight
	// of the old alpha, so g = (1024 - 1019) / 1024.
	dcqcnG = 5.0 / 1024
	// dcqcnAlphaPeriod is K, alpha's update period: dce_tcp_rtt = 1 µs.
	dcqcnAlphaPeriod = 1 * time.Microsecond
	// dcqcnAlpha0 is alpha at the first CNP: initial_alpha_value = 1023
	// in 1/1024ths.
	dcqcnAlpha0 = 1023.0 / 1024
	// dcqcnCNPInterval is N, the least time between two cuts of a QP: the
	// longer of the receiving NIC's min_time_between_cnps (a CNP per QP
	// at most every 4 µs) and the sender's rate_reduce_monitor_period
	// (4 µs: at most one cut per period).
	dcqcnCNPInterval = 4 * time.Microsecond
	// dcqcnRateTimer is T, the rate-increase timer: rpg_time_reset = 300 µs.
	dcqcnRateTimer = 300 * time.Microsecond
	// dcqcnByteCounter is B, bytes sent per rate-increase event:
	// rpg_byte_reset = 32,767 bytes.
	dcqcnByteCounter = 32767
	// dcqcnF is the events of either counter before fast recovery ends:
	// rpg_threshold = 1.
	dcqcnF = 1
	// dcqcnAIRate is R_AI, bits/s: rpg_ai_rate = 5 Mb/s.
	dcqcnAIRate = 5e6
	// dcqcnHAIRate is R_HAI, bits/s: rpg_hai_rate = 50 Mb/s.
	dcqcnHAIRate = 50e6
	// dcqcnMinRate is the least rate, bits/s: rpg_min_rate = 1 Mb/s.
	dcqcnMinRate = 1e6
	// dcqcnMinDecFac bounds one cut: the rate keeps at least this share
	// (rpg_min_dec_fac = 50%). rpg_gd = 11 makes a cut alpha/2 (alpha in
	// 1/1024ths, shifted right by 11), so with alpha <= 1 the bound holds
	// by itself; it is applied all the same.
	dcqcnMinDecFac = 0.5

	nsPerSecond   = float64(time.Second) // for pacing gaps
	maxRateEvents = 1 << 20              // bound on the timer events one catch-up runs
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

// wake is when a paced QP holding a packet back must be looked at again:
// its pacer's release, or the rate timer's next event if that comes
// first (the timer raises the rate, and setRate brings the release
// nearer). The timer runs only while the rate is below the line's.
func (c *congestion) wake() time.Duration {
	if c.lastCNP == noTime {
		return c.paceAt
	}
	return min(c.paceAt, c.timerAt+dcqcnRateTimer)
}

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
		c.increase(now)
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
		c.increase(c.timerAt)
	}
}

// increase is one rate-increase event (QCN's reaction point, as DCQCN
// takes it): fast recovery towards the target rate while neither counter
// has passed F, additive increase of the target once one has, hyper
// increase once both have. The target never exceeds the line rate
// (rpg_max_rate = 0: the port's). at is when the event happens.
func (c *congestion) increase(at time.Duration) {
	if c.rc >= c.line {
		return
	}
	switch {
	case max(c.tCount, c.bcCount) <= dcqcnF:
	case min(c.tCount, c.bcCount) > dcqcnF:
		c.rt = min(c.rt+float64(min(c.tCount, c.bcCount)-dcqcnF)*dcqcnHAIRate, c.line)
	default:
		c.rt = min(c.rt+dcqcnAIRate, c.line)
	}
	c.setRate(at, min((c.rt+c.rc)/2, c.line))
}

// setRate changes the current rate at the time at. The pacer is a token
// bucket filling at the current rate: what the next packet still waits
// for at the old rate, it waits for at the new one, so a rate that rises
// releases a packet held back by a low one sooner, and one that falls
// holds it longer. (A wait fixed when the last packet left would keep a
// QP cut to 20 Mb/s idle for 1.6 ms per 4 KiB packet after its rate had
// recovered to the line's.)
func (c *congestion) setRate(at time.Duration, r float64) {
	if c.paceAt > at && r != c.rc {
		c.paceAt = at + time.Duration(float64(c.paceAt-at)*c.rc/r)
	}
	c.rc = r
}

// cnp takes a SACK marked SKIP_ONCE as a CNP, unless one was taken less
// than N ago (the receiving NIC would have sent none, or the sender would
// not cut again yet): the target rate becomes the current rate if this is
// the first CNP or the rate timer has fired since the last one (the
// firmware's clamp_tgt_rate = 0, clamp_tgt_rate_after_time_inc = 1; the
// paper's DCQCN always clamps), the current rate is cut by alpha/2 (at
// most to rpg_min_dec_fac of itself), alpha grows, and the timers and
// byte counter restart. It reports whether it was taken.
func (c *congestion) cnp(now time.Duration) bool {
	if c.lastCNP != noTime && now-c.lastCNP < dcqcnCNPInterval {
		return false
	}
	c.advance(now)
	if c.lastCNP == noTime || c.tCount > 0 {
		c.rt = c.rc
	}
	c.lastCNP = now
	c.setRate(now, max(c.rc*max(1-c.alpha/2, dcqcnMinDecFac), dcqcnMinRate))
	c.alpha = (1-dcqcnG)*c.alpha + dcqcnG
	c.alphaAt, c.timerAt = now, now
	c.tCount, c.bcCount, c.bytes = 0, 0, 0
	return true
}

// report fills in the state part of a write's Congestion statistics.
func (c *congestion) report(s *Congestion) {
	s.Window, s.Alpha, s.Rate = c.cwnd, c.alpha, c.rc
}
