// Package bmv2tests runs the tiny fabric on BMv2 switches and checks what
// the MRC profile promises: spray, trim, failover, and that packets take the
// paths verify predicts. Without simple_switch_grpc and p4c-bm2-ss the tests
// skip, naming what is missing; with MRCGEN_REQUIRE_BMV2=1 that is a
// failure.
package bmv2tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// The lab is shared by the tests of this package: starting it costs
// seconds. Each test leaves it as it found it (t.Cleanup).
var shared struct {
	lab  *lab.Lab
	skip string
	err  error
}

// labIDPrefix starts the id of every lab this test binary starts (the value
// of their processes' environment marker): the leftover check looks for its
// own processes only, not for those of a lab a user runs alongside.
var labIDPrefix = fmt.Sprintf("bmv2-tests-%d-%d-", os.Getpid(), time.Now().UnixNano())

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tools, missing := bmv2.FindTools()
	if len(missing) > 0 {
		shared.skip = fmt.Sprintf("BMv2 lab tests need %s on PATH or in /opt/p4/bin (see README: Getting BMv2 and p4c)", strings.Join(missing, " and "))
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "mrcgen-bmv2-")
	if err != nil {
		shared.err = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	shared.lab, shared.err = startTiny(ctx, dir, tools)
	cancel()
	if shared.lab != nil {
		for _, c := range shared.lab.Crashes {
			fmt.Fprintf(os.Stderr, "lab start-up: a switch died and the lab was started again: %s\n", c)
		}
	}
	code := m.Run()
	if shared.lab != nil {
		if err := shared.lab.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "lab close: %v\n", err)
			code = 1
		}
	}
	if left := lab.Leftovers(labIDPrefix); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "BMv2 processes left running after the tests: %v\n", left)
		code = 1
	}
	if shared.err != nil && code == 0 {
		// Tests already failed on it; keep the logs' place in the output.
		fmt.Fprintf(os.Stderr, "lab logs were in %s\n", dir)
	}
	return code
}

func startTiny(ctx context.Context, dir string, tools bmv2.Tools) (*lab.Lab, error) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		return nil, err
	}
	buildDir := filepath.Join(dir, "build")
	if _, err := artifacts.Write(ctx, f, buildDir, artifacts.Options{}); err != nil {
		return nil, err
	}
	if _, err := artifacts.Compile(ctx, buildDir, tools.P4C); err != nil {
		return nil, fmt.Errorf("%+v", err)
	}
	b, err := artifacts.Open(buildDir)
	if err != nil {
		return nil, err
	}
	return lab.Up(ctx, b, lab.Options{Dir: filepath.Join(dir, "lab"), Tools: tools, KeepTrace: true, CaptureHostFrames: true, ID: labIDPrefix + "tiny",
		Verbose: os.Getenv("MRCGEN_BMV2_VERBOSE") == "1"})
}

