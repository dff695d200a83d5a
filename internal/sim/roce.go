package sim

import (
	"math"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// The RoCE baseline's routing (docs/protocol.md 11.2, *Transports*): a
// 2-tier Clos running eBGP (RFC 7938) with ECMP at every T0. Only the T0s
// choose: a T1 has one way down to each T0.
//
// A T0 that sees one of its own uplinks go down (a cut link, a T1 that
// powers off) takes that T1 out of its ECMP group --local-repair later
// (the port's link-down event and the next-hop group update in the switch,
// without waiting for BGP). What it cannot repair is traffic that other
// T0s send towards it through that T1: the T1 has no other way down, and
// only the BGP withdrawal, --convergence after the change, moves it. At a
// convergence every T0's groups follow the state of the fabric then: a
// T1 is out of the group towards T0 r while the link between them is
// down, or came up less than --convergence ago (its BGP session and routes
// are not back yet), so a flapping link stays out until it has been up for
// a whole convergence delay.
//
// The groups hash resiliently (rendezvous hashing: each QP's 5-tuple
// ranks the T1s, the QP takes the first one in its T0's group), so that
// when a T1 leaves a group only the QPs on it move, and when it returns
// only the QPs that rank it first move back to it; every other QP keeps
// its T1.

// DefaultLocalRepair is how long a T0 takes to take a T1 out of its ECMP
// group after its own link to that T1 goes down: link-down detection with
// no debounce timer (Dell's N4000 switches, for one, ship with none; a
// debounce delays exactly this) and the switch's software removing the
// next hop from the hardware group on the port's oper-down event, before
// BGP converges (SONiC's "ECMP acceleration for physical interface down
// events", sonic-swss pull request 351; a Broadcom switch's link-down event
// reached SONiC's orchagent 0.9 ms after the SDK saw it in the log of
// sonic-swss pull request 3185). 5 ms is a few of those steps, in RoCE's
// favour against any debounce.
const DefaultLocalRepair = 5 * time.Millisecond

// ncclNetBytesPerChannel is NCCL's NCCL_P2P_PER_CHANNEL_NET_BW, 14 GB/s:
// NCCL opens a channel, each a connection of its own (one QP,
// NCCL_IB_QPS_PER_CONNECTION=1), per 14 GB/s of the NIC's speed to every
// network peer, and at least one per NIC (ncclTopoGetNchannels in NCCL's
// src/graph/paths.cc, when NCCL_NCHANNELS_PER_NET_PEER is not set).
const ncclNetBytesPerChannel = 14e9

// DefaultRoCEQPs is how many QPs a RoCE host pair opens per plane by
// default: NCCL's channels to a network peer (one per 14 GB/s of the NIC,
// ncclNetBytesPerChannel) spread evenly over the planes, rounded up, at
// least one. small's 800 Gb/s NIC (100 GB/s) takes 8 channels, 2 on each of
// its 4 planes; tiny's 200 Gb/s NIC 2, one a plane.
func DefaultRoCEQPs(f *fabric.Fabric) int {
	channels := int(math.Ceil(float64(f.NICSpeedGbps) * 1e9 / 8 / ncclNetBytesPerChannel))
	return max(1, (max(channels, 1)+f.Planes-1)/f.Planes)
}

// routing is a RoCE run's ECMP groups, one bit per (plane, T0, T1) in
// each view.
type routing struct {
	t0s, t1s int
	// local: the T0 has taken the T1 out of its group towards every
	// destination (its own uplink to it is down, or not yet back).
	local []bool
	// withdrawn: BGP has withdrawn the T0's prefixes through the T1, so
	// that no T0 sends traffic for it there.
	withdrawn []bool
}

func newRouting(f *fabric.Fabric) *routing {
	n := f.Planes * f.T0Count * f.T1Count
	return &routing{t0s: f.T0Count, t1s: f.T1Count, local: make([]bool, n), withdrawn: make([]bool, n)}
}

func (r *routing) at(plane, row, t1 int) int { return (plane*r.t0s+row)*r.t1s + t1 }

// uplinkOf reports the plane, T0 row and T1 of link ls when it joins a T0
// and a T1.
func (s *Sim) uplinkOf(ls *linkState) (plane, row, t1 int, ok bool) {
	hosts := int32(s.f.Hosts())
	a, b := ls.ends[0].dev, ls.ends[1].dev
	if a < hosts || b < hosts {
		return 0, 0, 0, false
	}
	x, y := s.switchOf(a), s.switchOf(b)
	if x.Role == plan.RoleT1 {
		x, y = y, x
	}
	if x.Role != plan.RoleT0 || y.Role != plan.RoleT1 {
		return 0, 0, 0, false
	}
	return x.Plane, x.Index, y.Index, true
}

// ecmp is the T1 through which a's T0 sends a's frames to b on the plane,
// for the pair's k-th QP of the plane: the first T1 of the QP's ranking
// (its 5-tuple's hash, the same from either end, so that a pair's two
// directions share a T1 while nothing fails) that a's T0 has in its group
// and that BGP has not withdrawn for b's T0; the first of all when none
// is (the destination is cut off: any T1 loses it).
func (s *Sim) ecmp(a, b *host, plane, k int) int {
	lo, hi := a, b
	if lo.id > hi.id {
		lo, hi = hi, lo
	}
	h := s.pairHash(lo, hi, plane, 0xec^uint64(k)<<32)
	best, first := -1, -1
	var bestScore, firstScore uint64
	for t := 0; t < s.f.T1Count; t++ {
		score := mix64(h ^ uint64(t+1)*0x9e3779b97f4a7c15)
		if first < 0 || score > firstScore {
			first, firstScore = t, score
		}
		if r := s.route; r != nil && (r.local[r.at(plane, a.at.Row, t)] || r.withdrawn[r.at(plane, b.at.Row, t)]) {
			continue
		}
		if best < 0 || score > bestScore {
			best, bestScore = t, score
		}
	}
	if best < 0 {
		return first
	}
	return best
}

// scheduleRouting: fault i changed state now (on: went down); its T0s
// repair locally --local-repair after each down edge, and routing
// converges --convergence after every edge. A flap changes every spell for
// as long as it runs, and an event pending for each edge filled memory
// when spells were short: a flap's repairs and convergences follow its
// edges in one chain each instead, one event of each pending at a time
// (flapRepaired, flapConverged).
func (s *Sim) scheduleRouting(i int, on bool, gen uint32) {
	fs := &s.faults[i]
	switch {
	case fs.Kind != Flap:
		if on {
			s.global.push(event{at: s.now + ps(s.opt.LocalRepair), kind: evRepair, arg: int32(i)})
		}
		s.global.push(event{at: s.now + ps(s.opt.Convergence), kind: evConverge})
	case !fs.converging:
		fs.converging = true
		s.global.push(event{at: s.now + ps(s.opt.LocalRepair), kind: evRepair, arg: int32(i), gen: 1})
		s.global.push(event{at: s.now + ps(s.opt.Convergence), kind: evConverge, arg: int32(i) + 1, gen: gen})
	}
}

// localRepair: fault i's down edge was --local-repair ago; every T0 at an
// end of one of its links takes the T1 at the other end out of its ECMP
// group (a cut T0-T1 link: its T0; a T1 powered off: every T0). The link
// may be back already: its BGP session is not, and convergence returns it.
func (s *Sim) localRepair(i int) {
	fs := &s.faults[i]
	repaired, changed := false, false
	for _, ls := range fs.links {
		if p, row, t1, ok := s.uplinkOf(ls); ok {
			at := s.route.at(p, row, t1)
			repaired, changed = true, changed || !s.route.local[at]
			s.route.local[at] = true
		}
	}
	if repaired {
		s.res.LocalRepairs++ // a NIC's link has no other way: nothing to repair
	}
	if changed {
		s.reroute()
	}
}

// flapRepaired: flap i's T0s repaired after its down edge --local-repair
// ago; the next repair is due --local-repair after its next down edge.
func (s *Sim) flapRepaired(i int) {
	fs := &s.faults[i]
	up, _ := fs.nextEdge(s.now-ps(s.opt.LocalRepair), true)
	if next, g := fs.nextEdge(up, false); next >= 0 && g == 1 {
		s.global.push(event{at: next + ps(s.opt.LocalRepair), kind: evRepair, arg: int32(i), gen: 1})
	}
}

// converge: BGP has converged on the fabric's state now: a T1 is in T0
// r's groups, and carries traffic towards r, while their link is up and
// has been for --convergence (its session re-established, its routes
// advertised again); every link no fault touched always is.
func (s *Sim) converge() {
	s.res.Convergences++
	settled := s.now - ps(s.opt.Convergence)
	for _, ls := range s.linkList {
		if p, row, t1, ok := s.uplinkOf(ls); ok {
			out := ls.down || ls.upSince > settled
			at := s.route.at(p, row, t1)
			s.route.local[at], s.route.withdrawn[at] = out, out
		}
	}
	s.reroute()
}

// reroute moves every RoCE QP end whose T1 its T0's group no longer
// picks, rewriting its qp_send entry with the new T1 offset. The hosts in
// order, each one's QPs by QPN: a run's moves are a function of its
// inputs.
func (s *Sim) reroute() {
	for _, a := range s.hosts {
		if a == nil {
			continue
		}
		for _, q := range a.byQPN {
			if q == nil || q.plane < 0 || a.at.Row == q.peer.at.Row {
				continue // an MRC QP; or both ends under one T0, which turns their frames round
			}
			t1 := s.ecmp(a, q.peer, q.plane, q.k)
			if t1 == q.t1 {
				continue
			}
			base := s.p.SplitEV(s.p.EVSet()[q.entry.FirstSlot]).T1
			q.t1, q.movedAt = t1, s.now
			q.entry.T1Offset = ((t1-base)%s.f.T1Count + s.f.T1Count) % s.f.T1Count
			if err := rehash(a.nic, q.entry); err != nil {
				s.fail(err)
				return
			}
			s.res.Rehashed++
			s.stalls(a, q, -1)
		}
	}
}

// stallsAll counts the RoCE QP pairs whose path fault i's links, down
// now, cut.
func (s *Sim) stallsAll(i int) {
	for _, a := range s.hosts {
		if a == nil {
			continue
		}
		for _, q := range a.byQPN {
			if q != nil && q.plane >= 0 {
				s.stalls(a, q, i)
			}
		}
	}
}

// stalls charges the pair of QP end q (at host a), while it has a write
// to send, to the fault holding down a link on the path of a's frames to
// its peer, when there is one: the link from a's NIC to its T0, the T0's
// uplink to q's T1, that T1's link down to the peer's T0, and the peer's
// link (the uplinks only when the two hosts are under different T0s).
// The peer's answers come back the same way (the NIC turns them round).
// only >= 0 counts that fault's links alone.
func (s *Sim) stalls(a *host, q *qpEnd, only int) {
	if q.active == nil && len(q.queue) == 0 {
		return // nothing of its own to send: it waits on nothing
	}
	b := q.peer
	var path [4]*linkState
	n := 0
	add := func(dev int32, port int) {
		if ls := s.links[linkKey{dev, int16(port)}]; ls != nil {
			path[n] = ls
			n++
		}
	}
	t0 := func(h *host) int32 {
		return s.switchID(plan.Switch{Role: plan.RoleT0, Plane: q.plane, Index: h.at.Row})
	}
	add(t0(a), s.p.T0DownPort(a.at.Port))
	if a.at.Row != b.at.Row {
		add(t0(a), s.p.T0UpPort(q.t1))
		add(t0(b), s.p.T0UpPort(q.t1))
	}
	add(t0(b), s.p.T0DownPort(b.at.Port))
	for _, ls := range path[:n] {
		if !ls.down || only >= 0 && !s.faults[only].holds(ls) {
			continue
		}
		by := ls.downBy
		if only >= 0 {
			by = only
		}
		lo := q
		if a.id > b.id {
			lo = q.other
		}
		c := &s.cost[by]
		if c.stalled == nil {
			c.stalled = map[*qpEnd]bool{}
		}
		c.stalled[lo] = true
		return
	}
}

// holds reports whether link ls is one of the fault's.
func (fs *faultState) holds(ls *linkState) bool {
	for _, x := range fs.links {
		if x == ls {
			return true
		}
	}
	return false
}
