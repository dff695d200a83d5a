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

// sharedBuffer is one switch's packet buffer for data packets: its size,
// the data bytes it holds (queued or being sent on any of its ports), and
// for the default queue, when each of them leaves (that queue computes
// departures when a packet is queued, so the switch's total is counted
// down as they pass).
type sharedBuffer struct {
	size  int64
	alpha float64
	held  int64
	ends  endHeap
}

// admits is the dynamic threshold: a data packet of size bytes for a port
// holding q data bytes is admitted when q + size <= alpha x (size of the
// buffer - held). held counts every port's data, the port's own too.
func (b *sharedBuffer) admits(q, size int64) bool {
	return float64(q+size) <= b.alpha*float64(b.size-b.held)
}

// add counts a data packet of bytes the switch now holds until end (ps;
// -1: the explicit queue, which uncounts it itself).
func (b *sharedBuffer) add(bytes, end int64) {
	b.held += bytes
	if end >= 0 {
		b.ends.push([2]int64{end, bytes})
	}
}

// drain uncounts the data packets of the default queue that have left by
// now.
func (b *sharedBuffer) drain(now int64) {
	for len(b.ends) > 0 && b.ends[0][0] <= now {
		b.held -= b.ends.pop()[1]
	}
}

// endHeap is a min-heap of (departure, bytes).
type endHeap [][2]int64

func (h *endHeap) push(e [2]int64) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p][0] <= a[i][0] {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *endHeap) pop() [2]int64 {
	a := *h
	e := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a[r][0] < a[l][0] {
			m = r
		}
		if a[i][0] <= a[m][0] {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return e
}
