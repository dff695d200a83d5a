package sim

import (
	"math"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// The tests of this file pin the simulator's physics to figures worked
// out by hand: each would fail if a threshold, a delay, a loss rule, a
// priority rule or a goodput figure moved (issue 29's mutations).

// lineFabric is tiny cut down to one path between its rows: one plane,
// one T1 (one up port on each T0), NICs of 100 Gb/s, the switch ports'
// speed, and tiny's links (NIC-T0 10 ns, T0-T1 150 ns) and thresholds
// (ECN at 14 data packets, trim at 16). Every packet from nic-0 (row 0)
// to nic-3 (row 1) crosses p0-t0-0, p0-t1-0 and p0-t0-1.
func lineFabric(t *testing.T) (*fabric.Fabric, Source) {
	t.Helper()
	f, _, src := genSourceWith(t, "tiny", func(d *fabric.Description) {
		d.Planes = 1
		d.NIC.SpeedGbps = 100
		d.T0.UpPorts, d.T1.Count = 1, 1
	})
	if f.Trim.ECNPackets != 14 || f.Trim.ThresholdPackets != 16 || f.Links.NICT0Ns != 10 || f.Links.T0T1Ns != 150 {
		t.Fatalf("tiny's thresholds %d and %d, delays %d and %d ns: the figures below assume 14, 16, 10 and 150",
			f.Trim.ECNPackets, f.Trim.ThresholdPackets, f.Links.NICT0Ns, f.Links.T0T1Ns)
	}
	return f, src
}

// faults parses fault specs as the command's flags give them.
func faults(t *testing.T, specs ...faultSpec) []Fault {
	t.Helper()
	var out []Fault
	for _, sp := range specs {
		fl, err := ParseFault(sp.k, sp.spec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fl)
	}
	return out
}

type faultSpec = struct {
	k    FaultKind
	spec string
}

// lineFlow runs one MRC flow of packets full data packets (4096 bytes)
// from nic-0 to nic-3 on lineFabric under faults, carrying real bytes,
// without congestion control and with a window of 64, so that the sender
// never waits for an answer: its NIC's one port sends frame k of 4254
// bytes (4096, 134 of headers, 24 of framing) at k x 340.32 ns.
func lineFlow(t *testing.T, exact bool, packets int, fs ...faultSpec) (*Sim, *Result) {
	t.Helper()
	f, src := lineFabric(t)
	s := newSim(t, f, src, Options{Payload: true, NoCongestionControl: true, Window: 64, ExactQueues: exact, Faults: faults(t, fs...),
		Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: int64(packets) * 4096}}})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 1 || r.Corrupt != 0 {
		t.Fatalf("completed %d, corrupt %d", r.Completed, r.Corrupt)
	}
	return s, r
}

// TestQueueThresholds: a data packet is marked CE when it finds
// trim.ecn_packets data packets queued or being sent at its egress port,
// and trimmed when it finds trim.threshold_packets (TRIMMED on a fabric
// port, TRIMMED_LASTHOP on one facing a NIC, where nothing is marked);
// the trimmed header goes ahead of the data queued, which it delays by
// its own serialization. Every figure by hand:
//
// lineFlow of 32 packets, one link at 50% of 100 Gb/s: a frame of 4254
// bytes takes 680.64 ns on it, twice as long as frames come (340.32 ns).
// With p0-t0-0's up link slowed, frame k (from 0) is wholly in p0-t0-0 at
// (k+1) x 340.32 + 10 ns; the port, busy from the first, ends frame j at
// 350.32 + (j+1) x 680.64 ns. Frame k finds the frames j < k with 2(j+1)
// > k still there (one ending as k arrives has left): ceil(k/2) of them.
// Frames 27 to 30 find 14 or 15: 4 marks; frame 31 finds 16: 1 trim. The
// trimmed header, 134 bytes (158 on the wire: 25.28 ns at 50 Gb/s), goes
// before frames 16-30 and delays each by 25.28 ns: frame 30 ends at
// 350.32 + 31 x 680.64 + 25.28 = 21475.44 ns. The NACK brings the resend
// of frame 31 back to the port at about 13 µs, when frames 18-30 (13, no
// mark) are left: it ends at 21475.44 + 680.64 = 22156.08 ns, crosses
// the link (150), p0-t1-0 (340.32), the next link (150), p0-t0-1
// (340.32) and the last link (10): the flow completes at 23146.72 ns.
//
// With the last link (p0-t0-1 to nic-3) slowed instead, frame k reaches
// p0-t0-1 at (k+3) x 340.32 + 310 ns and the port ends frame j at 1330.96
// + (j+1) x 680.64 ns: the same ceil(k/2), no mark (the port faces a
// NIC), frame 31 trimmed as TRIMMED_LASTHOP, frame 30 ends at 1330.96 +
// 31 x 680.64 + 25.28 = 22456.08 ns and the resend, queued behind it, at
// 23136.72 ns; 10 ns later the flow completes, at 23146.72 ns again.
//
// Both queue models give these figures: the default, and the explicit
// queue of PFC and --exact-queues (Options.ExactQueues).
func TestQueueThresholds(t *testing.T) {
	for _, tc := range []struct {
		slow  string
		marks int64
		trims Trims
	}{
		{"p0-t0-0:p0-t1-0:50%", 4, Trims{Fabric: 1}},
		{"p0-t0-1:nic-3:50%", 0, Trims{LastHop: 1}},
	} {
		for _, exact := range []bool{false, true} {
			s, r := lineFlow(t, exact, 32, faultSpec{Rate, tc.slow})
			if r.ECNMarks != tc.marks || r.Trims != tc.trims || r.Drops != (Drops{}) || r.Retransmits != (RetransmitsByCause{TrimNACK: 1}) {
				t.Errorf("%s, exact queues %v: %d marks, trims %+v, drops %+v, resends %+v; want %d marks, trims %+v, nothing dropped, one resend on a trim NACK",
					tc.slow, exact, r.ECNMarks, r.Trims, r.Drops, r.Retransmits, tc.marks, tc.trims)
			}
			if got := s.flows[0].doneAt; got != 23_146_720 {
				t.Errorf("%s, exact queues %v: the flow completed at %d ps, want 23146720", tc.slow, exact, got)
			}
		}
	}
}

