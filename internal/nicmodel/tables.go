package nicmodel

import (
	"errors"
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// Op is a P4Runtime update type.
type Op uint8

const (
	Insert Op = iota + 1
	Modify
	Delete
)

func (o Op) String() string {
	switch o {
	case Insert:
		return "INSERT"
	case Modify:
		return "MODIFY"
	case Delete:
		return "DELETE"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ErrExists and ErrNotFound are P4Runtime's ALREADY_EXISTS (an INSERT of an
// entry with the same key) and NOT_FOUND (a MODIFY or DELETE of none).
var (
	ErrExists   = errors.New("entry already exists")
	ErrNotFound = errors.New("no entry with that key")
)

// exactTable is an exact-match table keyed by one uint64 (the key fields
// concatenated). Keys below denseMax live in a slice, grown as entries
// are inserted, the rest in a map: lookups of the build's own keys never
// hash, and an entry and its presence share a cache line.
type exactTable[V any] struct {
	dense    []exactCell[V]
	denseMax uint64
	sparse   map[uint64]V
}

type exactCell[V any] struct {
	v   V
	has bool
}

// newExact returns a table whose keys below dense live in a slice of
// that length.
func newExact[V any](dense int) exactTable[V] {
	return exactTable[V]{dense: make([]exactCell[V], dense), denseMax: uint64(dense)}
}

// newGrowingExact returns a table whose keys below max live in a slice
// that grows with the largest of them inserted (QPNs: a host numbers its
// QPs from 1).
func newGrowingExact[V any](max int) exactTable[V] {
	return exactTable[V]{denseMax: uint64(max)}
}

func (t *exactTable[V]) get(k uint64) (V, bool) {
	if k < uint64(len(t.dense)) {
		c := &t.dense[k]
		return c.v, c.has
	}
	if k < t.denseMax {
		var zero V
		return zero, false
	}
	v, ok := t.sparse[k]
	return v, ok
}

// checkWrite is P4Runtime's answer to op on a key that is present or
// not: a second insert, or a modify or delete of no entry, is refused.
func checkWrite(op Op, present bool) error {
	switch {
	case op == Insert && present:
		return ErrExists
	case op != Insert && !present:
		return ErrNotFound
	}
	return nil
}

func (t *exactTable[V]) write(op Op, k uint64, v V) error {
	_, ok := t.get(k)
	if err := checkWrite(op, ok); err != nil {
		return err
	}
	if k < t.denseMax {
		if k >= uint64(len(t.dense)) { // an insert: get found none
			n := min(max(k+1, 2*uint64(len(t.dense))), t.denseMax)
			t.dense = append(t.dense, make([]exactCell[V], n-uint64(len(t.dense)))...)
		}
		if op == Delete {
			t.dense[k] = exactCell[V]{}
		} else {
			t.dense[k] = exactCell[V]{v, true}
		}
	} else if op == Delete {
		delete(t.sparse, k)
	} else {
		if t.sparse == nil {
			t.sparse = map[uint64]V{}
		}
		t.sparse[k] = v
	}
	return nil
}

// smallKeys is how many keys a smallTable holds inline: the ports (the
// host's, 0, and one a plane) and planes of a NIC of up to 8 planes.
const smallKeys = 9

// smallTable is an exactTable whose keys below smallKeys live inline, in
// the NIC itself: rx_plane and plane_self are read by every packet a NIC
// passes, and a table of their own was a cache miss each at scale. The
// other keys the program's tables take live in rest.
type smallTable[V any] struct {
	cells [smallKeys]exactCell[V]
	rest  *exactTable[V] // nil until a key beyond the cells is written
}

func (t *smallTable[V]) get(k uint64) (V, bool) {
	if k < smallKeys {
		c := &t.cells[k]
		return c.v, c.has
	}
	if t.rest == nil {
		var zero V
		return zero, false
	}
	return t.rest.get(k)
}

func (t *smallTable[V]) write(op Op, k uint64, v V) error {
	if k >= smallKeys {
		if t.rest == nil {
			t.rest = &exactTable[V]{}
		}
		return t.rest.write(op, k, v)
	}
	c := &t.cells[k]
	if err := checkWrite(op, c.has); err != nil {
		return err
	}
	if op == Delete {
		*c = exactCell[V]{}
	} else {
		*c = exactCell[V]{v, true}
	}
	return nil
}

// Common holds the tables every NIC of a fabric holds alike (the build's
// nics "common" part): the EV set and its backups, and the uSID templates.
// Many NICs may share one; writing it changes it for all of them.
type Common struct {
	prog *schema.Program
	dims dims
	// ev_set and ev_backup, by slot.
	evSet, evBackup exactTable[uint32]
	// row_usid, t1_usid, down_usid: by plane << 16 | index.
	rowUSID, t1USID, downUSID exactTable[uint16]
}

// dims are the fabric's sizes the dense tables are laid out by.
type dims struct {
	planes, t0s, t1s, down, setSize int
}

func (d dims) templateKey(plane uint8, index uint16, count int) uint64 {
	if int(plane) < d.planes && int(index) < count {
		return uint64(plane)*uint64(count) + uint64(index)
	}
	// Outside the fabric: past every dense key.
	return 1<<32 | uint64(plane)<<16 | uint64(index)
}

// NewCommon returns empty common tables for fabric f.
func NewCommon(f *fabric.Fabric) *Common {
	d := dims{planes: f.Planes, t0s: f.T0Count, t1s: f.T1Count, down: f.T0Down, setSize: f.EV.SetSize}
	return &Common{
		prog: schema.NIC(f), dims: d,
		evSet: newExact[uint32](d.setSize), evBackup: newExact[uint32](d.setSize),
		rowUSID: newExact[uint16](d.planes * d.t0s), t1USID: newExact[uint16](d.planes * d.t1s),
		downUSID: newExact[uint16](d.planes * d.down),
	}
}

// Write applies one update of a common table.
func (c *Common) Write(op Op, e entry.Entry) error {
	if err := checkEntry(c.prog, e); err != nil {
		return err
	}
	name := e.Table.FullName()
	var err error
	switch name {
	case schema.NICEVSet, schema.NICEVBackup:
		t := &c.evSet
		if name == schema.NICEVBackup {
			t = &c.evBackup
		}
		err = t.write(op, e.Match[0].Value, uint32(param(e, 0)))
	case schema.NICRowUSID:
		err = c.rowUSID.write(op, c.dims.templateKey(uint8(e.Match[0].Value), uint16(e.Match[1].Value), c.dims.t0s), uint16(param(e, 0)))
	case schema.NICT1USID:
		err = c.t1USID.write(op, c.dims.templateKey(uint8(e.Match[0].Value), uint16(e.Match[1].Value), c.dims.t1s), uint16(param(e, 0)))
	case schema.NICDownUSID:
		err = c.downUSID.write(op, c.dims.templateKey(uint8(e.Match[0].Value), uint16(e.Match[1].Value), c.dims.down), uint16(param(e, 0)))
	default:
		return fmt.Errorf("nicmodel: %s is not a common table (a NIC's own: write it to the NIC)", name)
	}
	if err != nil {
		return fmt.Errorf("nicmodel: %s %s: %w", op, name, err)
	}
	return nil
}

// param is parameter i of e's action (0 for an action without it: the
// default actions carry none).
func param(e entry.Entry, i int) uint64 {
	if i < len(e.Params) {
		return e.Params[i]
	}
	return 0
}

// checkEntry refuses an entry of another program or one that does not fit
// its table's schema.
func checkEntry(prog *schema.Program, e entry.Entry) error {
	if e.Table == nil || prog.TableByID(e.Table.ID) == nil {
		return fmt.Errorf("nicmodel: entry of a table the NIC program does not have")
	}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("nicmodel: %w", err)
	}
	return nil
}

// sendQP is qp_send's set_send_qp.
type sendQP struct {
	index, t1Offset, firstSlot uint16
	epoch                      uint8
	single                     bool
}

// recvQP is qp_recv's set_recv_qp.
type recvQP struct {
	index            uint16
	peerQP, startPSN uint32
	epoch            uint8
}

// rxPort is rx_plane's set_rx_plane.
type rxPort struct {
	plane       uint8
	ownDownUSID uint16
}

// self is plane_self's set_self.
type self struct {
	ownT0USID, ownRow uint16
}

// evStateEntry is one ternary entry of ev_state.
type evStateEntry struct {
	value, mask uint32
	priority    int32
	bad         bool // ev_assumed_bad or ev_denied: both make the EV unusable
}

// Write applies one update to one of the NIC's tables (its own, or through
// to its Common for the common ones).
func (n *NIC) Write(op Op, e entry.Entry) error {
	if err := checkEntry(n.common.prog, e); err != nil {
		return err
	}
	name := e.Table.FullName()
	var err error
	switch name {
	case schema.NICQPSend:
		n.sendHitOK = false
		k := e.Match[0].Value<<24 | e.Match[1].Value
		err = n.qpSend.write(op, k, sendQP{index: uint16(param(e, 0)), t1Offset: uint16(param(e, 1)),
			epoch: uint8(param(e, 2)), single: param(e, 3) == 1, firstSlot: uint16(param(e, 4))})
	case schema.NICQPRecv:
		err = n.qpRecv.write(op, e.Match[0].Value, recvQP{index: uint16(param(e, 0)), peerQP: uint32(param(e, 1)),
			epoch: uint8(param(e, 2)), startPSN: uint32(param(e, 3))})
	case schema.NICRxPlane:
		err = n.rxPlane.write(op, e.Match[0].Value, rxPort{plane: uint8(param(e, 0)), ownDownUSID: uint16(param(e, 1))})
	case schema.NICPlaneSelf:
		err = n.planeSelf.write(op, e.Match[0].Value, self{ownT0USID: uint16(param(e, 0)), ownRow: uint16(param(e, 1))})
	case schema.NICEVState:
		err = n.writeEVState(op, e)
	default:
		return n.common.Write(op, e)
	}
	if err != nil {
		return fmt.Errorf("nicmodel: %s %s: %w", op, name, err)
	}
	return nil
}

func (n *NIC) writeEVState(op Op, e entry.Entry) error {
	m := e.Match[0]
	x := evStateEntry{value: uint32(m.Value), mask: uint32(m.Mask), priority: e.Priority,
		bad: e.Action != nil && e.Action.Name != "ev_good"}
	for i, o := range n.evState {
		if o.value == x.value && o.mask == x.mask && o.priority == x.priority {
			switch op {
			case Insert:
				return ErrExists
			case Modify:
				n.evState[i] = x
			case Delete:
				n.evState = append(n.evState[:i], n.evState[i+1:]...)
			}
			return nil
		}
	}
	if op != Insert {
		return ErrNotFound
	}
	n.evState = append(n.evState, x)
	return nil
}

// evStateBad is ev_state's lookup: the highest-priority entry matching ev
// (P4Runtime: a larger priority wins) says whether the EV is unusable; no
// match is ev_good.
func (n *NIC) evStateBad(ev uint32) bool {
	best, bad := int32(0), false
	found := false
	for _, x := range n.evState {
		if ev&x.mask == x.value&x.mask && (!found || x.priority > best) {
			best, bad, found = x.priority, x.bad, true
		}
	}
	return bad
}

// SetCloneSession installs (or replaces) a clone session: packets cloned to
// it leave on its port.
func (n *NIC) SetCloneSession(cs schema.CloneSession) {
	op := Insert
	if _, ok := n.clones.get(uint64(cs.ID)); ok {
		op = Modify
	}
	_ = n.clones.write(op, uint64(cs.ID), cs.Port) // refused only a second insert, or a modify of none
}

// WriteAll applies one update type to entries of common tables, in order.
func (c *Common) WriteAll(op Op, entries ...entry.Entry) error {
	for _, e := range entries {
		if err := c.Write(op, e); err != nil {
			return err
		}
	}
	return nil
}
