package push_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"

	bmv2proc "github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
)

// requireBMv2Env, when set to 1, turns a missing BMv2 tool into a failure
// (for CI machines that must have them).
const requireBMv2Env = "MRCGEN_REQUIRE_BMV2"

const benchEntries = 50000

// bmv2Tools returns the paths of simple_switch_grpc and p4c-bm2-ss, or
// skips (fails under MRCGEN_REQUIRE_BMV2=1) naming what is missing.
// The helpers here serve the benchmark and the BMv2 tests.
func bmv2Tools(b testing.TB) (sw, p4c string) {
	b.Helper()
	tools, missing := bmv2proc.FindTools()
	if len(missing) > 0 {
		msg := fmt.Sprintf("BMv2 test needs %v on PATH or in /opt/p4/bin", missing)
		if os.Getenv(requireBMv2Env) == "1" {
			b.Fatal(msg + "; " + requireBMv2Env + "=1 requires them")
		}
		b.Skip(msg)
	}
	return tools.SimpleSwitchGRPC, tools.P4C
}

type bmv2 struct {
	addr     string
	info     *p4configv1.P4Info
	json     []byte
	tableID  uint32
	actionID uint32
}

// startBMv2 compiles testdata/l2.p4 and starts simple_switch_grpc on
// loopback; the switch is killed in b.Cleanup.
func startBMv2(b testing.TB) *bmv2 {
	b.Helper()
	env := compileL2(b)
	sw, _ := bmv2Tools(b)
	// The switch process is started (and checked to own its ports) by the
	// lab's helper, the one the BMv2 lab tests use.
	sw2, err := bmv2proc.Start(context.Background(), bmv2proc.Tools{SimpleSwitchGRPC: sw},
		bmv2proc.Options{Name: "push-bench", DeviceID: 1, LogDir: b.TempDir(), LabID: "push-bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sw2.Stop() })
	env.addr = sw2.GRPCAddr
	return env
}

// compileL2 compiles testdata/l2.p4 and finds its table and action.
func compileL2(b testing.TB) *bmv2 {
	b.Helper()
	_, p4c := bmv2Tools(b)
	dir := b.TempDir()
	infoPath, jsonPath := filepath.Join(dir, "l2.p4info.txtpb"), filepath.Join(dir, "l2.json")
	out, err := exec.Command(p4c, "--p4runtime-files", infoPath, "-o", jsonPath, filepath.Join("testdata", "l2.p4")).CombinedOutput()
	if err != nil {
		b.Fatalf("p4c-bm2-ss: %v\n%s", err, out)
	}
	txt, err := os.ReadFile(infoPath)
	if err != nil {
		b.Fatalf("p4c-bm2-ss wrote no P4Info: %v\n%s", err, out)
	}
	env := &bmv2{info: &p4configv1.P4Info{}}
	if err := prototext.Unmarshal(txt, env.info); err != nil {
		b.Fatalf("parse P4Info: %v", err)
	}
	if env.json, err = os.ReadFile(jsonPath); err != nil {
		b.Fatal(err)
	}
	for _, t := range env.info.GetTables() {
		if t.GetPreamble().GetName() == "MyIngress.l2_fwd" {
			env.tableID = t.GetPreamble().GetId()
		}
	}
	for _, a := range env.info.GetActions() {
		if a.GetPreamble().GetName() == "MyIngress.set_port" {
			env.actionID = a.GetPreamble().GetId()
		}
	}
	if env.tableID == 0 || env.actionID == 0 {
		b.Fatalf("P4Info lacks MyIngress.l2_fwd or MyIngress.set_port:\n%s", txt)
	}
	return env
}

func newBenchClient(b testing.TB, addr string) *client.Client {
	b.Helper()
	c, err := client.New(client.Config{Name: "bmv2", Address: addr, DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
		Transport: client.Transport{Insecure: true}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// entries returns n l2_fwd entries with canonical bytestrings (shortest
// form), as every entity mrcgen pushes is (entry.Canonical): the port is
// one byte. (A non-canonical entity is canonicalized by a copy in the diff;
// the canonical ones are used as they are.)
func (env *bmv2) entries(n int) []*p4v1.Entity {
	out := make([]*p4v1.Entity, n)
	for i := range out {
		mac := uint64(0x020000000000) + uint64(i)
		port := uint8(1 + i%255)
		out[i] = &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: env.tableID,
			Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{
				Value: []byte{byte(mac >> 40), byte(mac >> 32), byte(mac >> 24), byte(mac >> 16), byte(mac >> 8), byte(mac)}}}}},
			Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
				ActionId: env.actionID,
				Params:   []*p4v1.Action_Param{{ParamId: 1, Value: []byte{port}}},
			}}},
		}}}
	}
	return out
}

