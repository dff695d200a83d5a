package bmv2tests

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/lab/labtest"
	"github.com/mrc-fabric/mrcgen/internal/labtransfer"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// The transfers of these tests: nic-0 (T0 row 0) to nic-3 (row 1), across
// T0-T1-T0 in both planes.
const (
	xferFrom, xferTo = "nic-0", "nic-3"
	xferSize         = 128 << 10 // 128 packets of 1 KiB
	// xferLossSize: 256 packets, half of them (MRC's plane 0) over the
	// lossy link. The lab restarts a link's loss sequence at each SetLoss,
	// and on the tiny fabric the wire p0-t0-1 -> nic-3 loses its 32nd
	// packet (seed 1): at 1% both modes lose data by construction.
	xferLossSize = 256 << 10
	// xferLinkSize: 1,024 packets for the cut and the flap, so that the
	// link is down for more first sends than the NIC needs to retire the
	// slots crossing it ((K+1) x set size = 336 on tiny: 359 in the flap,
	// from packet 256 to 615, and 716 after the cut at 308) and, in the
	// flap, up again for more than it needs to probe and revive them
	// (N x set size + window = 128: 409). The lab holds the sender's first
	// sends at each change's packet until it has applied it, so these are
	// the counts whatever the timing; checkLinkEvents asserts them from
	// the sends counted when the lab applied each change.
	xferLinkSize = 1 << 20
	// xferLimit is how long a write may take before it counts as not
	// completed, the same for MRC and RoCE. It is a ceiling, not a
	// measure: RoCE under the throttle takes far longer than MRC (its
	// packets and its competitor's cross a port at 25 pkt/s, and its
	// go-back-N resends what the full queue dropped), and must still finish
	// within it; with its only path cut it never finishes, and waits this
	// long.
	xferLimit = 60 * time.Second
	// xferThrottle is the rate of the throttled T1 port. One MRC QP puts
	// exactly a quarter of its window (16: the EV rotation gives each
	// (plane, T1) 4 of 16 slots) on it, no more than the trim threshold
	// (16); a second QP crossing the same port (nic-1 -> nic-2) puts 16
	// more, so the queue passes the threshold by construction once both
	// first windows are out, whatever the timing: at 25 pkt/s it drains
	// one packet per 40 ms. RoCE puts both whole windows (128) on it,
	// beyond its queue (64): tail drops.
	xferThrottle = 25
	// xferSlack is what MRC may resend beyond one packet per trim and per
	// wire drop: late packets the SACK-gap rule takes for lost. The reorder
	// window is learnt from RTT samples; a packet later than any of them
	// looks lost. Two things make one: a queue that grows (a throttled port,
	// or a retired slot's backup traffic), which holds at most the quarter
	// of the window one (plane, T1) carries (16 of 64), and a switch process
	// the machine deschedules (10 BMv2 processes share 2 cores), which holds
	// everything crossing that switch. Two or more of them stalled at once
	// hold everything in flight: the window (64), each packet once. The
	// SACK-gap rule resends a packet only when packets sent after its last
	// copy were answered, and while the stall lasts nothing sent after the
	// first resends is answered. Each late copy reaches the
	// receiving NIC as a duplicate, which checkMRC also asserts, and widens
	// the reorder window to its own delay, so that only a longer stall
	// makes another such burst. (A CI run on a loaded machine, 172 pkt/s
	// instead of 600-900, resent 42 of 128 packets this way with no trim
	// and no loss: more than one plane's share, the half window this slack
	// was until then.)
	xferSlack = transport.DefaultWindow
)

// xferScenario is one fabric condition, the same for both modes. Every
// one of them hits the single path of a RoCE QP (slot 0's EV: path), which
// MRC sprays a quarter of its packets over.
type xferScenario struct {
	name  string
	size  int
	apply func(o *labtransfer.Options, path labtransfer.Path)
	// competing, if set, runs a second transfer at the same time, in the
	// same mode, from that NIC to that NIC.
	competing [2]string
}

