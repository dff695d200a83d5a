package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// A sweep answers link-failure what-ifs from one walk of the fabric with
// every link up (the baseline). A path is lost when a failed link is on it;
// the baseline's memoised states say which links every path crosses: the
// NIC's link to its first T0, then one forward per state (T0 up to a T1,
// T1 down to a T0, T0 down to the NIC). A what-if takes the forwards that
// cross the failed links (an index by switch port), finds the source hosts
// whose paths go through them (each forward's state is reached by known
// sources: the ones whose first state it is, or whose first state leads to
// it over known T1s), and counts exactly, per source host, the lost paths as
// a union of boxes (plane x T1s x destination rows x destination ports):
// nothing is assumed about which links resemble which, and two failures on
// one path count it once.
//
// The baseline must verify (every path delivered, no failure), and every
// switch must shift the uSID it acts on (no transit forward): then a path's
// links are exactly those forwards.

// Link classes of a sweep.
const (
	ClassT0T1 = "t0-t1"
	ClassHost = "host"
)

// Sweeper holds a fabric's baseline walk and answers what-ifs from it. It
// is safe for concurrent use.
type Sweeper struct {
	p      *plan.Plan
	planes []*sweepPlane
	// evSlots counts the base EV set's slots per (plane, T1); evPlane per
	// plane.
	evSlots [][]int
	evPlane []int
	// HostPaths is the number of paths one host sends (every plane);
	// PlanePaths those in one plane.
	HostPaths, PlanePaths uint64

	words                           [3]int // bitset words of T1s, rows, ports
	allT1, allRows, allPorts        bitset
	oneT1, oneRow, onePort          []bitset
	nT1, nRows, nPorts, hostsPerRow int
}

type bitset []uint64

