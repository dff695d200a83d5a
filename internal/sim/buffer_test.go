package sim

import (
	"math"
	"strings"
	"testing"
)

// TestSharedBufferAdmission is the dynamic threshold by hand: a buffer of
// 1,200,000 bytes, 4,000-byte packets. Alpha 1: one congested port alone
// is admitted while q + 4,000 <= 1,200,000 - q, so it stops at 150
// packets, 600,000 bytes (half the buffer); two filling in turn stop at
// 100 packets each, 400,000 bytes (a third each); alpha 2 lets one port
// reach 200 packets, 800,000 bytes (two thirds).
func TestSharedBufferAdmission(t *testing.T) {
	const size, pkt = 1_200_000, 4_000
	fill := func(alpha float64, ports int) []int64 {
		b := &sharedBuffer{size: size, alpha: alpha}
		q := make([]int64, ports)
		for progress := true; progress; {
			progress = false
			for i := range q {
				if b.admits(q[i], pkt) {
					b.add(pkt)
					q[i] += pkt
					progress = true
				}
			}
		}
		if sum := func() (s int64) {
			for _, v := range q {
				s += v
			}
			return s
		}(); b.held != sum {
			t.Errorf("alpha %g, %d ports: the switch holds %d bytes, its ports %d", alpha, ports, b.held, sum)
		}
		return q
	}
	for _, c := range []struct {
		alpha float64
		ports int
		want  int64
	}{
		{1, 1, 600_000},
		{1, 2, 400_000},
		{2, 1, 800_000},
		{0.5, 1, 400_000}, // q + 4,000 <= (1,200,000 - q) / 2: 100 packets
	} {
		for i, q := range fill(c.alpha, c.ports) {
			if q != c.want {
				t.Errorf("alpha %g, %d congested ports: port %d holds %d bytes, want %d", c.alpha, c.ports, i, q, c.want)
			}
		}
	}

	// The default queue's departures leave the buffer as their time
	// comes: on a port when it is asked, on the switch when it settles.
	// Port 0 sends 100 bytes over [0, 30); port 1 200 over [0, 10), then
	// 400 over [10, 20).
	d := &device{kind: kindT0, ports: make([]port, 2), buf: &sharedBuffer{size: size, alpha: 1}}
	give := func(out int, ser, bytes int64) {
		before := d.ports[out].q.dataBytes
		d.ports[out].q.schedule(0, ser, bytes, false)
		d.track(out, before)
	}
	give(0, 30, 100)
	give(1, 10, 200)
	give(1, 10, 400)
	if d.buf.held != 700 || len(d.buf.holding) != 2 {
		t.Fatalf("given 700 bytes on 2 ports: holds %d on %d ports", d.buf.held, len(d.buf.holding))
	}
	// Asking port 1 alone at 25 uncounts its 600 bytes, not port 0's.
	if n := d.occupancy(1, 25); n != 0 || d.buf.held != 100 {
		t.Errorf("port 1 asked at 25: %d packets, the switch holds %d bytes, want 0 and 100", n, d.buf.held)
	}
	for _, c := range []struct {
		now, held int64
		holding   int
	}{{26, 100, 1}, {29, 100, 1}, {30, 0, 0}} {
		d.settle(c.now)
		if d.buf.held != c.held || len(d.buf.holding) != c.holding {
			t.Errorf("settled at %d: holds %d bytes on %d ports, want %d on %d", c.now, d.buf.held, len(d.buf.holding), c.held, c.holding)
		}
	}
	for i, pt := range d.ports {
		if pt.holding {
			t.Errorf("port %d: still marked as holding data once settled empty", i)
		}
	}
}

// TestSharedBufferSettles: a switch's buffer may still count bytes a port
// has sent but not yet been asked about. A packet that does not fit then
// is admitted once every port has said what it holds, and refused only if
// it still does not fit. A 1,000-byte buffer, alpha 1: port 0 sends 400
// bytes over [0, 10); 700 more for port 1 fit only once those have left
// (700 <= 1,000 - 0, not 1,000 - 400).
func TestSharedBufferSettles(t *testing.T) {
	for _, c := range []struct {
		now  int64
		want bool
	}{{5, false}, {20, true}} {
		d := &device{kind: kindT1, ports: make([]port, 2), buf: &sharedBuffer{size: 1000, alpha: 1}}
		d.ports[0].q.schedule(0, 10, 400, false)
		d.track(0, 0)
		s := &Sim{now: c.now}
		if got := s.admits(d, 1, 700); got != c.want {
			t.Errorf("at %d, port 0's 400 bytes leaving at 10: 700 bytes for port 1 admitted %v, want %v", c.now, got, c.want)
		}
	}
}

