package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
)

// asDevice returns what a device answers for e: the same entry with
// shortest-form bytestrings (computed here with math/big, independently of
// package canonical).
func asDevice(e *p4v1.Entity) *p4v1.Entity {
	short := func(b []byte) []byte {
		if v := new(big.Int).SetBytes(b).Bytes(); len(v) > 0 {
			return v
		}
		return []byte{0}
	}
	te := proto.CloneOf(e.GetTableEntry())
	for _, m := range te.Match {
		m.GetExact().Value = short(m.GetExact().GetValue())
	}
	for _, p := range te.GetAction().GetAction().GetParams() {
		p.Value = short(p.Value)
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

func TestCompute(t *testing.T) {
	desired := p4rttest.L2Entries(0x100, 5)
	current := make([]*p4v1.Entity, len(desired))
	for i, e := range desired {
		current[i] = asDevice(e)
	}

	if bytes.Equal(current[0].GetTableEntry().Match[0].GetExact().Value, desired[0].GetTableEntry().Match[0].GetExact().Value) {
		t.Fatal("test setup: device form must differ from the desired bytes")
	}
	d, err := reconcile.Compute(desired, current)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Empty() || d.Unchanged != 5 {
		t.Fatalf("same state: %s, want nothing to do", d.Summary())
	}

	// Device: entry 1 has another port, entry 4 is gone, an extra entry.
	current[1] = asDevice(p4rttest.L2Entry(0x101, 77))
	current = append(current[:4], asDevice(p4rttest.L2Entry(0x999, 3)))
	d, err = reconcile.Compute(desired, current)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count(reconcile.Insert) != 1 || d.Count(reconcile.Modify) != 1 || d.Count(reconcile.Delete) != 1 || d.Unchanged != 3 {
		t.Fatalf("diff %s, want 1 of each and 3 unchanged", d.Summary())
	}
	ops := []reconcile.Op{}
	for _, c := range d.Changes {
		ops = append(ops, c.Op)
	}
	if ops[0] != reconcile.Delete || ops[1] != reconcile.Modify || ops[2] != reconcile.Insert {
		t.Fatalf("order %v, want DELETE, MODIFY, INSERT", ops)
	}
	mod := d.Changes[1]
	if mod.Entity != desired[1] || !proto.Equal(mod.Current, current[1]) {
		t.Fatal("MODIFY must carry the whole desired entity and the device's")
	}
	if u := d.Updates(reconcile.Modify); len(u) != 1 || u[0].Type != p4v1.Update_MODIFY || u[0].Entity != desired[1] {
		t.Fatalf("Updates(Modify) = %v", u)
	}

	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := d.Render(&b, idx); err != nil {
		t.Fatal(err)
	}
	want := `DELETE ingress.l2_fwd hdr.ethernet.dstAddr=00:00:00:00:09:99 -> ingress.set_port(port=3)
MODIFY ingress.l2_fwd hdr.ethernet.dstAddr=00:00:00:00:01:01 -> ingress.set_port(port=2) (was ingress.set_port(port=77))
INSERT ingress.l2_fwd hdr.ethernet.dstAddr=00:00:00:00:01:04 -> ingress.set_port(port=5)
`
	if b.String() != want {
		t.Fatalf("Render:\n%s\nwant:\n%s", b.String(), want)
	}
	if s := d.Summary(); s != "1 insert, 1 modify, 1 delete, 3 unchanged" {
		t.Fatalf("Summary = %q", s)
	}
}

func TestComputeDeterministic(t *testing.T) {
	desired := p4rttest.L2Entries(0, 200)
	first, err := reconcile.Compute(desired, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		// Reverse the input: the output order must not follow it (nor
		// map iteration).
		rev := make([]*p4v1.Entity, len(desired))
		for i, e := range desired {
			rev[len(desired)-1-i] = e
		}
		d, err := reconcile.Compute(rev, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range d.Changes {
			if d.Changes[i].Entity != first.Changes[i].Entity {
				t.Fatalf("change %d differs between runs", i)
			}
		}
	}
	for i := 1; i < len(first.Changes); i++ {
		a := first.Changes[i-1].Entity.GetTableEntry().Match[0].GetExact().Value
		b := first.Changes[i].Entity.GetTableEntry().Match[0].GetExact().Value
		if string(a) >= string(b) {
			t.Fatalf("inserts not sorted by key at %d", i)
		}
	}
}

func TestComputeErrors(t *testing.T) {
	e := p4rttest.L2Entry(1, 1)
	if _, err := reconcile.Compute([]*p4v1.Entity{e, asDevice(e)}, nil); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate desired keys: %v", err)
	}
	counter := &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{}}}
	if _, err := reconcile.Compute([]*p4v1.Entity{counter}, nil); !errors.Is(err, canonical.ErrUnsupported) {
		t.Fatalf("counter entity: %v, want ErrUnsupported", err)
	}
}

