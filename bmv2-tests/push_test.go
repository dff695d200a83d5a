package bmv2tests

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/deploy"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
)

// TestPushIdempotent checks mrcgen push against the BMv2 switches of the
// lab (which Up pushed once): a second push writes nothing; changing one
// route's port gives exactly one MODIFY, and pushing the build again one
// MODIFY back.
func TestPushIdempotent(t *testing.T) {
	l := needLab(t)
	ctx := ctxFor(t, 60*time.Second)
	res, err := deploy.Run(ctx, l.Build, l.Targets, deploy.Options{Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.PipelineSkipped || r.Inserted+r.Modified+r.Deleted != 0 {
			t.Errorf("%s: re-push: pipeline skipped %v, %d inserted, %d modified, %d deleted",
				r.Device, r.PipelineSkipped, r.Inserted, r.Modified, r.Deleted)
		}
	}
	t.Logf("re-push of %d devices: 0 writes", len(res))

	jobs, err := deploy.Plan(l.Build, l.Targets, deploy.Options{Devices: []string{"p0-t1-0"}})
	if err != nil {
		t.Fatal(err)
	}
	job := jobs[0]
	changed := job.Desired
	changed.Entities = make([]*p4v1.Entity, len(job.Desired.Entities))
	for i, e := range job.Desired.Entities {
		changed.Entities[i] = proto.Clone(e).(*p4v1.Entity)
	}
	// The first route of the T1 (towards row 0): send it out of port 1.
	route := changed.Entities[1].GetTableEntry()
	route.GetAction().GetAction().Params[0].Value = []byte{0x01}
	// The lab is shared: whatever happens below, the device gets the build
	// back (a push of the build is a no-op when the restore below worked).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := push.PushDevice(ctx, job.Target, job.Desired, job.Options); err != nil {
			t.Errorf("restore %s: %v", job.Target.Name, err)
		}
	})
	r, err := push.PushDevice(ctx, job.Target, changed, job.Options)
	if err != nil {
		t.Fatal(err)
	}
	if r.Modified != 1 || r.Inserted != 0 || r.Deleted != 0 {
		t.Errorf("one changed route: %d modified, %d inserted, %d deleted; want 1 modify", r.Modified, r.Inserted, r.Deleted)
	}
	r, err = push.PushDevice(ctx, job.Target, job.Desired, job.Options)
	if err != nil {
		t.Fatal(err)
	}
	if r.Modified != 1 || r.Inserted != 0 || r.Deleted != 0 {
		t.Errorf("restoring the build: %d modified, %d inserted, %d deleted; want 1 modify", r.Modified, r.Inserted, r.Deleted)
	}
}
