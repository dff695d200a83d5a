package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mrcgen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBuildThenVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := mrcgen(t, "build", "--preset", "small", "-d", dir)
	if code != 0 {
		t.Fatalf("build: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `built fabric "small"`) {
		t.Errorf("build output: %s", out)
	}
	code, out, errOut = mrcgen(t, "verify", "--build", dir)
	if code != 0 {
		t.Fatalf("verify: exit %d: %s%s", code, out, errOut)
	}
	// small: 32 hosts, 4 planes, 4 T1s: 4 * 32 * (4*28 + 3) paths.
	if !strings.Contains(out, "14,720") || !strings.Contains(out, "OK: every path delivered") {
		t.Errorf("verify output: %s", out)
	}
}

func TestVerifyFailLink(t *testing.T) {
	code, out, errOut := mrcgen(t, "verify", "--preset", "tiny", "--fail", "p0-t0-0:p0-t1-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Hosts on p0-t0-0 lose T1 1 towards p0-t0-1 and back: 2 x 2 pairs each way.
	for _, want := range []string{"lost paths (2 classes)", "p0-t0-0  p0-t0-1", "p0-t0-1  p0-t0-0",
		"summary: 4 of 4 hosts lose paths (20.0% of the fabric's): 4 hosts (nic-0, nic-1, nic-2, nic-3) lose 20.0% of their paths"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	code, _, errOut = mrcgen(t, "verify", "--preset", "tiny", "--fail", "p0-t0-0:p0-t0-1")
	if code == 0 || !strings.Contains(errOut, "are not linked") {
		t.Errorf("bad link accepted: exit %d, %s", code, errOut)
	}
}

func TestBadFabricFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("planes: 2\nt0: {count: 9}\nswitch: {ports: 8, port_speed_gbps: 100}\n"), 0o644)
	out := filepath.Join(t.TempDir(), "never")
	code, _, errOut := mrcgen(t, "build", "--fabric", path, "-d", out)
	if code == 0 {
		t.Fatal("a fabric with more T0s than T1 ports was built")
	}
	if !strings.Contains(errOut, "t0.count: 9: line 2: more T0s than T1 down ports") {
		t.Errorf("error does not name the field and reason: %s", errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output directory left behind: %v", err)
	}
	os.WriteFile(path, []byte("planes: 2\nplanez: 3\n"), 0o644)
	code, _, errOut = mrcgen(t, "validate", "--fabric", path)
	if code == 0 || !strings.Contains(errOut, "planez") {
		t.Errorf("unknown field accepted: exit %d, %s", code, errOut)
	}
}

func TestPlanJSON(t *testing.T) {
	code, out, errOut := mrcgen(t, "plan", "--preset", "tiny", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var plan struct {
		Switches []struct{ Name, USID string }
		Hosts    []struct{ Name, Address string }
		Links    []struct{ A, B string }
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan --json is not JSON: %v", err)
	}
	if len(plan.Switches) != 8 || len(plan.Hosts) != 4 || len(plan.Links) != 16 {
		t.Errorf("tiny plan: %d switches, %d hosts, %d links; want 8, 4, 16", len(plan.Switches), len(plan.Hosts), len(plan.Links))
	}
}

func TestSchemaIsJSON(t *testing.T) {
	code, out, _ := mrcgen(t, "schema")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["title"] == nil {
		t.Errorf("schema: exit %d, %.80s", code, out)
	}
}

func TestPushRefusesWithoutTargets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatal(e)
	}
	tf := filepath.Join(t.TempDir(), "targets.yaml")
	os.WriteFile(tf, []byte("defaults: {insecure: true}\ndevices:\n  p0-t0-0: {address: \"127.0.0.1:1\", device_id: 1}\n"), 0o644)
	code, _, errOut := mrcgen(t, "push", "--build", dir, "--targets", tf)
	if code == 0 || !strings.Contains(errOut, "refusing to push: no target for") {
		t.Errorf("push without every target: exit %d, %s", code, errOut)
	}
	os.WriteFile(tf, []byte("devices:\n  p0-t0-0: {address: \"127.0.0.1:1\", device_id: 0}\n"), 0o644)
	code, _, errOut = mrcgen(t, "push", "--build", dir, "--targets", tf)
	if code == 0 || !strings.Contains(errOut, "device_id 0") {
		t.Errorf("device_id 0: exit %d, %s", code, errOut)
	}
}