// BenchmarkBMv2Push measures entries/s written into simple_switch_grpc:
// PushDevice of 50,000 fresh entries (pipeline push, read, diff and
// batched writes), and the floor set by the switch: raw Write RPCs of
// 1,000 INSERTs on one connection.
func BenchmarkBMv2Push(b *testing.B) {
	env := startBMv2(b)
	entities := env.entries(benchEntries)
	ctx := context.Background()

	b.Run("PushDevice", func(b *testing.B) {
		tgt := push.Target{Name: "bmv2", Address: env.addr, DeviceID: 1, ElectionID: client.ElectionID{Low: 1},
			Transport: client.Transport{Insecure: true}}
		cookie, err := push.Cookie(env.info, env.json)
		if err != nil {
			b.Fatal(err)
		}
		// As mrcgen push gives it (p4runtime/deploy): the cookie from the
		// build's manifest, not computed again from the pipeline.
		d := push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: entities, Cookie: cookie}
		reset := newBenchClient(b, env.addr)
		defer reset.Close()
		var pushTime time.Duration
		for i := 0; i < b.N; i++ {
			// Outside the measurement, as for the floor: a fresh pipeline
			// (empty tables) with the build's cookie, so the push skips the
			// pipeline and measures connect, arbitration, read, diff and
			// writes.
			b.StopTimer()
			if err := reset.WaitPrimary(ctx); err != nil {
				b.Fatal(err)
			}
			if err := reset.ForcePipeline(ctx, env.info, env.json, cookie); err != nil {
				b.Fatal(err)
			}
			reset.Close()
			reset = newBenchClient(b, env.addr)
			b.StartTimer()
			start := time.Now()
			res, err := push.PushDevice(ctx, tgt, d, push.Options{})
			pushTime += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if res.Inserted != benchEntries || !res.PipelineSkipped {
				b.Fatalf("inserted %d (want %d), pipeline skipped %v", res.Inserted, benchEntries, res.PipelineSkipped)
			}
		}
		b.ReportMetric(float64(benchEntries*b.N)/pushTime.Seconds(), "entries/s")
	})

	b.Run("RawWrite1000", func(b *testing.B) {
		c := newBenchClient(b, env.addr)
		defer c.Close()
		if err := c.WaitPrimary(ctx); err != nil {
			b.Fatal(err)
		}
		reqs := floorRequests(c, entities)
		var pushTime time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := c.ForcePipeline(ctx, env.info, env.json, uint64(i+1)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			for _, r := range reqs {
				if _, err := c.RPC().Write(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			pushTime += time.Since(start)
		}
		b.ReportMetric(float64(benchEntries*b.N)/pushTime.Seconds(), "entries/s")
	})
}

// BenchmarkBMv2PushInterleaved is BenchmarkBMv2Push with the push and the
// raw floor taking turns, one of each per iteration on the same switch, so
// that both see the same load (on a shared machine the two sub-benchmarks
// of BenchmarkBMv2Push, a few seconds apart, can see different loads). It
// reports both rates and their ratio (push/raw).
func BenchmarkBMv2PushInterleaved(b *testing.B) {
	env := startBMv2(b)
	entities := env.entries(benchEntries)
	ctx := context.Background()
	cookie, err := push.Cookie(env.info, env.json)
	if err != nil {
		b.Fatal(err)
	}
	tgt := push.Target{Name: "bmv2", Address: env.addr, DeviceID: 1, Transport: client.Transport{Insecure: true}}
	d := push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: entities, Cookie: cookie}
	// Each client takes a higher election id than the one before it.
	var election uint64 = 1
	newClient := func() *client.Client {
		election++
		c, err := client.New(client.Config{Name: "bmv2", Address: env.addr, DeviceID: 1, ElectionID: client.ElectionID{Low: election},
			Transport: client.Transport{Insecure: true}})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.WaitPrimary(ctx); err != nil {
			b.Fatal(err)
		}
		return c
	}
	var pushTime, rawTime time.Duration
	for i := 0; i < b.N; i++ {
		// Push: a fresh pipeline with the build's cookie, then PushDevice.
		c := newClient()
		if err := c.ForcePipeline(ctx, env.info, env.json, cookie); err != nil {
			b.Fatal(err)
		}
		c.Close()
		election++
		tgt.ElectionID = client.ElectionID{Low: election}
		start := time.Now()
		res, err := push.PushDevice(ctx, tgt, d, push.Options{})
		pushTime += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Inserted != benchEntries || !res.PipelineSkipped {
			b.Fatalf("inserted %d (want %d), pipeline skipped %v", res.Inserted, benchEntries, res.PipelineSkipped)
		}
		// Raw floor: a fresh pipeline, then 1,000-update Writes built
		// beforehand, one after another.
		c = newClient()
		if err := c.ForcePipeline(ctx, env.info, env.json, uint64(i+1)); err != nil {
			b.Fatal(err)
		}
		reqs := floorRequests(c, entities)
		start = time.Now()
		for _, r := range reqs {
			if _, err := c.RPC().Write(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		rawTime += time.Since(start)
		c.Close()
	}
	pushRate := float64(benchEntries*b.N) / pushTime.Seconds()
	rawRate := float64(benchEntries*b.N) / rawTime.Seconds()
	b.ReportMetric(pushRate, "push-entries/s")
	b.ReportMetric(rawRate, "raw-entries/s")
	b.ReportMetric(pushRate/rawRate, "push/raw")
}

// parallelSwitches and parallelEntries size BenchmarkBMv2PushParallel: 50
// switches of 5,000 entries each.
const (
	parallelSwitches = 50
	parallelEntries  = 5000
)

// BenchmarkBMv2PushParallel pushes parallelSwitches switches at once, one
// simple_switch_grpc process each, with PushAll (every device at once), and
// measures in turn with it their floor: raw Write RPCs of 1,000 INSERTs to
// every switch at once, one goroutine per switch. Each iteration is one
// push and one floor round, both starting from idle switches; it reports
// the entries/s of all switches together, their ratio over all rounds and
// the median of the rounds' ratios, each device's mean connect, read and
// write time, and the CPU both sides took. It skips, saying why, when the
// switches cannot all be started (memory, ports).
func BenchmarkBMv2PushParallel(b *testing.B) {
	env := compileL2(b)
	sw, _ := bmv2Tools(b)
	ctx := context.Background()
	logs := b.TempDir()
	addrs := make([]string, parallelSwitches)
	switches := make([]*bmv2proc.Switch, parallelSwitches)
	var mu sync.Mutex
	var startErr error
	var wg sync.WaitGroup
	for i := range addrs {
		wg.Go(func() {
			s, err := bmv2proc.Start(ctx, bmv2proc.Tools{SimpleSwitchGRPC: sw},
				bmv2proc.Options{Name: fmt.Sprintf("push-par-%02d", i), DeviceID: 1, LogDir: logs, LabID: "push-bench-parallel"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				startErr = errors.Join(startErr, err)
				return
			}
			b.Cleanup(func() { s.Stop() })
			addrs[i], switches[i] = s.GRPCAddr, s
		})
	}
	wg.Wait()
	if startErr != nil {
		b.Skipf("could not start %d simple_switch_grpc processes: %v", parallelSwitches, startErr)
	}
	entities := env.entries(parallelEntries)
	cookie, err := push.Cookie(env.info, env.json)
	if err != nil {
		b.Fatal(err)
	}
	// Every client takes a new, higher election id: a closed stream the
	// switch has not yet dropped (50 switches on 2 cores are slow to) then
	// neither refuses the id nor stays primary.
	var election uint64 = 1
	newClient := func(b *testing.B, addr string) *client.Client {
		election++
		c, err := client.New(client.Config{Name: "bmv2", Address: addr, DeviceID: 1, ElectionID: client.ElectionID{Low: election},
			Transport: client.Transport{Insecure: true}})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	// reset gives every switch a fresh pipeline (empty tables) with the
	// given cookie, outside the measurement.
	reset := func(b *testing.B, cookie uint64) {
		var wg sync.WaitGroup
		errs := make([]error, len(addrs))
		clients := make([]*client.Client, len(addrs))
		for i, addr := range addrs {
			clients[i] = newClient(b, addr)
		}
		for i, c := range clients {
			wg.Go(func() {
				defer c.Close()
				if errs[i] = c.WaitPrimary(ctx); errs[i] == nil {
					errs[i] = c.ForcePipeline(ctx, env.info, env.json, cookie)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
	}
	// Both measurements start from idle switches: what a reset leaves
	// them doing (installing the pipeline, dropping closed streams) is not
	// counted against either.
	waitIdle := func(b *testing.B) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := bmv2proc.WaitIdle(ctx, switches, 200*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
	// cpu returns the CPU time used so far by the switches and by this
	// process: how much of the machine each side of a measurement took.
	cpu := func(b *testing.B) (switchCPU, selfCPU time.Duration) {
		for _, s := range switches {
			d, err := s.CPU()
			if err != nil {
				b.Fatal(err)
			}
			switchCPU += d
		}
		selfCPU, err := bmv2proc.ProcessCPU(os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		return switchCPU, selfCPU
	}
	total := float64(parallelSwitches * parallelEntries)

	jobs := make([]push.Job, len(addrs))
	for i, addr := range addrs {
		jobs[i] = push.Job{
			Target: push.Target{Name: fmt.Sprintf("push-par-%02d", i), Address: addr, DeviceID: 1,
				Transport: client.Transport{Insecure: true}},
			Desired: push.Desired{P4Info: env.info, DeviceConfig: env.json, Entities: entities, Cookie: cookie},
		}
	}
	// pushRound measures one PushAll of every switch from a fresh pipeline
	// with the build's cookie.
	pushRound := func(b *testing.B) (took, swCPU, selfCPU time.Duration, phases push.Phases) {
		reset(b, cookie)
		election++
		for k := range jobs {
			jobs[k].Target.ElectionID = client.ElectionID{Low: election}
		}
		waitIdle(b)
		sw0, self0 := cpu(b)
		start := time.Now()
		res, err := push.PushAll(ctx, jobs, len(jobs), nil)
		took = time.Since(start)
		sw1, self1 := cpu(b)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Inserted != parallelEntries || !r.PipelineSkipped {
				b.Fatalf("%s: inserted %d (want %d), pipeline skipped %v", r.Device, r.Inserted, parallelEntries, r.PipelineSkipped)
			}
			phases.Connect += r.Phases.Connect
			phases.Read += r.Phases.Read
			phases.Write += r.Phases.Write
		}
		return took, sw1 - sw0, self1 - self0, phases
	}
	// rawRound measures the floor: from a fresh pipeline, 1,000-update
	// Writes to every switch at once, one goroutine per switch, on clients
	// connected and primary before the clock starts, with the requests
	// built beforehand.
	rawRound := func(b *testing.B, round int) (took, swCPU, selfCPU time.Duration) {
		reset(b, uint64(round+1))
		clients := make([]*client.Client, len(addrs))
		for k, addr := range addrs {
			clients[k] = newClient(b, addr)
			if err := clients[k].WaitPrimary(ctx); err != nil {
				b.Fatal(err)
			}
		}
		defer func() {
			for _, c := range clients {
				c.Close()
			}
		}()
		reqs := make([][]*p4v1.WriteRequest, len(clients))
		for k, c := range clients {
			reqs[k] = floorRequests(c, entities)
		}
		waitIdle(b)
		sw0, self0 := cpu(b)
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(clients))
		for k, c := range clients {
			wg.Go(func() {
				for _, req := range reqs[k] {
					if _, err := c.RPC().Write(ctx, req); err != nil {
						errs[k] = err
						return
					}
				}
			})
		}
		wg.Wait()
		took = time.Since(start)
		sw1, self1 := cpu(b)
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		return took, sw1 - sw0, self1 - self0
	}

	// The two take turns, so that both see the same load.
	var pushTime, rawTime, pushSwitchCPU, rawSwitchCPU, pushSelfCPU, rawSelfCPU time.Duration
	var phases push.Phases
	ratios := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pt, psw, pself, ph := pushRound(b)
		rt, rsw, rself := rawRound(b, i)
		pushTime, pushSwitchCPU, pushSelfCPU = pushTime+pt, pushSwitchCPU+psw, pushSelfCPU+pself
		rawTime, rawSwitchCPU, rawSelfCPU = rawTime+rt, rawSwitchCPU+rsw, rawSelfCPU+rself
		phases.Connect += ph.Connect
		phases.Read += ph.Read
		phases.Write += ph.Write
		ratios = append(ratios, rt.Seconds()/pt.Seconds())
	}
	b.StopTimer()
	n := float64(b.N)
	pushRate, rawRate := total*n/pushTime.Seconds(), total*n/rawTime.Seconds()
	b.ReportMetric(pushRate, "push-entries/s")
	b.ReportMetric(rawRate, "raw-entries/s")
	b.ReportMetric(pushRate/rawRate, "push/raw")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-push/raw")
	// Each device's mean time in its fixed round trips and in writing.
	per := n * float64(len(jobs))
	b.ReportMetric(phases.Connect.Seconds()*1e3/per, "connect-ms")
	b.ReportMetric(phases.Read.Seconds()*1e3/per, "read-ms")
	b.ReportMetric(phases.Write.Seconds()*1e3/per, "write-ms")
	// How much of the machine each side took.
	b.ReportMetric(pushSwitchCPU.Seconds()/n, "push-switch-cpu-s")
	b.ReportMetric(rawSwitchCPU.Seconds()/n, "raw-switch-cpu-s")
	b.ReportMetric(pushSelfCPU.Seconds()/n, "push-go-cpu-s")
	b.ReportMetric(rawSelfCPU.Seconds()/n, "raw-go-cpu-s")
}

// floorRequests builds the raw floor's Write requests for client c: INSERTs
// of entities, 1,000 a request, with c's device and election id.
func floorRequests(c *client.Client, entities []*p4v1.Entity) []*p4v1.WriteRequest {
	cfg := c.Config()
	var reqs []*p4v1.WriteRequest
	for j := 0; j < len(entities); j += 1000 {
		req := &p4v1.WriteRequest{DeviceId: cfg.DeviceID, ElectionId: cfg.ElectionID.Proto()}
		for _, e := range entities[j:min(j+1000, len(entities))] {
			req.Updates = append(req.Updates, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: e})
		}
		reqs = append(reqs, req)
	}
	return reqs
}
