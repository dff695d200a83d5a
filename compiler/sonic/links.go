package sonic

import (
	"net/netip"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// Link is one point-to-point link seen from one of its ends: its /127, this
// end's address and the other end's.
type Link struct {
	Prefix      netip.Prefix
	Local, Peer netip.Addr
}

// Addressing gives every link of a fabric a /127 from the link prefix
// (sonic.link_prefix, default fabric.DefaultLinkPrefix). Links are numbered
// plane by plane, fabric links first:
//
//	T0 row r to T1 s in plane p:     (p*T0 + r)*T1 + s
//	T0 row r to its host k, plane p: P*T0*T1 + (p*T0 + r)*D + k
//
// Link i is prefix + 2i/127; the T0 holds the even address, the T1 or NIC
// port the odd one. Every address is a pure function of the plan.
type Addressing struct {
	p      *plan.Plan
	prefix netip.Prefix
}

// NewAddressing returns the link addressing of p's fabric.
func NewAddressing(p *plan.Plan) *Addressing {
	s := p.F.SONiC.LinkPrefix
	if s == "" {
		s = fabric.DefaultLinkPrefix
	}
	// Resolve checked the prefix (fabric.checkSONiC).
	return &Addressing{p: p, prefix: netip.MustParsePrefix(s)}
}

// Prefix is the prefix the links' /127s come from.
func (a *Addressing) Prefix() netip.Prefix { return a.prefix }

// index is the number of the link on port of switch s; ok is false for an
// unused port.
func (a *Addressing) index(s plan.Switch, port int) (idx uint64, t0Side, ok bool) {
	f := a.p.F
	nb, ok := a.p.Neighbor(s, port)
	if !ok {
		return 0, false, false
	}
	pl := uint64(s.Plane)
	switch {
	case s.Role == plan.RoleT0 && nb.Role == plan.RoleT1:
		return (pl*uint64(f.T0Count)+uint64(s.Index))*uint64(f.T1Count) + uint64(nb.Index), true, true
	case s.Role == plan.RoleT1:
		return (pl*uint64(f.T0Count)+uint64(nb.Index))*uint64(f.T1Count) + uint64(s.Index), false, true
	default: // T0 down port to a NIC
		base := uint64(f.Planes) * uint64(f.T0Count) * uint64(f.T1Count)
		return base + (pl*uint64(f.T0Count)+uint64(s.Index))*uint64(f.T0Down) + uint64(port), true, true
	}
}

// Switch is the link on port of switch s; ok is false for an unused port.
func (a *Addressing) Switch(s plan.Switch, port int) (Link, bool) {
	i, t0Side, ok := a.index(s, port)
	if !ok {
		return Link{}, false
	}
	even := add(a.prefix.Addr(), 2*i)
	odd := add(a.prefix.Addr(), 2*i+1)
	l := Link{Prefix: netip.PrefixFrom(even, 127), Local: even, Peer: odd}
	if !t0Side {
		l.Local, l.Peer = odd, even
	}
	return l, true
}

// NIC is the link of host h's NIC port in plane, seen from the NIC.
func (a *Addressing) NIC(h plan.Host, plane int) Link {
	t0 := a.p.NICNeighbor(h, plane)
	l, _ := a.Switch(t0.Switch(), t0.Port)
	l.Local, l.Peer = l.Peer, l.Local
	return l
}

// add returns a + n (n fits the prefix: Resolve checked its size).
func add(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	carry := n
	for i := 15; i >= 0 && carry != 0; i-- {
		sum := uint64(b[i]) + carry&0xff
		b[i] = byte(sum)
		carry = carry>>8 + sum>>8
	}
	return netip.AddrFrom16(b)
}
