package push_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
)

func startServer(t *testing.T) *p4rttest.Server {
	t.Helper()
	s := p4rttest.Start(p4rttest.Options{DeviceID: 1})
	t.Cleanup(s.Close)
	return s
}

func target(name string, s *p4rttest.Server) push.Target {
	return push.Target{
		Name:        name,
		Address:     s.Address(),
		DeviceID:    s.DeviceID(),
		ElectionID:  client.ElectionID{Low: 1},
		Transport:   client.Transport{Insecure: true},
		DialOptions: s.DialOptions(),
	}
}

func desired(entities []*p4v1.Entity) push.Desired {
	return push.Desired{P4Info: p4rttest.SampleP4Info(), DeviceConfig: []byte(`{"program":"l2"}`), Entities: entities}
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkDevice fails unless the server holds exactly the entities want.
func checkDevice(t *testing.T, s *p4rttest.Server, want []*p4v1.Entity) {
	t.Helper()
	d, err := reconcile.Compute(want, entitiesOf(s))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Empty() {
		t.Fatalf("device differs from desired state: %s", d.Summary())
	}
}

func entitiesOf(s *p4rttest.Server) []*p4v1.Entity {
	var out []*p4v1.Entity
	for _, te := range s.TableEntries() {
		out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}})
	}
	for _, cs := range s.CloneSessions() {
		out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs}}}})
	}
	return out
}

