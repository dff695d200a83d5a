package tabletext

import (
	"errors"
	"fmt"
	"math/bits"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// The binary table files are P4Runtime WriteRequests in protobuf wire
// format: the concatenation of `updates` fields (field 4), so that any
// protobuf library reads a whole file as one WriteRequest. AppendEntryWire
// writes exactly the bytes proto.Marshal gives for the same update (a test
// holds it to that), at a quarter of the text's size and without the
// protobuf runtime. ParseWire reads them back; like the text reader it has
// a fast path for the updates mrcgen writes and hands anything else, one
// update at a time, to the protobuf runtime, so it is never different from
// proto.Unmarshal followed by entry.FromProto.

// Field numbers of p4.v1 (p4runtime.proto).
const (
	fWriteUpdates     = 4 // WriteRequest.updates
	fUpdateType       = 1 // Update.type
	fUpdateEntity     = 2 // Update.entity
	fEntityTable      = 2 // Entity.table_entry
	fEntityPRE        = 9 // Entity.packet_replication_engine_entry
	fPREClone         = 2 // PacketReplicationEngineEntry.clone_session_entry
	fCloneID          = 1 // CloneSessionEntry.session_id
	fCloneReplicas    = 2 // CloneSessionEntry.replicas
	fReplicaPort      = 1 // Replica.egress_port
	fTableID          = 1 // TableEntry.table_id
	fTableMatch       = 2 // TableEntry.match
	fTableAction      = 3 // TableEntry.action
	fTablePriority    = 4 // TableEntry.priority
	fMatchField       = 1 // FieldMatch.field_id
	fMatchExact       = 2 // FieldMatch.exact
	fMatchTernary     = 3 // FieldMatch.ternary
	fMatchLPM         = 4 // FieldMatch.lpm
	fValue            = 1 // Exact/Ternary/LPM.value
	fMask             = 2 // Ternary.mask, LPM.prefix_len
	fTableActionDirec = 1 // TableAction.action
	fActionID         = 1 // Action.action_id
	fActionParams     = 4 // Action.params
	fParamID          = 2 // Action.Param.param_id
	fParamValue       = 3 // Action.Param.value
)

// updateType is the wire value of an UpdateType.
func (t UpdateType) wire() uint64 {
	switch t {
	case Insert:
		return uint64(p4v1.Update_INSERT)
	case Modify:
		return uint64(p4v1.Update_MODIFY)
	case Delete:
		return uint64(p4v1.Update_DELETE)
	}
	return uint64(p4v1.Update_UNSPECIFIED)
}

// canonLen is the length of entry.Canonical(v).
func canonLen(v uint64) int { return max(1, (bits.Len64(v)+7)/8) }

// Sizes of fields whose number is below 16 (one tag byte). The values and
// lengths of table entries are nearly all below 128 (one byte): that case
// is tested first, and the tag is a constant byte, not protowire's
// general encoder (which was most of a build's encoding time).
func sizeVarint(v uint64) int {
	if v < 0x80 {
		return 2
	}
	return 1 + protowire.SizeVarint(v)
}

func sizeBytes(n int) int {
	if n < 0x80 {
		return 2 + n
	}
	return 1 + protowire.SizeBytes(n)
}

// sizeVarintOpt is a proto3 scalar's size: nothing when it is zero.
func sizeVarintOpt(v uint64) int {
	if v == 0 {
		return 0
	}
	return sizeVarint(v)
}

// tag is the key byte of field num (< 16) of wire type typ.
func tag(num protowire.Number, typ protowire.Type) byte { return byte(num)<<3 | byte(typ) }

func appendVarint(dst []byte, num protowire.Number, v uint64) []byte {
	if v < 0x80 {
		return append(dst, tag(num, protowire.VarintType), byte(v))
	}
	return protowire.AppendVarint(append(dst, tag(num, protowire.VarintType)), v)
}

func appendLen(dst []byte, num protowire.Number, n int) []byte {
	if n < 0x80 {
		return append(dst, tag(num, protowire.BytesType), byte(n))
	}
	return protowire.AppendVarint(append(dst, tag(num, protowire.BytesType)), uint64(n))
}

func appendCanon(dst []byte, num protowire.Number, v uint64) []byte {
	n := canonLen(v)
	dst = append(dst, tag(num, protowire.BytesType), byte(n))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*uint(i))))
	}
	return dst
}

