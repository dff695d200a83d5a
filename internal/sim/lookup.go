package sim

import (
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
)

// cachedLookup answers a switch's two tables from the build's lookups,
// remembering every answer: the tables are static, so the cache is exact.
// The uSIDs of the switch's own plane and of the three kinds the fabric
// numbers (T0, T1, down port), the only ones a well-formed packet asks
// for, are held in one array per kind (allocated when the kind is first
// asked for: a T1 only routes to T0s), a cell per index holding both
// tables' answers, so that a hop reads one cache line where it read five;
// anything else is asked of the tables each time (a damaged packet,
// another block, a kind no switch has).
type cachedLookup struct {
	block     uint64
	plane     uint16
	kindShift uint8 // uSID bits below the plane field
	idxBits   uint8
	cached    bool // the layout fits the cells (12 index bits at most)
	// cells, per kind (1-3, at 0-2) and index: bits 0-1 my_usid's answer
	// (0 unknown, 1 own, 2 not); bits 16-31 usid_route's as an int16 (0
	// unknown, -1 no route, port+1, or -(port+2) towards a host).
	cells [3][]uint32
	slow  verify.SwitchLookup
}

const (
	cellOwn      = 1
	cellNotOwn   = 2
	cellOwnMask  = 3
	cellRouteBit = 16
)

func newCachedLookup(f *fabric.Fabric, plane int, slow verify.SwitchLookup) cachedLookup {
	return cachedLookup{slow: slow, block: uint64(f.Block), plane: uint16(plane),
		kindShift: uint8(f.USID.KindBits + f.USID.IndexBits), idxBits: uint8(f.USID.IndexBits),
		cached: f.USID.IndexBits <= 12}
}

// cell returns the cache cell of usid, or nil when it is not cached.
func (l *cachedLookup) cell(block uint64, usid uint16) *uint32 {
	if !l.cached || block != l.block || usid>>l.kindShift != l.plane {
		return nil
	}
	kind := int(usid>>l.idxBits)&(1<<(l.kindShift-l.idxBits)-1) - 1
	if kind < 0 || kind >= len(l.cells) {
		return nil
	}
	if l.cells[kind] == nil {
		l.cells[kind] = make([]uint32, 1<<l.idxBits)
	}
	return &l.cells[kind][usid&(1<<l.idxBits-1)]
}

// myUSID reports whether the switch shifts on block|usid.
func (l *cachedLookup) myUSID(block uint64, usid uint16) bool {
	c := l.cell(block, usid)
	if c == nil {
		return l.slow.MyUSID(block<<16 | uint64(usid))
	}
	if v := *c & cellOwnMask; v != 0 {
		return v == cellOwn
	}
	own := l.slow.MyUSID(block<<16 | uint64(usid))
	v := uint32(cellNotOwn)
	if own {
		v = cellOwn
	}
	*c |= v
	return own
}

// routeOf is the switch's usid_route answer for block|usid.
func (l *cachedLookup) routeOf(block uint64, usid uint16) (port int, toHost, ok bool) {
	c := l.cell(block, usid)
	if c == nil {
		r, ok := l.slow.Route(block<<16 | uint64(usid))
		return r.Port, r.ToHost, ok
	}
	v := int16(*c >> cellRouteBit)
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
		*c = *c&cellOwnMask | uint32(uint16(v))<<cellRouteBit
	}
	switch {
	case v == -1:
		return 0, false, false
	case v < -1:
		return int(-v - 2), true, true
	}
	return int(v - 1), false, true
}
