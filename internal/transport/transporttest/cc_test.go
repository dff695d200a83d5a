package transporttest

import (
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// The fabric-bottleneck scenario's paths (the default 2 planes x 4 T1s)
// each drain bottleneckPPS: 40k packets/s, less than half the 100k the
// host port offers.
const (
	bottleneckPaths = 8
	bottleneckPPS   = 5_000
)

// bottleneck is a fabric slower than the NICs on every path, thresholds
// low (trim at 4 queued, mark at 2): the congestion is the fabric's, so
// no path choice avoids it and only the senders' rate can.
var bottleneck = scenario{"fabric bottleneck", 1 << 20, Config{TrimAt: 4, ECNAt: 2}, func(s *Sim, _ *Host, _ int64) {
	for p := 0; p < bottleneckPaths; p++ {
		s.Throttle(p, bottleneckPPS)
	}
}}

// TestCongestionControlCutsTrims: on a fabric bottleneck, MRC with a fixed
// window keeps every path's queue at the trim threshold and has about
// every other packet it offers trimmed; with DCTCP the window falls to
// what the paths drain, queues stay near the ECN threshold, and trims
// come only while the window is still falling (the first rounds). Both
// complete with the same memory, no sooner than the paths allow.
func TestCongestionControlCutsTrims(t *testing.T) {
	off := runCC(t, transport.MRC, transport.CCOff, bottleneck, 1)
	on := runCC(t, transport.MRC, transport.DCTCP, bottleneck, 1)
	n := off.stats.Packets
	// The paths serve one packet each per 1/bottleneckPPS.
	capacity := time.Duration(float64(n) / (bottleneckPaths * bottleneckPPS) * float64(time.Second))
	for _, o := range []outcome{off, on} {
		st := o.stats
		t.Logf("%v: complete %v in %v, sent %d for %d packets, retx %+v, trims %d, marks %d, lost %d, congestion %+v",
			st.Congestion.Algorithm, o.complete, st.Duration(), st.PacketsSent, st.Packets, st.Retransmits,
			o.c.Trims(), o.c.ECNMarked, o.c.DataLost(), st.Congestion)
		if !o.complete || !o.match {
			t.Fatalf("%v: complete %v, memory equal %v", st.Congestion.Algorithm, o.complete, o.match)
		}
		if st.Duration() < capacity {
			t.Errorf("%v: %v, less than the paths need (%v): the scenario is not what it says", st.Congestion.Algorithm, st.Duration(), capacity)
		}
	}
	// Without congestion control: the window of 64 puts 8 packets on each
	// path, twice the trim threshold, the whole write long.
	if off.c.Trims() < n/2 || off.stats.Retransmits.TrimNACK < n/2 {
		t.Errorf("without congestion control: %d trims, %d resent, for %d packets: want at least half", off.c.Trims(), off.stats.Retransmits.TrimNACK, n)
	}
	// With DCTCP: cuts on marks, and a quarter of the trims and resends at
	// most (measured: about one in twenty).
	cg := on.stats.Congestion
	if cg.ECNCuts == 0 || cg.MinWindow >= float64(transport.DefaultWindow)/2 {
		t.Errorf("DCTCP: %d cuts on marks, lowest window %v: it did not act", cg.ECNCuts, cg.MinWindow)
	}
	if on.c.Trims()*4 > off.c.Trims() || on.stats.Retransmits.Total()*4 > off.stats.Retransmits.Total() {
		t.Errorf("DCTCP: %d trims and %d resends, off %d and %d: want at most a quarter", on.c.Trims(), on.stats.Retransmits.Total(),
			off.c.Trims(), off.stats.Retransmits.Total())
	}
	// Keeping the queues short costs little time: within half again of
	// what the paths allow (measured: 10% over).
	if on.stats.Duration() > capacity*3/2 {
		t.Errorf("DCTCP took %v, more than 1.5 x the %v the paths need", on.stats.Duration(), capacity)
	}
}
