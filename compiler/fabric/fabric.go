package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// MinTrimBytes is the smallest trim size that keeps every header a receiver
// needs to NACK a trimmed packet: Ethernet 14 + outer IPv6 40 + inner IPv6 40
// + UDP 8 + BTH 12 + MRC extension 4 + RETH 16.
const MinTrimBytes = 14 + 40 + 40 + 8 + 12 + 4 + 16

// Failover defaults (docs/protocol.md section 5).
const (
	// DefaultUnansweredSends is the least K a fabric derives
	// (failover.unanswered_sends left out): K is the larger of it and the
	// floor its window and set size impose, UnansweredSendsFloor. Eight
	// retires a dead path within K passes of the rotation and leaves a
	// margin for resends where the floor is low (small, mrc-1k, mrc-131k).
	DefaultUnansweredSends = 8
	// DefaultProbePasses is N: a probe every 4 passes of the rotation, one
	// packet in 4 x set size per failed slot.
	DefaultProbePasses = 4
)

// The NIC's receive window (nic.window_packets, docs/protocol.md 5): how
// many PSNs from the first missing one its receive state covers. A sender
// keeps its PSNs below the cumulative ack + window + 1.
const (
	// MinReceiveWindow is one SACK bitmap (64 PSNs): the NIC keeps its
	// receive state in 64-bit words.
	MinReceiveWindow = 64
	// MaxReceiveWindow bounds the window: the NIC program's registers hold
	// 256 QPs x window PSNs of send records (sent_slot, 64 bits each: 8 MiB
	// at 4096) and its in-order step walks up to window/64 + 1 words.
	MaxReceiveWindow = 4096
	// WindowPayloadBytes is the data packet the window's bandwidth-delay
	// product is counted in: 4 KiB of payload, RoCE's largest MTU and the
	// simulator's default segment. Smaller packets need a wider window.
	WindowPayloadBytes = 4096
	// windowDataFrame and windowAckFrame are that data packet and a SACK
	// on a fabric link, in bytes: payload, the encapsulated headers
	// (Ethernet, outer and inner IPv6, UDP, BTH, METH, RETH: MinTrimBytes)
	// and Ethernet's preamble, FCS and gap (24); a SACK is 134 bytes.
	windowDataFrame = WindowPayloadBytes + MinTrimBytes + 24
	windowAckFrame  = 134 + 24
	// switchHops is how many switch ports queue a packet on the longest
	// path: the T0's uplink, the T1's downlink, the T0's downlink.
	switchHops = 3
)

// WindowDerivation is how a fabric's receive window follows from its
// speeds, links and trim threshold (docs/protocol.md 5, The receive
// window), all in picoseconds and 4 KiB data packets.
type WindowDerivation struct {
	// UnloadedRTTps is the longest round trip with empty queues: a data
	// packet NIC -> T0 -> T1 -> T0 -> NIC and its SACK back, propagation
	// and store-and-forward serialization at the port speed.
	UnloadedRTTps int64
	// QueueingPs is what trimming lets queue on that path: the trim
	// threshold's packets at each of the three switch ports.
	QueueingPs int64
	// BDP is the NIC's speed times the unloaded round trip, in data
	// packets (rounded up): the least window that can fill the NIC.
	BDP int
	// LoadedBDP is the same over the unloaded round trip plus QueueingPs.
	LoadedBDP int
	// Default is twice LoadedBDP, rounded up to a power of two of at
	// least MinReceiveWindow and at most MaxReceiveWindow.
	Default int
	// Send is twice BDP, rounded up the same way: the window a QP keeps
	// by default (Fabric.SendWindow).
	Send int
}

