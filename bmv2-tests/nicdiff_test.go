package bmv2tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel/nicscenario"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/p4runtime/deploy"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

// Environment of the differential test.
const (
	// envNICDiffSeed replays one scenario: the seed a failure printed.
	envNICDiffSeed = "MRCGEN_NICDIFF_SEED"
	// envNICDiffScenarios runs more (or fewer) scenarios per fabric.
	envNICDiffScenarios = "MRCGEN_NICDIFF_SCENARIOS"
	// envNICDiffMutate runs the model with a deliberately wrong constant
	// ("k+1": one more unanswered send before a path fails; "n+1"; "w*2":
	// twice the receive window), to show the
	// test catches a model that drifted from the program.
	envNICDiffMutate = "MRCGEN_NICDIFF_MUTATE"
	// envNICDiffStepwise=1 compares every counter after every step (a
	// replay always does), to find the step where program and model part.
	envNICDiffStepwise = "MRCGEN_NICDIFF_STEPWISE"
)

// dut is one NIC program on its own simple_switch_grpc, and the model of
// the same NIC, fed the same frames and writes.
type dut struct {
	name  string
	model *nicmodel.NIC
	sw    *bmv2.Switch
	ctl   *lab.Control
	dp    *bmv2.Dataplane
	rx    chan bmv2.Packet
	// frames counts the frames fed to both; emitted the frames compared.
	frames, emitted int
}

// startDUT starts host h's NIC of build b on a switch of its own, pushes
// the build's entries for it (mrcgen's own push), and loads the model of
// the same NIC from the same build.
func startDUT(t *testing.T, b *artifacts.Build, h plan.Host, tools bmv2.Tools, dir string, mutate string) *dut {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	name := b.Plan.HostName(h)
	sw, err := bmv2.Start(ctx, tools, bmv2.Options{Name: "nicdiff-" + b.Plan.F.Name + "-" + name, DeviceID: 1, PriorityQueues: 2,
		LogDir: dir, LabID: labIDPrefix + "nicdiff"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sw.Stop(); err != nil {
			t.Errorf("stop %s: %v", sw.Name, err)
		}
	})
	insecure := true
	tf := &targets.File{Defaults: targets.Endpoint{Insecure: &insecure, ElectionID: 1},
		Devices: map[string]targets.Endpoint{name: {Address: sw.GRPCAddr, DeviceID: sw.DeviceID}}}
	if _, err := deploy.Run(ctx, b, tf, deploy.Options{Devices: []string{name}}); err != nil {
		t.Fatalf("push %s: %v", name, err)
	}
	ctl, err := lab.DialControl(ctx, name, sw.GRPCAddr, sw.DeviceID, b.ProgramFor(artifacts.ProgramNIC), b.Plan.F.T1Count)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	dp, err := bmv2.OpenDataplane(context.Background(), sw.DataplaneConn(), sw.DeviceID)
	if err != nil {
		t.Fatal(err)
	}
	d := &dut{name: name, sw: sw, ctl: ctl, dp: dp, rx: make(chan bmv2.Packet, 1024)}
	go func() {
		defer close(d.rx)
		for {
			p, err := dp.Recv()
			if err != nil {
				return
			}
			d.rx <- p
		}
	}()
	t.Cleanup(func() { dp.CloseSend() })

	f := b.Plan.F
	if mutate != "" {
		m := *f
		switch mutate {
		case "k+1":
			m.Failover.UnansweredSends++
		case "n+1":
			m.Failover.ProbePasses++
		case "w*2":
			m.ReceiveWindow *= 2
		default:
			t.Fatalf("%s=%q: want k+1, n+1 or w*2", envNICDiffMutate, mutate)
		}
		f = &m
	}
	common, err := nicmodel.CommonFromBuild(b)
	if err != nil {
		t.Fatal(err)
	}
	own, err := b.NICEntries(h)
	if err != nil {
		t.Fatal(err)
	}
	if d.model, err = nicmodel.New(f, common); err != nil {
		t.Fatal(err)
	}
	if err := d.model.WriteAll(nicmodel.Insert, own...); err != nil {
		t.Fatal(err)
	}
	for _, cs := range schema.NICCloneSessions(f) {
		d.model.SetCloneSession(cs)
	}
	return d
}

