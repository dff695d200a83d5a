package tabletext

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// The table files of the largest fabric hold 3 million updates; the
// protobuf text parser takes about 15 us for each. parseEntryLine reads the
// one-update-per-line form AppendEntry writes (and any other spacing of the
// same fields) straight into an Entry; anything it does not know sends the
// caller back to the protobuf parser, so it can only be faster, never
// different (a test and a fuzz target hold it to prototext's answers).

var errNotFast = errors.New("not in the fast parser's subset")

// textNode is one field of a text-format message: a scalar (value) or a
// message (children).
type textNode struct {
	name     string
	value    []byte
	isString bool
	children []textNode
}

type textParser struct {
	s   []byte
	pos int
}

func (p *textParser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *textParser) ident() ([]byte, error) {
	start := p.pos
	for p.pos < len(p.s) && isIdent(p.s[p.pos]) {
		p.pos++
	}
	if start == p.pos {
		return nil, errNotFast
	}
	return p.s[start:p.pos], nil
}

// str reads a double-quoted string with \xHH, octal, \\ and \" escapes.
func (p *textParser) str() ([]byte, error) {
	p.pos++ // opening quote
	var out []byte
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return out, nil
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return nil, errNotFast
			}
			e := p.s[p.pos+1]
			switch {
			case e == 'x' && p.pos+3 < len(p.s):
				v, err := strconv.ParseUint(string(p.s[p.pos+2:p.pos+4]), 16, 8)
				if err != nil {
					return nil, errNotFast
				}
				out = append(out, byte(v))
				p.pos += 4
			case e >= '0' && e <= '7' && p.pos+3 < len(p.s):
				v, err := strconv.ParseUint(string(p.s[p.pos+1:p.pos+4]), 8, 8)
				if err != nil {
					return nil, errNotFast
				}
				out = append(out, byte(v))
				p.pos += 4
			case e == '\\' || e == '"' || e == '\'':
				out = append(out, e)
				p.pos += 2
			default:
				return nil, errNotFast
			}
		case c < 0x20 || c >= 0x7f:
			return nil, errNotFast
		default:
			out = append(out, c)
			p.pos++
		}
	}
	return nil, errNotFast
}

// fields reads fields until a closing brace (depth > 0) or the end.
func (p *textParser) fields(depth int) ([]textNode, error) {
	var out []textNode
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			if depth > 0 {
				return nil, errNotFast
			}
			return out, nil
		}
		if p.s[p.pos] == '}' {
			if depth == 0 {
				return nil, errNotFast
			}
			p.pos++
			return out, nil
		}
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		colon := false
		if p.pos < len(p.s) && p.s[p.pos] == ':' {
			colon = true
			p.pos++
			p.skipSpace()
		}
		if p.pos >= len(p.s) {
			return nil, errNotFast
		}
		n := textNode{name: string(name)}
		switch c := p.s[p.pos]; {
		case c == '{':
			p.pos++
			if depth > 8 {
				return nil, errNotFast
			}
			if n.children, err = p.fields(depth + 1); err != nil {
				return nil, err
			}
		case !colon:
			return nil, errNotFast
		case c == '"':
			if n.value, err = p.str(); err != nil {
				return nil, err
			}
			n.isString = true
		default:
			if n.value, err = p.ident(); err != nil {
				return nil, err
			}
		}
		out = append(out, n)
	}
}

func (n *textNode) uint(bits int) (uint64, error) {
	if n.isString || n.children != nil || len(n.value) == 0 || n.value[0] < '0' || n.value[0] > '9' {
		return 0, errNotFast
	}
	v, err := strconv.ParseUint(string(n.value), 10, bits)
	if err != nil {
		return 0, errNotFast
	}
	return v, nil
}

func (n *textNode) bytes() ([]byte, error) {
	if !n.isString {
		return nil, errNotFast
	}
	return n.value, nil
}

// only returns the single child message named name.
func only(nodes []textNode, name string) (*textNode, error) {
	if len(nodes) != 1 || nodes[0].name != name || nodes[0].children == nil && nodes[0].value != nil {
		return nil, errNotFast
	}
	return &nodes[0], nil
}