// DeriveWindow computes the window's derivation from a description whose
// speeds, links and trim threshold are valid.
func DeriveWindow(nicGbps, portGbps int, links LinkSpec, trimThreshold int) WindowDerivation {
	ser := func(bytes int) int64 { return (int64(bytes)*8000 + int64(portGbps) - 1) / int64(portGbps) }
	prop := 2 * int64(links.NICT0Ns+links.T0T1Ns) * 1000 // one way, ps
	var w WindowDerivation
	w.UnloadedRTTps = 2*prop + 4*ser(windowDataFrame) + 4*ser(windowAckFrame)
	w.QueueingPs = switchHops * int64(trimThreshold) * ser(windowDataFrame)
	// packets = Gb/s x ps / 1000 bits, over the frame's bits
	packets := func(ps int64) int {
		bits := int64(nicGbps) * ps
		per := int64(windowDataFrame) * 8 * 1000
		return int((bits + per - 1) / per)
	}
	w.BDP = packets(w.UnloadedRTTps)
	w.LoadedBDP = packets(w.UnloadedRTTps + w.QueueingPs)
	pow2 := func(n int) int {
		p := MinReceiveWindow
		for p < n && p < MaxReceiveWindow {
			p *= 2
		}
		return p
	}
	w.Default, w.Send = pow2(2*w.LoadedBDP), pow2(2*w.BDP)
	return w
}

// SendWindow is the window a QP keeps by default on f (the simulator's
// --window): twice the BDP over the unloaded round trip
// (WindowDerivation.Send), at most the receive window. It fills the NIC
// with room for queues twice the round trip; a QP may keep up to the
// receive window, which also covers the queueing trimming allows, but
// DCTCP growing into it builds a standing queue in the sending NIC that
// ECN does not see (docs/protocol.md 10, Window).
func (f *Fabric) SendWindow() int {
	wd := DeriveWindow(f.NICSpeedGbps, f.PortSpeedGbps, f.Links, f.Trim.ThresholdPackets)
	return min(wd.Send, f.ReceiveWindow)
}

// InFlightPerSlot is how many sends of a QP with no resend can be
// unanswered on one EV slot when the NIC's rotation comes back to it: the
// PSNs sent before the one in hand and still in flight are at most
// window - 1 consecutive sends, which the rotation spreads over setSize
// slots. K (failover.unanswered_sends) must exceed it, or a full window
// retires healthy slots by construction; what K has above it is the
// margin for resends and late echoes (docs/protocol.md 5, Choosing K).
func InFlightPerSlot(setSize, window int) int {
	return (window - 1 + setSize - 1) / setSize
}

// UnansweredSendsFloor is the least K a fabric accepts: nic.ack_every (a
// healthy slot is echoed once in up to that many passes) plus the sends a
// full window keeps in flight on each slot, plus one.
func UnansweredSendsFloor(ackEvery, setSize, window int) int {
	return ackEvery + InFlightPerSlot(setSize, window) + 1
}

// MaxPorts is the number of ports a v1model switch can address (bit<9>).
const MaxPorts = 512

// DropPort is the v1model port number that means "drop" on BMv2.
const DropPort = 511

// DefaultQueuePackets is the capacity of a port's queue on BMv2 (simple_switch's
// default: 64 packets per priority queue), the default of trim.queue_packets.
const DefaultQueuePackets = 64

// Link delay defaults (LinkSpec, docs/protocol.md section 9): one-way
// propagation only, at about 5 ns per metre of copper or fibre.
const (
	// DefaultNICT0Ns is links.nic_t0_ns: about 2 m of copper between a
	// NIC and the T0 in its rack.
	DefaultNICT0Ns = 10
	// DefaultT0T1Ns is links.t0_t1_ns: about 30 m of fibre between a T0
	// and a T1 across the hall.
	DefaultT0T1Ns = 150
	// MaxLinkDelayNs bounds a link's delay: 1 ms, some 200 km of fibre,
	// far beyond any link of one fabric.
	MaxLinkDelayNs = 1_000_000
)

// MaxEVSetSize bounds a QP's EV set (the NIC keeps per-EV state for it).
const MaxEVSetSize = 4096