// frame is a frame seen on a port, for comparison.
type portFrame struct {
	port uint32
	data []byte
}

func sortFrames(fs []portFrame) {
	slices.SortFunc(fs, func(a, b portFrame) int {
		if a.port != b.port {
			return int(a.port) - int(b.port)
		}
		return bytes.Compare(a.data, b.data)
	})
}

// describe decodes a frame for a failure message.
func describe(f portFrame) string {
	pk, err := mrcpkt.Parse(f.data)
	if err != nil {
		return fmt.Sprintf("port %d: %d bytes (%v)\n    %x", f.port, len(f.data), err, f.data)
	}
	s := fmt.Sprintf("port %d: %d bytes, opcode %#x, QP %#x, PSN %#x", f.port, len(f.data), pk.BTH.Opcode, pk.BTH.DstQP, pk.BTH.PSN)
	if ev, ok := mrcpkt.EV(pk); ok {
		s += fmt.Sprintf(", EV %#x, to %v", ev, pk.Outer.Dst)
	}
	if pk.SETH != nil {
		s += fmt.Sprintf(", SACK %+v", *pk.SETH)
	}
	if pk.NETH != nil {
		s += fmt.Sprintf(", NACK %+v", *pk.NETH)
	}
	return s + fmt.Sprintf("\n    %x", f.data)
}

// step feeds one frame to both and compares what they emit, frame for
// frame. The model says how many frames to expect; the switch's are taken
// until that many have come (BMv2 runs ingress in arrival order, so a
// frame's outputs all leave before the next frame's), and any frame that
// comes unasked shows at the next step.
func (d *dut) step(port uint32, data []byte) (want, got []portFrame, err error) {
	select {
	case p, ok := <-d.rx:
		if !ok {
			return nil, nil, fmt.Errorf("the switch's packet stream ended")
		}
		return nil, []portFrame{{p.Port, p.Data}}, fmt.Errorf("a frame came from the switch before this step's frame was sent")
	default:
	}
	for _, f := range d.model.Process(port, data) {
		want = append(want, portFrame{f.Port, f.AppendTo(nil)})
	}
	if err := d.dp.Send(bmv2.Packet{Port: port, Data: data}); err != nil {
		return want, nil, err
	}
	d.frames++
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for len(got) < len(want) {
		select {
		case p, ok := <-d.rx:
			if !ok {
				return want, got, fmt.Errorf("the switch's packet stream ended")
			}
			got = append(got, portFrame{p.Port, p.Data})
		case <-timeout.C:
			return want, got, fmt.Errorf("the switch emitted %d frames in 10 s, the model %d", len(got), len(want))
		}
	}
	d.emitted += len(want)
	sortFrames(want)
	sortFrames(got)
	for i := range want {
		if want[i].port != got[i].port || !bytes.Equal(want[i].data, got[i].data) {
			return want, got, fmt.Errorf("frame %d of %d differs", i+1, len(want))
		}
	}
	return want, got, nil
}

// write applies one update to both; both must accept it or both refuse it.
func (d *dut) write(ctx context.Context, op nicmodel.Op, st nicscenario.Step) error {
	types := map[nicmodel.Op]p4v1.Update_Type{nicmodel.Insert: p4v1.Update_INSERT, nicmodel.Modify: p4v1.Update_MODIFY, nicmodel.Delete: p4v1.Update_DELETE}
	swErr := d.ctl.Write(ctx, types[op], st.Entries...)
	var modelErr error
	for _, e := range st.Entries {
		if err := d.model.Write(op, e); err != nil && modelErr == nil {
			modelErr = err
		}
	}
	if (swErr == nil) != (modelErr == nil) {
		return fmt.Errorf("%s: the switch says %v, the model %v", st.What, swErr, modelErr)
	}
	return nil
}

