package deploy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/deploy"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

// fakeCompiled builds tiny and marks its programs compiled with a stand-in
// device config: the test servers accept any config (BMv2 itself is
// exercised in bmv2-tests).
func fakeCompiled(t *testing.T) *artifacts.Build {
	t.Helper()
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := artifacts.Write(context.Background(), f, dir, artifacts.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for key, p := range b.Manifest.Programs {
		p.BMv2JSON = strings.TrimSuffix(p.P4, ".p4") + ".json"
		if err := os.WriteFile(filepath.Join(dir, p.BMv2JSON), []byte(`{"program":"`+key+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		b.Manifest.Programs[key] = p
	}
	return b
}

func allTargets(b *artifacts.Build) *targets.File {
	yes := true
	t := &targets.File{Defaults: targets.Endpoint{Insecure: &yes, ElectionID: 1}, Devices: map[string]targets.Endpoint{}}
	for _, d := range b.Manifest.Devices {
		t.Devices[d.Name] = targets.Endpoint{Address: "passthrough:///" + d.Name, DeviceID: 1}
	}
	return t
}

// TestPushTinyTwice pushes every device of tiny to in-process servers, then
// again: the second push writes nothing. Entries of runtime-owned tables
// (a QP context written "at run time") survive the re-push.
func TestPushTinyTwice(t *testing.T) {
	b := fakeCompiled(t)
	tf := allTargets(b)
	jobs, err := deploy.Plan(b, tf, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]*p4rttest.Server{}
	for i := range jobs {
		s := p4rttest.Start(p4rttest.Options{})
		t.Cleanup(s.Close)
		servers[jobs[i].Target.Name] = s
		jobs[i].Target.Address = s.Address()
		jobs[i].Target.DialOptions = s.DialOptions()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := push.PushAll(ctx, jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range res {
		total += r.Inserted
		if !r.PipelinePushed {
			t.Errorf("%s: pipeline not pushed on a fresh device", r.Device)
		}
	}
	want := 0
	for _, d := range b.Manifest.Devices {
		want += d.Entries
	}
	if total != want {
		t.Errorf("first push inserted %d entries, want %d", total, want)
	}

	// A runtime QP context on one NIC, written by "the host".
	nic := servers["nic-0"]
	qp := &p4v1.TableEntry{TableId: b.NIC.Table(schema.NICQPRecv).ID,
		Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{7}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000114, Params: []*p4v1.Action_Param{
			{ParamId: 1, Value: []byte{0}}, {ParamId: 2, Value: []byte{9}}, {ParamId: 3, Value: []byte{1}}, {ParamId: 4, Value: []byte{0}}}}}}}
	nic.Seed(qp)

	for _, s := range servers {
		s.ResetStats()
	}
	res, err = push.PushAll(ctx, jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Inserted+r.Modified+r.Deleted != 0 || !r.PipelineSkipped {
			t.Errorf("%s: second push: %+v", r.Device, r)
		}
		if st := servers[r.Device].Stats(); st.WriteRPCs != 0 {
			t.Errorf("%s: second push sent %d Write RPCs", r.Device, st.WriteRPCs)
		}
	}
	// Someone sets a switch's usid_route default to forward: the next push
	// restores the program's default with one MODIFY.
	sw := servers["p0-t1-0"]
	route := b.Switch.Table(schema.SwitchRoute)
	var forward uint32
	for _, r := range route.Actions {
		if r.Scope == schema.TableOnly && len(r.Action.Params) > 0 {
			forward = r.Action.ID
			break
		}
	}
	params := []*p4v1.Action_Param{}
	for i := range b.Switch.ActionByID(forward).Params {
		params = append(params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: []byte{1}})
	}
	sw.SetDefault(&p4v1.TableEntry{TableId: route.ID, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: forward, Params: params}}}})
	res, err = push.PushAll(ctx, jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		want := 0
		if r.Device == "p0-t1-0" {
			want = 1
		}
		if r.Modified != want || r.Inserted+r.Deleted != 0 {
			t.Errorf("%s: push after the default changed: %s, want %d modify", r.Device, r.Diff.Summary(), want)
		}
	}
	if got := sw.DefaultEntry(route.ID).GetAction().GetAction().GetActionId(); got != route.Default.ID {
		t.Errorf("usid_route default after push: action %#x, want %s (%#x)", got, route.Default.Name, route.Default.ID)
	}

	found := false
	for _, e := range nic.TableEntries() {
		if e.GetTableId() == qp.TableId {
			found = true
		}
	}
	if !found {
		t.Error("the re-push deleted the runtime QP context")
	}
}

