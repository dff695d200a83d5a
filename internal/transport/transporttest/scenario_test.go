package transporttest

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

const (
	remoteBase = 0x7f00_0000_0000
	remoteKey  = 0x00C0FFEE
)

// scenario is one fabric condition, applied the same way to both modes. All
// of them hit path 0: the only path of a single-path (RoCE) QP, and the base
// path of EV slot 0 for MRC.
type scenario struct {
	name  string
	size  int
	cfg   Config // the fabric, Seed aside
	apply func(s *Sim, a *Host, packets int64)
}

// throttlePPS is the rate of the "trimming" scenario's throttled path.
const throttlePPS = 5_000

var scenarios = []scenario{
	{"clean", 1 << 20, Config{}, func(*Sim, *Host, int64) {}},
	// A window of 64 spread over 8 paths puts about 8 packets in the
	// throttled path's queue: trimming needs a threshold below that.
	{"trimming", 1 << 20, Config{TrimAt: 4, ECNAt: 2}, func(s *Sim, _ *Host, _ int64) { s.Throttle(0, throttlePPS) }},
	{"cut at 30%", 1 << 20, Config{}, func(s *Sim, a *Host, n int64) {
		s.AfterSent(a, n*3/10, func() { s.SetLink(0, false) })
	}},
	{"flap", 1 << 20, Config{}, func(s *Sim, a *Host, n int64) {
		s.AfterSent(a, n*2/10, func() { s.SetLink(0, false) })
		s.AfterSent(a, n*4/10, func() { s.SetLink(0, true) })
		s.AfterSent(a, n*6/10, func() { s.SetLink(0, false) })
	}},
	{"1% loss", 4 << 20, Config{}, func(s *Sim, _ *Host, _ int64) { s.SetLoss(0, 0.01) }},
}

// limit is how long (virtual) a write may take before it counts as not
// completed: 1 MiB takes about 11 ms clean in MRC and 21 ms in RoCE.
const limit = 2 * time.Second

type outcome struct {
	mode     transport.Mode
	stats    transport.Stats
	recv     []transport.Received
	rc       transport.RecvCounters
	c        Counters
	match    bool // receiver memory sha256 == sender buffer sha256
	elapsed  time.Duration
	complete bool
	trace    uint64
}