var xferScenarios = []xferScenario{
	{name: "clean", size: xferSize, apply: func(*labtransfer.Options, labtransfer.Path) {}},
	{name: "trimming", size: xferSize, apply: func(o *labtransfer.Options, p labtransfer.Path) {
		o.Throttles = []labtransfer.Throttle{{Device: p.T1Name, Neighbour: p.DstT0, PPS: xferThrottle}}
	}, competing: [2]string{"nic-1", "nic-2"}},
	{"cut at 30%", xferLinkSize, func(o *labtransfer.Options, p labtransfer.Path) {
		o.Links = []labtransfer.LinkEvents{{A: p.SrcT0, B: p.T1Name, At: []float64{0.3}}}
	}, [2]string{}},
	{"flap 25%-60%", xferLinkSize, func(o *labtransfer.Options, p labtransfer.Path) {
		o.Links = []labtransfer.LinkEvents{{A: p.SrcT0, B: p.T1Name, At: []float64{0.25, 0.6}}}
	}, [2]string{}},
	{"1% loss", xferLossSize, func(o *labtransfer.Options, p labtransfer.Path) {
		o.Losses = []labtransfer.Loss{{A: p.DstT0, B: xferTo, Percent: 1}}
	}, [2]string{}},
}

// xferOptions are the transfers of a scenario: the measured one first,
// then the competing one if any.
func xferOptions(t testing.TB, l *lab.Lab, sc xferScenario, mode transport.Mode) []labtransfer.Options {
	t.Helper()
	path, err := labtransfer.SinglePath(l.Build.Plan, xferFrom, xferTo, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := labtransfer.Options{From: xferFrom, To: xferTo, Size: sc.size, Mode: mode, Limit: xferLimit}
	sc.apply(&o, path)
	opts := []labtransfer.Options{o}
	if sc.competing[0] != "" {
		c := o
		c.From, c.To, c.Seed, c.Throttles, c.Links, c.Losses = sc.competing[0], sc.competing[1], 99, nil, nil, nil
		if p2, err := labtransfer.SinglePath(l.Build.Plan, c.From, c.To, 0); err != nil || p2 != path {
			t.Fatalf("the competing transfer %s -> %s does not take RoCE's path %+v: %+v, %v", c.From, c.To, path, p2, err)
		}
		opts = append(opts, c)
	}
	return opts
}

// runTransfers runs the transfers at once and returns the first's result.
func runTransfers(t testing.TB, r *labtransfer.Runner, opts []labtransfer.Options) *labtransfer.Result {
	t.Helper()
	all, err := r.RunMany(ctxFor(t, 3*time.Minute), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range all[1:] {
		t.Logf("competing %s %s->%s: completed %v in %.2fs, retx %d, match %v", res.Mode, res.From, res.To, res.Complete, res.Seconds, res.Retransmits.Total, res.Match)
	}
	logResult(t, all[0])
	return all[0]
}

func logResult(t testing.TB, res *labtransfer.Result) {
	t.Helper()
	t.Logf("%s %s->%s %d B: completed %v in %.2fs, %.0f pkt/s; sent %d for %d packets, retx %+v, go-back-N %d; NACKs %d, trimmed %d, wire drops cut %d (data %d) loss %d (data %d); NIC dups %d, EVs retired %d (%d losses reported) revived %d; writes %d; events %+v",
		res.Mode, res.From, res.To, res.Bytes, res.Complete, res.Seconds, res.GoodputPPS, res.PacketsSent, res.Packets,
		res.Retransmits, res.GoBackNs, res.NACKs, res.NIC.Trimmed, res.CutDrops, res.CutData, res.LossDrops, res.LossData, res.NIC.Duplicates,
		res.NIC.EVsRetired, res.NIC.LossReported, res.NIC.EVsRevived, res.Writes, res.Events)
}

// lostInNetwork is how many copies of data packets the sender sent that
// never reached the receiving NIC. Every copy sent either arrives new
// (Packets of them), arrives again (a duplicate, counted by the receiving
// NIC), arrives trimmed (counted and NACKed by it), or is lost on the way;
// none arrives beyond the receive window (the engine's window keeps PSNs
// below cumulative + 65). So the retransmissions are exactly duplicates +
// trims + losses. The NICs' counters are the whole NIC's: the transfers of
// these tests are the only traffic to the receiving NIC.
func lostInNetwork(res *labtransfer.Result) int64 {
	return res.Retransmits.Total - res.NIC.Duplicates - res.NIC.Trimmed
}

// checkMRC asserts what every MRC transfer promises: complete, the
// receiver's memory is the sender's buffer, no P4Runtime write, no more
// retransmissions than trims and wire drops plus the slack, and no data
// lost anywhere but on a wire the scenario cut or made lossy (MRC's data
// is trimmed, not tail-dropped, at a full queue): the data packets lost
// in the network are exactly the data packets the wires dropped. (The
// wires' counts are the lab's; the other transfers these tests run at
// the same time cross no cut or lossy wire.)
func checkMRC(t *testing.T, res *labtransfer.Result) {
	t.Helper()
	if !res.Complete {
		t.Errorf("%s -> %s did not complete within %.0fs", res.From, res.To, res.Limit)
	}
	if !res.Match {
		t.Errorf("receiver memory sha256 %s, sender buffer %s", res.RecvSHA256, res.SentSHA256)
	}
	if res.Writes != 0 {
		t.Errorf("%d P4Runtime writes during the transfer", res.Writes)
	}
	wire := int64(res.CutData + res.LossData)
	if res.Retransmits.Total > res.NIC.Trimmed+wire+xferSlack {
		t.Errorf("%d retransmissions (%+v), more than %d trims + %d data packets cut + %d lost on the wire + slack %d",
			res.Retransmits.Total, res.Retransmits, res.NIC.Trimmed, res.CutData, res.LossData, xferSlack)
	}
	// What was resent beyond the losses was a copy of a packet that did
	// arrive: the receiving NIC saw it twice.
	if lost := lostInNetwork(res); lost != wire {
		t.Errorf("%d retransmissions - %d duplicates - %d trimmed at %s = %d data packets lost in the network; want the %d data packets the wires dropped (more: dropped in a NIC or a switch, see their counters; fewer: a counter misses a copy)",
			res.Retransmits.Total, res.NIC.Duplicates, res.NIC.Trimmed, res.To, lost, wire)
	}
}

// linkEvents returns the link changes the lab applied during the
// transfer, in order.
func linkEvents(res *labtransfer.Result) []labtransfer.Event {
	var out []labtransfer.Event
	for _, e := range res.Events {
		if strings.HasPrefix(e.What, "link ") {
			out = append(out, e)
		}
	}
	return out
}

// pathDownAtEnd reports whether the transfer's last link change was a cut,
// still in force when it ended (the lab restores links afterwards), and
// how long after the start it was made.
func pathDownAtEnd(res *labtransfer.Result) (since float64, down bool) {
	ev := linkEvents(res)
	if len(ev) == 0 || !strings.HasSuffix(ev[len(ev)-1].What, " down") {
		return 0, false
	}
	return ev[len(ev)-1].Elapsed, true
}

// checkLinkEvents asserts that the lab applied a scenario's link changes
// early enough for what the test then asserts to hold by construction: the
// link down for at least (K+1) x set size first sends of the write (K lost
// sends on every slot crossing it, and one more pass to retire it: each
// pass of the rotation is at most set size sends), and, when it comes back,
// up for at least N x set size (a probe on every retired slot) plus a
// window of first sends (the sender's window then waits for the answer to
// the packet the probe was cloned from, sent with it) before the end.
func checkLinkEvents(t *testing.T, l *lab.Lab, res *labtransfer.Result, changes int) {
	t.Helper()
	f := l.Build.Fabric
	k, n, s := int64(f.Failover.UnansweredSends), int64(f.Failover.ProbePasses), int64(f.EV.SetSize)
	ev := linkEvents(res)
	if len(ev) != changes {
		t.Fatalf("the lab applied %d link changes (%+v), the scenario has %d", len(ev), res.Events, changes)
	}
	end := res.Packets
	down := ev[0].Sent
	up := end
	if changes > 1 {
		up = ev[1].Sent
		if !strings.HasSuffix(ev[1].What, " up") {
			t.Fatalf("second link change %q is not the link coming back", ev[1].What)
		}
		if after := end - up; after < n*s+int64(res.Window) {
			t.Fatalf("the link came back with %d of %d packets left to send for the first time: fewer than N x set size + window = %d", after, end, n*s+int64(res.Window))
		}
	}
	if !strings.HasSuffix(ev[0].What, " down") {
		t.Fatalf("first link change %q is not a cut", ev[0].What)
	}
	if d := up - down; d < (k+1)*s {
		t.Fatalf("the link was down for %d first sends (from %d to %d): fewer than (K+1) x set size = %d", d, down, up, (k+1)*s)
	}
}

// TestTransferMRC writes 128 KiB to 1 MiB from nic-0 to nic-3 in MRC mode
// in each scenario: clean, a throttled T1 port (trimming), a T0-T1 link cut
// at 30% of the packets, a flap, and 1% random loss on one link.
func TestTransferMRC(t *testing.T) {
	l := needLab(t)
	r := labtransfer.NewRunner(l)
	path, err := labtransfer.SinglePath(l.Build.Plan, xferFrom, xferTo, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The slots whose base EV crosses the cut link.
	var cutSlots int64
	for _, ev := range l.Build.Plan.EVSet() {
		if x := l.Build.Plan.SplitEV(ev); x.Plane == path.Plane && x.T1 == path.T1 {
			cutSlots++
		}
	}
	for _, sc := range xferScenarios {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			res := runTransfers(t, r, xferOptions(t, l, sc, transport.MRC))
			checkMRC(t, res)
			switch sc.name {
			case "clean":
				// A window of 64 PSNs over 16 slots: when the rotation
				// reaches a slot, its sends still unanswered are among
				// the 63 PSNs before, at most 4 of them, plus one per 16
				// resends; tiny's K = 20 (derived for its receive window
				// of 256) leaves room for more (docs/protocol.md 5,
				// Choosing K). So no slot is retired by unanswered sends.
				// One may be by a reported loss: a SACK-gap resend, flagged
				// LOST, of a packet a descheduled switch held past the
				// reorder window (xferSlack), which checkMRC has shown
				// arrived (a duplicate: nothing was lost). So every
				// retirement was reported, every report was a SACK-gap
				// resend, and no packet takes a backup EV unless a slot
				// was retired.
				nic := res.NIC
				if nic.EVsRetired > nic.LossReported || nic.LossReported > res.Retransmits.SACKGap ||
					nic.EVsRetired == 0 && nic.BackupSent != 0 {
					t.Errorf("clean: %s retired %d slots on %d reported losses from %d SACK-gap resends, and sent %d packets on backup EVs; want no retirement but by a reported loss, no report but by a SACK-gap resend, no backup without a retirement",
						xferFrom, nic.EVsRetired, nic.LossReported, res.Retransmits.SACKGap, nic.BackupSent)
				}
			case "trimming":
				// Trims happen by construction (xferThrottle). Which rule
				// resends a trimmed packet is a race: its NACK crosses
				// the port that drains one packet per 40 ms, and the
				// SACK-gap rule may call the packet lost first (its
				// resend then flags LOST and the NIC retires the slow
				// path, which cuts the trims short). Every trimmed packet
				// is resent by one rule or the other: its copy carried
				// no payload.
				if rs := res.Retransmits.TrimNACK + res.Retransmits.SACKGap; res.NIC.Trimmed == 0 || rs < res.NIC.Trimmed {
					t.Errorf("throttled to %d pkt/s: %d trimmed, %d resent (trim NACK %d, SACK gap %d); want trims, each resent",
						xferThrottle, res.NIC.Trimmed, rs, res.Retransmits.TrimNACK, res.Retransmits.SACKGap)
				}
			case "cut at 30%":
				checkLinkEvents(t, l, res, 1)
				if res.NIC.EVsRetired < cutSlots {
					t.Errorf("%d EVs retired, want at least the %d slots crossing the cut", res.NIC.EVsRetired, cutSlots)
				}
				if res.CutData == 0 {
					t.Errorf("%d packets dropped on the cut link, none of them data; want data lost (and resent: checkMRC)", res.CutDrops)
				}
			case "flap 25%-60%":
				// The flap happened (down, then up, each with enough
				// sends after it), the slots crossing the link were
				// retired while it was down and revived by probes
				// once it was back.
				checkLinkEvents(t, l, res, 2)
				if res.NIC.EVsRetired < cutSlots || res.NIC.EVsRevived < cutSlots || res.NIC.EVsRevived > res.NIC.EVsRetired {
					t.Errorf("%d EVs retired and %d revived; want at least the %d slots crossing the link retired and revived", res.NIC.EVsRetired, res.NIC.EVsRevived, cutSlots)
				}
				if res.NIC.ProbesSent < res.NIC.EVsRevived {
					t.Errorf("%d probes sent for %d slots revived", res.NIC.ProbesSent, res.NIC.EVsRevived)
				}
				if res.CutData == 0 {
					t.Errorf("%d packets dropped on the cut link, none of them data; want data lost (and resent: checkMRC)", res.CutDrops)
				}
			case "1% loss":
				// Lost and resent: the lossy wire drops a data packet
				// by construction (xferLossSize), which only a resend
				// replaces.
				if res.LossData == 0 {
					t.Errorf("1%% loss: %d packets dropped on the wire, none of them data; want data lost (and resent: checkMRC)", res.LossDrops)
				}
			}
		})
	}
}

// TestTransferBothWays runs two MRC transfers at once in opposite
// directions (each NIC sends one and receives the other, one engine per
// host port).
func TestTransferBothWays(t *testing.T) {
	l := needLab(t)
	r := labtransfer.NewRunner(l)
	var opts []labtransfer.Options
	for i, pair := range [][2]string{{xferFrom, xferTo}, {xferTo, xferFrom}} {
		opts = append(opts, labtransfer.Options{From: pair[0], To: pair[1], Size: xferSize, Mode: transport.MRC, Limit: xferLimit, Seed: uint64(i + 7)})
	}
	res, err := r.RunMany(ctxFor(t, 3*time.Minute), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res {
		t.Logf("%s -> %s: completed %v in %.2fs, %.0f pkt/s, retx %d, writes %d", res[i].From, res[i].To, res[i].Complete, res[i].Seconds, res[i].GoodputPPS, res[i].Retransmits.Total, res[i].Writes)
		checkMRC(t, res[i])
	}
	if res[0].SentSHA256 == res[1].SentSHA256 {
		t.Error("both directions sent the same buffer: the check cannot tell them apart")
	}
}

// TestTransferRoCE is the baseline in the same lab, with the same limit as
// MRC: one path, NO_TRIM, go-back-N. Clean, throttled and lossy it
// completes, resending whole windows; the cut leaves its only path dead
// for the rest of the run (a static fabric does not reroute), so it waits
// for the path until the limit.
func TestTransferRoCE(t *testing.T) {
	l := needLab(t)
	r := labtransfer.NewRunner(l)
	for _, sc := range xferScenarios {
		switch sc.name {
		case "clean", "trimming", "cut at 30%", "1% loss":
		default:
			continue
		}
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			res := runTransfers(t, r, xferOptions(t, l, sc, transport.RoCE))
			if res.Writes != 0 {
				t.Errorf("%d P4Runtime writes during the transfer", res.Writes)
			}
			if res.Complete && !res.Match {
				t.Errorf("RoCE completed but the memory does not match")
			}
			_, down := pathDownAtEnd(res)
			switch sc.name {
			case "clean", "trimming", "1% loss":
				if !res.Complete {
					t.Errorf("%s: RoCE did not complete within %.0fs, its path up", sc.name, res.Limit)
				}
			case "cut at 30%":
				if !down || res.Complete {
					t.Errorf("path down at the end %v, completed %v: want its only path cut, and the write waiting for it", down, res.Complete)
				}
				if res.Retransmits.Timeout == 0 {
					t.Error("no timeout with the only path cut")
				}
			}
			switch sc.name {
			case "trimming", "1% loss":
				// Go-back-N: a recovery resends everything from the
				// cumulative ack on, more than was lost. Losses by
				// construction: the throttled port's queue (64) takes
				// two windows (128) at 25 pkt/s; the lossy wire drops
				// its 32nd packet.
				if res.GoBackNs == 0 || res.Retransmits.Total <= int64(res.LossData) {
					t.Errorf("%s: %d go-back-N rounds resent %d packets for %d lost on the wire: want whole windows", sc.name, res.GoBackNs, res.Retransmits.Total, res.LossData)
				}
			}
		})
	}
}