// parseEntryLine parses one `updates{...}` line into an INSERT Entry of
// prog. errNotFast means: use the protobuf parser for this line. Other
// errors name what is wrong with a line in the subset (a bad value).
func parseEntryLine(prog *schema.Program, line []byte) (entry.Entry, error) {
	p := &textParser{s: line}
	top, err := p.fields(0)
	if err != nil {
		return entry.Entry{}, err
	}
	upd, err := only(top, "updates")
	if err != nil || len(upd.children) != 2 || upd.children[0].name != "type" || string(upd.children[0].value) != "INSERT" {
		return entry.Entry{}, errNotFast
	}
	ent := &upd.children[1]
	if ent.name != "entity" {
		return entry.Entry{}, errNotFast
	}
	te, err := only(ent.children, "table_entry")
	if err != nil {
		return entry.Entry{}, err
	}
	var tableID uint64
	var priority uint64
	var matches []*textNode
	var action *textNode
	for i := range te.children {
		c := &te.children[i]
		switch c.name {
		case "table_id":
			if tableID, err = c.uint(32); err != nil {
				return entry.Entry{}, err
			}
		case "priority":
			if priority, err = c.uint(31); err != nil {
				return entry.Entry{}, err
			}
		case "match":
			matches = append(matches, c)
		case "action":
			if action != nil {
				return entry.Entry{}, errNotFast
			}
			action = c
		default:
			return entry.Entry{}, errNotFast
		}
	}
	t := prog.TableByID(uint32(tableID))
	if t == nil || action == nil || len(matches) != len(t.Keys) {
		return entry.Entry{}, errNotFast // let the full decoder explain
	}
	e := entry.Entry{Table: t, Priority: int32(priority), Match: make([]entry.Match, len(t.Keys))}
	seenKey := make([]bool, len(t.Keys))
	for _, m := range matches {
		if len(m.children) != 2 || m.children[0].name != "field_id" {
			return entry.Entry{}, errNotFast
		}
		fid, err := m.children[0].uint(32)
		if err != nil {
			return entry.Entry{}, err
		}
		idx := -1
		for i, k := range t.Keys {
			if uint64(k.ID) == fid {
				idx = i
			}
		}
		if idx < 0 || seenKey[idx] {
			return entry.Entry{}, errNotFast
		}
		seenKey[idx] = true
		k := t.Keys[idx]
		kind := &m.children[1]
		what := fmt.Sprintf("table %s: field %s", t.FullName(), k.Name)
		switch {
		case k.Match == schema.Exact && kind.name == "exact" && len(kind.children) == 1 && kind.children[0].name == "value":
			b, err := kind.children[0].bytes()
			if err != nil {
				return entry.Entry{}, err
			}
			if e.Match[idx].Value, err = entry.DecodeValue(b, k.Bits, what); err != nil {
				return entry.Entry{}, err
			}
		case k.Match == schema.Ternary && kind.name == "ternary" && len(kind.children) == 2 &&
			kind.children[0].name == "value" && kind.children[1].name == "mask":
			v, err1 := kind.children[0].bytes()
			mk, err2 := kind.children[1].bytes()
			if err1 != nil || err2 != nil {
				return entry.Entry{}, errNotFast
			}
			if e.Match[idx].Value, err = entry.DecodeValue(v, k.Bits, what); err != nil {
				return entry.Entry{}, err
			}
			if e.Match[idx].Mask, err = entry.DecodeValue(mk, k.Bits, what+" mask"); err != nil {
				return entry.Entry{}, err
			}
		default:
			return entry.Entry{}, errNotFast
		}
	}
	act, err := only(action.children, "action")
	if err != nil || len(act.children) == 0 || act.children[0].name != "action_id" {
		return entry.Entry{}, errNotFast
	}
	aid, err := act.children[0].uint(32)
	if err != nil {
		return entry.Entry{}, err
	}
	a := prog.ActionByID(uint32(aid))
	if a == nil || len(act.children)-1 != len(a.Params) {
		return entry.Entry{}, errNotFast
	}
	e.Action = a
	e.Params = make([]uint64, len(a.Params))
	seenParam := make([]bool, len(a.Params))
	for _, pn := range act.children[1:] {
		if pn.name != "params" || len(pn.children) != 2 || pn.children[0].name != "param_id" || pn.children[1].name != "value" {
			return entry.Entry{}, errNotFast
		}
		pid, err := pn.children[0].uint(32)
		if err != nil {
			return entry.Entry{}, err
		}
		idx := -1
		for i, pp := range a.Params {
			if uint64(pp.ID) == pid {
				idx = i
			}
		}
		if idx < 0 || seenParam[idx] {
			return entry.Entry{}, errNotFast
		}
		seenParam[idx] = true
		b, err := pn.children[1].bytes()
		if err != nil {
			return entry.Entry{}, err
		}
		if e.Params[idx], err = entry.DecodeValue(b, a.Params[idx].Bits, fmt.Sprintf("action %s: param %s", a.FullName(), a.Params[idx].Name)); err != nil {
			return entry.Entry{}, err
		}
	}
	if err := e.Validate(); err != nil {
		return entry.Entry{}, err
	}
	return e, nil
}
