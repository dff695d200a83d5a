package pna_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/pna"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

func TestFind(t *testing.T) {
	t.Setenv(pna.EnvVar, "")
	if _, err := pna.Find("/nonexistent/p4c-dpdk"); err == nil || !strings.Contains(err.Error(), "/nonexistent/p4c-dpdk") {
		t.Errorf("explicit missing compiler: %v", err)
	}
	t.Setenv(pna.EnvVar, "/nonexistent/env-p4c-dpdk")
	if _, err := pna.Find(""); err == nil || !strings.Contains(err.Error(), "env-p4c-dpdk") {
		t.Errorf("missing $%s compiler: %v", pna.EnvVar, err)
	}
}

func TestArgs(t *testing.T) {
	got := strings.Join(pna.Args("x.p4", "out"), " ")
	for _, want := range []string{"--arch pna", "-o out/mrc_nic.spec", "--bf-rt-schema out/bfrt.json",
		"--context out/context.json", "--p4runtime-files out/p4info.txtpb", " x.p4"} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
}

// compiler returns p4c-dpdk, or skips the test: with
// MRCGEN_REQUIRE_DPDK_PNA=1 a missing compiler fails it.
func compiler(t *testing.T) string {
	t.Helper()
	c, err := pna.Find("")
	if err != nil {
		if errors.Is(err, pna.ErrNotFound) && os.Getenv(pna.RequireEnv) != "1" {
			t.Skipf("%v (set %s=1 to make this a failure)", err, pna.RequireEnv)
		}
		t.Fatal(err)
	}
	return c
}

// TestCompile compiles the PNA NIC program of tiny, small and mrc-131k with
// p4c-dpdk and checks what it writes: a pipeline specification holding
// every table of the schema with its size, and a P4Info equal to mrcgen's.
func TestCompile(t *testing.T) {
	p4cPath := compiler(t)
	for _, preset := range []string{"tiny", "small", "mrc-131k"} {
		t.Run(preset, func(t *testing.T) {
			if testing.Short() && preset == "mrc-131k" {
				t.Skip("-short")
			}
			f, err := fabric.FromPreset(preset)
			if err != nil {
				t.Fatal(err)
			}
			src, err := emit.NICPNA(f)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "mrc_nic.p4")
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := pna.Compile(context.Background(), p4cPath, path, filepath.Join(dir, "out"))
			if err != nil {
				t.Fatalf("%+v", err)
			}
			spec, err := os.ReadFile(out.Spec)
			if err != nil {
				t.Fatal(err)
			}
			nic := schema.NIC(f)
			for _, tb := range nic.Tables {
				// the specification names tables by their local name
				i := strings.Index(string(spec), "\ntable "+tb.Name+" {\n")
				if i < 0 {
					t.Errorf("table %s not in the specification", tb.Name)
					continue
				}
				body, _, _ := strings.Cut(string(spec[i+1:]), "\n}")
				if want := fmt.Sprintf("size 0x%X", tb.Size); !strings.Contains(body, want) {
					t.Errorf("table %s: no %q in %s", tb.Name, want, body)
				}
			}
			for _, c := range nic.Counters {
				if !strings.Contains(string(spec), "regarray "+c.Name+"_0") {
					t.Errorf("counter %s not in the specification", c.Name)
				}
			}
			got, err := p4c.ReadP4Info(out.P4Info)
			if err != nil {
				t.Fatal(err)
			}
			if diffs := pna.DiffP4Info(nic, got); diffs != nil {
				t.Errorf("P4Info differs from mrcgen's:\n%s", strings.Join(diffs, "\n"))
			}
			// The check is not blind: a register the program does not
			// declare is reported.
			full := *nic
			full.Registers = append(full.Registers, &schema.Register{ID: 0x160001ff, Control: "NicIngress", Name: "absent", Size: 1, Bits: 8})
			if diffs := pna.DiffP4Info(&full, got); diffs == nil {
				t.Error("a register p4c-dpdk did not compile is not reported")
			}
		})
	}
}
