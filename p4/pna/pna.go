// Package pna compiles mrcgen's NIC program written for PNA, the Portable
// NIC Architecture (emit.NICPNA), with p4c-dpdk, p4c's DPDK back end, into
// a DPDK SWX pipeline specification (.spec) with its bfrt.json,
// context.json and P4Info, and checks the P4Info against mrcgen's schema.
// tools/build-dpdk-pna.sh builds p4c-dpdk and DPDK's SWX pipeline app into
// /opt/dpdk-pna.
package pna

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// Binary is the compiler's name on PATH.
const Binary = "p4c-dpdk"

// EnvVar names the environment variable that may point at the compiler.
const EnvVar = "MRCGEN_P4C_DPDK"

// RequireEnv names the environment variable that, set to 1, makes tests
// fail rather than skip when the tools are missing (.ci/run sets it when
// /opt/dpdk-pna/env.sh exists).
const RequireEnv = "MRCGEN_REQUIRE_DPDK_PNA"

// Prefix is where tools/build-dpdk-pna.sh installs the tools.
const Prefix = "/opt/dpdk-pna"

// ErrNotFound is returned by Find when p4c-dpdk is not installed.
var ErrNotFound = errors.New("p4c-dpdk (p4c's DPDK back end) not found")

// Find returns the compiler to use: explicit if set, else $MRCGEN_P4C_DPDK,
// else p4c-dpdk on PATH, else /opt/dpdk-pna/bin/p4c-dpdk.
func Find(explicit string) (string, error) {
	path, found, err := p4c.Lookup(explicit, EnvVar, Binary, filepath.Join(Prefix, "bin", Binary))
	if err != nil || found {
		return path, err
	}
	return "", fmt.Errorf("%w on PATH or in %s/bin: build it with tools/build-dpdk-pna.sh, or pass --p4c / set %s", ErrNotFound, Prefix, EnvVar)
}

// Output names the files of one compilation.
type Output struct {
	Dir     string // the output directory
	Spec    string // the DPDK SWX pipeline specification
	Bfrt    string // bfrt.json
	Context string // context.json (table and action names as the pipeline knows them)
	P4Info  string // P4Info, text format
	Log     string // the compiler's stdout and stderr
	// Warnings are the compiler's warning lines, once each, in order.
	Warnings []string
}

// The names Compile gives its outputs inside the output directory.
const (
	SpecFile    = "mrc_nic.spec"
	BfrtFile    = "bfrt.json"
	ContextFile = "context.json"
	P4InfoFile  = "p4info.txtpb"
	LogFile     = "p4c-dpdk.log"
)

// ExcludedPass is the midend pass Compile leaves out: p4c-dpdk 1.2.4.8's
// local copy propagation replaces a local by its defining expression at
// every use, and the back end then turns the shared expression into
// instructions once per use, rewriting its operands in place: from the
// second use on, a nested operand is the first use's temporary (a local
// y = w >> (bit<8>)(p & 63) used twice gave y + 1 as (y >> y) + 1, which
// broke the receive window's walk). Without the pass every local is a
// metadata field computed once.
const ExcludedPass = "P4::LocalCopyPropagation"

// Args is the command line Compile runs, without the compiler itself.
func Args(src, outDir string) []string {
	return []string{
		"--arch", "pna",
		"--excludeMidendPasses", ExcludedPass,
		"-o", filepath.Join(outDir, SpecFile),
		"--bf-rt-schema", filepath.Join(outDir, BfrtFile),
		"--context", filepath.Join(outDir, ContextFile),
		"--p4runtime-files", filepath.Join(outDir, P4InfoFile),
		src,
	}
}

// Compile compiles the PNA program src into outDir (created, and emptied
// of a previous compilation's files first), keeping the compiler's log
// there.
func Compile(ctx context.Context, compiler, src, outDir string) (*Output, error) {
	if err := os.RemoveAll(outDir); err != nil {
		return nil, fmt.Errorf("compile %s: clear %s: %w", src, outDir, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("compile %s: %w", src, err)
	}
	cmd := exec.CommandContext(ctx, compiler, Args(src, outDir)...)
	var log bytes.Buffer
	cmd.Stdout = &log
	cmd.Stderr = &log
	runErr := cmd.Run()
	out := &Output{
		Dir: outDir, Spec: filepath.Join(outDir, SpecFile), Bfrt: filepath.Join(outDir, BfrtFile),
		Context: filepath.Join(outDir, ContextFile), P4Info: filepath.Join(outDir, P4InfoFile),
		Log: filepath.Join(outDir, LogFile),
	}
	if err := os.WriteFile(out.Log, log.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("compile %s: write the compiler log: %w", src, err)
	}
	if runErr != nil {
		return nil, &p4c.CompileError{Compiler: Binary, Program: src, Err: runErr, Log: log.String()}
	}
	// A compilation that succeeds writes both.
	for _, f := range []string{out.Spec, out.P4Info} {
		if _, err := os.Stat(f); err != nil {
			return nil, &p4c.CompileError{Compiler: Binary, Program: src, Err: fmt.Errorf("no %s written: %w", filepath.Base(f), err), Log: log.String()}
		}
	}
	out.Warnings = warnings(log.String())
	return out, nil
}

func warnings(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "warning") && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// DiffP4Info compares the P4Info p4c-dpdk wrote with mrcgen's for the NIC
// program and describes the differences, nil when they agree.
// Two differences are expected and removed first: the architecture's name
// (pkg_info: pna, not v1model) and each table's initial default action (a
// field newer than the P4Info mrcgen writes, checked against the schema's
// default action, then dropped). Everything else (IDs, names, key and
// parameter widths, action scopes, sizes, counter units, register widths)
// must be equal.
func DiffP4Info(nic *schema.Program, got *p4cfg.P4Info) []string {
	want := p4infogen.Build(nic)
	want.PkgInfo = nil
	g := proto.Clone(got).(*p4cfg.P4Info)
	g.PkgInfo = nil
	defaults := map[uint32]uint32{}
	for _, t := range nic.Tables {
		if t.Default != nil {
			defaults[t.ID] = t.Default.ID
		}
	}
	var diffs []string
	for _, t := range g.Tables {
		if a := t.GetInitialDefaultAction(); a != nil {
			if want := defaults[t.GetPreamble().GetId()]; a.GetActionId() != want {
				diffs = append(diffs, fmt.Sprintf("table %s: initial default action %#x, the schema's is %#x",
					t.GetPreamble().GetName(), a.GetActionId(), want))
			}
			t.InitialDefaultAction = nil
		}
	}
	return append(diffs, p4infogen.Diff(want, g)...)
}
