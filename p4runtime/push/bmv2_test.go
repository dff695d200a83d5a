package push_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bmv2proc "github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
)

// TestBMv2CloneSessions pushes table entries and clone sessions to
// simple_switch_grpc twice (the second push must find nothing to write,
// which needs PI's answer to the wildcard clone-session read, with its own
// replica order, to match), then changes, removes and adds sessions. It
// skips without the BMv2 tools (fails under MRCGEN_REQUIRE_BMV2=1).
func TestBMv2CloneSessions(t *testing.T) {
	env := startBMv2(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tgt := push.Target{Name: "bmv2", Address: env.addr, DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
		Transport: client.Transport{Insecure: true}}
	entities := env.entries(10)
	for plane := range uint32(4) {
		entities = append(entities, p4rttest.CloneSession(plane+1, plane+1))
	}
	entities = append(entities, p4rttest.CloneSession(5, 9, 8, 7)) // replicas in descending port order
	d := push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: entities}

	res, err := push.PushDevice(ctx, tgt, d, push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 15 || res.Modified+res.Deleted != 0 {
		t.Fatalf("first push: %+v, want 15 inserts", res)
	}

	// PI answers the wildcard read with every session.
	c := newBenchClient(t, env.addr)
	defer c.Close()
	got, err := c.Read(ctx, []*p4v1.Entity{p4rttest.CloneSession(0)})
	if err != nil {
		t.Fatalf("wildcard clone-session read: %v", err)
	}
	var ids []uint32
	for _, e := range got {
		ids = append(ids, e.GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetSessionId())
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []uint32{1, 2, 3, 4, 5}) {
		t.Fatalf("wildcard read answered sessions %v, want 1..5", ids)
	}
	// And a read of a missing id with NOT_FOUND, which ReadCloneSessions
	// takes for "absent" when it falls back to reads by id.
	if _, err := c.Read(ctx, []*p4v1.Entity{p4rttest.CloneSession(77)}); status.Code(err) != codes.NotFound {
		t.Fatalf("read of a missing clone session: %v, want NOT_FOUND", err)
	}

	res, err = push.PushDevice(ctx, tgt, d, push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.PipelineSkipped || !res.Diff.Empty() || res.Diff.Unchanged != 15 {
		t.Fatalf("second push: %s (%+v), want nothing to write", res.Diff.Summary(), res)
	}

	changed := slices.Clone(entities)
	changed[11] = p4rttest.CloneSession(2, 12)             // plane 1 to port 12
	changed = slices.Delete(changed, 10, 11)               // session 1 gone
	changed = append(changed, p4rttest.CloneSession(6, 1)) // new session
	res, err = push.PushDevice(ctx, tgt, push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: changed}, push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 1 || res.Modified != 1 || res.Deleted != 1 {
		t.Fatalf("changed sessions: %s, want 1 of each", res.Diff.Summary())
	}
	current, err := reconcile.ReadCloneSessions(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := reconcile.Compute(changed[10:], current)
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Empty() {
		t.Fatalf("device clone sessions differ from the desired ones: %s", diff.Summary())
	}
}

// TestBMv2DefaultEntry: a default entry changed on simple_switch_grpc (here
// l2_fwd's, to set_port, which l2.p4 allows as a default) is read back
// (a wildcard read does not return it) and MODIFYed back by the next push.
func TestBMv2DefaultEntry(t *testing.T) {
	env := startBMv2(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tgt := push.Target{Name: "bmv2", Address: env.addr, DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
		Transport: client.Transport{Insecure: true}}
	var dropID uint32
	for _, a := range env.info.GetActions() {
		if a.GetPreamble().GetName() == "MyIngress.drop" {
			dropID = a.GetPreamble().GetId()
		}
	}
	drop := p4rttest.DefaultEntry(env.tableID, dropID)
	d := push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: append(env.entries(10), drop)}
	res, err := push.PushDevice(ctx, tgt, d, push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 10 || res.Modified != 0 || res.Diff.Unchanged != 1 {
		t.Fatalf("first push: %s, want 10 inserts and the program's default unchanged", res.Diff.Summary())
	}

	c := newBenchClient(t, env.addr)
	defer c.Close()
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	fwd := p4rttest.DefaultEntry(env.tableID, env.actionID, []byte{3})
	if err := c.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_MODIFY, Entity: fwd}}); err != nil {
		t.Fatalf("set the default to set_port(3): %v", err)
	}
	all, err := c.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: env.tableID}}}})
	if err != nil || len(all) != 10 {
		t.Fatalf("wildcard read: %d entities, %v; want the 10 entries without the default", len(all), err)
	}
	c.Close()

	res, err = push.PushDevice(ctx, tgt, d, push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Modified != 1 || res.Inserted+res.Deleted != 0 {
		t.Fatalf("push after the default changed: %s, want 1 modify", res.Diff.Summary())
	}
	r := newBenchClient(t, env.addr)
	defer r.Close()
	got, err := reconcile.ReadDefaults(ctx, r, []uint32{env.tableID})
	if err != nil || len(got) != 1 || got[0].GetTableEntry().GetAction().GetAction().GetActionId() != dropID {
		t.Fatalf("default after push: %v, %v; want drop()", got, err)
	}
	res, err = push.PushDevice(ctx, tgt, d, push.Options{})
	if err != nil || !res.Diff.Empty() {
		t.Fatalf("third push: %v, %v; want nothing to write", res.Diff.Summary(), err)
	}
}

