package sim

import (
	"cmp"
	"math"
	"slices"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// RoCEPaths is what a RoCE run's ECMP hashes made of its flows, before any
// fault moved them: the best any congestion control could do on those
// paths, and the links they load most (docs/protocol.md 11, *The RoCE
// baseline*).
type RoCEPaths struct {
	// FairShare is each sending host's goodput if every QP had at every
	// moment its max-min fair share of the links on its hashed path: a
	// fluid model whose rates are recomputed at each flow's start and each
	// QP's completion, with the links' payload rate (their speed less the
	// data frames' headers, preamble and gap). Only for workloads of
	// independent flows (not collectives, whose steps wait for each
	// other); min, median and max over hosts, as Result.Goodput.
	FairShare *Percentiles `json:"fair_share,omitempty"`
	// BusiestLink is the T0-T1 cable (both directions) that carries the
	// most of the flows' bytes on their hashed paths, named as the fault
	// flags name it ("p0-t0-0:p0-t1-1"), and BusiestT1 the T1 switch that
	// does; with their shares of every byte the flows send. Ties go to the
	// first in the plan's order.
	BusiestLink      string  `json:"busiest_link"`
	BusiestLinkShare float64 `json:"busiest_link_share"`
	BusiestT1        string  `json:"busiest_t1"`
	BusiestT1Share   float64 `json:"busiest_t1_share"`
}

// fluidLink identifies a link direction of the fluid model: a NIC port
// (host, plane), an uplink (plane, T0 row, T1), a downlink (plane, T1, T0
// row) or a host-facing port (host, plane).
type fluidLink struct {
	kind        uint8 // 0 NIC port out, 1 up, 2 down, 3 towards a NIC
	plane, a, b int32
}

// subflow is one QP's share of a flow on its path.
type subflow struct {
	flow  int
	bytes float64 // payload bytes left
	start int64   // ps
	links [4]int  // indexes into the link table; -1 past the path's end
	done  float64 // completion time, ps
	rate  float64 // payload bytes per ps while active
}

// rocePaths computes RoCEPaths from the run's flows and the T1 each RoCE
// QP's hash picked when it opened (qpEnd.openedOn). It reads the QPs the run opened, so it runs
// after the run.
func (s *Sim) rocePaths() *RoCEPaths {
	f := s.f
	var subs []subflow
	index := map[fluidLink]int{}
	linkOf := func(l fluidLink) int {
		if i, ok := index[l]; ok {
			return i
		}
		index[l] = len(index)
		return len(index) - 1
	}
	type cable struct{ plane, row, t1 int }
	cableBytes := map[cable]float64{}
	t1Bytes := map[[2]int]float64{}
	var total float64
	independent := true
	for i, fl := range s.flows {
		if fl.step != 0 {
			independent = false
		}
		a, b := s.hostOf(fl.Src), s.hostOf(fl.Dst)
		per := s.qpsPerPair / f.Planes // RoCE QPs on each plane
		for j := range s.qpsPerPair {
			k, pl := j/f.Planes, j%f.Planes // startFlow's order of the parts
			q := a.qps[qpKey{peer: b.id, plane: int16(pl), k: int16(k)}]
			if q == nil {
				continue // a flow the run never started
			}
			bytes := float64(partBytes(fl.Bytes, f.Planes*per, j))
			sf := subflow{flow: i, bytes: bytes, start: ps(fl.Start), links: [4]int{-1, -1, -1, -1}}
			src, dst := int32(s.p.Index(fl.Src)), int32(s.p.Index(fl.Dst))
			sf.links[0] = linkOf(fluidLink{0, int32(pl), src, 0})
			last := 1
			if fl.Src.Row != fl.Dst.Row {
				t1 := q.openedOn // before any fault moved it
				sf.links[1] = linkOf(fluidLink{1, int32(pl), int32(fl.Src.Row), int32(t1)})
				sf.links[2] = linkOf(fluidLink{2, int32(pl), int32(t1), int32(fl.Dst.Row)})
				last = 3
				cableBytes[cable{pl, fl.Src.Row, t1}] += bytes
				cableBytes[cable{pl, fl.Dst.Row, t1}] += bytes
				t1Bytes[[2]int{pl, t1}] += bytes
			}
			sf.links[last] = linkOf(fluidLink{3, int32(pl), dst, 0})
			total += bytes
			subs = append(subs, sf)
		}
	}
	r := &RoCEPaths{}
	if total > 0 {
		// The plan's order: plane, T0 row, T1.
		var best cable
		var bestBytes float64
		for pl := range f.Planes {
			for row := range f.T0Count {
				for t1 := range f.T1Count {
					if x := cableBytes[cable{pl, row, t1}]; x > bestBytes {
						best, bestBytes = cable{pl, row, t1}, x
					}
				}
			}
		}
		if bestBytes > 0 {
			r.BusiestLink = s.p.Name(plan.Switch{Role: plan.RoleT0, Plane: best.plane, Index: best.row}) + ":" +
				s.p.Name(plan.Switch{Role: plan.RoleT1, Plane: best.plane, Index: best.t1})
			r.BusiestLinkShare = bestBytes / total
		}
		var bestT1 [2]int
		bestBytes = 0
		for pl := range f.Planes {
			for t1 := range f.T1Count {
				if x := t1Bytes[[2]int{pl, t1}]; x > bestBytes {
					bestT1, bestBytes = [2]int{pl, t1}, x
				}
			}
		}
		if bestBytes > 0 {
			r.BusiestT1 = s.p.Name(plan.Switch{Role: plan.RoleT1, Plane: bestT1[0], Index: bestT1[1]})
			r.BusiestT1Share = bestBytes / total
		}
	}
	if !independent || len(subs) == 0 {
		return r
	}
	// A link's payload rate: its speed less what a full data frame spends
	// on headers, preamble, FCS and gap.
	seg := float64(s.opt.Segment)
	frame := seg + fabric.MinTrimBytes + wireOverhead
	capacity := float64(f.PortSpeedGbps) * 1e9 / 8 / 1e12 * seg / frame // payload bytes per ps
	maxMinFluid(subs, len(index), capacity)
	done := make([]float64, len(s.flows))
	for _, sf := range subs {
		done[sf.flow] = max(done[sf.flow], sf.done)
	}
	type span struct {
		bytes      float64
		start, end float64
	}
	hosts := map[int]*span{}
	for i, fl := range s.flows {
		h := s.p.Index(fl.Src)
		sp := hosts[h]
		if sp == nil {
			sp = &span{start: math.Inf(1)}
			hosts[h] = sp
		}
		sp.bytes += float64(fl.Bytes)
		sp.start = min(sp.start, float64(ps(fl.Start)))
		sp.end = max(sp.end, done[i])
	}
	nic := float64(f.NICSpeedGbps) * 1e9 / 8 / 1e12 // bytes per ps
	shares := make([]float64, 0, len(hosts))
	for _, sp := range hosts {
		shares = append(shares, sp.bytes/(sp.end-sp.start)/nic)
	}
	slices.Sort(shares)
	p := percentiles(shares)
	r.FairShare = &p
	return r
}

// partBytes is the bytes of part j when a flow of total bytes is split
// over n QPs: an even share, the last one taking the remainder.
func partBytes(total int64, n, j int) int64 {
	per := total / int64(n)
	if j == n-1 {
		return total - per*int64(n-1)
	}
	return per
}

// maxMinFluid runs the fluid model: between events (a subflow's start or
// completion) every active subflow gets its max-min fair rate over links
// of the same capacity (progressive filling: the link with the smallest
// share per unfrozen subflow fixes its subflows' rate, and so on). It sets
// each subflow's done time.
func maxMinFluid(subs []subflow, links int, capacity float64) {
	order := make([]int, len(subs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(subs[x].start, subs[y].start) })
	next := 0 // the next subflow to start, in order
	var active []int
	now := 0.0
	left := make([]float64, links)
	count := make([]int, links)
	frozen := make([]bool, len(subs))
	for next < len(order) || len(active) > 0 {
		if len(active) == 0 {
			now = max(now, float64(subs[order[next]].start))
		}
		for next < len(order) && float64(subs[order[next]].start) <= now {
			active = append(active, order[next])
			next++
		}
		// Progressive filling.
		for i := range left {
			left[i], count[i] = capacity, 0
		}
		for _, k := range active {
			frozen[k] = false
			for _, l := range subs[k].links {
				if l >= 0 {
					count[l]++
				}
			}
		}
		unfrozen := len(active)
		for unfrozen > 0 {
			bottleneck, share := -1, math.Inf(1)
			for l := range left {
				if count[l] > 0 {
					if x := left[l] / float64(count[l]); x < share {
						bottleneck, share = l, x
					}
				}
			}
			for _, k := range active {
				if frozen[k] || !slices.Contains(subs[k].links[:], bottleneck) {
					continue
				}
				frozen[k] = true
				subs[k].rate = share
				unfrozen--
				for _, l := range subs[k].links {
					if l >= 0 {
						left[l] -= share
						count[l]--
					}
				}
			}
		}
		// The next event: a completion, or a start.
		until := math.Inf(1)
		for _, k := range active {
			until = min(until, now+subs[k].bytes/subs[k].rate)
		}
		if next < len(order) {
			until = min(until, float64(subs[order[next]].start))
		}
		kept := active[:0]
		for _, k := range active {
			if fin := now + subs[k].bytes/subs[k].rate; fin <= until*(1+1e-12) {
				subs[k].bytes, subs[k].done = 0, fin
				continue
			}
			subs[k].bytes -= subs[k].rate * (until - now)
			kept = append(kept, k)
		}
		active, now = kept, until
	}
}
