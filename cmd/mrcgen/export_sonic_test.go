package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportSonicThenVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sonic")
	code, out, errOut := mrcgen(t, "export", "sonic", "-p", "tiny", "-d", dir)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "8 switches, 24 ports, 24 static routes") {
		t.Errorf("export output: %s", out)
	}
	code, out, errOut = mrcgen(t, "verify", "--sonic", dir)
	if code != 0 || !strings.Contains(out, "OK: every path delivered") || !strings.Contains(out, "from SONiC export") {
		t.Fatalf("verify --sonic: exit %d: %s%s", code, out, errOut)
	}
	// Move one route of p0-t0-0 to the other up port (next hop and all).
	path := filepath.Join(dir, "p0-t0-0", "config_db.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fr map[string]map[string]map[string]string
	if err := json.Unmarshal(data, &fr); err != nil {
		t.Fatal(err)
	}
	fr["STATIC_ROUTE"]["default|fcbb:bb00:801::/48"] = map[string]string{"nexthop": "fd00:6d72:6c00::1", "ifname": "Ethernet2"}
	data, _ = json.Marshal(fr)
	os.WriteFile(path, data, 0o644)
	code, out, errOut = mrcgen(t, "verify", "--sonic", dir)
	if code == 0 {
		t.Fatalf("verify accepts a damaged route: %s", out)
	}
	for _, want := range []string{"4 of 40 paths not delivered", "p0-t0-0: STATIC_ROUTE default|fcbb:bb00:801::/48 leaves by Ethernet2 (to p0-t1-0)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("verify stderr lacks %q:\n%s", want, errOut)
		}
	}
	code, _, errOut = mrcgen(t, "verify", "--sonic", dir, "-p", "tiny")
	if code == 0 || !strings.Contains(errOut, "not several") {
		t.Errorf("--sonic with --preset: exit %d, %s", code, errOut)
	}
}

func TestExportSonicFromBuild(t *testing.T) {
	build := filepath.Join(t.TempDir(), "b")
	if code, _, errOut := mrcgen(t, "build", "-p", "tiny", "-d", build); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := mrcgen(t, "export", "sonic", "--build", build, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r exportSonicReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Dir != filepath.Join(build, "sonic") || r.Switches != 8 || r.Routes != 24 || r.Target != "generic" || r.Checked != -1 {
		t.Errorf("report %+v", r)
	}
	if _, err := os.Stat(filepath.Join(build, "sonic", "p1-t1-0", "config_db.json")); err != nil {
		t.Error(err)
	}
}

func TestExportSonicRefusesTarget(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "sp4.yaml")
	os.WriteFile(file, []byte("base: tiny\nsonic: {target: spectrum-4}\n"), 0o644)
	out := filepath.Join(root, "never")
	code, _, errOut := mrcgen(t, "export", "sonic", "-f", file, "-d", out)
	if code == 0 || !strings.Contains(errOut, "raise trim.size_bytes to 256") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused export wrote %s", out)
	}
	// validate and build warn (the P4 build does not depend on the target).
	code, _, errOut = mrcgen(t, "validate", "-f", file)
	if code != 0 || !strings.Contains(errOut, "warning: SONiC target spectrum-4: trim.size_bytes: 134") {
		t.Errorf("validate: exit %d: %s", code, errOut)
	}
	code, _, errOut = mrcgen(t, "build", "-f", file, "-d", filepath.Join(root, "b"))
	if code != 0 || !strings.Contains(errOut, "export sonic will refuse this fabric") {
		t.Errorf("build: exit %d: %s", code, errOut)
	}
	// With a size Spectrum takes, the export goes through.
	os.WriteFile(file, []byte("base: tiny\ntrim: {size_bytes: 256}\nsonic: {target: spectrum-4}\n"), 0o644)
	if code, _, errOut := mrcgen(t, "export", "sonic", "-f", file, "-d", out); code != 0 {
		t.Errorf("256 bytes on spectrum-4: exit %d: %s", code, errOut)
	}
}

func TestExportSonicCheck(t *testing.T) {
	yang := os.Getenv("MRCGEN_SONIC_YANG")
	if yang == "" {
		t.Skip("MRCGEN_SONIC_YANG is not set: set it to SONiC's YANG models to run export sonic --check")
	}
	if _, err := exec.LookPath("yanglint"); err != nil {
		t.Fatal("MRCGEN_SONIC_YANG is set but yanglint is not on PATH")
	}
	dir := filepath.Join(t.TempDir(), "s")
	code, out, errOut := mrcgen(t, "export", "sonic", "-p", "small", "-d", dir, "--check")
	if code != 0 || !strings.Contains(out, "yanglint: 48 fragments valid") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = mrcgen(t, "export", "sonic", "-p", "tiny", "-d", dir, "--check", "--yang", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "sonic-") {
		t.Errorf("--check against an empty model folder: exit %d: %s", code, errOut)
	}
}
