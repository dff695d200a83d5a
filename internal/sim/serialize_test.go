package sim

import (
	"errors"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// idleFCT runs one flow of bytes from nic-0 to the host on the other T0
// (row 1, port 1) on an otherwise idle fabric and returns its completion
// time in picoseconds, exactly (the result's µs are a float).
func idleFCT(t *testing.T, f *fabric.Fabric, src Source, bytes int64) int64 {
	t.Helper()
	s := newSim(t, f, src, Options{Payload: true, Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: bytes}}})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 1 || r.Corrupt != 0 {
		t.Fatalf("%s: completed %d, corrupt %d", f.Name, r.Completed, r.Corrupt)
	}
	return s.flows[0].doneAt
}

// TestIdleFlow: a 4 MiB flow alone on tiny and on small completes at the
// picosecond worked out here by hand.
//
// 4 MiB are 1024 data packets of 4096 bytes; each is 134 bytes of headers
// and 24 of framing more on the wire, 4254 bytes. The sending host's
// transmit scheduler hands its NIC a frame every T = 4254 x 8 bits / the
// NIC's speed, on whole nanoseconds with the fraction carried: frame j
// (from 0) at floor(j x T) ns. The NIC's rotation sends the frames on the
// P planes in turn, so frame j goes out on port j mod P, whose frames each
// take P x T (the ports share the NIC's speed). A frame starts at the
// later of its handoff and the end of its port's previous frame, that is
// at j x T less the smallest fraction of a nanosecond the scheduler has
// dropped from a handoff of that port so far. The last frame, 1023, then
// pays four serializations (the NIC's port and three switches, store and
// forward) and the links' delays, 2 x 10 + 2 x 150 = 320 ns; every path
// is as long, so it is the last to arrive.
//
//	tiny:  T = 4254 x 8 / 200 Gb/s = 170.16 ns; ports of 100 Gb/s, 340320
//	       ps a frame. Frame 1023 is on port 1, whose frame 25 was handed
//	       at exactly 25 x 170.16 = 4254 ns: it starts at 1023 x 170160 =
//	       174073680 ps, and ends the flow at 174073680 + 4 x 340320 +
//	       320000 = 175754960 ps.
//	small: T = 4254 x 8 / 800 Gb/s = 42.54 ns; ports of 200 Gb/s, 170160
//	       ps a frame. Frame 1023 is on port 3 (frames j = 3 mod 4): the
//	       dropped fraction of j x 42.54 is (27 j mod 50) / 50 ns, odd
//	       fiftieths for odd j, the smallest 1/50 (20 ps) at j = 63. It
//	       starts at 1023 x 42540 - 20 = 43518400 ps, and ends the flow at
//	       43518400 + 4 x 170160 + 320000 = 44519040 ps.
func TestIdleFlow(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   int64 // ps
	}{
		{"tiny", 175_754_960},
		{"small", 44_519_040},
	} {
		f, _, src := genSource(t, tc.preset)
		if got := idleFCT(t, f, src, 4<<20); got != tc.want {
			t.Errorf("%s: a 4 MiB flow alone took %d ps, want %d", tc.preset, got, tc.want)
		}
	}
}

// speedFabric is tiny on one plane, its NIC and switch ports at gbps, its
// links 10 ns long: the NIC has one port, which its transmit scheduler
// keeps busy (it hands a frame at a whole nanosecond no later than the
// port could start it), and a round trip is short enough that the window
// never holds a flow back, even at 3,200 Gb/s.
func speedFabric(t *testing.T, gbps int) (*fabric.Fabric, Source) {
	t.Helper()
	f, _, src := genSourceWith(t, "tiny", func(d *fabric.Description) {
		d.Planes = 1
		d.NIC.SpeedGbps = gbps
		d.Switch.PortSpeedGbps = gbps
		d.Links.NICT0Ns, d.Links.T0T1Ns = 10, 10
	})
	return f, src
}