// DefaultAckEvery is nic.ack_every: one SACK for three ordinary data
// packets (in order, or beyond a hole already reported: those whose PSN
// modulo 3 is 2 are answered, docs/protocol.md 5). Three is the smallest count that cuts
// the answers by more than half (SACKs were half the packets, and half the
// BMv2 lab's CPU), is odd (coprime with every power-of-two EV set), and
// fits the default K = 8 on the smallest preset set (16 slots: 3 + 4 in
// flight + 1).
const DefaultAckEvery = 3

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Fabric is a checked fabric: every value in it is consistent with every
// other. Build it with Resolve, Parse or FromPreset; never by hand.
type Fabric struct {
	Name         string
	Planes       int
	NICSpeedGbps int
	AckEvery     int // nic.ack_every
	// ReceiveWindow is nic.window_packets, derived when the file leaves
	// it out: the PSNs past the first missing one the NIC accepts.
	ReceiveWindow int
	PortSpeedGbps int
	SwitchPorts   int
	T0Count       int
	T0Down        int
	T0Up          int
	T1Count       int
	// Links is the one-way propagation delay of each kind of link, as the
	// file gave it (checked to be 0..MaxLinkDelayNs); only the simulator
	// uses it.
	Links LinkSpec
	// Block is the 32-bit uSID block (the top 32 bits of every carrier).
	Block      uint32
	USID       USIDLayout
	EV         EVLayout
	DSCP       DSCPSpec
	Trim       TrimSpec
	Failover   FailoverSpec
	HostPrefix netip.Prefix
	// SONiC is the export's configuration as the file gave it (zero values
	// mean the defaults; compiler/sonic resolves them).
	SONiC SONiCSpec
}

// USIDLayout is the bit layout of one 16-bit uSID: plane | kind | index.
type USIDLayout struct {
	PlaneBits, KindBits, IndexBits int
}

// EVLayout is the bit layout of the 32-bit entropy value: plane | t1 | salt.
type EVLayout struct {
	SetSize                     int
	PlaneBits, T1Bits, SaltBits int
}

// Hosts is the number of hosts (NICs) in the fabric.
func (f *Fabric) Hosts() int { return f.T0Count * f.T0Down }

// SwitchesPerPlane is the number of T0 and T1 switches in one plane.
func (f *Fabric) SwitchesPerPlane() int { return f.T0Count + f.T1Count }

// Switches is the number of switches in the whole fabric.
func (f *Fabric) Switches() int { return f.Planes * f.SwitchesPerPlane() }

// EVsPerPlane is how many EVs of a QP's set fall in each plane.
func (f *Fabric) EVsPerPlane() int { return f.EV.SetSize / f.Planes }

// Warnings lists facts about a valid fabric that a user should know, such as
// a port number BMv2 cannot use.
func (f *Fabric) Warnings() []string {
	var w []string
	if f.T0Down+f.T0Up > DropPort {
		w = append(w, fmt.Sprintf("T0 switches use ports 0..%d: port %d is v1model's drop port, so this fabric cannot run on BMv2 (it targets hardware switches)",
			f.T0Down+f.T0Up-1, DropPort))
	}
	if f.T0Count > DropPort {
		w = append(w, fmt.Sprintf("T1 switches use ports 0..%d: port %d is v1model's drop port, so this fabric cannot run on BMv2 (it targets hardware switches)",
			f.T0Count-1, DropPort))
	}
	return w
}

// FieldError is one problem with a fabric description: with one field (its
// YAML path), or with the file as a whole (Field empty: the file is empty,
// or is not YAML).
type FieldError struct {
	// Field is the YAML path of the field, e.g. "t0.count".
	Field string
	// Value is the offending value as the user wrote it; nil when there is
	// none to show (an unknown field, a field without a value).
	Value any
	// Line is the line of the field in the fabric file; 0 when the value
	// did not come from the file (a preset's value, a Description built in
	// Go).
	Line int
	// Reason says why the value cannot be used.
	Reason string
}

// Error reads "field: value: line N: reason", leaving out the parts that
// are unknown.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	if e.Value != nil {
		fmt.Fprintf(&b, "%v: ", e.Value)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// MarshalJSON writes {field, value, reason, line}: value is the value as the
// user wrote it (a string, not quoted twice) or null.
func (e *FieldError) MarshalJSON() ([]byte, error) {
	var value *string
	if e.Value != nil {
		s := fmt.Sprint(e.Value)
		if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
			s = u
		}
		value = &s
	}
	return json.Marshal(struct {
		Field  string  `json:"field"`
		Value  *string `json:"value"`
		Reason string  `json:"reason"`
		Line   int     `json:"line"`
	}{e.Field, value, e.Reason, e.Line})
}

