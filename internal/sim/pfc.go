package sim

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// PFC (IEEE 802.1Qbb priority flow control) makes the data class lossless:
// a switch that holds too many of the data packets an ingress port brought
// in pauses the device upstream of that port, which stops starting data
// packets on the link until it is resumed. The model and its defaults are
// described in docs/protocol.md, section 11 ("The simulator", PFC).
//
// Ports run an explicit model when PFC is on (lossless below): a FIFO per
// priority and an event when a frame has left, because a queue whose
// departures are computed at enqueue (portQueue.schedule) cannot stop when
// it is paused. Without PFC the analytical queue runs unchanged.

// PFCConfig turns PFC on. Thresholds are in bytes of the data frames a
// switch holds for one ingress port (headers and payload; preamble, FCS and
// gap are not buffered); 0 takes the default.
type PFCConfig struct {
	// XOFFBytes: at or above it the switch sends PAUSE upstream. Default:
	// the ingress port's buffer less the headroom (PFCDefaults).
	XOFFBytes int64
	// XONBytes: at or below it, once paused, the switch sends RESUME.
	// Default: XOFF less two of the run's largest frames.
	XONBytes int64
}

// PFCThresholds are a run's PFC figures, bytes.
type PFCThresholds struct {
	// Buffer is each switch ingress port's lossless buffer: what
	// trim.queue_packets of the run's largest frames take.
	Buffer int64 `json:"buffer_bytes"`
	// Headroom is the most that can still arrive on a port once it has
	// decided to pause its upstream, on the fabric's slowest-to-stop link.
	Headroom int64 `json:"headroom_bytes"`
	XOFF     int64 `json:"xoff_bytes"`
	XON      int64 `json:"xon_bytes"`
}

// pauseFrameWire is what a PAUSE (or RESUME) frame takes on the wire: a
// minimum Ethernet frame (60 bytes and its FCS) and the framing wireBytes
// counts beside the frame (wireOverhead includes the FCS).
const pauseFrameWire = 60 + wireOverhead

// largestFrame is the most bytes a frame of a run with this segment
// holds (headers and payload, as buffered): the simulation's largest
// header and a full segment.
func largestFrame(segment int) int64 { return int64(maxHeader + segment) }

// PFCDefaults are the thresholds a run of fabric f with this segment size
// uses when PFCConfig leaves them 0, and the buffer and headroom they are
// derived from.
//
// The headroom is what can still arrive once a switch has decided, on a
// packet's arrival, to pause its upstream: the PAUSE frame waits for the
// frame the switch is sending on that link (one largest frame), takes its
// own wire time, and crosses the link (one-way delay); the upstream then
// finishes the frame it has started (one largest frame), and what it sent
// before the PAUSE arrived is still on the link (one-way delay). At the
// link's rate that is two delays' bytes, two largest frames and the PAUSE
// frame; add one more largest frame for the packet that crossed XOFF
// (the port held less than XOFF before it). Links differ in delay only
// (a --rate fault slows both directions of a link alike, which shortens
// the bytes sent in the same time): the longer of links.nic_t0_ns and
// links.t0_t1_ns sets it, one XOFF for every port.
// XOFF leaves the headroom free below the buffer, so that a lossless port
// never overflows; XON sits two largest frames below XOFF, so that one
// departure does not resume a port the next arrival pauses again, while
// the port still holds far more than a round trip's bytes when its
// upstream resumes (the egress does not run dry waiting for it).
func PFCDefaults(f *fabric.Fabric, segment int) PFCThresholds {
	frame := largestFrame(segment)
	frameWire := frame + wireOverhead
	delay := int64(max(f.Links.NICT0Ns, f.Links.T0T1Ns)) * 1000
	inFlight := bytesIn(2*delay, int64(f.PortSpeedGbps))
	t := PFCThresholds{
		Buffer:   int64(f.Trim.QueuePackets) * frame,
		Headroom: inFlight + 3*frameWire + pauseFrameWire,
	}
	t.XOFF = t.Buffer - t.Headroom
	t.XON = max(t.XOFF-2*frame, 0)
	return t
}

// PFCThresholdError is a PFC threshold a run cannot use. Threshold is
// "xoff" or "xon"; "" when the fabric itself leaves no room for PFC.
type PFCThresholdError struct {
	Threshold string
	Bytes     int64
	Reason    string
}

func (e *PFCThresholdError) Error() string {
	if e.Threshold == "" {
		return "PFC: " + e.Reason
	}
	return fmt.Sprintf("PFC %s %d bytes: %s", e.Threshold, e.Bytes, e.Reason)
}

