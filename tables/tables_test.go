package tables_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
)

func generator(t testing.TB, preset string) *tables.Generator {
	t.Helper()
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	return tables.NewGenerator(plan.New(f))
}

// group is a set of entries of one program, named for messages.
type group struct {
	name    string
	prog    *schema.Program
	entries []tables.Entry
}

// allGroups lists every device's entries: every switch, the NIC common
// tables, every NIC row and every NIC port.
func allGroups(g *tables.Generator) []group {
	p, f := g.Plan, g.Plan.F
	var out []group
	for _, s := range p.Switches() {
		out = append(out, group{p.Name(s), g.Switch, g.SwitchEntries(s, nil)})
	}
	out = append(out, group{"nic common", g.NIC, g.NICCommonEntries()})
	for r := 0; r < f.T0Count; r++ {
		out = append(out, group{fmt.Sprintf("nic row %d", r), g.NIC, g.NICRowEntries(r, nil)})
	}
	for k := 0; k < f.T0Down; k++ {
		out = append(out, group{fmt.Sprintf("nic port %d", k), g.NIC, g.NICPortEntries(k, nil)})
	}
	return out
}

func sameEntry(a, b tables.Entry) bool {
	return a.Table == b.Table && a.Action == b.Action && a.Priority == b.Priority &&
		slices.Equal(a.Match, b.Match) && slices.Equal(a.Params, b.Params)
}

// TestTextIsProto proves that the hand-written text form and the protobuf
// form of every entry of tiny and small are the same message, and that
// FromProto inverts Proto.
func TestTextIsProto(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		t.Run(preset, func(t *testing.T) {
			g := generator(t, preset)
			n := 0
			for _, grp := range allGroups(g) {
				for i, e := range grp.entries {
					if err := e.Validate(); err != nil {
						t.Fatalf("%s entry %d: %v", grp.name, i, err)
					}
					checkEntry(t, grp.prog, e, fmt.Sprintf("%s entry %d", grp.name, i))
					n++
				}
			}
			if n == 0 {
				t.Fatal("no entries")
			}
		})
	}
}

func checkEntry(t *testing.T, prog *schema.Program, e tables.Entry, what string) {
	t.Helper()
	for _, typ := range []tables.UpdateType{tables.Insert, tables.Modify, tables.Delete} {
		text := e.AppendText([]byte("# header\n"), typ)
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
	back, err := tables.FromProto(prog, e.Proto().GetTableEntry())
	if err != nil {
		t.Fatalf("%s: FromProto: %v", what, err)
	}
	if !sameEntry(back, e) {
		t.Fatalf("%s: FromProto(Proto()) = %+v, want %+v", what, back, e)
	}
}

// TestTernaryAndLPMText covers the match kinds the generated tables do not
// use today: a runtime ternary entry (with priority) of the NIC program and
// an LPM entry of a test program.
func TestTernaryAndLPMText(t *testing.T) {
	g := generator(t, "tiny")
	evState := g.NIC.Table(schema.NICEVState)
	var bad *schema.Action
	for _, r := range evState.Actions {
		if r.Action.Name == "ev_assumed_bad" {
			bad = r.Action
		}
	}
	e := tables.Entry{Table: evState, Action: bad, Match: []tables.Match{{Value: 0x10040000, Mask: 0xfffc0000}}, Priority: 7}
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
	for _, m := range [][]tables.Match{
		{{Value: 0}, {Value: 0xfcbb_bb00_0000_0000, Mask: 24}},
		{{Value: 4095}, {Value: 0xffff_ffff_ffff_ffff, Mask: 64}},
		{{Value: 1}, {Value: 0, Mask: 0}},
	} {
		e := tables.Entry{Table: lpm, Action: fwd, Match: m, Params: []uint64{511, 0x0000_0a0b_0c0d}}
		if err := e.Validate(); err != nil {
			t.Fatal(err)
		}
		checkEntry(t, prog, e, fmt.Sprintf("lpm entry %v", m))
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		want string
	}{{0, "00"}, {1, "01"}, {0xff, "ff"}, {0x100, "0100"}, {0xfcbbbb001400, "fcbbbb001400"}, {1 << 63, "8000000000000000"}} {
		if got := fmt.Sprintf("%x", tables.Canonical(nil, c.v)); got != c.want {
			t.Errorf("Canonical(%#x) = %s, want %s", c.v, got, c.want)
		}
	}
}

// validSwitchRoute returns a fresh P4Runtime message of a valid route to break.
func validSwitchRoute(t *testing.T) (*tables.Generator, *p4v1.TableEntry) {
	g := generator(t, "tiny")
	entries := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, nil)
	for _, e := range entries {
		if e.Table.FullName() == schema.SwitchRoute {
			return g, e.Proto().GetTableEntry()
		}
	}
	t.Fatal("no route entry")
	return nil, nil
}

