package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/p4/p4c"
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
		EVs      []struct {
			Slot, Plane, T1 int
			EV              string
			BackupEV        string `json:"backup_ev"`
			BackupT1        *int   `json:"backup_t1"`
		}
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan --json is not JSON: %v", err)
	}
	if len(plan.Switches) != 8 || len(plan.Hosts) != 4 || len(plan.Links) != 16 || len(plan.EVs) != 16 {
		t.Errorf("tiny plan: %d switches, %d hosts, %d links, %d EV slots; want 8, 4, 16, 16", len(plan.Switches), len(plan.Hosts), len(plan.Links), len(plan.EVs))
	}
	// Slot 2 of tiny: plane 0, T1 1; its backup crosses T1 0 with salt 18.
	if len(plan.EVs) > 2 {
		e := plan.EVs[2]
		if e.Slot != 2 || e.Plane != 0 || e.EV != "0x00040002" || e.T1 != 1 || e.BackupEV != "0x00000012" || e.BackupT1 == nil || *e.BackupT1 != 0 {
			t.Errorf("slot 2: %+v", e)
		}
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

// TestBuildForceKeepsUserDirectory: --force never replaces a directory that
// is not an mrcgen build (`-d ~ --force` must not delete a home).
func TestBuildForceKeepsUserDirectory(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".bashrc"), []byte("export PS1='$ '\n"), 0o644)
	for _, args := range [][]string{{"build", "-d", home}, {"build", "-d", home, "--force"}} {
		code, _, errOut := mrcgen(t, args...)
		if code == 0 || !strings.Contains(errOut, home+" exists and is not an mrcgen build") {
			t.Errorf("%q: exit %d, %s", args, code, errOut)
		}
		if data, err := os.ReadFile(filepath.Join(home, ".bashrc")); err != nil || string(data) != "export PS1='$ '\n" {
			t.Fatalf("%q: the user's file is gone or changed: %q, %v", args, data, err)
		}
	}
	// A build of another fabric needs --force.
	dir := filepath.Join(t.TempDir(), "b")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatal(e)
	}
	if code, _, e := mrcgen(t, "build", "-p", "small", "-d", dir); code == 0 || !strings.Contains(e, `holds the build of fabric "tiny", not "small"`) {
		t.Errorf("another fabric without --force: exit %d, %s", code, e)
	}
	if code, _, e := mrcgen(t, "build", "-p", "small", "-d", dir, "--force"); code != 0 {
		t.Errorf("another fabric with --force: %s", e)
	}
}

// TestBuildHelpListsWhatBuildWrites compares the file list of `build
// --help` with the files a tiny build writes: every file matches one listed
// pattern, and every pattern matches a file.
func TestBuildHelpListsWhatBuildWrites(t *testing.T) {
	code, help, _ := mrcgen(t, "build", "--help")
	if code != 0 {
		t.Fatal("build --help failed")
	}
	// The list: lines "  <path pattern>   <what>" after "into one directory:".
	_, list, ok := strings.Cut(help, "into one directory:\n")
	if !ok {
		t.Fatalf("no file list in:\n%s", help)
	}
	line := regexp.MustCompile(`^  (\S+)\s{2,}\S`)
	var patterns []string
	var res []*regexp.Regexp
	for _, l := range strings.Split(list, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			break
		}
		patterns = append(patterns, m[1])
		// <name> is one path element's worth of name.
		re := regexp.QuoteMeta(m[1])
		re = regexp.MustCompile(`<[a-zA-Z]+>`).ReplaceAllString(re, `[^/]+`)
		res = append(res, regexp.MustCompile("^"+re+"$"))
	}
	if len(patterns) < 5 {
		t.Fatalf("file list %q", patterns)
	}
	dir := filepath.Join(t.TempDir(), "b")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatal(e)
	}
	used := make([]int, len(res))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		n := 0
		for i, re := range res {
			if re.MatchString(rel) {
				used[i]++
				n++
			}
		}
		if n != 1 {
			t.Errorf("build wrote %s, which %d patterns of the help match (%q)", rel, n, patterns)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range used {
		if n == 0 {
			t.Errorf("the help lists %s, which the build did not write", patterns[i])
		}
	}
}

func TestBuildJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	code, out, errOut := mrcgen(t, "build", "-d", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var sum struct {
		Fabric, Dir string
		Seconds     float64
		Roles       []struct {
			Role             string
			Devices, Entries int
		}
		Files   int
		Tables  int
		Entries int64
		Bytes   int64
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("build -o json is not JSON: %v\n%s", err, out)
	}
	// tiny: 4 T0s, 4 T1s, 4 NICs; 8 switch tables, common, clones, 2 rows,
	// 2 ports, in two files.
	if sum.Fabric != "tiny" || sum.Dir != dir || sum.Seconds <= 0 || sum.Files != 2 || sum.Tables != 14 || sum.Entries == 0 || sum.Bytes == 0 {
		t.Errorf("summary %+v", sum)
	}
	roles := map[string]int{}
	for _, r := range sum.Roles {
		roles[r.Role] = r.Devices
	}
	if roles["t0"] != 4 || roles["t1"] != 4 || roles["nic"] != 4 || len(roles) != 3 {
		t.Errorf("devices per role %v", roles)
	}
}

// verifyOut is the part of verify's JSON the tests read.
type verifyOut struct {
	Result           string
	Paths, Delivered uint64
	Failures         []struct {
		Device, File, Table, Key, Problem string
		Paths                             []string
	}
	Lost []struct {
		Plane     int
		T1        *string
		DstT0     *string `json:"dst_t0"`
		SrcT0     string  `json:"src_t0"`
		HostPairs uint64  `json:"host_pairs"`
		EVSlots   []int   `json:"ev_slots"`
		Reason    string
	}
}

func parseVerify(t *testing.T, out string) verifyOut {
	t.Helper()
	var v verifyOut
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify -o json is not JSON: %v\n%s", err, out)
	}
	return v
}

func TestVerifyJSON(t *testing.T) {
	code, out, errOut := mrcgen(t, "verify", "-p", "tiny", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if v := parseVerify(t, out); v.Result != "OK" || v.Paths != 40 || v.Delivered != 40 || len(v.Failures) != 0 || len(v.Lost) != 0 {
		t.Errorf("tiny: %+v", v)
	}

	// --fail: the lost classes and the EV slots they lose.
	code, out, errOut = mrcgen(t, "verify", "-p", "tiny", "--fail", "p0-t0-0:p0-t1-1", "-o", "json")
	if code != 0 {
		t.Fatalf("--fail: exit %d: %s", code, errOut)
	}
	v := parseVerify(t, out)
	if v.Result != "failed" || v.Delivered != 32 || len(v.Lost) != 2 {
		t.Fatalf("--fail: %+v", v)
	}
	for _, l := range v.Lost {
		// tiny's slots of plane 0, T1 1: 2, 6, 10, 14.
		if l.Plane != 0 || l.T1 == nil || *l.T1 != "p0-t1-1" || l.DstT0 == nil || *l.DstT0 == l.SrcT0 || l.HostPairs != 4 || fmt.Sprint(l.EVSlots) != "[2 6 10 14]" || !strings.Contains(l.Reason, "is down") {
			t.Errorf("--fail: lost %+v", l)
		}
	}

	// A build whose tables are wrong (and whose manifest says so: this is
	// not a damaged file): the failure names switch, file, table and key.
	// (--text: the test edits the file as text; the reader is the same.)
	dir := filepath.Join(t.TempDir(), "b")
	if code, _, e := mrcgen(t, "build", "--text", "-d", dir); code != 0 {
		t.Fatal(e)
	}
	rel := "switches.txtpb#p0-t1-0"
	data := readTable(t, dir, rel)
	var kept []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, `\xfc\xbb\xbb\x00\x04\x01`) || !strings.Contains(line, "table_id:33554434") {
			kept = append(kept, line)
		}
	}
	rewriteTable(t, dir, rel, []byte(strings.Join(kept, "")))
	code, out, errOut = mrcgen(t, "verify", "--build", dir, "-o", "json")
	if code == 0 || !strings.Contains(errOut, "paths not delivered") {
		t.Errorf("a broken build: exit %d, %s", code, errOut)
	}
	v = parseVerify(t, out)
	if v.Result != "failed" || len(v.Failures) != 1 {
		t.Fatalf("broken build: %s", out)
	}
	f := v.Failures[0]
	if f.Device != "p0-t1-0" || f.File != rel || f.Table != "SwitchIngress.usid_route" || f.Key != "fcbb:bb00:401::/48 (uN of p0-t0-1)" ||
		!slices.Equal(f.Paths, []string{"p0-t0-0 -> p0-t0-1 via p0-t1-0"}) {
		t.Errorf("failure %+v", f)
	}
	if strings.Contains(out, `\u003e`) {
		t.Errorf("JSON escapes '>': %s", out)
	}
}

// buildManifest is the part of a build's manifest.json the tests edit.
type buildManifest struct {
	raw   map[string]any
	files map[string]any
}

