package transport

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"
)

// Mode is the transport a QP runs.
type Mode uint8

const (
	// MRC: data DSCP TRIMMABLE, the NIC sprays over the EV set, selective
	// retransmission (trim NACK, SACK gap, timeout).
	MRC Mode = iota
	// RoCE is the RoCEv2 RC baseline: the QP is opened single-path (one
	// fixed EV, the QP table's single_path flag: the caller does that),
	// data DSCP NO_TRIM, go-back-N on a sequence error or a timeout.
	RoCE
)

func (m Mode) String() string {
	switch m {
	case MRC:
		return "mrc"
	case RoCE:
		return "roce"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// CongestionControl is the congestion control a QP runs (docs/protocol.md
// section 10, "Congestion control").
type CongestionControl uint8

const (
	// CCDefault is the mode's own: DCTCP for MRC, DCQCN for RoCE.
	CCDefault CongestionControl = iota
	// CCOff: none. The QP keeps its fixed Window and sends as fast as the
	// window allows, as the engine did before it had congestion control.
	CCOff
	// DCTCP (RFC 8257) on the SACKs' ECN echoes, with a reaction to trim
	// NACKs: a congestion window, in packets, at most Window. MRC only.
	DCTCP
	// DCQCN (Zhu et al., SIGCOMM 2015) with NVIDIA ConnectX's firmware
	// defaults: a paced rate, cut on CNPs (here a SACK with mark
	// SKIP_ONCE, at most one per 4 µs). RoCE only.
	DCQCN
	// Delay: DCTCP's window and trim reactions, with cuts driven by RTT
	// above a target (Swift's rule, Kumar et al., SIGCOMM 2020) instead
	// of ECN marks. MRC only; opt-in (docs/protocol.md 10).
	Delay
)

func (c CongestionControl) String() string {
	switch c {
	case CCDefault:
		return "default"
	case CCOff:
		return "off"
	case DCTCP:
		return "dctcp"
	case DCQCN:
		return "dcqcn"
	case Delay:
		return "delay"
	}
	return fmt.Sprintf("cc(%d)", uint8(c))
}

// SinglePath reports whether a QP in this mode must be opened on the NIC
// with single_path=1 (docs/protocol.md section 4: the QP's first slot only, no
// rotation, no failure detection).
func (m Mode) SinglePath() bool { return m == RoCE }

// Ethernet holds the MAC addresses the engine writes in its frames; no part
// of the fabric forwards on them.
type Ethernet struct {
	Dst, Src [6]byte
}

// Clock is the engine's time source. Tests inject a virtual one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed; only Run
	// uses it, to wait for the next retransmission deadline.
	After(d time.Duration) <-chan time.Time
}

// ElapsedClock is a Clock that also tells its time as a duration since a
// fixed origin: Now() is always Origin().Add(Elapsed()). An engine on one
// reads Elapsed and never builds a time.Time on its hot path (a simulator's
// virtual clock); on any other Clock it does its arithmetic on durations
// since its own creation all the same, from Now.
type ElapsedClock interface {
	Clock
	Origin() time.Time
	Elapsed() time.Duration
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock is the wall clock.
var SystemClock Clock = systemClock{}

// Config is an engine's: one engine per NIC host port.
type Config struct {
	Addr  netip.Addr // this host's IPv6 address: the source of its data
	MAC   Ethernet
	Clock Clock // nil: SystemClock
	// DSCP of data (profile defaults TRIMMABLE 4 for MRC, NO_TRIM 5 for
	// RoCE when 0).
	DSCPTrimmable, DSCPNoTrim uint8
	PKey                      uint16 // 0: 0xFFFF, the default partition
	// VirtualPayload is a simulator's seam: writes may carry no content
	// (WriteRequest.Length), their frames are headers whose lengths count
	// the payload, and memory regions may be virtual (RegisterVirtualMR):
	// placement is tracked, nothing is stored. A real engine leaves it off.
	VirtualPayload bool
	// NICRate is the NIC's speed in bits per second of the frames the
	// engine hands it (0: unpaced). With it, the engine is the NIC's
	// transmit scheduler too: a packet is sent when the NIC could put it on
	// the wire, the QPs with something to send taking turns, one packet
	// each. Otherwise a host with many QPs (an all-to-all) hands its NIC
	// every window at once, and each packet's RTT then includes the time
	// it queued behind the other QPs' windows in the NIC: with 31 QPs of 64
	// packets at 800 Gb/s, 84 µs.
	NICRate float64
	// NICFrameOverhead is what each frame costs the NIC's wire beyond the
	// bytes the engine hands it, for NICRate's pacing: the outer IPv6
	// header the NIC adds (40) and Ethernet's preamble, FCS and gap (24).
	NICFrameOverhead int
	// SingleGoroutine promises that one goroutine alone ever calls the
	// engine, its QPs and its transfers, and never Run: the engine then
	// takes no lock. A simulator driving thousands of engines on a virtual
	// clock sets it; the lab, whose Run and callers share an engine across
	// goroutines, must not.
	SingleGoroutine bool
}

// Default QP parameters.
const (
	DefaultSegment          = 1024
	DefaultWindow           = 64
	DefaultReorderThreshold = 3
	DefaultInitialRTO       = 10 * time.Millisecond
	DefaultMinRTO           = 1 * time.Millisecond
	DefaultMaxRTO           = 1 * time.Second
	// DefaultDelayTarget is Delay's tolerated queueing delay: 4 µs, 24
	// packets of 4 KiB at 200 Gb/s. Of 1 to 8 µs, on an all-to-all on
	// small, it gave the lowest p99 step slowdown at 8 MiB that did not
	// cost 32 MiB steps (docs/protocol.md 10).
	DefaultDelayTarget = 4 * time.Microsecond
	// DefaultLineRate is the rate DCQCN starts at and never exceeds, in
	// bits per second of the frames the engine hands its NIC, when
	// QPConfig.LineRate is 0. Set LineRate to the port the QP sends
	// through: a rate above it only makes the first cuts bite later (each
	// CNP cuts by at most half), one below it cuts deeper than DCQCN would.
	DefaultLineRate = 400e9

	// DefaultAckEvery is the receiving NIC's SACK coalescing the engine
	// assumes when QPConfig.AckEvery is 0: the fabric's default
	// nic.ack_every (compiler/fabric.DefaultAckEvery; a test holds them
	// equal).
	DefaultAckEvery = 3

	// DefaultReceiveWindow is the receiving NIC's window when
	// QPConfig.ReceiveWindow is 0: 64 PSNs, one SACK bitmap, the least a
	// fabric's nic.window_packets may be.
	DefaultReceiveWindow = 64
	// MaxReceiveWindow is the widest window a NIC program holds
	// (compiler/fabric.MaxReceiveWindow; a test holds them equal).
	MaxReceiveWindow = 4096
)

// QPConfig opens one reliable-connection QP on an engine. The same QPN
// receives the peer's data and the answers to this QP's own data.
type QPConfig struct {
	LocalQPN, PeerQPN uint32 // 24 bits each
	Peer              netip.Addr
	PeerMAC           [6]byte
	Mode              Mode
	// StartPSN is the PSN of this QP's first data packet, as opened on
	// both NICs (qp_recv's start_psn on the peer).
	StartPSN uint32
	// Segment is the payload bytes per data packet (0: DefaultSegment).
	Segment int
	// ReceiveWindow is the receiving NIC's nic.window_packets: it accepts
	// PSNs up to cum_psn + ReceiveWindow (0: DefaultReceiveWindow; a power
	// of two, at most MaxReceiveWindow).
	ReceiveWindow int
	// Window is the most PSNs past the last cumulative ack in flight
	// (0: DefaultWindow, or ReceiveWindow if that is smaller; at most
	// ReceiveWindow). DCTCP and Delay start their congestion window at it
	// and never exceed it.
	Window int
	// ReorderThreshold is D of the SACK-gap rule: a PSN is taken as lost
	// once D later-sent, higher PSNs are acked (0: DefaultReorderThreshold).
	ReorderThreshold int
	// InitialRTO before any RTT sample, MinRTO the floor of the RTO,
	// MaxRTO the cap of every retransmission timer: the backed-off RTO,
	// the reorder window and the RTT that spaces SACK-gap resends (0: the
	// defaults).
	InitialRTO, MinRTO, MaxRTO time.Duration
	// NoTailProbe turns MRC's tail-loss probe off (docs/protocol.md 10):
	// a loss with fewer than ReorderThreshold packets after it then waits
	// for the RTO. For isolating the RTO, and for measuring what the probe
	// buys.
	NoTailProbe bool
	// NoLossReport leaves METH's LOST flag off SACK-gap resends: the NIC
	// then finds a failed path by its K unanswered sends alone
	// (docs/protocol.md 5). For reproducing the lab's exactly-K failover
	// figure, and for measuring what the reports buy.
	NoLossReport bool
	// CongestionControl is the QP's (CCDefault: DCTCP for MRC, DCQCN for
	// RoCE; CCOff: a fixed Window, no pacing).
	CongestionControl CongestionControl
	// AckEvery is the receiving NIC's nic.ack_every: it answers an
	// in-order packet at once only when its PSN modulo AckEvery is
	// AckEvery - 1 or it asks (BTH ack request), and the others with a
	// later SACK (0: DefaultAckEvery; 1..255). The sender asks when its
	// window is too small for that to bring an answer (docs/protocol.md
	// 10, Ack requests).
	AckEvery int
	// DelayTarget is how much queueing delay Delay tolerates: a cut when
	// an RTT sample exceeds the QP's smallest RTT sample by more (0:
	// DefaultDelayTarget).
	DelayTarget time.Duration
	// LineRate is DCQCN's line rate, bits per second of the frames the
	// engine hands its NIC (0: DefaultLineRate): the rate it starts at,
	// and below which it paces.
	LineRate float64
}

func (c *QPConfig) fill() error {
	var errs []error
	if c.LocalQPN > psnMask || c.PeerQPN > psnMask {
		errs = append(errs, fmt.Errorf("QPN %#x or peer QPN %#x does not fit in 24 bits", c.LocalQPN, c.PeerQPN))
	}
	if c.StartPSN > psnMask {
		errs = append(errs, fmt.Errorf("start PSN %#x does not fit in 24 bits", c.StartPSN))
	}
	if !c.Peer.Is6() {
		errs = append(errs, fmt.Errorf("peer address %v is not IPv6", c.Peer))
	}
	if c.Mode != MRC && c.Mode != RoCE {
		errs = append(errs, fmt.Errorf("unknown mode %d", c.Mode))
	}
	if c.Segment == 0 {
		c.Segment = DefaultSegment
	}
	if c.Segment < 1 || c.Segment > 9000 {
		errs = append(errs, fmt.Errorf("segment %d bytes is outside 1..9000", c.Segment))
	}
	if c.ReceiveWindow == 0 {
		c.ReceiveWindow = DefaultReceiveWindow
	}
	if w := c.ReceiveWindow; w < 1 || w > MaxReceiveWindow || w&(w-1) != 0 {
		errs = append(errs, fmt.Errorf("receive window %d is not a power of two in 1..%d (nic.window_packets)", w, MaxReceiveWindow))
	}
	if c.Window == 0 {
		c.Window = min(DefaultWindow, c.ReceiveWindow)
	}
	if c.Window < 1 || c.Window > c.ReceiveWindow {
		errs = append(errs, fmt.Errorf("window %d is outside 1..%d (the NIC's receive window)", c.Window, c.ReceiveWindow))
	}
	if c.ReorderThreshold == 0 {
		c.ReorderThreshold = DefaultReorderThreshold
	}
	if c.ReorderThreshold < 1 || c.ReorderThreshold >= c.ReceiveWindow {
		errs = append(errs, fmt.Errorf("reorder threshold %d is outside 1..%d", c.ReorderThreshold, c.ReceiveWindow-1))
	}
	if c.AckEvery == 0 {
		c.AckEvery = DefaultAckEvery
	}
	if c.AckEvery < 1 || c.AckEvery > 255 {
		errs = append(errs, fmt.Errorf("ack every %d is outside 1..255 (nic.ack_every)", c.AckEvery))
	}
	if c.InitialRTO == 0 {
		c.InitialRTO = DefaultInitialRTO
	}
	if c.MinRTO == 0 {
		c.MinRTO = DefaultMinRTO
	}
	if c.MaxRTO == 0 {
		c.MaxRTO = DefaultMaxRTO
	}
	if c.MinRTO < 0 || c.InitialRTO < 0 || c.MaxRTO < c.MinRTO {
		errs = append(errs, fmt.Errorf("RTO bounds: initial %v, min %v, max %v", c.InitialRTO, c.MinRTO, c.MaxRTO))
	}
	if c.CongestionControl == CCDefault {
		c.CongestionControl = DCTCP
		if c.Mode == RoCE {
			c.CongestionControl = DCQCN
		}
	}
	switch c.CongestionControl {
	case CCOff:
	case DCTCP, Delay:
		if c.Mode != MRC {
			errs = append(errs, fmt.Errorf("congestion control %v is for MRC QPs, not %v", c.CongestionControl, c.Mode))
		}
	case DCQCN:
		if c.Mode != RoCE {
			errs = append(errs, fmt.Errorf("congestion control %v is for RoCE QPs, not %v", c.CongestionControl, c.Mode))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown congestion control %d", c.CongestionControl))
	}
	if c.DelayTarget == 0 {
		c.DelayTarget = DefaultDelayTarget
	}
	if c.DelayTarget < 0 {
		errs = append(errs, fmt.Errorf("delay target %v is negative", c.DelayTarget))
	}
	if c.LineRate == 0 {
		c.LineRate = DefaultLineRate
	}
	if !(c.LineRate >= dcqcnMinRate) || math.IsInf(c.LineRate, 0) { // NaN fails too
		errs = append(errs, fmt.Errorf("line rate %g bits/s is not a finite rate of at least DCQCN's minimum %g", c.LineRate, float64(dcqcnMinRate)))
	}
	return errors.Join(errs...)
}
