package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/p4/pna"
	"github.com/mrc-fabric/mrcgen/p4/tofino"
)

// TestCompileTargetErrors: an unknown target and a missing Tofino compiler
// are clear errors with a non-zero exit, before the build is read.
func TestCompileTargetErrors(t *testing.T) {
	code, _, errOut := mrcgen(t, "compile", "--build", t.TempDir(), "--target", "tofino3")
	if code == 0 || !strings.Contains(errOut, `unknown --target "tofino3"`) {
		t.Errorf("unknown target: exit %d, %s", code, errOut)
	}
	t.Setenv(tofino.EnvVar, "/nonexistent/tofino/p4c")
	code, out, errOut := mrcgen(t, "compile", "--build", t.TempDir(), "--target", "tofino2", "-o", "json")
	if code == 0 || out != "" || !strings.Contains(errOut, "/nonexistent/tofino/p4c") {
		t.Errorf("missing compiler: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}

// TestCompileTofinoJSON compiles tiny's switch for Tofino2 through the CLI
// and reads its -o json report. Needs the Tofino compiler (skips without
// it, fails without it under MRCGEN_REQUIRE_TOFINO=1).
func TestCompileTofinoJSON(t *testing.T) {
	dir := tinyBuildForTofino(t)
	code, out, errOut := mrcgen(t, "compile", "--build", dir, "--target", "tofino2", "-o", "json")
	if code != 0 {
		t.Fatalf("compile: %s", errOut)
	}
	var got struct {
		Target    string         `json:"target"`
		Output    string         `json:"output"`
		Resources *tofino.Report `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("compile -o json is not JSON: %v\n%s", err, out)
	}
	if got.Target != "tofino2" || got.Output != filepath.Join(dir, "p4", "tofino2", "out") {
		t.Errorf("target %q output %q", got.Target, got.Output)
	}
	if r := got.Resources; r == nil || r.Stages != 20 || r.StagesUsed == 0 || r.StagesUsed > 20 || r.Table("SwitchIngress.usid_route") == nil {
		t.Errorf("resources: %+v", got.Resources)
	}
}

// TestCompileTofinoTable: the table for people lists the program's objects
// one per line and what the compiler made (gateways, tbl_*) in one line.
func TestCompileTofinoTable(t *testing.T) {
	dir := tinyBuildForTofino(t)
	code, out, errOut := mrcgen(t, "compile", "--build", dir, "--target", "tofino")
	if code != 0 {
		t.Fatalf("compile: %s", errOut)
	}
	for _, want := range []string{"stages used: ", "SwitchIngress.usid_route", "SwitchEgress.tx_port_class", "made by the compiler; --all lists them", "P4Info ",
		"pipe, stage by stage (# = one SRAM):", " usid_route", " free\n", " warnings (log: "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\ncond-") || strings.Contains(out, "\ntbl_") {
		t.Errorf("compiler-made tables listed one by one without --all:\n%s", out)
	}
}

// tinyBuildForTofino builds tiny into a temporary directory for a Tofino
// compile, or skips when the Tofino compiler is missing (fails under
// MRCGEN_REQUIRE_TOFINO=1).
func tinyBuildForTofino(t *testing.T) string {
	t.Helper()
	if _, err := tofino.Find(""); err != nil {
		if !errors.Is(err, tofino.ErrNotFound) || os.Getenv(tofino.RequireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skipf("compile --target tofino needs the Tofino compiler: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatalf("build: %s", e)
	}
	return dir
}

// TestCompilePNA compiles tiny's NIC for PNA with p4c-dpdk through the CLI,
// as JSON and as the table for people. Needs p4c-dpdk (skips without it,
// fails without it under MRCGEN_REQUIRE_DPDK_PNA=1).
func TestCompilePNA(t *testing.T) {
	if _, err := pna.Find(""); err != nil {
		if !errors.Is(err, pna.ErrNotFound) || os.Getenv(pna.RequireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skipf("compile --target pna needs p4c-dpdk: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatalf("build: %s", e)
	}
	code, out, errOut := mrcgen(t, "compile", "--build", dir, "--target", "pna", "-o", "json")
	if code != 0 {
		t.Fatalf("compile: %s", errOut)
	}
	var got struct {
		Target    string `json:"target"`
		Program   string `json:"program"`
		Spec      string `json:"spec"`
		SpecLines int    `json:"spec_lines"`
		LoopPort  int    `json:"loop_port"`
		Session   int    `json:"mirror_session"`
		Truncate  int    `json:"mirror_truncate"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("compile -o json is not JSON: %v\n%s", err, out)
	}
	if got.Target != "pna" || got.Program != filepath.Join(dir, "p4", "pna", "mrc_nic.p4") ||
		got.Spec != filepath.Join(dir, "p4", "pna", "out", "mrc_nic.spec") || got.SpecLines < 100 ||
		got.LoopPort != 3 || got.Session != 1 || got.Truncate != 134 {
		t.Errorf("compile -o json: %+v", got)
	}
	if _, err := os.Stat(got.Spec); err != nil {
		t.Error(err)
	}
	code, out, errOut = mrcgen(t, "compile", "--build", dir, "--target", "pna")
	if code != 0 {
		t.Fatalf("compile: %s", errOut)
	}
	for _, want := range []string{"compiled nic for PNA (DPDK SWX): ", "matches mrcgen's\n", "needs port 3 as a loopback", "mirror session 1 to it, truncating to 134 bytes", " warnings (log: "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
