package sim

import (
	"math"
	"math/bits"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// Wire framing every frame pays on a link beyond its own bytes: preamble
// and start delimiter (8), frame check sequence (4), inter-frame gap (12).
const wireOverhead = 24

// maxHeader is the most header bytes a packet of the simulation holds: an
// encapsulated data packet's headers are 134 bytes; answers and probes are
// shorter. Payload is not carried (Options.Payload aside): a packet's
// lengths say how much there is.
const maxHeader = 176

// packet is one frame in flight on the fabric. It holds no pointer, so
// that the garbage collector never scans the pool, the run's largest
// object; its payload, when the run carries bytes, is Sim.payloads'.
//
// A switch hop reads only its first 64 bytes: epoch, link, n and the
// header up to the end of the outer destination (byte 53). A packet is 192
// bytes, and Go's allocator puts a large array such as the pool's on a
// page boundary, so those bytes are one cache line. What a switch writes
// beyond them (high, inPort) only PFC reads, and only PFC runs write it.
type packet struct {
	epoch uint32 // the link's epoch when the packet was sent on it
	// link is the link it was last sent on, Sim.linkList's index + 1 (0: a
	// link no fault touches): the arrival checks it without reading the
	// receiving port, which at scale is a cache miss per hop.
	link int32
	n    uint16 // header bytes in hdr
	hdr  [maxHeader]byte
	// PFC: whether it is in the high-priority queue, and the port it came
	// in by on the switch that holds it (the ingress account it is counted
	// in).
	high   bool
	inPort int16
}

// wire is what the packet occupies on a link: its length by its outer
// header, and the framing.
func (pk *packet) wire() int32 { return wireBytes(pk.hdr[:pk.n]) }

// Device kinds.
const (
	kindNIC uint8 = iota
	kindT0
	kindT1
)

// device is a NIC or a switch, allocated the first time a packet or a
// fault touches it: a run on 8,192 hosts of a 131,072-host fabric never
// builds the rest.
type device struct {
	// What every hop reads first, together.
	id    int32
	kind  uint8
	down  bool // a switch that failed
	ports []port
	look  cachedLookup // switches
	sw    plan.Switch  // switches
	host  *host        // NICs
	// buf is a switch's shared buffer for data (nil: NICs, and switches
	// with PFC or a per-port limit; buffer.go).
	buf *sharedBuffer
	// rng is its random draws (red.go).
	rng stream
}

// port is one egress port of a device and the link it feeds, with its
// queue's state inline: a hop reads the port and its queue together, where
// a queue of its own cost a dependent cache miss per hop at scale (160
// bytes a port: 512-port switches take 80 KiB each).
type port struct {
	peer     int32 // device at the other end (-1: none)
	peerPort int16
	toHost   bool // faces a NIC: trims are TRIMMED_LASTHOP, no ECN; NIC-T0 delay
	// holding: the port is in its switch's sharedBuffer.holding.
	holding bool
	link    *linkState
	q       portQueue
}

// portQueue is a port's transmit state.
type portQueue struct {
	// busy is when the port has sent everything it has been given; hiBusy
	// the end of its last high-priority packet.
	busy, hiBusy int64
	// dataBytes is the bytes (frames, without framing) of the data packets
	// queued or being sent (RoCE's ECN marking counts them).
	dataBytes int64
	// The data packets queued or being sent, oldest first, with the times
	// they were given when queued: n of them, the first portRing in ring
	// (a ring from first), the rest in spill. Inline, the first few are
	// read with the port; at scale a list of its own was a cache miss on
	// most switch hops. With mrc-1k under a full permutation, 92% of the
	// times a port is asked, it holds at most 4.
	n     int32
	first uint8
	ring  [portRing]queued
	spill *spillQueue // nil until the port first holds more than portRing
	// pfc replaces all of the above when the run has PFC (pfc.go).
	pfc *losslessPort
}

// portRing is how many of a port's queued data packets it holds inline
// (a power of two).
const portRing = 4

// queued is a data packet on a port: when its first bit is sent (start,
// ps), when its last has left (end), and its bytes.
type queued struct {
	start, end int64
	bytes      int32
}

// spillQueue holds a port's queued data packets beyond its ring, oldest
// from head.
type spillQueue struct {
	q    []queued
	head int
}

// head is the oldest data packet queued; the queue holds one.
func (pt *portQueue) head() *queued { return &pt.ring[pt.first] }

// push queues e behind the rest.
func (pt *portQueue) push(e queued) {
	if pt.n < portRing {
		pt.ring[(int(pt.first)+int(pt.n))&(portRing-1)] = e
	} else {
		if pt.spill == nil {
			pt.spill = &spillQueue{}
		}
		// Few ports spill, and then a few packets: start small.
		pt.spill.q = appendDoubling(pt.spill.q, e, 4)
	}
	pt.n++
}

// pop drops the head, and moves the oldest spilled packet, if any, to the
// ring's place it leaves.
func (pt *portQueue) pop() {
	last := pt.first
	pt.first = (pt.first + 1) & (portRing - 1)
	pt.n--
	if pt.n >= portRing {
		sp := pt.spill
		pt.ring[last] = sp.q[sp.head]
		sp.q, sp.head = compact(sp.q, sp.head+1)
	}
}

// linkState is the faults' view of one cable (both directions): what the
// faults on it that are on make of it together (Sim.combine).
type linkState struct {
	down  bool
	epoch uint32  // bumped at every failure: what was on the link is lost
	loss  float64 // probability a packet is lost, each direction
	rate  int64   // millionths of the link's speed (fullRate: all of it)
	// downBy and lossBy are the faults its losses are charged to (the
	// per-fault figures): the one that took it down last, the loss on.
	downBy, lossBy int
	idx            int32 // its index in Sim.linkList + 1
	ends           [2]linkKey
	faults         []int // every fault on it, in the order given
	// upSince is when it last came back up (RoCE: routing takes it back
	// once it has been up for a convergence delay).
	upSince int64
}

// occupancy is how many data packets are queued or being sent at now.
func (pt *portQueue) occupancy(now int64) int {
	for pt.n > 0 && pt.head().end <= now {
		pt.dataBytes -= int64(pt.head().bytes)
		pt.pop()
	}
	return int(pt.n)
}

// compact returns a slice used as a queue from head on, reset once empty
// and moved to the front once more than half of it (and 4 entries) is
// behind head: the queue's memory stays within about twice what it has
// held at most. A busy port's queue may never empty, and with 64 entries
// (the rule before) every such port kept room for 128 or more however
// short its queue (TestBusyPortSpillStaysShort).
func compact[T any](q []T, head int) ([]T, int) {
	switch {
	case head == len(q):
		return q[:0], 0
	case head >= 4 && head*2 > len(q):
		n := copy(q, q[head:])
		return q[:n], 0
	}
	return q, head
}

// schedule gives the port a packet that takes ser ps to send (bytes of
// frame without framing) at now and returns when its last bit has left. Data is FIFO behind everything queued. A
// high-priority packet goes ahead of the queued data, as strict priority
// does: it waits only for the packet being sent (and earlier high-priority
// packets), and the data queued after it starts later by its
// serialization. Data packets already queued keep the departure computed
// when they were queued: the queue is computed once per packet, not
// re-simulated, so a data packet overtaken by k high-priority packets
// leaves up to k serializations of those (134 bytes: 11 ns at 100 Gb/s
// each) early. Docs: the simulator's section of docs/protocol.md.
func (pt *portQueue) schedule(now, ser, bytes int64, high bool) (start, end int64) {
	if !high {
		start = max(now, pt.busy)
		end = start + ser
		pt.busy = end
		// Drop what has left first: a port that only ever sends data (a
		// NIC's, which trims nothing) is never asked its occupancy, and
		// would keep every packet it ever sent.
		pt.occupancy(now)
		pt.push(queued{start: start, end: end, bytes: int32(bytes)})
		pt.dataBytes += bytes
		return start, end
	}
	start = max(now, pt.hiBusy)
	if pt.occupancy(now) > 0 && pt.head().start < now {
		start = max(start, pt.head().end) // the data packet being sent
	}
	end = start + ser
	pt.hiBusy = end
	if pt.busy > start {
		pt.busy += ser
	} else {
		pt.busy = end
	}
	return start, end
}

// linkDelays are the fabric's one-way propagation delays, ps: NIC-T0 and
// T0-T1 links.
func linkDelays(f *fabric.Fabric) (nicT0, t0T1 int64) {
	return int64(f.Links.NICT0Ns) * 1000, int64(f.Links.T0T1Ns) * 1000
}

// fullRate is a link at its whole speed, in millionths of it: a --rate
// fault slows a link to fewer (linkState.rate), a share kept to a
// millionth rather than rounded to a whole percent.
const fullRate = 1_000_000

// serializationPS is how long wire bytes take on a port of gbps Gb/s
// running at ppm millionths of its speed, in picoseconds: exactly wire x
// 8000 / gbps x 1e6 / ppm (a byte takes 8000 ps at 1 Gb/s), rounded down,
// frame by frame. It used to be wire x (8000 / gbps in integers), exact
// only at the speeds that divide 8000 (the presets' 100, 200 and 800
// Gb/s): 300 Gb/s ran 2.5% fast, 3,200 Gb/s 25%, 9,000 Gb/s took no time.
// Rounding down gives those speeds, and their --rate faults
// (floor(wire x 8000 / gbps x 100 / percent)), the times they had;
// elsewhere a frame is at most 1 ps early (a 4 KiB frame takes 10,635 ps
// even at 3,200 Gb/s).
func serializationPS(wire, gbps, ppm int64) int64 {
	num := uint64(wire) * 8000 * fullRate // a 64 KiB frame: 5.3e14
	hi, den := bits.Mul64(uint64(gbps), uint64(ppm))
	if hi != 0 || den > num {
		return 0 // a speed no frame fills a picosecond of
	}
	return int64(num / den)
}

// wholePSPerByte is 8000 / gbps when that is a whole number of
// picoseconds a byte (the presets' speeds), which a frame's serialization
// then multiplies without a division; 0 otherwise.
func wholePSPerByte(gbps int64) int64 {
	if gbps > 0 && 8000%gbps == 0 {
		return 8000 / gbps
	}
	return 0
}

// bytesIn is how many bytes a port of gbps Gb/s sends in p picoseconds,
// rounded up: p x gbps / 8000. A product too large for 64 bits (a speed
// no buffer could hold a round trip of) gives a count beyond any buffer.
func bytesIn(p, gbps int64) int64 {
	const beyond = math.MaxInt64 / 4 // room to add frames to it
	hi, lo := bits.Mul64(uint64(p), uint64(gbps))
	if hi >= 8000 {
		return beyond
	}
	q, r := bits.Div64(hi, lo, 8000)
	if r > 0 {
		q++
	}
	return int64(min(q, beyond))
}