func payload(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// run runs sc with the mode's default congestion control.
func run(t *testing.T, mode transport.Mode, sc scenario, seed uint64) outcome {
	t.Helper()
	return runCC(t, mode, transport.CCDefault, sc, seed)
}

// lineRate is the simulated NIC port's rate in bits per second of the
// frames an engine hands it (HostPPS frames of headers and a full
// segment): DCQCN's line rate.
func lineRate(cfg Config) float64 {
	cfg.fill()
	hdr := mrcpkt.EthernetLen + mrcpkt.IPv6Len + mrcpkt.UDPLen + mrcpkt.BTHLen + mrcpkt.METHLen + mrcpkt.RETHLen
	return cfg.HostPPS * 8 * float64(hdr+transport.DefaultSegment)
}

// runCC runs sc with congestion control cc.
func runCC(t *testing.T, mode transport.Mode, cc transport.CongestionControl, sc scenario, seed uint64) outcome {
	t.Helper()
	cfg := sc.cfg
	cfg.Seed = seed
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.Hosts()
	qps, err := s.Open(a, 0x11, 0x22, 0xFFFFF0, transport.QPConfig{Mode: mode, CongestionControl: cc, LineRate: lineRate(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, sc.size)
	if _, err := b.Engine.RegisterMR(remoteBase, remoteKey, mem); err != nil {
		t.Fatal(err)
	}
	data := payload(seed, sc.size)
	n := int64((sc.size + transport.DefaultSegment - 1) / transport.DefaultSegment)
	sc.apply(s, a, n)
	tr, err := qps.A.Write(transport.WriteRequest{Data: data, RemoteVAddr: remoteBase, RKey: remoteKey})
	if err != nil {
		t.Fatal(err)
	}
	a.Kick()
	done := func() bool {
		select {
		case <-tr.Done():
			return len(qps.B.Received()) > 0
		default:
			return false
		}
	}
	complete := s.Run(limit, done)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return outcome{
		mode: mode, stats: tr.Stats(), recv: qps.B.Received(), rc: qps.B.RecvCounters(), c: s.Counters(),
		match: sha256.Sum256(mem) == sha256.Sum256(data), elapsed: s.Clock().Elapsed(), complete: complete,
		trace: s.Trace(),
	}
}

// slack is what MRC may resend beyond trims and losses: spurious resends
// when a SACK-gap or timeout decision races a copy still on its way (a
// packet sent on a path just before it is cut and later found lost is
// counted once as lost; the SACK-gap rule may already have resent
// packets that were merely late behind a failing slot).
const slack = 8

// TestMRC runs every scenario with and without congestion control: loss
// recovery must do the same with either.
func TestMRC(t *testing.T) {
	for _, cc := range []transport.CongestionControl{transport.CCOff, transport.DCTCP} {
		t.Run(cc.String(), func(t *testing.T) { testMRC(t, cc) })
	}
}

func testMRC(t *testing.T, cc transport.CongestionControl) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			o := runCC(t, transport.MRC, cc, sc, 1)
			st, c := o.stats, o.c
			t.Logf("%s: %v, sent %d for %d packets, retx %+v, trims %d, lost %d (cut %d random %d overflow %d), "+
				"failed %d backup %d probes %d revived %d, dups %d, SACKs %d NACKs %d, congestion %+v",
				sc.name, st.Duration(), st.PacketsSent, st.Packets, st.Retransmits, c.Trims(), c.DataLost(),
				c.LostCut, c.LostRandom, c.LostOverflow, c.PathFailed, c.BackupTaken, c.ProbesSent, c.Revived,
				st.Duplicates, st.SACKs, st.NACKs, st.Congestion)
			if !o.complete || !st.Complete || len(o.recv) != 1 {
				t.Fatalf("not complete within %v: sender %v, receiver %d writes", limit, st.Complete, len(o.recv))
			}
			if !o.match {
				t.Fatal("receiver memory sha256 differs from the sender's buffer")
			}
			if r := o.recv[0]; r.Length != int64(sc.size) || r.VAddr != remoteBase {
				t.Errorf("received %+v", r)
			}
			retx := st.Retransmits.Total()
			if max := c.Trims() + c.DataLost() + slack; retx > max {
				t.Errorf("%d retransmissions, more than trims %d + losses %d + slack %d", retx, c.Trims(), c.DataLost(), slack)
			}
			if st.PacketsSent != st.Packets+retx {
				t.Errorf("sent %d = %d + %d retransmissions?", st.PacketsSent, st.Packets, retx)
			}
			switch sc.name {
			case "clean":
				if retx != 0 || c.Trims() != 0 || c.DataLost() != 0 {
					t.Errorf("clean fabric: %d retransmissions, %d trims, %d lost", retx, c.Trims(), c.DataLost())
				}
				// Host-port bound: 100k packets/s.
				if pps := st.GoodputPackets(); pps < 90_000 {
					t.Errorf("goodput %.0f packets/s, want >= 90%% of the 100k port rate", pps)
				}
			case "trimming":
				if c.Trims() < 10 || st.Retransmits.TrimNACK < c.Trims()-slack {
					t.Errorf("%d trims, %d trim-NACK resends: want trims, each resent", c.Trims(), st.Retransmits.TrimNACK)
				}
				if c.DataLost() != 0 {
					t.Errorf("%d data packets lost: trimming should lose none", c.DataLost())
				}
			case "cut at 30%":
				if c.PathFailed < 1 || c.BackupTaken == 0 {
					t.Errorf("the NIC never retired slot 0: failed %d backup packets %d", c.PathFailed, c.BackupTaken)
				}
				if c.LostCut == 0 || c.LostCut > 16 {
					t.Errorf("%d packets lost on the cut path; detection after K=4 unanswered sends should lose a few", c.LostCut)
				}
			case "flap":
				if c.Revived < 1 || c.PathFailed < 2 {
					t.Errorf("flap: %d slot failures, %d revivals; want a failure, a probe revival, a second failure", c.PathFailed, c.Revived)
				}
			case "1% loss":
				if c.LostRandom == 0 {
					t.Error("no random loss happened: the scenario tests nothing")
				}
			}
		})
	}
}

