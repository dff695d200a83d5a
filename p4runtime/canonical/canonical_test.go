package canonical_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
)

func TestBytes(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{nil, []byte{0}},
		{[]byte{0}, []byte{0}},
		{[]byte{0, 0, 0}, []byte{0}},
		{[]byte{0, 0, 1}, []byte{1}},
		{[]byte{0, 0x80, 0}, []byte{0x80, 0}},
		{[]byte{1, 0}, []byte{1, 0}},
	} {
		got := canonical.Bytes(tc.in)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("Bytes(%x) = %x, want %x", tc.in, got, tc.want)
		}
		if len(tc.in) > 0 && len(got) > 0 && &got[0] == &tc.in[len(tc.in)-len(got)] {
			t.Errorf("Bytes(%x) aliases its input", tc.in)
		}
	}
}

func TestBitLen(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int
	}{{nil, 0}, {[]byte{0, 0}, 0}, {[]byte{1}, 1}, {[]byte{0, 1, 0xff}, 9}, {[]byte{0x80, 0, 0, 0, 0, 0}, 48}} {
		if got := canonical.BitLen(tc.in); got != tc.want {
			t.Errorf("BitLen(%x) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func exact(id uint32, v ...byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

func entry(match []*p4v1.FieldMatch, params ...*p4v1.Action_Param) *p4v1.TableEntry {
	return &p4v1.TableEntry{TableId: 0x02000001, Match: match, Action: &p4v1.TableAction{
		Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000001, Params: params}}}}
}

func TestTableEntryEquivalence(t *testing.T) {
	padded := entry([]*p4v1.FieldMatch{exact(2, 0, 0, 7), exact(1, 0, 0, 0, 0, 0, 1)},
		&p4v1.Action_Param{ParamId: 2, Value: []byte{0, 0}}, &p4v1.Action_Param{ParamId: 1, Value: []byte{0, 5}})
	canon := entry([]*p4v1.FieldMatch{exact(1, 1), exact(2, 7)},
		&p4v1.Action_Param{ParamId: 1, Value: []byte{5}}, &p4v1.Action_Param{ParamId: 2, Value: []byte{0}})
	before := proto.CloneOf(padded)
	a, b := canonical.TableEntry(padded), canonical.TableEntry(canon)
	if !proto.Equal(a, b) {
		t.Fatalf("canonical forms differ:\n%v\n%v", a, b)
	}
	if !proto.Equal(padded, before) {
		t.Fatal("TableEntry modified its input")
	}
	if canonical.TableKey(a) != canonical.TableKey(b) || !bytes.Equal(canonical.State(a), canonical.State(b)) {
		t.Fatal("keys or states differ for equivalent entries")
	}
	other := canonical.TableEntry(entry([]*p4v1.FieldMatch{exact(1, 2), exact(2, 7)}))
	if canonical.TableKey(other) == canonical.TableKey(a) {
		t.Fatal("different match, same key")
	}
	prio := proto.CloneOf(a)
	prio.Priority = 3
	if canonical.TableKey(prio) == canonical.TableKey(a) {
		t.Fatal("priority must be part of the key")
	}
}

func TestDontCareOmitted(t *testing.T) {
	te := &p4v1.TableEntry{TableId: 1, Match: []*p4v1.FieldMatch{
		{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: []byte{1}, Mask: []byte{0, 0}}}},
		{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 0}}},
		{FieldId: 3, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 8}}},
	}}
	got := canonical.TableEntry(te)
	if len(got.Match) != 1 || got.Match[0].FieldId != 3 {
		t.Fatalf("don't-care matches not dropped: %v", got.Match)
	}
}

func TestKeyUnsupported(t *testing.T) {
	_, err := canonical.Key(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{}}})
	if !errors.Is(err, canonical.ErrUnsupported) {
		t.Fatalf("Key(counter) = %v, want ErrUnsupported", err)
	}
}

func cloneSession(id uint32, replicas ...*p4v1.Replica) *p4v1.Entity {
	return canonical.CloneSessionEntity(&p4v1.CloneSessionEntry{SessionId: id, Replicas: replicas})
}

func egress(port, instance uint32) *p4v1.Replica {
	return &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: port}, Instance: instance}
}

func portBytes(instance uint32, port ...byte) *p4v1.Replica {
	return &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: port}, Instance: instance}
}