// TestIdleFlowSpeeds: serialization is exact at every port speed, not only
// at those that divide 8000 ps a byte per Gb/s (100, 200, 800 Gb/s: the
// presets). Every figure is worked out by hand.
//
// On speedFabric the NIC's one port takes a frame in T = 4254 x 8000 /
// gbps ps, the time its transmit scheduler spaces them by. As in
// TestIdleFlow, frame j starts at j x T less the smallest fraction of a
// nanosecond the scheduler dropped from a handoff so far, which is 0 once
// j x T is a whole nanosecond (at 300 Gb/s at j = 25, 400: 25, 3200: 200,
// 100: 25). Frame 1023 of a 1024-packet flow thus starts at 1023 x T and
// then crosses three switches, store and forward, and four 10 ns links:
// 1027 x T + 40000 ps.
//
//	 300 Gb/s: T = 4254 x 8000 / 300  = 113440 ps; 1027 x 113440 = 116502880; + 40000 = 116542880
//	 400 Gb/s: T = 4254 x 8000 / 400  =  85080 ps; 1027 x  85080 =  87377160; + 40000 =  87417160
//	3200 Gb/s: T = 4254 x 8000 / 3200 =  10635 ps; 1027 x  10635 =  10922145; + 40000 =  10962145
//	 100 Gb/s: T = 4254 x 80          = 340320 ps; 1027 x 340320 = 349508640; + 40000 = 349548640
//
// (8000 / 300 in integers is 26 ps a byte: the link ran 2.5% fast; 8000 /
// 3200 is 2: 25% fast.)
//
// A frame whose time is not a whole number of picoseconds is rounded down,
// frame by frame: a single packet pays four serializations and the
// delays, whatever the scheduler does.
//
//	9000 Gb/s: 4254 x 8000 / 9000 = 3781.33: 3781 ps; x 4 = 15124; + 40000 = 55124 (8000 / 9000 is 0 in integers)
//	   7 Gb/s: 4254 x 8000 / 7 = 4861714.29: 4861714 ps; x 4 = 19446856; + 40000 = 19486856
func TestIdleFlowSpeeds(t *testing.T) {
	for _, tc := range []struct {
		gbps  int
		bytes int64
		want  int64 // ps
	}{
		{300, 4 << 20, 116_542_880},
		{400, 4 << 20, 87_417_160},
		{3200, 4 << 20, 10_962_145},
		{100, 4 << 20, 349_548_640},
		{9000, 4096, 55_124},
		{7, 4096, 19_486_856},
	} {
		f, src := speedFabric(t, tc.gbps)
		if got := idleFCT(t, f, src, tc.bytes); got != tc.want {
			t.Errorf("%d Gb/s: %d bytes alone took %d ps, want %d (%+.6f%%)", tc.gbps, tc.bytes, got, tc.want, 100*float64(got-tc.want)/float64(tc.want))
		}
	}
}

// TestPFCHeadroomSpeeds: the headroom's bytes in flight are exactly two
// link delays at the port speed, whatever the speed (8000 / speed in
// integers made them 2.5% too many at 300 Gb/s, 25% at 3,200, and divided
// by zero at 9,000).
//
// tiny with ports of gbps (NICs of twice that), delays 10 and 150 ns: two
// 150 ns delays carry 300 ns x gbps / 8 bytes:
//
//	100 Gb/s: 3750 bytes; 300 Gb/s: 11250; 3200 Gb/s: 120000; 9000 Gb/s: 337500
//
// plus three 4296-byte frames and the 84-byte PAUSE frame (12972 bytes).
// tiny's buffer is 64 x 4272 = 273408 bytes: at 9000 Gb/s the headroom,
// 350472 bytes, does not fit, which is an error naming the buffer.
func TestPFCHeadroomSpeeds(t *testing.T) {
	for _, tc := range []struct {
		gbps     int
		headroom int64
		fits     bool
	}{
		{300, 11250 + 12972, true},
		{3200, 120000 + 12972, true},
		{9000, 337500 + 12972, false},
		{100, 3750 + 12972, true}, // tiny itself
	} {
		d, err := fabric.Preset("tiny")
		if err != nil {
			t.Fatal(err)
		}
		d.NIC.SpeedGbps, d.Switch.PortSpeedGbps = 2*tc.gbps, tc.gbps
		f, err := fabric.Resolve(d)
		if err != nil {
			t.Fatal(err)
		}
		got := PFCDefaults(f, DefaultSegment)
		if got.Headroom != tc.headroom || got.Buffer != 64*4272 {
			t.Errorf("%d Gb/s: headroom %d, buffer %d; want %d and %d", tc.gbps, got.Headroom, got.Buffer, tc.headroom, 64*4272)
		}
		_, err = PFCConfig{}.Resolve(f, DefaultSegment)
		var te *PFCThresholdError
		if tc.fits && err != nil || !tc.fits && (!errors.As(err, &te) || te.Threshold != "") {
			t.Errorf("%d Gb/s: %v; want an error (naming the buffer) only when the headroom does not fit", tc.gbps, err)
		}
	}
}

// TestSerialization: the time a frame takes on a port, exactly, rounded
// down to a picosecond; a --rate fault's share of the speed is kept to a
// millionth, not rounded to a whole percent.
func TestSerialization(t *testing.T) {
	for _, tc := range []struct {
		wire, gbps, ppm int64
		want            int64
	}{
		{4254, 100, fullRate, 340_320},
		{4254, 300, fullRate, 113_440},
		{4255, 300, fullRate, 113_466}, // 113466.67
		{4254, 3200, fullRate, 10_635},
		{4254, 9000, fullRate, 3_781},    // 3781.33
		{84, 2_000_000, fullRate, 0},     // 0.336 ps
		{4254, 100, 250_000, 1_361_280},  // 25%: four times as long
		{4254, 100, 300_000, 1_134_400},  // 30%: 1134400 exactly
		{4254, 200, 5_000, 34_032_000},   // 0.5%: 200 times as long, not 100
		{4254, 300, 330_000, 343_757},    // 33%: 343757.58
		{4254, 1 << 62, 1_000_000, 0},    // no overflow
		{4254, 1 << 62, 1, 0},            // nor here
		{9200, 1, 1, 73_600_000_000_000}, // 1 Gb/s at a millionth
	} {
		if got := serializationPS(tc.wire, tc.gbps, tc.ppm); got != tc.want {
			t.Errorf("%d bytes at %d Gb/s x %d/1e6: %d ps, want %d", tc.wire, tc.gbps, tc.ppm, got, tc.want)
		}
	}
}