// needLab returns the shared lab, or skips (tools missing) or fails.
func needLab(t testing.TB) *lab.Lab {
	t.Helper()
	if shared.skip != "" {
		if os.Getenv(bmv2.EnvRequire) == "1" {
			t.Fatalf("%s=1 but: %s", bmv2.EnvRequire, shared.skip)
		}
		t.Skip("skipping: " + shared.skip)
	}
	if shared.err != nil {
		t.Fatalf("lab did not start: %v", shared.err)
	}
	l := shared.lab
	l.ResetCaptures()
	// A test reads the host frames the lab captured; the capture keeps the
	// first lab.DefaultHostFramesLimit per NIC. A test that reads them must
	// not hand a NIC more (a benchmark reads through an attached host).
	if _, isTest := t.(*testing.T); isTest {
		t.Cleanup(func() {
			for name, d := range l.Devices {
				if d.Role != plan.RoleNIC.String() {
					continue
				}
				if n := l.HostFramesDropped(name); n > 0 {
					t.Errorf("%s: %d host frames past the capture's limit (%d) were not kept: what the test read of them is incomplete", name, n, lab.DefaultHostFramesLimit)
				}
			}
		})
	}
	return l
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// control opens a P4Runtime session with a lab device for the test.
func control(t testing.TB, l *lab.Lab, device string) *lab.Control {
	t.Helper()
	c, err := l.Control(ctxFor(t, 20*time.Second), device)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openQPs opens the flow's QP on both NICs (what the hosts' RDMA stacks
// would do) and closes it when the test ends: on the source NIC the QP
// fl.srcQP talks to fl.qp at the destination, which talks back. Its state
// index on both, and the epoch, come from the lab (AcquireQP), as a
// transfer's do: every use of an index gets a new epoch, so a test run
// again in the same lab (-count=2) starts from fresh registers, and no two
// QPs open at once share an index.
func openQPs(t testing.TB, src, dst *lab.Control, fl *flow, t1Offset int) {
	t.Helper()
	index, epoch, err := fl.l.AcquireQP()
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the closes, so it runs after them; an index whose
	// QP could not be closed stays taken.
	closed := true
	t.Cleanup(func() {
		if closed {
			fl.l.ReleaseQP(index)
		}
	})
	p := fl.l.Build.Plan
	qps := []struct {
		c  *lab.Control
		qp lab.QP
	}{
		{src, lab.QP{Local: fl.srcQP, Peer: p.HostAddr(fl.to), PeerQP: fl.qp, Index: index, Epoch: epoch,
			T1Offset: t1Offset, StartPSN: fl.startPSN, SinglePath: fl.singlePath}},
		{dst, lab.QP{Local: fl.qp, Peer: p.HostAddr(fl.from), PeerQP: fl.srcQP, Index: index, Epoch: epoch,
			T1Offset: t1Offset, StartPSN: fl.startPSN, SinglePath: fl.singlePath}},
	}
	for _, q := range qps {
		if err := q.c.OpenQP(ctxFor(t, 10*time.Second), q.qp); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := q.c.CloseQP(context.Background(), q.qp); err != nil {
				closed = false
				t.Errorf("close QP: %v", err)
			}
		})
	}
}

type flow struct {
	l        *lab.Lab
	from, to plan.Host
	src, dst string // NIC names
	// qp is the destination's QPN (the BTH destination QP of the data),
	// srcQP the source's (that of the answers).
	qp, srcQP uint32
	// startPSN is the first PSN the destination expects; singlePath opens
	// the QP as the RoCEv2 baseline does (one EV).
	startPSN   uint32
	singlePath bool
	payload    int
	// dscp and ecn are the inner traffic class of the data: TRIMMABLE and
	// ECT(0), as hosts send data.
	dscp, ecn uint8
}

func newFlow(l *lab.Lab, from, to plan.Host, qp uint32) *flow {
	p := l.Build.Plan
	return &flow{l: l, from: from, to: to, src: p.HostName(from), dst: p.HostName(to), qp: qp, srcQP: qp | 0x800000, payload: 256,
		dscp: uint8(p.F.DSCP.Trimmable), ecn: mrcpkt.ECNECT0}
}

// frame is the data packet with the given PSN, as the host hands it over.
func (f *flow) frame(psn uint32) []byte {
	return f.frameWith(psn, f.dscp, f.ecn)
}

// frameWith is frame with another inner DSCP and ECN.
func (f *flow) frameWith(psn uint32, dscp, ecn uint8) []byte {
	p := f.l.Build.Plan
	payload := make([]byte, f.payload)
	for i := range payload {
		payload[i] = byte(int(psn) + i)
	}
	data, err := mrcpkt.DataPacket(mrcpkt.DataOptions{
		Src: p.HostAddr(f.from), Dst: p.HostAddr(f.to), DSCP: dscp, ECN: ecn,
		SrcPort: 0xbeef,
		BTH:     mrcpkt.BTH{Opcode: mrcpkt.OpWriteOnly, DstQP: f.qp, PSN: psn, AckReq: true},
		RETH:    mrcpkt.RETH{VAddr: uint64(psn) * uint64(f.payload), RKey: 0x1234, DMALen: uint32(f.payload)},
		Payload: payload,
	})
	if err != nil {
		panic(err)
	}
	return data
}