// Problems lists every *FieldError in err (as Parse, Decode and Resolve
// return them), in order.
func Problems(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// ErrInvalid is wrapped by every error Resolve returns for a description that
// cannot be built.
var ErrInvalid = errors.New("invalid fabric description")

// Parse reads a YAML fabric description: the file starts from its base
// preset (default "tiny") and is checked with Resolve. Every problem is
// reported at once, each a *FieldError with the line of its field: those of
// the file itself (unknown fields, wrong types; see Decode) together with
// the inconsistent values Resolve finds; a value the file does not set
// is said to be its base preset's. name is used in error messages (a file
// path).
func Parse(name string, r io.Reader) (*Fabric, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read fabric %s: %w", name, err)
	}
	d := decode(data)
	errs := d.errs
	if d.resolvable {
		f, err := Resolve(d.desc)
		if err == nil && len(errs) == 0 {
			return f, nil
		}
		for _, fe := range Problems(err) {
			if fe.Line == 0 {
				fe.Line = d.lines[fe.Field]
			}
			if fe.Line == 0 && fe.Field != "" {
				// Not in the file: the user may never have seen it.
				fe.Reason += fmt.Sprintf("; the value is preset %s's, which the file starts from", d.base)
			}
			errs = append(errs, fe)
		}
	}
	return nil, fmt.Errorf("fabric %s: %w", name, invalid(errs))
}

