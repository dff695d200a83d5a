package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4info"
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

	idx, err := p4info.New(p4rttest.SampleP4Info())
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
	idx, err := p4info.New(p4rttest.SampleP4Info())
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