// TestSwitchBufferDefaults: a Tomahawk 5's 165.2 MB over its 51.2 Tb/s,
// times each preset switch's ports at their speed; the errors.
func TestSwitchBufferDefaults(t *testing.T) {
	if got := DefaultSwitchBuffer(64, 800); got != 165_200_000 {
		t.Errorf("64 x 800 Gb/s: %d bytes, want 165,200,000 (a Tomahawk 5)", got)
	}
	for _, c := range []struct {
		preset string
		t0, t1 int64
	}{
		{"tiny", 1_290_625, 645_312},           // 4 and 2 ports at 100 Gb/s
		{"small", 5_162_500, 5_162_500},        // 8 and 8 at 200
		{"mrc-1k", 20_650_000, 10_325_000},     // 64 and 32 at 100
		{"mrc-131k", 165_200_000, 165_200_000}, // 512 and 512 at 100
	} {
		f, _, _ := genSource(t, c.preset)
		b, err := ResolveSwitchBuffers(f, Options{})
		if err != nil || b != (SwitchBuffers{T0Bytes: c.t0, T1Bytes: c.t1, Alpha: 1}) {
			t.Errorf("%s: %+v, %v; want T0 %d, T1 %d bytes, alpha 1", c.preset, b, err, c.t0, c.t1)
		}
	}
	f, _, _ := genSource(t, "small")
	for _, c := range []struct {
		opt  Options
		want string // "" for no error
	}{
		{Options{SwitchBuffer: 1 << 20, BufferAlpha: 2}, ""},
		{Options{SwitchBuffer: SwitchBufferPerPort}, ""},
		{Options{PFC: &PFCConfig{}}, ""},
		{Options{SwitchBuffer: 1 << 20, PFC: &PFCConfig{}}, "with PFC"},
		{Options{BufferAlpha: 2, PFC: &PFCConfig{}}, "with PFC"},
		{Options{SwitchBuffer: -2}, "want a size"},
		{Options{SwitchBuffer: 4271, Segment: 4096}, "4272 bytes"},
		{Options{BufferAlpha: math.NaN()}, "alpha NaN"},
		{Options{BufferAlpha: -1}, "alpha -1"},
		{Options{BufferAlpha: 65}, "at most 64"},
		{Options{SwitchBuffer: SwitchBufferPerPort, BufferAlpha: 2}, "no dynamic threshold"},
	} {
		_, err := ResolveSwitchBuffers(f, c.opt)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.opt, err, c.want)
		}
	}
}

// TestSharedBufferThreshold: RoCE's 2-to-1 incast on small (hosts on
// three T0s, so that the receiver's T0 queues data for the receiver's
// port alone), without congestion control and with a window of 96
// packets (two QPs a plane overfill the port), each switch a buffer of 160
// data frames (4,230 bytes each: 134 bytes of headers and 4 KiB; 676,800
// bytes). The receiver's port grows past BMv2's 64 packets without a
// drop: at 79 frames (334,170 bytes) a frame is admitted, as 334,170 +
// 4,230 <= 676,800 - 334,170; at 80 (338,400, half of the buffer) the
// next is dropped, as 338,400 + 4,230 > 676,800 - 338,400. Both queue
// models.
func TestSharedBufferThreshold(t *testing.T) {
	const frame = 4230
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	flows := IncastFlows(hosts, 4<<20, 0)
	for _, exact := range []bool{false, true} {
		s := newSim(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE, NoCongestionControl: true,
			ExactQueues: exact, SwitchBuffer: 160 * frame, Window: 96})
		type drop struct{ q, held, size int64 }
		var drops []drop
		s.testTailDrop = func(q, held, size int64) { drops = append(drops, drop{q, held, size}) }
		r, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		if len(drops) == 0 || int64(len(drops)) != r.Drops.TailDrop {
			t.Fatalf("exact queues %v: %d drops at the buffer, %d tail drops: want some, all of them there", exact, len(drops), r.Drops.TailDrop)
		}
		if d := drops[0]; d != (drop{338_400, 338_400, frame}) {
			t.Errorf("exact queues %v: first drop of a %d-byte packet at a port of %d bytes (%d frames) in a switch holding %d: want 338,400 in 338,400",
				exact, d.size, d.q, d.q/frame, d.held)
		}
		for _, d := range drops {
			if 2*d.q+d.size <= 676_800 || d.held != d.q {
				t.Errorf("exact queues %v: dropped a packet for a port of %d bytes in a switch holding %d", exact, d.q, d.held)
				break
			}
		}
	}
}

