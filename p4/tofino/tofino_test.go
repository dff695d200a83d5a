package tofino_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/p4/tofino"
)

// TestReadReport reads a resource report written by hand after the
// compiler's resources_schema.py: per-table units, totals and stages.
func TestReadReport(t *testing.T) {
	r, err := tofino.ReadReport(emit.Tofino2, "testdata/fake-out")
	if err != nil {
		t.Fatal(err)
	}
	if r.Stages != 20 || r.StagesUsed != 2 {
		t.Errorf("stages %d used %d, want 20 and 2 (stage 2 holds nothing)", r.Stages, r.StagesUsed)
	}
	if r.SRAMs != 3 || r.TCAMs != 1 || r.XbarBytes != 2 || r.HashBits != 2 {
		t.Errorf("totals srams %d tcams %d xbar %d hash %d, want 3 1 2 2", r.SRAMs, r.TCAMs, r.XbarBytes, r.HashBits)
	}
	my := r.Table(schema.SwitchMyUSID)
	if my == nil || my.SRAMs != 1 || my.XbarBytes != 2 || my.HashBits != 2 || my.Size != 4 || len(my.Stages) != 1 || my.Stages[0] != 0 {
		t.Errorf("my_usid: %+v", my)
	}
	route := r.Table(schema.SwitchRoute)
	if route == nil || route.SRAMs != 2 || route.XbarBytes != 1 || route.Size != 8 || len(route.Stages) != 2 {
		t.Errorf("usid_route: %+v (want 2 SRAMs, 1 shared crossbar byte, size 8, stages 0 and 1)", route)
	}
	// Per stage: stage 0 holds my_usid and part of usid_route, stage 1 the
	// rest of usid_route, stage 2 nothing; every stage of the chip is listed.
	if len(r.PerStage) != 20 {
		t.Fatalf("%d stages listed, want 20", len(r.PerStage))
	}
	sumSRAM := 0
	for i, st := range r.PerStage {
		if st.Stage != i {
			t.Errorf("stage %d listed as %d", i, st.Stage)
		}
		sumSRAM += st.SRAMs
	}
	if sumSRAM != r.SRAMs {
		t.Errorf("per-stage SRAMs add up to %d, total %d", sumSRAM, r.SRAMs)
	}
	if st := r.PerStage[2]; st.SRAMs+st.TCAMs+st.XbarBytes != 0 || len(st.Tables) != 0 {
		t.Errorf("stage 2 holds nothing, got %+v", st)
	}
	if !slices.Contains(r.PerStage[0].Tables, "SwitchIngress.my_usid") || !slices.Contains(r.PerStage[1].Tables, "SwitchIngress.usid_route") {
		t.Errorf("stage 0 %v, stage 1 %v", r.PerStage[0].Tables, r.PerStage[1].Tables)
	}
	if r.Table("tbl_mrc_switch123") == nil {
		t.Error("the compiler's own table is not reported")
	}
	if _, err := tofino.ReadReport(emit.Tofino2, t.TempDir()); err == nil || !strings.Contains(err.Error(), "resources.json") {
		t.Errorf("no report: %v", err)
	}
}

// TestCheckBfrt compares the hand-written bfrt.json with the tiny switch
// schema, then with a schema it does not match.
func TestCheckBfrt(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	sw := schema.Switch(f)
	diffs, err := tofino.CheckBfrt("testdata/fake-out", sw)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("tiny: %v %v", diffs, err)
	}
	bad := *sw
	bad.Tables = append([]*schema.Table(nil), sw.Tables...)
	route := *bad.Tables[1]
	route.Size = 100
	route.Keys = []schema.Field{{ID: 1, Name: "dst_usid", Bits: 64, Match: schema.Exact}}
	bad.Tables[1] = &route
	bad.Tables = append(bad.Tables, &schema.Table{Control: "SwitchIngress", Name: "absent"})
	diffs, _ = tofino.CheckBfrt("testdata/fake-out", &bad)
	if got := strings.Join(diffs, "\n"); !strings.Contains(got, "size 8 in bfrt.json, 100") ||
		!strings.Contains(got, "48 bits in bfrt.json, 64") || !strings.Contains(got, "SwitchIngress.absent: not in bfrt.json") {
		t.Errorf("diffs:\n%s", got)
	}
}