// Resolve gives the thresholds c asks for on fabric f with this segment,
// or why they cannot be lossless.
func (c PFCConfig) Resolve(f *fabric.Fabric, segment int) (PFCThresholds, error) {
	t := PFCDefaults(f, segment)
	if t.XOFF <= 0 {
		return t, &PFCThresholdError{Reason: fmt.Sprintf("an ingress port's buffer (trim.queue_packets %d x %d-byte frames = %d bytes) is no larger than the headroom PFC needs (%d bytes: two link delays at its rate, three largest frames and the PAUSE frame): raise trim.queue_packets",
			f.Trim.QueuePackets, largestFrame(segment), t.Buffer, t.Headroom)}
	}
	for _, v := range []struct {
		threshold string
		bytes     int64
	}{{"xoff", c.XOFFBytes}, {"xon", c.XONBytes}} {
		if v.bytes < 0 {
			return t, &PFCThresholdError{Threshold: v.threshold, Bytes: v.bytes, Reason: "a threshold is a size: want 0 (the default) or more"}
		}
	}
	if c.XOFFBytes > 0 {
		if c.XOFFBytes > t.XOFF {
			return t, &PFCThresholdError{Threshold: "xoff", Bytes: c.XOFFBytes, Reason: fmt.Sprintf("leaves %d bytes below the %d-byte buffer of an ingress port, and what arrives after PAUSE is sent needs %d (two link delays at its rate, three largest frames and the PAUSE frame): want at most %d",
				t.Buffer-c.XOFFBytes, t.Buffer, t.Headroom, t.XOFF)}
		}
		t.XOFF = c.XOFFBytes
		t.XON = max(t.XOFF-2*largestFrame(segment), 0)
	}
	if c.XONBytes > 0 {
		if c.XONBytes >= t.XOFF {
			return t, &PFCThresholdError{Threshold: "xon", Bytes: c.XONBytes, Reason: fmt.Sprintf("want below XOFF (%d bytes): a port at XON must no longer be at XOFF", t.XOFF)}
		}
		t.XON = c.XONBytes
	}
	return t, nil
}

// ingressAccount is a switch ingress port's share of the lossless buffer:
// the data bytes it brought in that the switch still holds in any egress
// queue (queued or being sent), and whether it has paused its upstream.
type ingressAccount struct {
	held   int64
	paused bool // PAUSE sent, RESUME not yet
}

// admit counts a data frame the port brought in and reports whether the
// port must now pause its upstream.
func (a *ingressAccount) admit(bytes int64, t *PFCThresholds) (pause bool) {
	a.held += bytes
	if !a.paused && a.held >= t.XOFF {
		a.paused = true
		return true
	}
	return false
}

// release uncounts a data frame that has left the switch and reports
// whether the port must now resume its upstream.
func (a *ingressAccount) release(bytes int64, t *PFCThresholds) (resume bool) {
	a.held -= bytes
	if a.paused && a.held <= t.XON {
		a.paused = false
		return true
	}
	return false
}

// fifo is a queue of packets (indices into the pool).
type fifo struct {
	q    []int32
	head int
}

func (f *fifo) len() int     { return len(f.q) - f.head }
func (f *fifo) push(i int32) { f.q = append(f.q, i) }

func (f *fifo) pop() int32 {
	i := f.q[f.head]
	f.head++
	f.q, f.head = compact(f.q, f.head)
	return i
}

// take empties the queue, returning what it held in order.
func (f *fifo) take() []int32 {
	out := append([]int32(nil), f.q[f.head:]...)
	f.q, f.head = f.q[:0], 0
	return out
}

// losslessPort is a port's explicit transmit state when PFC is on, and the
// account of the port as an ingress (switches).
type losslessPort struct {
	high, low fifo
	// control holds the PAUSE (true) and RESUME (false) frames waiting: a
	// MAC control frame goes next, ahead of both queues, but does not
	// interrupt the frame on the wire.
	control []bool
	// busy: a frame is on the wire; an evPortFree is due at its end. txLow
	// says it is a data packet; txIn and txBytes are the ingress account it
	// is released from when it has left (txIn -1: none, a NIC's or a
	// control frame).
	busy    bool
	txLow   bool
	txIn    int16
	txBytes int64
	// lowBytes are the bytes (frames without framing) of the data packets
	// queued or being sent, txLowBytes the one being sent's: RoCE's ECN
	// marking counts them.
	lowBytes, txLowBytes int64
	// paused: the device downstream has paused this port's data since
	// pausedAt. everPaused counts the port in the result.
	paused     bool
	everPaused bool
	pausedAt   int64
	acct       ingressAccount
}