// matchSize is the size of the inner FieldMatch message of key k.
func matchSize(k *schema.Field, m entry.Match) (inner, kind int) {
	switch k.Match {
	case schema.Exact:
		kind = sizeBytes(canonLen(m.Value))
	case schema.Ternary:
		kind = sizeBytes(canonLen(m.Value)) + sizeBytes(canonLen(m.Mask))
	case schema.LPM:
		kind = sizeBytes(canonLen(m.Value)) + sizeVarintOpt(uint64(int64(int32(m.Mask))))
	}
	return sizeVarintOpt(uint64(k.ID)) + sizeBytes(kind), kind
}

// AppendEntryWire appends the entry as one `updates` field of a
// P4Runtime WriteRequest in protobuf wire format: the bytes proto.Marshal
// gives for the update of e.Proto().
func AppendEntryWire(dst []byte, e *entry.Entry, typ UpdateType) []byte {
	return appendEntryWire(dst, e, typ, nil)
}

// appendEntryWire is AppendEntryWire; with rec set it also appends to *rec
// the offset in dst of each exact match value's and each parameter's
// bytes, in that order.
func appendEntryWire(dst []byte, e *entry.Entry, typ UpdateType, rec *[]int) []byte {
	t := e.Table
	// Sizes, innermost first.
	matches := 0
	for i := range t.Keys {
		inner, _ := matchSize(&t.Keys[i], e.Match[i])
		matches += sizeBytes(inner)
	}
	action := sizeVarintOpt(uint64(e.Action.ID))
	for i := range e.Action.Params {
		action += sizeBytes(sizeVarintOpt(uint64(e.Action.Params[i].ID)) + sizeBytes(canonLen(e.Params[i])))
	}
	tableAction := sizeBytes(action)
	te := sizeVarintOpt(uint64(t.ID)) + matches + sizeBytes(tableAction) + sizeVarintOpt(uint64(int64(e.Priority)))
	ent := sizeBytes(te)
	upd := sizeVarintOpt(typ.wire()) + sizeBytes(ent)

	dst = appendLen(dst, fWriteUpdates, upd)
	if w := typ.wire(); w != 0 {
		dst = appendVarint(dst, fUpdateType, w)
	}
	dst = appendLen(dst, fUpdateEntity, ent)
	dst = appendLen(dst, fEntityTable, te)
	if t.ID != 0 {
		dst = appendVarint(dst, fTableID, uint64(t.ID))
	}
	for i := range t.Keys {
		k := &t.Keys[i]
		m := e.Match[i]
		inner, kind := matchSize(k, m)
		dst = appendLen(dst, fTableMatch, inner)
		if k.ID != 0 {
			dst = appendVarint(dst, fMatchField, uint64(k.ID))
		}
		switch k.Match {
		case schema.Exact:
			dst = appendLen(dst, fMatchExact, kind)
			if rec != nil {
				*rec = append(*rec, len(dst)+2)
			}
			dst = appendCanon(dst, fValue, m.Value)
		case schema.Ternary:
			dst = appendLen(dst, fMatchTernary, kind)
			dst = appendCanon(dst, fValue, m.Value)
			dst = appendCanon(dst, fMask, m.Mask)
		case schema.LPM:
			dst = appendLen(dst, fMatchLPM, kind)
			dst = appendCanon(dst, fValue, m.Value)
			if pl := uint64(int64(int32(m.Mask))); pl != 0 {
				dst = appendVarint(dst, fMask, pl)
			}
		}
	}
	dst = appendLen(dst, fTableAction, tableAction)
	dst = appendLen(dst, fTableActionDirec, action)
	if e.Action.ID != 0 {
		dst = appendVarint(dst, fActionID, uint64(e.Action.ID))
	}
	for i := range e.Action.Params {
		id := uint64(e.Action.Params[i].ID)
		dst = appendLen(dst, fActionParams, sizeVarintOpt(id)+sizeBytes(canonLen(e.Params[i])))
		if id != 0 {
			dst = appendVarint(dst, fParamID, id)
		}
		if rec != nil {
			*rec = append(*rec, len(dst)+2)
		}
		dst = appendCanon(dst, fParamValue, e.Params[i])
	}
	if e.Priority != 0 {
		dst = appendVarint(dst, fTablePriority, uint64(int64(e.Priority)))
	}
	return dst
}

