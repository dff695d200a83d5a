package nicmodel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// rxReference is the receive state as docs/protocol.md 5 defines it, kept
// the plain way: the expected PSN and the set of PSNs received past it.
type rxReference struct {
	window   uint32
	expected uint32
	got      map[uint32]bool
}

// arrive applies data packet psn and returns whether it is delivered, and
// the SACK it must be answered with: cumulative PSN, base and bitmap.
func (r *rxReference) arrive(psn uint32) (deliver bool, cum, base uint32, bitmap uint64) {
	const mask = 1<<24 - 1
	d := (psn - r.expected) & mask
	switch {
	case d == 0:
		deliver = true
		r.expected = (r.expected + 1) & mask
		for r.got[r.expected] {
			delete(r.got, r.expected)
			r.expected = (r.expected + 1) & mask
		}
	case d < r.window:
		deliver = !r.got[psn]
		r.got[psn] = true
	}
	base = r.expected
	if d >= 64 && d < r.window {
		base = (psn - 63) & mask
	}
	for i := range uint32(64) {
		if q := (base + i) & mask; r.got[q] {
			bitmap |= 1 << i
		}
	}
	return deliver, (r.expected - 1) & mask, base, bitmap
}

// windowPair returns the NICs of hosts a and b on tiny with receive window
// window and K k (0: derived), QP 0x11 on a and 0x22 on b open from PSN
// start.
func windowPair(t *testing.T, window, k int, a, b plan.Host, start uint32) (*plan.Plan, *NIC, *NIC) {
	t.Helper()
	d, _ := fabric.Preset("tiny")
	d.NIC.WindowPackets, d.Failover.UnansweredSends = window, k
	f, err := fabric.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	p, nics := nicsOf(t, f, a, b)
	openPair(t, p, nics[0], nics[1], a, b, 0x11, 0x22, start, false)
	return p, nics[0], nics[1]
}

// TestReceiveWindowAgainstReference: a NIC's receive state over windows of
// one word and of several, against the protocol's definition kept the
// plain way: for thousands of arrivals (in order, past holes short and
// long, holes filled at random and oldest first, duplicates, beyond and
// behind the window, across the 24-bit wrap), every delivery and every
// SACK (cumulative PSN, base, bitmap) must be the reference's. Each SACK
// goes back to the sender's NIC, so its slots stay healthy.
func TestReceiveWindowAgainstReference(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	for _, window := range []int{64, 256, 1024} {
		for _, start := range []uint32{1000, 1<<24 - 300} {
			t.Run(fmt.Sprintf("window %d from %#x", window, start), func(t *testing.T) {
				p, src, dst := windowPair(t, window, 0, a, b, start)
				ref := &rxReference{window: uint32(window), expected: start, got: map[uint32]bool{}}
				rng := rand.New(rand.NewPCG(uint64(window), uint64(start)))
				next := start // the next PSN never sent
				var holes []uint32
				const mask = 1<<24 - 1
				counts := map[string]int{}
				for range 6000 {
					var psn uint32
					var what string
					switch r := rng.IntN(20); {
					case r < 8:
						psn, what = next, "in order"
						next = (next + 1) & mask
					case r < 10:
						gap := uint32(1 + rng.IntN(window/2+70))
						for i := range gap {
							holes = append(holes, (next+i)&mask)
						}
						psn, what = (next+gap)&mask, "past a hole"
						next = (psn + 1) & mask
					case r < 13 && len(holes) > 0:
						i := rng.IntN(len(holes))
						psn, what = holes[i], "a hole filled"
						holes = append(holes[:i], holes[i+1:]...)
					case r < 17 && len(holes) > 0:
						psn, what = holes[0], "the oldest hole filled"
						holes = holes[1:]
					case r < 18:
						psn, what = (ref.expected-uint32(rng.IntN(window)))&mask, "again"
					case r < 19:
						psn, what = (ref.expected+uint32(window-3+rng.IntN(6)))&mask, "at the window's end"
					default:
						psn, what = rng.Uint32()&mask, "anywhere"
					}
					counts[what]++
					wantDeliver, cum, base, bm := ref.arrive(psn)
					out := src.Process(0, dataFrame(t, p, a, b, 0x22, psn, 32))
					if len(out) != 1 {
						t.Fatalf("PSN %#x: the sender emitted %d frames", psn, len(out))
					}
					in := through(out[0].AppendTo(nil))
					got := dst.Process(out[0].Port, in)
					delivered := false
					var sack *mrcpkt.Packet
					for _, o := range got {
						pk, err := mrcpkt.Parse(o.AppendTo(nil))
						if err != nil {
							t.Fatalf("PSN %#x: %v", psn, err)
						}
						switch {
						case o.Port == 0 && pk.RETH != nil:
							delivered = true
						case o.Port != 0 && pk.SETH != nil:
							sack = pk
							src.Process(o.Port, through(o.AppendTo(nil)))
						}
					}
					if delivered != wantDeliver {
						t.Fatalf("PSN %#x (%s, expected %#x): delivered %v, want %v", psn, what, ref.expected, delivered, wantDeliver)
					}
					if sack == nil {
						t.Fatalf("PSN %#x (%s): no SACK (it asked for one)", psn, what)
					}
					if s := sack.SETH; s.CumPSN != cum || s.BasePSN != base || s.Bitmap != bm {
						t.Fatalf("PSN %#x (%s): SACK cum %#x base %#x bitmap %#016x; want %#x %#x %#016x",
							psn, what, s.CumPSN, s.BasePSN, s.Bitmap, cum, base, bm)
					}
				}
				for _, w := range []string{"past a hole", "the oldest hole filled", "a hole filled", "at the window's end"} {
					if counts[w] == 0 {
						t.Errorf("no arrival %s", w)
					}
				}
				if dst.Event(schema.NICEventBeyondWindow) == 0 || dst.Event(schema.NICEventDuplicate) == 0 {
					t.Errorf("beyond the window %d, duplicates %d: the test missed a case",
						dst.Event(schema.NICEventBeyondWindow), dst.Event(schema.NICEventDuplicate))
				}
			})
		}
	}
}