// FromPreset resolves a built-in fabric.
func FromPreset(name string) (*Fabric, error) {
	d, err := Preset(name)
	if err != nil {
		return nil, err
	}
	return Resolve(d)
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Resolve checks every value of d against every other and returns the
// fabric, or an error that joins one FieldError per problem found.
func Resolve(d Description) (*Fabric, error) {
	var errs []error
	bad := func(field string, value any, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)})
	}
	positive := func(field string, v int) bool {
		if v < 1 {
			bad(field, v, "must be at least 1")
			return false
		}
		return true
	}

	if !nameRE.MatchString(d.Name) {
		bad("name", fmt.Sprintf("%q", d.Name), "must be 1-63 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit (it names files)")
	}

	// Sizes.
	okPlanes := positive("planes", d.Planes)
	okNIC := positive("nic.speed_gbps", d.NIC.SpeedGbps)
	okPorts := positive("switch.ports", d.Switch.Ports)
	okSpeed := positive("switch.port_speed_gbps", d.Switch.PortSpeedGbps)
	okT0 := positive("t0.count", d.T0.Count)
	okDown := positive("t0.down_ports", d.T0.DownPorts)
	okUp := positive("t0.up_ports", d.T0.UpPorts)
	okT1 := positive("t1.count", d.T1.Count)

	if okPorts && d.Switch.Ports > MaxPorts {
		bad("switch.ports", d.Switch.Ports, "a v1model switch addresses at most %d ports (bit<9> port numbers)", MaxPorts)
	}
	if okPlanes && okNIC && okSpeed {
		switch {
		case d.NIC.SpeedGbps%d.Planes != 0:
			bad("nic.speed_gbps", d.NIC.SpeedGbps, "does not split evenly into %d plane ports", d.Planes)
		case d.NIC.SpeedGbps/d.Planes != d.Switch.PortSpeedGbps:
			bad("nic.speed_gbps", d.NIC.SpeedGbps, "split into %d plane ports gives %dG per port, but switch ports are %dG (switch.port_speed_gbps)",
				d.Planes, d.NIC.SpeedGbps/d.Planes, d.Switch.PortSpeedGbps)
		}
	}
	if okDown && okUp && okPorts && d.T0.DownPorts+d.T0.UpPorts > d.Switch.Ports {
		bad("t0.down_ports", d.T0.DownPorts, "down %d + up %d = %d ports, more than a switch has (switch.ports = %d)",
			d.T0.DownPorts, d.T0.UpPorts, d.T0.DownPorts+d.T0.UpPorts, d.Switch.Ports)
	}
	if okUp && okT1 && d.T0.UpPorts != d.T1.Count {
		bad("t1.count", d.T1.Count, "every T0 has one up port to each T1, so t1.count must equal t0.up_ports (%d)", d.T0.UpPorts)
	}
	if okT0 && okPorts && d.T0.Count > d.Switch.Ports {
		bad("t0.count", d.T0.Count, "more T0s than T1 down ports: a T1 has one down port to each T0 and has %d ports (switch.ports)", d.Switch.Ports)
	}

	// Link delays: pure propagation, for the simulator (and the window's
	// derivation).
	okLinks := true
	for _, c := range []struct {
		field string
		v     int
	}{{"links.nic_t0_ns", d.Links.NICT0Ns}, {"links.t0_t1_ns", d.Links.T0T1Ns}} {
		if c.v < 0 || c.v > MaxLinkDelayNs {
			bad(c.field, c.v, "a one-way propagation delay must be between 0 and %d ns (1 ms)", MaxLinkDelayNs)
			okLinks = false
		}
	}

	// The receive window: derived from the speeds, links and trim
	// threshold when the file leaves it out (0), checked against them
	// when it sets it.
	okThreshold := d.Trim.ThresholdPackets >= 1 && d.Trim.ThresholdPackets < 1<<19
	window, okWindow := d.NIC.WindowPackets, false
	switch w := d.NIC.WindowPackets; {
	case w != 0 && (w < MinReceiveWindow || w > MaxReceiveWindow || w&(w-1) != 0):
		bad("nic.window_packets", w, "must be a power of two from %d to %d: the NIC keeps its receive state in 64-bit words and finds a PSN's record by PSN modulo the window, and its registers hold %d PSNs per QP at most",
			MinReceiveWindow, MaxReceiveWindow, MaxReceiveWindow)
	case okNIC && okSpeed && okLinks && okThreshold:
		wd := DeriveWindow(d.NIC.SpeedGbps, d.Switch.PortSpeedGbps, d.Links, d.Trim.ThresholdPackets)
		if w == 0 {
			window = wd.Default
		} else if w < wd.BDP {
			bad("nic.window_packets", w, "below one bandwidth-delay product, %d packets of %d bytes (%d Gb/s over the longest unloaded round trip, %.2f µs): one QP could never fill its NIC (leave it out for the derived %d)",
				wd.BDP, WindowPayloadBytes, d.NIC.SpeedGbps, float64(wd.UnloadedRTTps)/1e6, wd.Default)
			break
		}
		okWindow = true
	}

	// uSID layout (F3216: 32-bit block, 16-bit uSIDs).
	u := d.USID
	var block uint32
	if p, err := netip.ParsePrefix(u.Block); err != nil {
		bad("usid.block", fmt.Sprintf("%q", u.Block), "not an IPv6 prefix: %v", err)
	} else if !p.Addr().Is6() || p.Addr().Is4In6() {
		bad("usid.block", u.Block, "must be an IPv6 prefix")
	} else if p.Bits() != 32 {
		bad("usid.block", u.Block, "F3216 needs a /32 block, not /%d", p.Bits())
	} else if p.Masked() != p {
		bad("usid.block", u.Block, "has bits set beyond /32 (did you mean %s?)", p.Masked())
	} else {
		a := p.Addr().As16()
		block = uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		if block == 0 {
			bad("usid.block", u.Block, "the all-zero block cannot be told from an unset address")
		}
	}
	if u.PlaneBits < 0 || u.KindBits < 0 || u.IndexBits < 0 || u.PlaneBits+u.KindBits+u.IndexBits != 16 {
		bad("usid", fmt.Sprintf("plane_bits %d + kind_bits %d + index_bits %d", u.PlaneBits, u.KindBits, u.IndexBits), "must add up to 16 (one uSID)")
	} else {
		if u.KindBits < 2 {
			bad("usid.kind_bits", u.KindBits, "needs at least 2 bits for the kinds T0=1, T1=2, down port=3 (kind 0 is reserved so that no uSID is zero)")
		}
		if okPlanes && d.Planes > 1<<u.PlaneBits {
			bad("usid.plane_bits", u.PlaneBits, "%d bits hold %d planes, the fabric has %d", u.PlaneBits, 1<<u.PlaneBits, d.Planes)
		}
		maxIndex := 1 << u.IndexBits
		for _, c := range []struct {
			field string
			n     int
			what  string
		}{{"t0.count", d.T0.Count, "T0 switches"}, {"t1.count", d.T1.Count, "T1 switches"}, {"t0.down_ports", d.T0.DownPorts, "T0 down ports"}} {
			if c.n > maxIndex {
				bad("usid.index_bits", u.IndexBits, "%d bits number %d %s, the fabric has %d (%s)", u.IndexBits, maxIndex, c.what, c.n, c.field)
			}
		}
	}

	// EV layout.
	e := d.EV
	if e.PlaneBits < 0 || e.T1Bits < 0 || e.SaltBits < 0 || e.PlaneBits+e.T1Bits+e.SaltBits != 32 {
		bad("ev", fmt.Sprintf("plane_bits %d + t1_bits %d + salt_bits %d", e.PlaneBits, e.T1Bits, e.SaltBits), "must add up to 32 (one EV)")
	} else {
		if okPlanes && d.Planes > 1<<e.PlaneBits {
			bad("ev.plane_bits", e.PlaneBits, "%d bits hold %d planes, the fabric has %d", e.PlaneBits, 1<<e.PlaneBits, d.Planes)
		}
		if okT1 && d.T1.Count > 1<<e.T1Bits {
			bad("ev.t1_bits", e.T1Bits, "%d bits hold %d T1s, the fabric has %d", e.T1Bits, 1<<e.T1Bits, d.T1.Count)
		}
	}
	okSet := false
	if e.SetSize < 1 || e.SetSize > MaxEVSetSize {
		bad("ev.set_size", e.SetSize, "must be between 1 and %d", MaxEVSetSize)
	} else if okPlanes && e.SetSize%d.Planes != 0 {
		bad("ev.set_size", e.SetSize, "must be a multiple of planes (%d) so that every plane gets the same number of EVs", d.Planes)
	} else if e.SaltBits >= 0 && e.SaltBits < 31 && 2*e.SetSize > 1<<e.SaltBits {
		bad("ev.salt_bits", e.SaltBits, "the salt names an EV's slot, base (salt = slot) or backup (salt = set size + slot), so that an echoed EV names its slot: %d bits number %d salts, the base and backup sets need %d (2 x ev.set_size)", e.SaltBits, 1<<e.SaltBits, 2*e.SetSize)
	} else {
		okSet = okPlanes
	}

	// Failover: both are 8-bit counters in the NIC's per-slot state. K
	// left out (0) is derived: the floor below, at least
	// DefaultUnansweredSends.
	fo := d.Failover
	okK := true
	if fo.UnansweredSends != 0 && (fo.UnansweredSends < 2 || fo.UnansweredSends > 255) {
		bad("failover.unanswered_sends", fo.UnansweredSends, "must be between 2 and 255 (an 8-bit counter; 1 would retire a path whose answer is merely in flight)")
		okK = false
	}
	// SACK coalescing, and the K it needs: when the rotation comes back to
	// a healthy slot, its sends since its last echo are those of up to
	// ack_every passes (a SACK is sent for one PSN in ack_every, and a
	// slot's PSNs are a set size apart) plus those still in flight
	// (InFlightPerSlot, for the largest window a transport can keep: the
	// NIC's receive window); K must exceed both.
	if a := d.NIC.AckEvery; a < 1 || a > 255 {
		bad("nic.ack_every", a, "must be between 1 and 255")
	} else if okSet && gcd(a, e.SetSize) != 1 {
		bad("nic.ack_every", a, "must have no factor in common with ev.set_size (%d): a slot's PSNs are a set size apart, and only then do they reach the PSN (ack_every - 1 modulo ack_every) a coalesced SACK is sent for", e.SetSize)
	} else if okSet && okK && okWindow {
		need := UnansweredSendsFloor(a, e.SetSize, window)
		// A derived window is narrowed until the K it needs fits the
		// NIC's 8-bit counter (long links or deep queues over a small
		// set): such a fabric cannot have both.
		for d.NIC.WindowPackets == 0 && need > 255 && window > MinReceiveWindow {
			window /= 2
			need = UnansweredSendsFloor(a, e.SetSize, window)
		}
		if fo.UnansweredSends == 0 {
			fo.UnansweredSends = max(DefaultUnansweredSends, need)
		} else if fo.UnansweredSends < need {
			bad("failover.unanswered_sends", fo.UnansweredSends, "must be at least nic.ack_every (%d) + the sends a full window keeps in flight on each of %d slots (%d: %d PSNs before the one sent, nic.window_packets %d) + 1 = %d, or healthy paths are retired",
				a, e.SetSize, InFlightPerSlot(e.SetSize, window), window-1, window, need)
		}
		if fo.UnansweredSends > 255 {
			bad("failover.unanswered_sends", fo.UnansweredSends, "the derived K (nic.ack_every + the sends nic.window_packets %d keeps in flight on each of %d slots + 1) exceeds 255, the NIC's 8-bit counter: a smaller window or a larger ev.set_size", window, e.SetSize)
		}
	}
	if fo := d.Failover; fo.ProbePasses < 1 || fo.ProbePasses > 255 {
		bad("failover.probe_passes", fo.ProbePasses, "must be between 1 and 255")
	}

	// DSCP: six bits each, all distinct.
	dscps := []struct {
		field string
		v     int
	}{{"dscp.control", d.DSCP.Control}, {"dscp.trimmable", d.DSCP.Trimmable}, {"dscp.trimmed", d.DSCP.Trimmed},
		{"dscp.trimmed_lasthop", d.DSCP.TrimmedLastHop}, {"dscp.no_trim", d.DSCP.NoTrim}}
	seen := map[int]string{}
	for _, c := range dscps {
		if c.v < 0 || c.v > 63 {
			bad(c.field, c.v, "a DSCP is 6 bits (0-63)")
			continue
		}
		if other, dup := seen[c.v]; dup {
			bad(c.field, c.v, "same code point as %s: the switches could not tell the classes apart", other)
			continue
		}
		seen[c.v] = c.field
	}

	// Trimming.
	if d.Trim.SizeBytes < MinTrimBytes {
		bad("trim.size_bytes", d.Trim.SizeBytes, "a trimmed packet must keep the %d bytes of headers the receiver needs to NACK (Ethernet, outer and inner IPv6, UDP, BTH, MRC extension, RETH)", MinTrimBytes)
	} else if d.Trim.SizeBytes > 9216 {
		bad("trim.size_bytes", d.Trim.SizeBytes, "larger than a jumbo frame (9216): nothing would be trimmed")
	}
	checkThresholds(d.Trim, bad)

	// Host addressing: row in bits 31..16, port+1 in bits 15..0.
	var hostPrefix netip.Prefix
	if p, err := netip.ParsePrefix(d.Hosts.Prefix); err != nil {
		bad("hosts.prefix", fmt.Sprintf("%q", d.Hosts.Prefix), "not an IPv6 prefix: %v", err)
	} else if !p.Addr().Is6() || p.Addr().Is4In6() {
		bad("hosts.prefix", d.Hosts.Prefix, "must be an IPv6 prefix")
	} else if p.Bits() > 96 {
		bad("hosts.prefix", d.Hosts.Prefix, "must be /96 or shorter: the low 32 bits hold the host's T0 row and port")
	} else if p.Masked() != p {
		bad("hosts.prefix", d.Hosts.Prefix, "has bits set beyond /%d (did you mean %s?)", p.Bits(), p.Masked())
	} else {
		hostPrefix = p
		if block != 0 {
			a := p.Addr().As16()
			hb := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
			if p.Bits() >= 32 && hb == block || p.Bits() < 32 && hb>>(32-p.Bits()) == block>>(32-p.Bits()) {
				bad("hosts.prefix", d.Hosts.Prefix, "overlaps the uSID block %s: a host address could be taken for a uSID carrier", u.Block)
			}
		}
	}
	if okDown && d.T0.DownPorts >= 1<<16 {
		bad("t0.down_ports", d.T0.DownPorts, "host addresses hold the port in 16 bits")
	}

	errs = append(errs, checkSONiC(d, block, hostPrefix)...)

	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	return &Fabric{
		Name:          d.Name,
		Planes:        d.Planes,
		NICSpeedGbps:  d.NIC.SpeedGbps,
		AckEvery:      d.NIC.AckEvery,
		ReceiveWindow: window,
		PortSpeedGbps: d.Switch.PortSpeedGbps,
		SwitchPorts:   d.Switch.Ports,
		T0Count:       d.T0.Count,
		T0Down:        d.T0.DownPorts,
		T0Up:          d.T0.UpPorts,
		T1Count:       d.T1.Count,
		Links:         d.Links,
		Block:         block,
		USID:          USIDLayout{PlaneBits: u.PlaneBits, KindBits: u.KindBits, IndexBits: u.IndexBits},
		EV:            EVLayout(e),
		DSCP:          d.DSCP,
		Trim:          d.Trim,
		Failover:      fo,
		HostPrefix:    hostPrefix,
		SONiC:         d.SONiC,
	}, nil
}

