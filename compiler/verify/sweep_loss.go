package verify

import (
	"fmt"
	"math/bits"
)

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
