package sim

import (
	"testing"
)

// RED's curve at known queue depths, exact: NVIDIA's RoCE profile
// (150,000 and 1,500,000 bytes, 100%), the same at every port speed, and
// the DCQCN paper's 40 Gb/s values (5 KB, 200 KB, 1%).
func TestREDProb(t *testing.T) {
	nvidia := RED{KminBytes: 150_000, KmaxBytes: 1_500_000, Pmax: 1}
	for _, gbps := range []int64{100, 200, 400, 800} {
		if got := DefaultRED(gbps); got != nvidia {
			t.Errorf("DefaultRED(%d) = %+v, want NVIDIA's profile %+v", gbps, got, nvidia)
		}
	}
	paper := RED{KminBytes: 5_000, KmaxBytes: 200_000, Pmax: 0.01}
	for _, c := range []struct {
		r    RED
		q    int64
		want float64
	}{
		{nvidia, 0, 0},
		{nvidia, 149_999, 0},
		{nvidia, 150_000, 0},
		{nvidia, 285_000, 0.1}, // (285,000 - 150,000) / 1,350,000
		{nvidia, 825_000, 0.5},
		{nvidia, 1_499_999, 1_349_999.0 / 1_350_000},
		{nvidia, 1_500_000, 1},
		{nvidia, 5_000_000, 1},
		{paper, 4_999, 0},
		{paper, 102_500, 0.005},
		{paper, 200_000, 1},
	} {
		if got := c.r.Prob(c.q); got != c.want {
			t.Errorf("%+v at %d bytes: %v, want %v", c.r, c.q, got, c.want)
		}
	}
}

// The draws: at a depth whose probability is 1/4, 100,000 packets are
// marked 25,000 times give or take 6 standard deviations (sqrt(100,000 x
// 1/4 x 3/4) = 137: 24,178 to 25,822); the same seed marks the same
// packets; below Kmin and at Kmax nothing is drawn.
func TestREDMarks(t *testing.T) {
	r := RED{KminBytes: 1000, KmaxBytes: 5000, Pmax: 1}
	count := func(seed uint64, q int64) int {
		rng := deviceStream(seed, 7)
		n := 0
		for i := 0; i < 100_000; i++ {
			if r.mark(q, &rng) {
				n++
			}
		}
		return n
	}
	n := count(1, 2000) // (2000 - 1000) / 4000 = 1/4
	if n < 24_178 || n > 25_822 {
		t.Errorf("p = 1/4: %d of 100,000 marked, want 24,178 to 25,822", n)
	}
	if m := count(1, 2000); m != n {
		t.Errorf("seed 1 marked %d, then %d", n, m)
	}
	if m := count(2, 2000); m == n {
		t.Errorf("seeds 1 and 2 both marked %d: one stream for every seed?", n)
	}
	if a, b := count(1, 999), count(1, 5000); a != 0 || b != 100_000 {
		t.Errorf("below Kmin %d marked, at Kmax %d, want 0 and 100,000", a, b)
	}
	rng, fresh := deviceStream(1, 7), deviceStream(1, 7)
	r.mark(999, &rng)
	r.mark(5000, &rng)
	if got, want := rng.pcg.Uint64(), fresh.pcg.Uint64(); got != want {
		t.Error("a depth below Kmin or at Kmax drew from the stream")
	}
}

// A port's queue in bytes, driven to known depths: three 4,272-byte data
// packets of 1,000 ps each queued at once hold 12,816 bytes until the
// first has left (at 1,000 ps), 8,544 until the second has, then 4,272,
// then none; a high-priority packet is not data and adds nothing (nor
// moves the data queued before it: net.go's schedule).
func TestPortQueueBytes(t *testing.T) {
	var q portQueue
	for i := 0; i < 3; i++ {
		q.schedule(0, 1000, 4272, false)
	}
	q.schedule(0, 100, 134, true)
	for _, c := range []struct {
		at   int64
		want int64
	}{{0, 12816}, {999, 12816}, {1000, 8544}, {1999, 8544}, {2000, 4272}, {2999, 4272}, {3000, 0}} {
		q.occupancy(c.at)
		if q.dataBytes != c.want {
			t.Errorf("at %d ps: %d bytes queued, want %d", c.at, q.dataBytes, c.want)
		}
	}
}

// RoCE's incast is heard at the receiver's port: 2 senders into 1 on
// small (4 MiB each, one QP a plane: small's default of 2 starts twice the
// windows into the port, and the receiver got 29.0%, with 196 timeouts),
// lossy, with thresholds within the port's 64-packet buffer (60 KB to
// 270 KB, 100%). The host-facing T0 port, the only one
// the incast congests, marks, DCQCN slows the senders, and nothing times
// out: the receiver gets 86.1% of its line rate. With marking on
// fabric-facing ports only (as before), 52.5% and 128 timeouts.
//
// With PFC the same incast marks too, and every port's data-byte count
// is back to 0 once the run is over: the lossless queue's count (what
// RED reads there) loses nothing and leaks nothing.
func TestRoCEIncastMarksHostPort(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	red := &RED{KminBytes: 60_000, KmaxBytes: 270_000, Pmax: 1}
	opt := Options{Transport: RoCE, RoCEQPs: 1, Flows: IncastFlows(hosts, 4<<20, 0), Seed: 1, RoCEECN: red}
	r := run(t, f, src, opt)
	t.Logf("lossy: received %.3f of line rate, %d marks, %d tail drops, resends %+v", r.ReceiveGoodput.Max, r.ECNMarks, r.Drops.TailDrop, r.Retransmits)
	if r.Completed != 2 || r.ReceiveGoodput.Max < 0.85 || r.Retransmits.Timeout != 0 {
		t.Errorf("lossy: %d of 2 flows complete, the receiver at %.3f of its line rate, %d RTO resends; want 2, at least 0.85, none",
			r.Completed, r.ReceiveGoodput.Max, r.Retransmits.Timeout)
	}

	opt.PFC = &PFCConfig{}
	s := newSim(t, f, src, opt)
	r, err = s.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lossless: received %.3f of line rate, %d marks", r.ReceiveGoodput.Max, r.ECNMarks)
	if r.Completed != 2 || r.ECNMarks == 0 {
		t.Errorf("lossless: %d of 2 flows complete, %d marks; want 2 and some", r.Completed, r.ECNMarks)
	}
	ports := 0
	for _, d := range s.devs {
		if d == nil {
			continue
		}
		for i := range d.ports {
			if x := d.ports[i].q.pfc; x != nil {
				ports++
				var sending int64 // a frame still on the wire when the run ended
				if x.busy && x.txLow {
					sending = x.txLowBytes
				}
				if x.lowBytes != sending || x.low.len() != 0 {
					t.Errorf("device %d port %d: %d data bytes counted (%d being sent), %d packets queued after the run, want only the one being sent", d.id, i, x.lowBytes, sending, x.low.len())
				}
			}
		}
	}
	if ports == 0 {
		t.Error("no lossless port was used")
	}
}