type fakeReader struct{ filters []*p4v1.Entity }

func (f *fakeReader) Read(_ context.Context, filters []*p4v1.Entity) ([]*p4v1.Entity, error) {
	f.filters = filters
	return nil, nil
}

func TestReadTablesFilters(t *testing.T) {
	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	var r fakeReader
	if _, err := reconcile.ReadTables(context.Background(), &r, idx); err != nil {
		t.Fatal(err)
	}
	if len(r.filters) != 1 || r.filters[0].GetTableEntry().GetTableId() != p4rttest.L2TableID || len(r.filters[0].GetTableEntry().GetMatch()) != 0 {
		t.Fatalf("filters %v, want one wildcard read of the l2 table", r.filters)
	}
}

// sessionAsDevice returns what a device may answer for a clone session
// written as e: ports as 2-byte bytestrings, replicas in reverse order.
func sessionAsDevice(e *p4v1.Entity) *p4v1.Entity {
	out := proto.CloneOf(e)
	cs := out.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
	for _, r := range cs.Replicas {
		p := r.GetEgressPort()
		r.PortKind = &p4v1.Replica_Port{Port: []byte{byte(p >> 8), byte(p)}}
	}
	slices.Reverse(cs.Replicas)
	return out
}

func TestComputeCloneSessions(t *testing.T) {
	desired := []*p4v1.Entity{
		p4rttest.L2Entry(0x100, 1),
		p4rttest.CloneSession(1, 1),
		p4rttest.CloneSession(2, 2),
		p4rttest.CloneSession(3, 4, 3), // two replicas
		p4rttest.L2Entry(0x101, 2),
	}
	current := make([]*p4v1.Entity, len(desired))
	for i, e := range desired {
		if e.GetTableEntry() != nil {
			current[i] = asDevice(e)
		} else {
			current[i] = sessionAsDevice(e)
		}
	}
	if got := current[3].GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetReplicas()[0].GetPort(); !bytes.Equal(got, []byte{0, 3}) {
		t.Fatalf("test setup: device replicas must come in another order and form, got first port %x", got)
	}
	d, err := reconcile.Compute(desired, current)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Empty() || d.Unchanged != 5 {
		t.Fatalf("same state (replicas reordered, ports as bytes): %s, want nothing to do", d.Summary())
	}

	// Device: session 2 goes to port 9, session 3 is missing, a stray
	// session 7, and one table entry is missing.
	current = []*p4v1.Entity{
		sessionAsDevice(p4rttest.CloneSession(7, 5)),
		current[0],
		current[1],
		sessionAsDevice(p4rttest.CloneSession(2, 9)),
	}
	d, err = reconcile.Compute(desired, current)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count(reconcile.Insert) != 2 || d.Count(reconcile.Modify) != 1 || d.Count(reconcile.Delete) != 1 || d.Unchanged != 2 {
		t.Fatalf("diff %s, want 2 inserts, 1 modify, 1 delete, 2 unchanged", d.Summary())
	}
	if m := d.Updates(reconcile.Modify); len(m) != 1 || m[0].Entity != desired[2] {
		t.Fatalf("MODIFY must write the whole desired session 2, got %v", m)
	}
	if del := d.Updates(reconcile.Delete); len(del) != 1 || del[0].Entity != current[0] {
		t.Fatalf("DELETE must carry the device's session 7, got %v", del)
	}
	idx, err := infoindex.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := d.Render(&b, idx); err != nil {
		t.Fatal(err)
	}
	// Clone sessions first in each phase, by id.
	want := `DELETE clone session 7 -> port 5
MODIFY clone session 2 -> port 2 (was port 9)
INSERT clone session 3 -> port 3, port 4
INSERT ingress.l2_fwd hdr.ethernet.dstAddr=00:00:00:00:01:01 -> ingress.set_port(port=2)
`
	if b.String() != want {
		t.Fatalf("Render:\n%s\nwant:\n%s", b.String(), want)
	}

	// An instance or a second replica is a change too.
	inst := p4rttest.CloneSession(1, 1)
	inst.GetPacketReplicationEngineEntry().GetCloneSessionEntry().Replicas[0].Instance = 1
	for name, dev := range map[string]*p4v1.Entity{
		"instance":     inst,
		"more replica": p4rttest.CloneSession(1, 1, 2),
	} {
		d, err := reconcile.Compute([]*p4v1.Entity{p4rttest.CloneSession(1, 1)}, []*p4v1.Entity{dev})
		if err != nil {
			t.Fatal(err)
		}
		if d.Count(reconcile.Modify) != 1 || len(d.Changes) != 1 {
			t.Errorf("%s differs: %s, want 1 modify", name, d.Summary())
		}
	}

	// Every clone session on the device is managed: with none desired, all
	// are deleted.
	d, err = reconcile.Compute(nil, []*p4v1.Entity{p4rttest.CloneSession(4, 1), p4rttest.CloneSession(5, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Count(reconcile.Delete) != 2 {
		t.Fatalf("stray sessions: %s, want 2 deletes", d.Summary())
	}
}

func TestComputeCloneSessionErrors(t *testing.T) {
	_, err := reconcile.Compute([]*p4v1.Entity{p4rttest.CloneSession(1, 1), p4rttest.CloneSession(1, 2)}, nil)
	if err == nil || !strings.Contains(err.Error(), "clone session 1 given twice") {
		t.Fatalf("duplicate session id: %v", err)
	}
	mc := &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: 1}}}}}
	if _, err := reconcile.Compute(nil, []*p4v1.Entity{mc}); !errors.Is(err, canonical.ErrUnsupported) {
		t.Fatalf("multicast group on the device: %v, want ErrUnsupported", err)
	}
}

