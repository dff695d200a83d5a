package verify

import (
	"fmt"
	"slices"
	"sort"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

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

// WhatIf computes what taking links down costs. With detail, every source
// host that loses a path is appended to it.
func (s *Sweeper) WhatIf(links []Link, detail *[]HostLoss) (WhatIf, error) {
	sc := newScratch()
	return s.whatIf(links, sc, detail, nil)
}

// cableEnd is a switch end of a link: the switch's index in its plane and
// its port.
type cableEnd struct {
	plane, sw, port int
}

// ends returns link l's switch ends, and the host at its other end (-1 for
// a T0-T1 link).
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

// whatIf computes what taking links down costs, in steps:
//
//  1. hits: the boxes of paths that cross the failed links, each with the
//     groups (hosts of a row with the same first states) that lose it; the
//     same-T0 losses and the hosts whose own NIC link is down go into sc;
//  2. in one plane, groups that only one box reaches are counted together
//     per box (countAlike); every other group's boxes go to its slot;
//  3. hosts that lose the same go together (combos: by slot in one plane,
//     by their slots of every plane otherwise), those with losses of their
//     own alone, and each is counted (countCombo);
//  4. the tally adds up the totals and the base EV slots lost.
func (s *Sweeper) whatIf(links []Link, sc *sweepScratch, detail *[]HostLoss, visit visitFunc) (WhatIf, error) {
	defer sc.reset()
	t := newWhatIfTally(s, links, detail, visit)
	hits, err := s.hits(links, sc)
	if err != nil {
		return t.out, err
	}
	planes := touchedPlanes(hits, sc)
	alike := s.assignBoxes(hits, planes, sc)
	if err := s.countAlike(alike, sc, t); err != nil {
		return t.out, err
	}
	s.clearCounts(hits, planes, sc)
	if err := s.countCombos(planes, sc, t); err != nil {
		return t.out, err
	}
	return t.finish(), nil
}

// hit is a box of lost paths and the groups (of its plane) that lose it.
type hit struct {
	b      *box
	groups []int32
}

func newBox(b box) *box {
	b.nT1, b.nRow, b.nK = b.t1.count(), b.row.count(), b.k.count()
	return &b
}

// hits returns the boxes of paths that cross links, with the groups that
// lose each. What a path's same-T0 carrier loses goes into sc.shorts (by
// group slot), what a host whose own NIC link is down loses into
// sc.extras and sc.xshort.
func (s *Sweeper) hits(links []Link, sc *sweepScratch) ([]hit, error) {
	var hits []hit
	for _, l := range links {
		ends, host, err := s.ends(l)
		if err != nil {
			return nil, err
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
	return hits, nil
}

// touchedPlanes is the set of planes in which something is lost.
func touchedPlanes(hits []hit, sc *sweepScratch) map[int]bool {
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
	return planes
}

// assignBoxes puts each hit's box into the slots of the groups that lose
// it. In one plane, a group that only one box reaches (no lost same-T0
// path, no host with a NIC link down) loses that box alone: such groups
// stay out of the slots, marked by a count of 1 in sc.cnt, and the hits
// returned count them together, per box (countAlike). With several planes
// every group goes through its slot and nothing is returned.
func (s *Sweeper) assignBoxes(hits []hit, planes map[int]bool, sc *sweepScratch) []hit {
	if len(planes) != 1 {
		for _, h := range hits {
			for _, g := range h.groups {
				j := sc.at(s, h.b.plane, g)
				sc.boxes[j] = append(sc.boxes[j], h.b)
			}
		}
		return nil
	}
	var alike []hit
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
			alike = append(alike, h)
		}
	}
	return alike
}

// countAlike counts the groups assignBoxes left out of the slots: per box,
// the hosts of the groups whose own row is outside it together, and those
// whose row is in it (one destination row fewer) together.
func (s *Sweeper) countAlike(alike []hit, sc *sweepScratch, t *whatIfTally) error {
	for _, h := range alike {
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
			if t.detail != nil {
				hl, err := s.loss(-1, grp.row, -1, []*box{h.b}, nil)
				if err != nil {
					return err
				}
				for _, x := range grp.hosts {
					if hl.Lost > 0 {
						hl.Host = int(x)
						*t.detail = append(*t.detail, hl)
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
			t.markEV(h.b, c.own)
			hl, err := s.loss(-1, c.own, -1, []*box{h.b}, nil)
			if err != nil {
				return err
			}
			t.record(c.n, hl)
		}
	}
	return nil
}

// clearCounts sets back to 0 the group counts assignBoxes set in one
// plane (sc.cnt is all zero between what-ifs).
func (s *Sweeper) clearCounts(hits []hit, planes map[int]bool, sc *sweepScratch) {
	if len(planes) != 1 {
		return
	}
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

// combo is hosts that lose the same: those of the (plane, group) slots
// that hold their losses.
type combo struct {
	slots   []int
	hosts   []int32
	special []int32 // hosts of the combo with boxes of their own
}

// countCombos counts the hosts whose losses are in slots. Hosts that lose
// the same go together: by the (plane, group) slots that hold their
// losses. Hosts with losses of their own (their NIC link is down) or with
// lost same-T0 paths (a host never loses the path to itself) go alone.
func (s *Sweeper) countCombos(planes map[int]bool, sc *sweepScratch, t *whatIfTally) error {
	var combos []*combo
	var special map[int][]int32 // slot -> its hosts with boxes of their own
	if len(planes) <= 1 {
		combos, special = s.combosOfOnePlane(sc)
	} else {
		combos = s.combosAcrossPlanes(planes, sc)
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
		if err := s.countCombo(c, boxes, sh, sc, t); err != nil {
			return err
		}
	}
	return nil
}

// combosOfOnePlane sorts the hosts with losses of their own in one plane:
// those of a group with a slot are that slot's special hosts, the others a
// combo each. (Every other host is counted by its group's slot.)
func (s *Sweeper) combosOfOnePlane(sc *sweepScratch) (combos []*combo, special map[int][]int32) {
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
	return combos, special
}

// combosAcrossPlanes groups the hosts by their slots: with several planes
// a host's losses are in its group of each plane. Hosts come row by row,
// and a run of them shares its groups.
func (s *Sweeper) combosAcrossPlanes(planes map[int]bool, sc *sweepScratch) []*combo {
	var combos []*combo
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
	return combos
}

// countCombo counts the hosts of combo c, which lose boxes and sh: those
// with losses of their own, or whose own port is among the lost same-T0
// destinations (one path fewer than the others), one by one; the rest
// together.
func (s *Sweeper) countCombo(c *combo, boxes []*box, sh []shortLoss, sc *sweepScratch, t *whatIfTally) error {
	row := int(c.hosts[0]) / s.hostsPerRow
	for _, b := range boxes {
		t.markEV(b, row)
	}
	for _, x := range sh {
		if x.k.count() > 0 {
			t.evAll[x.plane] = true
		}
	}
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
					if err := s.countHost(h, row, boxes, sh, sc, t); err != nil {
						return err
					}
				}
			} else {
				plain++
			}
		}
	}
	for _, h := range c.special {
		if err := s.countHost(h, row, boxes, sh, sc, t); err != nil {
			return err
		}
	}
	if plain == 0 {
		return nil
	}
	hl, err := s.loss(-1, row, -1, boxes, sh)
	if err != nil {
		return err
	}
	t.record(plain, hl)
	if t.detail != nil && hl.Lost > 0 {
		for _, h := range c.hosts {
			if !alone(h) {
				hl.Host = int(h)
				*t.detail = append(*t.detail, hl)
			}
		}
	}
	return nil
}