// occupancy is the data packets queued or being sent: the switch's trim
// and ECN thresholds count these.
func (x *losslessPort) occupancy() int {
	n := x.low.len()
	if x.busy && x.txLow {
		n++
	}
	return n
}

// queuedBytes is the bytes of the data packets queued or being sent.
func (x *losslessPort) queuedBytes() int64 { return x.lowBytes }

// lossless returns port out's explicit state, allocating it.
func (pt *port) lossless() *losslessPort {
	if pt.q.pfc == nil {
		pt.q.pfc = &losslessPort{txIn: -1}
	}
	return pt.q.pfc
}

// enqueueLossless gives port out of device d packet pi (its link checks
// passed) on the explicit queue: with PFC, a switch counts a data packet
// in its ingress port's account, pausing that port's upstream at XOFF.
func (s *Sim) enqueueLossless(d *device, out int, pi int32, high bool) {
	x := d.ports[out].lossless()
	if high {
		x.high.push(pi)
	} else {
		if d.kind != kindNIC && s.pfc != nil {
			pk := s.pkt(pi)
			in := d.ports[pk.inPort].lossless()
			bytes := int64(pk.wire() - wireOverhead)
			if in.acct.held+bytes > s.pfc.Buffer {
				// The headroom did not hold: the thresholds check makes this
				// impossible; a lossless drop is reported as a tail drop.
				s.lost(pi, -1, lostTail)
				return
			}
			if in.acct.admit(bytes, s.pfc) {
				s.pfcFrame(d, int(pk.inPort), true)
			}
			s.res.PFC.MaxHeldBytes = max(s.res.PFC.MaxHeldBytes, in.acct.held)
		}
		x.low.push(pi)
		x.lowBytes += int64(s.pkt(pi).wire() - wireOverhead)
		if d.buf != nil {
			d.buf.add(int64(s.pkt(pi).wire() - wireOverhead))
		}
	}
	if !x.busy {
		s.startNext(d, out)
	}
}

// pfcFrame queues a PAUSE (pause) or RESUME frame on device d's port n,
// towards the device upstream of that ingress port.
func (s *Sim) pfcFrame(d *device, n int, pause bool) {
	pt := &d.ports[n]
	if pt.peer < 0 || pt.link != nil && pt.link.down {
		return
	}
	x := pt.lossless()
	x.control = append(x.control, pause)
	if pause {
		s.res.PFC.Pauses++
	} else {
		s.res.PFC.Resumes++
	}
	if !x.busy {
		s.startNext(d, n)
	}
}

// startNext starts port out's next frame, if it is idle and has one it
// may send: a control frame, else high priority, else data unless paused.
func (s *Sim) startNext(d *device, out int) {
	pt := &d.ports[out]
	x := pt.q.pfc
	if x.busy {
		return
	}
	delay := s.linkDelay(d, pt)
	var epoch uint32
	if pt.link != nil {
		epoch = pt.link.epoch
	}
	var wire int64
	pi, control, pause := int32(-1), false, false
	switch {
	case len(x.control) > 0:
		control, pause = true, x.control[0]
		x.control = x.control[1:]
		wire = pauseFrameWire
	case x.high.len() > 0:
		pi = x.high.pop()
	case x.low.len() > 0 && !x.paused:
		pi = x.low.pop()
		x.txLow = true
	default:
		return
	}
	if pi >= 0 {
		pk := s.pkt(pi)
		wire = int64(pk.wire())
		if x.txLow {
			x.txLowBytes = int64(pk.wire() - wireOverhead)
			if d.kind != kindNIC {
				x.txIn, x.txBytes = pk.inPort, x.txLowBytes
			}
		}
	}
	end := s.now + s.serialize(pt, wire)
	x.busy = true
	// The port's own event first: at a zero delay it runs before the
	// arrival, which may reuse nothing of it anyway (txIn, txBytes).
	s.q.push(event{at: end, kind: evPortFree, dev: d.id, port: int16(out)})
	if control {
		var arg int32
		if pause {
			arg = 1
		}
		s.schedule(event{at: end + delay, kind: evPause, dev: pt.peer, port: pt.peerPort, arg: arg, gen: epoch})
		return
	}
	s.schedule(event{at: end + delay, kind: evArrive, dev: pt.peer, port: pt.peerPort, arg: pi})
}

