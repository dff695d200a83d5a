package verify_test

import (
	"fmt"
	"slices"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// brute is a slow, obvious model of the fabric, written apart from
// verify.Run to check it: it enumerates every (source host, plane, T1,
// destination host) path one by one, builds the outer destination as the
// NIC program does from the NIC's own entries, and carries it hop by hop
// through the switches' entries as the switch program does (uN: own uSID
// active -> shift by 16 bits; then an exact lookup of block | active uSID).
// The wiring is recomputed here from the profile, not taken from plan.
//
// A path is delivered when it reaches the NIC port of its destination, in
// its plane, within verify.MaxHops switches, and that port accepts it as
// its own. Rules that go beyond what the hardware would do, shared with
// verify.Run by definition:
//   - a route's to_host flag must match what its port faces (it selects the
//     TRIMMED_LASTHOP class and turns ECN off: a wrong flag is a wrong table);
//   - a NIC port must know its plane (rx_plane says the plane it faces);
//   - a NIC whose plane_self row is not the row it is cabled to loses every
//     path it sends in that plane (which pairs are "same T0" is then not
//     defined).
type brute struct {
	p    *plan.Plan
	down map[verify.Link]bool // both ends of every link taken down

	own    map[swKey]map[uint64]bool
	routes map[swKey]map[uint64]verify.Route
	rx     map[[2]int]verify.RxPort    // (host, NIC port) -> plane, own uDL
	self   map[[2]int]verify.SelfEntry // (host, plane) -> own T0 uSID, row
	row    map[[2]int]uint16           // (plane, row) -> uN
	t1     map[[2]int]uint16           // (plane, t1) -> uN
	dn     map[[2]int]uint16           // (plane, port) -> uDL
	why    map[string]uint64           // lost paths per reason, for messages
	lostBy map[lostClass]uint64        // lost (src, dst) pairs per class
	// evSetOK says the EV set is sound, decided here by sorting and
	// counting, apart from verify.CheckEVSet.
	evSetOK bool
}

type swKey struct {
	t1           bool
	plane, index int
}

// lostClass is verify.Lost's key: plane, T1 (-1: same T0 or the whole
// source), source row, destination row (-1: every row).
type lostClass struct{ plane, t1, src, dst int }

func newBrute(p *plan.Plan, src verify.Source, down []verify.Link) (*brute, error) {
	f := p.F
	b := &brute{p: p, down: map[verify.Link]bool{}, own: map[swKey]map[uint64]bool{}, routes: map[swKey]map[uint64]verify.Route{},
		rx: map[[2]int]verify.RxPort{}, self: map[[2]int]verify.SelfEntry{},
		row: map[[2]int]uint16{}, t1: map[[2]int]uint16{}, dn: map[[2]int]uint16{},
		why: map[string]uint64{}, lostBy: map[lostClass]uint64{}}
	for _, l := range down {
		b.down[l] = true
		if e, ok := b.wire(l.Switch, l.Port); ok && e.Role != plan.RoleNIC {
			b.down[verify.Link{Switch: e.Switch(), Port: e.Port}] = true
		}
	}
	for pl := 0; pl < f.Planes; pl++ {
		for i := 0; i < f.T0Count+f.T1Count; i++ {
			s := plan.Switch{Role: plan.RoleT0, Plane: pl, Index: i}
			if i >= f.T0Count {
				s = plan.Switch{Role: plan.RoleT1, Plane: pl, Index: i - f.T0Count}
			}
			entries, err := src.SwitchEntries(s)
			if err != nil {
				return nil, err
			}
			k := swKey{s.Role == plan.RoleT1, pl, s.Index}
			b.own[k], b.routes[k] = map[uint64]bool{}, map[uint64]verify.Route{}
			for _, e := range entries {
				switch {
				case e.Table.FullName() == schema.SwitchMyUSID && e.Action.Name == "usid_shift":
					b.own[k][e.Match[0].Value] = true
				case e.Table.FullName() == schema.SwitchRoute && e.Action.Name != "route_miss":
					if _, dup := b.routes[k][e.Match[0].Value]; dup {
						return nil, fmt.Errorf("%s: two routes for %#x", p.Name(s), e.Match[0].Value)
					}
					b.routes[k][e.Match[0].Value] = verify.Route{Port: int(e.Params[0]), ToHost: e.Action.Name == "forward_to_host"}
				}
			}
		}
	}
	for h := 0; h < f.Hosts(); h++ {
		entries, err := src.NICEntries(plan.Host{Row: h / f.T0Down, Port: h % f.T0Down})
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			switch e.Table.FullName() {
			case schema.NICRxPlane:
				b.rx[[2]int{h, int(e.Match[0].Value)}] = verify.RxPort{Plane: int(e.Params[0]), OwnDown: uint16(e.Params[1])}
			case schema.NICPlaneSelf:
				b.self[[2]int{h, int(e.Match[0].Value)}] = verify.SelfEntry{OwnT0: uint16(e.Params[0]), Row: int(e.Params[1])}
			}
		}
	}
	common, err := src.NICCommonEntries()
	if err != nil {
		return nil, err
	}
	var evs []verify.SlotEV
	for _, e := range common {
		var m map[[2]int]uint16
		switch e.Table.FullName() {
		case schema.NICEVSet:
			evs = append(evs, verify.SlotEV{Slot: int(e.Match[0].Value), EV: plan.EV(e.Params[0])})
			continue
		case schema.NICRowUSID:
			m = b.row
		case schema.NICT1USID:
			m = b.t1
		case schema.NICDownUSID:
			m = b.dn
		default:
			continue
		}
		m[[2]int{int(e.Match[0].Value), int(e.Match[1].Value)}] = uint16(e.Params[0])
	}
	b.evSetOK = bruteEVSetOK(p, evs)
	return b, nil
}