// TestRoCE runs every scenario with and without DCQCN: with it, RoCE
// completes what it completed without.
func TestRoCE(t *testing.T) {
	for _, cc := range []transport.CongestionControl{transport.CCOff, transport.DCQCN} {
		t.Run(cc.String(), func(t *testing.T) { testRoCE(t, cc) })
	}
}

func testRoCE(t *testing.T, cc transport.CongestionControl) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			o := runCC(t, transport.RoCE, cc, sc, 1)
			st, c := o.stats, o.c
			t.Logf("%s: complete %v in %v, sent %d for %d packets, retx %+v in %d go-back-N, trims %d, lost %d, congestion %+v",
				sc.name, o.complete, st.Duration(), st.PacketsSent, st.Packets, st.Retransmits, st.GoBackNs, c.Trims(), c.DataLost(), st.Congestion)
			if c.Trims() != 0 || c.BackupTaken != 0 || c.ProbesSent != 0 {
				t.Errorf("single-path NO_TRIM QP: %d trims, %d backup packets, %d probes", c.Trims(), c.BackupTaken, c.ProbesSent)
			}
			if o.complete && !o.match {
				t.Fatal("complete, but receiver memory sha256 differs from the sender's buffer")
			}
			retx := st.Retransmits.Total()
			switch sc.name {
			case "clean":
				if !o.complete || retx != 0 {
					t.Errorf("clean: complete %v with %d retransmissions", o.complete, retx)
				}
			case "cut at 30%", "flap":
				// The only path is dead at the end: no routing change
				// brings another.
				if o.complete {
					t.Errorf("completed in %v with its only path cut", st.Duration())
				}
				if st.Retransmits.Timeout == 0 {
					t.Error("no timeout fired on a dead path")
				}
			case "trimming", "1% loss":
				if !o.complete {
					t.Fatalf("not complete within %v", limit)
				}
				// The throttled path marks: DCQCN takes CNPs and cuts.
				if cg := st.Congestion; cc == transport.DCQCN && sc.name == "trimming" && (cg.CNPs == 0 || cg.MinRate >= lineRate(sc.cfg)) {
					t.Errorf("DCQCN took %d CNPs, lowest rate %g: no reaction to the marks", cg.CNPs, cg.MinRate)
				}
				if c.DataLost() == 0 || st.GoBackNs == 0 {
					t.Fatalf("%d lost, %d go-back-N: the scenario tests nothing", c.DataLost(), st.GoBackNs)
				}
				// Whole windows: each go-back-N resends many packets, and
				// in all far more than were lost.
				if per := float64(retx) / float64(st.GoBackNs); per < 10 {
					t.Errorf("%.1f packets per go-back-N, want whole windows (>= 10)", per)
				}
				// More resent than lost, and some resent copies reached a
				// receiver that already had them.
				if retx <= c.DataLost() || c.Duplicates == 0 {
					t.Errorf("%d retransmissions for %d losses, %d duplicates at the receiving NIC: go-back-N should resend more than was lost",
						retx, c.DataLost(), c.Duplicates)
				}
			}
		})
	}
}

