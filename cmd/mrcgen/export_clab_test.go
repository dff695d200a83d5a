package main

import (
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
