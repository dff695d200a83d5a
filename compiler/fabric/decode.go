package fabric

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Decode turns YAML into a Description without checking its values against
// each other (Resolve does that). Every problem with the file itself is
// reported, each as a *FieldError with its YAML path and line: an empty
// file, a syntax error, a second document, an unknown field, a value of the
// wrong type, a field set twice, an unknown base preset.
func Decode(data []byte) (Description, error) {
	d := decode(data)
	if len(d.errs) > 0 {
		return Description{}, invalid(d.errs)
	}
	return d.desc, nil
}

// invalid wraps problems as the error Decode, Resolve and Parse return.
func invalid(errs []error) error {
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
}

// decoded is what decoding a fabric file found.
type decoded struct {
	// desc is the file's description on top of its base preset; a field
	// with a problem keeps the base's value.
	desc Description
	// lines maps a YAML path ("t0.count") to the line of its key.
	lines map[string]int
	// errs holds one *FieldError per problem.
	errs []error
	// resolvable is set when desc is worth checking with Resolve: the file
	// holds a mapping and names a known base, so that Resolve's findings are
	// about what the user wrote.
	resolvable bool
	// base is the preset the file starts from.
	base string
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into a FieldError with its line.
func syntaxError(err error) *FieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FieldError{Line: line, Reason: "YAML syntax: " + m[2]}
	}
	return &FieldError{Reason: "YAML syntax: " + msg}
}

func decode(data []byte) decoded {
	out := decoded{lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			out.errs = append(out.errs, errEmpty())
		} else {
			out.errs = append(out.errs, syntaxError(err))
		}
		return out
	}
	// A second document in the same file is almost certainly a mistake; a
	// syntax error after the first document is one too.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		out.errs = append(out.errs, &FieldError{Line: line, Reason: "the file holds more than one YAML document"})
	} else if !errors.Is(err, io.EOF) {
		out.errs = append(out.errs, syntaxError(err))
	}

	top := deref(&doc)
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = deref(top.Content[0])
	}
	switch {
	case isNull(top), top.Kind == yaml.MappingNode && len(top.Content) == 0:
		out.errs = append(out.errs, errEmpty())
		return out
	case top.Kind != yaml.MappingNode:
		out.errs = append(out.errs, &FieldError{Line: top.Line,
			Reason: fmt.Sprintf("a fabric file is a mapping of fields (name: value), not %s", kindName(top))})
		return out
	}

	// A first walk, its problems ignored, finds the base preset; the second
	// walk applies the file on top of it and reports every problem,
	// including in base itself.
	var head Description
	(&walker{lines: map[string]int{}}).object("", top, reflect.ValueOf(&head).Elem(), 0)
	baseName := head.Base
	if baseName == "" {
		baseName = DefaultPreset
	}
	desc, baseErr := Preset(baseName)
	w := &walker{lines: out.lines}
	w.object("", top, reflect.ValueOf(&desc).Elem(), 0)
	out.errs = append(out.errs, w.errs...)
	switch {
	case w.failed["base"]:
	case baseErr != nil:
		out.errs = append(out.errs, &FieldError{Field: "base", Value: strconv.Quote(baseName), Line: out.lines["base"], Reason: baseErr.Error()})
	default:
		desc.Base = ""
		out.desc = desc
		out.base = baseName
		out.resolvable = true
	}
	return out
}

func errEmpty() *FieldError {
	return &FieldError{Reason: "fabric file is empty (a file that starts from a preset says so: base: " + DefaultPreset + ")"}
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "a single value"
}

// shown is how a value node appears in a message.
func shown(n *yaml.Node) any {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "[...]"
	case yaml.MappingNode:
		return "{...}"
	}
	return nil
}

// maxMergeDepth bounds how deep YAML merge keys (<<: *anchor) may nest and
// maxMerges how many mappings a file may merge in all, so that a file of
// aliases cannot make the walk take exponential time.
const (
	maxMergeDepth = 8
	maxMerges     = 1000
)

// walker applies a YAML node tree to a Go value through its yaml tags,
// collecting one FieldError per problem instead of stopping at the first.
type walker struct {
	lines  map[string]int
	errs   []error
	failed map[string]bool // paths that got a problem
	merges int             // mappings merged so far
	active []*yaml.Node    // the mappings being walked, outermost first
}

func (w *walker) bad(field string, value any, line int, format string, args ...any) {
	w.errs = append(w.errs, &FieldError{Field: field, Value: value, Line: line, Reason: fmt.Sprintf(format, args...)})
	if w.failed == nil {
		w.failed = map[string]bool{}
	}
	w.failed[field] = true
}

// yamlKeys lists the yaml keys of a struct type in field order.
func yamlKeys(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		keys = append(keys, key)
	}
	return keys
}