// portFree: device dev's port out has sent its frame; the data packet it
// was leaves its ingress account, and the port starts its next frame.
func (s *Sim) portFree(dev int32, out int16) {
	d := s.devs[dev]
	x := d.ports[out].q.pfc
	if x.txLow {
		x.lowBytes -= x.txLowBytes
		if d.buf != nil {
			d.buf.held -= x.txLowBytes
		}
	}
	x.busy, x.txLow = false, false
	if x.txIn >= 0 {
		in := x.txIn
		x.txIn = -1
		s.releaseHeld(d, int(in), x.txBytes)
	}
	s.startNext(d, int(out))
}

// releaseHeld uncounts bytes from device d's ingress port in, resuming its
// upstream at XON.
func (s *Sim) releaseHeld(d *device, in int, bytes int64) {
	if s.pfc == nil {
		return // explicit queues without PFC keep no account
	}
	if d.ports[in].lossless().acct.release(bytes, s.pfc) {
		s.pfcFrame(d, in, false)
	}
}

// pauseArrive: a PAUSE (pause) or RESUME frame reaches device dev's port
// out, sent on the link's epoch gen (one sent before the link failed is
// lost with it).
func (s *Sim) pauseArrive(dev int32, out int16, pause bool, gen uint32) {
	d := s.devs[dev]
	pt := &d.ports[out]
	if ls := pt.link; ls != nil && (ls.down || ls.epoch != gen) || d.down {
		return
	}
	x := pt.lossless()
	switch {
	case pause && !x.paused:
		x.paused, x.everPaused, x.pausedAt = true, true, s.now
	case !pause && x.paused:
		x.paused = false
		s.pausedPS += s.now - x.pausedAt
		s.startNext(d, int(out))
	}
}

// linkDownLossless: link ls has failed. What its ends' ports had queued is
// lost (as the analytical queue loses it on arrival), and neither end stays
// paused: a real PAUSE expires unless refreshed, and nothing is refreshed
// over a dead link, so no port waits for a RESUME that cannot come. The
// ends' ingress accounts are kept: they still hold what the link brought
// in, and linkUpLossless passes their state across when it returns.
func (s *Sim) linkDownLossless(ls *linkState) {
	for _, k := range ls.ends {
		d := s.devs[k.dev]
		if d == nil || d.ports[k.port].q.pfc == nil {
			continue
		}
		sh := s.shard(k.dev) // the end's packets are in its worker's pool; what it sends, its worker sends
		x := d.ports[k.port].q.pfc
		x.control = x.control[:0]
		if x.paused {
			x.paused = false
			sh.pausedPS += sh.now - x.pausedAt
		}
		dropped := append(x.high.take(), x.low.take()...)
		x.lowBytes = 0
		if x.busy && x.txLow {
			x.lowBytes = x.txLowBytes // still on the wire: its evPortFree uncounts it
		}
		for _, pi := range dropped {
			pk := sh.pkt(pi)
			if d.kind != kindNIC && !pk.high {
				sh.releaseHeld(d, int(pk.inPort), int64(pk.wire()-wireOverhead))
				if d.buf != nil {
					d.buf.held -= int64(pk.wire() - wireOverhead)
				}
			}
			sh.lost(pi, ls.downBy, lostDown)
		}
	}
}

// linkUpLossless: link ls is back. Each end starts paused if the other end
// still holds enough of what the link brought in to have it paused, as if
// that end's refreshed PAUSE were the first frame across: a switch that
// reached XOFF before the failure must not be sent a headroom's worth more
// on top (the link's own RESUME comes at XON as usual).
func (s *Sim) linkUpLossless(ls *linkState) {
	for i, k := range ls.ends {
		other := ls.ends[1-i]
		od := s.devs[other.dev]
		if od == nil || od.ports[other.port].q.pfc == nil || !od.ports[other.port].q.pfc.acct.paused {
			continue
		}
		d := s.devs[k.dev] // it exists: it sent what the other end holds
		if d == nil {
			continue
		}
		x := d.ports[k.port].lossless()
		if !x.paused {
			x.paused, x.everPaused, x.pausedAt = true, true, s.now
		}
	}
}

// pfcResult completes the PFC figures: ports still paused at the end count
// their time until then.
func (s *Sim) pfcResult() {
	r := s.res.PFC
	paused := s.pausedPS
	for _, d := range s.devs {
		if d == nil {
			continue
		}
		for n := range d.ports {
			if q := &d.ports[n].q; q.pfc != nil {
				x := q.pfc
				if x.everPaused {
					r.PausedPorts++
				}
				if x.paused {
					paused += s.now - x.pausedAt
				}
			}
		}
	}
	r.PausedPortUS = us(paused)
}