// checkThresholds checks the queue thresholds against each other and against
// the queue they watch: a trim threshold at or beyond the queue's capacity is
// never reached (a full queue tail-drops instead of trimming), and an ECN
// threshold at or beyond the trim threshold marks nothing that is not
// trimmed already.
func checkThresholds(t TrimSpec, bad func(field string, value any, format string, args ...any)) {
	inRange := func(field string, v int) bool {
		if v < 1 || v >= 1<<19 {
			bad(field, v, "must be between 1 and %d packets (19-bit queue depth)", 1<<19-1)
			return false
		}
		return true
	}
	okTrim := inRange("trim.threshold_packets", t.ThresholdPackets)
	okECN := inRange("trim.ecn_packets", t.ECNPackets)
	okQueue := inRange("trim.queue_packets", t.QueuePackets)
	if okTrim && okQueue && t.ThresholdPackets >= t.QueuePackets {
		bad("trim.threshold_packets", t.ThresholdPackets, "must be below the queue capacity (trim.queue_packets = %d): a full queue drops packets instead of trimming them, so the port would never trim", t.QueuePackets)
	}
	if okTrim && okECN && t.ECNPackets >= t.ThresholdPackets {
		bad("trim.ecn_packets", t.ECNPackets, "must be below the trim threshold (trim.threshold_packets = %d): a queue that deep already trims, so ECN would never warn first", t.ThresholdPackets)
	}
}