func TestPushReconcile(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("leaf1", s)
	entities := p4rttest.L2Entries(0x1000, 100)

	res, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.PipelinePushed || res.PipelineSkipped || res.Inserted != 100 || res.Modified+res.Deleted != 0 {
		t.Fatalf("first push %+v", res)
	}
	checkDevice(t, s, entities)
	checkPhases(t, res, true)

	step := func(name string, entities []*p4v1.Entity, wantIns, wantMod, wantDel int) {
		t.Helper()
		s.ResetStats()
		res, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st := s.Stats()
		if res.Inserted != wantIns || res.Modified != wantMod || res.Deleted != wantDel || st.Updates != wantIns+wantMod+wantDel {
			t.Fatalf("%s: result %d/%d/%d (ins/mod/del), server got %d updates; want %d/%d/%d",
				name, res.Inserted, res.Modified, res.Deleted, st.Updates, wantIns, wantMod, wantDel)
		}
		if !res.PipelineSkipped || res.PipelinePushed || st.SetPipelines != 0 {
			t.Fatalf("%s: pipeline pushed again (%+v)", name, res)
		}
		checkDevice(t, s, entities)
	}

	step("same state again", entities, 0, 0, 0)
	if st := s.Stats(); st.WriteRPCs != 0 {
		t.Fatalf("second push sent %d Write RPCs, want 0", st.WriteRPCs)
	}
	again, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPhases(t, again, false)

	changed := append([]*p4v1.Entity(nil), entities...)
	changed[42] = p4rttest.L2Entry(0x1000+42, 499) // new port for one route
	step("one action param changed", changed, 0, 1, 0)

	removed := append(append([]*p4v1.Entity(nil), changed[:7]...), changed[8:]...)
	step("one entry removed", removed, 0, 0, 1)

	added := append(append([]*p4v1.Entity(nil), removed...), p4rttest.L2Entry(0xabcdef, 9))
	step("one entry added", added, 1, 0, 0)

	// Make before break: the insert and the modify in one Write, then the
	// delete in another.
	mixed := append([]*p4v1.Entity(nil), added[1:]...)   // delete one
	mixed[0] = p4rttest.L2Entry(0x1000+1, 321)           // modify one
	mixed = append(mixed, p4rttest.L2Entry(0xfedcba, 1)) // insert one
	s.ResetStats()
	log := recordWrites(s)
	if _, err := push.PushDevice(ctx, tgt, desired(mixed), push.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := log(); !slices.Equal(got, []string{"INSERT MODIFY", "DELETE"}) {
		t.Fatalf("mixed diff written as %q, want [\"INSERT MODIFY\" \"DELETE\"]", got)
	}
	checkDevice(t, s, mixed)
}

// recordWrites makes s record the update types of each Write RPC (sorted,
// duplicates removed, e.g. "INSERT MODIFY"); the returned function reads
// the record.
func recordWrites(s *p4rttest.Server) func() []string {
	var log []string
	kinds := func(req *p4v1.WriteRequest) string {
		var k []string
		for _, u := range req.GetUpdates() {
			what := u.GetType().String()
			if u.GetEntity().GetPacketReplicationEngineEntry() != nil {
				what += "-session"
			}
			k = append(k, what)
		}
		slices.SortFunc(k, func(a, b string) int { return strings.Compare(order[a], order[b]) })
		return strings.Join(slices.Compact(k), " ")
	}
	s.SetWriteRPCHook(func(req *p4v1.WriteRequest) error {
		log = append(log, kinds(req))
		return nil
	})
	// The hook runs with the server locked; read the log under the same
	// lock by swapping the hook.
	return func() []string {
		var out []string
		s.SetWriteRPCHook(nil)
		out = append(out, log...)
		return out
	}
}

var order = map[string]string{"INSERT": "1", "MODIFY": "2", "DELETE": "3", "INSERT-session": "4", "MODIFY-session": "5", "DELETE-session": "6"}

// TestMakeBeforeBreak: replacing entries inserts the new ones before
// deleting the old ones, so a push that fails while inserting leaves every
// old entry in place (no route is removed without its replacement).
// checkPhases checks that a push's phases add up to at most its duration
// and that the steps it took, and only those, took time.
func checkPhases(t *testing.T, res push.Result, pipelineAndWrite bool) {
	t.Helper()
	p := res.Phases
	sum := p.Prepare + p.Connect + p.Read + p.Pipeline + p.Diff + p.Write
	if sum > res.Duration {
		t.Errorf("phases %+v add up to %v, duration %v", p, sum, res.Duration)
	}
	if p.Connect <= 0 || p.Read <= 0 {
		t.Errorf("phases %+v: connect and read took no time", p)
	}
	if took := p.Pipeline > 0 && p.Write > 0; took != pipelineAndWrite {
		t.Errorf("phases %+v: pipeline and write took time: %v, want %v", p, took, pipelineAndWrite)
	}
}

func TestMakeBeforeBreak(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("leaf1", s)
	old := p4rttest.L2Entries(0x1000, 50)
	if _, err := push.PushDevice(ctx, tgt, desired(old), push.Options{}); err != nil {
		t.Fatal(err)
	}
	// The new state drops 10 old routes and adds 10 new ones; every Write
	// that inserts fails as a whole.
	next := append(slices.Clone(old[10:]), p4rttest.L2Entries(0x9000, 10)...)
	s.SetWriteRPCHook(func(req *p4v1.WriteRequest) error {
		for _, u := range req.GetUpdates() {
			if u.GetType() == p4v1.Update_INSERT {
				return status.Error(codes.Unavailable, "link down")
			}
		}
		return nil
	})
	res, err := push.PushDevice(ctx, tgt, desired(next), push.Options{})
	if err == nil || !strings.Contains(err.Error(), "INSERT+MODIFY phase") {
		t.Fatalf("PushDevice = %v, want the INSERT+MODIFY phase to fail", err)
	}
	if res.Deleted != 0 || res.Inserted != 0 {
		t.Fatalf("result %+v: nothing may be deleted after the inserts failed", res)
	}
	checkDevice(t, s, old)

	// Once inserts work, the push completes: inserts, then deletes.
	s.SetWriteRPCHook(nil)
	log := recordWrites(s)
	if res, err = push.PushDevice(ctx, tgt, desired(next), push.Options{}); err != nil || res.Inserted != 10 || res.Deleted != 10 {
		t.Fatalf("second attempt: %+v, %v", res, err)
	}
	if got := log(); !slices.Equal(got, []string{"INSERT", "DELETE"}) {
		t.Fatalf("written as %q, want inserts then deletes", got)
	}
	checkDevice(t, s, next)
}

// TestDeleteFirstWhenTableFull: a table that cannot hold the new entries
// next to the old ones (P4Info size) gets its deletes first; the push
// succeeds where inserts first would hit RESOURCE_EXHAUSTED.
func TestDeleteFirstWhenTableFull(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("leaf1", s)
	small := func(entities []*p4v1.Entity) push.Desired {
		d := desired(entities)
		d.P4Info.Tables[0].Size = 50
		return d
	}
	old := p4rttest.L2Entries(0x1000, 45)
	if _, err := push.PushDevice(ctx, tgt, small(old), push.Options{}); err != nil {
		t.Fatal(err)
	}
	// 45 held + 10 inserts > 50: delete first. One modify rides along
	// with the inserts.
	next := append(slices.Clone(old[10:]), p4rttest.L2Entries(0x9000, 10)...)
	next[0] = p4rttest.L2Entry(0x1000+10, 77)
	log := recordWrites(s)
	res, err := push.PushDevice(ctx, tgt, small(next), push.Options{})
	if err != nil || res.Inserted != 10 || res.Deleted != 10 || res.Modified != 1 {
		t.Fatalf("PushDevice: %+v, %v; want 10 inserts, 10 deletes, 1 modify", res, err)
	}
	if got := log(); !slices.Equal(got, []string{"DELETE", "INSERT MODIFY"}) {
		t.Fatalf("written as %q, want the deletes first (table full)", got)
	}
	checkDevice(t, s, next)

	// 45 held + 5 inserts fit exactly: inserts first again.
	again := append(slices.Clone(next[5:]), p4rttest.L2Entries(0xa000, 5)...)
	log = recordWrites(s)
	if _, err := push.PushDevice(ctx, tgt, small(again), push.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := log(); !slices.Equal(got, []string{"INSERT", "DELETE"}) {
		t.Fatalf("written as %q, want inserts first (room enough)", got)
	}
	checkDevice(t, s, again)
}

// TestCloneSessionOrder: clone sessions are written before the entries
// that may use them and deleted after them.
func TestCloneSessionOrder(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("nic0", s)
	first := append(p4rttest.L2Entries(0x1000, 5), p4rttest.CloneSession(1, 1), p4rttest.CloneSession(2, 2))
	log := recordWrites(s)
	if _, err := push.PushDevice(ctx, tgt, desired(first), push.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := log(); !slices.Equal(got, []string{"INSERT-session", "INSERT"}) {
		t.Fatalf("fresh push written as %q, want sessions, then entries", got)
	}
	next := append(p4rttest.L2Entries(0x2000, 5), p4rttest.CloneSession(2, 3), p4rttest.CloneSession(3, 1))
	log = recordWrites(s)
	if _, err := push.PushDevice(ctx, tgt, desired(next), push.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := log(); !slices.Equal(got, []string{"INSERT-session MODIFY-session", "INSERT", "DELETE", "DELETE-session"}) {
		t.Fatalf("change written as %q, want sessions made, entries made, entries removed, sessions removed", got)
	}
	checkDevice(t, s, next)
}

func TestDryRunWritesNothing(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("leaf1", s)
	entities := p4rttest.L2Entries(1, 10)

	// Fresh device: would push the pipeline and insert everything.
	res, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || !res.PipelinePushed || res.Diff.Count(reconcile.Insert) != 10 || res.Inserted != 0 {
		t.Fatalf("dry run on fresh device: %+v", res)
	}
	if st := s.Stats(); st.WriteRPCs != 0 || st.SetPipelines != 0 || st.Streams != 0 {
		t.Fatalf("dry run touched the device: %+v", st)
	}

	if _, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{}); err != nil {
		t.Fatal(err)
	}
	s.ResetStats()
	changed := append([]*p4v1.Entity(nil), entities[1:]...)
	changed[0] = p4rttest.L2Entry(2, 100)
	res, err = push.PushDevice(ctx, tgt, desired(changed), push.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Diff.Count(reconcile.Delete) != 1 || res.Diff.Count(reconcile.Modify) != 1 || !res.PipelineSkipped {
		t.Fatalf("dry run diff %s (%+v)", res.Diff.Summary(), res)
	}
	if st := s.Stats(); st.WriteRPCs != 0 || st.SetPipelines != 0 || st.Streams != 0 {
		t.Fatalf("dry run touched the device: %+v", st)
	}
	checkDevice(t, s, entities)
}

func TestLargePushBatched(t *testing.T) {
	s := startServer(t)
	entities := p4rttest.L2Entries(0, 10000)
	var last, calls int
	res, err := push.PushDevice(ctxTimeout(t), target("leaf1", s), desired(entities), push.Options{
		Progress: func(done, total int) {
			calls++
			if total != 10000 || done < last {
				t.Errorf("progress %d/%d after %d", done, total, last)
			}
			last = done
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if res.Inserted != 10000 || st.WriteRPCs != 10 || st.MaxBatch != 1000 || st.MaxWriteSize > client.DefaultMaxSendMsgSize {
		t.Fatalf("result %+v, server %+v: want 10 Writes of 1000", res, st)
	}
	if calls != 10 || last != 10000 {
		t.Fatalf("progress: %d calls, last %d", calls, last)
	}
	checkDevice(t, s, entities)
}

func TestInvalidEntityRefusedBeforeWriting(t *testing.T) {
	s := startServer(t)
	entities := p4rttest.L2Entries(0, 50)
	entities[31] = p4rttest.L2Entry(31, 600) // port needs 10 bits
	_, err := push.PushDevice(ctxTimeout(t), target("leaf1", s), desired(entities), push.Options{})
	if err == nil || !strings.Contains(err.Error(), "entity 31") || !strings.Contains(err.Error(), "ingress.set_port") ||
		!strings.Contains(err.Error(), "00:00:00:00:00:1f") || !strings.Contains(err.Error(), "leaf1") {
		t.Fatalf("error %v: want device, entity index, table/action names and match", err)
	}
	if st := s.Stats(); st != (p4rttest.Stats{}) {
		t.Fatalf("device contacted before validation: %+v", st)
	}
}

func TestFailedEntitiesNamed(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	entities := p4rttest.L2Entries(0x5000, 3000)
	s.SetWriteHook(func(u *p4v1.Update) error {
		m := u.GetEntity().GetTableEntry().GetMatch()[0].GetExact().GetValue()
		if m[len(m)-1] == 0x07 && m[len(m)-2] == 0x58 { // MAC ...:58:07 = 0x5807
			return status.Error(codes.ResourceExhausted, "table full")
		}
		return nil
	})
	res, err := push.PushDevice(ctx, target("leaf1", s), desired(entities), push.Options{BatchSize: 3000})
	werr, ok := errors.AsType[*client.WriteError](err)
	if !ok || len(werr.Errors) != 1 {
		t.Fatalf("PushDevice = %v, want a WriteError with 1 failure", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "leaf1") || !strings.Contains(msg, "INSERT+MODIFY phase") || !strings.Contains(msg, "hdr.ethernet.dstAddr=00:00:00:00:58:07") ||
		!strings.Contains(msg, "RESOURCE_EXHAUSTED") && !strings.Contains(msg, "ResourceExhausted") {
		t.Fatalf("error %q does not name the failed entity", msg)
	}
	if !proto.Equal(werr.Errors[0].Update.GetEntity(), entities[0x807]) {
		t.Fatal("failed update is not the injected one")
	}
	if res.Inserted != 2999 {
		t.Fatalf("Inserted = %d, want 2999", res.Inserted)
	}
}

// TestRPCFailureCountsApplied: a Write RPC failing mid-phase stops the
// push, and the result still counts the updates the device applied before.
func TestRPCFailureCountsApplied(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	rpcs := 0
	s.SetWriteRPCHook(func(*p4v1.WriteRequest) error {
		if rpcs++; rpcs == 2 {
			return status.Error(codes.Unavailable, "link down")
		}
		return nil
	})
	res, err := push.PushDevice(ctx, target("leaf1", s), desired(p4rttest.L2Entries(0x5000, 3000)), push.Options{
		BatchSize: 1000, ClientConfig: func(c *client.Config) { c.WriteWindow = 1 },
	})
	if werr, ok := errors.AsType[*client.WriteError](err); !ok || werr.Err == nil || !strings.Contains(err.Error(), "link down") {
		t.Fatalf("PushDevice = %v, want the UNAVAILABLE write error", err)
	}
	if res.Inserted != 1000 || len(s.TableEntries()) != 1000 || s.Stats().WriteRPCs != 2 {
		t.Fatalf("Inserted = %d, device holds %d, %d RPCs; want 1000, 1000, 2 (stop at the failed RPC)",
			res.Inserted, len(s.TableEntries()), s.Stats().WriteRPCs)
	}
}

func TestDeviceIDZero(t *testing.T) {
	s := startServer(t)
	tgt := target("leaf1", s)
	tgt.DeviceID = 0
	_, err := push.PushDevice(ctxTimeout(t), tgt, desired(nil), push.Options{})
	if err == nil || !strings.Contains(err.Error(), "device_id 0") {
		t.Fatalf("PushDevice with device_id 0 = %v", err)
	}
}

func TestPushAllContinuesAfterFailure(t *testing.T) {
	servers := []*p4rttest.Server{startServer(t), startServer(t), startServer(t)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()

	var jobs []push.Job
	for i, s := range servers {
		jobs = append(jobs, push.Job{Target: target(fmt.Sprintf("leaf%d", i), s), Desired: desired(p4rttest.L2Entries(uint64(i)<<20, 2000))})
	}
	// leaf1 refuses: wrong device id. spine0 is unreachable.
	jobs[1].Target.DeviceID = 9
	jobs = append(jobs, push.Job{
		Target:  push.Target{Name: "spine0", Address: dead, DeviceID: 1, ElectionID: client.ElectionID{Low: 1}, Transport: client.Transport{Insecure: true}},
		Desired: desired(nil),
	})
	// The deadline ends spine0's wait for a connection; the other devices
	// need a fraction of it, even on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	progressed := map[string]int{}
	results, err := push.PushAll(ctx, jobs, 2, func(device string, done, _ int) { progressed[device] = done })
	if err == nil {
		t.Fatal("PushAll succeeded with two bad devices")
	}
	msg := err.Error()
	if !strings.Contains(msg, "device leaf1") || !strings.Contains(msg, "NotFound") && !strings.Contains(msg, "NOT_FOUND") ||
		!strings.Contains(msg, "device spine0") || !strings.Contains(msg, "connection refused") {
		t.Fatalf("error %q must name leaf1 (NOT_FOUND) and spine0 (connection refused)", msg)
	}
	if strings.Contains(msg, "leaf0") || strings.Contains(msg, "leaf2") {
		t.Fatalf("error %q names a device that succeeded", msg)
	}
	if len(results) != 4 || results[0].Inserted != 2000 || results[2].Inserted != 2000 || results[1].Device != "leaf1" {
		t.Fatalf("results %+v", results)
	}
	checkDevice(t, servers[0], jobs[0].Desired.Entities)
	checkDevice(t, servers[2], jobs[2].Desired.Entities)
	if progressed["leaf0"] != 2000 || progressed["leaf2"] != 2000 {
		t.Fatalf("progress %v", progressed)
	}
}

func TestCookieDependsOnInputs(t *testing.T) {
	info := p4rttest.SampleP4Info()
	a, err := push.Cookie(info, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := push.Cookie(info, []byte("y"))
	info.Tables[0].Size = 5
	c, _ := push.Cookie(info, []byte("x"))
	a2, _ := push.Cookie(p4rttest.SampleP4Info(), []byte("x"))
	if a == b || a == c || a != a2 {
		t.Fatalf("cookies %x %x %x %x", a, b, c, a2)
	}
}

// nicState is a NIC's desired state: table entries and one clone session
// per plane (session plane+1 to port plane+1), the last with two replicas
// written in descending port order.
func nicState(planes int) []*p4v1.Entity {
	entities := p4rttest.L2Entries(0x7000, 20)
	for p := range planes {
		entities = append(entities, p4rttest.CloneSession(uint32(p+1), uint32(p+1)))
	}
	return append(entities, p4rttest.CloneSession(uint32(planes+1), 9, 8))
}

func TestPushCloneSessions(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("nic0", s)
	entities := nicState(4)

	res, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 25 || res.Modified+res.Deleted != 0 {
		t.Fatalf("first push %+v, want 25 inserts", res)
	}
	if st := s.Stats(); st.CloneSessionUpdates != 5 {
		t.Fatalf("server got %d clone-session updates, want 5", st.CloneSessionUpdates)
	}
	if n := len(s.CloneSessions()); n != 5 {
		t.Fatalf("device holds %d clone sessions, want 5", n)
	}
	checkDevice(t, s, entities)

	step := func(name string, entities []*p4v1.Entity, wantIns, wantMod, wantDel int) {
		t.Helper()
		s.ResetStats()
		res, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st := s.Stats()
		if res.Inserted != wantIns || res.Modified != wantMod || res.Deleted != wantDel || st.CloneSessionUpdates != wantIns+wantMod+wantDel {
			t.Fatalf("%s: result %d/%d/%d (ins/mod/del), server got %d clone-session updates of %d; want %d/%d/%d",
				name, res.Inserted, res.Modified, res.Deleted, st.CloneSessionUpdates, st.Updates, wantIns, wantMod, wantDel)
		}
		checkDevice(t, s, entities)
	}

	// The device answers the two-replica session in its own order (8, 9):
	// still nothing to write.
	step("same state again", entities, 0, 0, 0)
	if st := s.Stats(); st.WriteRPCs != 0 {
		t.Fatalf("second push sent %d Write RPCs, want 0", st.WriteRPCs)
	}

	changed := slices.Clone(entities)
	changed[21] = p4rttest.CloneSession(2, 7) // plane 1 moves to port 7
	step("one session's port changed", changed, 0, 1, 0)

	removed := slices.Delete(slices.Clone(changed), 20, 21) // session 1 gone
	step("one session removed", removed, 0, 0, 1)

	// A session written by someone else is deleted: every clone session
	// is managed.
	s.SeedCloneSessions(p4rttest.CloneSession(100, 3).GetPacketReplicationEngineEntry().GetCloneSessionEntry())
	step("stray session", removed, 0, 0, 1)

	// A new pipeline clears the clone sessions (PI resets its PRE): they
	// are all written again.
	s.ResetStats()
	res, err = push.PushDevice(ctx, tgt, desired(removed), push.Options{ForcePipeline: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); !res.PipelinePushed || res.Inserted != 24 || st.CloneSessionUpdates != 4 {
		t.Fatalf("push with a new pipeline: %+v, server %+v; want 24 inserts, 4 of them clone sessions", res, st)
	}
	checkDevice(t, s, removed)
}

func TestPushCloneSessionsWithoutWildcardRead(t *testing.T) {
	s := p4rttest.Start(p4rttest.Options{DeviceID: 1, NoCloneSessionWildcard: true})
	t.Cleanup(s.Close)
	ctx := ctxTimeout(t)
	tgt := target("nic0", s)
	entities := nicState(2)
	if _, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{}); err != nil {
		t.Fatal(err)
	}
	checkDevice(t, s, entities)
	s.ResetStats()
	res, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.WriteRPCs != 0 || res.Diff.Unchanged != len(entities) {
		t.Fatalf("second push: %d Write RPCs, %s; want none and all unchanged", st.WriteRPCs, res.Diff.Summary())
	}
	changed := slices.Clone(entities)
	changed[20] = p4rttest.CloneSession(1, 5)
	if res, err = push.PushDevice(ctx, tgt, desired(changed), push.Options{}); err != nil {
		t.Fatal(err)
	}
	if res.Modified != 1 || res.Inserted+res.Deleted != 0 {
		t.Fatalf("port change read by id: %+v, want 1 modify", res)
	}
	checkDevice(t, s, changed)
}

func TestDryRunRendersCloneSessions(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("nic0", s)
	entities := nicState(2)
	if _, err := push.PushDevice(ctx, tgt, desired(entities), push.Options{}); err != nil {
		t.Fatal(err)
	}
	// Plane 0's session removed, plane 1 moved to port 6, a new session 4.
	changed := slices.Clone(entities[:20])
	changed = append(changed, p4rttest.CloneSession(2, 6), entities[22], p4rttest.CloneSession(4, 4))
	s.ResetStats()
	res, err := push.PushDevice(ctx, tgt, desired(changed), push.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.WriteRPCs != 0 || st.Streams != 0 {
		t.Fatalf("dry run touched the device: %+v", st)
	}
	var b strings.Builder
	if err := res.Diff.Render(&b, res.Index); err != nil {
		t.Fatal(err)
	}
	want := `DELETE clone session 1 -> port 1
MODIFY clone session 2 -> port 6 (was port 2)
INSERT clone session 4 -> port 4
`
	if b.String() != want {
		t.Fatalf("dry run diff:\n%s\nwant:\n%s", b.String(), want)
	}
	checkDevice(t, s, entities)
}

func TestInvalidCloneSessionRefusedBeforeWriting(t *testing.T) {
	s := startServer(t)
	entities := nicState(2)
	bad := p4rttest.CloneSession(7, 3)
	bad.GetPacketReplicationEngineEntry().GetCloneSessionEntry().PacketLengthBytes = 128
	entities = append(entities, bad, p4rttest.CloneSession(8, 600))
	_, err := push.PushDevice(ctxTimeout(t), target("nic0", s), desired(entities), push.Options{})
	if err == nil || !strings.Contains(err.Error(), "entity 23: invalid entity: clone session 7: packet_length_bytes 128") ||
		!strings.Contains(err.Error(), "entity 24: invalid entity: clone session 8: replica 0: port 600 does not fit in 9 bits") {
		t.Fatalf("error %v: want both invalid clone sessions named", err)
	}
	if st := s.Stats(); st != (p4rttest.Stats{}) {
		t.Fatalf("device contacted before validation: %+v", st)
	}
}

// TestDefaultEntryRestored: a default entry changed on the device (here to
// forward, as BMv2's thrift CLI allows) is read and MODIFYed back to the
// build's, and the result counts it.
func TestDefaultEntryRestored(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	tgt := target("leaf1", s)
	drop := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)
	want := append(p4rttest.L2Entries(0x1000, 10), drop)
	res, err := push.PushDevice(ctx, tgt, desired(want), push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The new pipeline's default is already drop(): nothing to modify.
	if res.Inserted != 10 || res.Modified != 0 || res.Diff.Unchanged != 1 {
		t.Fatalf("first push: %s (%+v), want 10 inserts and the default unchanged", res.Diff.Summary(), res)
	}
	fwd := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{0, 3})
	s.SetDefault(fwd.GetTableEntry())

	dry, err := push.PushDevice(ctx, tgt, desired(want), push.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	_ = dry.Diff.Render(&sb, dry.Index)
	if got := sb.String(); got != "MODIFY ingress.l2_fwd (default) -> ingress.drop() (was ingress.set_port(port=3))\n" {
		t.Fatalf("dry run renders %q", got)
	}
	s.ResetStats()
	res, err = push.PushDevice(ctx, tgt, desired(want), push.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Modified != 1 || res.Inserted+res.Deleted != 0 || s.Stats().Updates != 1 {
		t.Fatalf("push after the default changed: %s (%+v), want 1 modify", res.Diff.Summary(), res)
	}
	if got := s.DefaultEntry(p4rttest.L2TableID); got.GetAction().GetAction().GetActionId() != p4rttest.DropAction {
		t.Fatalf("default after push: %v, want drop()", got)
	}
	res, err = push.PushDevice(ctx, tgt, desired(want), push.Options{})
	if err != nil || !res.Diff.Empty() {
		t.Fatalf("third push: %v %v, want nothing to write", res.Diff.Summary(), err)
	}
	// A dry run against another pipeline does not claim to modify the
	// default the new program brings.
	d := desired(want)
	d.DeviceConfig = []byte("other")
	dry, err = push.PushDevice(ctx, tgt, d, push.Options{DryRun: true})
	if err != nil || dry.Diff.Count(reconcile.Modify) != 0 || dry.Diff.Count(reconcile.Insert) != 10 {
		t.Fatalf("dry run with a new pipeline: %v %v, want 10 inserts only", dry.Diff.Summary(), err)
	}
}

// TestRuntimeRoleRefused: push never uses the runtime writers' role or
// election id range (on PI, which ignores roles, it would demote them).
func TestRuntimeRoleRefused(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t)
	for _, mut := range []func(*push.Target){
		func(t *push.Target) { t.Role = client.RoleRuntime },
		func(t *push.Target) { t.ElectionID = client.RuntimeElectionID(1) },
	} {
		tgt := target("nic0", s)
		mut(&tgt)
		if _, err := push.PushDevice(ctx, tgt, desired(p4rttest.L2Entries(1, 1)), push.Options{}); err == nil || !strings.Contains(err.Error(), "runtime writers") {
			t.Errorf("push with role %q election id %s: %v, want refused", tgt.Role, tgt.ElectionID, err)
		}
	}
	if st := s.Stats(); st.Streams != 0 {
		t.Fatalf("device contacted: %+v", st)
	}
}

// A fresh device and one holding another state (other ports, extra
// entries, a changed and an extra clone session) end with the same
// state, the desired one, whatever order desired comes in. Compared as
// sets of canonical encodings, independently of reconcile.Compute.
func TestFreshAndChangedDeviceSameState(t *testing.T) {
	canon := func(entities []*p4v1.Entity) []string {
		var out []string
		for _, e := range entities {
			c, err := canonical.Entity(e)
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	want := append(p4rttest.L2Entries(0x100, 2500), p4rttest.CloneSession(1, 1, 2), p4rttest.CloneSession(2, 3))
	rand.New(rand.NewPCG(7, 8)).Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })

	fresh, changed := startServer(t), startServer(t)
	if _, err := push.PushDevice(ctxTimeout(t), target("changed", changed), desired(append(
		append(p4rttest.L2Entries(0x100, 1000), p4rttest.L2Entries(0x9000, 700)...), // 1,500 missing, 700 extra
		p4rttest.CloneSession(1, 4), p4rttest.CloneSession(7, 1))), push.Options{}); err != nil {
		t.Fatal(err)
	}
	// Half of the shared entries on another port, as a MODIFY must fix.
	for _, e := range p4rttest.L2Entries(0x100, 500) {
		e.GetTableEntry().GetAction().GetAction().Params[0].Value = []byte{0x7, 0x77}
		changed.Seed(e.GetTableEntry())
	}
	for _, s := range []*p4rttest.Server{fresh, changed} {
		res, err := push.PushDevice(ctxTimeout(t), target("d", s), desired(want), push.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The changed device: 1,500 entries and clone session 2 to insert,
		// 500 entries and clone session 1 to modify, 700 entries and clone
		// session 7 to delete.
		if s == changed && (res.Inserted != 1501 || res.Modified != 501 || res.Deleted != 701) {
			t.Fatalf("changed device: %d inserted, %d modified, %d deleted; want 1501, 501, 701", res.Inserted, res.Modified, res.Deleted)
		}
		if got := canon(entitiesOf(s)); !slices.Equal(got, canon(want)) {
			t.Fatalf("after a push (%d inserted, %d modified, %d deleted) the device holds %d entities, not the %d wanted",
				res.Inserted, res.Modified, res.Deleted, len(got), len(want))
		}
	}
	if !slices.Equal(canon(entitiesOf(fresh)), canon(entitiesOf(changed))) {
		t.Fatal("the fresh and the changed device differ")
	}
}

// TestPipelineSetNeverOverlapsRead: a push that replaces the pipeline has
// no Read running in the device when its SetForwardingPipelineConfig
// arrives, even on a device whose Read handlers outlive the client's
// cancellation (ReadHold), as PI's do: simple_switch_grpc segfaults in
// pi_p4info_is_valid_id on that overlap.
func TestPipelineSetNeverOverlapsRead(t *testing.T) {
	for _, name := range []string{"fresh device", "another pipeline"} {
		s := p4rttest.Start(p4rttest.Options{DeviceID: 1, ReadHold: 200 * time.Millisecond})
		t.Cleanup(s.Close)
		if name == "another pipeline" {
			other := desired(p4rttest.L2Entries(0x1000, 10))
			other.Cookie = 0x1234
			if _, err := push.PushDevice(ctxTimeout(t), target("d", s), other, push.Options{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the first push's reads are over
			s.ResetStats()
		}
		res, err := push.PushDevice(ctxTimeout(t), target("d", s), desired(p4rttest.L2Entries(0x1000, 10)), push.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st := s.Stats()
		if !res.PipelinePushed || st.SetPipelines != 1 {
			t.Fatalf("%s: pipeline pushed %v, %d set RPCs; want one", name, res.PipelinePushed, st.SetPipelines)
		}
		if st.PipelineSetsDuringRead != 0 {
			t.Fatalf("%s: the pipeline was set while %d Read(s) still ran in the device", name, st.PipelineSetsDuringRead)
		}
	}
}