// TestLinkFailureLoses: a link that fails loses every packet on it and
// every packet queued towards it, even when it is back before they would
// have reached its far end (they left on the link's previous life).
//
// lineFlow of 16 packets, p0-t0-0's up link at 50% (TestQueueThresholds:
// frame j is wholly in p0-t0-0 at (j+1) x 340.32 + 10 ns, on the link
// from 350.32 + j x 680.64 to 350.32 + (j+1) x 680.64 ns, at p0-t1-0 150
// ns later), cut from 4.5 to 4.6 µs. By 4.5 µs frames 0-12 are in
// p0-t0-0 ((13 x 340.32 + 10 = 4434.16 ns) and frames 0-4 in p0-t1-0
// (frame 4 at 3903.52 ns, frame 5 due at 4584.16): frame 5 is on the
// wire, 6 being sent, 7-12 queued. The cut loses those 8 data packets
// and no other (frame 13 reaches p0-t0-0 at 4764.48 ns, the link back);
// the sender resends them on the SACKs' gaps. On either queue model.
func TestLinkFailureLoses(t *testing.T) {
	for _, exact := range []bool{false, true} {
		_, r := lineFlow(t, exact, 16, faultSpec{Rate, "p0-t0-0:p0-t1-0:50%"}, faultSpec{LinkDown, "p0-t0-0:p0-t1-0@4.5us,until=4.6us"})
		if r.Drops.LinkDown != 8 || r.Faults[1].Lost != 8 || r.Drops.TailDrop+r.Drops.RandomLoss+r.Drops.NoRoute != 0 || r.Retransmits.SACKGap != 8 {
			t.Errorf("exact queues %v: lost %d data packets to the cut (charged %d), drops %+v, resends %+v: want 8 lost, charged to the cut, and resent on SACK gaps",
				exact, r.Drops.LinkDown, r.Faults[1].Lost, r.Drops, r.Retransmits)
		}
	}
}

// TestStrictPriorityWaits: the port's strict priority is not
// preemptive. A high-priority packet that finds the port idle starts at
// once; one that finds a data frame on the wire waits for its last bit,
// goes ahead of the data queued behind it, and delays that data by its
// own serialization.
func TestStrictPriorityWaits(t *testing.T) {
	var q portQueue
	for i, st := range []struct {
		now, ser   int64
		high       bool
		start, end int64
	}{
		{0, 100, true, 0, 100},         // idle: at once
		{200, 1000, false, 200, 1200},  // data A, idle port
		{300, 1000, false, 1200, 2200}, // data B, behind A
		{700, 100, true, 1200, 1300},   // waits for A's last bit, goes before B
		{800, 1000, false, 2300, 3300}, // data C: after B, which the header delayed by 100
	} {
		start, end := q.schedule(st.now, st.ser, 4230, st.high)
		if start != st.start || end != st.end {
			t.Errorf("step %d (at %d, %d ps, high %v): [%d, %d), want [%d, %d)", i, st.now, st.ser, st.high, start, end, st.start, st.end)
		}
	}
}

