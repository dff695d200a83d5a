package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

func TestPresetsJSON(t *testing.T) {
	code, out, errOut := mrcgen(t, "presets", "-o", "json")
	var list []fabricSummary
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "mrc-131k,mrc-1k,small,tiny" || list[0].Hosts != 131072 || list[1].Hosts != 1024 || list[1].Switches != 512 || list[3].Switches != 8 {
		t.Errorf("presets: %+v", list)
	}

	// --show -o json is the fabric file as JSON: it decodes (JSON is YAML)
	// to the preset.
	code, out, errOut = mrcgen(t, "presets", "--show", "small", "-o", "json")
	if code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	f, err := fabric.Parse("small.json", strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if small, _ := fabric.FromPreset("small"); *f != *small {
		t.Errorf("--show small -o json resolves to %+v", f)
	}
}

// TestPresetsShowLinks: a preset printed as a fabric file, in YAML or
// JSON, names its link delays, and so does the plan's fabric.
func TestPresetsShowLinks(t *testing.T) {
	code, out, errOut := mrcgen(t, "presets", "--show", "tiny")
	if code != 0 || !strings.Contains(out, "\nlinks:\n    nic_t0_ns: 10\n    t0_t1_ns: 150\n") {
		t.Errorf("presets --show tiny: exit %d, no links section:\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"presets", "--show", "small", "-o", "json"}, {"plan", "-p", "small", "-o", "json", "--section", "switches"}} {
		code, out, errOut := mrcgen(t, args...)
		var v struct {
			Links  *fabric.LinkSpec `json:"links"`
			Fabric struct {
				Links *fabric.LinkSpec `json:"links"`
			} `json:"fabric"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Errorf("%v: exit %d: %.200s%s", args, code, out, errOut)
			continue
		}
		got := v.Links
		if args[0] == "plan" {
			got = v.Fabric.Links
		}
		if want := (fabric.LinkSpec{NICT0Ns: 10, T0T1Ns: 150}); got == nil || *got != want {
			t.Errorf("%v: links %+v, want %+v", args, got, want)
		}
	}
}

func TestSchemaIgnoresTableFormat(t *testing.T) {
	_, table, _ := mrcgen(t, "schema", "-o", "table")
	code, js, _ := mrcgen(t, "schema", "-o", "json")
	if code != 0 || table != js || !json.Valid([]byte(js)) {
		t.Errorf("schema -o table and -o json differ or are not JSON")
	}
}

func TestOutputFormatRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bad  string
	}{
		{[]string{"-o", "xml", "validate"}, "xml"},
		{[]string{"validate", "--output", "xml"}, "xml"},
		{[]string{"presets", "-o", "yaml"}, "yaml"},
	} {
		code, out, errOut := mrcgen(t, tc.args...)
		if code == 0 || out != "" || !strings.Contains(errOut, `unknown output format "`+tc.bad+`": want table or json`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}