func TestCloneSessionEquivalence(t *testing.T) {
	// As mrcgen writes it: egress_port, one order.
	written := cloneSession(1, egress(2, 0), egress(1, 0), egress(1, 3))
	// As a device may answer: bytes ports, padded, another order.
	answered := cloneSession(1, portBytes(3, 0, 1), portBytes(0, 0, 0, 0, 1), portBytes(0, 2))
	before := proto.CloneOf(written)
	a := canonical.CloneSession(written.GetPacketReplicationEngineEntry().GetCloneSessionEntry())
	b := canonical.CloneSession(answered.GetPacketReplicationEngineEntry().GetCloneSessionEntry())
	if !proto.Equal(a, b) {
		t.Fatalf("canonical forms differ:\n%v\n%v", a, b)
	}
	if !proto.Equal(written, before) {
		t.Fatal("CloneSession modified its input")
	}
	// Sorted by port value, then instance.
	var got []string
	for _, r := range a.GetReplicas() {
		got = append(got, string(r.GetPort())+"/"+string(rune('0'+r.GetInstance())))
	}
	if want := []string{"\x01/0", "\x01/3", "\x02/0"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("replica order %q, want %q", got, want)
	}
	if !bytes.Equal(canonical.CloneSessionState(a), canonical.CloneSessionState(b)) {
		t.Fatal("states differ for equivalent sessions")
	}
	for name, other := range map[string]*p4v1.Entity{
		"port":     cloneSession(1, egress(2, 0), egress(1, 0), egress(4, 3)),
		"instance": cloneSession(1, egress(2, 0), egress(1, 0), egress(1, 4)),
		"replicas": cloneSession(1, egress(2, 0), egress(1, 0)),
	} {
		c := canonical.CloneSession(other.GetPacketReplicationEngineEntry().GetCloneSessionEntry())
		if bytes.Equal(canonical.CloneSessionState(c), canonical.CloneSessionState(a)) {
			t.Errorf("a different %s gives the same state", name)
		}
	}
	// A port of 256 is not a port of 1: the length of the canonical port
	// counts before its bytes.
	wide := canonical.CloneSession(cloneSession(1, egress(256, 0), egress(2, 0)).GetPacketReplicationEngineEntry().GetCloneSessionEntry())
	if p := wide.GetReplicas()[0].GetPort(); !bytes.Equal(p, []byte{2}) {
		t.Fatalf("first replica port %x, want 02 (2 < 256)", p)
	}
}

func TestCloneSessionKey(t *testing.T) {
	k1, err := canonical.Key(cloneSession(1, egress(5, 0)))
	if err != nil {
		t.Fatal(err)
	}
	k1b, _ := canonical.Key(cloneSession(1, egress(6, 0)))
	k2, _ := canonical.Key(cloneSession(2, egress(5, 0)))
	k300, _ := canonical.Key(cloneSession(300, egress(5, 0)))
	kt, _ := canonical.Key(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: entry([]*p4v1.FieldMatch{exact(1, 1)})}})
	if k1 != k1b || k1 == k2 {
		t.Fatal("clone session key must be the session id alone")
	}
	if !(k1 < k2 && k2 < k300 && k300 < kt) {
		t.Fatal("clone sessions must sort by id, before table entries")
	}
	mc := &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: 4}}}}}
	if _, err := canonical.Key(mc); !errors.Is(err, canonical.ErrUnsupported) || !strings.Contains(err.Error(), "multicast group 4") {
		t.Fatalf("Key(multicast group) = %v, want ErrUnsupported naming the group", err)
	}
	if _, err := canonical.Entity(mc); !errors.Is(err, canonical.ErrUnsupported) {
		t.Fatalf("Entity(multicast group) = %v, want ErrUnsupported", err)
	}
}

func TestReplicaPort(t *testing.T) {
	for _, tc := range []struct {
		r    *p4v1.Replica
		want uint32
		ok   bool
	}{
		{egress(7, 0), 7, true},
		{portBytes(0, 0, 0, 1, 0xff), 511, true},
		{portBytes(0), 0, false},
		{portBytes(0, 1, 0, 0, 0, 0), 0, false},
		{portBytes(0, 0, 0, 0, 0, 9), 9, true},
		{&p4v1.Replica{}, 0, false},
	} {
		got, ok := canonical.ReplicaPort(tc.r)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ReplicaPort(%v) = %d, %v; want %d, %v", tc.r, got, ok, tc.want, tc.ok)
		}
	}
}
