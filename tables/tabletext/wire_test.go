package tabletext

import (
	"bytes"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// slowWire is the reference ParseWire answers as: proto.Unmarshal of the
// update, then FromProto.
func slowWire(prog *schema.Program, upd []byte) (entry.Entry, error) {
	u, err := slowUpdate(upd)
	if err != nil {
		return entry.Entry{}, err
	}
	if u.GetType() != p4v1.Update_INSERT || u.GetEntity().GetTableEntry() == nil {
		return entry.Entry{}, errNotFast
	}
	return entry.FromProto(prog, u.GetEntity().GetTableEntry())
}

// oneUpdate strips the WriteRequest field around a single update.
func oneUpdate(t testing.TB, b []byte) []byte {
	t.Helper()
	_, _, n := protowire.ConsumeTag(b)
	upd, m := protowire.ConsumeBytes(b[n:])
	if n < 0 || m != len(b)-n {
		t.Fatalf("not one update: % x", b)
	}
	return upd
}

// TestWireFastPathTakesWhatWeWrite: every entry of small goes through the
// fast path (no fallback) and reads back as itself; a whole file of them
// reads back in order with the parser's shared buffers.
func TestWireFastPathTakesWhatWeWrite(t *testing.T) {
	g, sw, nic := allEntries(t, "small")
	for _, c := range []struct {
		prog    *schema.Program
		entries []entry.Entry
	}{{g.Switch, sw}, {g.NIC, nic}} {
		var file []byte
		var wp wireParser
		for i := range c.entries {
			b := AppendEntryWire(nil, &c.entries[i], Insert)
			e, ok := wp.entry(c.prog, oneUpdate(t, b))
			if !ok || !e.Equal(&c.entries[i]) {
				t.Fatalf("entry %d: fast path %v, %+v; want %+v", i, ok, e, c.entries[i])
			}
			file = append(file, b...)
		}
		got, err := ParseWire(c.prog, "file", file)
		if err != nil || len(got) != len(c.entries) {
			t.Fatalf("%d entries, %v; want %d", len(got), err, len(c.entries))
		}
		for i := range got {
			if !got[i].Equal(&c.entries[i]) {
				t.Fatalf("entry %d: %+v, want %+v", i, got[i], c.entries[i])
			}
		}
	}
}

// TestWireFallsBack: updates outside the fast path's subset are read by the
// protobuf runtime, and bad ones are refused naming the update.
func TestWireFallsBack(t *testing.T) {
	g, sw, _ := allEntries(t, "tiny")
	e := sw[1]
	// The same entry with its fields in another order (action before
	// match) and an unknown field: legal protobuf, not the fast path.
	pe := e.Proto()
	te := pe.GetTableEntry()
	te.ControllerMetadata = 7
	u, err := proto.Marshal(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: pe})
	if err != nil {
		t.Fatal(err)
	}
	var wp wireParser
	if _, ok := wp.entry(g.Switch, u); ok {
		t.Fatal("fast path took an entry with controller_metadata")
	}
	file := protowire.AppendBytes(protowire.AppendTag(nil, fWriteUpdates, protowire.BytesType), u)
	got, err := ParseWire(g.Switch, "f", file)
	if err != nil || len(got) != 1 || !got[0].Equal(&e) {
		t.Fatalf("fallback: %+v, %v", got, err)
	}

	good := AppendEntryWire(nil, &e, Insert)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut short", good[:len(good)-2], "update 1"},
		{"modify", AppendEntryWire(nil, &e, Modify), "update 1: type MODIFY"},
		{"other field", protowire.AppendVarint(protowire.AppendTag(append([]byte(nil), good...), 1, protowire.VarintType), 1), "field 1 of a WriteRequest"},
		{"clone session", AppendCloneSessionWire(nil, schema.CloneSession{ID: 1, Port: 2}, Insert), "update 1 is not a table entry"},
		{"no such table", bytes.Replace(good, protowire.AppendVarint(nil, uint64(e.Table.ID)), protowire.AppendVarint(nil, uint64(e.Table.ID)+1000), 1), "no table"},
	} {
		_, err := ParseWire(g.Switch, "f.binpb", c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "f.binpb") {
			t.Errorf("%s: %v, want an error naming f.binpb and %q", c.name, err, c.want)
		}
	}
}