// sessionReader answers clone-session reads from sessions, as a server
// that answers the wildcard (wildcard true) or only reads by id.
type sessionReader struct {
	wildcard bool
	sessions map[uint32]*p4v1.Entity
	fail     error // returned for every read when set
	reads    []uint32
}

func (r *sessionReader) Read(_ context.Context, filters []*p4v1.Entity) ([]*p4v1.Entity, error) {
	if len(filters) != 1 || filters[0].GetPacketReplicationEngineEntry().GetCloneSessionEntry() == nil {
		return nil, fmt.Errorf("want one clone session filter, got %v", filters)
	}
	id := filters[0].GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetSessionId()
	r.reads = append(r.reads, id)
	if r.fail != nil {
		return nil, r.fail
	}
	if id == 0 {
		if !r.wildcard {
			return nil, fmt.Errorf("device x: read: %w", status.Error(codes.InvalidArgument, "0 is not a valid session id"))
		}
		var out []*p4v1.Entity
		for _, e := range r.sessions {
			out = append(out, e)
		}
		// A stray entity of another kind is dropped by the reader.
		return append(out, p4rttest.L2Entry(1, 1)), nil
	}
	e, ok := r.sessions[id]
	if !ok {
		return nil, fmt.Errorf("device x: read: %w", status.Error(codes.NotFound, "Clone session id does not exist"))
	}
	return []*p4v1.Entity{e}, nil
}

