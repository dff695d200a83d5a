package sim

import (
	"fmt"
	"math"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// A switch of the class this fabric is built of shares one on-chip packet
// buffer among all its ports, and a congested port may take a share of
// what is free: Broadcom's dynamic threshold (SONiC's dynamic_th, alpha =
// 2^dynamic_th) admits a packet to an egress queue while the queue's
// bytes and the packet's are at most alpha x (the buffer - the bytes the
// whole switch holds). The simulator's switches do so for data packets
// of every transport alike (docs/protocol.md 11.2, *Switch buffer*).
// Control and trimmed packets are not counted: they are a few hundred
// bytes at strict priority, which a switch keeps in reserved space.

// Broadcom Tomahawk 5 (BCM78900, 51.2 Tb/s: 64 x 800 GbE) has a 165.2 MB
// shared packet buffer; the default buffer of a simulated switch is that
// buffer's density, bytes per Gb/s of port capacity, times its own ports'
// capacity.
const (
	th5BufferBytes = 165_200_000
	th5Gbps        = 51_200
)

// DefaultBufferAlpha is SONiC's default for its lossy queues' buffer
// profile, dynamic_th 0: alpha = 2^0 = 1, a congested queue alone may
// take half of the buffer, two a third each.
const DefaultBufferAlpha = 1.0

// SwitchBufferPerPort (Options.SwitchBuffer) gives every switch port its
// own limit instead of a shared buffer: a data packet that finds
// trim.queue_packets data packets queued is tail-dropped, as BMv2's
// switch does (the simulator's rule before the shared buffer).
const SwitchBufferPerPort = -1

// DefaultSwitchBuffer is the buffer of a switch of ports ports at gbps
// Gb/s each: a Tomahawk 5's bytes per Gb/s times its capacity, rounded
// down to a byte. A 64-port 800 Gb/s switch has 165,200,000 bytes.
func DefaultSwitchBuffer(ports int, gbps int64) int64 {
	return int64(ports) * gbps * th5BufferBytes / th5Gbps
}

// SwitchBuffers are a run's switch buffers, bytes, for a T0 and a T1, and
// the dynamic threshold's alpha (PerPort: neither, trim.queue_packets a
// port).
type SwitchBuffers struct {
	T0Bytes int64   `json:"t0_bytes,omitempty"`
	T1Bytes int64   `json:"t1_bytes,omitempty"`
	Alpha   float64 `json:"alpha,omitempty"`
	PerPort bool    `json:"per_port_queue,omitempty"`
}

// ResolveSwitchBuffers gives the buffers opt asks for on fabric f, or why
// it cannot have them (the errors name the option's value, not a flag).
func ResolveSwitchBuffers(f *fabric.Fabric, opt Options) (SwitchBuffers, error) {
	alpha := opt.BufferAlpha
	if alpha == 0 {
		alpha = DefaultBufferAlpha
	} else if err := CheckBufferAlpha(alpha); err != nil {
		return SwitchBuffers{}, err
	}
	if opt.PFC != nil {
		if opt.SwitchBuffer != 0 || opt.BufferAlpha != 0 {
			return SwitchBuffers{}, fmt.Errorf("a switch buffer with PFC: PFC's data is lossless, bounded by each ingress port's buffer (trim.queue_packets largest frames), not dropped at a shared buffer's threshold")
		}
		return SwitchBuffers{}, nil
	}
	p := plan.New(f)
	gbps := int64(f.PortSpeedGbps)
	t0 := DefaultSwitchBuffer(p.Ports(plan.Switch{Role: plan.RoleT0}), gbps)
	t1 := DefaultSwitchBuffer(p.Ports(plan.Switch{Role: plan.RoleT1}), gbps)
	switch b := opt.SwitchBuffer; {
	case b == SwitchBufferPerPort:
		if opt.BufferAlpha != 0 {
			return SwitchBuffers{}, fmt.Errorf("buffer alpha %g: a per-port queue limit has no dynamic threshold", opt.BufferAlpha)
		}
		return SwitchBuffers{PerPort: true}, nil
	case b < 0:
		return SwitchBuffers{}, fmt.Errorf("switch buffer %d bytes: want a size (0: the default)", b)
	case b > 0 && b < largestFrame(max(opt.Segment, 1)):
		return SwitchBuffers{}, fmt.Errorf("switch buffer %d bytes: want at least one of the run's largest frames (%d bytes)", b, largestFrame(max(opt.Segment, 1)))
	case b > 0:
		t0, t1 = b, b
	}
	return SwitchBuffers{T0Bytes: t0, T1Bytes: t1, Alpha: alpha}, nil
}

// CheckBufferAlpha refuses an alpha that is no dynamic threshold.
func CheckBufferAlpha(a float64) error {
	if math.IsNaN(a) || a <= 0 || a > maxBufferAlpha {
		return fmt.Errorf("buffer alpha %g: want above 0 and at most %d (SONiC's dynamic_th 0 is 1)", a, maxBufferAlpha)
	}
	return nil
}

// maxBufferAlpha is the largest alpha taken: Broadcom's dynamic_th
// reaches 3 (alpha 8); SAI's enumeration goes to 2^6.
const maxBufferAlpha = 64

// sharedBuffer is one switch's packet buffer for data packets: its size
// and the data bytes it holds, queued or being sent on any of its ports.
//
// The explicit queue (PFC, --exact-queues) counts a packet in when it is
// queued and out when it has been sent. The default queue computes each
// packet's departure when it is queued, and its ports drop what has left
// only when next asked (portQueue.occupancy): held is then the sum of its
// ports' data bytes as each was last asked, which is never less than what
// the switch really holds. That is enough to admit a packet; when it is
// not, settle asks every port holding data, which makes held exact, before
// a packet is refused. The switch used to keep its own heap of every
// departure for this: a second copy of what its ports know, and at scale
// a cache miss of its own on every hop.
type sharedBuffer struct {
	size  int64
	alpha float64
	held  int64
	// holding are the ports held counts data of (the default queue): a
	// port is added when it is given data, and dropped when settle finds
	// it empty.
	holding []int16
}

// admits is the dynamic threshold: a data packet of size bytes for a port
// holding q data bytes is admitted when q + size <= alpha x (size of the
// buffer - held). held counts every port's data, the port's own too.
func (b *sharedBuffer) admits(q, size int64) bool {
	return float64(q+size) <= b.alpha*float64(b.size-b.held)
}

// add counts a data packet of bytes the explicit queue now holds; it
// uncounts it itself when the packet leaves.
func (b *sharedBuffer) add(bytes int64) { b.held += bytes }

// occupancy is the data occupancy of switch d's port out at now on the
// default queue (portQueue.occupancy), its buffer told of the bytes that
// have left. Every question to a switch port's default queue goes through
// it or through send: one that did not would leave held counting bytes
// gone for good.
func (d *device) occupancy(out int, now int64) int {
	q := &d.ports[out].q
	if d.buf == nil {
		return q.occupancy(now)
	}
	before := q.dataBytes
	n := q.occupancy(now)
	d.buf.held += q.dataBytes - before
	return n
}

// track tells switch d's buffer what its port out's default queue holds
// now that it has been asked or given a packet: before is the port's data
// bytes until then.
func (d *device) track(out int, before int64) {
	pt := &d.ports[out]
	d.buf.held += pt.q.dataBytes - before
	if pt.q.dataBytes > 0 && !pt.holding {
		pt.holding = true
		d.buf.holding = append(d.buf.holding, int16(out))
	}
}

// settle asks every port of switch d that holds data what it still holds
// at now, so that d's buffer counts exactly the data not yet sent.
func (d *device) settle(now int64) {
	b := d.buf
	kept := b.holding[:0]
	for _, out := range b.holding {
		pt := &d.ports[out]
		d.occupancy(int(out), now)
		if pt.q.dataBytes > 0 {
			kept = append(kept, out)
		} else {
			pt.holding = false
		}
	}
	b.holding = kept
}
