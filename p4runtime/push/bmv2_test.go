package push_test

import (
	"context"
	"slices"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