// WireEncoder appends entries as AppendEntryWire does, the same bytes,
// faster for what a device's tables are made of: runs of entries of one
// table and action whose values have the same canonical lengths. It keeps
// the bytes of each such layout once and, for each entry, copies them and
// writes its values in place. Entries with a priority or a non-exact key
// are encoded by AppendEntryWire. The zero value is ready; not for
// concurrent use.
type WireEncoder struct {
	layouts []wireLayout
}

// wireLayout is the encoding of one (table, action, update type, value
// lengths); offs are where its values go.
type wireLayout struct {
	table  *schema.Table
	action *schema.Action
	typ    UpdateType
	lens   uint64 // 4 bits per value, match values then parameters
	bytes  []byte
	offs   []int
}

// maxLayouts bounds a WireEncoder's memory: past it, it starts over.
const maxLayouts = 64

// Append appends e as one `updates` field (see AppendEntryWire).
func (w *WireEncoder) Append(dst []byte, e *entry.Entry, typ UpdateType) []byte {
	t := e.Table
	if e.Priority != 0 || len(t.Keys)+len(e.Params) > 16 {
		return AppendEntryWire(dst, e, typ)
	}
	var lens uint64
	for i := range t.Keys {
		if t.Keys[i].Match != schema.Exact {
			return AppendEntryWire(dst, e, typ)
		}
		lens = lens<<4 | uint64(canonLen(e.Match[i].Value))
	}
	for _, v := range e.Params {
		lens = lens<<4 | uint64(canonLen(v))
	}
	var l *wireLayout
	for i := range w.layouts {
		if x := &w.layouts[i]; x.lens == lens && x.table == t && x.action == e.Action && x.typ == typ {
			l = x
			break
		}
	}
	if l == nil {
		if len(w.layouts) == maxLayouts {
			w.layouts = w.layouts[:0]
		}
		var offs []int
		bytes := appendEntryWire(nil, e, typ, &offs)
		w.layouts = append(w.layouts, wireLayout{table: t, action: e.Action, typ: typ, lens: lens, bytes: bytes, offs: offs})
		return append(dst, bytes...)
	}
	start := len(dst)
	dst = append(dst, l.bytes...)
	out := dst[start:]
	for i := range t.Keys {
		putCanon(out[l.offs[i]:], e.Match[i].Value)
	}
	for i, v := range e.Params {
		putCanon(out[l.offs[len(t.Keys)+i]:], v)
	}
	return dst
}

// putCanon writes entry.Canonical(v) at the start of b.
func putCanon(b []byte, v uint64) {
	n := canonLen(v)
	_ = b[n-1]
	for i := 0; i < n; i++ {
		b[i] = byte(v >> (8 * uint(n-1-i)))
	}
}

// AppendCloneSessionWire appends a clone session as one `updates` field of
// a WriteRequest in wire format (the message of entry.CloneSessionProto).
func AppendCloneSessionWire(dst []byte, cs schema.CloneSession, typ UpdateType) []byte {
	replica := sizeVarint(uint64(cs.Port)) // a oneof member: written even when 0
	clone := sizeVarintOpt(uint64(cs.ID)) + sizeBytes(replica)
	pre := sizeBytes(clone)
	ent := sizeBytes(pre)
	upd := sizeVarintOpt(typ.wire()) + sizeBytes(ent)
	dst = appendLen(dst, fWriteUpdates, upd)
	if w := typ.wire(); w != 0 {
		dst = appendVarint(dst, fUpdateType, w)
	}
	dst = appendLen(dst, fUpdateEntity, ent)
	dst = appendLen(dst, fEntityPRE, pre)
	dst = appendLen(dst, fPREClone, clone)
	if cs.ID != 0 {
		dst = appendVarint(dst, fCloneID, uint64(cs.ID))
	}
	dst = appendLen(dst, fCloneReplicas, replica)
	return appendVarint(dst, fReplicaPort, uint64(cs.Port))
}