// startSwitchOnly starts simple_switch_grpc without a pipeline (no p4c
// needed); it skips without the switch (fails under MRCGEN_REQUIRE_BMV2=1).
func startSwitchOnly(t *testing.T) string {
	t.Helper()
	tools, _ := bmv2proc.FindTools()
	if tools.SimpleSwitchGRPC == "" {
		msg := "BMv2 test needs simple_switch_grpc on PATH or in /opt/p4/bin"
		if os.Getenv(requireBMv2Env) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	sw, err := bmv2proc.Start(context.Background(), bmv2proc.Tools{SimpleSwitchGRPC: tools.SimpleSwitchGRPC},
		bmv2proc.Options{Name: "push-roles", DeviceID: 1, LogDir: t.TempDir(), LabID: "push-roles"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Stop() })
	return sw.GRPCAddr
}

func runtimeWriter(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Name: "runtime", Address: addr, DeviceID: 1, Role: client.RoleRuntime,
		ElectionID: client.RuntimeElectionID(100), Transport: client.Transport{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBMv2ArbitrationIgnoresRoles shows what simple_switch_grpc (PI) does
// with roles: nothing. A controller in the default role (push's) and a
// runtime writer in role mrcgen-runtime share one arbitration per device;
// the higher election id (the runtime writer's range) is the only primary,
// the other is told so (backup, with the runtime writer's election id) and
// its Writes are refused, while the runtime writer's, role and all, pass
// the primary check (and, without a pipeline, meet FAILED_PRECONDITION).
func TestBMv2ArbitrationIgnoresRoles(t *testing.T) {
	addr := startSwitchOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	static := newBenchClient(t, addr)
	defer static.Close()
	if err := static.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	rt := runtimeWriter(t, addr)
	if err := rt.WaitPrimary(ctx); err != nil {
		t.Fatalf("runtime writer: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for static.Primary() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := static.Status()
	if st.Primary() || st.ServerElectionID != client.RuntimeElectionID(100) {
		t.Fatalf("default-role controller beside a runtime-role one: %+v; want backup to election id %s (one arbitration per device)",
			st, client.RuntimeElectionID(100))
	}
	upd := []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: p4rttest.L2Entry(1, 1)}}
	if err := static.Write(ctx, upd); !errors.Is(err, client.ErrNotPrimary) {
		t.Fatalf("default-role Write beside the runtime writer: %v, want PERMISSION_DENIED", err)
	}
	err := rt.Write(ctx, upd)
	if werr, ok := errors.AsType[*client.WriteError](err); !ok || status.Code(werr.Err) != codes.FailedPrecondition {
		t.Fatalf("runtime writer's Write with role %q: %v, want past the primary check (FAILED_PRECONDITION: no pipeline)", client.RoleRuntime, err)
	}
	// A push client arriving now (the first one gone: PI refuses a second
	// stream with the same election id, roles or not) is a backup and is
	// told why.
	static.Close()
	p := newBenchClient(t, addr)
	defer p.Close()
	if err := p.WaitPrimary(ctx); !errors.Is(err, client.ErrNotPrimary) || !strings.Contains(err.Error(), "runtime writer") {
		t.Fatalf("push client beside a runtime writer: %v, want ErrNotPrimary naming it", err)
	}
	if !rt.Primary() {
		t.Fatal("runtime writer demoted")
	}
}

// TestBMv2PushBesideRuntimeWriter: on simple_switch_grpc a push to a
// device whose runtime writer is connected is refused (never demoting it),
// and works again once the runtime writer has gone.
func TestBMv2PushBesideRuntimeWriter(t *testing.T) {
	env := startBMv2(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tgt := push.Target{Name: "bmv2", Address: env.addr, DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
		Transport: client.Transport{Insecure: true}}
	d := push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: env.entries(10)}
	if _, err := push.PushDevice(ctx, tgt, d, push.Options{}); err != nil {
		t.Fatal(err)
	}
	rt := runtimeWriter(t, env.addr)
	if err := rt.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := push.PushDevice(ctx, tgt, d, push.Options{})
	if !errors.Is(err, client.ErrNotPrimary) || !strings.Contains(err.Error(), "runtime writer") {
		t.Fatalf("push beside a runtime writer: %v, want ErrNotPrimary naming it", err)
	}
	if !rt.Primary() {
		t.Fatal("runtime writer demoted by a push")
	}
	if err := rt.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_MODIFY, Entity: env.entries(1)[0]}}); err != nil {
		t.Fatalf("runtime writer's Write with role %q: %v", client.RoleRuntime, err)
	}
	rt.Close()
	// PI drops the connection when it notices the stream closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := push.PushDevice(ctx, tgt, d, push.Options{})
		if err == nil {
			if !res.Diff.Empty() {
				t.Fatalf("push after the runtime writer left: %s", res.Diff.Summary())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("push after the runtime writer left: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
