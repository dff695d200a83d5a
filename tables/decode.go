package tables

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// value decodes a P4Runtime bytestring of a field of width bits, refusing
// non-canonical forms and values wider than the field.
func value(b []byte, bits int, what string) (uint64, error) {
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
			e.Match[idx].Value, err = value(fm.GetExact().GetValue(), k.Bits, what)
		case schema.Ternary:
			if fm.GetTernary() == nil {
				return Entry{}, fmt.Errorf("%s: want a ternary match", what)
			}
			if e.Match[idx].Value, err = value(fm.GetTernary().GetValue(), k.Bits, what); err == nil {
				e.Match[idx].Mask, err = value(fm.GetTernary().GetMask(), k.Bits, what+" mask")
			}
		case schema.LPM:
			if fm.GetLpm() == nil {
				return Entry{}, fmt.Errorf("%s: want an LPM match", what)
			}
			e.Match[idx].Value, err = value(fm.GetLpm().GetValue(), k.Bits, what)
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
		v, err := value(pv.GetValue(), a.Params[idx].Bits, fmt.Sprintf("action %s: param %s", a.FullName(), a.Params[idx].Name))
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

// ReadFile reads a table file written by `mrcgen build` (a WriteRequest in
// text format) and decodes its entries against prog.
func ReadFile(prog *schema.Program, path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// One update per line, as mrcgen writes them: the fast parser takes
	// each line it knows, prototext the others.
	var out []Entry
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		e, err := parseEntryLine(prog, line)
		if err == nil {
			out = append(out, e)
			continue
		}
		if !errors.Is(err, errNotFast) {
			return nil, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		var one p4v1.WriteRequest
		if prototext.Unmarshal(line, &one) != nil || len(one.GetUpdates()) != 1 {
			return readFileSlow(prog, path) // not one update per line
		}
		te := one.GetUpdates()[0].GetEntity().GetTableEntry()
		if te == nil {
			return nil, fmt.Errorf("%s: line %d: update is not a table entry", path, n+1)
		}
		if e, err = FromProto(prog, te); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// readFileSlow decodes a table file in any text layout with prototext.
func readFileSlow(prog *schema.Program, path string) ([]Entry, error) {
	req, err := readWriteRequest(path)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(req.GetUpdates()))
	for i, u := range req.GetUpdates() {
		te := u.GetEntity().GetTableEntry()
		if te == nil {
			return nil, fmt.Errorf("%s: update %d is not a table entry", path, i+1)
		}
		e, err := FromProto(prog, te)
		if err != nil {
			return nil, fmt.Errorf("%s: update %d: %w", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// readWriteRequest reads and parses a table file.
func readWriteRequest(path string) (*p4v1.WriteRequest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	req, err := ParseWriteRequest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return req, nil
}

// ParseWriteRequest parses a WriteRequest in text format. Large files are
// parsed a line at a time (mrcgen writes one update per line), which keeps
// the text parser's cost linear.
func ParseWriteRequest(data []byte) (*p4v1.WriteRequest, error) {
	req := &p4v1.WriteRequest{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var one p4v1.WriteRequest
		if err := prototext.Unmarshal(line, &one); err != nil {
			// Not one update per line: parse the whole text instead.
			req = &p4v1.WriteRequest{}
			if err2 := prototext.Unmarshal(data, req); err2 != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			return req, nil
		}
		req.Updates = append(req.Updates, one.Updates...)
	}
	return req, nil
}