// TestEveryPacketCovered: with SACKs coalesced (tiny's ack_every 3) and
// packets arriving in any order, every packet delivered is covered, after
// its arrival, by some SACK (at or below its cumulative PSN or by a bit of
// its 64) by the time its answering PSN (the first at or above it whose
// PSN modulo A is A - 1, always answered at once) has arrived too, unless
// the receiver's cumulative PSN has passed it (then any later SACK covers
// it). A sender takes a packet no SACK covered for unknown, not lost, and
// waits: that wait must end. A run of 64 PSNs wide shuffled (the engine's
// old window) and one of W are both checked; with W above 64 the check
// fails without the answering-PSN rule. (With W = 64 every SACK spans the
// window, and the packet waits only for the next SACK, checked at the end.)
func TestEveryPacketCovered(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	const mask = 1<<24 - 1
	for _, window := range []int{64, 256, 1024} {
		for _, spread := range slices.Compact([]int{64, window}) {
			t.Run(fmt.Sprintf("window %d, %d in flight", window, spread), func(t *testing.T) {
				// K at its most: the sender hands its NIC the PSNs in the
				// order they are to arrive, not the order of the
				// rotation, and no slot may fail for it.
				const start = 1<<24 - 500
				p, src, dst := windowPair(t, window, 255, a, b, start)
				rng := rand.New(rand.NewPCG(uint64(window), uint64(spread)))
				// The sender keeps its PSNs within spread of the oldest
				// one not yet delivered (a window of spread), handing the
				// receiver a random one of those in flight each time:
				// every PSN arrives, most beyond a hole.
				var inFlight []uint32
				next := uint32(start)
				uncovered := map[uint32]bool{}
				arrived := map[uint32]bool{}
				ack := uint32(p.F.AckEvery)
				answering := func(q uint32) uint32 {
					if a := q + ack - 1 - q%ack; a <= mask {
						return a
					}
					return ack - 1 // past the 24-bit wrap
				}
				late := 0
				atOnce := 0
				const total = 6000
				for i := 0; i < total || len(inFlight) > 0; i++ {
					for i < total && (len(inFlight) == 0 || int((next-inFlight[0])&mask) < spread) {
						inFlight = append(inFlight, next)
						next = (next + 1) & mask
					}
					k := rng.IntN(len(inFlight)) // inFlight stays in PSN order
					psn := inFlight[k]
					inFlight = append(inFlight[:k], inFlight[k+1:]...)
					// The data packet, without a probe the sender may clone
					// from it (the test delays echoes by a window).
					var data Frame
					for _, o := range src.Process(0, middleFrame(t, p, a, b, 0x22, psn)) {
						if pk, err := mrcpkt.Parse(o.AppendTo(nil)); err == nil && pk.RETH != nil {
							data = o
						}
					}
					if data.Len() == 0 {
						t.Fatalf("PSN %#x: the sender sent no data", psn)
					}
					uncovered[psn], arrived[psn] = true, true
					for _, o := range dst.Process(data.Port, through(data.AppendTo(nil))) {
						pk, err := mrcpkt.Parse(o.AppendTo(nil))
						if err != nil || o.Port == 0 || pk.SETH == nil {
							continue
						}
						atOnce++
						src.Process(o.Port, through(o.AppendTo(nil)))
						s := pk.SETH
						for q := range uncovered {
							if (s.CumPSN-q)&mask < 1<<23 || (q-s.BasePSN)&mask < 64 && s.Bitmap>>((q-s.BasePSN)&mask)&1 == 1 {
								delete(uncovered, q)
							}
						}
					}
					// The receiver's expected PSN: the oldest not delivered.
					e := next
					if len(inFlight) > 0 {
						e = inFlight[0]
					}
					// With W = 64 every SACK spans the window: a packet
					// waits for any later one, not for its answering PSN's.
					for q := range uncovered {
						if window > 64 && (q-e)&mask < 1<<23 && arrived[answering(q)] {
							if late == 0 {
								t.Errorf("PSN %#x (expected %#x): delivered, its answering PSN %#x too, and in no SACK since", q, e, answering(q))
							}
							late++
							delete(uncovered, q)
						}
					}
				}
				if late > 0 {
					t.Errorf("%d packets past the cumulative PSN in no SACK once their answering PSN had arrived", late)
				}
				// The last packet is answered only as the next A - 1
				// PSNs would be: a write's last packet asks for its SACK.
				// Here no packet is a write's last, so up to A - 1 PSNs at
				// the very end may wait for one.
				if len(uncovered) >= p.F.AckEvery {
					t.Errorf("%d packets delivered and in no SACK since; delivered %d dup %d beyond %d coalesced %d unknown %d notmine %d", len(uncovered),
						dst.Event(schema.NICEventDataDelivered), dst.Event(schema.NICEventDuplicate), dst.Event(schema.NICEventBeyondWindow), dst.Event(schema.NICEventAckCoalesced), dst.Event(schema.NICEventUnknownPacket), dst.Event(schema.NICEventNotMine))
				}
				t.Logf("%d SACKs for %d packets", atOnce, total)
			})
		}
	}
}
