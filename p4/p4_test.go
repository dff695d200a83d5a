package p4_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

type program struct {
	name   string
	schema func(*fabric.Fabric) *schema.Program
	emit   func(*fabric.Fabric) ([]byte, error)
}

var programs = []program{
	{"mrc_switch", schema.Switch, emit.Switch},
	{"mrc_nic", schema.NIC, emit.NIC},
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./p4 -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review the change and run go test ./p4 -run Golden -update", path)
	}
}

// TestGoldenTiny pins the P4 programs and P4Info generated for the tiny
// fabric: a change to either is a reviewed change of the golden files.
func TestGoldenTiny(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range programs {
		src, err := prog.emit(f)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "tiny/"+prog.name+".p4", src)
		info, err := p4infogen.Text(p4infogen.Build(prog.schema(f)))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "tiny/"+prog.name+".p4info.txtpb", info)
	}
	// The Tofino switch programs share the switch's P4Info (same schema).
	for _, chip := range []emit.Chip{emit.Tofino2, emit.Tofino} {
		src, err := emit.SwitchTofino(f, chip)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "tiny/mrc_switch_"+chip.Arch()+".p4", src)
	}
	// The PNA NIC program shares the NIC's P4Info.
	src, err := emit.NICPNA(f)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tiny/mrc_nic_pna.p4", src)
}

// TestPNADeclaresSchema checks that the PNA NIC program declares every
// table, action and counter of the NIC schema with its @id and full name
// (the promise that lets the BMv2 NIC's entries apply), on fabrics whose
// EV set and receive window are not powers of two too (x * k is written
// as shifts), and uses nothing p4c-dpdk cannot compile: no 128-bit field,
// no multiplication, no v1model.
func TestPNADeclaresSchema(t *testing.T) {
	for _, preset := range []string{"tiny", "small", "mrc-131k"} {
		f, err := fabric.FromPreset(preset)
		if err != nil {
			t.Fatal(err)
		}
		src, err := emit.NICPNA(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		want := func(what string) {
			if !strings.Contains(text, what) {
				t.Errorf("%s: PNA program lacks %q", preset, what)
			}
		}
		want("#include <pna.p4>")
		want("PNA_NIC(")
		s := schema.NIC(f)
		for _, a := range s.Actions {
			want(fmt.Sprintf("@name(\".%s\") @id(%#08x) action %s(", a.FullName(), a.ID, a.Name))
		}
		for _, tb := range s.Tables {
			want(fmt.Sprintf("@name(\".%s\")\n    @id(%#08x)\n    table %s {", tb.FullName(), tb.ID, tb.Name))
			want(fmt.Sprintf("size = %d;", tb.Size))
		}
		for _, c := range s.Counters {
			want(fmt.Sprintf("@name(\".%s\") @id(%#08x) Counter<bit<32>, bit<32>>(%d, PNA_CounterType_t.", c.FullName(), c.ID, c.Size))
		}
		var code strings.Builder // the program without its comments
		for _, line := range strings.Split(text, "\n") {
			line, _, _ = strings.Cut(line, "//")
			code.WriteString(line + "\n")
		}
		for _, bad := range []string{"bit<128>", "v1model", "standard_metadata", " * ", "resubmit", "clone", "truncate("} {
			if strings.Contains(code.String(), bad) {
				t.Errorf("%s: PNA program contains %q", preset, bad)
			}
		}
	}
}

// TestTofinoDeclaresSchema checks that each Tofino switch program declares
// every table, action and counter of the switch schema with its @id and
// name, the promise that lets the BMv2 switch's entries and P4Info apply.
func TestTofinoDeclaresSchema(t *testing.T) {
	f, err := fabric.FromPreset("small")
	if err != nil {
		t.Fatal(err)
	}
	s := schema.Switch(f)
	for _, chip := range []emit.Chip{emit.Tofino2, emit.Tofino} {
		src, err := emit.SwitchTofino(f, chip)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		want := func(what string) {
			if !strings.Contains(text, what) {
				t.Errorf("%s program lacks %q", chip, what)
			}
		}
		want("#include <" + chip.Arch() + ".p4>")
		for _, a := range s.Actions {
			want(fmt.Sprintf("@id(%#08x) action %s(", a.ID, a.Name))
		}
		for _, tb := range s.Tables {
			want(fmt.Sprintf("@id(%#08x)\n    table %s {", tb.ID, tb.Name))
			want(fmt.Sprintf("size = %d;", tb.Size))
		}
		for _, c := range s.Counters {
			want(fmt.Sprintf("Counter<bit<64>, bit<%d>>(%d, CounterType_t.", emit.IndexBits(c.Size), c.Size))
			want(") " + c.Name + ";")
		}
		if strings.Contains(text, "<v1model.p4>") || strings.Contains(text, "standard_metadata") {
			t.Errorf("%s program uses v1model", chip)
		}
	}
	if _, err := emit.SwitchTofino(f, "tofino3"); err == nil {
		t.Error("SwitchTofino accepted chip tofino3")
	}
}

// TestSchemaIDs checks what p4c would refuse or silently renumber: IDs with
// the right type prefix, unique, and every table's actions declared.
func TestSchemaIDs(t *testing.T) {
	f, _ := fabric.FromPreset("small")
	for _, prog := range programs {
		s := prog.schema(f)
		seen := map[uint32]string{}
		check := func(id uint32, prefix uint32, name string) {
			if id>>24 != prefix {
				t.Errorf("%s: %s has id %#x, want prefix %#x", s.Name, name, id, prefix)
			}
			if other, dup := seen[id]; dup {
				t.Errorf("%s: %s and %s share id %#x", s.Name, name, other, id)
			}
			seen[id] = name
		}
		declared := map[*schema.Action]bool{}
		for _, a := range s.Actions {
			check(a.ID, schema.PrefixAction, a.FullName())
			declared[a] = true
		}
		for _, tb := range s.Tables {
			check(tb.ID, schema.PrefixTable, tb.FullName())
			for _, r := range tb.Actions {
				if !declared[r.Action] {
					t.Errorf("%s: table %s uses undeclared action %s", s.Name, tb.FullName(), r.Action.FullName())
				}
			}
			if !declared[tb.Default] {
				t.Errorf("%s: table %s default %s undeclared", s.Name, tb.FullName(), tb.Default.FullName())
			}
		}
		for _, c := range s.Counters {
			check(c.ID, schema.PrefixCounter, c.FullName())
		}
		for _, r := range s.Registers {
			check(r.ID, schema.PrefixRegister, r.FullName())
		}
	}
}

// TestEntriesMatchP4Info validates every generated entry of tiny and small
// against the P4Info (the protobuf, as a device would see it), not against
// the schema the generator used.
func TestEntriesMatchP4Info(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		f, err := fabric.FromPreset(preset)
		if err != nil {
			t.Fatal(err)
		}
		p := plan.New(f)
		g := tables.NewGenerator(p)
		check := func(what string, prog *schema.Program, entries []entry.Entry) {
			idx, err := infoindex.New(p4infogen.Build(prog))
			if err != nil {
				t.Fatal(err)
			}
			var ents []*p4v1.Entity
			for i := range entries {
				ents = append(ents, entries[i].Proto())
			}
			if err := push.Validate(idx, ents); err != nil {
				t.Errorf("%s %s: %v", preset, what, err)
			}
		}
		for _, s := range p.Switches() {
			check(p.Name(s), g.Switch, g.SwitchEntries(s, nil))
		}
		check("nic common", g.NIC, g.NICCommonEntries())
		for i := 0; i < f.Hosts(); i++ {
			check(p.HostName(p.HostByIndex(i)), g.NIC, g.NICEntries(p.HostByIndex(i), nil))
		}
	}
}

