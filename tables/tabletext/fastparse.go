package tabletext

import (
	"errors"
	"fmt"

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
	name     []byte
	value    []byte
	isString bool
	children []textNode
}

// textParser reads one line at a time; Parse keeps one for a whole file so
// that its buffers serve every line: a line's string values and nodes live
// in arenas sized to the line (never moved while the line is read), and
// its entries' match and param slices come from shared chunks.
type textParser struct {
	s   []byte
	pos int

	strs   []byte       // decoded string values of the line
	nodes  []textNode   // the line's nodes, each level's contiguous
	levels [][]textNode // per depth: the level being read
	match  []entry.Match
	params []uint64
}

// reset prepares p for line.
func (p *textParser) reset(line []byte) {
	p.s, p.pos = line, 0
	if cap(p.strs) < len(line) {
		p.strs = make([]byte, 0, 2*len(line))
	}
	if cap(p.nodes) < len(line) {
		p.nodes = make([]textNode, 0, 2*len(line))
	}
	p.strs, p.nodes = p.strs[:0], p.nodes[:0]
}

// matches and paramSlice hand out slices of shared chunks.
func (p *textParser) matches(n int) []entry.Match {
	if len(p.match)+n > cap(p.match) {
		p.match = make([]entry.Match, 0, max(1024, n))
	}
	m0 := len(p.match)
	p.match = p.match[:m0+n]
	return p.match[m0 : m0+n : m0+n]
}