// object applies mapping n to struct v. Merged mappings (<<: *anchor) apply
// first, so that the mapping's own keys override them, as YAML says.
func (w *walker) object(path string, n *yaml.Node, v reflect.Value, depth int) {
	w.active = append(w.active, n)
	defer func() { w.active = w.active[:len(w.active)-1] }()
	keys := yamlKeys(v.Type())
	seen := map[string]int{}
	for pass := 0; pass < 2; pass++ {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := deref(n.Content[i]), deref(n.Content[i+1])
			merge := k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
			if merge != (pass == 0) {
				continue
			}
			if merge {
				w.merge(path, val, v, depth)
				continue
			}
			if k.Kind != yaml.ScalarNode {
				w.bad(join(path, "?"), shown(k), k.Line, "a field name must be a plain word, not %s", kindName(k))
				continue
			}
			field := join(path, k.Value)
			if prev, dup := seen[k.Value]; dup {
				w.bad(field, nil, k.Line, "set twice (first on line %d)", prev)
				continue
			}
			seen[k.Value] = k.Line
			idx := indexOf(keys, k.Value)
			if idx < 0 {
				w.bad(field, nil, k.Line, "unknown field (%s)", suggest(k.Value, keys))
				continue
			}
			w.lines[field] = k.Line
			w.value(field, val, v.Field(idx), depth)
		}
	}
}

func (w *walker) merge(path string, n *yaml.Node, v reflect.Value, depth int) {
	field := join(path, "<<")
	var maps []*yaml.Node
	switch n.Kind {
	case yaml.MappingNode:
		maps = []*yaml.Node{n}
	case yaml.SequenceNode:
		for _, m := range n.Content {
			if m = deref(m); m.Kind == yaml.MappingNode {
				maps = append(maps, m)
			} else {
				w.bad(field, shown(m), m.Line, "a merge key takes mappings, not %s", kindName(m))
			}
		}
	default:
		w.bad(field, shown(n), n.Line, "a merge key takes mappings, not %s", kindName(n))
	}
	for _, m := range maps {
		switch {
		case slices.Contains(w.active, m):
			w.bad(field, nil, n.Line, "a mapping merges itself")
			continue
		case depth >= maxMergeDepth:
			w.bad(field, nil, n.Line, "merge keys nested deeper than %d", maxMergeDepth)
			return
		case w.merges >= maxMerges:
			if w.merges == maxMerges { // once
				w.bad(field, nil, n.Line, "more than %d merged mappings", maxMerges)
				w.merges++
			}
			return
		}
		w.merges++
		w.object(path, m, v, depth+1)
	}
}

var digitsRE = regexp.MustCompile(`^[-+]?[0-9_]+$`)

// value applies node n to the field at path.
func (w *walker) value(path string, n *yaml.Node, v reflect.Value, depth int) {
	if isNull(n) {
		w.bad(path, nil, n.Line, "no value: give one, or leave the field out to keep the base preset's")
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.bad(path, shown(n), n.Line, "want a mapping of %s", strings.Join(yamlKeys(v.Type()), ", "))
			return
		}
		w.object(path, n, v, depth)
	case reflect.Int:
		var i int
		switch {
		case n.Kind != yaml.ScalarNode:
			w.bad(path, shown(n), n.Line, "want an integer, not %s", kindName(n))
		case n.ShortTag() != "!!int" && !(n.ShortTag() == "!!float" && digitsRE.MatchString(n.Value)):
			w.bad(path, shown(n), n.Line, "want an integer")
		case n.Decode(&i) != nil:
			w.bad(path, shown(n), n.Line, "integer out of range")
		default:
			v.SetInt(int64(i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.bad(path, shown(n), n.Line, "want a string, not %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	default:
		// Description holds only structs, ints and strings
		// (TestJSONSchemaMatchesDescription checks it).
		panic(fmt.Sprintf("fabric: field %s has unsupported kind %s", path, v.Kind()))
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexOf(keys []string, k string) int {
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	return -1
}

// suggest names the known key closest to an unknown one, or lists them all.
func suggest(k string, keys []string) string {
	lk := strings.ToLower(k)
	best, bestDist := "", 3 // at most two edits away
	for _, x := range keys {
		if d := editDistance(lk, x); d < bestDist {
			best, bestDist = x, d
		}
	}
	if best != "" && bestDist < len(k) {
		return "did you mean " + best + "?"
	}
	for _, x := range keys { // a shortened name: speed for speed_gbps
		if len(lk) >= 3 && (strings.HasPrefix(x, lk) || strings.HasPrefix(lk, x)) {
			return "did you mean " + x + "?"
		}
	}
	return "known: " + strings.Join(keys, ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
