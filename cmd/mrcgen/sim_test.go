package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimCommand runs `mrcgen sim` on tiny, built and from the preset: the
// table, JSON equal to the built run's apart from the wall-clock figures,
// the pictures, and runs on every core.
func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	build := filepath.Join(dir, "build")
	if code, _, errOut := mrcgen(t, "build", "-p", "tiny", "-d", build); code != 0 {
		t.Fatalf("build: %s", errOut)
	}
	args := []string{"sim", "--bytes", "256KiB", "--cut", "p0-t0-0:p0-t1-1@5us", "--seed", "3"}
	code, out, errOut := mrcgen(t, append(args, "-p", "tiny", "--svg", filepath.Join(dir, "svg"))...)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"sim tiny: mrc, permutation of 4 hosts, 256KiB each, seed 3", "4 of 4 complete",
		"cut p0-t0-0:p0-t1-1@5µs", "packet hops"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, name := range []string{"fct-cdf.svg", "goodput.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, "svg", name))
		if err != nil || !strings.Contains(string(b), "<polyline") {
			t.Errorf("%s: %v, %d bytes", name, err, len(b))
		}
	}
	results := map[string]map[string]any{}
	for _, src := range [][]string{{"-p", "tiny"}, {"--build", build}} {
		code, out, errOut := mrcgen(t, append(append(args, src...), "-o", "json")...)
		if code != 0 {
			t.Fatalf("sim %v -o json: %s", src, errOut)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		delete(r, "run")
		b, _ := json.Marshal(r)
		results[string(b)] = r
		if r["completed"].(float64) != 4 || len(r["faults"].([]any)) != 1 {
			t.Errorf("%v: %v", src, out)
		}
	}
	if len(results) != 1 {
		t.Errorf("the build's tables and the generated ones gave different runs")
	}
	code, out, errOut = mrcgen(t, "sim", "-p", "tiny", "--bytes", "64KiB", "--runs", "3", "-o", "json")
	var many []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &many) != nil || len(many) != 3 || many[2]["seed"].(float64) != 3 {
		t.Errorf("--runs 3: exit %d, %s %s", code, out, errOut)
	}
}

// TestSimBadInput: every problem is named, the exit is non-zero, nothing is
// written.
func TestSimBadInput(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "svg")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--cut", "p0-t0-0:p0-t1-9@5us"}, []string{"p0-t0-0 and p0-t1-9 are not neighbours"}},
		{[]string{"--cut", "p0-t0-0:p0-t1-1"}, []string{"no @TIME"}},
		{[]string{"--flap", "p0-t0-0:p0-t1-1@5us,period=10us"}, []string{"a flap needs period= and duty="}},
		{[]string{"--loss", "p0-t0-0:p0-t1-1:150%"}, []string{"is not a percentage"}},
		{[]string{"--bytes", "lots", "--transport", "tcp"}, []string{"--bytes", "transport \"tcp\""}},
		{[]string{"--workload", "ring"}, []string{"--workload \"ring\""}},
		{[]string{"--hosts", "9"}, []string{"9 hosts: the fabric has 4"}},
		{[]string{"--switch-down", "p7-t1-0@1us"}, []string{"no switch \"p7-t1-0\""}},
	} {
		code, _, errOut := mrcgen(t, append([]string{"sim", "-p", "tiny", "--svg", svg}, tc.args...)...)
		if code == 0 {
			t.Errorf("%v: exit 0", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: error %q does not say %q", tc.args, errOut, w)
			}
		}
	}
	if _, err := os.Stat(svg); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote %s", svg)
	}
}