// counters compares every counter of the program with the model's,
// waiting for the switch to finish counting (egress counts after the last
// frame compared may still be under way).
func (d *dut) counters(ctx context.Context) error {
	var diff string
	for {
		m := d.model.Counters()
		diff = ""
		check := func(name string, model []uint64, bytesToo []uint64) error {
			cells, err := d.ctl.Cells(ctx, name)
			if err != nil {
				return err
			}
			for i, c := range cells {
				var mp, mb uint64
				if i < len(model) {
					mp = model[i]
				}
				if bytesToo != nil && i < len(bytesToo) {
					mb = bytesToo[i]
				}
				if uint64(c.Packets) != mp || (bytesToo != nil && uint64(c.Bytes) != mb) {
					diff += fmt.Sprintf("\n  %s[%d]: switch %d packets %d bytes, model %d packets %d bytes", name, i, c.Packets, c.Bytes, mp, mb)
				}
			}
			return nil
		}
		for _, c := range []struct {
			name        string
			model, size []uint64
		}{
			{schema.NICEventCounter, m.Events[:], nil},
			{schema.NICPlaneTx, m.PlaneTx[:], m.PlaneTxBytes[:]},
			{schema.NICSlotTx, m.SlotTx, nil},
			{schema.NICSlotBackupTx, m.SlotBackupTx, nil},
			{schema.NICSlotFailed, m.SlotFailed, nil},
		} {
			if err := check(c.name, c.model, c.size); err != nil {
				return err
			}
		}
		if diff == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("counters differ:%s", diff)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nicDiffFabrics are the fabrics the differential test runs: tiny (the
// lab's: SACKs coalesced by 3), and one answering every packet with the
// smallest K its set allows (6) and N = 2, so that a scenario's black
// holes fail slots, fail backups and probe them sooner.
var nicDiffFabrics = []struct {
	name, yaml string
}{
	{"tiny", ""},
	{"quick", "base: tiny\nname: nicdiff-quick\nnic: {ack_every: 1, window_packets: 64}\nfailover: {unanswered_sends: 6, probe_passes: 2}\n"},
}

// TestNICModelDifferential: seeded random scenarios (nicscenario) go into
// the NIC program on simple_switch_grpc and into internal/nicmodel; every
// frame each emits (port and bytes) and, after every scenario, every
// counter must be equal. A failure prints the scenario's seed:
// MRCGEN_NICDIFF_SEED=<seed> replays it alone.
func TestNICModelDifferential(t *testing.T) {
	needLab(t) // for the tools, the skip and the required-mode failure
	tools := shared.lab.Tools
	scenarios := 60
	if v := os.Getenv(envNICDiffScenarios); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", envNICDiffScenarios, v)
		}
		scenarios = n
	}
	var only uint64
	if v := os.Getenv(envNICDiffSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a seed", envNICDiffSeed, v)
		}
		only = n
	}
	mutate := os.Getenv(envNICDiffMutate)
	total := struct{ scenarios, frames, emitted int }{}
	for fi, fab := range nicDiffFabrics {
		t.Run(fab.name, func(t *testing.T) {
			dir := t.TempDir()
			var f *fabric.Fabric
			var err error
			if fab.yaml == "" {
				f, err = fabric.FromPreset(fab.name)
			} else {
				f, err = fabric.Parse(fab.name+".yaml", strings.NewReader(fab.yaml))
			}
			if err != nil {
				t.Fatal(err)
			}
			b := buildAndCompile(t, f, filepath.Join(dir, "build"), tools)
			host := plan.Host{Row: 0, Port: 0}
			d := startDUT(t, b, host, tools, dir, mutate)
			var epochs nicscenario.Epochs
			first, last := uint64(fi*100_000+1), uint64(fi*100_000+scenarios)
			if only != 0 {
				first, last = only, only
			}
			for seed := first; seed <= last; seed++ {
				if only == 0 && seed/100_000 != uint64(fi) {
					break
				}
				if err := runScenario(t, d, b.Plan, host, seed, &epochs, only != 0 || os.Getenv(envNICDiffStepwise) == "1"); err != nil {
					t.Fatalf("scenario seed %d (replay: %s=%d go test -run 'TestNICModelDifferential/%s' ./bmv2-tests/): %v",
						seed, envNICDiffSeed, seed, fab.name, err)
				}
				total.scenarios++
			}
			total.frames += d.frames
			total.emitted += d.emitted
			t.Logf("%s: %d scenarios, %d frames in, %d frames out, all equal; counters equal after every scenario",
				fab.name, last-first+1, d.frames, d.emitted)
		})
	}
	t.Logf("in all: %d scenarios, %d frames fed to the program and the model, %d frames compared", total.scenarios, total.frames, total.emitted)
}

