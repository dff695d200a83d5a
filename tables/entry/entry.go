package entry

import (
	"fmt"
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// Match is the value of one key field; Mask is the ternary mask, or the
// prefix length of an LPM field.
type Match struct {
	Value uint64
	Mask  uint64
}

// Entry is one table entry. Match holds one value per key field of Table, in
// the table's key order; Params one value per parameter of Action.
type Entry struct {
	Table    *schema.Table
	Match    []Match
	Action   *schema.Action
	Params   []uint64
	Priority int32
}

// Canonical appends the P4Runtime canonical bytestring of v (big-endian,
// shortest form, zero as one zero byte).
func Canonical(dst []byte, v uint64) []byte {
	n := 1
	for x := v >> 8; x != 0; x >>= 8 {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*uint(i))))
	}
	return dst
}

func canonical(v uint64) []byte { return Canonical(make([]byte, 0, 8), v) }

// Validate checks the entry against its table's schema: field and parameter
// counts, every value within its width, the action allowed in the table.
func (e *Entry) Validate() error {
	t := e.Table
	if len(e.Match) != len(t.Keys) {
		return fmt.Errorf("table %s: %d match values for %d key fields", t.FullName(), len(e.Match), len(t.Keys))
	}
	for i, k := range t.Keys {
		if e.Match[i].Value>>uint(k.Bits) != 0 {
			return fmt.Errorf("table %s: key %s: value %#x does not fit %d bits", t.FullName(), k.Name, e.Match[i].Value, k.Bits)
		}
		if k.Match == schema.Ternary && e.Match[i].Mask>>uint(k.Bits) != 0 {
			return fmt.Errorf("table %s: key %s: mask %#x does not fit %d bits", t.FullName(), k.Name, e.Match[i].Mask, k.Bits)
		}
	}
	allowed := false
	for _, r := range t.Actions {
		if r.Action == e.Action && r.Scope != schema.DefaultOnly {
			allowed = true
		}
	}
	if !allowed {
		return fmt.Errorf("table %s: action %s is not allowed in entries", t.FullName(), e.Action.FullName())
	}
	if len(e.Params) != len(e.Action.Params) {
		return fmt.Errorf("table %s: action %s: %d values for %d parameters", t.FullName(), e.Action.FullName(), len(e.Params), len(e.Action.Params))
	}
	for i, p := range e.Action.Params {
		if e.Params[i]>>uint(p.Bits) != 0 {
			return fmt.Errorf("table %s: action %s: param %s: value %#x does not fit %d bits", t.FullName(), e.Action.FullName(), p.Name, e.Params[i], p.Bits)
		}
	}
	if t.NeedsPriority() != (e.Priority > 0) {
		return fmt.Errorf("table %s: priority %d: ternary tables need a priority > 0, others none", t.FullName(), e.Priority)
	}
	return nil
}

// Proto returns the entry as a P4Runtime entity.
func (e *Entry) Proto() *p4v1.Entity {
	te := &p4v1.TableEntry{TableId: e.Table.ID, Priority: e.Priority}
	for i, k := range e.Table.Keys {
		fm := &p4v1.FieldMatch{FieldId: k.ID}
		switch k.Match {
		case schema.Exact:
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: canonical(e.Match[i].Value)}}
		case schema.Ternary:
			fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{
				Value: canonical(e.Match[i].Value), Mask: canonical(e.Match[i].Mask)}}
		case schema.LPM:
			fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{
				Value: canonical(e.Match[i].Value), PrefixLen: int32(e.Match[i].Mask)}}
		}
		te.Match = append(te.Match, fm)
	}
	act := &p4v1.Action{ActionId: e.Action.ID}
	for i, p := range e.Action.Params {
		act.Params = append(act.Params, &p4v1.Action_Param{ParamId: p.ID, Value: canonical(e.Params[i])})
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: act}}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// Equal reports whether e and o are the same entry: same table, action,
// priority, match values and parameters.
func (e *Entry) Equal(o *Entry) bool {
	return e.Table == o.Table && e.Action == o.Action && e.Priority == o.Priority &&
		slices.Equal(e.Match, o.Match) && slices.Equal(e.Params, o.Params)
}
