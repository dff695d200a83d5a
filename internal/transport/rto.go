package transport

import "time"

// rttEstimator is RFC 6298's: SRTT and RTTVAR from samples, RTO = SRTT +
// max(G, 4 RTTVAR) clamped to [floor, max], doubled on each timeout and
// recomputed (the backoff dropped) at the next sample. The clock
// granularity G is 1 µs.
type rttEstimator struct {
	srtt, rttvar time.Duration
	rto          time.Duration
	floor, max   time.Duration
	samples      int
}

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
	e.rto = e.clamp(e.srtt + max(rtoGranularity, 4*e.rttvar))
}

// backoff doubles the RTO after a timeout (RFC 6298 5.5).
func (e *rttEstimator) backoff() { e.rto = e.clamp(2 * e.rto) }

// rtt is the smoothed RTT, or the RTO before the first sample: the
// "one RTT" that rate-limits the SACK-gap and go-back-N rules.
func (e *rttEstimator) rtt() time.Duration {
	if e.samples == 0 {
		return e.rto
	}
	return e.srtt
}
