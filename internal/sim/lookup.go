package sim

import (
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
)

// cachedLookup answers a switch's two tables from the build's lookups,
// remembering every answer: the tables are static, so the cache is exact.
// The uSIDs of the switch's own plane, the only ones a well-formed packet
// asks for, are held in arrays by kind (allocated when the kind is first
// asked for: a T1 only routes to T0s) and index; anything else is asked of
// the tables each time (a damaged packet, another block).
type cachedLookup struct {
	slow      verify.SwitchLookup
	block     uint64
	plane     uint16
	kindShift uint // uSID bits below the plane field
	idxBits   uint
	// Per kind, per index: own is 0 unknown, 1 own, 2 not; route is 0
	// unknown, -1 no route, port+1, or -(port+2) towards a host.
	own   [][]uint8
	route [][]int16
}

func newCachedLookup(f *fabric.Fabric, plane int, slow verify.SwitchLookup) *cachedLookup {
	l := &cachedLookup{slow: slow, block: uint64(f.Block), plane: uint16(plane),
		kindShift: uint(f.USID.KindBits + f.USID.IndexBits), idxBits: uint(f.USID.IndexBits)}
	if l.idxBits <= 12 && f.USID.KindBits <= 4 {
		l.own, l.route = make([][]uint8, 1<<f.USID.KindBits), make([][]int16, 1<<f.USID.KindBits)
	}
	return l
}

// slot returns the cache cells of usid, or false when it is not cached.
func (l *cachedLookup) slot(block uint64, usid uint16) (kind, idx int, ok bool) {
	if block != l.block || usid>>l.kindShift != l.plane || l.own == nil {
		return 0, 0, false
	}
	kind = int(usid>>l.idxBits) & (len(l.own) - 1)
	if l.own[kind] == nil {
		l.own[kind], l.route[kind] = make([]uint8, 1<<l.idxBits), make([]int16, 1<<l.idxBits)
	}
	return kind, int(usid & (1<<l.idxBits - 1)), true
}

// myUSID reports whether the switch shifts on block|usid.
func (l *cachedLookup) myUSID(block uint64, usid uint16) bool {
	k, i, ok := l.slot(block, usid)
	if !ok {
		return l.slow.MyUSID(block<<16 | uint64(usid))
	}
	if v := l.own[k][i]; v != 0 {
		return v == 1
	}
	own := l.slow.MyUSID(block<<16 | uint64(usid))
	l.own[k][i] = 2
	if own {
		l.own[k][i] = 1
	}
	return own
}

// routeOf is the switch's usid_route answer for block|usid.
func (l *cachedLookup) routeOf(block uint64, usid uint16) (port int, toHost, ok bool) {
	k, i, cached := l.slot(block, usid)
	if !cached {
		r, ok := l.slow.Route(block<<16 | uint64(usid))
		return r.Port, r.ToHost, ok
	}
	v := l.route[k][i]
	if v == 0 {
		r, ok := l.slow.Route(block<<16 | uint64(usid))
		switch {
		case ok && (r.Port < 0 || r.Port >= 1<<14):
			return r.Port, r.ToHost, ok // too large to cache: the caller refuses a port beyond the switch
		case !ok:
			v = -1
		case r.ToHost:
			v = -int16(r.Port) - 2
		default:
			v = int16(r.Port) + 1
		}
		l.route[k][i] = v
	}
	switch {
	case v == -1:
		return 0, false, false
	case v < -1:
		return int(-v - 2), true, true
	}
	return int(v - 1), false, true
}
