// Package plan assigns addresses and wiring to a checked fabric: every
// switch's uN uSID, every T0 down port's uDL uSID, every host's address and
// NIC ports, and every port-to-neighbour link. The assignment is pure
// arithmetic on the fabric's numbers, so it is deterministic, costs no memory
// at any scale, and any single answer is O(1).
package plan

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// Role is what a device is in the fabric.
type Role uint8

// Device roles.
const (
	RoleT0 Role = iota + 1
	RoleT1
	RoleNIC
)

func (r Role) String() string {
	switch r {
	case RoleT0:
		return "t0"
	case RoleT1:
		return "t1"
	case RoleNIC:
		return "nic"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// USID kinds (the profile v1 uSID layout: plane | kind | index, see
// docs/protocol.md, section 2). Kind 0 is never used, so no valid uSID is
// zero.
const (
	KindT0   = 1
	KindT1   = 2
	KindDown = 3
)

// NIC port numbers: the host faces port 0, plane p is port p+1.
const NICHostPort = 0

// NICPlanePort is the NIC port that faces plane p.
func NICPlanePort(p int) int { return p + 1 }

// Plan is the address plan of one fabric.
type Plan struct {
	F *fabric.Fabric

	t0Digits, t1Digits, hostDigits, planeDigits int
}

// New computes the address plan of f.
func New(f *fabric.Fabric) *Plan {
	return &Plan{
		F:           f,
		planeDigits: digits(f.Planes - 1),
		t0Digits:    digits(f.T0Count - 1),
		t1Digits:    digits(f.T1Count - 1),
		hostDigits:  digits(f.Hosts() - 1),
	}
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// USID builds a uSID from its fields.
func (p *Plan) USID(plane, kind, index int) uint16 {
	l := p.F.USID
	return uint16(plane<<(l.KindBits+l.IndexBits) | kind<<l.IndexBits | index)
}

// T0USID is the uN uSID of T0 row in plane.
func (p *Plan) T0USID(plane, row int) uint16 { return p.USID(plane, KindT0, row) }

// T1USID is the uN uSID of T1 index in plane.
func (p *Plan) T1USID(plane, index int) uint16 { return p.USID(plane, KindT1, index) }

// DownUSID is the uDL uSID of down port k of every T0 in plane: the last
// uSID of a path, naming the destination NIC port on its T0.
func (p *Plan) DownUSID(plane, k int) uint16 { return p.USID(plane, KindDown, k) }

// Carrier is an IPv6 address holding the block and up to six uSIDs; unused
// uSIDs are zero (end of carrier).
func (p *Plan) Carrier(usids ...uint16) [16]byte {
	if len(usids) > 6 {
		panic("plan: a carrier holds at most 6 uSIDs")
	}
	var a [16]byte
	b := p.F.Block
	a[0], a[1], a[2], a[3] = byte(b>>24), byte(b>>16), byte(b>>8), byte(b)
	for i, u := range usids {
		a[4+2*i] = byte(u >> 8)
		a[5+2*i] = byte(u)
	}
	return a
}

// Key48 is the 48-bit value (block | active uSID) the switches match on.
func (p *Plan) Key48(usid uint16) uint64 { return uint64(p.F.Block)<<16 | uint64(usid) }

// Switch names one switch.
type Switch struct {
	Role  Role
	Plane int
	Index int
}

// Name is the switch's stable name, e.g. "p0-t0-03".
func (p *Plan) Name(s Switch) string {
	d := p.t0Digits
	if s.Role == RoleT1 {
		d = p.t1Digits
	}
	return fmt.Sprintf("p%0*d-%s-%0*d", p.planeDigits, s.Plane, s.Role, d, s.Index)
}

// SwitchUSID is the switch's own uN uSID.
func (p *Plan) SwitchUSID(s Switch) uint16 {
	if s.Role == RoleT1 {
		return p.T1USID(s.Plane, s.Index)
	}
	return p.T0USID(s.Plane, s.Index)
}

// Switches lists every switch in a fixed order: plane by plane, T0s then T1s.
func (p *Plan) Switches() []Switch {
	out := make([]Switch, 0, p.F.Switches())
	for pl := 0; pl < p.F.Planes; pl++ {
		for i := 0; i < p.F.T0Count; i++ {
			out = append(out, Switch{RoleT0, pl, i})
		}
		for i := 0; i < p.F.T1Count; i++ {
			out = append(out, Switch{RoleT1, pl, i})
		}
	}
	return out
}

// T0 port numbering: down port k is port k, up port s (to T1 s) is port
// T0Down + s. T1 port numbering: down port r (to T0 row r) is port r.

// T0DownPort is the T0 port that faces down port k.
func (p *Plan) T0DownPort(k int) int { return k }

// T0UpPort is the T0 port that faces T1 s.
func (p *Plan) T0UpPort(s int) int { return p.F.T0Down + s }

// T1DownPort is the T1 port that faces T0 row r.
func (p *Plan) T1DownPort(r int) int { return r }

// Ports is the number of ports the switch uses.
func (p *Plan) Ports(s Switch) int {
	if s.Role == RoleT1 {
		return p.F.T0Count
	}
	return p.F.T0Down + p.F.T0Up
}

// Endpoint is one end of a link: a switch port or a NIC port.
type Endpoint struct {
	Role  Role
	Plane int
	// Index is the switch index, or for a NIC the host index.
	Index int
	Port  int
}

// Switch returns the switch of a switch endpoint.
func (e Endpoint) Switch() Switch { return Switch{e.Role, e.Plane, e.Index} }

// Neighbor is what the given switch port is wired to. ok is false for a
// port the fabric does not use.
func (p *Plan) Neighbor(s Switch, port int) (Endpoint, bool) {
	f := p.F
	switch s.Role {
	case RoleT0:
		switch {
		case port >= 0 && port < f.T0Down:
			return Endpoint{RoleNIC, s.Plane, s.Index*f.T0Down + port, NICPlanePort(s.Plane)}, true
		case port >= f.T0Down && port < f.T0Down+f.T0Up:
			return Endpoint{RoleT1, s.Plane, port - f.T0Down, p.T1DownPort(s.Index)}, true
		}
	case RoleT1:
		if port >= 0 && port < f.T0Count {
			return Endpoint{RoleT0, s.Plane, port, p.T0UpPort(s.Index)}, true
		}
	}
	return Endpoint{}, false
}

// Host names one host by its T0 row and the T0 down port its NICs use (the
// same in every plane: hosts are rail-aligned).
type Host struct {
	Row, Port int
}

// HostByIndex returns host i (row-major).
func (p *Plan) HostByIndex(i int) Host { return Host{i / p.F.T0Down, i % p.F.T0Down} }

// Index is the host's number, row-major.
func (p *Plan) Index(h Host) int { return h.Row*p.F.T0Down + h.Port }

// HostName is the host's stable name, e.g. "h003" or with its row and port
// in the manifest.
func (p *Plan) HostName(h Host) string {
	return string(p.AppendHostName(make([]byte, 0, 16), h))
}

// AppendHostName appends HostName(h) to dst.
func (p *Plan) AppendHostName(dst []byte, h Host) []byte {
	dst = append(dst, "nic-"...)
	i := p.Index(h)
	for d, n := 1, 10; d < p.hostDigits; d, n = d+1, n*10 {
		if i < n {
			dst = append(dst, '0')
		}
	}
	return strconv.AppendInt(dst, int64(i), 10)
}

// HostAddr is the host's (inner) IPv6 address: the host prefix with the row
// in bits 31..16 and port+1 in bits 15..0.
func (p *Plan) HostAddr(h Host) netip.Addr {
	a := p.F.HostPrefix.Addr().As16()
	a[12], a[13] = byte(h.Row>>8), byte(h.Row)
	port := h.Port + 1
	a[14], a[15] = byte(port>>8), byte(port)
	return netip.AddrFrom16(a)
}

// HostOfAddr inverts HostAddr; ok is false for an address that is no host's.
func (p *Plan) HostOfAddr(addr netip.Addr) (Host, bool) {
	if !p.F.HostPrefix.Contains(addr) {
		return Host{}, false
	}
	a := addr.As16()
	row := int(a[12])<<8 | int(a[13])
	port := (int(a[14])<<8 | int(a[15])) - 1
	if row >= p.F.T0Count || port < 0 || port >= p.F.T0Down {
		return Host{}, false
	}
	h := Host{row, port}
	if p.HostAddr(h) != addr { // bits between the prefix and the row field are set
		return Host{}, false
	}
	return h, true
}

// NICPortSID is the address a host's NIC port in plane recognises as its own
// (block | uDL(plane, port)): the outer destination of the last hop.
func (p *Plan) NICPortSID(plane int, h Host) netip.Addr {
	return netip.AddrFrom16(p.Carrier(p.DownUSID(plane, h.Port)))
}

// Path is the uSID list the sending NIC puts in the outer destination for a
// packet from src to dst through T1 t1 of plane. When both hosts share a T0
// the packet turns at that T0 and t1 is not used.
func (p *Plan) Path(plane int, src, dst Host, t1 int) []uint16 {
	if src.Row == dst.Row {
		return []uint16{p.T0USID(plane, src.Row), p.DownUSID(plane, dst.Port)}
	}
	return []uint16{p.T0USID(plane, src.Row), p.T1USID(plane, t1), p.T0USID(plane, dst.Row), p.DownUSID(plane, dst.Port)}
}

// NICNeighbor is the switch port host h's NIC port in plane faces: down port
// h.Port of the T0 in row h.Row of that plane.
func (p *Plan) NICNeighbor(h Host, plane int) Endpoint {
	return Endpoint{RoleT0, plane, h.Row, p.T0DownPort(h.Port)}
}

// SwitchByName parses a switch name made by Name.
func (p *Plan) SwitchByName(name string) (Switch, bool) {
	var plane, index int
	var role string
	if n, err := fmt.Sscanf(name, "p%d-%2s-%d", &plane, &role, &index); err != nil || n != 3 {
		return Switch{}, false
	}
	s := Switch{Plane: plane, Index: index}
	switch role {
	case "t0":
		s.Role = RoleT0
	case "t1":
		s.Role = RoleT1
	default:
		return Switch{}, false
	}
	if plane < 0 || plane >= p.F.Planes || index < 0 ||
		s.Role == RoleT0 && index >= p.F.T0Count || s.Role == RoleT1 && index >= p.F.T1Count {
		return Switch{}, false
	}
	if p.Name(s) != name {
		return Switch{}, false
	}
	return s, true
}