// bruteEVSetOK: sorted by slot, the set is exactly slots 0..n-1 with salt
// = slot and fields in range; the planes hold equal counts; within a plane
// the T1 counts (zeros included) differ by at most one.
func bruteEVSetOK(p *plan.Plan, evs []verify.SlotEV) bool {
	f := p.F
	evs = slices.Clone(evs)
	slices.SortFunc(evs, func(a, b verify.SlotEV) int { return a.Slot - b.Slot })
	if len(evs) != f.EV.SetSize {
		return false
	}
	perPlane := map[int]int{}
	perT1 := map[[2]int]int{}
	for i, e := range evs {
		fl := p.SplitEV(e.EV)
		if e.Slot != i || fl.Salt != i || fl.Plane >= f.Planes || fl.T1 >= f.T1Count {
			return false
		}
		perPlane[fl.Plane]++
		perT1[[2]int{fl.Plane, fl.T1}]++
	}
	for pl := 0; pl < f.Planes; pl++ {
		if perPlane[pl] != perPlane[0] {
			return false
		}
		lo, hi := perT1[[2]int{pl, 0}], perT1[[2]int{pl, 0}]
		for t := 0; t < f.T1Count; t++ {
			lo, hi = min(lo, perT1[[2]int{pl, t}]), max(hi, perT1[[2]int{pl, t}])
		}
		if hi-lo > 1 {
			return false
		}
	}
	return true
}

// wire is the cabling of the profile: T0 port k < down ports faces the NIC
// of host (row, k) on its plane port (plane + 1); T0 port down+s faces T1 s
// on its port row; T1 port r faces T0 r on its port down+s.
func (b *brute) wire(s plan.Switch, port int) (plan.Endpoint, bool) {
	f := b.p.F
	switch {
	case s.Role == plan.RoleT0 && port >= 0 && port < f.T0Down:
		return plan.Endpoint{Role: plan.RoleNIC, Plane: s.Plane, Index: s.Index*f.T0Down + port, Port: s.Plane + 1}, true
	case s.Role == plan.RoleT0 && port >= f.T0Down && port < f.T0Down+f.T1Count:
		return plan.Endpoint{Role: plan.RoleT1, Plane: s.Plane, Index: port - f.T0Down, Port: s.Index}, true
	case s.Role == plan.RoleT1 && port >= 0 && port < f.T0Count:
		return plan.Endpoint{Role: plan.RoleT0, Plane: s.Plane, Index: port, Port: f.T0Down + s.Index}, true
	}
	return plan.Endpoint{}, false
}