func TestFromProtoRejects(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(te *p4v1.TableEntry)
		wants []string
	}{
		{"unknown table", func(te *p4v1.TableEntry) { te.TableId = 0x02000099 }, []string{"no table with id 0x2000099"}},
		{"unknown field", func(te *p4v1.TableEntry) { te.Match[0].FieldId = 9 }, []string{"has no match field 9"}},
		{"field twice", func(te *p4v1.TableEntry) { te.Match = append(te.Match, te.Match[0]) }, []string{"dst_usid given twice"}},
		{"missing exact field", func(te *p4v1.TableEntry) { te.Match = nil }, []string{"exact field dst_usid missing"}},
		{"wrong match kind", func(te *p4v1.TableEntry) {
			te.Match[0].FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{1}, PrefixLen: 8}}
		}, []string{"want an exact match"}},
		{"non-canonical key", func(te *p4v1.TableEntry) {
			v := te.Match[0].GetExact().Value
			te.Match[0].GetExact().Value = append([]byte{0}, v...)
		}, []string{"not canonical", "leading zero"}},
		{"empty key", func(te *p4v1.TableEntry) { te.Match[0].GetExact().Value = nil }, []string{"empty bytestring"}},
		{"key wider than the field", func(te *p4v1.TableEntry) {
			te.Match[0].GetExact().Value = []byte{1, 0, 0, 0, 0, 0, 0}
		}, []string{"does not fit 48 bits"}},
		{"key wider than any field", func(te *p4v1.TableEntry) {
			te.Match[0].GetExact().Value = []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}
		}, []string{"9 bytes is wider"}},
		{"no action", func(te *p4v1.TableEntry) { te.Action = nil }, []string{"no direct action"}},
		{"unknown action", func(te *p4v1.TableEntry) { te.Action.GetAction().ActionId = 0x01000099 }, []string{"no action with id 0x1000099"}},
		{"action of the wrong table", func(te *p4v1.TableEntry) {
			te.Action.GetAction().ActionId = 0x01000001
			te.Action.GetAction().Params = nil
		},
			[]string{"action SwitchIngress.usid_shift is not allowed"}},
		{"default-only action", func(te *p4v1.TableEntry) {
			te.Action.GetAction().ActionId = 0x01000005
			te.Action.GetAction().Params = nil
		},
			[]string{"action SwitchIngress.route_miss is not allowed"}},
		{"missing param", func(te *p4v1.TableEntry) { te.Action.GetAction().Params = nil }, []string{"0 params, want 1"}},
		{"unknown param", func(te *p4v1.TableEntry) { te.Action.GetAction().Params[0].ParamId = 2 }, []string{"has no param 2"}},
		{"param wider than its field", func(te *p4v1.TableEntry) { te.Action.GetAction().Params[0].Value = []byte{2, 0} },
			[]string{"param port", "does not fit 9 bits"}},
		{"non-canonical param", func(te *p4v1.TableEntry) { te.Action.GetAction().Params[0].Value = []byte{0, 3} },
			[]string{"param port", "not canonical"}},
		{"priority on an exact table", func(te *p4v1.TableEntry) { te.Priority = 1 }, []string{"priority 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, te := validSwitchRoute(t)
			if _, err := tables.FromProto(g.Switch, te); err != nil {
				t.Fatalf("the unbroken entry: %v", err)
			}
			tc.edit(te)
			e, err := tables.FromProto(g.Switch, te)
			if err == nil {
				t.Fatalf("FromProto accepted %v as %+v", prototext.Format(te), e)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// A ternary table needs a priority, and its mask is checked too.
	g := generator(t, "tiny")
	evState := g.NIC.Table(schema.NICEVState)
	te := &p4v1.TableEntry{TableId: evState.ID, Match: []*p4v1.FieldMatch{{FieldId: 1,
		FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: []byte{1}, Mask: []byte{1}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000105}}}}
	if _, err := tables.FromProto(g.NIC, te); err == nil || !strings.Contains(err.Error(), "ternary tables need a priority") {
		t.Errorf("ternary without priority: %v", err)
	}
	te.Priority = 1
	if _, err := tables.FromProto(g.NIC, te); err != nil {
		t.Errorf("ternary with priority: %v", err)
	}
	te.Match[0].GetTernary().Mask = []byte{1, 0, 0, 0, 0}
	if _, err := tables.FromProto(g.NIC, te); err == nil || !strings.Contains(err.Error(), "mask") {
		t.Errorf("ternary mask wider than 32 bits: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	g := generator(t, "tiny")
	base := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 1, Index: 1}, nil)
	var route, thr tables.Entry
	for _, e := range base {
		switch e.Table.FullName() {
		case schema.SwitchRoute:
			route = e
		case schema.SwitchQueueThresholds:
			thr = e
		}
	}
	clone := func(e tables.Entry) tables.Entry {
		e.Match, e.Params = slices.Clone(e.Match), slices.Clone(e.Params)
		return e
	}
	tests := []struct {
		name string
		e    func() tables.Entry
		want string
	}{
		{"key value over 48 bits", func() tables.Entry { e := clone(route); e.Match[0].Value = 1 << 48; return e }, "value 0x1000000000000 does not fit 48 bits"},
		{"port over 9 bits", func() tables.Entry { e := clone(route); e.Params[0] = 512; return e }, "param port: value 0x200 does not fit 9 bits"},
		{"trim_bytes over 16 bits", func() tables.Entry { e := clone(thr); e.Params[2] = 1 << 16; return e }, "param trim_bytes"},
		{"to_host over 1 bit", func() tables.Entry { e := clone(thr); e.Match[0].Value = 2; return e }, "key to_host"},
		{"too few match values", func() tables.Entry { e := clone(route); e.Match = nil; return e }, "0 match values for 1 key fields"},
		{"too many params", func() tables.Entry { e := clone(route); e.Params = append(e.Params, 1); return e }, "2 values for 1 parameters"},
		{"action of another table", func() tables.Entry { e := clone(route); e.Action = thr.Action; return e }, "is not allowed in entries"},
		{"priority on an exact table", func() tables.Entry { e := clone(route); e.Priority = 3; return e }, "priority 3"},
	}
	if err := route.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		e := tc.e()
		err := e.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestEntryCounts(t *testing.T) {
	for _, preset := range fabric.PresetNames() {
		t.Run(preset, func(t *testing.T) {
			g := generator(t, preset)
			p, f := g.Plan, g.Plan.F
			switches := p.Switches()
			if preset == "mrc-131k" {
				// One T0 and one T1 of every plane's far corner: enough to
				// check the formula, cheap enough for every test run.
				switches = nil
				for pl := 0; pl < f.Planes; pl++ {
					switches = append(switches, plan.Switch{Role: plan.RoleT0, Plane: pl, Index: f.T0Count - 1},
						plan.Switch{Role: plan.RoleT1, Plane: pl, Index: f.T1Count - 1})
				}
			}
			var buf []tables.Entry
			for _, s := range switches {
				buf = g.SwitchEntries(s, buf)
				want := 1 + f.T1Count + f.T0Down + 2 // own, routes up and down, two threshold classes
				if s.Role == plan.RoleT1 {
					want = 1 + f.T0Count + 1
				}
				if len(buf) != want || g.SwitchEntryCount(s) != want {
					t.Fatalf("%s: %d entries, SwitchEntryCount %d, want %d", p.Name(s), len(buf), g.SwitchEntryCount(s), want)
				}
				// The route table fits the program's declared size.
				routes := 0
				for _, e := range buf {
					if e.Table.FullName() == schema.SwitchRoute {
						routes++
					}
				}
				if routes > g.Switch.Table(schema.SwitchRoute).Size {
					t.Fatalf("%s: %d routes, table size %d", p.Name(s), routes, g.Switch.Table(schema.SwitchRoute).Size)
				}
			}
			common := g.NICCommonEntries()
			if want := f.EV.SetSize + f.Planes*(f.T0Count+f.T1Count+f.T0Down); len(common) != want {
				t.Fatalf("NIC common: %d entries, want %d", len(common), want)
			}
			perTable := map[string]int{}
			for _, e := range common {
				perTable[e.Table.FullName()]++
			}
			for name, n := range perTable {
				if size := g.NIC.Table(name).Size; n > size {
					t.Fatalf("NIC common: %d entries in %s of size %d", n, name, size)
				}
			}
			h := p.HostByIndex(f.Hosts() - 1)
			if n := len(g.NICEntries(h, nil)); n != g.NICEntryCount() || n != 2*f.Planes {
				t.Fatalf("NIC %+v: %d entries, NICEntryCount %d", h, n, g.NICEntryCount())
			}
		})
	}
}

// TestSwitchEntriesContent spells out the tables of one tiny T0 and T1.
func TestSwitchEntriesContent(t *testing.T) {
	g := generator(t, "tiny")
	render := func(s plan.Switch) string {
		var b strings.Builder
		for _, e := range g.SwitchEntries(s, nil) {
			fmt.Fprintf(&b, "%s %s", e.Table.Name, e.Action.Name)
			for _, m := range e.Match {
				fmt.Fprintf(&b, " %#x", m.Value)
			}
			for _, v := range e.Params {
				fmt.Fprintf(&b, " %d", v)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	// Plane 1, T0 row 1: own uSID 0x1401; T1s 0x1800, 0x1801 on up ports 2, 3;
	// down ports 0x1c00, 0x1c01 on ports 0, 1.
	wantT0 := `my_usid usid_shift 0xfcbbbb001401
usid_route forward 0xfcbbbb001800 2
usid_route forward 0xfcbbbb001801 3
usid_route forward_to_host 0xfcbbbb001c00 0
usid_route forward_to_host 0xfcbbbb001c01 1
queue_thresholds set_queue_thresholds 0x0 16 8 134
queue_thresholds set_queue_thresholds 0x1 16 8 134
`
	if got := render(plan.Switch{Role: plan.RoleT0, Plane: 1, Index: 1}); got != wantT0 {
		t.Errorf("p1-t0-1:\n%s\nwant\n%s", got, wantT0)
	}
	wantT1 := `my_usid usid_shift 0xfcbbbb000801
usid_route forward 0xfcbbbb000400 0
usid_route forward 0xfcbbbb000401 1
queue_thresholds set_queue_thresholds 0x0 16 8 134
`
	if got := render(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 1}); got != wantT1 {
		t.Errorf("p0-t1-1:\n%s\nwant\n%s", got, wantT1)
	}
}

// TestEntriesReuseDst checks that a dst slice is reused, not aliased into
// a previous result's values.
func TestEntriesReuseDst(t *testing.T) {
	g := generator(t, "small")
	a := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, nil)
	want := slices.Clone(a)
	for i := range want {
		want[i].Match, want[i].Params = slices.Clone(want[i].Match), slices.Clone(want[i].Params)
	}
	b := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 3, Index: 7}, a)
	c := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, nil)
	for i := range c {
		if !sameEntry(c[i], want[i]) {
			t.Fatalf("entry %d changed: %+v", i, c[i])
		}
	}
	if sameEntry(b[0], want[0]) {
		t.Fatalf("p3-t0-7 has p0-t0-0's own uSID")
	}
}