// Two writes at once in opposite directions, on two QP pairs, with a
// throttled path trimming both.
func TestMRCOppositeDirections(t *testing.T) {
	s, err := New(Config{Seed: 7, TrimAt: 4, ECNAt: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.Hosts()
	s.Throttle(3, 5_000)
	ab, err := s.Open(a, 0x100, 0x200, 0x10, transport.QPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ba, err := s.Open(b, 0x300, 0x400, 0xFFFFFA, transport.QPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	memB, memA := make([]byte, size), make([]byte, size)
	if _, err := b.Engine.RegisterMR(remoteBase, 1, memB); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Engine.RegisterMR(remoteBase, 2, memA); err != nil {
		t.Fatal(err)
	}
	dataAB, dataBA := payload(1, size), payload(2, size)
	t1, err := ab.A.Write(transport.WriteRequest{Data: dataAB, RemoteVAddr: remoteBase, RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := ba.A.Write(transport.WriteRequest{Data: dataBA, RemoteVAddr: remoteBase, RKey: 2})
	if err != nil {
		t.Fatal(err)
	}
	a.Kick()
	b.Kick()
	ok := s.Run(limit, func() bool {
		return len(ab.B.Received()) == 1 && len(ba.B.Received()) == 1 && t1.Stats().Complete && t2.Stats().Complete
	})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	c := s.Counters()
	s1, s2 := t1.Stats(), t2.Stats()
	t.Logf("A->B %v retx %+v; B->A %v retx %+v; trims %d lost %d", s1.Duration(), s1.Retransmits, s2.Duration(), s2.Retransmits, c.Trims(), c.DataLost())
	if !ok {
		t.Fatal("the two writes did not both complete")
	}
	if sha256.Sum256(memB) != sha256.Sum256(dataAB) || sha256.Sum256(memA) != sha256.Sum256(dataBA) {
		t.Fatal("receiver memory differs from a sender's buffer")
	}
	if c.Trims() == 0 {
		t.Error("no trims: the throttled path was not exercised")
	}
	if r := s1.Retransmits.Total() + s2.Retransmits.Total(); r > c.Trims()+c.DataLost()+slack {
		t.Errorf("%d retransmissions, trims %d + losses %d + slack %d", r, c.Trims(), c.DataLost(), slack)
	}
}

// Same seed, same run, to the packet; another seed, another run.
func TestDeterministic(t *testing.T) {
	sc := scenarios[4] // 1% loss: uses the random source
	x, y, z := run(t, transport.MRC, sc, 5), run(t, transport.MRC, sc, 5), run(t, transport.MRC, sc, 6)
	if x.stats != y.stats || x.c != y.c || x.elapsed != y.elapsed || x.trace != y.trace {
		t.Errorf("two runs of seed 5 differ:\n%+v %+v\n%+v %+v", x.stats, x.c, y.stats, y.c)
	}
	if x.c.LostRandom == 0 || x.trace == z.trace {
		t.Errorf("seeds 5 and 6 lost the same packets at the same times (%d losses): the seed is not used", x.c.LostRandom)
	}
}

// TestCompare runs every scenario in both modes, each with its default
// congestion control (DCTCP, DCQCN), as deployed, prints the MRC / RoCE
// table (go test -run Compare -v) and asserts what the table is there to
// show. The claims are the protocols' own, not counts of this simulator:
//
//   - MRC completes every scenario, the receiver's memory equal to the
//     sender's buffer; RoCE's memory is equal too whenever it completes.
//   - Spraying costs nothing: whenever both complete, MRC takes at most 10%
//     longer than RoCE (on a clean fabric both are bound by the host port).
//   - trimming: RoCE's only path is throttled, so it cannot complete in
//     less than (packets-1) / throttlePPS; MRC sprays over every path,
//     skips the trimming one, and completes in less.
//   - cut at 30%, flap: RoCE's only path is dead at the end, so it cannot
//     complete; MRC moves off the dead path and does.
//   - 1% loss: every RoCE packet crosses the lossy path, only MRC's share
//     of its paths (one in eight), and RoCE goes back N where MRC resends
//     the lost packet alone: MRC resends fewer packets and completes sooner.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("reruns every scenario in both modes")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %-5s %-10s %12s %8s %8s %8s\n", "scenario", "mode", "completed", "time", "retx", "trims", "lost")
	row := func(sc scenario, o outcome) {
		tm := "-"
		if o.complete {
			tm = o.stats.Duration().Round(10 * time.Microsecond).String()
		}
		done := fmt.Sprintf("%v", o.complete && o.match)
		if !o.complete {
			done = "no (" + limit.String() + ")"
		}
		fmt.Fprintf(&b, "%-12s %-5s %-10s %12s %8d %8d %8d\n", sc.name, o.mode, done, tm,
			o.stats.Retransmits.Total(), o.c.Trims(), o.c.DataLost())
	}
	for _, sc := range scenarios {
		mrc, roce := run(t, transport.MRC, sc, 1), run(t, transport.RoCE, sc, 1)
		row(sc, mrc)
		row(sc, roce)
		t.Run(sc.name, func(t *testing.T) {
			mt, rt := mrc.stats.Duration(), roce.stats.Duration()
			mr, rr := mrc.stats.Retransmits.Total(), roce.stats.Retransmits.Total()
			if !mrc.complete || !mrc.match {
				t.Fatalf("MRC: complete %v, memory equal %v: MRC completes every scenario", mrc.complete, mrc.match)
			}
			if roce.complete && !roce.match {
				t.Error("RoCE completed with the receiver's memory unequal to the sender's buffer")
			}
			if roce.complete && mt > rt*11/10 {
				t.Errorf("MRC took %v, RoCE %v: spraying should cost no more than 10%%", mt, rt)
			}
			switch sc.name {
			case "trimming":
				// The throttled path serves one packet per 1/throttlePPS:
				// the last of n leaves it no sooner than (n-1)/throttlePPS
				// after the first.
				floor := time.Duration(float64(roce.stats.Packets-1) / throttlePPS * float64(time.Second))
				if roce.complete && rt < floor {
					t.Errorf("RoCE took %v, less than %d packets take at %d/s on its only path: the scenario tests nothing",
						rt, roce.stats.Packets, throttlePPS)
				}
				if mt >= floor {
					t.Errorf("MRC took %v, no less than RoCE's single throttled path needs (%v)", mt, floor)
				}
			case "cut at 30%", "flap":
				if roce.complete {
					t.Errorf("RoCE completed in %v with its only path cut", rt)
				}
			case "1% loss":
				if !roce.complete {
					break // MRC did: better still
				}
				if mr >= rr {
					t.Errorf("MRC resent %d packets, RoCE %d: selective resends should be fewer than go-back-N", mr, rr)
				}
				if mt >= rt {
					t.Errorf("MRC took %v, RoCE %v: MRC should complete sooner", mt, rt)
				}
			}
		})
	}
	t.Log(b.String())
}

// TestVirtualPayload: a write whose content is not carried (headers only,
// lengths counting the payload, a virtual memory region) runs exactly as
// the same write with its bytes: same time, same resends, same losses, and
// the receiver completes it with its whole length.
func TestVirtualPayload(t *testing.T) {
	for _, sc := range []scenario{scenarios[0], scenarios[2]} {
		real := run(t, transport.MRC, sc, 3)
		cfg := sc.cfg
		cfg.Seed, cfg.VirtualPayload = 3, true
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, b := s.Hosts()
		qps, err := s.Open(a, 0x11, 0x22, 0xFFFFF0, transport.QPConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Engine.RegisterVirtualMR(remoteBase, remoteKey, uint64(sc.size)); err != nil {
			t.Fatal(err)
		}
		n := int64((sc.size + transport.DefaultSegment - 1) / transport.DefaultSegment)
		sc.apply(s, a, n)
		tr, err := qps.A.Write(transport.WriteRequest{Length: sc.size, RemoteVAddr: remoteBase, RKey: remoteKey})
		if err != nil {
			t.Fatal(err)
		}
		a.Kick()
		ok := s.Run(limit, func() bool { return tr.Stats().Complete && len(qps.B.Received()) == 1 })
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		st, c := tr.Stats(), s.Counters()
		if !ok || qps.B.Received()[0].Length != int64(sc.size) {
			t.Fatalf("%s: virtual write: complete %v, received %+v", sc.name, ok, qps.B.Received())
		}
		if st.Duration() != real.stats.Duration() || st.Retransmits != real.stats.Retransmits || c.DataLost() != real.c.DataLost() {
			t.Errorf("%s: virtual %v retx %+v lost %d; with bytes %v retx %+v lost %d", sc.name,
				st.Duration(), st.Retransmits, c.DataLost(), real.stats.Duration(), real.stats.Retransmits, real.c.DataLost())
		}
	}
}
