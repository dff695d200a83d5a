package bmv2tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel/nicscenario"
	"github.com/mrc-fabric/mrcgen/internal/swx"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/pna"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// envPNADiffSeed replays scenarios up to this seed, comparing the
// counters after every frame of the last.
const envPNADiffSeed = "MRCGEN_PNADIFF_SEED"

// pnaTools returns the DPDK pipeline app and p4c-dpdk, or skips the test:
// with MRCGEN_REQUIRE_DPDK_PNA=1 a missing tool, or not being root, fails
// it; an install from before tools/build-dpdk-pna.sh's pipelib stage
// skips it with the command that fixes it.
func pnaTools(t *testing.T) (swx.Tools, string) {
	t.Helper()
	required := os.Getenv(pna.RequireEnv) == "1"
	app, err := swx.FindTools()
	var compiler string
	if err == nil {
		compiler, err = pna.Find("")
	}
	switch {
	case err == nil && os.Geteuid() != 0:
		err = errors.New("the DPDK pipeline needs root (veths, a namespace, raw sockets)")
		if !required {
			t.Skip(err)
		}
	case errors.Is(err, swx.ErrUnpatched):
		t.Skip(err)
	case (errors.Is(err, swx.ErrNotFound) || errors.Is(err, pna.ErrNotFound)) && !required:
		t.Skipf("%v (set %s=1 to make this a failure)", err, pna.RequireEnv)
	}
	if err != nil {
		t.Fatal(err)
	}
	return app, compiler
}

// pnaDUT is the PNA NIC program on DPDK's SWX pipeline beside a dut (the
// BMv2 NIC program and the model).
type pnaDUT struct {
	p   *swx.Pipeline
	dir string
	// the scenario's ports that face no plane come after the loopback
	planes int
	// the outer DSCP values of trimmed data
	trimmedDSCP [2]uint8
	// what the PNA program was not given, and why: frames shorter than
	// their headers
	runts, frames, compared int
	// of the frames compared, the probes
	probes int
	// of frames, the data frames from the fabric (trimmed or not)
	fabricData, trimmed int
}

// port is the pipeline's port for a scenario's port: the same for the
// host's and the planes', one more for those that face no plane (the
// loopback port, emit.PNALoopPort, is after the planes').
func (pd *pnaDUT) port(p uint32) uint32 {
	if p > uint32(pd.planes) {
		return p + 1
	}
	return p
}

// TestPNADifferential runs the differential test's seeded scenarios
// (nicscenario) through the BMv2 NIC program, the NIC model and the PNA
// NIC program on DPDK's SWX pipeline, on tiny: every frame the PNA
// program emits must be byte-identical to BMv2's, and after every
// scenario every counter equal to the model's (which the BMv2 counters
// equal: TestNICModelDifferential). Frames shorter than their headers
// are not fed to it (counted). The scenarios never pass a packet over 7
// slots, where the two programs part (docs/protocol.md, section 8.2: PNA
// tries 7 slots, BMv2 8, and a packet's last try sends no probe on PNA;
// internal/swx's TestProbes covers that against the model): if one did,
// the frames or counters would differ and the test fail.
func TestPNADifferential(t *testing.T) {
	needLab(t)
	tools := shared.lab.Tools
	app, compiler := pnaTools(t)
	scenarios := 6
	if testing.Short() {
		scenarios = 2
	}
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := buildAndCompile(t, f, filepath.Join(dir, "build"), tools)
	host := plan.Host{Row: 0, Port: 0}
	d := startDUT(t, b, host, tools, dir, "")
	pd := startPNA(t, b, host, app, compiler, dir)
	var epochs nicscenario.Epochs
	first, last := uint64(1), uint64(scenarios)
	stepwise := false
	if v := os.Getenv(envPNADiffSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a seed", envPNADiffSeed, v)
		}
		// a replay runs the scenarios before it too (the epochs and the
		// registers carry over), comparing counters after every frame of
		// the one replayed
		last, stepwise = n, true
		scenarios = int(n)
	}
	for seed := first; seed <= last; seed++ {
		if err := runPNAScenario(t, d, pd, b.Plan, host, seed, &epochs, stepwise && seed == last); err != nil {
			t.Fatalf("scenario seed %d (replay: %s=%d): %v", seed, envPNADiffSeed, seed, err)
		}
	}
	t.Logf("tiny: %d scenarios; %d frames into BMv2, the model and the PNA program on DPDK (%d of them data from the fabric, %d trimmed), "+
		"%d frames out of DPDK byte-identical to BMv2's (%d of them probes); not fed: %d frames shorter than their headers; "+
		"counters equal to the model's after every scenario",
		scenarios, pd.frames, pd.fabricData, pd.trimmed, pd.compared, pd.probes, pd.runts)
}

