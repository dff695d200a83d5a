package verify

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

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