// TestTransferRequestsRefusedThenTransfer serves the lab's control API as
// `mrcgen lab up` does and sends its transfer command what a careless or
// hostile client might: broken JSON, unknown fields, a second value, sizes
// past labtransfer.MaxSize up to a terabyte (which the lab's process used
// to try to allocate twice: an out-of-memory there would take every BMv2
// switch down with it), a body past lab.MaxRequestBytes. Each is refused
// with an error saying why; then every switch still runs and a normal
// transfer through the same server, in the same lab, completes.
func TestTransferRequestsRefusedThenTransfer(t *testing.T) {
	l := needLab(t)
	srv := lab.NewServer(l)
	srv.HandleStream("transfer", labtransfer.NewRunner(l).Handler())
	dir, hc := labtest.Serve(t, srv)
	ok := fmt.Sprintf(`"from":%q,"to":%q`, xferFrom, xferTo)
	for _, c := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"broken JSON", `{"from":"nic-0","size":`, http.StatusUnprocessableEntity, "bad request"},
		{"not an object", `[1,2,3]`, http.StatusUnprocessableEntity, "bad request"},
		{"unknown field", `{` + ok + `,"size":4096,"sise":4096}`, http.StatusUnprocessableEntity, `unknown field \"sise\"`},
		{"unknown field in a scenario", `{` + ok + `,"size":4096,"losses":[{"a":"p0-t0-1","b":"nic-3","percent":1,"burst":5}]}`, http.StatusUnprocessableEntity, `unknown field \"burst\"`},
		{"two values", `{` + ok + `,"size":4096} {"size":1}`, http.StatusUnprocessableEntity, "after the request"},
		{"just past the limit", fmt.Sprintf(`{%s,"size":%d}`, ok, labtransfer.MaxSize+1), http.StatusUnprocessableEntity, "at most 16 MiB"},
		{"a terabyte", fmt.Sprintf(`{%s,"size":%d}`, ok, int64(1)<<40), http.StatusUnprocessableEntity, "at most 16 MiB"},
		{"max int", fmt.Sprintf(`{%s,"size":%d}`, ok, math.MaxInt), http.StatusUnprocessableEntity, "at most 16 MiB"},
		{"beyond int", `{` + ok + `,"size":1e30}`, http.StatusUnprocessableEntity, "bad request"},
		{"negative", `{` + ok + `,"size":-4096}`, http.StatusUnprocessableEntity, "above 0"},
		{"body past the limit", `{` + ok + `,"mode":"` + strings.Repeat("m", lab.MaxRequestBytes) + `"}`, http.StatusRequestEntityTooLarge, "more than"},
	} {
		resp, err := hc.Post("http://lab/v1/transfer", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatalf("%s: %v (did the lab's control server die?)", c.name, err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.status || !strings.Contains(string(answer), c.want) {
			t.Errorf("%s: %d %s (%v), want %d and %q", c.name, resp.StatusCode, answer, err, c.status, c.want)
		}
	}
	for name, d := range l.Devices {
		if !d.Switch.Alive() {
			t.Fatalf("%s exited after the refused requests: %s", name, d.Switch.LogTail(5))
		}
	}

	c, err := lab.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var res labtransfer.Result
	req := labtransfer.Request{From: xferFrom, To: xferTo, Size: xferSize, LimitSeconds: xferLimit.Seconds()}
	if err := c.Stream(ctxFor(t, 3*time.Minute), "transfer", req, &res, nil); err != nil {
		t.Fatalf("a normal transfer after the refused requests: %v", err)
	}
	logResult(t, &res)
	checkMRC(t, &res)
	if res.Bytes != xferSize {
		t.Errorf("%d bytes transferred, want %d", res.Bytes, xferSize)
	}
}