func startPNA(t *testing.T, b *artifacts.Build, h plan.Host, app swx.Tools, compiler, dir string) *pnaDUT {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	src, err := emit.NICPNA(b.Plan.F)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "mrc_nic_pna.p4")
	if err := os.WriteFile(prog, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := pna.Compile(ctx, compiler, prog, filepath.Join(dir, "pna"))
	if err != nil {
		t.Fatalf("%+v", err)
	}
	// the host's port, the planes', the loopback, and the 3 that face no
	// plane nicscenario sends on
	loop := emit.PNALoopPort(b.Plan.F)
	p, err := swx.Start(ctx, app, swx.Options{Name: fmt.Sprintf("d%d", os.Getpid()%100000), Spec: out.Spec, Ports: 5 + b.Plan.F.Planes, Loopback: loop, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop the pipeline: %v", err)
		}
	})
	if err := p.MirrorSession(emit.PNAAnswerSession, loop, emit.PNAAnswerCopyBytes); err != nil {
		t.Fatal(err)
	}
	common, err := b.NICCommonEntries()
	if err != nil {
		t.Fatal(err)
	}
	own, err := b.NICEntries(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(dir, false, append(append([]entry.Entry(nil), common...), own...)...); err != nil {
		t.Fatal(err)
	}
	f := b.Plan.F
	return &pnaDUT{p: p, dir: dir, planes: f.Planes, trimmedDSCP: [2]uint8{uint8(f.DSCP.Trimmed), uint8(f.DSCP.TrimmedLastHop)}}
}

