package p4rttest

import (
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// IDs of SampleP4Info, with p4c's prefixes (table 0x02, action 0x01).
const (
	L2TableID     uint32 = 0x02000001
	DstAddrField  uint32 = 1
	SetPortAction uint32 = 0x01000001
	PortParam     uint32 = 1
	DropAction    uint32 = 0x01000002
)

// SampleP4Info is a small P4Info for tests: table ingress.l2_fwd with one
// 48-bit exact key hdr.ethernet.dstAddr, and actions ingress.set_port(bit<9>
// port) and ingress.drop().
func SampleP4Info() *p4configv1.P4Info {
	return &p4configv1.P4Info{
		PkgInfo: &p4configv1.PkgInfo{Arch: "v1model"},
		Tables: []*p4configv1.Table{{
			Preamble: &p4configv1.Preamble{Id: L2TableID, Name: "ingress.l2_fwd", Alias: "l2_fwd"},
			MatchFields: []*p4configv1.MatchField{{
				Id: DstAddrField, Name: "hdr.ethernet.dstAddr", Bitwidth: 48,
				Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT},
			}},
			ActionRefs: []*p4configv1.ActionRef{{Id: SetPortAction}, {Id: DropAction}},
			Size:       1 << 20,
		}},
		Actions: []*p4configv1.Action{
			{
				Preamble: &p4configv1.Preamble{Id: SetPortAction, Name: "ingress.set_port", Alias: "set_port"},
				Params:   []*p4configv1.Action_Param{{Id: PortParam, Name: "port", Bitwidth: 9}},
			},
			{Preamble: &p4configv1.Preamble{Id: DropAction, Name: "ingress.drop", Alias: "drop"}},
		},
	}
}

// L2Entry returns an ingress.l2_fwd entry mapping a MAC address (low 48
// bits of mac) to set_port(port). Bytestrings are full width (6 and 2
// bytes), not canonical, as a generator might write them.
func L2Entry(mac uint64, port uint16) *p4v1.Entity {
	m := []byte{byte(mac >> 40), byte(mac >> 32), byte(mac >> 24), byte(mac >> 16), byte(mac >> 8), byte(mac)}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: L2TableID,
		Match: []*p4v1.FieldMatch{{
			FieldId:        DstAddrField,
			FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: m}},
		}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: SetPortAction,
			Params:   []*p4v1.Action_Param{{ParamId: PortParam, Value: []byte{byte(port >> 8), byte(port)}}},
		}}},
	}}}
}

// L2Entries returns n entries for MACs base..base+n-1, port = 1 + i%500.
func L2Entries(base uint64, n int) []*p4v1.Entity {
	out := make([]*p4v1.Entity, n)
	for i := range out {
		out[i] = L2Entry(base+uint64(i), uint16(1+i%500))
	}
	return out
}

// CloneSession returns a clone session entity with one replica per port
// (instance 0), each port in the deprecated uint32 egress_port field as
// mrcgen writes it, class of service 0 and no truncation.
func CloneSession(id uint32, ports ...uint32) *p4v1.Entity {
	cs := &p4v1.CloneSessionEntry{SessionId: id}
	for _, p := range ports {
		cs.Replicas = append(cs.Replicas, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: p}})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs},
	}}}
}

// Inserts wraps entities in INSERT updates.
func Inserts(entities []*p4v1.Entity) []*p4v1.Update {
	out := make([]*p4v1.Update, len(entities))
	for i, e := range entities {
		out[i] = &p4v1.Update{Type: p4v1.Update_INSERT, Entity: e}
	}
	return out
}

// DefaultEntry returns the default entry (is_default_action) of a table
// with an action and its parameters (each param id i+1 gets params[i]).
func DefaultEntry(table, action uint32, params ...[]byte) *p4v1.Entity {
	a := &p4v1.Action{ActionId: action}
	for i, v := range params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: v})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: table, IsDefaultAction: true,
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}},
	}}}
}