func (p *textParser) paramSlice(n int) []uint64 {
	if len(p.params)+n > cap(p.params) {
		p.params = make([]uint64, 0, max(2048, n))
	}
	p0 := len(p.params)
	p.params = p.params[:p0+n]
	return p.params[p0 : p0+n : p0+n]
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

// str reads a double-quoted string with \xHH, octal, \\ and \" escapes,
// into the line's string arena (a string is never longer than its text).
func (p *textParser) str() ([]byte, error) {
	p.pos++ // opening quote
	start := len(p.strs)
	out := p.strs
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.strs = out
			return out[start:len(out):len(out)], nil
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return nil, errNotFast
			}
			e := p.s[p.pos+1]
			switch {
			case e == 'x' && p.pos+3 < len(p.s):
				hi, ok1 := unhex(p.s[p.pos+2])
				lo, ok2 := unhex(p.s[p.pos+3])
				if !ok1 || !ok2 {
					return nil, errNotFast
				}
				out = append(out, hi<<4|lo)
				p.pos += 4
			case e >= '0' && e <= '7' && p.pos+3 < len(p.s):
				a, b, c := p.s[p.pos+1], p.s[p.pos+2], p.s[p.pos+3]
				if b < '0' || b > '7' || c < '0' || c > '7' || a > '3' {
					return nil, errNotFast
				}
				out = append(out, (a-'0')<<6|(b-'0')<<3|(c-'0'))
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

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// fields reads fields until a closing brace (depth > 0) or the end.
func (p *textParser) fields(depth int) ([]textNode, error) {
	for len(p.levels) <= depth {
		p.levels = append(p.levels, nil)
	}
	out := p.levels[depth][:0]
	// The level is read into its scratch and then copied, contiguous, into
	// the node arena (levels below it are read in between).
	done := func() []textNode {
		p.levels[depth] = out
		if len(out) == 0 {
			return nil
		}
		n0 := len(p.nodes)
		p.nodes = append(p.nodes, out...)
		return p.nodes[n0:len(p.nodes):len(p.nodes)]
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			if depth > 0 {
				return nil, errNotFast
			}
			return done(), nil
		}
		if p.s[p.pos] == '}' {
			if depth == 0 {
				return nil, errNotFast
			}
			p.pos++
			return done(), nil
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
		n := textNode{name: name}
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
	var v uint64
	for _, c := range n.value {
		if c < '0' || c > '9' || v > (1<<bits-1)/10 {
			return 0, errNotFast
		}
		v = v*10 + uint64(c-'0')
		if v > 1<<bits-1 {
			return 0, errNotFast
		}
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
	if len(nodes) != 1 || string(nodes[0].name) != name || nodes[0].children == nil && nodes[0].value != nil {
		return nil, errNotFast
	}
	return &nodes[0], nil
}

// parseEntryLine parses one `updates{...}` line into an INSERT Entry of
// prog. errNotFast means: use the protobuf parser for this line. Other
// errors name what is wrong with a line in the subset (a bad value).
func parseEntryLine(prog *schema.Program, line []byte) (entry.Entry, error) {
	return new(textParser).entry(prog, line)
}

// entry is parseEntryLine with p's buffers.
func (p *textParser) entry(prog *schema.Program, line []byte) (entry.Entry, error) {
	p.reset(line)
	if e, ok := p.canonical(prog); ok {
		return e, nil
	}
	p.reset(line)
	top, err := p.fields(0)
	if err != nil {
		return entry.Entry{}, err
	}
	upd, err := only(top, "updates")
	if err != nil || len(upd.children) != 2 || string(upd.children[0].name) != "type" || string(upd.children[0].value) != "INSERT" {
		return entry.Entry{}, errNotFast
	}
	ent := &upd.children[1]
	if string(ent.name) != "entity" {
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
		switch string(c.name) {
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
	if len(t.Keys) > 64 {
		return entry.Entry{}, errNotFast
	}
	e := entry.Entry{Table: t, Priority: int32(priority), Match: p.matches(len(t.Keys))}
	var seenKey uint64
	for _, m := range matches {
		if len(m.children) != 2 || string(m.children[0].name) != "field_id" {
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
		if idx < 0 || seenKey>>idx&1 != 0 {
			return entry.Entry{}, errNotFast
		}
		seenKey |= 1 << idx
		k := t.Keys[idx]
		kind := &m.children[1]
		what := func() string { return fmt.Sprintf("table %s: field %s", t.FullName(), k.Name) }
		switch {
		case k.Match == schema.Exact && string(kind.name) == "exact" && len(kind.children) == 1 && string(kind.children[0].name) == "value":
			b, err := kind.children[0].bytes()
			if err != nil {
				return entry.Entry{}, err
			}
			if e.Match[idx].Value, err = decodeValue(b, k.Bits, what); err != nil {
				return entry.Entry{}, err
			}
		case k.Match == schema.Ternary && string(kind.name) == "ternary" && len(kind.children) == 2 &&
			string(kind.children[0].name) == "value" && string(kind.children[1].name) == "mask":
			v, err1 := kind.children[0].bytes()
			mk, err2 := kind.children[1].bytes()
			if err1 != nil || err2 != nil {
				return entry.Entry{}, errNotFast
			}
			if e.Match[idx].Value, err = decodeValue(v, k.Bits, what); err != nil {
				return entry.Entry{}, err
			}
			if e.Match[idx].Mask, err = decodeValue(mk, k.Bits, func() string { return what() + " mask" }); err != nil {
				return entry.Entry{}, err
			}
		default:
			return entry.Entry{}, errNotFast
		}
	}
	act, err := only(action.children, "action")
	if err != nil || len(act.children) == 0 || string(act.children[0].name) != "action_id" {
		return entry.Entry{}, errNotFast
	}
	aid, err := act.children[0].uint(32)
	if err != nil {
		return entry.Entry{}, err
	}
	a := prog.ActionByID(uint32(aid))
	if a == nil || len(act.children)-1 != len(a.Params) || len(a.Params) > 64 {
		return entry.Entry{}, errNotFast
	}
	e.Action = a
	e.Params = p.paramSlice(len(a.Params))
	var seenParam uint64
	for _, pn := range act.children[1:] {
		if string(pn.name) != "params" || len(pn.children) != 2 || string(pn.children[0].name) != "param_id" || string(pn.children[1].name) != "value" {
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
		if idx < 0 || seenParam>>idx&1 != 0 {
			return entry.Entry{}, errNotFast
		}
		seenParam |= 1 << idx
		b, err := pn.children[1].bytes()
		if err != nil {
			return entry.Entry{}, err
		}
		if e.Params[idx], err = decodeValue(b, a.Params[idx].Bits, func() string {
			return fmt.Sprintf("action %s: param %s", a.FullName(), a.Params[idx].Name)
		}); err != nil {
			return entry.Entry{}, err
		}
	}
	if err := e.Validate(); err != nil {
		return entry.Entry{}, err
	}
	return e, nil
}

// decodeValue is entry.DecodeValue, naming the field (what) only when the
// value is bad.
func decodeValue(b []byte, bits int, what func() string) (uint64, error) {
	v, err := entry.DecodeValue(b, bits, "")
	if err != nil {
		return entry.DecodeValue(b, bits, what())
	}
	return v, nil
}

// canonical reads a line exactly as AppendEntry writes an INSERT of a table
// whose keys all match exactly, without building nodes. Anything else, a
// bad value included, is left to the general reader (ok false), which
// explains errors: canonical only ever answers what that reader would.
func (p *textParser) canonical(prog *schema.Program) (e entry.Entry, ok bool) {
	lit := func(s string) bool {
		if len(p.s)-p.pos < len(s) || string(p.s[p.pos:p.pos+len(s)]) != s {
			return false
		}
		p.pos += len(s)
		return true
	}
	num := func() (uint64, bool) {
		start := p.pos
		var v uint64
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' && p.pos-start < 10 {
			v = v*10 + uint64(p.s[p.pos]-'0')
			p.pos++
		}
		return v, p.pos > start && v <= 1<<32-1
	}
	value := func(bits int) (uint64, bool) {
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return 0, false
		}
		b, err := p.str()
		if err != nil {
			return 0, false
		}
		v, err := entry.DecodeValue(b, bits, "")
		return v, err == nil
	}
	if !lit("updates{type:INSERT entity{table_entry{table_id:") {
		return e, false
	}
	tid, ok := num()
	t := prog.TableByID(uint32(tid))
	if !ok || t == nil {
		return e, false
	}
	e.Table = t
	e.Match = p.matches(len(t.Keys))
	for i, k := range t.Keys {
		if k.Match != schema.Exact || !lit(" match{field_id:") {
			return e, false
		}
		if id, ok := num(); !ok || id != uint64(k.ID) || !lit(" exact{value:") {
			return e, false
		}
		if e.Match[i].Value, ok = value(k.Bits); !ok || !lit("}}") {
			return e, false
		}
	}
	if !lit(" action{action{action_id:") {
		return e, false
	}
	aid, ok := num()
	a := prog.ActionByID(uint32(aid))
	if !ok || a == nil {
		return e, false
	}
	e.Action = a
	e.Params = p.paramSlice(len(a.Params))
	for i, pa := range a.Params {
		if !lit(" params{param_id:") {
			return e, false
		}
		if id, ok := num(); !ok || id != uint64(pa.ID) || !lit(" value:") {
			return e, false
		}
		if e.Params[i], ok = value(pa.Bits); !ok || !lit("}") {
			return e, false
		}
	}
	if !lit("}}}}}") || p.pos != len(p.s) || e.Validate() != nil {
		return e, false
	}
	return e, true
}