// send hands the frames of PSNs [first, first+n) to the source NIC, at
// most window ahead of what the destination host has received.
func (f *flow) send(t *testing.T, first, n uint32, window int, delivered func() int) {
	t.Helper()
	for i := uint32(0); i < n; i++ {
		if window > 0 {
			// Woken by each frame a host receives, not by a timer.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for seen := f.l.HostDeliveries(); int(i)-delivered() >= window; {
				var err error
				if seen, err = f.l.WaitHostDeliveries(ctx, seen); err != nil {
					t.Fatalf("%s -> %s: stalled: %d sent, %d delivered", f.src, f.dst, i, delivered())
				}
			}
			cancel()
		}
		if err := f.l.SendFromHost(f.src, f.frame(first+i)); err != nil {
			t.Fatal(err)
		}
	}
}

// parsed is a frame a host received, decoded.
type parsed struct {
	lab.Frame
	pkt *mrcpkt.Packet
}

// only keeps the frames whose BTH opcode passes keep.
func only(frames []parsed, keep func(op uint8) bool) []parsed {
	var out []parsed
	for _, f := range frames {
		if keep(f.pkt.BTH.Opcode) {
			out = append(out, f)
		}
	}
	return out
}

func isNACK(op uint8) bool { return op == mrcpkt.OpNACK }
func isSACK(op uint8) bool { return op == mrcpkt.OpSACK }

func parseAll(t *testing.T, frames []lab.Frame) []parsed {
	t.Helper()
	out := make([]parsed, 0, len(frames))
	for _, fr := range frames {
		p, err := mrcpkt.Parse(fr.Data)
		if err != nil {
			t.Errorf("%s port %d: frame %x: %v", fr.Device, fr.Port, fr.Data, err)
			continue
		}
		out = append(out, parsed{fr, p})
	}
	return out
}

// checkSACK checks what every SACK must say of the data packet it answers
// (its BTH PSN): base = cumulative + 1, bit 0 (the first missing PSN) clear,
// and the packet itself covered, either at or below the cumulative PSN or
// in the bitmap's window. It returns the distance of the PSN above the
// cumulative one (0 when covered by it).
func checkSACK(t testing.TB, s parsed) int {
	t.Helper()
	se := s.pkt.SETH
	if se == nil {
		t.Errorf("SACK without SETH: %+v", s.pkt)
		return -1
	}
	psn := s.pkt.BTH.PSN
	// docs/protocol.md 6.5: the base is e = cumulative + 1, bit 0 clear;
	// for a packet 64 or more beyond e, psn - 63, so that bit 63 covers it.
	e := (se.CumPSN + 1) & 0xffffff
	wantBase := e
	if d := (psn - e) & 0xffffff; d < 1<<23 && d >= 64 {
		wantBase = (psn - 63) & 0xffffff
	}
	if se.BasePSN != wantBase || (wantBase == e && se.Bitmap&1 != 0) {
		t.Errorf("SACK for PSN %d: cum %d, base %d, bitmap %#x: want base %d (bit 0 clear when it is cum + 1)", psn, se.CumPSN, se.BasePSN, se.Bitmap, wantBase)
	}
	above := int((psn - se.CumPSN) & 0xffffff)
	switch {
	case above >= 1<<23: // at or below the cumulative PSN
		return 0
	case above == 0:
		return 0
	}
	if i := (psn - se.BasePSN) & 0xffffff; i < 64 && se.Bitmap>>i&1 == 1 {
		return above
	}
	t.Errorf("SACK for PSN %d does not cover it: cum %d, base %d, bitmap %#x", psn, se.CumPSN, se.BasePSN, se.Bitmap)
	return -1
}
