package sim

import (
	"cmp"
	"slices"
)

// The goodput series is kept sparse: a run stores the payload delivered
// in each bin that had a delivery, in order, and its result gives the
// shares as runs of bins with one share each. It used to keep a counter
// per bin, and the result a float per bin, from 0 to the last delivery: a
// 9 s stall was 9 million of each, 64 MB of JSON.

// binBytes is the payload delivered in one bin.
type binBytes struct {
	bin, bytes int64
}

// shareRun is a stretch of the goodput series, bins [from, to), each
// with the share.
type shareRun struct {
	from, to int64
	share    float64
}

// GoodputRun is a stretch of a result's goodput series: every bin from
// StartUS (included) to EndUS (excluded) delivered Share of the speed of
// the NICs then sending. The runs follow each other from 0.
type GoodputRun struct {
	StartUS float64 `json:"start_us"`
	EndUS   float64 `json:"end_us"`
	Share   float64 `json:"share"`
}

// addDelivered counts bytes of payload delivered in bin (the bins of a
// run come in order: the clock runs forward).
func (s *Sim) addDelivered(bin, bytes int64) {
	if n := len(s.delivered); n > 0 && s.delivered[n-1].bin == bin {
		s.delivered[n-1].bytes += bytes
		return
	}
	s.delivered = append(s.delivered, binBytes{bin, bytes})
}

// goodputRuns is the goodput series as runs: each bin's payload over what
// the NICs of the hosts sending in it (spans: from their first flow's
// start to their last flow's completion, ps, -1 for none) carry in a bin,
// nicBps bytes a second each; 0 where nothing was delivered or nobody
// sent. The series ends with the last bin that had a delivery.
func (s *Sim) goodputRuns(spans [][2]int64, nicBps float64) []shareRun {
	if len(s.delivered) == 0 {
		return nil
	}
	end := s.delivered[len(s.delivered)-1].bin + 1
	// The hosts sending change at the bins a span starts and ends in.
	type change struct{ bin, delta int64 }
	var changes []change
	for _, sp := range spans {
		b0, b1 := sp[0]/s.binPS, end
		if sp[1] >= 0 {
			b1 = min(b1, sp[1]/s.binPS+1)
		}
		if b0 < b1 {
			changes = append(changes, change{b0, 1}, change{b1, -1})
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return cmp.Compare(a.bin, b.bin) })
	var runs []shareRun
	add := func(from, to int64, share float64) {
		if n := len(runs); n > 0 && runs[n-1].share == share {
			runs[n-1].to = to
			return
		}
		runs = append(runs, shareRun{from, to, share})
	}
	next, ci, sending := int64(0), 0, int64(0)
	for _, d := range s.delivered {
		if d.bin > next {
			add(next, d.bin, 0)
		}
		for ci < len(changes) && changes[ci].bin <= d.bin {
			sending += changes[ci].delta
			ci++
		}
		share := 0.0
		if sending > 0 {
			share = float64(d.bytes) / (float64(sending) * nicBps * float64(s.binPS) / 1e12)
		}
		add(d.bin, d.bin+1, share)
		next = d.bin + 1
	}
	return runs
}

// shareAt reads a series of runs at bins in increasing order: at(b) is
// bin b's share (b within the series), found by moving forward from the
// last bin read.
type shareAt struct {
	runs []shareRun
	i    int
}

func (c *shareAt) at(b int64) float64 {
	for c.runs[c.i].to <= b {
		c.i++
	}
	return c.runs[c.i].share
}

// run is the run holding the bin last read.
func (c *shareAt) run() shareRun { return c.runs[c.i] }

// recovery is the time from at until the goodput share (of the hosts
// sending), averaged over recoveryBins bins, is back to 95% of its average
// over the recoveryBins bins before at (-1: never, or no traffic before).
// It adds and subtracts bin by bin, as it did over a share per bin, so
// that its figures are those it gave then to the last bit; but where the
// window lies inside a stretch of zeros it skips to the stretch's end
// (adding and subtracting zeros changes no float), so that a long stall
// costs one step.
func (s *Sim) recovery(at int64) float64 {
	const win = recoveryBins
	runs := s.shares
	if len(runs) == 0 {
		return -1
	}
	n := runs[len(runs)-1].to
	b0 := at / s.binPS
	if b0 < win || b0 >= n {
		return -1
	}
	head, tail := &shareAt{runs: runs}, &shareAt{runs: runs}
	before := 0.0
	for i := b0 - win; i < b0; i++ {
		before += head.at(i)
	}
	if before == 0 {
		return -1
	}
	sum := 0.0
	for i := b0; i < n; i++ {
		sum += head.at(i)
		if i-b0 >= win {
			sum -= tail.at(i - win)
		}
		if i-b0+1 == win && sum >= 0.95*before {
			return 0 // it never fell below 95% (the first window is already there)
		}
		if i-b0+1 > win && sum >= 0.95*before {
			return us((i-win+1)*s.binPS - at)
		}
		// Bins i+1 on add and subtract only zeros while both ends of the
		// window stay in the zeros holding i+1 and i+1-win.
		if i-b0 >= win && i+1 < n {
			r := head.run()
			if i+1 >= r.to {
				continue
			}
			if r.share == 0 && i+1-win >= r.from {
				i = r.to - 1
			}
		}
	}
	return -1
}
