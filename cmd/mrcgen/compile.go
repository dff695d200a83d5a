package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/pna"
	"github.com/mrc-fabric/mrcgen/p4/tofino"
)

type compileOptions struct {
	build  string
	p4c    string
	target string
	all    bool // Tofino report: every compiler-made table on its own line
}

// Compile targets.
const (
	targetBMv2    = "bmv2"
	targetTofino  = "tofino"
	targetTofino2 = "tofino2"
	targetPNA     = "pna"
)

func newCompileCommand(io streams) *cobra.Command {
	var o compileOptions
	cmd := &cobra.Command{
		Use:   "compile",
		Short: "Compile a build's P4 programs (BMv2 with p4c-bm2-ss, or the switch for Tofino/Tofino2) and check the P4Info",
		Long: `compile compiles the P4 programs of a build directory for a target.

--target bmv2 (the default) runs p4c-bm2-ss on the switch and NIC programs, writes the BMv2
JSON next to each program, and checks that the P4Info p4c derives from the program is the
one mrcgen emitted from its schema (the one the table entries were built against).
p4c-bm2-ss is looked up as --p4c, then $MRCGEN_P4C, then on PATH, then in /opt/p4/bin.

--target tofino2 (Intel Tofino2, T2NA) or tofino (Tofino, TNA) writes the switch program for
that chip (p4/<target>/mrc_switch.p4: the same tables, actions and counters as the BMv2
switch, trimming built from the chip's traffic manager; see docs/protocol.md, section 8),
runs the open-source Tofino compiler on it (p4c --target <target> --arch t2na|tna -g), keeps
its outputs in p4/<target>/out/ and prints a resource report: the match-action stages used
of 20 (Tofino2) or 12 (Tofino), and SRAM, TCAM, map RAM, hash bits and input crossbar bytes
per table. It checks the tables of bfrt.json (names, sizes, key widths) and the P4Info the
compiler writes against mrcgen's schema. The NIC program is not compiled for Tofino.
The compiler is looked up as --p4c, then $MRCGEN_TOFINO_P4C, then /opt/tofino/bin/p4c
(shared/tools/build-tofino-compiler.sh builds it there).

--target pna writes the NIC program for PNA, the Portable NIC Architecture
(p4/pna/mrc_nic.p4: the BMv2 NIC's tables and actions with the same IDs; what PNA forces to
differ, and what it does not run yet, is in docs/protocol.md, section 8.2), runs p4c-dpdk on
it (the DPDK SWX pipeline specification, bfrt.json, context.json and P4Info in p4/pna/out/)
and checks the P4Info against mrcgen's schema. p4c-dpdk is looked up as --p4c, then
$MRCGEN_P4C_DPDK, then on PATH, then in /opt/dpdk-pna/bin (tools/build-dpdk-pna.sh builds it
there).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch o.target {
			case targetBMv2:
				return compileBMv2(cmd, io, o)
			case targetTofino, targetTofino2:
				return compileTofino(cmd, io, o, emit.Chip(o.target))
			case targetPNA:
				return compilePNA(cmd, io, o)
			}
			return fmt.Errorf("compile: unknown --target %q (want %s, %s, %s or %s)", o.target, targetBMv2, targetTofino2, targetTofino, targetPNA)
		},
	}
	cmd.Flags().StringVar(&o.build, "build", "build/tiny", "build directory")
	cmd.Flags().StringVar(&o.p4c, "p4c", "", "compiler to use (p4c-bm2-ss for bmv2, the Tofino p4c driver for tofino and tofino2, p4c-dpdk for pna)")
	cmd.Flags().StringVar(&o.target, "target", targetBMv2, "bmv2, tofino2, tofino or pna")
	cmd.Flags().BoolVar(&o.all, "all", false, "Tofino: list every table the compiler made (gateways, tbl_*) instead of one line for them")
	return cmd
}

func compileBMv2(cmd *cobra.Command, io streams, o compileOptions) error {
	compiler, err := p4c.Find(o.p4c)
	if err != nil {
		return err
	}
	start := time.Now()
	stop := newProgressBar(io.errOut, "compiling with "+filepath.Base(compiler)).elapsed()
	m, err := artifacts.Compile(cmd.Context(), o.build, compiler)
	stop()
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	took := time.Since(start)
	keys := []string{artifacts.ProgramSwitch, artifacts.ProgramNIC}
	if io.json() {
		type compiled struct {
			Program  string `json:"program"`
			P4       string `json:"p4"`
			BMv2JSON string `json:"bmv2_json"`
			SHA256   string `json:"bmv2_json_sha256"`
		}
		out := struct {
			Build    string     `json:"build"`
			Target   string     `json:"target"`
			Compiler string     `json:"compiler"`
			Seconds  float64    `json:"seconds"`
			Programs []compiled `json:"programs"`
		}{Build: o.build, Target: targetBMv2, Compiler: compiler, Seconds: took.Seconds()}
		for _, key := range keys {
			p := m.Programs[key]
			out.Programs = append(out.Programs, compiled{key, p.P4, filepath.Join(o.build, p.BMv2JSON), p.BMv2JSONSHA256})
		}
		return writeJSON(io.out, out)
	}
	for _, key := range keys {
		p := m.Programs[key]
		fmt.Fprintf(io.out, "compiled %-6s %s -> %s (P4Info matches p4c's)\n", key, p.P4, filepath.Join(o.build, p.BMv2JSON))
	}
	fmt.Fprintf(io.out, "with %s in %.1fs\n", compiler, took.Seconds())
	return nil
}

// tofinoResult is compile's answer for a Tofino target (-o json).
type tofinoResult struct {
	Build    string  `json:"build"`
	Target   string  `json:"target"`
	Arch     string  `json:"arch"`
	Compiler string  `json:"compiler"`
	Seconds  float64 `json:"seconds"`
	Program  string  `json:"program"`
	Output   string  `json:"output"`
	Log      string  `json:"log"`
	// P4Info is the compiler's P4Info, "" when it wrote none.
	P4Info string `json:"p4info,omitempty"`
	// P4InfoChecked says the compiler's P4Info equals mrcgen's; when it
	// wrote none, only bfrt.json was checked.
	P4InfoChecked bool           `json:"p4info_checked"`
	Resources     *tofino.Report `json:"resources"`
	// Warnings are the compiler's warning lines.
	Warnings []string `json:"warnings"`
}

func compileTofino(cmd *cobra.Command, io streams, o compileOptions, chip emit.Chip) error {
	compiler, err := tofino.Find(o.p4c)
	if err != nil {
		return fmt.Errorf("compile %s --target %s: %w", o.build, chip, err)
	}
	b, err := artifacts.Open(o.build)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	src, err := emit.SwitchTofino(b.Fabric, chip)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	dir := filepath.Join(o.build, artifacts.P4Dir, string(chip))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	program := filepath.Join(dir, b.Switch.Name+".p4")
	if err := os.WriteFile(program, src, 0o644); err != nil {
		return fmt.Errorf("compile %s: write %s: %w", o.build, program, err)
	}
	start := time.Now()
	stop := newProgressBar(io.errOut, "compiling for "+string(chip)).elapsed()
	out, err := tofino.Compile(cmd.Context(), compiler, chip, program, filepath.Join(dir, "out"))
	stop()
	if err != nil {
		return fmt.Errorf("compile %s: %w (log: %s)", o.build, err, filepath.Join(dir, "out", tofino.LogFile))
	}
	took := time.Since(start)
	report, err := tofino.ReadReport(chip, out.Dir)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	diffs, err := tofino.CheckBfrt(out.Dir, b.Switch)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("compile %s: %s: bfrt.json differs from mrcgen's schema: %s", o.build, program, strings.Join(diffs, "; "))
	}
	res := tofinoResult{Build: o.build, Target: string(chip), Arch: chip.Arch(), Compiler: compiler, Seconds: took.Seconds(),
		Program: program, Output: out.Dir, Log: out.Log, P4Info: out.P4Info, Resources: report,
		Warnings: append([]string{}, out.Warnings...)}
	if out.P4Info != "" {
		got, err := p4c.ReadP4Info(out.P4Info)
		if err != nil {
			return fmt.Errorf("compile %s: %w", o.build, err)
		}
		if diffs := tofino.DiffP4Info(b.Switch, chip, got); diffs != nil {
			return fmt.Errorf("compile %s: %w", o.build, &artifacts.P4InfoMismatchError{Program: program, Diffs: diffs})
		}
		res.P4InfoChecked = true
	}
	if report.StagesUsed > report.Stages {
		return fmt.Errorf("compile %s: %s uses %d stages, %s has %d", o.build, program, report.StagesUsed, chip, report.Stages)
	}
	if io.json() {
		return writeJSON(io.out, res)
	}
	fmt.Fprintf(io.out, "compiled switch for %s (%s): %s -> %s\n", chip, strings.ToUpper(chip.Arch()), program, out.Dir)
	fmt.Fprintf(io.out, "stages used: %d of %d\n\n", report.StagesUsed, report.Stages)
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "USED BY\tSIZE\tSTAGES\tSRAM\tTCAM\tMAP RAM\tHASH BITS\tXBAR BYTES")
	// The program's own objects one per line; what the compiler made for
	// the control flow (gateways, tables of single actions, ping-pong
	// copies) in one line unless --all.
	var made tofino.TableUsage
	stagesMade := map[int]bool{}
	nMade := 0
	for _, t := range report.Tables {
		if !o.all && t.Size == 0 && !strings.HasPrefix(t.Name, "Switch") {
			nMade++
			made.SRAMs, made.TCAMs, made.MapRAMs = made.SRAMs+t.SRAMs, made.TCAMs+t.TCAMs, made.MapRAMs+t.MapRAMs
			made.HashBits, made.XbarBytes = made.HashBits+t.HashBits, made.XbarBytes+t.XbarBytes
			for _, st := range t.Stages {
				stagesMade[st] = true
			}
			continue
		}
		size := "-"
		if t.Size > 0 {
			size = fmt.Sprint(t.Size)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", t.Name, size, stageList(t.Stages), t.SRAMs, t.TCAMs, t.MapRAMs, t.HashBits, t.XbarBytes)
	}
	if nMade > 0 {
		made.Stages = slices.Sorted(maps.Keys(stagesMade))
		fmt.Fprintf(tw, "(%d made by the compiler; --all lists them)\t-\t%s\t%d\t%d\t%d\t%d\t%d\n", nMade, stageList(made.Stages),
			made.SRAMs, made.TCAMs, made.MapRAMs, made.HashBits, made.XbarBytes)
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t%d\t%d\t%d\n", report.StagesUsed, report.SRAMs, report.TCAMs, report.MapRAMs, report.HashBits, report.XbarBytes)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(io.out)
	printStages(io.out, report, o.all)
	fmt.Fprintln(io.out)
	if res.P4InfoChecked {
		fmt.Fprintf(io.out, "P4Info %s matches mrcgen's; bfrt.json's tables match the schema\n", out.P4Info)
		fmt.Fprintln(io.out, "(counters and registers carry the compiler's IDs, a hash of their name: read them through its P4Info)")
	} else {
		fmt.Fprintln(io.out, "the compiler wrote no P4Info: only bfrt.json's tables (names, sizes, key widths) were checked")
	}
	fmt.Fprintf(io.out, "with %s in %.1fs, %d warnings (log: %s)\n", compiler, took.Seconds(), len(out.Warnings), out.Log)
	for _, w := range out.Warnings {
		fmt.Fprintf(io.out, "  %s\n", w)
	}
	return nil
}

// pnaResult is compile's answer for --target pna (-o json).
type pnaResult struct {
	Build    string  `json:"build"`
	Target   string  `json:"target"`
	Compiler string  `json:"compiler"`
	Seconds  float64 `json:"seconds"`
	Program  string  `json:"program"`
	Spec     string  `json:"spec"`
	Bfrt     string  `json:"bfrt_json"`
	Context  string  `json:"context_json"`
	P4Info   string  `json:"p4info"`
	Log      string  `json:"log"`
	// SpecLines counts the specification's lines: its size as DPDK sees it.
	SpecLines int      `json:"spec_lines"`
	Warnings  []string `json:"warnings"`
	// What the pipeline must be given for the program's answers
	// (docs/protocol.md, section 8.2): a loopback port and a mirror
	// session to it, cutting copies to MirrorTruncate bytes.
	LoopPort       int `json:"loop_port"`
	MirrorSession  int `json:"mirror_session"`
	MirrorTruncate int `json:"mirror_truncate"`
}

func compilePNA(cmd *cobra.Command, io streams, o compileOptions) error {
	compiler, err := pna.Find(o.p4c)
	if err != nil {
		return fmt.Errorf("compile %s --target pna: %w", o.build, err)
	}
	b, err := artifacts.Open(o.build)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	src, err := emit.NICPNA(b.Fabric)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	dir := filepath.Join(o.build, artifacts.P4Dir, targetPNA)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	program := filepath.Join(dir, b.NIC.Name+".p4")
	if err := os.WriteFile(program, src, 0o644); err != nil {
		return fmt.Errorf("compile %s: write %s: %w", o.build, program, err)
	}
	start := time.Now()
	stop := newProgressBar(io.errOut, "compiling for PNA with "+filepath.Base(compiler)).elapsed()
	out, err := pna.Compile(cmd.Context(), compiler, program, filepath.Join(dir, "out"))
	stop()
	if err != nil {
		return fmt.Errorf("compile %s: %w (log: %s)", o.build, err, filepath.Join(dir, "out", pna.LogFile))
	}
	took := time.Since(start)
	got, err := p4c.ReadP4Info(out.P4Info)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	if diffs := pna.DiffP4Info(b.NIC, got); diffs != nil {
		return fmt.Errorf("compile %s: %w", o.build, &artifacts.P4InfoMismatchError{Program: program, Diffs: diffs})
	}
	spec, err := os.ReadFile(out.Spec)
	if err != nil {
		return fmt.Errorf("compile %s: %w", o.build, err)
	}
	res := pnaResult{Build: o.build, Target: targetPNA, Compiler: compiler, Seconds: took.Seconds(), Program: program,
		Spec: out.Spec, Bfrt: out.Bfrt, Context: out.Context, P4Info: out.P4Info, Log: out.Log,
		SpecLines: bytes.Count(spec, []byte("\n")), Warnings: append([]string{}, out.Warnings...),
		LoopPort: emit.PNALoopPort(b.Fabric), MirrorSession: emit.PNAAnswerSession, MirrorTruncate: emit.PNAAnswerCopyBytes}
	if io.json() {
		return writeJSON(io.out, res)
	}
	fmt.Fprintf(io.out, "compiled nic for PNA (DPDK SWX): %s -> %s (%d lines)\n", program, out.Spec, res.SpecLines)
	fmt.Fprintf(io.out, "P4Info %s matches mrcgen's\n", out.P4Info)
	fmt.Fprintf(io.out, "the pipeline needs port %d as a loopback (out of it, back in on it) and mirror session %d to it, truncating to %d bytes\n",
		res.LoopPort, res.MirrorSession, res.MirrorTruncate)
	fmt.Fprintf(io.out, "with %s in %.1fs, %d warnings (log: %s)\n", compiler, took.Seconds(), len(out.Warnings), out.Log)
	for _, w := range out.Warnings {
		fmt.Fprintf(io.out, "  %s\n", w)
	}
	return nil
}

func stageList(stages []int) string {
	s := make([]string, len(stages))
	for i, st := range stages {
		s[i] = fmt.Sprint(st)
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// printStages draws the pipe stage by stage: one block per SRAM, then what
// the stage holds (the program's objects by their local name, the
// compiler's own counted unless all), free stages at the end on one line.
func printStages(w io.Writer, r *tofino.Report, all bool) {
	fmt.Fprintf(w, "pipe, stage by stage (# = one SRAM):\n")
	last := -1
	for _, st := range r.PerStage {
		if len(st.Tables) > 0 {
			last = st.Stage
		}
	}
	for _, st := range r.PerStage[:last+1] {
		var names []string
		made := 0
		for _, name := range st.Tables {
			if all || strings.HasPrefix(name, "Switch") || r.Table(name).Size > 0 {
				names = append(names, name[strings.LastIndexByte(name, '.')+1:])
			} else {
				made++
			}
		}
		if made > 0 {
			names = append(names, fmt.Sprintf("+%d compiler-made", made))
		}
		fmt.Fprintf(w, "  %2d %-12s %s\n", st.Stage, strings.Repeat("#", min(st.SRAMs, 12)), strings.Join(names, ", "))
	}
	if last+1 < len(r.PerStage) {
		fmt.Fprintf(w, "  %d-%d free\n", last+1, len(r.PerStage)-1)
	}
}