func TestReadFile(t *testing.T) {
	g := generator(t, "small")
	dir := t.TempDir()
	for _, grp := range allGroups(g)[:3] {
		buf := []byte("# " + grp.name + "\n\n")
		for i := range grp.entries {
			buf = grp.entries[i].AppendText(buf, tables.Insert)
		}
		path := filepath.Join(dir, "one.txtpb")
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := tables.ReadFile(grp.prog, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(grp.entries) {
			t.Fatalf("%s: read %d entries, wrote %d", grp.name, len(got), len(grp.entries))
		}
		for i := range got {
			if !sameEntry(got[i], grp.entries[i]) {
				t.Fatalf("%s entry %d: read %+v, wrote %+v", grp.name, i, got[i], grp.entries[i])
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
	got, err := tables.ParseWriteRequest([]byte(pretty))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, req) {
		t.Fatalf("multi-line text parses to\n%v", prototext.Format(got))
	}

	// A broken line is reported with its number.
	var buf []byte
	for i := range common[:3] {
		buf = common[i].AppendText(buf, tables.Insert)
	}
	buf = append(buf, "updates{type:INSERT entity{table_entry{table_id:1 bogus:2}}}\n"...)
	if _, err := tables.ParseWriteRequest(buf); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("broken line 4: %v", err)
	}
	path := filepath.Join(dir, "broken.txtpb")
	os.WriteFile(path, buf, 0o644)
	if _, err := tables.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile of a broken file: %v", err)
	}
	// An entry the schema refuses is reported with its line.
	e := common[1]
	e.Params = []uint64{1 << 40}
	buf = append(common[0].AppendText(nil, tables.Insert), e.AppendText(nil, tables.Insert)...)
	os.WriteFile(path, buf, 0o644)
	if _, err := tables.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "does not fit 32 bits") {
		t.Errorf("ReadFile of a too-wide param: %v", err)
	}
	// Switch entries are not NIC entries.
	sw := g.SwitchEntries(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0}, nil)
	os.WriteFile(path, sw[0].AppendText(nil, tables.Insert), 0o644)
	if _, err := tables.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), "no table with id") {
		t.Errorf("ReadFile of switch entries as NIC entries: %v", err)
	}
	// A non-table entity.
	os.WriteFile(path, []byte("updates{type:INSERT entity{register_entry{}}}\n"), 0o644)
	if _, err := tables.ReadFile(g.NIC, path); err == nil || !strings.Contains(err.Error(), "not a table entry") {
		t.Errorf("ReadFile of a register entry: %v", err)
	}
	if _, err := tables.ReadFile(g.NIC, filepath.Join(dir, "missing.txtpb")); err == nil {
		t.Errorf("ReadFile of a missing file succeeded")
	}
}