func TestReadCloneSessions(t *testing.T) {
	ctx := context.Background()
	sessions := map[uint32]*p4v1.Entity{1: p4rttest.CloneSession(1, 1), 2: p4rttest.CloneSession(2, 2), 9: p4rttest.CloneSession(9, 9)}
	ids := func(es []*p4v1.Entity) []uint32 {
		var out []uint32
		for _, e := range es {
			out = append(out, e.GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetSessionId())
		}
		slices.Sort(out)
		return out
	}

	r := &sessionReader{wildcard: true, sessions: sessions}
	got, err := reconcile.ReadCloneSessions(ctx, r, []uint32{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []uint32{1, 2, 9}) || len(got) != 3 || !slices.Equal(r.reads, []uint32{0}) {
		t.Fatalf("wildcard: sessions %v after reads %v, want 1, 2, 9 after one wildcard read", ids(got), r.reads)
	}

	// No wildcard: each wanted id on its own, absent ones skipped; the
	// stray session 9 cannot be seen.
	r = &sessionReader{sessions: sessions}
	got, err = reconcile.ReadCloneSessions(ctx, r, []uint32{3, 1, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []uint32{1, 2}) || !slices.Equal(r.reads, []uint32{0, 1, 2, 3}) {
		t.Fatalf("by id: sessions %v after reads %v, want 1, 2 after reads 0, 1, 2, 3", ids(got), r.reads)
	}

	// A failure that says nothing about the wildcard is an error.
	r = &sessionReader{wildcard: true, sessions: sessions, fail: status.Error(codes.Unavailable, "switch gone")}
	if _, err := reconcile.ReadCloneSessions(ctx, r, []uint32{1}); status.Code(err) != codes.Unavailable || len(r.reads) != 1 {
		t.Fatalf("unavailable device: %v after reads %v, want UNAVAILABLE after one read", err, r.reads)
	}
}

func TestDefaultEntries(t *testing.T) {
	drop := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)
	fwd := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{0, 5})
	routes := p4rttest.L2Entries(1, 3)
	for _, tc := range []struct {
		name             string
		desired, current []*p4v1.Entity
		modify, same     int
	}{
		{"same default", append(slices.Clone(routes), drop), append(slices.Clone(routes), drop), 0, 4},
		{"changed default restored", append(slices.Clone(routes), drop), append(slices.Clone(routes), fwd), 1, 3},
		{"default not read", append(slices.Clone(routes), drop), routes, 1, 3},
		{"device default not desired: left alone", routes, append(slices.Clone(routes), fwd), 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := reconcile.Compute(tc.desired, tc.current)
			if err != nil {
				t.Fatal(err)
			}
			if d.Count(reconcile.Modify) != tc.modify || d.Count(reconcile.Insert)+d.Count(reconcile.Delete) != 0 || d.Unchanged != tc.same {
				t.Fatalf("%s, want %d modify, %d unchanged, no insert or delete", d.Summary(), tc.modify, tc.same)
			}
			if tc.modify == 1 && !proto.Equal(d.Changes[0].Entity, drop) {
				t.Fatalf("modify writes %v, want the desired default", d.Changes[0].Entity)
			}
		})
	}
}

// ReadState asks for tables, clone sessions and default entries in one
// Read RPC; a server that refuses the clone session wildcard is read again
// one kind at a time. Both give the same state.
func TestReadStateOneRequest(t *testing.T) {
	for _, noWildcard := range []bool{false, true} {
		t.Run(fmt.Sprintf("no wildcard %v", noWildcard), func(t *testing.T) {
			s := p4rttest.Start(p4rttest.Options{DeviceID: 1, NoCloneSessionWildcard: noWildcard})
			t.Cleanup(s.Close)
			c, err := client.New(client.Config{Name: "t", Address: s.Address(), DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
				Transport: client.Transport{Insecure: true}, DialOptions: s.DialOptions()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.WaitPrimary(ctx); err != nil {
				t.Fatal(err)
			}
			info := p4rttest.SampleP4Info()
			if _, err := c.SetPipeline(ctx, info, []byte("{}"), 1); err != nil {
				t.Fatal(err)
			}
			routes := p4rttest.L2Entries(1, 3)
			for _, e := range routes {
				s.Seed(e.GetTableEntry())
			}
			s.SeedCloneSessions(p4rttest.CloneSession(5, 1).GetPacketReplicationEngineEntry().GetCloneSessionEntry())
			s.SetDefault(p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{0, 5}).GetTableEntry())
			idx, err := infoindex.New(info)
			if err != nil {
				t.Fatal(err)
			}
			desired := append(slices.Clone(routes), p4rttest.CloneSession(5, 1), p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction))
			s.ResetStats()
			got, err := reconcile.ReadState(ctx, c, idx, desired)
			if err != nil {
				t.Fatal(err)
			}
			tables, sessions, defaults := 0, 0, 0
			for _, e := range got {
				switch {
				case e.GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetSessionId() == 5:
					sessions++
				case e.GetTableEntry().GetIsDefaultAction():
					defaults++
				case e.GetTableEntry() != nil:
					tables++
				}
			}
			wantReads := 1
			if noWildcard {
				// The refused one, then tables, the wildcard again, session
				// 5 and the defaults.
				wantReads = 1 + 4
			}
			if tables != 3 || sessions != 1 || defaults != 1 || len(got) != 5 || s.Stats().ReadRPCs != wantReads {
				t.Fatalf("read %d entries, %d clone sessions, %d defaults (%d entities) in %d Read RPCs; want 3, 1, 1 in %d",
					tables, sessions, defaults, len(got), s.Stats().ReadRPCs, wantReads)
			}
		})
	}
}
