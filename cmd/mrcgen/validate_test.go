package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidateJSON(t *testing.T) {
	path := writeFile(t, "bad.yaml", "name: lab\nplanes: two\nt0:\n  cont: 2\nt1: {count: 3}\n")
	code, out, errOut := mrcgen(t, "validate", "-f", path, "-o", "json")
	if code == 0 {
		t.Fatalf("an invalid fabric validated: %s", out)
	}
	if !strings.Contains(errOut, "3 problems") {
		t.Errorf("stderr: %s", errOut)
	}
	type problem struct {
		Field  string  `json:"field"`
		Value  *string `json:"value"`
		Reason string  `json:"reason"`
		Line   int     `json:"line"`
	}
	var r struct {
		Valid    bool            `json:"valid"`
		Fabric   json.RawMessage `json:"fabric"`
		Warnings []string        `json:"warnings"`
		Errors   []problem       `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	str := func(s string) *string { return &s }
	want := []problem{
		{"planes", str("two"), "want an integer", 2},
		{"t0.cont", nil, "unknown field (did you mean count?)", 4},
		{"t1.count", str("3"), "every T0 has one up port to each T1, so t1.count must equal t0.up_ports (2)", 5},
	}
	if r.Valid || r.Fabric != nil || !reflect.DeepEqual(r.Errors, want) {
		t.Errorf("report: %s", out)
	}

	// A file that cannot be read is reported the same way.
	code, out, _ = mrcgen(t, "validate", "-f", filepath.Join(t.TempDir(), "none.yaml"), "-o", "json")
	if code == 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Reason, "no such file") {
		t.Errorf("missing file: exit %d, %s", code, out)
	}

	code, out, errOut = mrcgen(t, "validate", "-p", "mrc-131k", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ok struct {
		Valid    bool           `json:"valid"`
		Fabric   map[string]any `json:"fabric"`
		Warnings []string       `json:"warnings"`
		Errors   []problem      `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &ok); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if !ok.Valid || ok.Fabric["name"] != "mrc-131k" || ok.Fabric["hosts"] != 131072.0 || ok.Fabric["switches"] != 6144.0 ||
		len(ok.Warnings) != 2 || ok.Errors == nil || len(ok.Errors) != 0 {
		t.Errorf("report: %s", out)
	}
	if errOut != "" {
		t.Errorf("warnings also on stderr with -o json: %s", errOut)
	}
}

func TestEmptyFabricFileRefused(t *testing.T) {
	path := writeFile(t, "empty.yaml", "# nothing here yet\n")
	code, _, errOut := mrcgen(t, "validate", "-f", path)
	if code == 0 || !strings.Contains(errOut, "fabric file is empty") {
		t.Errorf("empty file: exit %d, %s", code, errOut)
	}
	dir := filepath.Join(t.TempDir(), "never")
	if code, _, _ := mrcgen(t, "build", "-f", path, "-d", dir); code == 0 {
		t.Errorf("an empty file was built")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("build of an empty file left %s: %v", dir, err)
	}
	path = writeFile(t, "tiny.yaml", "base: tiny\n")
	if code, out, errOut := mrcgen(t, "validate", "-f", path); code != 0 || !strings.Contains(out, `fabric "tiny" is valid`) {
		t.Errorf("base: tiny: exit %d, %s%s", code, out, errOut)
	}
}

// TestValidateWindow: a valid fabric's report gives the receive window,
// K and the send window it derived (mrc-1k: 1024, 8, 128; a file setting
// the window keeps it and derives K from it: set 64 over mrc-1k's 256
// slots, 3 + 1 + 1 = 5, so 8).
func TestValidateWindow(t *testing.T) {
	path := writeFile(t, "w.yaml", "base: mrc-1k\nname: w\nnic: {window_packets: 64}\n")
	for _, c := range []struct {
		args          []string
		window, k, sw int
	}{{[]string{"-p", "mrc-1k"}, 1024, 8, 128}, {[]string{"-f", path}, 64, 8, 64}} {
		code, out, errOut := mrcgen(t, append(append([]string{"validate"}, c.args...), "-o", "json")...)
		var r struct {
			Fabric struct {
				Window int `json:"receive_window_packets"`
				K      int `json:"unanswered_sends"`
				Send   int `json:"send_window_packets"`
			} `json:"fabric"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Fabric.Window != c.window || r.Fabric.K != c.k || r.Fabric.Send != c.sw {
			t.Errorf("validate %v: exit %d, %s%s; want window %d, K %d, send window %d", c.args, code, out, errOut, c.window, c.k, c.sw)
		}
	}
}