func (b bitset) has(i int) bool { return b[i>>6]>>(i&63)&1 != 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

func newBits(words, n int, set func(i int) bool) bitset {
	b := make(bitset, words)
	for i := 0; i < n; i++ {
		if set(i) {
			b[i>>6] |= 1 << (i & 63)
		}
	}
	return b
}

type sweepPlane struct {
	w      *planeWalk
	groups []sweepGroup
	// groupOf is the group of each host.
	groupOf []int32
	byLong  map[*result][]int32
	byShort map[*result][]int32
	info    map[*result]nodeInfo
	// The forwards of the plane's states by the switch port they leave
	// from (index sw*stride + port, in edgeStart).
	stride    int
	edgeStart []int32
	edges     []sweepEdge
	// reach1 lists the groups that reach a T1 state (level 1); reach2 the
	// groups, with their T1s, that reach a destination T0 state (level 2).
	reach1 map[*result][]int32
	reach2 map[*result][]reachClass
}

// sweepGroup is the hosts of one row whose paths start from the same
// states.
type sweepGroup struct {
	long, short *result
	row         int
	hosts       []int32
}

type nodeInfo struct {
	tmpl  uint8
	level int
	sw    int
	v     uint16
}

type sweepEdge struct {
	node  *result
	child int32
}

type reachClass struct {
	t1s    bitset
	groups []int32
}

// NewSweeper walks the fabric once with every link up and prepares the
// what-ifs. It fails when the baseline does not verify.
func NewSweeper(ctx context.Context, p *plan.Plan, src Source) (*Sweeper, error) {
	rep, walks, err := run(ctx, p, src, Options{}, true)
	if err != nil {
		return nil, err
	}
	if !rep.OK() {
		msg := fmt.Sprintf("%d of %d paths not delivered", rep.Paths-rep.Delivered, rep.Paths)
		if len(rep.Failures) > 0 {
			msg = rep.Failures[0].String()
		}
		return nil, fmt.Errorf("sweep: the fabric does not verify with every link up (%s): fix that first", msg)
	}
	f := p.F
	s := &Sweeper{p: p, nT1: f.T1Count, nRows: f.T0Count, nPorts: f.T0Down, hostsPerRow: f.T0Down}
	s.PlanePaths = uint64(f.T1Count)*uint64(f.Hosts()-f.T0Down) + uint64(f.T0Down-1)
	s.HostPaths = uint64(f.Planes) * s.PlanePaths
	s.words = [3]int{(f.T1Count + 63) / 64, (f.T0Count + 63) / 64, (f.T0Down + 63) / 64}
	all := func(int) bool { return true }
	s.allT1, s.allRows, s.allPorts = newBits(s.words[0], f.T1Count, all), newBits(s.words[1], f.T0Count, all), newBits(s.words[2], f.T0Down, all)
	one := func(words, n int) []bitset {
		out := make([]bitset, n)
		for i := range out {
			out[i] = newBits(words, n, func(j int) bool { return j == i })
		}
		return out
	}
	s.oneT1, s.oneRow, s.onePort = one(s.words[0], f.T1Count), one(s.words[1], f.T0Count), one(s.words[2], f.T0Down)
	s.evSlots = make([][]int, f.Planes)
	s.evPlane = make([]int, f.Planes)
	for pl := range s.evSlots {
		s.evSlots[pl] = make([]int, f.T1Count)
	}
	for _, ev := range rep.EVSet {
		fl := p.SplitEV(ev)
		if fl.Plane < f.Planes && fl.T1 < f.T1Count {
			s.evSlots[fl.Plane][fl.T1]++
			s.evPlane[fl.Plane]++
		}
	}
	s.planes = make([]*sweepPlane, f.Planes)
	errs := make([]error, f.Planes)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(runtime.GOMAXPROCS(0), f.Planes) {
		wg.Go(func() {
			for {
				pl := int(next.Add(1) - 1)
				if pl >= f.Planes {
					return
				}
				s.planes[pl], errs[pl] = s.newSweepPlane(walks[pl])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

func unpackKey(k stateKey) nodeInfo {
	return nodeInfo{tmpl: uint8(k >> 63), level: int(k >> 60 & 7), sw: int(k >> 36 & 0xffff), v: uint16(k >> 20)}
}

func (s *Sweeper) newSweepPlane(w *planeWalk) (*sweepPlane, error) {
	p, f := s.p, s.p.F
	sp := &sweepPlane{w: w, byLong: map[*result][]int32{}, byShort: map[*result][]int32{}, info: make(map[*result]nodeInfo, len(w.memo)),
		groupOf: make([]int32, f.Hosts()), reach1: map[*result][]int32{}, reach2: map[*result][]reachClass{}}
	// Every state must shift (a transit forward is a link the index below
	// would not see) and lead somewhere for every member of the next
	// level's family (the baseline delivers everything).
	sp.stride = max(f.T0Down+f.T0Up, f.T0Count)
	count := make([]int32, (f.T0Count+f.T1Count)*sp.stride+1)
	type fwd struct {
		slot int32
		e    sweepEdge
	}
	n := 0
	for k := range w.memo {
		in := unpackKey(k)
		n += len(w.familyAt(in.tmpl, in.level+1))
	}
	all := make([]fwd, 0, n)
	for k, r := range w.memo {
		in := unpackKey(k)
		sp.info[r] = in
		if !w.sw[in.sw].MyUSID(p.Key48(in.v)) {
			return nil, fmt.Errorf("sweep: %s forwards %s without shifting it: the sweep needs every switch to shift the uSID it acts on",
				p.Name(w.switchAt(in.sw)), keyText(p, in.v))
		}
		s := w.switchAt(in.sw)
		for i, y := range w.familyAt(in.tmpl, in.level+1) {
			rt, ok := w.sw[in.sw].Route(p.Key48(y))
			if !ok || rt.Port < 0 || rt.Port >= sp.stride {
				return nil, fmt.Errorf("sweep: %s: no route for %s in the baseline", p.Name(s), keyText(p, y))
			}
			slot := int32(in.sw*sp.stride + rt.Port)
			count[slot+1]++
			all = append(all, fwd{slot, sweepEdge{r, int32(i)}})
		}
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	sp.edgeStart = count
	sp.edges = make([]sweepEdge, len(all))
	fill := append([]int32(nil), count...)
	for _, a := range all {
		sp.edges[fill[a.slot]] = a.e
		fill[a.slot]++
	}
	// Groups: hosts of a row that start from the same two states.
	type gk struct {
		long, short *result
		row         int
	}
	index := map[gk]int32{}
	for h := 0; h < f.Hosts(); h++ {
		host := p.HostByIndex(h)
		i := h*f.Planes + w.plane
		x0 := w.switchIndex(p.NICNeighbor(host, w.plane).Switch())
		long := w.memo[newStateKey(tmplLong, 0, 0, x0, w.nics.ownT0[i], -1)]
		short := w.memo[newStateKey(tmplShort, 0, 0, x0, w.nics.ownT0[i], host.Row)]
		if long == nil || short == nil {
			return nil, fmt.Errorf("sweep: %s: no first state in plane %d", p.HostName(host), w.plane)
		}
		key := gk{long, short, host.Row}
		g, ok := index[key]
		if !ok {
			g = int32(len(sp.groups))
			index[key] = g
			sp.groups = append(sp.groups, sweepGroup{long: long, short: short, row: host.Row})
			sp.byLong[long] = append(sp.byLong[long], g)
			sp.byShort[short] = append(sp.byShort[short], g)
		}
		sp.groups[g].hosts = append(sp.groups[g].hosts, int32(h))
		sp.groupOf[h] = g
	}
	// Level 1: the groups whose first state leads to it over its T1.
	// Level 2: per class of first states with the same successors, the T1s
	// over which they lead to it.
	type class struct {
		first  *result
		groups []int32
	}
	var classes []class
	classOf := map[string]int{}
	ids := map[*result]int{}
	id := func(r *result) int {
		if i, ok := ids[r]; ok {
			return i
		}
		ids[r] = len(ids) + 1
		return len(ids)
	}
	buf := make([]byte, 0, 4*f.T1Count)
	for g := range sp.groups {
		long := sp.groups[g].long
		buf = buf[:0]
		for t := 0; t < f.T1Count; t++ {
			c := long.child(t)
			if c == nil {
				return nil, fmt.Errorf("sweep: plane %d: a first state leads nowhere over T1 %d", w.plane, t)
			}
			v := id(c)
			buf = append(buf, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		ci, ok := classOf[string(buf)]
		if !ok {
			ci = len(classes)
			classOf[string(buf)] = ci
			classes = append(classes, class{first: long})
		}
		classes[ci].groups = append(classes[ci].groups, int32(g))
	}
	for r, in := range sp.info {
		if in.tmpl != tmplLong {
			continue
		}
		switch in.level {
		case 1:
			t, ok := w.t1Of.get(in.v)
			if !ok {
				continue
			}
			for g := range sp.groups {
				if sp.groups[g].long.child(t) == r {
					sp.reach1[r] = append(sp.reach1[r], int32(g))
				}
			}
		case 2:
			b, ok := w.rowOf.get(in.v)
			if !ok {
				continue
			}
			for _, c := range classes {
				t1s := newBits(s.words[0], f.T1Count, func(t int) bool {
					x := c.first.child(t)
					return x != nil && x.child(b) == r
				})
				if t1s.count() > 0 {
					sp.reach2[r] = append(sp.reach2[r], reachClass{t1s, c.groups})
				}
			}
		}
	}
	return sp, nil
}

// A box is a set of lost paths of one source: plane x T1s x destination
// rows x destination ports (the source's own row never counts).
type box struct {
	plane      int
	t1, row, k bitset
	// Their sizes, and whether the box's EVs are counted yet.
	nT1, nRow, nK int
	evDone        bool
}

// rows counts the box's destination rows other than own.
func (b *box) rows(own int) int {
	if own >= 0 && b.row.has(own) {
		return b.nRow - 1
	}
	return b.nRow
}

// WhatIf is what one set of failed links costs.
type WhatIf struct {
	Links []Link
	// LostPaths are the paths lost, Hosts the source hosts that lose at
	// least one, HostPairs the (source, destination) pairs that do.
	LostPaths uint64
	Hosts     uint64
	HostPairs uint64
	// MaxPairPaths is the most paths one pair loses: each is one (plane,
	// T1) of the pair's EVs.
	MaxPairPaths uint64
	// MaxHostShare is the largest share of one host's paths lost;
	// MaxPlaneShare the largest share of its paths in one plane.
	MaxHostShare, MaxPlaneShare float64
	// EVSlots are the base EV set's slots whose paths some pair loses.
	EVSlots int
}

// HostLoss is one source host's loss in a what-if.
type HostLoss struct {
	Host         int
	Lost, Pairs  uint64
	MaxPairPaths uint64
	// PlaneLost is the most paths it loses in one plane.
	PlaneLost uint64
}

// sweepScratch is one worker's reusable state.
type sweepScratch struct {
	boxes   [][]*box  // per touched (plane, group) slot
	slotOf  [][]int32 // per plane and group: its slot + 1, or 0
	cnt     [][]int32 // per plane and group: boxes reaching it
	touched []int64
	shorts  [][]shortLoss
	extras  map[int][]*box // host -> its own boxes (its NIC link is down)
	xshort  map[int][]shortLoss
}

type shortLoss struct {
	plane int
	k     bitset
}

func newScratch() *sweepScratch {
	return &sweepScratch{extras: map[int][]*box{}, xshort: map[int][]shortLoss{}}
}

// counts is plane's per-group counter (all zero between what-ifs).
func (sc *sweepScratch) counts(s *Sweeper, plane int) []int32 {
	if sc.cnt == nil {
		sc.cnt = make([][]int32, len(s.planes))
	}
	if sc.cnt[plane] == nil {
		sc.cnt[plane] = make([]int32, len(s.planes[plane].groups))
	}
	return sc.cnt[plane]
}

func (sc *sweepScratch) reset() {
	for i, k := range sc.touched {
		sc.boxes[i] = sc.boxes[i][:0]
		sc.shorts[i] = sc.shorts[i][:0]
		sc.slotOf[k>>32][int32(k)] = 0
	}
	sc.touched = sc.touched[:0]
	clear(sc.extras)
	clear(sc.xshort)
}

// slot is the index of (plane, group)'s losses, or -1.
func (sc *sweepScratch) slot(plane int, g int32) int {
	if sc.slotOf == nil || sc.slotOf[plane] == nil {
		return -1
	}
	return int(sc.slotOf[plane][g]) - 1
}

// at is the index of (plane, group)'s losses, made when new.
func (sc *sweepScratch) at(s *Sweeper, plane int, g int32) int {
	if sc.slotOf == nil {
		sc.slotOf = make([][]int32, len(s.planes))
	}
	if sc.slotOf[plane] == nil {
		sc.slotOf[plane] = make([]int32, len(s.planes[plane].groups))
	}
	if i := sc.slotOf[plane][g]; i > 0 {
		return int(i) - 1
	}
	i := len(sc.touched)
	sc.slotOf[plane][g] = int32(i + 1)
	sc.touched = append(sc.touched, int64(plane)<<32|int64(g))
	if i == len(sc.boxes) {
		sc.boxes = append(sc.boxes, nil)
		sc.shorts = append(sc.shorts, nil)
	}
	return i
}

// WhatIf computes what taking links down costs. With detail, every source
// host that loses a path is appended to it.
func (s *Sweeper) WhatIf(links []Link, detail *[]HostLoss) (WhatIf, error) {
	sc := newScratch()
	return s.whatIf(links, sc, detail, nil)
}

// cable is a link's two ends: switch ports (sw index in its plane), or a
// NIC (host >= 0).
type cableEnd struct {
	plane, sw, port int
}

func (s *Sweeper) ends(l Link) (ends []cableEnd, host int, err error) {
	p := s.p
	nb, ok := p.Neighbor(l.Switch, l.Port)
	if !ok || l.Switch.Plane < 0 || l.Switch.Plane >= p.F.Planes {
		return nil, -1, fmt.Errorf("sweep: %s port %d is not wired", p.Name(l.Switch), l.Port)
	}
	w := s.planes[l.Switch.Plane].w
	ends = append(ends, cableEnd{l.Switch.Plane, w.switchIndex(l.Switch), l.Port})
	host = -1
	if nb.Role == plan.RoleNIC {
		host = nb.Index
	} else {
		ends = append(ends, cableEnd{nb.Plane, w.switchIndex(nb.Switch()), nb.Port})
	}
	return ends, host, nil
}

// visitFunc receives n hosts that lose the same: lost paths, pairs, the most
// one pair loses, the most lost in one plane.
type visitFunc func(n uint64, lost, pairs, maxPair, planeLost uint64)

func (s *Sweeper) whatIf(links []Link, sc *sweepScratch, detail *[]HostLoss, visit visitFunc) (WhatIf, error) {
	defer sc.reset()
	out := WhatIf{Links: links}
	newBox := func(b box) *box {
		b.nT1, b.nRow, b.nK = b.t1.count(), b.row.count(), b.k.count()
		return &b
	}
	type hit struct {
		b      *box
		groups []int32
	}
	var hits []hit
	for _, l := range links {
		ends, host, err := s.ends(l)
		if err != nil {
			return out, err
		}
		if host >= 0 {
			pl := l.Switch.Plane
			sc.extras[host] = append(sc.extras[host], newBox(box{plane: pl, t1: s.allT1, row: s.allRows, k: s.allPorts}))
			sc.xshort[host] = append(sc.xshort[host], shortLoss{pl, s.allPorts})
		}
		for _, e := range ends {
			sp := s.planes[e.plane]
			slot := e.sw*sp.stride + e.port
			for _, ed := range sp.edges[sp.edgeStart[slot]:sp.edgeStart[slot+1]] {
				in := sp.info[ed.node]
				i := int(ed.child)
				switch {
				case in.tmpl == tmplShort:
					for _, g := range sp.byShort[ed.node] {
						j := sc.at(s, e.plane, g)
						sc.shorts[j] = append(sc.shorts[j], shortLoss{e.plane, s.onePort[i]})
					}
				case in.level == 0:
					b := newBox(box{plane: e.plane, t1: s.oneT1[i], row: s.allRows, k: s.allPorts})
					hits = append(hits, hit{b, sp.byLong[ed.node]})
				case in.level == 1:
					t, _ := sp.w.t1Of.get(in.v)
					b := newBox(box{plane: e.plane, t1: s.oneT1[t], row: s.oneRow[i], k: s.allPorts})
					hits = append(hits, hit{b, sp.reach1[ed.node]})
				case in.level == 2:
					r, _ := sp.w.rowOf.get(in.v)
					for _, rc := range sp.reach2[ed.node] {
						b := newBox(box{plane: e.plane, t1: rc.t1s, row: s.oneRow[r], k: s.onePort[i]})
						hits = append(hits, hit{b, rc.groups})
					}
				}
			}
		}
	}
	planes := map[int]bool{}
	for _, h := range hits {
		planes[h.b.plane] = true
	}
	for _, key := range sc.touched {
		planes[int(key>>32)] = true
	}
	for _, xb := range sc.extras {
		for _, b := range xb {
			planes[b.plane] = true
		}
	}
	// In one plane, a group that only one box reaches (no lost same-T0
	// path, no host with a NIC link down) loses that box: such groups are
	// counted together, per box. The others go through their slots.
	var agg []hit
	if len(planes) == 1 {
		for pl := range planes {
			cnt := sc.counts(s, pl)
			for _, h := range hits {
				for _, g := range h.groups {
					cnt[g]++
				}
			}
			for _, key := range sc.touched {
				cnt[int32(key)] += 2
			}
			for x := range sc.extras {
				cnt[s.planes[pl].groupOf[x]] += 2
			}
			for _, h := range hits {
				for _, g := range h.groups {
					if cnt[g] != 1 {
						j := sc.at(s, pl, g)
						sc.boxes[j] = append(sc.boxes[j], h.b)
					}
				}
				agg = append(agg, h)
			}
		}
	} else {
		for _, h := range hits {
			for _, g := range h.groups {
				j := sc.at(s, h.b.plane, g)
				sc.boxes[j] = append(sc.boxes[j], h.b)
			}
		}
	}
	// EV slots: the (plane, T1)s of every box that holds a path.
	evT1 := make([]bitset, s.p.F.Planes)
	evAll := make([]bool, s.p.F.Planes)
	markEV := func(b *box, own int) {
		if b.evDone || b.rows(own) == 0 {
			return
		}
		b.evDone = true
		if evT1[b.plane] == nil {
			evT1[b.plane] = make(bitset, s.words[0])
		}
		for w := range b.t1 {
			evT1[b.plane][w] |= b.t1[w]
		}
	}
	record := func(n uint64, h HostLoss) {
		if h.Lost == 0 || n == 0 {
			return
		}
		out.LostPaths += n * h.Lost
		out.Hosts += n
		out.HostPairs += n * h.Pairs
		out.MaxPairPaths = max(out.MaxPairPaths, h.MaxPairPaths)
		out.MaxHostShare = max(out.MaxHostShare, float64(h.Lost)/float64(s.HostPaths))
		out.MaxPlaneShare = max(out.MaxPlaneShare, float64(h.PlaneLost)/float64(s.PlanePaths))
		if visit != nil {
			visit(n, h.Lost, h.Pairs, h.MaxPairPaths, h.PlaneLost)
		}
	}
	// Groups counted together.
	for _, h := range agg {
		pl := h.b.plane
		cnt := sc.cnt[pl]
		var nOut, nIn uint64 // hosts of the groups without and with their row in the box
		ownIn := -1
		for _, g := range h.groups {
			if cnt[g] != 1 {
				continue
			}
			grp := &s.planes[pl].groups[g]
			if h.b.row.has(grp.row) {
				nIn += uint64(len(grp.hosts))
				ownIn = grp.row
			} else {
				nOut += uint64(len(grp.hosts))
			}
			if detail != nil {
				hl, err := s.loss(-1, grp.row, -1, []*box{h.b}, nil)
				if err != nil {
					return out, err
				}
				for _, x := range grp.hosts {
					if hl.Lost > 0 {
						hl.Host = int(x)
						*detail = append(*detail, hl)
					}
				}
			}
		}
		for _, c := range []struct {
			n   uint64
			own int
		}{{nOut, -1}, {nIn, ownIn}} {
			if c.n == 0 {
				continue
			}
			markEV(h.b, c.own)
			hl, err := s.loss(-1, c.own, -1, []*box{h.b}, nil)
			if err != nil {
				return out, err
			}
			record(c.n, hl)
		}
	}
	if len(planes) == 1 {
		for pl := range planes {
			cnt := sc.cnt[pl]
			for _, h := range hits {
				for _, g := range h.groups {
					cnt[g] = 0
				}
			}
			for _, key := range sc.touched {
				cnt[int32(key)] = 0
			}
			for x := range sc.extras {
				cnt[s.planes[pl].groupOf[x]] = 0
			}
		}
	}
	// Hosts that lose the same go together: by the (plane, group) slots
	// that hold their losses. Hosts with losses of their own (their NIC
	// link is down) or with lost same-T0 paths (a host never loses the path
	// to itself) go alone.
	type combo struct {
		slots   []int
		hosts   []int32
		special []int32 // hosts of the combo with boxes of their own
	}
	var combos []*combo
	var special map[int][]int32 // slot -> its hosts with boxes of their own
	if len(planes) <= 1 {
		for h, xb := range sc.extras {
			pl := xb[0].plane
			if j := sc.slot(pl, s.planes[pl].groupOf[h]); j >= 0 {
				if special == nil {
					special = map[int][]int32{}
				}
				special[j] = append(special[j], int32(h))
			} else {
				combos = append(combos, &combo{hosts: []int32{int32(h)}, special: []int32{int32(h)}})
			}
		}
	} else {
		// Several planes: a host's losses are in its group of each plane.
		// Hosts come row by row, and a run of them shares its groups.
		var pls []int
		for pl := range planes {
			pls = append(pls, pl)
		}
		sort.Ints(pls)
		byKey := map[string]*combo{}
		var kb, last []byte
		var cur *combo
		var xhosts []int
		for h := range sc.extras {
			xhosts = append(xhosts, h)
		}
		for h := 0; h < s.p.F.Hosts(); h++ {
			kb = kb[:0]
			for _, pl := range pls {
				if j := sc.slot(pl, s.planes[pl].groupOf[h]); j >= 0 {
					kb = append(kb, byte(j), byte(j>>8), byte(j>>16), byte(j>>24))
				}
			}
			extra := slices.Contains(xhosts, h)
			if len(kb) == 0 && !extra {
				continue
			}
			if cur == nil || string(kb) != string(last) {
				cur = byKey[string(kb)]
				if cur == nil {
					var js []int
					for i := 0; i < len(kb); i += 4 {
						js = append(js, int(kb[i])|int(kb[i+1])<<8|int(kb[i+2])<<16|int(kb[i+3])<<24)
					}
					cur = &combo{slots: js}
					byKey[string(kb)] = cur
					combos = append(combos, cur)
				}
				last = append(last[:0], kb...)
			}
			cur.hosts = append(cur.hosts, int32(h))
			if extra {
				cur.special = append(cur.special, int32(h))
			}
		}
	}
	var all []*box
	var shorts []shortLoss
	one := func(h int32, row int, boxes []*box, sh []shortLoss) error {
		xb := sc.extras[int(h)]
		for _, b := range xb {
			markEV(b, row)
		}
		for _, x := range sc.xshort[int(h)] {
			evAll[x.plane] = true
		}
		all = append(append(all[:0], boxes...), xb...)
		shorts = append(append(shorts[:0], sh...), sc.xshort[int(h)]...)
		hl, err := s.loss(int(h), row, int(h)%s.hostsPerRow, all, shorts)
		if err != nil {
			return err
		}
		record(1, hl)
		if detail != nil && hl.Lost > 0 {
			*detail = append(*detail, hl)
		}
		return nil
	}
	var slotCombo combo
	n := len(combos)
	if len(planes) <= 1 {
		n = len(sc.touched) + len(combos)
	}
	for ci := 0; ci < n; ci++ {
		var c *combo
		var boxes []*box
		var sh []shortLoss
		if len(planes) <= 1 && ci < len(sc.touched) {
			// One plane: a slot is one group.
			key := sc.touched[ci]
			slotCombo = combo{hosts: s.planes[int(key>>32)].groups[int32(key)].hosts, special: special[ci]}
			c = &slotCombo
			boxes, sh = sc.boxes[ci], sc.shorts[ci]
		} else {
			if len(planes) <= 1 {
				c = combos[ci-len(sc.touched)]
			} else {
				c = combos[ci]
			}
			for _, j := range c.slots {
				boxes = append(boxes, sc.boxes[j]...)
				sh = append(sh, sc.shorts[j]...)
			}
		}
		if len(c.hosts) == 0 {
			continue
		}
		row := int(c.hosts[0]) / s.hostsPerRow
		for _, b := range boxes {
			markEV(b, row)
		}
		for _, x := range sh {
			if x.k.count() > 0 {
				evAll[x.plane] = true
			}
		}
		// A host whose own port is among the lost same-T0 destinations
		// loses one path fewer than the others: it goes alone too.
		var ports bitset
		for _, x := range sh {
			if ports == nil {
				ports = make(bitset, s.words[2])
			}
			for w := range ports {
				ports[w] |= x.k[w]
			}
		}
		alone := func(h int32) bool {
			if _, ok := sc.extras[int(h)]; ok {
				return true
			}
			return ports != nil && ports.has(int(h)%s.hostsPerRow)
		}
		plain := uint64(len(c.hosts) - len(c.special))
		if ports != nil {
			plain = 0
			for _, h := range c.hosts {
				if alone(h) {
					if _, ok := sc.extras[int(h)]; !ok {
						if err := one(h, row, boxes, sh); err != nil {
							return out, err
						}
					}
				} else {
					plain++
				}
			}
		}
		for _, h := range c.special {
			if err := one(h, row, boxes, sh); err != nil {
				return out, err
			}
		}
		if plain == 0 {
			continue
		}
		hl, err := s.loss(-1, row, -1, boxes, sh)
		if err != nil {
			return out, err
		}
		record(plain, hl)
		if detail != nil && hl.Lost > 0 {
			for _, h := range c.hosts {
				if !alone(h) {
					hl.Host = int(h)
					*detail = append(*detail, hl)
				}
			}
		}
	}
	for pl := range evT1 {
		if evAll[pl] {
			out.EVSlots += s.evPlane[pl]
			continue
		}
		if evT1[pl] == nil {
			continue
		}
		for t := 0; t < s.nT1; t++ {
			if evT1[pl].has(t) {
				out.EVSlots += s.evSlots[pl][t]
			}
		}
	}
	if detail != nil {
		sort.Slice(*detail, func(i, j int) bool { return (*detail)[i].Host < (*detail)[j].Host })
	}
	return out, nil
}

// rowsBut counts the rows of b other than own.
func (s *Sweeper) rowsBut(b bitset, own int) int {
	n := b.count()
	if own >= 0 && b.has(own) {
		n--
	}
	return n
}

// andCount counts the members of the intersection of sets, leaving out
// member skip.
func andCount(sets []bitset, skip int) int {
	n := 0
	for w := range sets[0] {
		x := sets[0][w]
		for _, b := range sets[1:] {
			x &= b[w]
		}
		if skip >= 0 && skip>>6 == w {
			x &^= 1 << (skip & 63)
		}
		n += bits.OnesCount64(x)
	}
	return n
}

// loss counts what one source host (on row own, down port port; host and
// port -1 for any host of a group without same-T0 losses) loses to boxes
// (different T0s) and shorts (same T0).
func (s *Sweeper) loss(host, own, port int, boxes []*box, shorts []shortLoss) (HostLoss, error) {
	hl := HostLoss{Host: host}
	// Drop empty boxes (a row set holding only the source's own row).
	var buf [16]*box
	live := buf[:0]
	for _, b := range boxes {
		if b.rows(own) > 0 {
			if len(live) == 16 {
				return hl, fmt.Errorf("sweep: more than 16 sets of lost paths for one host: too many links down at once")
			}
			live = append(live, b)
		}
	}
	n := len(live)
	if n == 1 && len(shorts) == 0 {
		b := live[0]
		pairs := uint64(b.rows(own)) * uint64(b.nK)
		v := uint64(b.nT1) * pairs
		hl.Lost, hl.Pairs, hl.MaxPairPaths, hl.PlaneLost = v, pairs, uint64(b.nT1), v
		return hl, nil
	}
	var t1s, rows, ks [16]bitset
	planeLost := make([]uint64, len(s.planes))
	if n == 1 {
		b := live[0]
		v := uint64(b.t1.count()) * uint64(s.rowsBut(b.row, own)) * uint64(b.k.count())
		hl.Lost, hl.Pairs, hl.MaxPairPaths = v, uint64(s.rowsBut(b.row, own))*uint64(b.k.count()), uint64(b.t1.count())
		planeLost[b.plane] = v
	} else if n > 1 {
		// Paths: inclusion-exclusion per plane (boxes of different planes
		// are disjoint). Pairs: over the (row, port) projections of all.
		var pairs int64
		lost := make([]int64, len(s.planes))
		for mask := 1; mask < 1<<n; mask++ {
			m, plane, same := 0, -1, true
			for i := 0; i < n; i++ {
				if mask>>i&1 == 0 {
					continue
				}
				t1s[m], rows[m], ks[m] = live[i].t1, live[i].row, live[i].k
				if plane >= 0 && plane != live[i].plane {
					same = false
				}
				plane = live[i].plane
				m++
			}
			sign := int64(1)
			if m%2 == 0 {
				sign = -1
			}
			proj := int64(andCount(rows[:m], own)) * int64(andCount(ks[:m], -1))
			pairs += sign * proj
			if same && proj > 0 {
				lost[plane] += sign * proj * int64(andCount(t1s[:m], -1))
			}
		}
		for pl, v := range lost {
			hl.Lost += uint64(v)
			planeLost[pl] += uint64(v)
		}
		hl.Pairs = uint64(pairs)
		// The most one pair loses: over the regions of destinations in
		// exactly the boxes of mask, the (plane, T1)s those boxes hold.
		for mask := 1; mask < 1<<n; mask++ {
			var exact int64
			for sup := mask; sup < 1<<n; sup = (sup + 1) | mask {
				m := 0
				for i := 0; i < n; i++ {
					if sup>>i&1 != 0 {
						rows[m], ks[m] = live[i].row, live[i].k
						m++
					}
				}
				sign := int64(1)
				if bits.OnesCount(uint(sup^mask))%2 == 1 {
					sign = -1
				}
				exact += sign * int64(andCount(rows[:m], own)) * int64(andCount(ks[:m], -1))
			}
			if exact <= 0 {
				continue
			}
			var paths uint64
			for pl := range s.planes {
				var u bitset
				for i := 0; i < n; i++ {
					if mask>>i&1 != 0 && live[i].plane == pl {
						if u == nil {
							u = make(bitset, s.words[0])
						}
						for w := range u {
							u[w] |= live[i].t1[w]
						}
					}
				}
				if u != nil {
					paths += uint64(u.count())
				}
			}
			hl.MaxPairPaths = max(hl.MaxPairPaths, paths)
		}
	}
	// Same T0: one path per plane to each other port of the row.
	if len(shorts) > 0 {
		perPort := make([]uint64, s.nPorts)
		perPlane := make([]bitset, len(s.planes))
		for _, x := range shorts {
			u := perPlane[x.plane]
			if u == nil {
				u = make(bitset, s.words[2])
				perPlane[x.plane] = u
			}
			for w := range u {
				u[w] |= x.k[w]
			}
		}
		for pl, u := range perPlane {
			if u == nil {
				continue
			}
			c := uint64(0)
			for k := 0; k < s.nPorts; k++ {
				if k != port && u.has(k) {
					perPort[k]++
					c++
				}
			}
			hl.Lost += c
			planeLost[pl] += c
		}
		for _, c := range perPort {
			if c > 0 {
				hl.Pairs++
				hl.MaxPairPaths = max(hl.MaxPairPaths, c)
			}
		}
	}
	for _, v := range planeLost {
		hl.PlaneLost = max(hl.PlaneLost, v)
	}
	return hl, nil
}

// Links lists every link of the fabric, named by its T0 end: plane by
// plane, each T0's up ports (to every T1) and then its down ports (to the
// NICs).
func (s *Sweeper) Links() []Link {
	out := make([]Link, s.linkCount())
	for i := range out {
		out[i] = s.linkAt(i)
	}
	return out
}

func (s *Sweeper) linkCount() int {
	f := s.p.F
	return f.Planes * f.T0Count * (f.T1Count + f.T0Down)
}

// linkAt is Links()[i].
func (s *Sweeper) linkAt(i int) Link {
	f := s.p.F
	per := f.T1Count + f.T0Down
	t0 := plan.Switch{Role: plan.RoleT0, Plane: i / per / f.T0Count, Index: i / per % f.T0Count}
	j := i % per
	if j < f.T1Count {
		return Link{t0, s.p.T0UpPort(j)}
	}
	return Link{t0, s.p.T0DownPort(j - f.T1Count)}
}

// LinkClass is ClassHost for a link to a NIC, ClassT0T1 otherwise.
func (s *Sweeper) LinkClass(l Link) string {
	if nb, ok := s.p.Neighbor(l.Switch, l.Port); ok && nb.Role == plan.RoleNIC {
		return ClassHost
	}
	return ClassT0T1
}

// SweepOptions choose the what-ifs of a sweep.
type SweepOptions struct {
	// Sample, when positive, takes that many links (or pairs of links with
	// Double) at random instead of every link.
	Sample int
	// Seed seeds the sample.
	Seed uint64
	// Double takes two links down at once (needs Sample).
	Double bool
	// Progress, if set, is called now and then with the what-ifs done.
	Progress func(done, total int)
}

// Stat summarises one figure over the what-ifs of a class.
type Stat struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
	sum  float64
	n    int
}

func (s *Stat) add(v float64) {
	if s.n == 0 || v < s.Min {
		s.Min = v
	}
	if s.n == 0 || v > s.Max {
		s.Max = v
	}
	s.sum += v
	s.n++
	s.Mean = s.sum / float64(s.n)
}

func (s *Stat) merge(o Stat) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	if s.n == 0 || o.Max > s.Max {
		s.Max = o.Max
	}
	s.sum += o.sum
	s.n += o.n
	s.Mean = s.sum / float64(s.n)
}

// SweepClass sums up the what-ifs of one class of links ("t0-t1", "host",
// or for double failures "t0-t1+host" and so on).
type SweepClass struct {
	Class   string `json:"class"`
	WhatIfs int    `json:"what_ifs"`
	// Per what-if.
	LostPaths     Stat `json:"lost_paths"`
	Hosts         Stat `json:"hosts_affected"`
	HostPairs     Stat `json:"host_pairs_affected"`
	MaxPairPaths  Stat `json:"max_paths_lost_per_pair"`
	EVSlots       Stat `json:"base_ev_slots_lost"`
	MaxHostShare  Stat `json:"max_host_share_lost"`
	MaxPlaneShare Stat `json:"max_host_plane_share_lost"`
	// Shares is the distribution of the share of its paths each affected
	// host loses, over every what-if of the class.
	Shares []ShareBucket `json:"shares"`
}

// ShareBucket counts (what-if, affected host) pairs whose share of the
// host's paths lost is in (Lo, Hi].
type ShareBucket struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Hosts uint64  `json:"hosts"`
	// Share is the exact share when every host of the bucket lost the same
	// (else 0).
	Share float64 `json:"share,omitempty"`
	share float64
	mixed bool
}

// SweepReport is the outcome of a sweep.
type SweepReport struct {
	Links   int          `json:"links"`
	WhatIfs int          `json:"what_ifs"`
	Double  bool         `json:"double"`
	Sampled bool         `json:"sampled"`
	Seed    uint64       `json:"seed,omitempty"`
	Classes []SweepClass `json:"classes"`
	// HostPaths and PlanePaths are the paths of one host, in all and per
	// plane.
	HostPaths  uint64 `json:"host_paths"`
	PlanePaths uint64 `json:"plane_paths"`
	// CoreSeconds is the CPU time the what-ifs took, summed over workers.
	CoreSeconds float64 `json:"core_seconds"`
}

type classAcc struct {
	c       SweepClass
	buckets map[int]*ShareBucket
	// last is the bucket of the last share added (hosts that lose alike
	// come in runs).
	last      *ShareBucket
	lastShare float64
}

func (a *classAcc) addShare(n uint64, share float64) {
	if a.last != nil && share == a.lastShare {
		a.last.Hosts += n
		return
	}
	j := int(math.Floor(-math.Log2(share)))
	b := a.buckets[j]
	if b == nil {
		b = &ShareBucket{Lo: math.Exp2(float64(-j - 1)), Hi: math.Exp2(float64(-j)), share: share}
		a.buckets[j] = b
	}
	if b.share != share {
		b.mixed = true
	}
	b.Hosts += n
	a.last, a.lastShare = b, share
}

// Sweep takes links down (each alone, or in pairs) and sums up what each
// what-if costs, per class of link.
func (s *Sweeper) Sweep(ctx context.Context, opt SweepOptions) (*SweepReport, error) {
	nLinks := s.linkCount()
	rep := &SweepReport{Links: nLinks, Double: opt.Double, HostPaths: s.HostPaths, PlanePaths: s.PlanePaths}
	var sets [][]Link
	switch {
	case opt.Double && opt.Sample <= 0:
		return nil, fmt.Errorf("sweep: double failures need --sample (every pair of %d links is too many)", nLinks)
	case opt.Sample > 0:
		rep.Sampled, rep.Seed = true, opt.Seed
		rng := rand.New(rand.NewPCG(opt.Seed, 0x6d7263))
		for range opt.Sample {
			a := s.linkAt(rng.IntN(nLinks))
			if !opt.Double {
				sets = append(sets, []Link{a})
				continue
			}
			b := s.linkAt(rng.IntN(nLinks - 1))
			if b == a {
				b = s.linkAt(nLinks - 1)
			}
			sets = append(sets, []Link{a, b})
		}
	}
	total := nLinks
	if sets != nil {
		total = len(sets)
	}
	rep.WhatIfs = total
	get := func(i int, one *[1]Link) []Link {
		if sets != nil {
			return sets[i]
		}
		one[0] = s.linkAt(i)
		return one[:]
	}
	workers := runtime.GOMAXPROCS(0)
	accs := make([]map[string]*classAcc, workers)
	var core atomic.Int64
	var next, done atomic.Int64
	const chunk = 512
	errs := make([]error, workers)
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	for wk := range workers {
		accs[wk] = map[string]*classAcc{}
		wg.Go(func() {
			sc := newScratch()
			var one [1]Link
			acc := accs[wk]
			for {
				start := int(next.Add(chunk) - chunk)
				if start >= total || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				for i := start; i < min(start+chunk, total); i++ {
					set := get(i, &one)
					name := s.LinkClass(set[0])
					if len(set) == 2 {
						a, b := s.LinkClass(set[0]), s.LinkClass(set[1])
						if a > b {
							a, b = b, a
						}
						name = a + "+" + b
					}
					a := acc[name]
					if a == nil {
						a = &classAcc{c: SweepClass{Class: name}, buckets: map[int]*ShareBucket{}}
						acc[name] = a
					}
					wi, err := s.whatIf(set, sc, nil, func(n, lost, _, _, _ uint64) {
						a.addShare(n, float64(lost)/float64(s.HostPaths))
					})
					if err != nil {
						errs[wk] = err
						return
					}
					c := &a.c
					c.WhatIfs++
					c.LostPaths.add(float64(wi.LostPaths))
					c.Hosts.add(float64(wi.Hosts))
					c.HostPairs.add(float64(wi.HostPairs))
					c.MaxPairPaths.add(float64(wi.MaxPairPaths))
					c.EVSlots.add(float64(wi.EVSlots))
					c.MaxHostShare.add(wi.MaxHostShare)
					c.MaxPlaneShare.add(wi.MaxPlaneShare)
				}
				core.Add(int64(time.Since(t0)))
				d := done.Add(int64(min(start+chunk, total) - start))
				if opt.Progress != nil {
					progressMu.Lock()
					opt.Progress(int(d), total)
					progressMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	merged := map[string]*classAcc{}
	for _, acc := range accs {
		for name, a := range acc {
			m := merged[name]
			if m == nil {
				m = &classAcc{c: SweepClass{Class: name}, buckets: map[int]*ShareBucket{}}
				merged[name] = m
			}
			m.c.WhatIfs += a.c.WhatIfs
			m.c.LostPaths.merge(a.c.LostPaths)
			m.c.Hosts.merge(a.c.Hosts)
			m.c.HostPairs.merge(a.c.HostPairs)
			m.c.MaxPairPaths.merge(a.c.MaxPairPaths)
			m.c.EVSlots.merge(a.c.EVSlots)
			m.c.MaxHostShare.merge(a.c.MaxHostShare)
			m.c.MaxPlaneShare.merge(a.c.MaxPlaneShare)
			for j, b := range a.buckets {
				mb := m.buckets[j]
				if mb == nil {
					c := *b
					m.buckets[j] = &c
					continue
				}
				mb.Hosts += b.Hosts
				mb.mixed = mb.mixed || b.mixed || mb.share != b.share
			}
		}
	}
	for _, m := range merged {
		keys := make([]int, 0, len(m.buckets))
		for j := range m.buckets {
			keys = append(keys, j)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(keys)))
		for _, j := range keys {
			b := *m.buckets[j]
			if !b.mixed {
				b.Share = b.share
			}
			m.c.Shares = append(m.c.Shares, b)
		}
		rep.Classes = append(rep.Classes, m.c)
	}
	sort.Slice(rep.Classes, func(i, j int) bool { return rep.Classes[i].Class > rep.Classes[j].Class })
	rep.CoreSeconds = time.Duration(core.Load()).Seconds()
	return rep, nil
}
