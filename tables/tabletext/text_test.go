package tabletext_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/internal/tabletest"
	"github.com/mrc-fabric/mrcgen/tables/tabletext"
)

// TestTextIsProto proves that the hand-written text form and the protobuf
// form of every entry of tiny and small are the same message, and that
// FromProto inverts Proto.
func TestTextIsProto(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		t.Run(preset, func(t *testing.T) {
			g := tabletest.Generator(t, preset)
			n := 0
			for _, grp := range tabletest.AllGroups(g) {
				for i, e := range grp.Entries {
					if err := e.Validate(); err != nil {
						t.Fatalf("%s entry %d: %v", grp.Name, i, err)
					}
					checkEntry(t, grp.Prog, e, fmt.Sprintf("%s entry %d", grp.Name, i))
					n++
				}
			}
			if n == 0 {
				t.Fatal("no entries")
			}
		})
	}
}

func checkEntry(t *testing.T, prog *schema.Program, e entry.Entry, what string) {
	t.Helper()
	for _, typ := range []tabletext.UpdateType{tabletext.Insert, tabletext.Modify, tabletext.Delete} {
		text := tabletext.AppendEntry([]byte("# header\n"), &e, typ)
		if !strings.HasSuffix(string(text), "}}}\n") || strings.Count(string(text), "\n") != 2 {
			t.Fatalf("%s: text is not one line: %q", what, text)
		}
		var req p4v1.WriteRequest
		if err := prototext.Unmarshal(text, &req); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, text)
		}
		if len(req.Updates) != 1 {
			t.Fatalf("%s: %d updates", what, len(req.Updates))
		}
		if got := req.Updates[0].Type.String(); got != string(typ) {
			t.Fatalf("%s: update type %s, want %s", what, got, typ)
		}
		if want := e.Proto(); !proto.Equal(req.Updates[0].Entity, want) {
			t.Fatalf("%s: text\n%s\nparses to\n%v\nProto() is\n%v", what, text, prototext.Format(req.Updates[0].Entity), prototext.Format(want))
		}
	}
	checkWire(t, prog, e, what)
	back, err := entry.FromProto(prog, e.Proto().GetTableEntry())
	if err != nil {
		t.Fatalf("%s: FromProto: %v", what, err)
	}
	if !back.Equal(&e) {
		t.Fatalf("%s: FromProto(Proto()) = %+v, want %+v", what, back, e)
	}
}

// TestTernaryAndLPMText covers the match kinds the generated tables do not
// use today: a runtime ternary entry (with priority) of the NIC program and
// an LPM entry of a test program.
func TestTernaryAndLPMText(t *testing.T) {
	g := tabletest.Generator(t, "tiny")
	evState := g.NIC.Table(schema.NICEVState)
	var bad *schema.Action
	for _, r := range evState.Actions {
		if r.Action.Name == "ev_assumed_bad" {
			bad = r.Action
		}
	}
	e := entry.Entry{Table: evState, Action: bad, Match: []entry.Match{{Value: 0x10040000, Mask: 0xfffc0000}}, Priority: 7}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	checkEntry(t, g.NIC, e, "ev_state entry")

	fwd := &schema.Action{ID: 0x01000901, Control: "C", Name: "fwd", Params: []schema.Param{{ID: 1, Name: "port", Bits: 9}, {ID: 2, Name: "mac", Bits: 48}}}
	miss := &schema.Action{ID: 0x01000902, Control: "C", Name: "miss"}
	lpm := &schema.Table{ID: 0x02000901, Control: "C", Name: "lpm",
		Keys:    []schema.Field{{ID: 1, Name: "vrf", Bits: 12, Match: schema.Exact}, {ID: 2, Name: "dst", Bits: 64, Match: schema.LPM}},
		Actions: []schema.ActionRef{{Action: fwd, Scope: schema.TableOnly}, {Action: miss, Scope: schema.DefaultOnly}}, Default: miss}
	prog := &schema.Program{Name: "test", Tables: []*schema.Table{lpm}, Actions: []*schema.Action{fwd, miss}}
	for _, m := range [][]entry.Match{
		{{Value: 0}, {Value: 0xfcbb_bb00_0000_0000, Mask: 24}},
		{{Value: 4095}, {Value: 0xffff_ffff_ffff_ffff, Mask: 64}},
		{{Value: 1}, {Value: 0, Mask: 0}},
	} {
		e := entry.Entry{Table: lpm, Action: fwd, Match: m, Params: []uint64{511, 0x0000_0a0b_0c0d}}
		if err := e.Validate(); err != nil {
			t.Fatal(err)
		}
		checkEntry(t, prog, e, fmt.Sprintf("lpm entry %v", m))
	}
}