func readBuildManifest(t *testing.T, dir string) buildManifest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m buildManifest
	if err := json.Unmarshal(raw, &m.raw); err != nil {
		t.Fatal(err)
	}
	m.files = m.raw["files"].(map[string]any)
	return m
}

// span is where a table "<file>#<part>" of a build lies in its file.
func (m buildManifest) span(t *testing.T, key string) (file string, off, n int) {
	t.Helper()
	file, _, ok := strings.Cut(key, "#")
	fi, _ := m.files[key].(map[string]any)
	if !ok || fi == nil {
		t.Fatalf("manifest lists no range %s", key)
	}
	o, _ := fi["offset"].(float64)
	return file, int(o), int(fi["bytes"].(float64))
}

// readTable returns the bytes of a table "<file>#<part>" of a build.
func readTable(t *testing.T, dir, key string) []byte {
	t.Helper()
	file, off, n := readBuildManifest(t, dir).span(t, key)
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return data[off : off+n]
}

// rewriteTable replaces a table "<file>#<part>" of a build with data and
// records it in the manifest as the build would have: its size and sha256,
// and the offsets of the ranges after it.
func rewriteTable(t *testing.T, dir, key string, data []byte) {
	t.Helper()
	m := readBuildManifest(t, dir)
	file, off, n := m.span(t, key)
	full := filepath.Join(dir, file)
	old, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	spliced := append(append(slices.Clone(old[:off]), data...), old[off+n:]...)
	if err := os.WriteFile(full, spliced, 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range m.files {
		fi := v.(map[string]any)
		if f, _, _ := strings.Cut(k, "#"); f == file {
			if o, _ := fi["offset"].(float64); int(o) > off {
				fi["offset"] = int(o) + len(data) - n
			}
		}
	}
	sum := sha256.Sum256(data)
	fi := m.files[key].(map[string]any)
	fi["sha256"], fi["bytes"] = hex.EncodeToString(sum[:]), len(data)
	raw, _ := json.Marshal(m.raw)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyBuildEVSet is the case: every ev_set entry deleted from
// the NICs' common table (manifest updated, so the file reads) must fail
// verify.
func TestVerifyBuildEVSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	if code, _, e := mrcgen(t, "build", "--text", "-d", dir); code != 0 {
		t.Fatal(e)
	}
	rel := "nics.txtpb#common"
	data := readTable(t, dir, rel)
	var kept []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, "table_id:33554690 ") { // NicIngress.ev_set
			kept = append(kept, line)
		}
	}
	if len(kept) != strings.Count(string(data), "\n")+1-16 {
		t.Fatalf("removed %d lines, want tiny's 16 EVs", strings.Count(string(data), "\n")+1-len(kept))
	}
	rewriteTable(t, dir, rel, []byte(strings.Join(kept, "")))
	code, out, errOut := mrcgen(t, "verify", "--build", dir)
	want := "FAIL: every NIC (nics.txtpb#common): table NicIngress.ev_set slots 0-15: no entry"
	if code == 0 || !strings.Contains(errOut, want) || strings.Contains(out, "OK") ||
		!strings.Contains(errOut, "every path delivered, but 1 problem found") {
		t.Errorf("exit %d\n%s%s\nwant %q", code, out, errOut, want)
	}
}

// TestCompileJSON: compile -o json names both programs, their BMv2 JSON and
// its sha256, which is the file's. Needs p4c-bm2-ss.
func TestCompileJSON(t *testing.T) {
	if _, err := p4c.Find(""); err != nil {
		if os.Getenv("MRCGEN_REQUIRE_BMV2") == "1" {
			t.Fatal(err)
		}
		t.Skipf("compile needs p4c-bm2-ss: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatalf("build: %s", e)
	}
	code, out, errOut := mrcgen(t, "compile", "--build", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("compile: %s", errOut)
	}
	var got struct {
		Programs []struct {
			Program  string `json:"program"`
			BMv2JSON string `json:"bmv2_json"`
			SHA256   string `json:"bmv2_json_sha256"`
		} `json:"programs"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("compile -o json is not JSON: %v\n%s", err, out)
	}
	if len(got.Programs) != 2 {
		t.Fatalf("compile -o json lists %d programs, want 2:\n%s", len(got.Programs), out)
	}
	for _, p := range got.Programs {
		data, err := os.ReadFile(p.BMv2JSON)
		if err != nil {
			t.Fatalf("%s: %v", p.Program, err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != p.SHA256 {
			t.Errorf("%s: sha256 %s is not the file's", p.Program, p.SHA256)
		}
	}
}