// counters compares the pipeline's counters with the model's, waiting for
// the pipeline to finish the frames in flight.
func (pd *pnaDUT) counters(ctx context.Context, model *nicmodel.NIC, f *fabric.Fabric) error {
	for {
		m := model.Counters()
		want := map[string][2][]uint64{
			schema.NICEventCounter: {m.Events[:], nil},
			schema.NICPlaneTx:      {m.PlaneTx[:], m.PlaneTxBytes[:]},
			schema.NICSlotTx:       {m.SlotTx, nil},
			schema.NICSlotBackupTx: {m.SlotBackupTx, nil},
			schema.NICSlotFailed:   {m.SlotFailed, nil},
		}
		var diff strings.Builder
		for _, c := range schema.NIC(f).Counters {
			packets, bytes, err := pd.p.Counter(c)
			if err != nil {
				return err
			}
			w := want[c.FullName()]
			for i := range packets {
				var wp, wb uint64
				if i < len(w[0]) {
					wp = w[0][i]
				}
				if w[1] != nil && i < len(w[1]) {
					wb = w[1][i]
				}
				if packets[i] != wp || (w[1] != nil && bytes[i] != wb) {
					fmt.Fprintf(&diff, "\n  %s[%d]: DPDK %d packets %v bytes, model %d packets %d bytes", c.FullName(), i, packets[i], bytes, wp, wb)
				}
			}
		}
		if diff.Len() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			stats, _ := pd.p.Command("pipeline " + swx.PipelineName + " stats")
			if i := strings.Index(stats, "Tables:"); i > 0 {
				stats = stats[:i]
			}
			return fmt.Errorf("DPDK's counters differ from the model's:%s\n%s", diff.String(), stats)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// parsedBytes is how many bytes of frame b the PNA program's parser
// extracts, whether b has them or not.
func parsedBytes(b []byte) int {
	at := func(i int) int {
		if i < len(b) {
			return int(b[i])
		}
		return 0
	}
	n := mrcpkt.EthernetLen
	if at(12)<<8|at(13) != 0x86dd {
		return n
	}
	ip := n
	n += mrcpkt.IPv6Len
	if at(ip+6) == 41 {
		ip = n
		n += mrcpkt.IPv6Len
	}
	if at(ip+6) != 17 {
		return n
	}
	udp := n
	n += mrcpkt.UDPLen
	if at(udp+2)<<8|at(udp+3) != mrcpkt.PortRoCEv2 {
		return n
	}
	op := at(n)
	n += 12 // BTH
	switch {
	case op >= 0xc6 && op <= 0xcb:
		n += 4 + 16 // METH, RETH
	case op == int(mrcpkt.OpNACK):
		n += 12
	case op == int(mrcpkt.OpSACK):
		n += 20
	case op == int(mrcpkt.OpProbeAnswer):
		n += 4
	}
	return n
}

// fabricData reports whether a frame arriving on a plane port is data,
// and whether it is trimmed (its outer DSCP one of trimmedDSCP).
func fabricData(port uint32, frame []byte, trimmedDSCP [2]uint8) (data, trimmed bool) {
	if port == 0 {
		return false, false
	}
	pk, err := mrcpkt.Parse(frame)
	if err != nil || pk.Outer == nil || !mrcpkt.IsData(pk.BTH.Opcode) {
		return false, false
	}
	return true, pk.Outer.DSCP == trimmedDSCP[0] || pk.Outer.DSCP == trimmedDSCP[1]
}

func runPNAScenario(t *testing.T, d *dut, pd *pnaDUT, p *plan.Plan, host plan.Host, seed uint64, epochs *nicscenario.Epochs, stepwise bool) error {
	ctx := ctxFor(t, 2*time.Minute)
	first := int(seed*8) % (schema.NICMaxQPs - 8)
	sc := nicscenario.New(p, host, seed, 80+int(seed%60), first, epochs)
	unsettled := false
	for i := 0; ; i++ {
		st, ok := sc.Next()
		if !ok {
			break
		}
		if st.Write {
			if unsettled {
				if err := d.counters(ctx); err != nil {
					return fmt.Errorf("before step %d (%s): BMv2: %w", i, st.What, err)
				}
				if err := pd.counters(ctx, d.model, p.F); err != nil {
					return fmt.Errorf("before step %d (%s): %w", i, st.What, err)
				}
				unsettled = false
			}
			if err := d.write(ctx, st.Op, st); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			if err := pd.p.Write(pd.dir, st.Op == nicmodel.Delete, st.Entries...); err != nil {
				return fmt.Errorf("step %d (%s): DPDK: %w", i, st.What, err)
			}
			continue
		}
		if len(st.Data) < parsedBytes(st.Data) {
			// DPDK's extract does not check the packet's length: a frame
			// cut short is parsed from whatever bytes follow it in the
			// buffer (and a raw socket cannot send less than an
			// Ethernet header)
			pd.runts++
			continue
		}
		if extra, ok := pd.p.Recv(0); ok {
			return fmt.Errorf("step %d (%s): DPDK sent a frame before it: port %d %x", i, st.What, extra.Port, extra.Data)
		}
		_, got, err := d.step(st.Port, st.Data)
		if err != nil {
			return fmt.Errorf("step %d (%s): BMv2 and the model: %w", i, st.What, err)
		}
		want := got
		for _, f := range got {
			if pk, err := mrcpkt.Parse(f.data); st.Port == 0 && err == nil && pk.BTH.Opcode == mrcpkt.OpProbe {
				pd.probes++
			}
		}
		if err := pd.p.Send(pd.port(st.Port), st.Data); err != nil {
			return err
		}
		pd.frames++
		if data, trimmed := fabricData(st.Port, st.Data, pd.trimmedDSCP); data {
			pd.fabricData++
			if trimmed {
				pd.trimmed++
			}
		}
		var out []portFrame
		for len(out) < len(want) {
			fr, ok := pd.p.Recv(5 * time.Second)
			if !ok {
				break
			}
			port := fr.Port
			if port > uint32(pd.planes)+1 {
				port-- // a port that faces no plane
			}
			out = append(out, portFrame{port, fr.Data})
		}
		sortFrames(out)
		if len(out) != len(want) {
			return fmt.Errorf("step %d (%s): frame in on port %d %x: BMv2 sent %d frames, DPDK %d", i, st.What, st.Port, st.Data, len(want), len(out))
		}
		for j := range want {
			if want[j].port != out[j].port || !bytes.Equal(want[j].data, out[j].data) {
				return fmt.Errorf("step %d (%s): frame in on port %d %x:\n  BMv2: %s\n  DPDK: %s", i, st.What, st.Port, st.Data, describe(want[j]), describe(out[j]))
			}
		}
		pd.compared += len(out)
		unsettled = true
		em := make([]nicscenario.Emitted, len(got))
		for j, f := range got {
			em[j] = nicscenario.Emitted{Port: f.port, Data: f.data}
		}
		sc.Observe(em)
		if stepwise {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := pd.counters(cctx, d.model, p.F)
			cancel()
			if err != nil {
				return fmt.Errorf("after step %d (%s), frame in on port %d:\n    %x\n  %v", i, st.What, st.Port, st.Data, err)
			}
		}
	}
	if err := d.counters(ctx); err != nil {
		return fmt.Errorf("end: BMv2: %w", err)
	}
	if err := pd.counters(ctx, d.model, p.F); err != nil {
		return fmt.Errorf("end: %w", err)
	}
	return nil
}

// TestPNAThroughput measures the packets per second the BMv2 NIC program
// and the PNA one on DPDK carry on the same host data frames (one
// single-path QP of tiny's nic-0, 256-byte payloads, 8 in flight, each
// frame's encapsulated copy awaited), one after the other. A measurement, not a check: it runs
// only with MRCGEN_PNA_PPS=1 (MRCGEN_PNA_PPS_FRAMES frames, default 3000).
//
//	MRCGEN_PNA_PPS=1 go test ./bmv2-tests -run PNAThroughput -v
func TestPNAThroughput(t *testing.T) {
	if os.Getenv("MRCGEN_PNA_PPS") != "1" {
		t.Skip("a measurement: set MRCGEN_PNA_PPS=1 to run it")
	}
	needLab(t)
	tools := shared.lab.Tools
	app, compiler := pnaTools(t)
	n := 3000
	if v := os.Getenv("MRCGEN_PNA_PPS_FRAMES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("MRCGEN_PNA_PPS_FRAMES=%q", v)
		}
	}
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := buildAndCompile(t, f, filepath.Join(dir, "build"), tools)
	host := plan.Host{Row: 0, Port: 0}
	d := startDUT(t, b, host, tools, dir, "")
	pd := startPNA(t, b, host, app, compiler, dir)
	p := b.Plan
	// A single-path QP: with no echoes coming back, a multipath QP's
	// slots fail after failover.unanswered_sends each and its packets are
	// then passed over, dropped or cloned into probes; a single-path QP
	// sends every packet (QP lookup, registers, encapsulation, counters).
	q := qpentry.QP{Local: 0x101, Peer: p.HostAddr(plan.Host{Row: 1, Port: 1}), PeerQP: 0x201, Index: 9, Epoch: 1, SinglePath: true, FirstSlot: 2}
	send, recv, err := qpentry.Entries(schema.NIC(f), f.T1Count, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ctl.Write(ctxFor(t, 20*time.Second), p4v1.Update_INSERT, send, recv); err != nil {
		t.Fatal(err)
	}
	if err := pd.p.Write(dir, false, send, recv); err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, n)
	for i := range frames {
		pk := &mrcpkt.Packet{
			Ethernet: mrcpkt.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
			Inner:    mrcpkt.IPv6{Src: p.HostAddr(host), Dst: q.Peer, DSCP: uint8(f.DSCP.Trimmable), ECN: mrcpkt.ECNECT0, HopLimit: mrcpkt.HopLimit},
			UDP:      mrcpkt.UDP{DstPort: mrcpkt.PortRoCEv2},
			BTH:      mrcpkt.BTH{Opcode: mrcpkt.OpWriteMiddle, DstQP: q.PeerQP, PSN: uint32(i)},
			METH:     &mrcpkt.METH{},
			RETH:     &mrcpkt.RETH{DMALen: 256},
			Payload:  make([]byte, 256),
		}
		if err := pk.FixLengths(); err != nil {
			t.Fatal(err)
		}
		if frames[i], err = mrcpkt.Serialize(pk); err != nil {
			t.Fatal(err)
		}
	}
	const window = 8
	run := func(name string, send func([]byte) error, recv func() bool) float64 {
		start := time.Now()
		sent, got := 0, 0
		for got < n {
			for sent < n && sent-got < window {
				if err := send(frames[sent]); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				sent++
			}
			if !recv() {
				t.Fatalf("%s: %d of %d frames came back, then nothing for 10 s", name, got, n)
			}
			got++
		}
		pps := float64(n) / time.Since(start).Seconds()
		t.Logf("%s: %d host data frames in %.2f s: %.0f packets/s", name, n, time.Since(start).Seconds(), pps)
		return pps
	}
	bm := run("BMv2 (simple_switch_grpc, v1model)", func(b []byte) error { return d.dp.Send(bmv2.Packet{Port: 0, Data: b}) },
		func() bool {
			select {
			case _, ok := <-d.rx:
				return ok
			case <-time.After(10 * time.Second):
				return false
			}
		})
	dp := run("DPDK SWX pipeline (PNA, af_packet)", func(b []byte) error { return pd.p.Send(0, b) },
		func() bool { _, ok := pd.p.Recv(10 * time.Second); return ok })
	t.Logf("DPDK / BMv2: %.1fx", dp/bm)
}