// TestRandomLossRate: a link with --loss X% loses each packet sent on it
// with probability X/100. lineFlow's 256 packets, p0-t0-0's up link
// losing 20%, loss reports off (each loss would retire a slot, and on
// one path every slot soon): every data packet the sender's NIC sends
// crosses that link once, so the data packets lost there are a binomial
// draw of those sent, p = 0.2. The bound is five standard deviations
// (about 63 lost of some 315 sent, sd 7): a tenth of the rate, 6 lost,
// is far outside it. Seeds 1 and 2 measured: 57 of 313, 67 of 323.
func TestRandomLossRate(t *testing.T) {
	f, src := lineFabric(t)
	for _, seed := range []uint64{1, 2} {
		s := newSim(t, f, src, Options{Payload: true, NoCongestionControl: true, NoLossReport: true, Window: 64, Seed: seed,
			Faults: faults(t, faultSpec{Loss, "p0-t0-0:p0-t1-0:20%"}),
			Flows:  []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 256 * 4096}}})
		r, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		sent := r.DataPackets.Sent
		want := 0.2 * float64(sent)
		sd := math.Sqrt(float64(sent) * 0.2 * 0.8)
		t.Logf("seed %d: %d data packets sent, %d lost at random (%.1f expected, sd %.1f), resends %+v", seed, sent, r.Drops.RandomLoss, want, sd, r.Retransmits)
		if r.Completed != 1 || r.Corrupt != 0 || sent < 256 {
			t.Fatalf("seed %d: completed %d, corrupt %d, %d data packets sent", seed, r.Completed, r.Corrupt, sent)
		}
		if math.Abs(float64(r.Drops.RandomLoss)-want) > 5*sd {
			t.Errorf("seed %d: %d of %d data packets lost on a link losing 20%%: want %.1f within %.1f", seed, r.Drops.RandomLoss, sent, want, 5*sd)
		}
	}
}

// TestGoodputFigures: the goodput figures of TestIdleFlow's 4 MiB flow on
// tiny, which completes at 175754960 ps: 4194304 bytes in 175.75496 µs
// over a 200 Gb/s NIC (25000 bytes a µs) is a share of 4194304 /
// 4393874 = 0.954579944714 for the sender, the receiver, and the fabric's
// only host; the goodput series (1 µs bins, one host sending) holds the
// same bytes: its shares times the bins' widths sum to 4194304 / 25000 =
// 167.77216. And a ring all-reduce of 8 MiB on two hosts has two steps,
// in each of which a host sends 4 MiB: 167.77216 µs at its NIC's speed.
func TestGoodputFigures(t *testing.T) {
	f, _, src := genSource(t, "tiny")
	r := run(t, f, src, Options{Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 4 << 20}}})
	const share = 0.954579944714
	for _, g := range []struct {
		what string
		v    float64
	}{
		{"goodput min", r.Goodput.Min}, {"goodput p50", r.Goodput.P50}, {"goodput max", r.Goodput.Max},
		{"receive goodput", r.ReceiveGoodput.Max}, {"host goodput", r.HostGoodput[0].Share},
	} {
		if math.Abs(g.v-share) > 1e-9 {
			t.Errorf("%s %.12f, want %.12f", g.what, g.v, share)
		}
	}
	if math.Abs(r.FCT.Max-175.75496) > 1e-9 {
		t.Errorf("FCT %v µs, want 175.75496", r.FCT.Max)
	}
	sum := 0.0
	for _, g := range r.Series {
		sum += (g.EndUS - g.StartUS) * g.Share
	}
	if math.Abs(sum-167.77216) > 1e-6 {
		t.Errorf("the goodput series sums to %.6f µs at line rate, want 167.77216", sum)
	}

	hosts := []plan.Host{{Row: 0, Port: 0}, {Row: 1, Port: 1}}
	c := run(t, f, src, Options{Collective: &Collective{Kind: RingAllReduce, Hosts: hosts, Bytes: 8 << 20, Iterations: 1}}).Collective
	if c.Completed != 2 {
		t.Fatalf("%d of %d steps", c.Completed, c.Steps)
	}
	for i, st := range c.PerStep {
		if math.Abs(st.IdealUS-167.77216) > 1e-9 || math.Abs(st.Slowdown-st.TimeUS/167.77216) > 1e-9 {
			t.Errorf("step %d: ideal %.6f µs, slowdown %.6f for %.6f µs; want 167.77216 and its ratio", i, st.IdealUS, st.Slowdown, st.TimeUS)
		}
	}
}
