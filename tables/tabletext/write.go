package tabletext

import (
	"strconv"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// UpdateType is the P4Runtime update type written in front of an entry.
type UpdateType string

// Update types.
const (
	Insert UpdateType = "INSERT"
	Modify UpdateType = "MODIFY"
	Delete UpdateType = "DELETE"
)

const hexDigits = "0123456789abcdef"

func appendBytes(dst []byte, v uint64) []byte {
	var tmp [8]byte
	b := entry.Canonical(tmp[:0], v)
	dst = append(dst, '"')
	for _, c := range b {
		dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
	}
	return append(dst, '"')
}

// AppendEntry appends the entry as one `updates{...}` field of a P4Runtime
// WriteRequest in protobuf text format, on one line, without optional
// spaces (the largest fabric writes 3 million of them). It writes
// the same message as entry.Entry.Proto, without going through the protobuf
// runtime (the largest fabric has 3 million switch entries).
func AppendEntry(dst []byte, e *entry.Entry, typ UpdateType) []byte {
	dst = append(dst, "updates{type:"...)
	dst = append(dst, typ...)
	dst = append(dst, " entity{table_entry{table_id:"...)
	dst = strconv.AppendUint(dst, uint64(e.Table.ID), 10)
	for i, k := range e.Table.Keys {
		dst = append(dst, " match{field_id:"...)
		dst = strconv.AppendUint(dst, uint64(k.ID), 10)
		switch k.Match {
		case schema.Exact:
			dst = append(dst, " exact{value:"...)
			dst = appendBytes(dst, e.Match[i].Value)
		case schema.Ternary:
			dst = append(dst, " ternary{value:"...)
			dst = appendBytes(dst, e.Match[i].Value)
			dst = append(dst, " mask:"...)
			dst = appendBytes(dst, e.Match[i].Mask)
		case schema.LPM:
			dst = append(dst, " lpm{value:"...)
			dst = appendBytes(dst, e.Match[i].Value)
			dst = append(dst, " prefix_len:"...)
			dst = strconv.AppendUint(dst, e.Match[i].Mask, 10)
		}
		dst = append(dst, "}}"...)
	}
	dst = append(dst, " action{action{action_id:"...)
	dst = strconv.AppendUint(dst, uint64(e.Action.ID), 10)
	for i, p := range e.Action.Params {
		dst = append(dst, " params{param_id:"...)
		dst = strconv.AppendUint(dst, uint64(p.ID), 10)
		dst = append(dst, " value:"...)
		dst = appendBytes(dst, e.Params[i])
		dst = append(dst, "}"...)
	}
	dst = append(dst, "}}"...)
	if e.Priority != 0 {
		dst = append(dst, " priority:"...)
		dst = strconv.AppendInt(dst, int64(e.Priority), 10)
	}
	return append(dst, "}}}\n"...)
}

// AppendCloneSession appends a clone session as one `updates{...}` line
// of a WriteRequest in text format (the same message as entry.CloneSessionProto).
func AppendCloneSession(dst []byte, cs schema.CloneSession, typ UpdateType) []byte {
	dst = append(dst, "updates{type:"...)
	dst = append(dst, typ...)
	dst = append(dst, " entity{packet_replication_engine_entry{clone_session_entry{session_id:"...)
	dst = strconv.AppendUint(dst, uint64(cs.ID), 10)
	dst = append(dst, " replicas{egress_port:"...)
	dst = strconv.AppendUint(dst, uint64(cs.Port), 10)
	return append(dst, "}}}}}\n"...)
}