// TestP4InfoValidatorCatches proves TestEntriesMatchP4Info can fail: a
// parameter one bit too wide is refused.
func TestP4InfoValidatorCatches(t *testing.T) {
	f, _ := fabric.FromPreset("tiny")
	p := plan.New(f)
	g := tables.NewGenerator(p)
	e := g.SwitchEntries(p.Switches()[0], nil)[1]
	ent := e.Proto()
	ent.GetTableEntry().GetAction().GetAction().Params[0].Value = []byte{0x02, 0x00} // port 512: 10 bits
	idx, err := infoindex.New(p4infogen.Build(g.Switch))
	if err != nil {
		t.Fatal(err)
	}
	if err := push.Validate(idx, []*p4v1.Entity{ent}); err == nil {
		t.Fatal("a 10-bit value in a 9-bit parameter was accepted")
	}
}

// TestCompileWithP4C compiles both programs of every preset with
// p4c-bm2-ss and checks p4c's P4Info equals mrcgen's. It skips when p4c is
// not installed, unless MRCGEN_REQUIRE_BMV2=1.
func TestCompileWithP4C(t *testing.T) {
	compiler, err := p4c.Find("")
	if errors.Is(err, p4c.ErrNotFound) {
		if os.Getenv("MRCGEN_REQUIRE_BMV2") == "1" {
			t.Fatalf("MRCGEN_REQUIRE_BMV2=1 but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, preset := range fabric.PresetNames() {
		f, err := fabric.FromPreset(preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, prog := range programs {
			t.Run(preset+"/"+prog.name, func(t *testing.T) {
				dir := t.TempDir()
				src, err := prog.emit(f)
				if err != nil {
					t.Fatal(err)
				}
				p4 := filepath.Join(dir, prog.name+".p4")
				if err := os.WriteFile(p4, src, 0o644); err != nil {
					t.Fatal(err)
				}
				jsonOut, infoOut := filepath.Join(dir, prog.name+".json"), filepath.Join(dir, prog.name+".p4info.txtpb")
				if err := p4c.Compile(context.Background(), compiler, p4, jsonOut, infoOut); err != nil {
					t.Fatalf("%+v", err)
				}
				got, err := p4c.ReadP4Info(infoOut)
				if err != nil {
					t.Fatal(err)
				}
				if diffs := p4infogen.Diff(p4infogen.Build(prog.schema(f)), got); diffs != nil {
					for _, d := range diffs {
						t.Error(d)
					}
				}
			})
		}
	}
}
