package fabric

import _ "embed"

//go:embed schema.json
var jsonSchema []byte

// JSONSchema returns the JSON Schema of the fabric description file.
func JSONSchema() []byte { return append([]byte(nil), jsonSchema...) }
