package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// outputFormat is the value of the global --output (-o) flag: tables for
// people, JSON for scripts (the kubectl and containerlab convention).
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
)

func (f *outputFormat) String() string { return string(*f) }
func (f *outputFormat) Type() string   { return "table|json" }
func (f *outputFormat) Set(s string) error {
	switch outputFormat(s) {
	case outputTable, outputJSON:
		*f = outputFormat(s)
		return nil
	}
	return fmt.Errorf("unknown output format %q: want table or json", s)
}

// writeJSON writes v as indented JSON and a newline: the one encoding of
// every command's --output json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "->" in verify's path classes, not "-\u003e"
	return enc.Encode(v)
}
