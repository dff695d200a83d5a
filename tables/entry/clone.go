package entry

import (
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