// TestParseEntitiesWire: clone sessions and table entries come back as the
// entities proto.Unmarshal gives.
func TestParseEntitiesWire(t *testing.T) {
	g, _, nic := allEntries(t, "tiny")
	cs := schema.CloneSession{ID: 3, Port: 0}
	data := AppendCloneSessionWire(nil, cs, Insert)
	data = AppendEntryWire(data, &nic[0], Insert)
	var req p4v1.WriteRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&p4v1.WriteRequest{Updates: req.Updates[:1]})
	if err != nil || !bytes.Equal(want, AppendCloneSessionWire(nil, cs, Insert)) {
		t.Fatalf("clone session: % x, proto.Marshal gives % x (%v)", AppendCloneSessionWire(nil, cs, Insert), want, err)
	}
	got, err := ParseEntitiesWire(g.NIC, "f", data)
	if err != nil || len(got) != 2 {
		t.Fatalf("%v, %v", got, err)
	}
	if !proto.Equal(got[0], entry.CloneSessionProto(cs)) || !proto.Equal(got[1], nic[0].Proto()) {
		t.Fatalf("got %v", got)
	}
	for i, u := range req.Updates {
		if !proto.Equal(got[i], u.Entity) {
			t.Errorf("entity %d: %v, proto.Unmarshal gives %v", i, got[i], u.Entity)
		}
	}
}

// FuzzParseWire: whenever the fast path accepts an update, proto.Unmarshal
// + FromProto accept it too and agree.
func FuzzParseWire(f *testing.F) {
	g, sw, nic := allEntries(f, "tiny")
	for i := range sw {
		f.Add(oneUpdate(f, AppendEntryWire(nil, &sw[i], Insert)), false)
	}
	for i := range nic {
		f.Add(oneUpdate(f, AppendEntryWire(nil, &nic[i], Insert)), true)
	}
	f.Fuzz(func(t *testing.T, upd []byte, isNIC bool) {
		prog := g.Switch
		if isNIC {
			prog = g.NIC
		}
		var wp wireParser
		fast, ok := wp.entry(prog, upd)
		if !ok {
			return
		}
		slow, err := slowWire(prog, upd)
		if err != nil || !fast.Equal(&slow) {
			t.Fatalf("% x:\nfast %+v\nslow %+v (%v)", upd, fast, slow, err)
		}
	})
}

// TestWireEncoderIsAppendEntryWire: the encoder's bytes are AppendEntryWire's
// for every entry of tiny and small, one encoder for all (layouts reused
// across devices and tables), and for entries whose values change length,
// are zero, have a priority or another update type.
func TestWireEncoderIsAppendEntryWire(t *testing.T) {
	var w WireEncoder
	check := func(e *entry.Entry, typ UpdateType) {
		t.Helper()
		want := AppendEntryWire([]byte{0xaa}, e, typ)
		if got := w.Append([]byte{0xaa}, e, typ); !bytes.Equal(got, want) {
			t.Fatalf("%s %+v: % x, want % x", e.Table.FullName(), e, got, want)
		}
	}
	for _, preset := range []string{"tiny", "small"} {
		_, sw, nic := allEntries(t, preset)
		for _, entries := range [][]entry.Entry{sw, nic} {
			for i := range entries {
				check(&entries[i], Insert)
			}
		}
	}
	_, sw, nic := allEntries(t, "small")
	for _, e := range []entry.Entry{sw[1], nic[0], nic[len(nic)-1]} {
		for _, v := range []uint64{0, 1, 0x80, 0xff, 0x100, 0xffffff, 1 << 40, 1<<48 - 1} {
			e.Match = append([]entry.Match(nil), e.Match...)
			e.Params = append([]uint64(nil), e.Params...)
			e.Match[0].Value = v & (1<<uint(e.Table.Keys[0].Bits) - 1)
			if len(e.Params) > 0 {
				e.Params[len(e.Params)-1] = v & 0xffff
			}
			for _, typ := range []UpdateType{Insert, Modify, Delete} {
				check(&e, typ)
			}
			e.Priority = 3
			check(&e, Insert)
			e.Priority = 0
		}
	}
}
