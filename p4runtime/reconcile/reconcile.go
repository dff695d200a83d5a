package reconcile

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
)

// Op is the kind of a Change. A Diff lists its changes by Op (deletes,
// then modifies, then inserts); the order to write them in is Plan's.
type Op int

// Change kinds.
const (
	Delete Op = iota
	Modify
	Insert
)

// Ops lists the kinds in the Diff's order.
var Ops = []Op{Delete, Modify, Insert}

func (o Op) String() string {
	switch o {
	case Delete:
		return "DELETE"
	case Modify:
		return "MODIFY"
	case Insert:
		return "INSERT"
	default:
		return fmt.Sprintf("Op(%d)", int(o))
	}
}

// UpdateType returns the P4Runtime update type of o.
func (o Op) UpdateType() p4v1.Update_Type {
	switch o {
	case Delete:
		return p4v1.Update_DELETE
	case Modify:
		return p4v1.Update_MODIFY
	case Insert:
		return p4v1.Update_INSERT
	default:
		return p4v1.Update_UNSPECIFIED
	}
}

// Change is one update to make on the device.
type Change struct {
	Op Op
	// Entity is the entity to write: the desired one for Insert and
	// Modify, the device's for Delete.
	Entity *p4v1.Entity
	// Current is the entity on the device that a Modify replaces (nil for
	// a default entry that was not read).
	Current *p4v1.Entity
}

// Diff is the ordered list of changes from current to desired state.
type Diff struct {
	// Changes sorted by Op (deletes first), then key: clone sessions by
	// session id, then table entries by table id and match.
	Changes []Change
	// Unchanged counts desired entities already on the device as wanted.
	Unchanged int
	// held counts the device's entries per table (default entries aside).
	held map[uint32]int
}

// Phase is one Write of a push: changes that do not depend on each other.
type Phase struct {
	// Name says what the phase does, e.g. "INSERT+MODIFY".
	Name    string
	Changes []Change
}

// Updates returns the phase's updates, in order.
func (p Phase) Updates() []*p4v1.Update {
	out := make([]*p4v1.Update, len(p.Changes))
	slab := make([]p4v1.Update, len(p.Changes)) // one allocation, not one per update
	for i, c := range p.Changes {
		u := &slab[i]
		u.Type, u.Entity = c.Op.UpdateType(), c.Entity
		out[i] = u
	}
	return out
}

