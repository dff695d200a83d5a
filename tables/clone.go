package tables

import (
	"fmt"
	"strconv"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// CloneSessionProto returns a clone session as a P4Runtime entity: one
// replica on the session's port, no truncation (BMv2's P4Runtime server
// refuses truncating sessions).
func CloneSessionProto(cs schema.CloneSession) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{
			SessionId: cs.ID,
			Replicas:  []*p4v1.Replica{{PortKind: &p4v1.Replica_EgressPort{EgressPort: cs.Port}, Instance: 0}},
		}},
	}}}
}

// AppendCloneSessionText appends a clone session as one `updates{...}` line
// of a WriteRequest in text format (the same message as CloneSessionProto).
func AppendCloneSessionText(dst []byte, cs schema.CloneSession, typ UpdateType) []byte {
	dst = append(dst, "updates{type:"...)
	dst = append(dst, typ...)
	dst = append(dst, " entity{packet_replication_engine_entry{clone_session_entry{session_id:"...)
	dst = strconv.AppendUint(dst, uint64(cs.ID), 10)
	dst = append(dst, " replicas{egress_port:"...)
	dst = strconv.AppendUint(dst, uint64(cs.Port), 10)
	return append(dst, "}}}}}\n"...)
}

// ReadEntities reads a table file written by `mrcgen build` into P4Runtime
// entities: table entries (checked against prog) and clone sessions.
func ReadEntities(prog *schema.Program, path string) ([]*p4v1.Entity, error) {
	req, err := readWriteRequest(path)
	if err != nil {
		return nil, err
	}
	out := make([]*p4v1.Entity, 0, len(req.GetUpdates()))
	for i, u := range req.GetUpdates() {
		ent := u.GetEntity()
		switch {
		case ent.GetTableEntry() != nil:
			e, err := FromProto(prog, ent.GetTableEntry())
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
