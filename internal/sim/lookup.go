package sim

import (
	"encoding/binary"
	"unsafe"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/internal/prefetch"
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

// cellPlace is where usid's cache cell is (its kind's array, its index
// there), false when usid is not cached.
func (l *cachedLookup) cellPlace(block uint64, usid uint16) (kind int, i uint16, ok bool) {
	if !l.cached || block != l.block || usid>>l.kindShift != l.plane {
		return 0, 0, false
	}
	kind = int(usid>>l.idxBits)&(1<<(l.kindShift-l.idxBits)-1) - 1
	if kind < 0 || kind >= len(l.cells) {
		return 0, 0, false
	}
	return kind, usid & (1<<l.idxBits - 1), true
}

// cell returns the cache cell of usid, or nil when it is not cached.
func (l *cachedLookup) cell(block uint64, usid uint16) *uint32 {
	kind, i, ok := l.cellPlace(block, usid)
	if !ok {
		return nil
	}
	if l.cells[kind] == nil {
		l.cells[kind] = make([]uint32, 1<<l.idxBits)
	}
	return &l.cells[kind][i]
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
	if v == -1 {
		return 0, false, false
	}
	port, toHost = cachedRoute(v)
	return port, toHost, true
}

// cachedRoute reads a route cell's route v (a port: neither 0, unknown,
// nor -1, no route): the port and whether it faces a host.
func cachedRoute(v int16) (port int, toHost bool) {
	if v < -1 {
		return int(-v - 2), true
	}
	return int(v - 1), false
}

// known returns usid's cell when it exists, without making it: what the
// prefetches read, which must change nothing.
func (l *cachedLookup) known(block uint64, usid uint16) *uint32 {
	kind, i, ok := l.cellPlace(block, usid)
	if !ok || l.cells[kind] == nil {
		return nil
	}
	return &l.cells[kind][i]
}

// prefetch asks for the cells a switch hop of the encapsulated frame h
// will read (prefetchAhead): its active uSID's and the next one's, which
// becomes active when the switch shifts. It allocates nothing and changes
// nothing.
func (l *cachedLookup) prefetch(h []byte) {
	if len(h) < oDst+8 {
		return
	}
	block := uint64(binary.BigEndian.Uint32(h[oDst:]))
	for _, usid := range [2]uint16{binary.BigEndian.Uint16(h[oDst+4:]), binary.BigEndian.Uint16(h[oDst+6:])} {
		if c := l.known(block, usid); c != nil {
			prefetch.Line(unsafe.Pointer(c))
		}
	}
}

// knownRoute is the egress port a switch hop of the encapsulated frame h
// will take, when the cells already hold both answers it needs (the shift
// and the route); false otherwise. It reads what myUSID and routeOf would,
// and changes nothing: the prefetch of the port's queue asks it.
func (l *cachedLookup) knownRoute(h []byte) (int, bool) {
	if len(h) < oDst+8 {
		return 0, false
	}
	block := uint64(binary.BigEndian.Uint32(h[oDst:]))
	usid := binary.BigEndian.Uint16(h[oDst+4:])
	c := l.known(block, usid)
	if c == nil {
		return 0, false
	}
	switch *c & cellOwnMask {
	case 0:
		return 0, false
	case cellOwn:
		if usid = binary.BigEndian.Uint16(h[oDst+6:]); usid == 0 {
			return 0, false
		}
		if c = l.known(block, usid); c == nil {
			return 0, false
		}
	}
	v := int16(*c >> cellRouteBit)
	if v == 0 || v == -1 {
		return 0, false
	}
	port, _ := cachedRoute(v)
	return port, true
}