// Plan orders the changes make-before-break, so that a push that stops
// half-way leaves every old entry until its replacement is in:
//
//  1. DELETE (make room): the deletes of a table that could not hold its
//     new entries next to the old ones (entries on the device plus inserts
//     above size(table); a size of 0 is no limit). Only such tables.
//  2. INSERT+MODIFY clone sessions, before the entries that may refer to
//     them.
//  3. INSERT+MODIFY table entries (default entries included).
//  4. DELETE table entries that are no longer wanted.
//  5. DELETE clone sessions, after the entries that referred to them.
//
// An INSERT and a DELETE never share a key (that is a MODIFY), so no phase
// depends on a later one. Empty phases are left out.
func (d *Diff) Plan(size func(table uint32) int64) []Phase {
	// Changes come by op, then table: count each run of one table's
	// inserts at once.
	inserts := map[uint32]int{}
	runID, runN := uint32(0), 0
	for _, c := range d.Changes {
		if c.Op != Insert {
			continue
		}
		if te := c.Entity.GetTableEntry(); te != nil {
			if id := te.GetTableId(); id != runID {
				if runN > 0 {
					inserts[runID] += runN
				}
				runID, runN = id, 0
			}
			runN++
		}
	}
	if runN > 0 {
		inserts[runID] += runN
	}
	full := map[uint32]bool{}
	for id, n := range inserts {
		if limit := size(id); limit > 0 && int64(d.held[id]+n) > limit {
			full[id] = true
		}
	}
	var room, sessions, deletes, sessionDeletes []Change
	tables := make([]Change, 0, len(d.Changes)) // most of a push
	for _, c := range d.Changes {
		te := c.Entity.GetTableEntry()
		switch {
		case te == nil && c.Op == Delete:
			sessionDeletes = append(sessionDeletes, c)
		case te == nil:
			sessions = append(sessions, c)
		case c.Op == Delete && len(full) > 0 && full[te.GetTableId()]:
			room = append(room, c)
		case c.Op == Delete:
			deletes = append(deletes, c)
		default:
			tables = append(tables, c)
		}
	}
	var out []Phase
	for _, p := range []Phase{
		{"DELETE (make room)", room},
		{"INSERT+MODIFY clone sessions", sessions},
		{"INSERT+MODIFY", tables},
		{"DELETE", deletes},
		{"DELETE clone sessions", sessionDeletes},
	} {
		if len(p.Changes) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Count returns the number of changes of kind op.
func (d *Diff) Count(op Op) int {
	n := 0
	for _, c := range d.Changes {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Empty reports whether there is nothing to write.
func (d *Diff) Empty() bool { return len(d.Changes) == 0 }

// Updates returns the updates of kind op, in the Diff's order.
func (d *Diff) Updates(op Op) []*p4v1.Update {
	var out []*p4v1.Update
	for _, c := range d.Changes {
		if c.Op == op {
			out = append(out, &p4v1.Update{Type: op.UpdateType(), Entity: c.Entity})
		}
	}
	return out
}

// Summary is a one-line count, e.g. "2 inserts, 1 modify, 0 deletes, 7 unchanged".
func (d *Diff) Summary() string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	return fmt.Sprintf("%s, %s, %s, %d unchanged",
		plural(d.Count(Insert), "insert", "inserts"), plural(d.Count(Modify), "modify", "modifies"),
		plural(d.Count(Delete), "delete", "deletes"), d.Unchanged)
}

// Render writes one line per change, in the Diff's order (Plan gives the
// write order):
//
//	DELETE ingress.l2_fwd dst=00:00:00:00:00:09 -> ingress.set_port(port=3)
//	MODIFY ingress.l2_fwd dst=00:00:00:00:00:01 -> ingress.set_port(port=7) (was ingress.set_port(port=5))
//	INSERT ingress.l2_fwd dst=00:00:00:00:00:02 -> ingress.set_port(port=6)
//	INSERT clone session 1 -> port 1
//	MODIFY clone session 2 -> port 4 (was port 2)
//
// with names from the P4Info index.
func (d *Diff) Render(w io.Writer, idx *infoindex.Index) error {
	var b strings.Builder
	for _, c := range d.Changes {
		b.WriteString(c.Op.String())
		b.WriteByte(' ')
		b.WriteString(idx.Describe(c.Entity))
		if c.Op == Modify && c.Current != nil {
			fmt.Fprintf(&b, " (was %s)", idx.DescribeState(c.Current))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// item is one keyed entity. Its state (what a MODIFY would replace) is
// computed only when the other side holds the same key: a fresh push is
// all inserts and never needs it.
type item struct {
	entity *p4v1.Entity
	table  *p4v1.TableEntry // canonical view; nil for a clone session
	// i is the entity's index in its slice; the key is keys[start:end]
	// of its side.
	i          int
	start, end int
}

func (it item) state() []byte {
	if it.table != nil {
		return canonical.State(it.table)
	}
	cs := it.entity.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
	return canonical.CloneSessionState(canonical.CloneSession(cs))
}

// side is one side of a diff: its items sorted by key, the keys in one
// buffer (a string each cost a push an allocation per entry).
type side struct {
	items []item
	keys  []byte
}

func (s *side) key(it item) []byte { return s.keys[it.start:it.end] }

// keyed keys entities and sorts them by key (a build's entities, and a
// device's, usually come in that order already: then nothing is moved).
// Two entities with one key are refused, naming the later one.
func keyed(what string, entities []*p4v1.Entity) (*side, error) {
	s := &side{items: make([]item, 0, len(entities)), keys: make([]byte, 0, 32*len(entities))}
	for i, e := range entities {
		it := item{entity: e, i: i, start: len(s.keys)}
		if cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
			s.keys = canonical.AppendCloneSessionKey(s.keys, cs.GetSessionId())
		} else {
			te := e.GetTableEntry()
			if te == nil {
				_, err := canonical.Key(e) // names the unsupported kind
				return nil, fmt.Errorf("%s entity %d: %w", what, i, err)
			}
			if what == "device" && te.GetIsConst() {
				// Const entries cannot be written; they are not part of
				// the managed state.
				continue
			}
			it.table = canonical.View(te)
			s.keys = canonical.AppendTableKey(s.keys, it.table)
		}
		it.end = len(s.keys)
		s.items = append(s.items, it)
	}
	byKey := func(a, b item) int { return cmp.Or(bytes.Compare(s.key(a), s.key(b)), cmp.Compare(a.i, b.i)) }
	if !slices.IsSortedFunc(s.items, byKey) {
		slices.SortFunc(s.items, byKey)
	}
	// Equal keys are now next to each other, in input order: report the
	// earliest entity that repeats a key, as a walk in input order would.
	dup := -1
	for k := 1; k < len(s.items); k++ {
		if it := s.items[k]; bytes.Equal(s.key(it), s.key(s.items[k-1])) && (dup < 0 || it.i < s.items[dup].i) {
			dup = k
		}
	}
	if dup >= 0 {
		it := s.items[dup]
		if cs := it.entity.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
			return nil, fmt.Errorf("%s entity %d: duplicate key (clone session %d given twice)", what, it.i, cs.GetSessionId())
		}
		return nil, fmt.Errorf("%s entity %d: duplicate key (table %#x, same match and priority as an earlier entity)", what, it.i, it.table.GetTableId())
	}
	return s, nil
}

// Compute returns the changes that turn current (read from the device)
// into desired. Neither slice is modified; Changes point at their entities.
// Both may mix table entries and clone sessions; every clone session in
// current is managed: one not in desired is deleted (see ReadState).
//
// Both sides are keyed and sorted by key, then merged in one pass: the
// changes come out in the Diff's order without a map or a sort of the
// changes.
func Compute(desired, current []*p4v1.Entity) (*Diff, error) {
	want, err := keyed("desired", desired)
	if err != nil {
		return nil, err
	}
	have, err := keyed("device", current)
	if err != nil {
		return nil, err
	}
	d := &Diff{held: map[uint32]int{}}
	var deletes, modifies []Change
	inserts := make([]Change, 0, max(len(want.items)-len(have.items), 0))
	heldID, heldN := uint32(0), 0 // the table being counted (entries come by table)
	flush := func() {
		if heldN > 0 {
			d.held[heldID] += heldN
		}
	}
	w, h := 0, 0
	for w < len(want.items) || h < len(have.items) {
		c := 0
		switch {
		case w == len(want.items):
			c = 1
		case h == len(have.items):
			c = -1
		default:
			c = bytes.Compare(want.key(want.items[w]), have.key(have.items[h]))
		}
		if c >= 0 {
			// The device's entity, matched or not.
			hi := have.items[h]
			h++
			if hi.table.GetIsDefaultAction() {
				// A default entry cannot be deleted; one the build does
				// not name is left as it is.
				if c > 0 {
					continue
				}
			} else if hi.table != nil {
				if id := hi.table.GetTableId(); id != heldID {
					flush()
					heldID, heldN = id, 0
				}
				heldN++
			}
			if c > 0 {
				deletes = append(deletes, Change{Op: Delete, Entity: hi.entity})
				continue
			}
			wi := want.items[w]
			w++
			if !bytes.Equal(wi.state(), hi.state()) {
				modifies = append(modifies, Change{Op: Modify, Entity: wi.entity, Current: hi.entity})
			} else {
				d.Unchanged++
			}
			continue
		}
		wi := want.items[w]
		w++
		if wi.table.GetIsDefaultAction() {
			// A default entry always exists: one not read is replaced.
			modifies = append(modifies, Change{Op: Modify, Entity: wi.entity})
		} else {
			inserts = append(inserts, Change{Op: Insert, Entity: wi.entity})
		}
	}
	flush()
	// Clone session keys sort first, by session id; table keys start with
	// the big-endian table id. So this orders by op, then clone sessions,
	// then table and match.
	if len(deletes)+len(modifies) == 0 {
		d.Changes = inserts // a fresh push: no copy
	} else {
		d.Changes = slices.Concat(deletes, modifies, inserts)
	}
	return d, nil
}

// Reader reads entities from a device (client.Client implements it).
type Reader interface {
	Read(ctx context.Context, filters []*p4v1.Entity) ([]*p4v1.Entity, error)
}

// ReadTables reads every entry of every table of the P4Info with one
// wildcard filter per table id.
func ReadTables(ctx context.Context, r Reader, idx *infoindex.Index) ([]*p4v1.Entity, error) {
	ids := idx.TableIDs()
	if len(ids) == 0 {
		return nil, nil
	}
	filters := make([]*p4v1.Entity, len(ids))
	for i, id := range ids {
		filters[i] = &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}}
	}
	return r.Read(ctx, filters)
}

// cloneSessionFilter is a read filter for the clone session id (0: all).
func cloneSessionFilter(id uint32) *p4v1.Entity {
	return canonical.CloneSessionEntity(&p4v1.CloneSessionEntry{SessionId: id})
}

// ReadCloneSessions reads the device's clone sessions.
//
// It first sends a wildcard read (session_id 0), which PI answers with every
// clone session of the device. A server that refuses the wildcard
// (UNIMPLEMENTED, INVALID_ARGUMENT, NOT_FOUND or OUT_OF_RANGE) is read again
// one session at a time, each id of want in its own ReadRequest, a NOT_FOUND
// meaning the session is absent; sessions outside want are then not seen
// (and so not deleted). Entities of the answer that are not clone sessions
// with a non-zero id are dropped.
func ReadCloneSessions(ctx context.Context, r Reader, want []uint32) ([]*p4v1.Entity, error) {
	got, err := r.Read(ctx, []*p4v1.Entity{cloneSessionFilter(0)})
	if err == nil {
		return onlyCloneSessions(got, nil), nil
	}
	switch status.Code(err) {
	case codes.Unimplemented, codes.InvalidArgument, codes.NotFound, codes.OutOfRange:
	default:
		return nil, fmt.Errorf("read clone sessions: %w", err)
	}
	ids := slices.Clone(want)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []*p4v1.Entity
	for _, id := range ids {
		if id == 0 {
			continue
		}
		got, rerr := r.Read(ctx, []*p4v1.Entity{cloneSessionFilter(id)})
		switch {
		case status.Code(rerr) == codes.NotFound:
			continue
		case rerr != nil:
			return nil, fmt.Errorf("read clone session %d (after the wildcard read failed: %v): %w", id, err, rerr)
		}
		out = append(out, onlyCloneSessions(got, &id)...)
	}
	return out, nil
}

// onlyCloneSessions keeps the clone sessions of got with a non-zero id
// (only id when not nil).
func onlyCloneSessions(got []*p4v1.Entity, id *uint32) []*p4v1.Entity {
	out := got[:0:0]
	for _, e := range got {
		cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
		if cs == nil || cs.GetSessionId() == 0 || id != nil && cs.GetSessionId() != *id {
			continue
		}
		out = append(out, e)
	}
	return out
}

// ReadState reads what Compute compares desired against: every entry of
// every table of the P4Info (ReadTables), the device's clone sessions
// (ReadCloneSessions, with the ids of the clone sessions in desired for a
// server that refuses the wildcard read) and the default entries of the
// tables whose default desired names (ReadDefaults).
//
// It asks for all of them in one ReadRequest (one round trip instead of
// three: a push to many devices pays each of them once per device). A
// server that refuses that request with a code ReadCloneSessions falls back
// on (see there) is read again one kind at a time, as the functions above
// do.
//
// Every clone session on the device is managed: mrcgen's build is the only
// writer of clone sessions, so one that desired does not hold is deleted.
func ReadState(ctx context.Context, r Reader, idx *infoindex.Index, desired []*p4v1.Entity) ([]*p4v1.Entity, error) {
	defaults := defaultTables(desired)
	ids := idx.TableIDs()
	filters := make([]*p4v1.Entity, 0, len(ids)+1+len(defaults))
	for _, id := range ids {
		filters = append(filters, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}})
	}
	filters = append(filters, cloneSessionFilter(0))
	for _, id := range defaults {
		filters = append(filters, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id, IsDefaultAction: true}}})
	}
	got, err := r.Read(ctx, filters)
	if err == nil {
		// Answers come in the order of the filters: table entries, then
		// clone sessions, then defaults. Keep what each filter asks for.
		out := got[:0:0]
		for _, e := range got {
			if e.GetPacketReplicationEngineEntry() != nil {
				if cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs == nil || cs.GetSessionId() == 0 {
					continue
				}
			}
			out = append(out, e)
		}
		return out, nil
	}
	switch status.Code(err) {
	case codes.Unimplemented, codes.InvalidArgument, codes.NotFound, codes.OutOfRange:
	default:
		return nil, fmt.Errorf("read tables, clone sessions and default entries: %w", err)
	}
	return readStateApart(ctx, r, idx, desired, defaults)
}

