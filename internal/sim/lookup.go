package sim

import (
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
)

// cachedLookup answers a switch's two tables from the build's lookups,
// remembering every answer: the tables are static, so the cache is exact.
// The uSIDs of the switch's own plane, the only ones a well-formed packet
// asks for, are held in arrays indexed by their kind and index; anything
// else is asked of the tables each time (a damaged packet, another block).
type cachedLookup struct {
	slow       verify.SwitchLookup
	block      uint64
	plane      uint16
	planeShift uint
	// Per (kind, index) of the plane: own is 0 unknown, 1 own, 2 not;
	// route is 0 unknown, -1 no route, port+1 (negated port-1 to host).
	own   []uint8
	route []int32
}

func newCachedLookup(f *fabric.Fabric, plane int, slow verify.SwitchLookup) *cachedLookup {
	l := &cachedLookup{slow: slow, block: uint64(f.Block), plane: uint16(plane), planeShift: uint(f.USID.KindBits + f.USID.IndexBits)}
	if l.planeShift <= 12 {
		n := 1 << l.planeShift
		l.own, l.route = make([]uint8, n), make([]int32, n)
	}
	return l
}

func (l *cachedLookup) slot(usid uint16) int {
	if usid>>l.planeShift != l.plane || l.own == nil {
		return -1
	}
	return int(usid & (1<<l.planeShift - 1))
}

// myUSID reports whether the switch shifts on block|usid.
func (l *cachedLookup) myUSID(block uint64, usid uint16) bool {
	i := l.slot(usid)
	if block != l.block || i < 0 {
		return l.slow.MyUSID(block<<16 | uint64(usid))
	}
	if v := l.own[i]; v != 0 {
		return v == 1
	}
	own := l.slow.MyUSID(block<<16 | uint64(usid))
	l.own[i] = 2
	if own {
		l.own[i] = 1
	}
	return own
}

// routeOf is the switch's usid_route answer for block|usid.
func (l *cachedLookup) routeOf(block uint64, usid uint16) (port int, toHost, ok bool) {
	i := l.slot(usid)
	if block != l.block || i < 0 {
		r, ok := l.slow.Route(block<<16 | uint64(usid))
		return r.Port, r.ToHost, ok
	}
	v := l.route[i]
	if v == 0 {
		r, ok := l.slow.Route(block<<16 | uint64(usid))
		switch {
		case !ok:
			v = -1
		case r.ToHost:
			v = -int32(r.Port) - 2
		default:
			v = int32(r.Port) + 1
		}
		l.route[i] = v
	}
	switch {
	case v == -1:
		return 0, false, false
	case v < -1:
		return int(-v - 2), true, true
	}
	return int(v - 1), false, true
}
