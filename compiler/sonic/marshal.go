package sonic

import (
	"encoding/json"
	"slices"
)

// Marshal writes a fragment as SONiC does: indented JSON (four spaces),
// keys sorted, a newline at the end. The bytes are those of
// json.MarshalIndent(fr, "", "    "), written without reflection: a 512-port
// switch's fragment is half a megabyte, and an export writes thousands.
func Marshal(fr Fragment) ([]byte, error) {
	// One buffer of sorted keys per level, reused for every map of it.
	var bufs [3][]string
	fields := func(b []byte, fields map[string]string) []byte {
		return appendObject(b, fields, 2, &bufs, appendJSONString)
	}
	keys := func(b []byte, keys map[string]map[string]string) []byte {
		return appendObject(b, keys, 1, &bufs, fields)
	}
	b := appendObject(make([]byte, 0, fragmentSizeHint(fr)), fr, 0, &bufs, keys)
	return append(b, '\n'), nil
}

// appendObject appends m, an object at the given depth, as
// json.MarshalIndent(..., "", "    ") writes it: keys sorted, each value
// written by value; bufs[depth] holds the sorted keys.
func appendObject[V any](b []byte, m map[string]V, depth int, bufs *[3][]string, value func([]byte, V) []byte) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	names := sortedKeysInto(bufs[depth], m)
	bufs[depth] = names
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendIndent(b, depth+1)
		b = appendJSONString(b, name)
		b = append(b, ": "...)
		b = value(b, m[name])
	}
	if len(names) > 0 {
		b = appendIndent(b, depth)
	}
	return append(b, '}')
}

// appendIndent starts a line indented by depth levels of four spaces.
func appendIndent(b []byte, depth int) []byte {
	b = append(b, '\n')
	for range depth {
		b = append(b, "    "...)
	}
	return b
}

// sortedKeysInto returns m's keys, sorted, in buf's storage.
func sortedKeysInto[V any](buf []string, m map[string]V) []string {
	buf = buf[:0]
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// appendJSONString appends s as encoding/json writes it. Every name and
// value mrcgen writes is printable ASCII without the characters
// encoding/json escapes; anything else is left to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// fragmentSizeHint guesses the marshalled size, to allocate once: about 48
// bytes a field.
func fragmentSizeHint(fr Fragment) int {
	n := 64
	for _, keys := range fr {
		for _, fields := range keys {
			n += 48 * (len(fields) + 1)
		}
	}
	return n
}
