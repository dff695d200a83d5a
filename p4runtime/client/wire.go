package client

import (
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The updates a push writes are nearly all table entries of one shape: a
// table id, exact, ternary or LPM matches, a direct action with parameters
// and maybe a priority. For those Write encodes the update itself, the same
// bytes proto.Marshal gives (a test holds it to that), without the
// protobuf runtime's table-driven sizing and encoding, which was most of a
// push's CPU. Anything else (another entity, another match kind or action
// type, any other field set, unknown fields, nil members) goes to the
// protobuf runtime.

// noUnknown reports whether m carries no unknown fields.
func noUnknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) == 0 }

// Every field number here is below 16: its tag is one byte. Values and
// lengths below 128 are one byte too, the usual case, tested first.

func sizeVarint(v uint64) int {
	if v < 0x80 {
		return 1
	}
	return protowire.SizeVarint(v)
}

func sizeTagged(_ protowire.Number, n int) int { return 1 + sizeVarint(uint64(n)) + n }

func sizeVarintField(_ protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + sizeVarint(v)
}

func sizeBytesField(num protowire.Number, b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return sizeTagged(num, len(b))
}

func appendVarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendVarint(append(b, byte(num)<<3|byte(protowire.VarintType)), v)
}

func appendLen(b []byte, num protowire.Number, n int) []byte {
	return appendVarint(append(b, byte(num)<<3|byte(protowire.BytesType)), uint64(n))
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return append(appendLen(b, num, len(v)), v...)
}

// fastTableEntry returns the update's table entry when the fast encoder
// handles the update.
func fastTableEntry(u *p4v1.Update) (*p4v1.TableEntry, bool) {
	e := u.GetEntity()
	if e == nil || !noUnknown(u) || !noUnknown(e) {
		return nil, false
	}
	w, ok := e.Entity.(*p4v1.Entity_TableEntry)
	if !ok || w.TableEntry == nil {
		return nil, false
	}
	te := w.TableEntry
	if te.ControllerMetadata != 0 || te.MeterConfig != nil || te.CounterData != nil || te.MeterCounterData != nil ||
		te.IsDefaultAction || te.IdleTimeoutNs != 0 || te.TimeSinceLastHit != nil || len(te.Metadata) != 0 || te.IsConst ||
		!noUnknown(te) {
		return nil, false
	}
	for _, m := range te.Match {
		if m == nil || !noUnknown(m) {
			return nil, false
		}
		switch t := m.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			if t.Exact == nil || !noUnknown(t.Exact) {
				return nil, false
			}
		case *p4v1.FieldMatch_Ternary_:
			if t.Ternary == nil || !noUnknown(t.Ternary) {
				return nil, false
			}
		case *p4v1.FieldMatch_Lpm:
			if t.Lpm == nil || !noUnknown(t.Lpm) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if te.Action != nil {
		a, ok := te.Action.Type.(*p4v1.TableAction_Action)
		if !ok || a.Action == nil || !noUnknown(te.Action) || !noUnknown(a.Action) {
			return nil, false
		}
		for _, p := range a.Action.Params {
			if p == nil || !noUnknown(p) {
				return nil, false
			}
		}
	}
	return te, true
}

// matchKindSize is the size of the FieldMatch's Exact, Ternary or LPM
// message.
func matchKindSize(m *p4v1.FieldMatch) int {
	switch t := m.FieldMatchType.(type) {
	case *p4v1.FieldMatch_Exact_:
		return sizeBytesField(1, t.Exact.Value)
	case *p4v1.FieldMatch_Ternary_:
		return sizeBytesField(1, t.Ternary.Value) + sizeBytesField(2, t.Ternary.Mask)
	case *p4v1.FieldMatch_Lpm:
		return sizeBytesField(1, t.Lpm.Value) + sizeVarintField(2, uint64(int64(t.Lpm.PrefixLen)))
	}
	return 0
}

// matchKindField is the FieldMatch field number of m's kind.
func matchKindField(m *p4v1.FieldMatch) protowire.Number {
	switch m.FieldMatchType.(type) {
	case *p4v1.FieldMatch_Ternary_:
		return 3
	case *p4v1.FieldMatch_Lpm:
		return 4
	}
	return 2
}

func matchSize(m *p4v1.FieldMatch) int {
	return sizeVarintField(1, uint64(m.FieldId)) + sizeTagged(matchKindField(m), matchKindSize(m))
}

func paramSize(p *p4v1.Action_Param) int {
	return sizeVarintField(2, uint64(p.ParamId)) + sizeBytesField(3, p.Value)
}

func actionSize(a *p4v1.Action) int {
	n := sizeVarintField(1, uint64(a.ActionId))
	for _, p := range a.Params {
		n += sizeTagged(4, paramSize(p))
	}
	return n
}

// fastSizes are the sizes of an update's nested messages, computed once.
type fastSizes struct {
	update, entity, table, tableAction, action int
}

// fastUpdateSize sizes u, a fastTableEntry update with entry te.
func fastUpdateSize(u *p4v1.Update, te *p4v1.TableEntry) fastSizes {
	var z fastSizes
	z.table = sizeVarintField(1, uint64(te.TableId))
	for _, m := range te.Match {
		z.table += sizeTagged(2, matchSize(m))
	}
	if te.Action != nil {
		z.action = actionSize(te.Action.Type.(*p4v1.TableAction_Action).Action)
		z.tableAction = sizeTagged(1, z.action)
		z.table += sizeTagged(3, z.tableAction)
	}
	z.table += sizeVarintField(4, uint64(int64(te.Priority)))
	z.entity = sizeTagged(2, z.table)
	z.update = sizeVarintField(1, uint64(u.Type)) + sizeTagged(2, z.entity)
	return z
}

// appendFastUpdate appends u (a fastTableEntry update, te its entry, z its
// sizes) as proto.Marshal encodes it.
func appendFastUpdate(b []byte, u *p4v1.Update, te *p4v1.TableEntry, z fastSizes) []byte {
	b = appendVarintField(b, 1, uint64(u.Type))
	b = appendLen(b, 2, z.entity)
	b = appendLen(b, 2, z.table)
	b = appendVarintField(b, 1, uint64(te.TableId))
	for _, m := range te.Match {
		b = appendLen(b, 2, matchSize(m))
		b = appendVarintField(b, 1, uint64(m.FieldId))
		b = appendLen(b, matchKindField(m), matchKindSize(m))
		switch t := m.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			b = appendBytesField(b, 1, t.Exact.Value)
		case *p4v1.FieldMatch_Ternary_:
			b = appendBytesField(b, 1, t.Ternary.Value)
			b = appendBytesField(b, 2, t.Ternary.Mask)
		case *p4v1.FieldMatch_Lpm:
			b = appendBytesField(b, 1, t.Lpm.Value)
			b = appendVarintField(b, 2, uint64(int64(t.Lpm.PrefixLen)))
		}
	}
	if te.Action != nil {
		a := te.Action.Type.(*p4v1.TableAction_Action).Action
		b = appendLen(b, 3, z.tableAction)
		b = appendLen(b, 1, z.action)
		b = appendVarintField(b, 1, uint64(a.ActionId))
		for _, p := range a.Params {
			b = appendLen(b, 4, paramSize(p))
			b = appendVarintField(b, 2, uint64(p.ParamId))
			b = appendBytesField(b, 3, p.Value)
		}
	}
	return appendVarintField(b, 4, uint64(int64(te.Priority)))
}
