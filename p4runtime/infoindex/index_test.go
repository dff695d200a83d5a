package infoindex_test

import (
	"errors"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
)

func TestValidate(t *testing.T) {
	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Validate(p4rttest.L2Entry(0xaabbccddeeff, 511)); err != nil {
		t.Fatalf("valid entry refused: %v", err)
	}
	te := func(mut func(*p4v1.TableEntry)) *p4v1.Entity {
		e := p4rttest.L2Entry(1, 1)
		mut(e.GetTableEntry())
		return e
	}
	for _, tc := range []struct {
		name string
		e    *p4v1.Entity
		want string
	}{
		{"unknown table", te(func(t *p4v1.TableEntry) { t.TableId = 0x02000099 }), "table id 0x2000099"},
		{"port too wide", p4rttest.L2Entry(1, 512), "param port: value needs 10 bits, param is 9 bits"},
		{"mac too wide", te(func(t *p4v1.TableEntry) { t.Match[0].GetExact().Value = []byte{1, 0, 0, 0, 0, 0, 0} }), "needs 49 bits"},
		{"missing exact", te(func(t *p4v1.TableEntry) { t.Match = nil }), "exact match field hdr.ethernet.dstAddr is missing"},
		{"unknown field", te(func(t *p4v1.TableEntry) { t.Match[0].FieldId = 9 }), "match field id 9"},
		{"priority", te(func(t *p4v1.TableEntry) { t.Priority = 4 }), "takes no priority"},
		{"unknown action", te(func(t *p4v1.TableEntry) { t.GetAction().GetAction().ActionId = 0x01000099 }), "action id 0x1000099"},
		{"missing param", te(func(t *p4v1.TableEntry) { t.GetAction().GetAction().Params = nil }), "param port is missing"},
		{"no action", te(func(t *p4v1.TableEntry) { t.Action = nil }), "no action"},
		{"counter entity", &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{}}, "unsupported entity kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := idx.Validate(tc.e)
			if !errors.Is(err, infoindex.ErrInvalidEntity) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidEntity containing %q", err, tc.want)
			}
		})
	}
}

func TestValidateDefaultEntry(t *testing.T) {
	info := p4rttest.SampleP4Info()
	info.Tables[0].ActionRefs[0].Scope = p4configv1.ActionRef_TABLE_ONLY // set_port
	idx, err := infoindex.New(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Validate(p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)); err != nil {
		t.Fatalf("default drop() refused: %v", err)
	}
	def := func(mut func(*p4v1.TableEntry)) *p4v1.Entity {
		e := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)
		mut(e.GetTableEntry())
		return e
	}
	for _, tc := range []struct {
		name string
		e    *p4v1.Entity
		want string
	}{
		{"table-only action", p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{1}), "table-only"},
		{"match", def(func(t *p4v1.TableEntry) { t.Match = p4rttest.L2Entry(1, 1).GetTableEntry().Match }), "has match fields"},
		{"priority", def(func(t *p4v1.TableEntry) { t.Priority = 1 }), "has a priority"},
		{"no action", def(func(t *p4v1.TableEntry) { t.Action = nil }), "has no action"},
		{"param of drop", def(func(t *p4v1.TableEntry) {
			t.GetAction().GetAction().Params = []*p4v1.Action_Param{{ParamId: 1, Value: []byte{1}}}
		}), "not a parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := idx.Validate(tc.e)
			if !errors.Is(err, infoindex.ErrInvalidEntity) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidEntity containing %q", err, tc.want)
			}
		})
	}
	info.Tables[0].ConstDefaultActionId = p4rttest.DropAction
	if idx, _ = infoindex.New(info); idx.Validate(p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)) == nil {
		t.Fatal("default entry of a table with a const default action accepted")
	}
	if got := idx.Describe(p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)); got != "ingress.l2_fwd (default) -> ingress.drop()" {
		t.Fatalf("Describe = %q", got)
	}
}

func TestDescribe(t *testing.T) {
	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	got := idx.Describe(p4rttest.L2Entry(0x0a0b0c0d0e0f, 300))
	want := "ingress.l2_fwd hdr.ethernet.dstAddr=0a:0b:0c:0d:0e:0f -> ingress.set_port(port=300)"
	if got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
	if got := infoindex.FormatValue([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128); got != "2001:db8::1" {
		t.Fatalf("IPv6 FormatValue = %q", got)
	}
}

func TestNewRejectsDuplicates(t *testing.T) {
	info := p4rttest.SampleP4Info()
	info.Tables = append(info.Tables, info.Tables[0])
	if _, err := infoindex.New(info); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("New with a duplicate table = %v", err)
	}
}

