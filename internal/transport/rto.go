package transport

import "time"

// rttEstimator is RFC 6298's: SRTT and RTTVAR from samples, RTO = SRTT +
// max(G, 4 RTTVAR) clamped to [floor, max], doubled on each timeout and
// recomputed (the backoff dropped) at the next sample. The clock
// granularity G is 1 µs. max (QPConfig.MaxRTO) caps every duration the
// sender builds a timer from: rto, rtt and reorderWindow.
type rttEstimator struct {
	srtt, rttvar time.Duration
	rto          time.Duration
	floor, max   time.Duration
	samples      int
	// The largest RTT of the last 64 to 128 samples (two buckets of 64):
	// what a packet still in flight may yet take.
	maxCur, maxPrev time.Duration
	inBucket        int
	// lateMax is the largest delay of a late copy, kept much longer than
	// the RTT samples (halved after lateBuckets buckets with no late copy):
	// a path that is slower now and then, a backup EV's longer queue, shows
	// in a few samples of every hundred, which the two buckets forget
	// before it is slow again, and each time a needless resend is the
	// price (RACK keeps its widened reorder window over 16 recoveries).
	lateMax time.Duration
	lateAge int
}

// lateBuckets is how many buckets of RTT samples lateMax lasts at full
// value.
const lateBuckets = 16

const maxRTTBucket = 64

const rtoGranularity = time.Microsecond

func newRTTEstimator(initial, floor, max time.Duration) rttEstimator {
	e := rttEstimator{floor: floor, max: max}
	e.rto = e.clamp(initial)
	return e
}

func (e *rttEstimator) clamp(d time.Duration) time.Duration {
	if d < e.floor {
		d = e.floor
	}
	if d > e.max {
		d = e.max
	}
	return d
}

// sample takes one RTT measurement (RFC 6298 2.2 and 2.3, alpha 1/8,
// beta 1/4).
func (e *rttEstimator) sample(r time.Duration) {
	if r < 0 {
		return
	}
	if e.samples == 0 {
		e.srtt = r
		e.rttvar = r / 2
	} else {
		d := e.srtt - r
		if d < 0 {
			d = -d
		}
		e.rttvar = (3*e.rttvar + d) / 4
		e.srtt = (7*e.srtt + r) / 8
	}
	e.samples++
	e.noteMax(r)
	e.rto = e.clamp(e.srtt + max(rtoGranularity, 4*e.rttvar))
}

func (e *rttEstimator) noteMax(r time.Duration) {
	if e.inBucket == maxRTTBucket {
		e.maxPrev, e.maxCur, e.inBucket = e.maxCur, 0, 0
		if e.lateAge++; e.lateAge >= lateBuckets {
			e.lateMax, e.lateAge = e.lateMax/2, 0
		}
	}
	e.inBucket++
	e.maxCur = max(e.maxCur, r)
}

// late takes the delay of a copy that arrived after another copy of the
// same packet had been acked (the receiving NIC's duplicate, a DSACK),
// measured from the send before the packet's last (see Transfer.onSACK):
// that copy was late, not lost, by r. It widens the reorder window and
// leaves SRTT alone, so that a resend on a wrongly short window teaches the
// window what Karn's rule hides from the RTT samples.
func (e *rttEstimator) late(r time.Duration) {
	if e.samples > 0 && r > 0 {
		e.noteMax(r)
		e.lateMax, e.lateAge = max(e.lateMax, r), 0
	}
}

// backoff doubles the RTO after a timeout (RFC 6298 5.5).
func (e *rttEstimator) backoff() { e.rto = e.clamp(2 * e.rto) }

// rtt is the smoothed RTT, or the RTO before the first sample: the
// "one RTT" that rate-limits the SACK-gap and go-back-N rules. It is capped
// at max: with paths slower than MaxRTO the timer resends every MaxRTO
// anyway, and the SACK-gap deadline must not wait longer.
func (e *rttEstimator) rtt() time.Duration {
	if e.samples == 0 {
		return e.rto
	}
	return min(e.srtt, e.max)
}

// reorderWindow is how long a packet may stay unacked, with later-sent
// packets acked, before the SACK-gap rule calls it lost: 5/4 of the largest
// recent RTT plus a quarter of SRTT (RACK's reordering allowance), or the
// RTO before any sample. The quarter on top of the largest RTT covers a
// queue that is still growing: each packet on it waits a little longer than
// the one before. Spraying delivers each path's packets at that path's
// own delay; a packet on a queued path is late, not lost, until the
// slowest recent path's RTT has passed. It is capped at max: a late copy
// can be arbitrarily late (a duplicate SACK's delay has no bound), and the
// timer never waits longer than the RTO's cap (Transfer.timeout).
func (e *rttEstimator) reorderWindow() time.Duration {
	if e.samples == 0 {
		return e.rto
	}
	return min(max(e.maxCur, e.maxPrev, e.lateMax)*5/4+e.srtt/4, e.max)
}