// TestRefusedBeforeWriting: a device without a target and a foreign
// P4Info are refused by Plan, before any connection.
func TestRefusedBeforeWriting(t *testing.T) {
	b := fakeCompiled(t)
	tf := allTargets(b)
	delete(tf.Devices, "p1-t1-1")
	if _, err := deploy.Plan(b, tf, deploy.Options{}); err == nil || !strings.Contains(err.Error(), "no target for p1-t1-1") {
		t.Errorf("missing target: got %v", err)
	}

	tf = allTargets(b)
	b = fakeCompiled(t)
	info := filepath.Join(b.Dir, b.Manifest.Programs[artifacts.ProgramNIC].P4Info)
	data, _ := os.ReadFile(info)
	if err := os.WriteFile(info, []byte(strings.Replace(string(data), `name: "own_row"`, `name: "own_rank"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := deploy.Plan(b, tf, deploy.Options{}); err == nil || !strings.Contains(err.Error(), "P4Info") {
		t.Errorf("foreign P4Info: got %v", err)
	}
}

// withServers points every job at its own in-process server.
func withServers(t *testing.T, jobs []push.Job) map[string]*p4rttest.Server {
	t.Helper()
	servers := map[string]*p4rttest.Server{}
	for i := range jobs {
		s := p4rttest.Start(p4rttest.Options{})
		t.Cleanup(s.Close)
		servers[jobs[i].Target.Name] = s
		jobs[i].Target.Address = s.Address()
		jobs[i].Target.DialOptions = s.DialOptions()
	}
	return servers
}

// TestOnlyWhatIsNeeded: a push needs the compiled JSON only of the chosen
// devices' programs, and only for devices without the build's pipeline; a
// dry run needs none, and a program not chosen is not even read.
func TestOnlyWhatIsNeeded(t *testing.T) {
	b := fakeCompiled(t)
	tf := allTargets(b)
	uncompile := func(key string) {
		p := b.Manifest.Programs[key]
		p.BMv2JSON = ""
		b.Manifest.Programs[key] = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The NIC program is not compiled and its P4Info is unreadable: a
	// push to switches does not care.
	uncompile(artifacts.ProgramNIC)
	nicInfo := filepath.Join(b.Dir, b.Manifest.Programs[artifacts.ProgramNIC].P4Info)
	if err := os.Rename(nicInfo, nicInfo+".away"); err != nil {
		t.Fatal(err)
	}
	jobs, err := deploy.Plan(b, tf, deploy.Options{Devices: []string{"p0-t0-0", "p0-t1-0"}})
	if err != nil {
		t.Fatalf("push to switches refused over the NIC program: %v", err)
	}
	withServers(t, jobs)
	if _, err := push.PushAll(ctx, jobs, 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(nicInfo+".away", nicInfo); err != nil {
		t.Fatal(err)
	}

	// Nothing compiled: a dry run of every device works (P4Info only).
	uncompile(artifacts.ProgramSwitch)
	jobs, err = deploy.Plan(b, tf, deploy.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	withServers(t, jobs)
	res, err := push.PushAll(ctx, jobs, 4, nil)
	if err != nil {
		t.Fatalf("dry run without compiled programs: %v", err)
	}
	for _, r := range res {
		if !r.PipelinePushed || r.Diff == nil || r.Diff.Count(reconcile.Insert) == 0 {
			t.Errorf("%s: dry run %+v, want a pipeline and inserts to come", r.Device, r)
		}
	}

	// A real push without JSON: the device already running the build's
	// pipeline (same cookie) is pushed; a fresh one fails alone, before
	// anything is written to it, naming the missing compile.
	jobs, err = deploy.Plan(b, tf, deploy.Options{Devices: []string{"p0-t1-0", "p0-t1-1"}})
	if err != nil {
		t.Fatal(err)
	}
	servers := withServers(t, jobs)
	ready := servers["p0-t1-0"]
	seed, err := client.New(client.Config{Address: ready.Address(), DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
		Transport: client.Transport{Insecure: true}, DialOptions: ready.DialOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := seed.ForcePipeline(ctx, jobs[0].Desired.P4Info, []byte("compiled elsewhere"), b.Manifest.Programs[artifacts.ProgramSwitch].Cookie); err != nil {
		t.Fatal(err)
	}
	seed.Close()
	res, err = push.PushAll(ctx, jobs, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "p0-t1-1") || !strings.Contains(err.Error(), "not compiled") || strings.Contains(err.Error(), "p0-t1-0") {
		t.Fatalf("push without JSON: %v, want p0-t1-1 (fresh) alone to fail as not compiled", err)
	}
	if !res[0].PipelineSkipped || res[0].Inserted == 0 || res[0].Err != nil {
		t.Errorf("p0-t1-0 (build's pipeline): %+v, want its entries pushed", res[0])
	}
	if st := servers["p0-t1-1"].Stats(); st.WriteRPCs+st.SetPipelines != 0 {
		t.Errorf("p0-t1-1: written to although its pipeline is not compiled: %+v", st)
	}
}

// TestPushRefusesEditedBMv2JSON: the compiled JSON is checked against the
// sha256 compile recorded before it goes to a device; an edited one is
// refused, naming the file, and nothing is written to the device.
func TestPushRefusesEditedBMv2JSON(t *testing.T) {
	b := fakeCompiled(t)
	p := b.Manifest.Programs[artifacts.ProgramSwitch]
	path := filepath.Join(b.Dir, p.BMv2JSON)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	p.BMv2JSONSHA256 = hex.EncodeToString(sum[:])
	b.Manifest.Programs[artifacts.ProgramSwitch] = p
	if err := os.WriteFile(path, append(data, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, err := deploy.Plan(b, allTargets(b), deploy.Options{Devices: []string{"p0-t1-0"}})
	if err != nil {
		t.Fatal(err)
	}
	servers := withServers(t, jobs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = push.PushAll(ctx, jobs, 1, nil)
	var ce *artifacts.ChecksumError
	if !errors.As(err, &ce) || ce.File != p.BMv2JSON {
		t.Fatalf("push of an edited BMv2 JSON: %v, want a checksum error naming %s", err, p.BMv2JSON)
	}
	if st := servers["p0-t1-0"].Stats(); st.WriteRPCs+st.SetPipelines != 0 {
		t.Errorf("written to although the JSON was edited: %+v", st)
	}
}
