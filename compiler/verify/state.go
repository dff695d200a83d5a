// Package verify proves that a fabric's emitted tables deliver every path.
//
// It is independent of the generator's path logic: it reads only the table
// entries (as the devices would hold them) and the physical wiring, builds
// each outer destination exactly as the NIC program does from the NIC's
// tables, and walks it through the switches applying only the two things a
// switch does: uN (own uSID active -> shift by one uSID) and an exact /48
// lookup of block | active uSID -> egress port.
//
// The walk is exhaustive and exact without enumerating 10^13 paths: a
// switch's decision depends only on the active uSID and, when it shifts, the
// next one, so the state of a packet is (switch, level of its uSID list,
// active uSID value) and every path through a state shares that state's
// outcome for all completions of the list. Memoising states makes the work
// linear in the table sizes while every (source, plane, T1, destination)
// path is still accounted for.
package verify

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// Route is a switch's forwarding decision for one /48.
type Route struct {
	Port   int
	ToHost bool
}

// SwitchState is what one switch holds, read from its entries.
type SwitchState struct {
	Own    map[uint64]bool
	Routes map[uint64]Route
}

// NICIdentity is what one NIC holds about itself, per plane.
type NICIdentity struct {
	// RxPlane maps a NIC port to the plane it faces and the uDL uSID it owns.
	RxPlane map[int]RxPort
	// Self maps a plane to the NIC's own T0 uSID and row.
	Self map[int]SelfEntry
}

// RxPort is a NIC port's plane and own uDL uSID.
type RxPort struct {
	Plane   int
	OwnDown uint16
}

// SelfEntry is the NIC's own T0 uSID and row in one plane.
type SelfEntry struct {
	OwnT0 uint16
	Row   int
}

// NICCommon are the tables every NIC holds alike.
type NICCommon struct {
	Row  map[[2]int]uint16 // (plane, row) -> uN
	T1   map[[2]int]uint16 // (plane, t1) -> uN
	Down map[[2]int]uint16 // (plane, port) -> uDL
	// EVs is the ev_set table, entry by entry (a slot may be missing or
	// appear twice: CheckEVSet says so); Backup is the ev_backup table.
	EVs, Backup []SlotEV
}

// DecodeSwitch reads a switch's entries.
func DecodeSwitch(entries []entry.Entry) (*SwitchState, error) {
	s := &SwitchState{Own: map[uint64]bool{}, Routes: make(map[uint64]Route, len(entries))}
	for i := range entries {
		e := &entries[i]
		if err := e.Validate(); err != nil {
			return nil, err
		}
		switch e.Table.FullName() {
		case schema.SwitchMyUSID:
			if e.Action.Name == "usid_shift" {
				s.Own[e.Match[0].Value] = true
			}
		case schema.SwitchRoute:
			key := e.Match[0].Value
			if _, dup := s.Routes[key]; dup {
				return nil, fmt.Errorf("table %s: two entries for %#x", e.Table.FullName(), key)
			}
			s.Routes[key] = Route{Port: int(e.Params[0]), ToHost: e.Action.Name == "forward_to_host"}
		}
	}
	return s, nil
}

// DecodeNIC reads a NIC's own entries.
func DecodeNIC(entries []entry.Entry) (*NICIdentity, error) {
	n := &NICIdentity{RxPlane: map[int]RxPort{}, Self: map[int]SelfEntry{}}
	for i := range entries {
		e := &entries[i]
		if err := e.Validate(); err != nil {
			return nil, err
		}
		switch e.Table.FullName() {
		case schema.NICRxPlane:
			n.RxPlane[int(e.Match[0].Value)] = RxPort{Plane: int(e.Params[0]), OwnDown: uint16(e.Params[1])}
		case schema.NICPlaneSelf:
			n.Self[int(e.Match[0].Value)] = SelfEntry{OwnT0: uint16(e.Params[0]), Row: int(e.Params[1])}
		}
	}
	return n, nil
}