// readStateApart is ReadState one kind at a time.
func readStateApart(ctx context.Context, r Reader, idx *infoindex.Index, desired []*p4v1.Entity, defaults []uint32) ([]*p4v1.Entity, error) {
	tables, err := ReadTables(ctx, r, idx)
	if err != nil {
		return nil, err
	}
	var want []uint32
	for _, e := range desired {
		if cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
			want = append(want, cs.GetSessionId())
		}
	}
	sessions, err := ReadCloneSessions(ctx, r, want)
	if err != nil {
		return nil, err
	}
	def, err := ReadDefaults(ctx, r, defaults)
	if err != nil {
		return nil, err
	}
	return append(append(sessions, tables...), def...), nil
}

// defaultTables lists the tables of the default entries in desired.
func defaultTables(desired []*p4v1.Entity) []uint32 {
	var ids []uint32
	for _, e := range desired {
		if te := e.GetTableEntry(); te.GetIsDefaultAction() {
			ids = append(ids, te.GetTableId())
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// ReadDefaults reads the default entries of the given tables, with one
// filter per table (table_id and is_default_action set) in one ReadRequest:
// a wildcard read of a table does not return its default entry.
func ReadDefaults(ctx context.Context, r Reader, tables []uint32) ([]*p4v1.Entity, error) {
	if len(tables) == 0 {
		return nil, nil
	}
	filters := make([]*p4v1.Entity, len(tables))
	for i, id := range tables {
		filters[i] = &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id, IsDefaultAction: true}}}
	}
	got, err := r.Read(ctx, filters)
	if err != nil {
		return nil, fmt.Errorf("read default entries: %w", err)
	}
	return got, nil
}
