package tabletext

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// ReadFile reads a table file written by `mrcgen build` (a WriteRequest in
// text format) and decodes its entries against prog.
func ReadFile(prog *schema.Program, path string) ([]entry.Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(prog, path, data)
}

// Parse decodes the text of a table file (as ReadFile reads it) against
// prog; name is the file's name in messages.
func Parse(prog *schema.Program, name string, data []byte) ([]entry.Entry, error) {
	path := name
	// One update per line, as mrcgen writes them: the fast parser takes
	// each line it knows, prototext the others.
	var out []entry.Entry
	var tp textParser
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		e, err := tp.entry(prog, line)
		if err == nil {
			out = append(out, e)
			continue
		}
		if !errors.Is(err, errNotFast) {
			return nil, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		var one p4v1.WriteRequest
		if prototext.Unmarshal(line, &one) != nil || len(one.GetUpdates()) != 1 {
			return parseSlow(prog, path, data) // not one update per line
		}
		te := one.GetUpdates()[0].GetEntity().GetTableEntry()
		if te == nil {
			return nil, fmt.Errorf("%s: line %d: update is not a table entry", path, n+1)
		}
		if e, err = entry.FromProto(prog, te); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// parseSlow decodes a table file in any text layout with prototext.
func parseSlow(prog *schema.Program, path string, data []byte) ([]entry.Entry, error) {
	req, err := ParseWriteRequest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]entry.Entry, 0, len(req.GetUpdates()))
	for i, u := range req.GetUpdates() {
		te := u.GetEntity().GetTableEntry()
		if te == nil {
			return nil, fmt.Errorf("%s: update %d is not a table entry", path, i+1)
		}
		e, err := entry.FromProto(prog, te)
		if err != nil {
			return nil, fmt.Errorf("%s: update %d: %w", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
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

// ReadEntities reads a table file written by `mrcgen build` into P4Runtime
// entities: table entries (checked against prog) and clone sessions.
func ReadEntities(prog *schema.Program, path string) ([]*p4v1.Entity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseEntities(prog, path, data)
}

// ParseEntities decodes the text of a table file (as ReadEntities reads
// it); name is the file's name in messages.
func ParseEntities(prog *schema.Program, name string, data []byte) ([]*p4v1.Entity, error) {
	path := name
	req, err := ParseWriteRequest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]*p4v1.Entity, 0, len(req.GetUpdates()))
	for i, u := range req.GetUpdates() {
		ent := u.GetEntity()
		switch {
		case ent.GetTableEntry() != nil:
			e, err := entry.FromProto(prog, ent.GetTableEntry())
			if err != nil {
				return nil, fmt.Errorf("%s: update %d: %w", path, i+1, err)
			}
			out = append(out, e.Proto())
		case ent.GetPacketReplicationEngineEntry().GetCloneSessionEntry() != nil:
			cs := ent.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
			if cs.GetSessionId() == 0 || len(cs.GetReplicas()) == 0 {
				return nil, fmt.Errorf("%s: update %d: clone session %d without replicas or id", path, i+1, cs.GetSessionId())
			}
			out = append(out, ent)
		default:
			return nil, fmt.Errorf("%s: update %d: neither a table entry nor a clone session", path, i+1)
		}
	}
	return out, nil
}
