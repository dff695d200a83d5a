package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
)

// pushLab builds tiny (not compiled) and serves one switch, p0-t0-0, on a
// loopback P4Runtime test server that already runs the build's pipeline
// (its cookie), so that push needs no compiled JSON. It returns the build
// directory, a targets file for that switch and the server.
func pushLab(t *testing.T) (dir, targetsFile string, s *p4rttest.Server) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "b")
	if code, _, e := mrcgen(t, "build", "-d", dir); code != 0 {
		t.Fatal(e)
	}
	b, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pr := b.Manifest.Programs[b.Manifest.Device("p0-t0-0").Program]
	info, err := p4c.ReadP4Info(filepath.Join(dir, pr.P4Info))
	if err != nil {
		t.Fatal(err)
	}
	s = p4rttest.Start(p4rttest.Options{TCP: true})
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.New(client.Config{Address: s.Address(), DeviceID: 1, ElectionID: client.ElectionID{Low: 1}, Transport: client.Transport{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.ForcePipeline(ctx, info, []byte("compiled elsewhere"), pr.Cookie); err != nil {
		t.Fatal(err)
	}
	targetsFile = filepath.Join(t.TempDir(), "targets.yaml")
	yaml := fmt.Sprintf("defaults: {insecure: true}\ndevices:\n  p0-t0-0: {address: %q, device_id: 1}\n", s.Address())
	if err := os.WriteFile(targetsFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, targetsFile, s
}

// TestPushDryRunJSON: --dry-run -o json gives the diff per device with
// counts and every entity named, without a compiled program.
func TestPushDryRunJSON(t *testing.T) {
	dir, tf, s := pushLab(t)
	code, out, errOut := mrcgen(t, "push", "--build", dir, "--targets", tf, "--device", "p0-t0-0", "--dry-run", "-o", "json")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errOut)
	}
	var rep pushJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("dry run output is not JSON: %v\n%s", err, out)
	}
	if !rep.DryRun || len(rep.Devices) != 1 || rep.Devices[0].Diff == nil {
		t.Fatalf("dry run report: %s", out)
	}
	d := rep.Devices[0]
	if d.Device != "p0-t0-0" || d.Pipeline != "same cookie" || d.Diff.Counts.Insert == 0 || len(d.Diff.Inserts) != d.Diff.Counts.Insert ||
		d.Diff.Counts.Modify+d.Diff.Counts.Delete != 0 || !strings.HasPrefix(d.Diff.Inserts[0], "Switch") {
		t.Fatalf("dry run device report: %+v", d)
	}
	if st := s.Stats(); st.WriteRPCs != 0 {
		t.Fatalf("dry run wrote: %+v", st)
	}
}

// TestPushNamesEveryFailure: every refused entity is printed, by table and
// key, in the table output and in --output json.
func TestPushNamesEveryFailure(t *testing.T) {
	dir, tf, s := pushLab(t)
	failFirst := func(n int) {
		seen := 0
		s.SetWriteHook(func(u *p4v1.Update) error {
			if u.GetType() == p4v1.Update_INSERT && !u.GetEntity().GetTableEntry().GetIsDefaultAction() && seen < n {
				seen++
				return status.Error(codes.ResourceExhausted, "table full")
			}
			return nil
		})
	}
	failFirst(2)
	code, out, errOut := mrcgen(t, "push", "--build", dir, "--targets", tf, "--device", "p0-t0-0")
	if code == 0 || !strings.Contains(out, "FAILED") {
		t.Fatalf("push with refused entities: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "TIME  CONNECT+READ  WRITE  RESULT") {
		t.Errorf("the table does not split each device's time:\n%s", out)
	}
	if !strings.Contains(errOut, "p0-t0-0: 2 updates refused:") || strings.Count(errOut, "  INSERT Switch") != 2 ||
		strings.Count(errOut, ": RESOURCE_EXHAUSTED: table full") != 2 {
		t.Fatalf("stderr does not name both refused entities:\n%s", errOut)
	}

	// Again: only the two missing entries are written, both refused.
	failFirst(2)
	code, out, _ = mrcgen(t, "push", "--build", dir, "--targets", tf, "--device", "p0-t0-0", "-o", "json")
	var rep pushJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code == 0 {
		t.Fatalf("exit %d, output is not JSON (%v):\n%s", code, err, out)
	}
	d := rep.Devices[0]
	if rep.Failed != 1 || d.Error == "" || len(d.Failures) != 2 || d.Inserted != 0 || d.Diff.Counts.Insert != 2 {
		t.Fatalf("JSON report: %s", out)
	}
	if p := d.Phases; p.Connect <= 0 || p.Read <= 0 || p.Write <= 0 || p.Connect+p.Read+p.Write > d.Seconds {
		t.Errorf("phases %+v of a push that wrote, in %fs", p, d.Seconds)
	}
	for _, f := range d.Failures {
		if f.Op != "INSERT" || !strings.HasPrefix(f.Entity, "Switch") || f.Code != "RESOURCE_EXHAUSTED" {
			t.Errorf("failure %+v", f)
		}
	}
}
