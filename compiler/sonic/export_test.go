package sonic_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/sonic"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

func writeExport(t *testing.T, preset string) (*sonic.Export, string) {
	t.Helper()
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sonic")
	idx, err := sonic.Write(context.Background(), f, dir, sonic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Switches) != f.Switches() {
		t.Fatalf("index lists %d switches, fabric has %d", len(idx.Switches), f.Switches())
	}
	e, err := sonic.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return e, dir
}

// TestExportVerifies proves every path of tiny and small through the
// switch tables read back from the written fragments, and shows the SONiC
// tables and the P4 tables are the same switch by switch.
func TestExportVerifies(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		e, _ := writeExport(t, preset)
		g := tables.NewGenerator(e.Plan)
		for _, s := range e.Plan.Switches() {
			entries, err := e.SwitchEntries(s)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := verify.DecodeSwitch(entries)
			want, _ := verify.DecodeSwitch(g.SwitchEntries(s, nil))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: SONiC tables %+v, P4 tables %+v", preset, e.Plan.Name(s), got, want)
			}
		}
		rep, err := verify.Run(context.Background(), e.Plan, e, verify.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Paths == 0 {
			t.Errorf("%s: %d of %d paths delivered: %v", preset, rep.Delivered, rep.Paths, rep.Failures)
		}
		if b := e.Blame(); len(b) > 0 {
			t.Errorf("%s: %v", preset, b)
		}
	}
}

// TestDamagedRouteFailsVerify: one route of p0-t0-0 moved to the wrong up
// port (with the right next hop for that port, so the fragment reads fine)
// makes the proof fail, and Blame names the switch and the route.
func TestDamagedRouteFailsVerify(t *testing.T) {
	e, dir := writeExport(t, "tiny")
	s, _ := e.Plan.SwitchByName("p0-t0-0")
	fr, err := e.Fragment(s)
	if err != nil {
		t.Fatal(err)
	}
	fr["STATIC_ROUTE"]["default|fcbb:bb00:801::/48"] = map[string]string{"nexthop": "fd00:6d72:6c00::1", "ifname": "Ethernet2"}
	data, err := sonic.Marshal(fr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sonic.SwitchPath(e.Plan, s)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(context.Background(), e.Plan, e, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatal("verify accepts a route to the wrong T1")
	}
	// Half of p0-t0-0's long paths in plane 0 cross T1 1: 2 hosts x 2 far
	// hosts each.
	if lost := rep.Paths - rep.Delivered; lost != 4 {
		t.Errorf("%d paths lost, want 4 (p0-t0-0's 2 hosts to the 2 hosts of p0-t0-1 through T1 1)", lost)
	}
	want := "p0-t0-0: STATIC_ROUTE default|fcbb:bb00:801::/48 leaves by Ethernet2 (to p0-t1-0), but fcbb:bb00:801::/48 is p0-t1-1's, by Ethernet3"
	if b := e.Blame(); len(b) != 1 || b[0] != want {
		t.Errorf("Blame = %q\nwant [%q]", b, want)
	}
}

// TestWriteIsAtomic: a fabric that does not fit its target writes nothing;
// a directory that is not an export is not replaced; an export is.
func TestWriteIsAtomic(t *testing.T) {
	root := t.TempDir()
	d := fabric.Default()
	d.SONiC.Target = "spectrum-4"
	f, _ := fabric.Resolve(d)
	dir := filepath.Join(root, "out")
	if _, err := sonic.Write(context.Background(), f, dir, sonic.Options{}); err == nil || !strings.Contains(err.Error(), "raise trim.size_bytes to 256") {
		t.Errorf("export for spectrum-4 with a 134-byte trim: %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("a refused export left %v", entries)
	}
	other := filepath.Join(root, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "keep"), []byte("x"), 0o644)
	tiny, _ := fabric.FromPreset("tiny")
	if _, err := sonic.Write(context.Background(), tiny, other, sonic.Options{}); err == nil || !strings.Contains(err.Error(), "not an mrcgen SONiC export") {
		t.Errorf("replacing a foreign directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "keep")); err != nil {
		t.Error("the foreign directory was touched")
	}
	for i := 0; i < 2; i++ {
		if _, err := sonic.Write(context.Background(), tiny, dir, sonic.Options{}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 2 {
		t.Errorf("after two exports the parent holds %v, want out and other", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "p1-t1-1", "config_db.json")); err != nil {
		t.Error(err)
	}
	// An export into which someone put a file of their own is not replaced.
	notes := filepath.Join(dir, "notes.md")
	os.WriteFile(notes, []byte("x"), 0o644)
	if _, err := sonic.Write(context.Background(), tiny, dir, sonic.Options{}); err == nil || !strings.Contains(err.Error(), "notes.md, which the export did not write") {
		t.Errorf("replacing an export holding notes.md: %v", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Error("notes.md was removed")
	}
}