// send walks one carrier (uSIDs after the block) from host src's NIC port
// in plane pl and returns the host it is delivered to, or -1 and why not.
func (b *brute) send(src, pl int, carrier []uint16) (int, string) {
	f := b.p.F
	da := make([]uint16, 6)
	copy(da, carrier)
	key := func() uint64 { return uint64(f.Block)<<16 | uint64(da[0]) }
	// The NIC port of plane pl faces down port (src mod down) of T0 row
	// (src div down).
	at := plan.Endpoint{Role: plan.RoleT0, Plane: pl, Index: src / f.T0Down, Port: src % f.T0Down}
	if b.down[verify.Link{Switch: at.Switch(), Port: at.Port}] {
		return -1, "NIC link down"
	}
	for hops := 1; ; hops++ {
		if hops > verify.MaxHops {
			return -1, "too many hops"
		}
		s := at.Switch()
		k := swKey{s.Role == plan.RoleT1, s.Plane, s.Index}
		if b.own[k][key()] {
			if want, ok := b.templateOwner(pl, da[0]); ok && want != k {
				return -1, "uSID consumed by a switch the templates do not give it to"
			}
			da = append(da[1:], 0)
			if da[0] == 0 {
				return -1, "end of carrier"
			}
		}
		r, ok := b.routes[k][key()]
		if !ok {
			return -1, "route miss"
		}
		if b.down[verify.Link{Switch: s, Port: r.Port}] {
			return -1, "link down"
		}
		nb, ok := b.wire(s, r.Port)
		if !ok {
			return -1, "unwired port"
		}
		if (nb.Role == plan.RoleNIC) != r.ToHost {
			return -1, "to_host flag wrong"
		}
		if nb.Role != plan.RoleNIC {
			at = nb
			continue
		}
		rx, ok := b.rx[[2]int{nb.Index, nb.Port}]
		if !ok || rx.Plane != pl {
			return -1, "NIC port does not know its plane"
		}
		if da[0] != rx.OwnDown || da[1] != 0 {
			return -1, "not the NIC port's own uDL"
		}
		return nb.Index, ""
	}
}

// run walks every path and returns how many there are and how many were
// delivered.
func (b *brute) run() (paths, delivered uint64) {
	f := b.p.F
	lose := func(pl, t1, srcRow, dstRow int, why string) {
		b.why[why]++
		b.lostBy[lostClass{pl, t1, srcRow, dstRow}]++
	}
	for src := 0; src < f.Hosts(); src++ {
		srcRow := src / f.T0Down
		for pl := 0; pl < f.Planes; pl++ {
			self, okSelf := b.self[[2]int{src, pl}]
			for dst := 0; dst < f.Hosts(); dst++ {
				if dst == src {
					continue
				}
				dstRow, dstPort := dst/f.T0Down, dst%f.T0Down
				// The EV picks the T1; a pair on one T0 has one path.
				t1s := f.T1Count
				if dstRow == srcRow {
					t1s = 1
				}
				for s := 0; s < t1s; s++ {
					paths++
					t1 := s
					if dstRow == srcRow {
						t1 = -1
					}
					if !okSelf || self.Row != srcRow {
						lose(pl, -1, srcRow, -1, "NIC does not know its row")
						continue
					}
					// The NIC program: same row -> own T0, uDL; otherwise
					// own T0, T1, destination row, uDL. A missing template
					// drops the packet.
					dn, ok := b.dn[[2]int{pl, dstPort}]
					carrier := []uint16{self.OwnT0, dn}
					if dstRow != self.Row {
						u1, ok1 := b.t1[[2]int{pl, s}]
						ur, ok2 := b.row[[2]int{pl, dstRow}]
						ok = ok && ok1 && ok2
						carrier = []uint16{self.OwnT0, u1, ur, dn}
					}
					if !ok {
						lose(pl, t1, srcRow, dstRow, "no template")
						continue
					}
					got, why := b.send(src, pl, carrier)
					switch {
					case got == dst:
						delivered++
					case why == "NIC link down":
						lose(pl, -1, srcRow, -1, why)
					case got >= 0:
						lose(pl, t1, srcRow, dstRow, "delivered to the wrong host")
					default:
						lose(pl, t1, srcRow, dstRow, why)
					}
				}
			}
		}
	}
	return paths, delivered
}

// templateOwner is the switch whose uSID u is in the NIC templates of plane
// pl (a row's T0 or a T1).
func (b *brute) templateOwner(pl int, u uint16) (swKey, bool) {
	for k, v := range b.row {
		if k[0] == pl && v == u {
			return swKey{false, pl, k[1]}, true
		}
	}
	for k, v := range b.t1 {
		if k[0] == pl && v == u {
			return swKey{true, pl, k[1]}, true
		}
	}
	return swKey{}, false
}
