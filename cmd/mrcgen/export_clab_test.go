package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportClab(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, errOut := mrcgen(t, "build", "--preset", "tiny", "-d", dir); code != 0 {
		t.Fatalf("build: %s", errOut)
	}
	out := filepath.Join(t.TempDir(), "lab")
	// Bad input: a clear error and nothing written.
	for _, args := range [][]string{
		{"--mgmt-subnet", "10.0.0.0/30"},
		{"--mgmt-subnet", "nonsense"},
		{"--split-hosts", "192.0.2.1,not-an-ip"},
		{"--split-hosts", "192.0.2.1,192.0.2.2,192.0.2.3"},
	} {
		code, _, errOut := mrcgen(t, append([]string{"export", "clab", "--build", dir, "--out", out}, args...)...)
		if code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%v: wrote into %s", args, out)
		}
	}
	code, stdout, errOut := mrcgen(t, "export", "clab", "--build", dir, "--out", out, "--split-hosts", "192.0.2.1,192.0.2.2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "is not compiled: run `mrcgen compile --build") {
		t.Errorf("no warning about the uncompiled build: %q", errOut)
	}
	for _, f := range []string{"tiny-host0.clab.yml", "tiny-host0.targets.yaml", "tiny-host1.clab.yml", "tiny-host1.targets.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil || !strings.Contains(stdout, f) {
			t.Errorf("%s: %v\n%s", f, err, stdout)
		}
	}
}

// TestExportClabAndDrawJSON: with -o json, export clab lists what it wrote
// (topology, targets, node and link counts) and draw describes the SVG file
// it wrote; draw refuses -o json without --out, since the SVG would share
// standard output with the JSON.
func TestExportClabAndDrawJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, errOut := mrcgen(t, "build", "--preset", "tiny", "-d", dir); code != 0 {
		t.Fatalf("build: %s", errOut)
	}
	code, stdout, errOut := mrcgen(t, "export", "clab", "--build", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("export clab -o json: %s", errOut)
	}
	var ex struct {
		Topologies []struct {
			Topology, Targets string
			Nodes, Links      int
		} `json:"topologies"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &ex); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	// tiny: 8 switches + 4 NICs.
	if len(ex.Topologies) != 1 || ex.Topologies[0].Nodes != 12 || ex.Topologies[0].Topology != filepath.Join(dir, "tiny.clab.yml") {
		t.Fatalf("export clab -o json: %+v", ex)
	}
	if _, err := os.Stat(ex.Topologies[0].Targets); err != nil {
		t.Errorf("targets file: %v", err)
	}
	if len(ex.Warnings) == 0 {
		t.Errorf("no warning about the uncompiled build in the JSON")
	}

	svg := filepath.Join(t.TempDir(), "tiny.svg")
	code, stdout, errOut = mrcgen(t, "draw", "--preset", "tiny", "--fail", "p0-t0-0:p0-t1-1", "--out", svg, "-o", "json")
	if code != 0 {
		t.Fatalf("draw -o json: %s", errOut)
	}
	var d struct {
		File   string   `json:"file"`
		Bytes  int      `json:"bytes"`
		Failed []string `json:"failed_links"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if st, err := os.Stat(svg); err != nil || d.File != svg || int64(d.Bytes) != st.Size() || len(d.Failed) != 1 {
		t.Errorf("draw -o json: %+v (file: %v)", d, err)
	}
	if code, _, errOut := mrcgen(t, "draw", "--preset", "tiny", "-o", "json"); code == 0 || !strings.Contains(errOut, "give --out FILE") {
		t.Errorf("draw -o json to standard output: exit %d, %q", code, errOut)
	}
}