// DecodeNICCommon reads the tables all NICs share.
func DecodeNICCommon(entries []entry.Entry) (*NICCommon, error) {
	c := &NICCommon{Row: map[[2]int]uint16{}, T1: map[[2]int]uint16{}, Down: map[[2]int]uint16{}}
	for i := range entries {
		e := &entries[i]
		if err := e.Validate(); err != nil {
			return nil, err
		}
		k := [2]int{}
		if len(e.Match) == 2 {
			k = [2]int{int(e.Match[0].Value), int(e.Match[1].Value)}
		}
		switch e.Table.FullName() {
		case schema.NICRowUSID:
			c.Row[k] = uint16(e.Params[0])
		case schema.NICT1USID:
			c.T1[k] = uint16(e.Params[0])
		case schema.NICDownUSID:
			c.Down[k] = uint16(e.Params[0])
		case schema.NICEVSet:
			c.EVs = append(c.EVs, SlotEV{Slot: int(e.Match[0].Value), EV: plan.EV(e.Params[0])})
		case schema.NICEVBackup:
			c.Backup = append(c.Backup, SlotEV{Slot: int(e.Match[0].Value), EV: plan.EV(e.Params[0])})
		}
	}
	return c, nil
}

// MyUSID reports whether the switch shifts on key (block | uSID): its
// my_usid table holds it with the action usid_shift.
func (s *SwitchState) MyUSID(key uint64) bool { return s.Own[key] }

// Route is the switch's usid_route entry for key (block | uSID).
func (s *SwitchState) Route(key uint64) (Route, bool) {
	r, ok := s.Routes[key]
	return r, ok
}

// SwitchLookup answers a switch's two forwarding tables one key (block |
// uSID, the /48 the switch matches on) at a time. *SwitchState is one,
// decoded from entries.
type SwitchLookup interface {
	MyUSID(key uint64) bool
	Route(key uint64) (Route, bool)
}

// LookupSource is a Source that answers a switch's lookups directly, without
// listing its entries (a table generator): Run then never builds the
// entries of a switch, it asks for the keys the walk meets.
type LookupSource interface {
	Source
	// SwitchLookup returns the lookups of switch s's tables.
	SwitchLookup(s plan.Switch) (SwitchLookup, error)
}

// NICPartSource is a Source whose NICs' own entries are the entries of
// their down port followed by those of their T0 row (a generator, a
// build): NICEntries(h) = NICPortEntries(h.Port) + NICRowEntries(h.Row).
// Run then decodes each part once instead of every NIC.
type NICPartSource interface {
	NICPortEntries(k int) ([]entry.Entry, error)
	NICRowEntries(r int) ([]entry.Entry, error)
}

// Source is the part of the fabric Verify reads: the entries of every
// device, by switch or host. It lets the caller stream a large fabric
// plane by plane instead of holding it whole. Run walks several planes at
// once: a Source's methods must be safe for concurrent use.
type Source interface {
	// SwitchEntries returns the entries of switch s.
	SwitchEntries(s plan.Switch) ([]entry.Entry, error)
	// NICEntries returns the own entries of host h's NIC.
	NICEntries(h plan.Host) ([]entry.Entry, error)
	// NICCommonEntries returns the entries every NIC shares.
	NICCommonEntries() ([]entry.Entry, error)
}

// GeneratorSource serves the entries straight from a table generator, as
// `mrcgen build` would write them.
type GeneratorSource struct{ G *tables.Generator }

// SwitchEntries implements Source.
func (s GeneratorSource) SwitchEntries(sw plan.Switch) ([]entry.Entry, error) {
	return s.G.SwitchEntries(sw, nil), nil
}

// NICEntries implements Source.
func (s GeneratorSource) NICEntries(h plan.Host) ([]entry.Entry, error) {
	return s.G.NICEntries(h, nil), nil
}

// NICCommonEntries implements Source.
func (s GeneratorSource) NICCommonEntries() ([]entry.Entry, error) {
	return s.G.NICCommonEntries(), nil
}

// SwitchLookup implements LookupSource: the generator answers each lookup
// as the entries SwitchEntries would (tables.TestSwitchLookup checks it).
func (s GeneratorSource) SwitchLookup(sw plan.Switch) (SwitchLookup, error) {
	return generatorLookup{s.G, sw}, nil
}

// NICPortEntries implements NICPartSource.
func (s GeneratorSource) NICPortEntries(k int) ([]entry.Entry, error) {
	return s.G.NICPortEntries(k, nil), nil
}

// NICRowEntries implements NICPartSource.
func (s GeneratorSource) NICRowEntries(r int) ([]entry.Entry, error) {
	return s.G.NICRowEntries(r, nil), nil
}

type generatorLookup struct {
	g  *tables.Generator
	sw plan.Switch
}

func (l generatorLookup) MyUSID(key uint64) bool { return l.g.SwitchMyUSID(l.sw, key) }

func (l generatorLookup) Route(key uint64) (Route, bool) {
	port, toHost, ok := l.g.SwitchRoute(l.sw, key)
	return Route{Port: port, ToHost: toHost}, ok
}