// TestSharedBufferNoLeak: after a run whose links and switches fail
// mid-flight, with buffers small enough to drop (100 frames), and once what was still on its way has arrived, every
// switch's count of the data it holds is back to 0 and equal to its
// ports' (nothing counted twice, nothing a failure lost left behind).
func TestSharedBufferNoLeak(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := Permutation(hosts, 1<<20, 0, 1)
	faults := []Fault{
		{Kind: LinkDown, A: "p0-t0-0", B: "p0-t1-1", At: 10e3},
		{Kind: SwitchDown, A: "p1-t1-2", At: 15e3},
	}
	for _, tr := range []Transport{MRC, RoCE} {
		for _, exact := range []bool{false, true} {
			s := newSim(t, f, src, Options{Flows: flows, Seed: 1, Transport: tr, ExactQueues: exact, Faults: faults,
				NoCongestionControl: true, Limit: 2e6, SwitchBuffer: 100 * 4230})
			r, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			if r.Drops.LinkDown == 0 || r.Drops.TailDrop == 0 && tr == RoCE {
				t.Fatalf("%s, exact queues %v: %d lost to the failures, %d tail drops: the run tests neither", tr, exact, r.Drops.LinkDown, r.Drops.TailDrop)
			}
			// What is still queued or on a wire: run the packets out (no
			// timer, so no new flow data).
			for n := 0; ; n++ {
				e, ok := s.q.pop()
				if !ok {
					break
				}
				if n > 10_000_000 {
					t.Fatalf("%s: the packets do not run out", tr)
				}
				s.now = e.at
				switch e.kind {
				case evArrive:
					s.arrive(e.dev, e.port, e.arg)
				case evPortFree:
					s.portFree(e.dev, e.port)
				case evPause:
					s.pauseArrive(e.dev, e.port, e.arg == 1, e.gen)
				}
			}
			switches := 0
			for _, d := range s.devs {
				if d == nil || d.kind == kindNIC {
					continue
				}
				switches++
				if d.buf == nil {
					t.Fatalf("%s: a switch without a buffer", s.p.Name(d.sw))
				}
				if !exact {
					d.settle(s.now)
				}
				var ports int64
				for i := range d.ports {
					ports += s.queuedBytes(d, i)
				}
				if d.buf.held != 0 || ports != 0 || len(d.buf.holding) != 0 {
					t.Errorf("%s, exact queues %v: %s holds %d bytes (%d ports holding), its ports %d: want 0",
						tr, exact, s.p.Name(d.sw), d.buf.held, len(d.buf.holding), ports)
				}
			}
			if switches != f.Switches() {
				t.Errorf("%d switches ran, want all %d", switches, f.Switches())
			}
		}
	}
}

// TestRoCEIncastSharedBuffer: lossy RoCE's 2-to-1 incast on small
// (--hosts 3, 4 MiB, seed 1, exact queues), which BMv2's 64-packet ports
// held to half of the receiver's line rate (173 timeouts), runs near line
// rate in a deployed switch's shared buffer, without a timeout.
func TestRoCEIncastSharedBuffer(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	flows := IncastFlows(hosts, 4<<20, 0)
	shared := run(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE, ExactQueues: true})
	perPort := run(t, f, src, Options{Flows: flows, Seed: 1, Transport: RoCE, ExactQueues: true, SwitchBuffer: SwitchBufferPerPort})
	t.Logf("shared buffer: received %.3f, %d timeouts, %d tail drops; per port: %.3f, %d, %d",
		shared.ReceiveGoodput.Max, shared.Retransmits.Timeout, shared.Drops.TailDrop,
		perPort.ReceiveGoodput.Max, perPort.Retransmits.Timeout, perPort.Drops.TailDrop)
	if shared.Completed != 2 || shared.ReceiveGoodput.Max < 0.9 || shared.Retransmits.Timeout != 0 {
		t.Errorf("shared buffer: %d of 2 flows, the receiver at %.3f of line rate, %d timeouts: want both, 0.9 or more, none",
			shared.Completed, shared.ReceiveGoodput.Max, shared.Retransmits.Timeout)
	}
	if perPort.ReceiveGoodput.Max > 0.6 || perPort.Retransmits.Timeout == 0 {
		t.Errorf("per-port queues: the receiver at %.3f, %d timeouts: want the 64-packet ports' loss (below 0.6, timeouts)",
			perPort.ReceiveGoodput.Max, perPort.Retransmits.Timeout)
	}
}

// TestExactQueuesMarkRoCE: RED reads the queue the run has. On the
// explicit queue without PFC (--exact-queues) it used to read the default
// queue's bytes, which that run never fills, and lossy RoCE was never
// marked. RoCE's 31-to-1 incast on small (256 KiB each) queues megabytes
// at the receiver's port: marked on either queue model, with PFC or not.
func TestExactQueuesMarkRoCE(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := IncastFlows(hosts, 256<<10, 0)
	for _, o := range []Options{
		{ExactQueues: true},
		{},
		{PFC: &PFCConfig{}},
		{ExactQueues: true, SwitchBuffer: SwitchBufferPerPort},
	} {
		o.Flows, o.Seed, o.Transport = flows, 1, RoCE
		r := run(t, f, src, o)
		if r.ECNMarks == 0 {
			t.Errorf("exact queues %v, PFC %v, buffer %+v: no ECN mark", o.ExactQueues, o.PFC != nil, r.SwitchBuffer)
		}
	}
}
