package verify

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// Tracer walks single packets through a fabric's entries, hop by hop, with
// the same two switch operations as Run: it tells which switches one EV's
// packets cross (the BMv2 tests compare it with what the lab saw).
type Tracer struct {
	p      *plan.Plan
	src    Source
	common *NICCommon
	sw     map[plan.Switch]*SwitchState
}

// NewTracer prepares a tracer over src.
func NewTracer(p *plan.Plan, src Source) (*Tracer, error) {
	entries, err := src.NICCommonEntries()
	if err != nil {
		return nil, err
	}
	common, err := DecodeNICCommon(entries)
	if err != nil {
		return nil, err
	}
	return &Tracer{p: p, src: src, common: common, sw: map[plan.Switch]*SwitchState{}}, nil
}

func (t *Tracer) state(s plan.Switch) (*SwitchState, error) {
	if st, ok := t.sw[s]; ok {
		return st, nil
	}
	entries, err := t.src.SwitchEntries(s)
	if err != nil {
		return nil, err
	}
	st, err := DecodeSwitch(entries)
	if err != nil {
		return nil, err
	}
	t.sw[s] = st
	return st, nil
}

// Carrier builds the uSID list host from's NIC puts in the outer destination
// of a packet to host to with entropy value ev, from the NIC's tables.
func (t *Tracer) Carrier(from, to plan.Host, ev plan.EV) ([]uint16, error) {
	f := t.p.SplitEV(ev)
	entries, err := t.src.NICEntries(from)
	if err != nil {
		return nil, err
	}
	id, err := DecodeNIC(entries)
	if err != nil {
		return nil, err
	}
	self, ok := id.Self[f.Plane]
	if !ok {
		return nil, fmt.Errorf("%s: no identity in plane %d", t.p.HostName(from), f.Plane)
	}
	down, ok := t.common.Down[[2]int{f.Plane, to.Port}]
	if !ok {
		return nil, fmt.Errorf("no down-port template (%d, %d)", f.Plane, to.Port)
	}
	if to.Row == self.Row {
		return []uint16{self.OwnT0, down}, nil
	}
	t1, ok1 := t.common.T1[[2]int{f.Plane, f.T1}]
	row, ok2 := t.common.Row[[2]int{f.Plane, to.Row}]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("no template for plane %d T1 %d row %d", f.Plane, f.T1, to.Row)
	}
	return []uint16{self.OwnT0, t1, row, down}, nil
}

// Walk follows a packet that host from's NIC sends into plane with the given
// uSID list. It returns the switches it crosses and the host it reaches.
func (t *Tracer) Walk(from plan.Host, plane int, carrier []uint16) ([]plan.Switch, plan.Host, error) {
	seq := append(append([]uint16(nil), carrier...), 0)
	pos := 0
	at := t.p.NICNeighbor(from, plane)
	var hops []plan.Switch
	for len(hops) <= 64 {
		s := at.Switch()
		hops = append(hops, s)
		st, err := t.state(s)
		if err != nil {
			return hops, plan.Host{}, err
		}
		if st.Own[t.p.Key48(seq[pos])] {
			pos++
		}
		if pos >= len(seq) || seq[pos] == 0 {
			return hops, plan.Host{}, fmt.Errorf("%s: carrier used up", t.p.Name(s))
		}
		r, ok := st.Routes[t.p.Key48(seq[pos])]
		if !ok {
			return hops, plan.Host{}, fmt.Errorf("%s: no route for uSID %#04x", t.p.Name(s), seq[pos])
		}
		nb, ok := t.p.Neighbor(s, r.Port)
		if !ok {
			return hops, plan.Host{}, fmt.Errorf("%s: port %d is not wired", t.p.Name(s), r.Port)
		}
		if nb.Role == plan.RoleNIC {
			if pos != len(seq)-2 {
				return hops, plan.Host{}, fmt.Errorf("reached a NIC with uSIDs left")
			}
			return hops, t.p.HostByIndex(nb.Index), nil
		}
		at = nb
	}
	return hops, plan.Host{}, fmt.Errorf("forwarding loop")
}