// Describe turns a Fabric back into the description that resolves to it.
func (f *Fabric) Describe() Description {
	b := f.Block
	blockAddr := netip.AddrFrom16([16]byte{byte(b >> 24), byte(b >> 16), byte(b >> 8), byte(b)})
	return Description{
		Name:     f.Name,
		Planes:   f.Planes,
		NIC:      NICSpec{SpeedGbps: f.NICSpeedGbps, AckEvery: f.AckEvery, WindowPackets: f.ReceiveWindow},
		Switch:   SwitchSpec{Ports: f.SwitchPorts, PortSpeedGbps: f.PortSpeedGbps},
		T0:       T0Spec{Count: f.T0Count, DownPorts: f.T0Down, UpPorts: f.T0Up},
		T1:       T1Spec{Count: f.T1Count},
		Links:    f.Links,
		USID:     USIDSpec{Block: netip.PrefixFrom(blockAddr, 32).String(), PlaneBits: f.USID.PlaneBits, KindBits: f.USID.KindBits, IndexBits: f.USID.IndexBits},
		EV:       EVSpec{SetSize: f.EV.SetSize, PlaneBits: f.EV.PlaneBits, T1Bits: f.EV.T1Bits, SaltBits: f.EV.SaltBits},
		DSCP:     f.DSCP,
		Trim:     f.Trim,
		Failover: f.Failover,
		Hosts:    HostSpec{Prefix: f.HostPrefix.String()},
		SONiC:    f.SONiC,
	}
}
