package swx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/internal/swx"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/pna"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

func TestLine(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	prog := schema.NIC(f)
	q := qpentry.QP{Local: 0x11, Peer: plan.New(f).HostAddr(plan.Host{Row: 1, Port: 1}), PeerQP: 0x22, Index: 3, Epoch: 7, T1Offset: 1, FirstSlot: 5}
	send, _, err := qpentry.Entries(prog, f.T1Count, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := swx.Line(send)
	if err != nil {
		t.Fatal(err)
	}
	if want := "match 0x10002 0x22 action set_send_qp qp_index 0x3 t1_offset 0x1 epoch 0x7 single_path 0x0 first_slot 0x5"; got != want {
		t.Errorf("qp_send line\n got %s\nwant %s", got, want)
	}
	st, err := qpentry.Make(prog, schema.NICEVState, "ev_assumed_bad", []entry.Match{{Value: 0x10000, Mask: 0xff0000}})
	if err != nil {
		t.Fatal(err)
	}
	st.Priority = 10
	got, err = swx.Line(st)
	if err != nil {
		t.Fatal(err)
	}
	if want := "match 0x10000/0xff0000 priority 536870900 action ev_assumed_bad"; got != want {
		t.Errorf("ev_state line\n got %s\nwant %s", got, want)
	}
	st.Priority = 0
	if _, err := swx.Line(st); err == nil {
		t.Error("a ternary entry without a priority was accepted")
	}
}

// tools returns the pipeline app and p4c-dpdk, or skips the test: with
// MRCGEN_REQUIRE_DPDK_PNA=1 a missing tool, or not being root, fails it.
func tools(t *testing.T) (swx.Tools, string) {
	t.Helper()
	required := os.Getenv(pna.RequireEnv) == "1"
	app, err := swx.FindTools()
	if err == nil {
		var compiler string
		if compiler, err = pna.Find(""); err == nil {
			if os.Geteuid() != 0 {
				err = errors.New("the DPDK pipeline needs root (veths, a namespace, raw sockets)")
				if !required {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			return app, compiler
		}
	}
	if errors.Is(err, swx.ErrUnpatched) {
		// An install from before the pipelib stage: the compile tests
		// run, the pipeline cannot (its packets would compute garbage).
		t.Skip(err)
	}
	if (errors.Is(err, swx.ErrNotFound) || errors.Is(err, pna.ErrNotFound)) && !required {
		t.Skipf("%v (set %s=1 to make this a failure)", err, pna.RequireEnv)
	}
	t.Fatal(err)
	return swx.Tools{}, ""
}

// Start builds fabric f, compiles its PNA NIC program and starts it on a
// pipeline with host h's entries; it returns the pipeline, the build and
// the model of the same NIC with the same entries.
func Start(t *testing.T, f *fabric.Fabric, h plan.Host, name string, ports ...int) (*swx.Pipeline, *artifacts.Build, *nicmodel.NIC) {
	t.Helper()
	app, compiler := tools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if _, err := artifacts.Write(ctx, f, filepath.Join(dir, "build"), artifacts.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.Open(filepath.Join(dir, "build"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := emit.NICPNA(f)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "mrc_nic.p4")
	if err := os.WriteFile(prog, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := pna.Compile(ctx, compiler, prog, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatalf("%+v", err)
	}
	// the host's port, the planes' and the loopback the answers need
	loop := emit.PNALoopPort(f)
	n := loop + 1
	if len(ports) > 0 {
		n = ports[0]
	}
	p, err := swx.Start(ctx, app, swx.Options{Name: name, Spec: out.Spec, Ports: n, Loopback: loop, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v", err)
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
	all := append(append([]entry.Entry(nil), common...), own...)
	if err := p.Write(dir, false, all...); err != nil {
		t.Fatal(err)
	}
	model, err := nicmodel.New(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := model.WriteAll(nicmodel.Insert, all...); err != nil {
		t.Fatal(err)
	}
	// the BMv2 program's clone sessions: the model's SACKs and probes
	for _, cs := range schema.NICCloneSessions(f) {
		model.SetCloneSession(cs)
	}
	return p, b, model
}

// TestHostData: the host's data frames of two QPs, one a single-path QP,
// go into the PNA program on the DPDK pipeline and into the NIC model
// (internal/nicmodel, which the BMv2 differential test holds to the BMv2
// program); every frame out (port and bytes) and the counters must agree.
func TestHostData(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	host := plan.Host{Row: 0, Port: 0}
	p, b, model := Start(t, f, host, fmt.Sprintf("h%d", os.Getpid()%100000))
	pl := b.Plan
	qps := []qpentry.QP{
		{Local: 0x101, Peer: pl.HostAddr(plan.Host{Row: 1, Port: 1}), PeerQP: 0x201, Index: 0, Epoch: 1, T1Offset: 1, FirstSlot: 3},
		{Local: 0x102, Peer: pl.HostAddr(plan.Host{Row: 0, Port: 1}), PeerQP: 0x202, Index: 1, Epoch: 1, SinglePath: true, FirstSlot: 6},
	}
	for _, q := range qps {
		send, recv, err := qpentry.Entries(schema.NIC(f), f.T1Count, q)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(t.TempDir(), false, send, recv); err != nil {
			t.Fatal(err)
		}
		if err := model.WriteAll(nicmodel.Insert, send, recv); err != nil {
			t.Fatal(err)
		}
	}
	frames, compared := 0, 0
	for i := 0; i < 3*f.EV.SetSize; i++ {
		q := qps[i%len(qps)]
		data := hostData(t, f, pl.HostAddr(host), q, i, 1000)
		want := model.Process(0, data)
		if err := p.Send(0, data); err != nil {
			t.Fatal(err)
		}
		frames++
		for _, w := range want {
			got, ok := p.Recv(5 * time.Second)
			if !ok {
				stats, _ := p.Command("pipeline " + swx.PipelineName + " stats")
				ev, _, _ := p.Counter(schema.NIC(f).Counter(schema.NICEventCounter))
				t.Fatalf("frame %d: the pipeline sent nothing in 5 s; the model sent %d bytes on port %d\n%x\nevents %v\n%s", i, len(w.AppendTo(nil)), w.Port, w.AppendTo(nil), ev, stats)
			}
			if wb := w.AppendTo(nil); got.Port != w.Port || !bytes.Equal(got.Data, wb) {
				stats, _ := p.Command("pipeline " + swx.PipelineName + " stats")
				t.Fatalf("frame %d differs:\n pipeline port %d %x\n model    port %d %x\n%s", i, got.Port, got.Data, w.Port, wb, stats)
			}
			compared++
		}
	}
	if extra, ok := p.Recv(200 * time.Millisecond); ok {
		t.Fatalf("the pipeline sent a frame the model did not: port %d %x", extra.Port, extra.Data)
	}
	checkCounters(t, p, f, model)
	t.Logf("%d host data frames in, %d frames out byte-identical to the model's; counters equal", frames, compared)
}

// TestProbes: a multipath QP's data goes out and no echo ever comes back.
// Its slots fail (ASSUMED_BAD: the packets take the backup EV), fail
// again (BOTH_BAD: passed over), and at last every packet is passed over
// to its last try and given up; every PROBE_PASSES-th pass over a failed
// slot probes its base EV. The model passes over at most the PNA
// program's 7 slots (BMv2's 8). What the PNA program on the DPDK pipeline
// sends (data on the backup EV, probes made on the loopback from a copy
// of a packet sent or passed over) must be the model's, byte for byte, in
// any order, but for the probes the model makes on a packet's last pass
// when it gives the packet up there, which PNA cannot copy
// (docs/protocol.md 8.2): those are counted, and the counters must be
// equal, probes_sent less by them.
func TestProbes(t *testing.T) {
	const probePacing = 20 * time.Millisecond
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	host := plan.Host{Row: 0, Port: 0}
	p, b, model := Start(t, f, host, fmt.Sprintf("p%d", os.Getpid()%100000))
	pl := b.Plan
	q := qpentry.QP{Local: 0x501, Peer: pl.HostAddr(plan.Host{Row: 1, Port: 1}), PeerQP: 0x601, Index: 5, Epoch: 2, T1Offset: 1, FirstSlot: 2}
	send, recv, err := qpentry.Entries(schema.NIC(f), f.T1Count, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(t.TempDir(), false, send, recv); err != nil {
		t.Fatal(err)
	}
	if err := model.WriteAll(nicmodel.Insert, send, recv); err != nil {
		t.Fatal(err)
	}
	if err := model.SetMaxTries(emit.PNAMaxTries); err != nil {
		t.Fatal(err)
	}
	// Every slot fails after K sends on its base EV and K on its backup;
	// then 2 x N passes over each give probes on packets passed over, and
	// the last of them are given up.
	k, n, set := f.Failover.UnansweredSends, f.Failover.ProbePasses, f.EV.SetSize
	packets := (2*k+1)*set + 4*n*set
	frames, compared, probes, lastTry, fromBackup, fromPassOver := 0, 0, 0, 0, 0, 0
	for i := range packets {
		data := hostData(t, f, pl.HostAddr(host), q, i, 5000)
		out := model.Process(0, data)
		// Whether the packet left on its last pass (not given up there).
		sentLast := false
		for _, w := range out {
			if m, err := mrcpkt.Parse(w.AppendTo(nil)); err == nil && m.BTH.Opcode != mrcpkt.OpProbe && w.Pass == emit.PNAMaxTries {
				sentLast = true
			}
		}
		var want []string
		var probeSalts []int
		dataSalts := map[int]bool{}
		for _, w := range out {
			wb := w.AppendTo(nil)
			if m, err := mrcpkt.Parse(wb); err == nil && m.Outer != nil {
				salt := int(m.Outer.FlowLabel) & (1<<f.EV.SaltBits - 1)
				if m.BTH.Opcode == mrcpkt.OpProbe {
					if w.Pass == emit.PNAMaxTries && !sentLast {
						lastTry++
						continue
					}
					probes++
					probeSalts = append(probeSalts, salt)
				} else {
					dataSalts[salt] = true
				}
			}
			want = append(want, fmt.Sprintf("port %d %x", w.Port, wb))
		}
		// A probe's packet left on the slot's backup EV (salt + set
		// size), or was passed over to another slot.
		for _, salt := range probeSalts {
			if dataSalts[salt+set] {
				fromBackup++
			} else {
				fromPassOver++
			}
		}
		// Paced: with host frames back to back (each sent once the
		// previous one's frames are out), DPDK 22.11's app now and then
		// makes no copy for one to four of the seven mirrors of a packet
		// passed over seven times (seen at frames 646-678 in 9 of 9 runs;
		// none with 20 ms between frames in 5 runs; 1 ms is not enough).
		// docs/protocol.md 8.2 says so; the cause is not found yet.
		time.Sleep(probePacing)
		if err := p.Send(0, data); err != nil {
			t.Fatal(err)
		}
		frames++
		got := recvSorted(p, len(want))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			stats, _ := p.Command("pipeline " + swx.PipelineName + " stats")
			stats, _, _ = strings.Cut(stats, "Tables:")
			t.Fatalf("frame %d in from the host %x:\n pipeline %q\n model    %q\n%s", i, data, got, want, stats)
		}
		compared += len(got)
	}
	if extra, ok := p.Recv(200 * time.Millisecond); ok {
		t.Fatalf("the pipeline sent a frame the model did not: port %d %x", extra.Port, extra.Data)
	}
	// A run of this length once took in 4 frames nobody here sent (CI,
	// other tests beside it): counted as such, from the app's port stats.
	foreign := foreignFrames(t, p, f, frames)
	if foreign > 0 {
		t.Logf("%d frames the test did not send reached the pipeline: expected as unknown packets", foreign)
	}
	checkCountersLess(t, p, f, model, uint64(lastTry), foreign)
	m := model.Counters()
	var backup uint64
	for _, c := range m.SlotBackupTx {
		backup += c
	}
	t.Logf("%d host data frames in, %d frames out byte-identical to the model's (%d probes: %d from a packet on the slot's backup EV, %d from one passed over; "+
		"%d data on backup EVs, %d passes over failed slots, %d given up); %d probes due on a last try not sent; counters equal",
		frames, compared, probes, fromBackup, fromPassOver, backup, m.Events[schema.NICEventFailedTaken], m.Events[schema.NICEventNoEV], lastTry)
	// The run went where it means to: probes made from a packet sent on
	// a backup EV and from one passed over, and last tries.
	if fromBackup == 0 || fromPassOver == 0 || lastTry == 0 {
		t.Errorf("the scenario missed a case: %d probes from a packet on a backup EV, %d from one passed over, %d on a last try", fromBackup, fromPassOver, lastTry)
	}
}

// TestFabricData: a peer's data frames for a multipath QP arrive on the
// plane ports in and out of order (holes filled, duplicates, beyond and
// behind the window, CE and ECT(1) marks, trimmed to TRIMMED and
// TRIMMED_LASTHOP) and go into the PNA program on the DPDK pipeline and
// into the NIC model: the frames out (deliveries, SACKs made on the
// loopback, NACKs) must be the model's, byte for byte, in any order, and
// the counters equal.
func TestFabricData(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	host := plan.Host{Row: 0, Port: 0}
	p, b, model := Start(t, f, host, fmt.Sprintf("f%d", os.Getpid()%100000))
	pl := b.Plan
	peerHost := plan.Host{Row: 1, Port: 1}
	const start = 0xfffff0 // the 24-bit wrap comes in the window
	q := qpentry.QP{Local: 0x301, Peer: pl.HostAddr(peerHost), PeerQP: 0x401, Index: 2, Epoch: 3, T1Offset: 1, FirstSlot: 0, StartPSN: start}
	send, recv, err := qpentry.Entries(schema.NIC(f), f.T1Count, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(t.TempDir(), false, send, recv); err != nil {
		t.Fatal(err)
	}
	if err := model.WriteAll(nicmodel.Insert, send, recv); err != nil {
		t.Fatal(err)
	}
	const (
		plain = iota
		ce
		ect1
		trimmed
		lastHop
	)
	type arrival struct {
		off  uint32 // PSN - start
		mark int
	}
	var arrivals []arrival
	for _, o := range []uint32{0, 1, 3, 2, 2, 5, 4, 7, 6, 6} { // holes, fills, a duplicate
		arrivals = append(arrivals, arrival{o, plain})
	}
	arrivals = append(arrivals,
		arrival{9, trimmed}, arrival{9, lastHop}, arrival{8, ce}, arrival{9, ect1},
		arrival{200, plain}, arrival{70, plain}, arrival{300, plain}, // far in the window, beyond it
		arrival{0x800000, plain}, arrival{1, plain}) // behind the window
	for o := uint32(10); o < 80; o++ { // in order across words and the wrap, two late
		if o != 20 && o != 45 {
			arrivals = append(arrivals, arrival{o, plain})
		}
	}
	arrivals = append(arrivals, arrival{45, plain}, arrival{20, plain})
	set := pl.EVSet()
	frames, compared := 0, 0
	for i, a := range arrivals {
		ev := pl.SplitEV(set[i%len(set)])
		ev.T1 = (ev.T1 + 1) % f.T1Count
		evv := uint32(pl.MakeEV(ev))
		outerECN := mrcpkt.ECNECT0
		switch a.mark {
		case ce:
			outerECN = mrcpkt.ECNCE
		case ect1:
			outerECN = mrcpkt.ECNECT1
		}
		pk := &mrcpkt.Packet{
			Ethernet: mrcpkt.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 3}, Src: [6]byte{2, 0, 0, 0, 0, 4}},
			Outer: &mrcpkt.IPv6{Src: q.Peer, Dst: pl.NICPortSID(ev.Plane, host), DSCP: uint8(f.DSCP.Trimmable), ECN: outerECN,
				FlowLabel: evv & 0xffff, HopLimit: mrcpkt.HopLimit - 3},
			Inner: mrcpkt.IPv6{Src: q.Peer, Dst: pl.HostAddr(host), DSCP: uint8(f.DSCP.Trimmable), ECN: mrcpkt.ECNECT0,
				HopLimit: mrcpkt.HopLimit, FlowLabel: uint32(i * 7919 & 0xfffff)},
			UDP:     mrcpkt.UDP{SrcPort: uint16(evv >> 16), DstPort: mrcpkt.PortRoCEv2},
			BTH:     mrcpkt.BTH{Opcode: mrcpkt.OpWriteMiddle, DstQP: q.Local, PSN: (start + a.off) & 0xffffff},
			METH:    &mrcpkt.METH{},
			RETH:    &mrcpkt.RETH{VAddr: uint64(i) << 12, RKey: 0x1234, DMALen: 100},
			Payload: bytes.Repeat([]byte{byte(i)}, 100),
		}
		data := serialize(t, pk)
		if a.mark == trimmed || a.mark == lastHop {
			// cut as a switch does (docs/protocol.md 6.3)
			dscp := uint8(f.DSCP.Trimmed)
			if a.mark == lastHop {
				dscp = uint8(f.DSCP.TrimmedLastHop)
			}
			data = mrcpkt.Trim(data, f.Trim.SizeBytes, dscp)
		}
		port := uint32(ev.Plane + 1)
		var want []string
		for _, w := range model.Process(port, data) {
			want = append(want, fmt.Sprintf("port %d %x", w.Port, w.AppendTo(nil)))
		}
		if err := p.Send(port, data); err != nil {
			t.Fatal(err)
		}
		frames++
		got := recvSorted(p, len(want))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			stats, _ := p.Command("pipeline " + swx.PipelineName + " stats")
			t.Fatalf("frame %d (PSN start+%#x, mark %d) in on port %d %x:\n pipeline %q\n model    %q\n%s", i, a.off, a.mark, port, data, got, want, stats)
		}
		compared += len(got)
	}
	if extra, ok := p.Recv(200 * time.Millisecond); ok {
		t.Fatalf("the pipeline sent a frame the model did not: port %d %x", extra.Port, extra.Data)
	}
	checkCounters(t, p, f, model)
	m := model.Counters()
	t.Logf("%d data frames from the fabric in, %d frames out byte-identical to the model's (%d delivered, %d SACKs, %d NACKs); counters equal",
		frames, compared, m.Events[schema.NICEventDataDelivered], m.Events[schema.NICEventAckSent], m.Events[schema.NICEventTrimmedRx])
}

// foreignFrames is how many frames the pipeline's ports but the loopback
// took in beyond the sent ones the test sent, by the app's port stats.
func foreignFrames(t *testing.T, p *swx.Pipeline, f *fabric.Fabric, sent int) uint64 {
	t.Helper()
	stats, err := p.Command("pipeline " + swx.PipelineName + " stats")
	if err != nil {
		t.Fatal(err)
	}
	in, _, _ := strings.Cut(stats, "Output ports:")
	var total uint64
	for _, line := range strings.Split(in, "\n") {
		var port int
		var n uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "Port %d: packets %d", &port, &n); err == nil && port != emit.PNALoopPort(f) {
			total += n
		}
	}
	if total < uint64(sent) {
		t.Fatalf("the pipeline took in %d frames on its ports, fewer than the %d sent", total, sent)
	}
	return total - uint64(sent)
}

// hostData is the i-th data frame a host at addr sends on QP q: an RDMA
// Write middle of 64 bytes with PSN first + i, its flow label, UDP source
// port, address and payload varying with i.
func hostData(t *testing.T, f *fabric.Fabric, addr netip.Addr, q qpentry.QP, i int, first uint32) []byte {
	t.Helper()
	return serialize(t, &mrcpkt.Packet{
		Ethernet: mrcpkt.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		Inner: mrcpkt.IPv6{Src: addr, Dst: q.Peer, DSCP: uint8(f.DSCP.Trimmable), ECN: mrcpkt.ECNECT0,
			HopLimit: mrcpkt.HopLimit, FlowLabel: uint32(i * 7919 & 0xfffff)},
		UDP:     mrcpkt.UDP{SrcPort: uint16(i), DstPort: mrcpkt.PortRoCEv2},
		BTH:     mrcpkt.BTH{Opcode: mrcpkt.OpWriteMiddle, DstQP: q.PeerQP, PSN: first + uint32(i)},
		METH:    &mrcpkt.METH{},
		RETH:    &mrcpkt.RETH{VAddr: uint64(i) << 12, RKey: 0x1234, DMALen: 64},
		Payload: bytes.Repeat([]byte{byte(i)}, 64),
	})
}

// recvSorted waits for up to n frames out of the pipeline (5 s for each)
// and returns them as "port P HEX", sorted: the frames one input makes,
// in any order.
func recvSorted(p *swx.Pipeline, n int) []string {
	var got []string
	for len(got) < n {
		fr, ok := p.Recv(5 * time.Second)
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("port %d %x", fr.Port, fr.Data))
	}
	slices.Sort(got)
	return got
}

func checkCounters(t *testing.T, p *swx.Pipeline, f *fabric.Fabric, model *nicmodel.NIC) {
	t.Helper()
	checkCountersLess(t, p, f, model, 0, 0)
}

// checkCountersLess is checkCounters with the pipeline's probes_sent
// expected lastTry fewer than the model's: probes due on a packet's last
// try, which the PNA program does not send (docs/protocol.md 8.2), and
// unknown_packet foreign more: frames the pipeline's ports took in that
// the test did not send (foreignFrames).
func checkCountersLess(t *testing.T, p *swx.Pipeline, f *fabric.Fabric, model *nicmodel.NIC, lastTry, foreign uint64) {
	t.Helper()
	m := model.Counters()
	m.Events[schema.NICEventProbeSent] -= lastTry
	m.Events[schema.NICEventUnknownPacket] += foreign
	want := map[string][2][]uint64{
		schema.NICEventCounter: {m.Events[:], nil},
		schema.NICPlaneTx:      {m.PlaneTx[:], m.PlaneTxBytes[:]},
		schema.NICSlotTx:       {m.SlotTx, nil},
		schema.NICSlotBackupTx: {m.SlotBackupTx, nil},
		schema.NICSlotFailed:   {m.SlotFailed, nil},
	}
	for _, c := range schema.NIC(f).Counters {
		packets, bytes, err := p.Counter(c)
		if err != nil {
			t.Fatal(err)
		}
		w := want[c.FullName()]
		if fmt.Sprint(packets) != fmt.Sprint(w[0]) || (w[1] != nil && fmt.Sprint(bytes) != fmt.Sprint(w[1])) {
			t.Errorf("counter %s: pipeline %v %v, model %v %v", c.FullName(), packets, bytes, w[0], w[1])
		}
	}
}

// TestQuietPorts: with nothing sent, nothing reaches the pipeline (the
// kernel sends nothing of its own on the veths), on the seven ports the
// differential test uses on tiny (the loopback among them): every event a
// test counts is its own.
func TestQuietPorts(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := Start(t, f, plan.Host{Row: 0, Port: 0}, fmt.Sprintf("q%d", os.Getpid()%100000), 5+f.Planes)
	time.Sleep(3 * time.Second)
	stats, err := p.Command("pipeline " + swx.PipelineName + " stats")
	if err != nil {
		t.Fatal(err)
	}
	in, _, _ := strings.Cut(stats, "Output ports:")
	for _, line := range strings.Split(in, "\n") {
		if strings.Contains(line, "packets") && !strings.Contains(line, "packets 0 ") {
			t.Errorf("frames reached an idle pipeline: %s", strings.TrimSpace(line))
		}
	}
	if fr, ok := p.Recv(0); ok {
		t.Errorf("an idle pipeline sent a frame: port %d %x", fr.Port, fr.Data)
	}
}

// serialize gives the bytes of a packet built by hand.
func serialize(t *testing.T, pk *mrcpkt.Packet) []byte {
	t.Helper()
	if err := pk.FixLengths(); err != nil {
		t.Fatal(err)
	}
	data, err := mrcpkt.Serialize(pk)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