// wireUpdates calls fn with each update of a WriteRequest in wire format,
// numbered from 1. Fields other than updates are refused: a table file
// holds nothing else.
func wireUpdates(data []byte, fn func(n int, upd []byte) error) error {
	n := 0
	for len(data) > 0 {
		num, typ, tl := protowire.ConsumeTag(data)
		if tl < 0 {
			return fmt.Errorf("after update %d: %w", n, protowire.ParseError(tl))
		}
		if num != fWriteUpdates || typ != protowire.BytesType {
			return fmt.Errorf("after update %d: field %d of a WriteRequest: a table file holds only updates", n, num)
		}
		upd, l := protowire.ConsumeBytes(data[tl:])
		if l < 0 {
			return fmt.Errorf("update %d: %w", n+1, protowire.ParseError(l))
		}
		data = data[tl+l:]
		n++
		if err := fn(n, upd); err != nil {
			return err
		}
	}
	return nil
}

// ParseWire decodes a table file in wire format against prog; name is the
// file's name in messages. Every update must be a table entry INSERT.
func ParseWire(prog *schema.Program, name string, data []byte) ([]entry.Entry, error) {
	var out []entry.Entry
	var wp wireParser
	err := wireUpdates(data, func(n int, upd []byte) error {
		if e, ok := wp.entry(prog, upd); ok {
			out = append(out, e)
			return nil
		}
		u, err := slowUpdate(upd)
		if err != nil {
			return fmt.Errorf("update %d: %w", n, err)
		}
		te := u.GetEntity().GetTableEntry()
		if te == nil {
			return fmt.Errorf("update %d is not a table entry", n)
		}
		if u.GetType() != p4v1.Update_INSERT {
			return fmt.Errorf("update %d: type %s, a table file holds INSERTs", n, u.GetType())
		}
		e, err := entry.FromProto(prog, te)
		if err != nil {
			return fmt.Errorf("update %d: %w", n, err)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// ParseEntitiesWire decodes a table file in wire format into P4Runtime
// entities: table entries (checked against prog, re-encoded canonically)
// and clone sessions; name is the file's name in messages.
func ParseEntitiesWire(prog *schema.Program, name string, data []byte) ([]*p4v1.Entity, error) {
	var out []*p4v1.Entity
	var wp wireParser
	err := wireUpdates(data, func(n int, upd []byte) error {
		if e, ok := wp.entry(prog, upd); ok {
			out = append(out, e.Proto())
			return nil
		}
		u, err := slowUpdate(upd)
		if err != nil {
			return fmt.Errorf("update %d: %w", n, err)
		}
		if u.GetType() != p4v1.Update_INSERT {
			return fmt.Errorf("update %d: type %s, a table file holds INSERTs", n, u.GetType())
		}
		ent, err := checkEntity(prog, u.GetEntity())
		if err != nil {
			return fmt.Errorf("update %d: %w", n, err)
		}
		out = append(out, ent)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// checkEntity is what the readers accept of an update's entity: a table
// entry of prog (returned re-encoded) or a clone session with an id and
// replicas.
func checkEntity(prog *schema.Program, ent *p4v1.Entity) (*p4v1.Entity, error) {
	switch {
	case ent.GetTableEntry() != nil:
		e, err := entry.FromProto(prog, ent.GetTableEntry())
		if err != nil {
			return nil, err
		}
		return e.Proto(), nil
	case ent.GetPacketReplicationEngineEntry().GetCloneSessionEntry() != nil:
		cs := ent.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
		if cs.GetSessionId() == 0 || len(cs.GetReplicas()) == 0 {
			return nil, fmt.Errorf("clone session %d without replicas or id", cs.GetSessionId())
		}
		return ent, nil
	}
	return nil, errors.New("neither a table entry nor a clone session")
}

func slowUpdate(b []byte) (*p4v1.Update, error) {
	u := &p4v1.Update{}
	if err := proto.Unmarshal(b, u); err != nil {
		return nil, err
	}
	return u, nil
}

// wireParser reads the updates AppendEntryWire writes, INSERTs of table
// entries with every key field and parameter given once, straight into
// Entries; ok false sends the update to the protobuf runtime.
type wireParser struct {
	match  []entry.Match
	params []uint64
}

func (p *wireParser) matches(n int) []entry.Match {
	if len(p.match)+n > cap(p.match) {
		p.match = make([]entry.Match, 0, max(4096, n))
	}
	m0 := len(p.match)
	p.match = p.match[:m0+n]
	return p.match[m0 : m0+n : m0+n]
}

func (p *wireParser) paramSlice(n int) []uint64 {
	if len(p.params)+n > cap(p.params) {
		p.params = make([]uint64, 0, max(4096, n))
	}
	p0 := len(p.params)
	p.params = p.params[:p0+n]
	return p.params[p0 : p0+n : p0+n]
}

// field reads one field: its number and either its varint (v) or its
// bytes (b). ok is false on anything but a varint or length-delimited
// field, or bad wire data.
func field(data []byte) (num protowire.Number, v uint64, b []byte, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(data)
	if n < 0 {
		return 0, 0, nil, nil, false
	}
	data = data[n:]
	switch typ {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(data)
	case protowire.BytesType:
		b, n = protowire.ConsumeBytes(data)
	default:
		return 0, 0, nil, nil, false
	}
	if n < 0 {
		return 0, 0, nil, nil, false
	}
	return num, v, b, data[n:], true
}

// one reads a message that must hold exactly one length-delimited field
// numbered num, and returns its bytes.
func one(data []byte, num protowire.Number) ([]byte, bool) {
	n, _, b, rest, ok := field(data)
	if !ok || n != num || b == nil || len(rest) != 0 {
		return nil, false
	}
	return b, true
}

func value(b []byte, bits int) (uint64, bool) {
	v, err := entry.DecodeValue(b, bits, "")
	return v, err == nil
}

func (p *wireParser) entry(prog *schema.Program, upd []byte) (entry.Entry, bool) {
	var e entry.Entry
	var typ uint64
	var ent []byte
	seen := 0
	for len(upd) > 0 {
		num, v, b, rest, ok := field(upd)
		if !ok {
			return e, false
		}
		upd = rest
		switch {
		case num == fUpdateType && b == nil && seen&1 == 0:
			typ, seen = v, seen|1
		case num == fUpdateEntity && b != nil && seen&2 == 0:
			ent, seen = b, seen|2
		default:
			return e, false
		}
	}
	if typ != uint64(p4v1.Update_INSERT) || ent == nil {
		return e, false
	}
	te, ok := one(ent, fEntityTable)
	if !ok {
		return e, false
	}
	var tableID, priority uint64
	var act []byte
	var keys [][]byte
	var keyBuf [8][]byte
	keys = keyBuf[:0]
	seen = 0
	for len(te) > 0 {
		num, v, b, rest, ok := field(te)
		if !ok {
			return e, false
		}
		te = rest
		switch {
		case num == fTableID && b == nil && seen&1 == 0:
			tableID, seen = v, seen|1
		case num == fTableMatch && b != nil:
			keys = append(keys, b)
		case num == fTableAction && b != nil && seen&2 == 0:
			act, seen = b, seen|2
		case num == fTablePriority && b == nil && seen&4 == 0:
			priority, seen = v, seen|4
		default:
			return e, false
		}
	}
	if tableID > 1<<32-1 || priority > 1<<31-1 || act == nil {
		return e, false
	}
	t := prog.TableByID(uint32(tableID))
	if t == nil || len(keys) != len(t.Keys) || len(t.Keys) > 64 {
		return e, false
	}
	e.Table, e.Priority = t, int32(priority)
	e.Match = p.matches(len(t.Keys))
	var seenKey uint64
	for _, km := range keys {
		var fid uint64
		var kind []byte
		var kindNum protowire.Number
		fs := 0
		for len(km) > 0 {
			num, v, b, rest, ok := field(km)
			if !ok {
				return e, false
			}
			km = rest
			switch {
			case num == fMatchField && b == nil && fs&1 == 0:
				fid, fs = v, fs|1
			case (num == fMatchExact || num == fMatchTernary || num == fMatchLPM) && b != nil && fs&2 == 0:
				kind, kindNum, fs = b, num, fs|2
			default:
				return e, false
			}
		}
		idx := -1
		for i, k := range t.Keys {
			if uint64(k.ID) == fid {
				idx = i
			}
		}
		if idx < 0 || seenKey>>idx&1 != 0 || fs != 3 {
			return e, false
		}
		seenKey |= 1 << idx
		k := t.Keys[idx]
		// The kind's fields: value (1) and mask or prefix_len (2).
		var val, mask []byte
		var plen uint64
		ks := 0
		for len(kind) > 0 {
			num, v, b, rest, ok := field(kind)
			if !ok {
				return e, false
			}
			kind = rest
			switch {
			case num == fValue && b != nil && ks&1 == 0:
				val, ks = b, ks|1
			case num == fMask && b != nil && kindNum == fMatchTernary && ks&2 == 0:
				mask, ks = b, ks|2
			case num == fMask && b == nil && kindNum == fMatchLPM && ks&2 == 0:
				plen, ks = v, ks|2
			default:
				return e, false
			}
		}
		m := &e.Match[idx]
		switch {
		case k.Match == schema.Exact && kindNum == fMatchExact && ks == 1:
			if m.Value, ok = value(val, k.Bits); !ok {
				return e, false
			}
		case k.Match == schema.Ternary && kindNum == fMatchTernary && ks == 3:
			if m.Value, ok = value(val, k.Bits); !ok {
				return e, false
			}
			if m.Mask, ok = value(mask, k.Bits); !ok {
				return e, false
			}
		case k.Match == schema.LPM && kindNum == fMatchLPM && ks&1 == 1 && plen <= 1<<31-1:
			if m.Value, ok = value(val, k.Bits); !ok {
				return e, false
			}
			m.Mask = plen
		default:
			return e, false
		}
	}
	a, ok := one(act, fTableActionDirec)
	if !ok {
		return e, false
	}
	var aid uint64
	var params [][]byte
	var paramBuf [8][]byte
	params = paramBuf[:0]
	as := 0
	for len(a) > 0 {
		num, v, b, rest, ok := field(a)
		if !ok {
			return e, false
		}
		a = rest
		switch {
		case num == fActionID && b == nil && as == 0:
			aid, as = v, 1
		case num == fActionParams && b != nil:
			params = append(params, b)
		default:
			return e, false
		}
	}
	if aid > 1<<32-1 {
		return e, false
	}
	action := prog.ActionByID(uint32(aid))
	if action == nil || len(params) != len(action.Params) || len(params) > 64 {
		return e, false
	}
	e.Action = action
	e.Params = p.paramSlice(len(params))
	var seenParam uint64
	for _, pb := range params {
		var pid uint64
		var pv []byte
		ps := 0
		for len(pb) > 0 {
			num, v, b, rest, ok := field(pb)
			if !ok {
				return e, false
			}
			pb = rest
			switch {
			case num == fParamID && b == nil && ps&1 == 0:
				pid, ps = v, ps|1
			case num == fParamValue && b != nil && ps&2 == 0:
				pv, ps = b, ps|2
			default:
				return e, false
			}
		}
		idx := -1
		for i, pp := range action.Params {
			if uint64(pp.ID) == pid {
				idx = i
			}
		}
		if idx < 0 || seenParam>>idx&1 != 0 || ps != 3 {
			return e, false
		}
		seenParam |= 1 << idx
		if e.Params[idx], ok = value(pv, action.Params[idx].Bits); !ok {
			return e, false
		}
	}
	if e.Validate() != nil {
		return e, false
	}
	return e, true
}
