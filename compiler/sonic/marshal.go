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
	b := make([]byte, 0, fragmentSizeHint(fr))
	if fr == nil {
		return append(b, "null\n"...), nil
	}
	// One buffer of sorted keys per level, reused for every map of it.
	var tableNames, keyNames, fieldNames []string
	b = append(b, '{')
	tableNames = sortedKeysInto(tableNames, fr)
	for i, table := range tableNames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendJSONString(b, table)
		b = append(b, ": "...)
		keys := fr[table]
		if keys == nil {
			b = append(b, "null"...)
			continue
		}
		b = append(b, '{')
		keyNames = sortedKeysInto(keyNames, keys)
		for j, key := range keyNames {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        "...)
			b = appendJSONString(b, key)
			b = append(b, ": "...)
			fields := keys[key]
			if fields == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '{')
			fieldNames = sortedKeysInto(fieldNames, fields)
			for k, field := range fieldNames {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, "\n            "...)
				b = appendJSONString(b, field)
				b = append(b, ": "...)
				b = appendJSONString(b, fields[field])
			}
			if len(fields) > 0 {
				b = append(b, "\n        "...)
			}
			b = append(b, '}')
		}
		if len(keys) > 0 {
			b = append(b, "\n    "...)
		}
		b = append(b, '}')
	}
	if len(fr) > 0 {
		b = append(b, '\n')
	}
	return append(b, "}\n"...), nil
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