// runScenario runs one scenario on d. A replay (stepwise) also compares
// every counter after every step, to name the step where they part.
func runScenario(t *testing.T, d *dut, p *plan.Plan, host plan.Host, seed uint64, epochs *nicscenario.Epochs, stepwise bool) error {
	ctx := ctxFor(t, 2*time.Minute)
	// State indexes: the scenario's QPs use 8 from a window that moves, so
	// that every index and many epochs are used over a run.
	first := int(seed*8) % (schema.NICMaxQPs - 8)
	sc := nicscenario.New(p, host, seed, 80+int(seed%60), first, epochs)
	// unsettled: a frame went in since the last write.
	unsettled := false
	// prev describes the last frame step, for a failure: a frame one step
	// emits late shows at the next.
	prev := "none"
	for i := 0; ; i++ {
		st, ok := sc.Next()
		if !ok {
			break
		}
		if st.Write {
			// A write must not overtake a frame the switch has not
			// finished (the model ran it whole before the write): a frame
			// with no output to wait for may not have run yet, and one
			// whose outputs have all come may still be resubmitted (a
			// later try that ends in a drop, or in a frame the new state
			// would send). Every frame counts an event on its last pass,
			// so equal counters mean the switch has finished them all.
			if unsettled {
				if err := d.counters(ctx); err != nil {
					return fmt.Errorf("before step %d (%s): %w", i, st.What, err)
				}
				unsettled = false
			}
			if err := d.write(ctx, st.Op, st); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			continue
		}
		want, got, err := d.step(st.Port, st.Data)
		if err != nil {
			var b strings.Builder
			fmt.Fprintf(&b, "step %d (%s): frame in on port %d (%d bytes):\n    %x\n  %v\n  model:", i, st.What, st.Port, len(st.Data), st.Data, err)
			for _, f := range want {
				b.WriteString("\n  " + describe(f))
			}
			b.WriteString("\n  switch:")
			for _, f := range got {
				b.WriteString("\n  " + describe(f))
			}
			b.WriteString("\n  previous frame step: " + prev)
			return fmt.Errorf("%s", b.String())
		}
		prev = fmt.Sprintf("step %d (%s), port %d, %d frames out:", i, st.What, st.Port, len(want))
		for _, f := range want {
			prev += "\n    " + describe(f)
		}
		unsettled = true
		out := make([]nicscenario.Emitted, len(want))
		for j, f := range want {
			out[j] = nicscenario.Emitted{Port: f.port, Data: f.data}
		}
		sc.Observe(out)
		if stepwise {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := d.counters(cctx)
			cancel()
			if err != nil {
				return fmt.Errorf("after step %d (%s), frame in on port %d:\n    %x\n  %v", i, st.What, st.Port, st.Data, err)
			}
		}
	}
	return d.counters(ctx)
}

// buildAndCompile builds fabric f into dir and compiles it with p4c.
func buildAndCompile(t *testing.T, f *fabric.Fabric, dir string, tools bmv2.Tools) *artifacts.Build {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	if _, err := artifacts.Write(ctx, f, dir, artifacts.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := artifacts.Compile(ctx, dir, tools.P4C); err != nil {
		t.Fatalf("%+v", err)
	}
	b, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