func TestFind(t *testing.T) {
	t.Setenv(tofino.EnvVar, "")
	if _, err := tofino.Find("/nonexistent/p4c"); err == nil || !strings.Contains(err.Error(), "/nonexistent/p4c") {
		t.Errorf("explicit missing compiler: %v", err)
	}
	t.Setenv(tofino.EnvVar, "/nonexistent/env-p4c")
	if _, err := tofino.Find(""); err == nil || !strings.Contains(err.Error(), "env-p4c") {
		t.Errorf("missing $%s compiler: %v", tofino.EnvVar, err)
	}
}

func TestArgs(t *testing.T) {
	got := strings.Join(tofino.Args(emit.Tofino2, "x.p4", "out"), " ")
	for _, want := range []string{"--target tofino2 --arch t2na", "-g", "--p4runtime-files out/p4info.txtpb", "-o out x.p4"} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	if got := strings.Join(tofino.Args(emit.Tofino, "x.p4", "out"), " "); !strings.Contains(got, "--target tofino --arch tna") {
		t.Errorf("tofino args %q", got)
	}
}

// compiler returns the Tofino compiler, or skips the test: with
// MRCGEN_REQUIRE_TOFINO=1 a missing compiler fails it.
func compiler(t *testing.T) string {
	t.Helper()
	c, err := tofino.Find("")
	if err != nil {
		if errors.Is(err, tofino.ErrNotFound) && os.Getenv(tofino.RequireEnv) != "1" {
			t.Skipf("%v (set %s=1 to make this a failure)", err, tofino.RequireEnv)
		}
		t.Fatal(err)
	}
	return c
}