func TestValidateCloneSession(t *testing.T) {
	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*p4v1.Entity{
		p4rttest.CloneSession(1, 1),
		p4rttest.CloneSession(infoindex.MaxCloneSessionID, 511, 0),
	} {
		if err := idx.Validate(e); err != nil {
			t.Fatalf("valid clone session refused: %v", err)
		}
	}
	cs := func(id uint32, mut func(*p4v1.CloneSessionEntry)) *p4v1.Entity {
		e := p4rttest.CloneSession(id, 1)
		mut(e.GetPacketReplicationEngineEntry().GetCloneSessionEntry())
		return e
	}
	for _, tc := range []struct {
		name string
		e    *p4v1.Entity
		want string
	}{
		{"session 0", p4rttest.CloneSession(0, 1), "clone session 0: session id 0 is not allowed"},
		{"session too big", p4rttest.CloneSession(infoindex.MaxCloneSessionID+1, 1), "clone session 32768: session id above 32767"},
		{"no replicas", p4rttest.CloneSession(2), "clone session 2: no replicas"},
		{"truncation", cs(3, func(c *p4v1.CloneSessionEntry) { c.PacketLengthBytes = 64 }), "clone session 3: packet_length_bytes 64"},
		{"class of service", cs(4, func(c *p4v1.CloneSessionEntry) { c.ClassOfService = 2 }), "clone session 4: class_of_service 2"},
		{"port too wide", p4rttest.CloneSession(5, 1, 512), "clone session 5: replica 1: port 512 does not fit in 9 bits"},
		{"bytes port too wide", cs(6, func(c *p4v1.CloneSessionEntry) {
			c.Replicas[0].PortKind = &p4v1.Replica_Port{Port: []byte{0x02, 0x00}}
		}), "clone session 6: replica 0: port 512 does not fit in 9 bits"},
		{"empty bytes port", cs(7, func(c *p4v1.CloneSessionEntry) { c.Replicas[0].PortKind = &p4v1.Replica_Port{} }), "clone session 7: replica 0: empty port"},
		{"no port", cs(8, func(c *p4v1.CloneSessionEntry) { c.Replicas[0].PortKind = nil }), "clone session 8: replica 0: no port"},
		{"duplicate replica", cs(9, func(c *p4v1.CloneSessionEntry) {
			c.Replicas = append(c.Replicas, &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: []byte{0, 1}}})
		}), "clone session 9: replica 1: port 1 instance 0 given twice"},
		{"instance too wide", cs(10, func(c *p4v1.CloneSessionEntry) { c.Replicas[0].Instance = 1 << 16 }), "clone session 10: replica 0: instance 65536"},
		{"backup replicas", cs(11, func(c *p4v1.CloneSessionEntry) {
			c.Replicas[0].BackupReplicas = []*p4v1.BackupReplica{{Port: []byte{2}}}
		}), "clone session 11: replica 0: backup replicas are not supported"},
		{"multicast group", &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: 3}}}}},
			"multicast group 3 (only clone sessions"},
		{"empty PRE entry", &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{}}},
			"unsupported entity kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := idx.Validate(tc.e)
			if !errors.Is(err, infoindex.ErrInvalidEntity) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidEntity containing %q", err, tc.want)
			}
		})
	}
	mc := &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: 3}}}}}
	if err := idx.Validate(mc); !errors.Is(err, canonical.ErrUnsupported) {
		t.Fatalf("multicast group: %v, want canonical.ErrUnsupported", err)
	}
}

func TestDescribeCloneSession(t *testing.T) {
	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	e := p4rttest.CloneSession(3, 7, 2)
	cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
	cs.Replicas[0].Instance = 4
	if got, want := idx.Describe(e), "clone session 3 -> port 2, port 7 instance 4"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
	if got, want := idx.DescribeState(e), "port 2, port 7 instance 4"; got != want {
		t.Fatalf("DescribeState = %q, want %q", got, want)
	}
	cs.ClassOfService, cs.PacketLengthBytes = 1, 64
	if got, want := infoindex.DescribeCloneSession(cs), "port 2, port 7 instance 4 cos=1 truncate=64"; got != want {
		t.Fatalf("DescribeCloneSession = %q, want %q", got, want)
	}
	if got, want := idx.Describe(p4rttest.CloneSession(9)), "clone session 9 -> no replicas"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
}
