package entry

import (
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// DecodeValue decodes a P4Runtime bytestring of a field of width bits, refusing
// non-canonical forms and values wider than the field.
func DecodeValue(b []byte, bits int, what string) (uint64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%s: empty bytestring", what)
	}
	if len(b) > 1 && b[0] == 0 {
		return 0, fmt.Errorf("%s: bytestring %x is not canonical (leading zero byte)", what, b)
	}
	if len(b) > 8 {
		return 0, fmt.Errorf("%s: %d bytes is wider than any mrcgen field", what, len(b))
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	if bits < 64 && v>>uint(bits) != 0 {
		return 0, fmt.Errorf("%s: value %#x does not fit %d bits", what, v, bits)
	}
	return v, nil
}

// FromProto decodes a P4Runtime table entry of prog into an Entry, checking
// every ID, width and bytestring against the schema.
func FromProto(prog *schema.Program, te *p4v1.TableEntry) (Entry, error) {
	t := prog.TableByID(te.GetTableId())
	if t == nil {
		return Entry{}, fmt.Errorf("program %s has no table with id %#x", prog.Name, te.GetTableId())
	}
	e := Entry{Table: t, Priority: te.GetPriority(), Match: make([]Match, len(t.Keys))}
	seen := make([]bool, len(t.Keys))
	for _, fm := range te.GetMatch() {
		idx := -1
		for i, k := range t.Keys {
			if k.ID == fm.GetFieldId() {
				idx = i
			}
		}
		if idx < 0 {
			return Entry{}, fmt.Errorf("table %s has no match field %d", t.FullName(), fm.GetFieldId())
		}
		if seen[idx] {
			return Entry{}, fmt.Errorf("table %s: match field %s given twice", t.FullName(), t.Keys[idx].Name)
		}
		seen[idx] = true
		k := t.Keys[idx]
		what := fmt.Sprintf("table %s: field %s", t.FullName(), k.Name)
		var err error
		switch k.Match {
		case schema.Exact:
			if fm.GetExact() == nil {
				return Entry{}, fmt.Errorf("%s: want an exact match", what)
			}
			e.Match[idx].Value, err = DecodeValue(fm.GetExact().GetValue(), k.Bits, what)
		case schema.Ternary:
			if fm.GetTernary() == nil {
				return Entry{}, fmt.Errorf("%s: want a ternary match", what)
			}
			if e.Match[idx].Value, err = DecodeValue(fm.GetTernary().GetValue(), k.Bits, what); err == nil {
				e.Match[idx].Mask, err = DecodeValue(fm.GetTernary().GetMask(), k.Bits, what+" mask")
			}
		case schema.LPM:
			if fm.GetLpm() == nil {
				return Entry{}, fmt.Errorf("%s: want an LPM match", what)
			}
			e.Match[idx].Value, err = DecodeValue(fm.GetLpm().GetValue(), k.Bits, what)
			e.Match[idx].Mask = uint64(fm.GetLpm().GetPrefixLen())
		}
		if err != nil {
			return Entry{}, err
		}
	}
	for i, k := range t.Keys {
		if !seen[i] && k.Match == schema.Exact {
			return Entry{}, fmt.Errorf("table %s: exact field %s missing", t.FullName(), k.Name)
		}
	}
	act := te.GetAction().GetAction()
	if act == nil {
		return Entry{}, fmt.Errorf("table %s: entry has no direct action", t.FullName())
	}
	a := prog.ActionByID(act.GetActionId())
	if a == nil {
		return Entry{}, fmt.Errorf("table %s: no action with id %#x", t.FullName(), act.GetActionId())
	}
	e.Action = a
	e.Params = make([]uint64, len(a.Params))
	if len(act.GetParams()) != len(a.Params) {
		return Entry{}, fmt.Errorf("action %s: %d params, want %d", a.FullName(), len(act.GetParams()), len(a.Params))
	}
	seenParam := make([]bool, len(a.Params))
	for _, pv := range act.GetParams() {
		idx := -1
		for i, p := range a.Params {
			if p.ID == pv.GetParamId() {
				idx = i
			}
		}
		if idx < 0 {
			return Entry{}, fmt.Errorf("action %s has no param %d", a.FullName(), pv.GetParamId())
		}
		if seenParam[idx] {
			return Entry{}, fmt.Errorf("action %s: param %s given twice", a.FullName(), a.Params[idx].Name)
		}
		seenParam[idx] = true
		v, err := DecodeValue(pv.GetValue(), a.Params[idx].Bits, fmt.Sprintf("action %s: param %s", a.FullName(), a.Params[idx].Name))
		if err != nil {
			return Entry{}, err
		}
		e.Params[idx] = v
	}
	if err := e.Validate(); err != nil {
		return Entry{}, err
	}
	return e, nil
}