// TestCompile compiles the switch program of tiny, small and mrc-131k for
// Tofino2 and of tiny for Tofino, and checks what the compiler reports: the
// program fits the chip's stages, every schema table is there with the
// fabric's size and key widths, and the P4Info equals mrcgen's (but for the
// register, see tofino.Schema). The same program runs on every T0 and T1,
// so mrc-131k's one compilation covers both roles.
func TestCompile(t *testing.T) {
	p4cPath := compiler(t)
	cases := []struct {
		preset string
		chip   emit.Chip
	}{
		{"tiny", emit.Tofino2}, {"small", emit.Tofino2}, {"mrc-131k", emit.Tofino2}, {"tiny", emit.Tofino}, {"mrc-131k", emit.Tofino},
	}
	for _, c := range cases {
		t.Run(c.preset+"/"+string(c.chip), func(t *testing.T) {
			if testing.Short() && c.preset == "mrc-131k" {
				t.Skip("-short")
			}
			f, err := fabric.FromPreset(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			src, err := emit.SwitchTofino(f, c.chip)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "mrc_switch.p4")
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := tofino.Compile(context.Background(), p4cPath, c.chip, path, filepath.Join(dir, "out"))
			if err != nil {
				t.Fatalf("%+v", err)
			}
			r, err := tofino.ReadReport(c.chip, out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.Stages != c.chip.Stages() {
				t.Errorf("the compiler reports %d stages, %s has %d", r.Stages, c.chip, c.chip.Stages())
			}
			if r.StagesUsed == 0 || r.StagesUsed > r.Stages {
				t.Errorf("%d stages used of %d", r.StagesUsed, r.Stages)
			}
			sw := schema.Switch(f)
			for _, tb := range sw.Tables {
				u := r.Table(tb.FullName())
				if u == nil {
					t.Errorf("table %s not in the resource report", tb.FullName())
					continue
				}
				if u.Size < tb.Size {
					t.Errorf("table %s: size %d, the fabric needs %d", tb.FullName(), u.Size, tb.Size)
				}
				if u.SRAMs+u.TCAMs == 0 {
					t.Errorf("table %s holds no memory: %+v", tb.FullName(), u)
				}
			}
			diffs, err := tofino.CheckBfrt(out.Dir, sw)
			if err != nil || len(diffs) > 0 {
				t.Errorf("bfrt.json: %v %v", diffs, err)
			}
			if out.P4Info == "" {
				t.Logf("the compiler wrote no P4Info; tables checked against bfrt.json only")
			} else {
				got, err := p4c.ReadP4Info(out.P4Info)
				if err != nil {
					t.Fatal(err)
				}
				if diffs := tofino.DiffP4Info(sw, c.chip, got); diffs != nil {
					t.Errorf("P4Info differs from mrcgen's: %s", strings.Join(diffs, "; "))
				}
			}
			t.Logf("%s %s: %d of %d stages, %d SRAMs, %d TCAMs, %d hash bits, %d crossbar bytes",
				c.preset, c.chip, r.StagesUsed, r.Stages, r.SRAMs, r.TCAMs, r.HashBits, r.XbarBytes)
		})
	}
}

// TestDiffP4Info: the pipeline prefix and pkg_info the compiler adds are
// not differences; the Tofino2 register width is expected; a changed
// parameter width is a difference.
func TestDiffP4Info(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	sw := schema.Switch(f)
	compiled := func(chip emit.Chip) *p4cfg.P4Info {
		info := p4infogen.Build(tofino.Schema(sw, chip))
		info.PkgInfo.Arch = chip.Arch()
		for _, tb := range info.Tables {
			tb.Preamble.Name = "pipe." + tb.Preamble.Name
		}
		for _, c := range info.Counters {
			c.Preamble.Name = "pipe." + c.Preamble.Name
		}
		return info
	}
	for _, chip := range []emit.Chip{emit.Tofino2, emit.Tofino} {
		if diffs := tofino.DiffP4Info(sw, chip, compiled(chip)); diffs != nil {
			t.Errorf("%s: %v", chip, diffs)
		}
	}
	if len(compiled(emit.Tofino2).Registers) != 1 || compiled(emit.Tofino2).Registers[0].TypeSpec.GetBitstring().GetBit().GetBitwidth() != 32 ||
		len(compiled(emit.Tofino).Registers) != 0 {
		t.Error("tofino.Schema: want one 32-bit register on Tofino2 and none on Tofino")
	}
	// The Tofino compiler names each table's initial default action: the
	// schema's is no difference, another one is.
	withDefaults := compiled(emit.Tofino2)
	for _, tb := range withDefaults.Tables {
		for _, st := range sw.Tables {
			if st.ID == tb.Preamble.Id && st.Default != nil {
				tb.InitialDefaultAction = &p4cfg.TableActionCall{ActionId: st.Default.ID}
			}
		}
	}
	if diffs := tofino.DiffP4Info(sw, emit.Tofino2, withDefaults); diffs != nil {
		t.Errorf("initial default actions as in the schema: %v", diffs)
	}
	withDefaults.Tables[0].InitialDefaultAction.ActionId = withDefaults.Actions[0].Preamble.Id + 0x100
	if diffs := tofino.DiffP4Info(sw, emit.Tofino2, withDefaults); diffs == nil {
		t.Error("a wrong initial default action is not a difference")
	}
	bad := compiled(emit.Tofino2)
	bad.Actions[2].Params[0].Bitwidth = 16
	if diffs := tofino.DiffP4Info(sw, emit.Tofino2, bad); diffs == nil {
		t.Error("a 16-bit port parameter is not a difference")
	}
	if diffs := tofino.DiffP4Info(sw, emit.Tofino2, p4infogen.Build(sw)); diffs == nil {
		t.Error("the 19-bit register of the BMv2 P4Info is not a difference on Tofino2")
	}
}

func TestWarnings(t *testing.T) {
	log := `WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
p.p4(380): [--Wwarn=unknown] warning: Unknown annotation: id
    @id(0x01000010) action drop_for(@id(1) bit<32> reason) {
warning: Parser state min_parse_depth_accept_loop will be unrolled up to 2 times due to @pragma max_loop_depth.
warning: Parser state min_parse_depth_accept_loop will be unrolled up to 2 times due to @pragma max_loop_depth.
0 errors, 3 warnings generated.
`
	got := tofino.Warnings(log)
	want := []string{
		"p.p4(380): [--Wwarn=unknown] warning: Unknown annotation: id",
		"warning: Parser state min_parse_depth_accept_loop will be unrolled up to 2 times due to @pragma max_loop_depth.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Warnings = %q, want %q", got, want)
	}
	if w := tofino.Warnings("0 errors, 0 warnings generated.\n"); w != nil {
		t.Errorf("no warnings: got %q", w)
	}
}