// countHost counts host h of row alone: boxes and sh, and what it loses
// of its own (its NIC link down).
func (s *Sweeper) countHost(h int32, row int, boxes []*box, sh []shortLoss, sc *sweepScratch, t *whatIfTally) error {
	xb := sc.extras[int(h)]
	for _, b := range xb {
		t.markEV(b, row)
	}
	for _, x := range sc.xshort[int(h)] {
		t.evAll[x.plane] = true
	}
	t.all = append(append(t.all[:0], boxes...), xb...)
	t.shorts = append(append(t.shorts[:0], sh...), sc.xshort[int(h)]...)
	hl, err := s.loss(int(h), row, int(h)%s.hostsPerRow, t.all, t.shorts)
	if err != nil {
		return err
	}
	t.record(1, hl)
	if t.detail != nil && hl.Lost > 0 {
		*t.detail = append(*t.detail, hl)
	}
	return nil
}

// whatIfTally adds up a what-if as its hosts are counted: the totals, the
// base EV slots whose paths are lost, and the hosts' detail.
type whatIfTally struct {
	s   *Sweeper
	out WhatIf
	// evT1 are per plane the T1s of the boxes that hold a lost path; evAll
	// the planes in which a same-T0 path is lost (every slot of the plane).
	evT1   []bitset
	evAll  []bool
	detail *[]HostLoss
	visit  visitFunc
	// all and shorts are countHost's buffers.
	all    []*box
	shorts []shortLoss
}

func newWhatIfTally(s *Sweeper, links []Link, detail *[]HostLoss, visit visitFunc) *whatIfTally {
	return &whatIfTally{s: s, out: WhatIf{Links: links}, evT1: make([]bitset, s.p.F.Planes), evAll: make([]bool, s.p.F.Planes),
		detail: detail, visit: visit}
}

// markEV counts the (plane, T1)s of b as lost, if b holds a path of a
// source on row own.
func (t *whatIfTally) markEV(b *box, own int) {
	if b.evDone || b.rows(own) == 0 {
		return
	}
	b.evDone = true
	if t.evT1[b.plane] == nil {
		t.evT1[b.plane] = make(bitset, t.s.words[0])
	}
	for w := range b.t1 {
		t.evT1[b.plane][w] |= b.t1[w]
	}
}

// record adds n hosts that each lose h.
func (t *whatIfTally) record(n uint64, h HostLoss) {
	if h.Lost == 0 || n == 0 {
		return
	}
	out := &t.out
	out.LostPaths += n * h.Lost
	out.Hosts += n
	out.HostPairs += n * h.Pairs
	out.MaxPairPaths = max(out.MaxPairPaths, h.MaxPairPaths)
	out.MaxHostShare = max(out.MaxHostShare, float64(h.Lost)/float64(t.s.HostPaths))
	out.MaxPlaneShare = max(out.MaxPlaneShare, float64(h.PlaneLost)/float64(t.s.PlanePaths))
	if t.visit != nil {
		t.visit(n, h.Lost, h.Pairs, h.MaxPairPaths, h.PlaneLost)
	}
}

// finish counts the base EV slots lost and sorts the detail by host.
func (t *whatIfTally) finish() WhatIf {
	s := t.s
	for pl := range t.evT1 {
		if t.evAll[pl] {
			t.out.EVSlots += s.evPlane[pl]
			continue
		}
		if t.evT1[pl] == nil {
			continue
		}
		for i := 0; i < s.nT1; i++ {
			if t.evT1[pl].has(i) {
				t.out.EVSlots += s.evSlots[pl][i]
			}
		}
	}
	if t.detail != nil {
		sort.Slice(*t.detail, func(i, j int) bool { return (*t.detail)[i].Host < (*t.detail)[j].Host })
	}
	return t.out
}