func TestReadFile(t *testing.T) {
	g := tabletest.Generator(t, "small")
	dir := t.TempDir()
	for _, grp := range tabletest.AllGroups(g)[:3] {
		buf := []byte("# " + grp.Name + "\n\n")
		for i := range grp.Entries {
			buf = tabletext.AppendEntry(buf, &grp.Entries[i], tabletext.Insert)
		}
		path := filepath.Join(dir, "one.txtpb")
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := tabletext.ReadFile(grp.Prog, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(grp.Entries) {
			t.Fatalf("%s: read %d entries, wrote %d", grp.Name, len(got), len(grp.Entries))
		}
		for i := range got {
			if !got[i].Equal(&grp.Entries[i]) {
				t.Fatalf("%s entry %d: read %+v, wrote %+v", grp.Name, i, got[i], grp.Entries[i])
			}
		}
	}

	// A multi-line text file (as a person or another tool writes it) parses
	// to the same request.
	common := g.NICCommonEntries()
	req := &p4v1.WriteRequest{DeviceId: 1}
	for i := range common[:20] {
		req.Updates = append(req.Updates, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: common[i].Proto()})
	}
	pretty := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Format(req)
	got, err := tabletext.ParseWriteRequest([]byte(pretty))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, req) {
		t.Fatalf("multi-line text parses to\n%v", prototext.Format(got))
	}

	// A broken line is reported with its number.
	var buf []byte
	for i := range common[:3] {
		buf = tabletext.AppendEntry(buf, &common[i], tabletext.Insert)
	}
	buf = append(buf, "updates{type:INSERT entity{table_entry{table_id:1 bogus:2}}}\n"...)
	if _, err := tabletext.ParseWriteRequest(buf); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("broken line 4: %v", err)
	}
	path := filepath.Join(dir, "broken.txtpb")
	os.WriteFile(path, buf, 0o644)
	if _, err := tabletext.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile of a broken file: %v", err)
	}
	// An entry the schema refuses is reported with its line.
	e := common[1]
	e.Params = []uint64{1 << 40}
	buf = append(tabletext.AppendEntry(nil, &common[0], tabletext.Insert), tabletext.AppendEntry(nil, &e, tabletext.Insert)...)
	os.WriteFile(path, buf, 0o644)
	if _, err := tabletext.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "does not fit 32 bits") {
		t.Errorf("ReadFile of a too-wide param: %v", err)
	}
	// Switch entries are not NIC entries.
	sw := g.SwitchEntries(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0}, nil)
	os.WriteFile(path, tabletext.AppendEntry(nil, &sw[0], tabletext.Insert), 0o644)
	if _, err := tabletext.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), "no table with id") {
		t.Errorf("ReadFile of switch entries as NIC entries: %v", err)
	}
	// A non-table entity.
	os.WriteFile(path, []byte("updates{type:INSERT entity{register_entry{}}}\n"), 0o644)
	if _, err := tabletext.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), "not a table entry") {
		t.Errorf("ReadFile of a register entry: %v", err)
	}
	if _, err := tabletext.ReadFile(g.NIC, filepath.Join(dir, "missing.txtpb")); err == nil {
		t.Errorf("ReadFile of a missing file succeeded")
	}
}

// checkWire proves that the wire form of e is the bytes proto.Marshal gives
// for the same WriteRequest, for every update type, and that ParseWire
// reads an INSERT back to e.
func checkWire(t *testing.T, prog *schema.Program, e entry.Entry, what string) {
	t.Helper()
	for _, typ := range []tabletext.UpdateType{tabletext.Insert, tabletext.Modify, tabletext.Delete} {
		got := tabletext.AppendEntryWire([]byte{0xff}, &e, typ)[1:]
		req := &p4v1.WriteRequest{Updates: []*p4v1.Update{{Type: p4v1.Update_Type(p4v1.Update_Type_value[string(typ)]), Entity: e.Proto()}}}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s (%s): wire\n% x\nproto.Marshal\n% x", what, typ, got, want)
		}
	}
	back, err := tabletext.ParseWire(prog, "file", tabletext.AppendEntryWire(nil, &e, tabletext.Insert))
	if err != nil || len(back) != 1 || !back[0].Equal(&e) {
		t.Fatalf("%s: ParseWire = %+v, %v; want %+v", what, back, err, e)
	}
}
