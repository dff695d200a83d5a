// Package tabletext writes and reads the table files of a build: a
// P4Runtime WriteRequest in protobuf text format, one update per line.
//
// AppendEntry writes an entry without the protobuf runtime, and ReadFile
// reads one back through a parser of exactly that form (fastparse.go),
// falling back to prototext for anything else; tests and a fuzz target
// hold both paths to prototext's answers.
package tabletext
