package tables

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// Generator computes the entries of every device of one fabric.
type Generator struct {
	Plan   *plan.Plan
	Switch *schema.Program
	NIC    *schema.Program

	myUSID, route, thresholds                                     *schema.Table
	shift, forward, toHost, setThresholds                         *schema.Action
	evSet, evBackup, rxPlane, planeSelf, rowUSID, t1USID, down    *schema.Table
	setEV, setBackupEV, setRxPlane, setSelf, setRow, setT1, setDn *schema.Action
}

// NewGenerator prepares the generator for p's fabric.
func NewGenerator(p *plan.Plan) *Generator {
	g := &Generator{Plan: p, Switch: schema.Switch(p.F), NIC: schema.NIC(p.F)}
	g.myUSID = mustTable(g.Switch, schema.SwitchMyUSID)
	g.route = mustTable(g.Switch, schema.SwitchRoute)
	g.thresholds = mustTable(g.Switch, schema.SwitchQueueThresholds)
	g.shift = mustAction(g.myUSID, "usid_shift")
	g.forward = mustAction(g.route, "forward")
	g.toHost = mustAction(g.route, "forward_to_host")
	g.setThresholds = mustAction(g.thresholds, "set_queue_thresholds")

	g.evSet = mustTable(g.NIC, schema.NICEVSet)
	g.evBackup = mustTable(g.NIC, schema.NICEVBackup)
	g.rxPlane = mustTable(g.NIC, schema.NICRxPlane)
	g.planeSelf = mustTable(g.NIC, schema.NICPlaneSelf)
	g.rowUSID = mustTable(g.NIC, schema.NICRowUSID)
	g.t1USID = mustTable(g.NIC, schema.NICT1USID)
	g.down = mustTable(g.NIC, schema.NICDownUSID)
	g.setEV = mustAction(g.evSet, "set_ev")
	g.setBackupEV = mustAction(g.evBackup, "set_backup_ev")
	g.setRxPlane = mustAction(g.rxPlane, "set_rx_plane")
	g.setSelf = mustAction(g.planeSelf, "set_self")
	g.setRow = mustAction(g.rowUSID, "set_row_usid")
	g.setT1 = mustAction(g.t1USID, "set_t1_usid")
	g.setDn = mustAction(g.down, "set_down_usid")
	return g
}

// mustTable and mustAction look up objects the schema package defines next
// to this code; a miss is a programming error, caught by every test.
func mustTable(p *schema.Program, name string) *schema.Table {
	t := p.Table(name)
	if t == nil {
		panic(fmt.Sprintf("tables: program %s has no table %s", p.Name, name))
	}
	return t
}

func mustAction(t *schema.Table, name string) *schema.Action {
	for _, r := range t.Actions {
		if r.Action.Name == name {
			return r.Action
		}
	}
	panic(fmt.Sprintf("tables: table %s has no action %s", t.FullName(), name))
}

// entryBuilder hands out entries whose match and param slices come from
// shared backing arrays: a device's entries cost three allocations.
type entryBuilder struct {
	out     []entry.Entry
	matches []entry.Match
	params  []uint64
}

func newBuilder(dst []entry.Entry, n int) *entryBuilder {
	return &entryBuilder{out: dst[:0], matches: make([]entry.Match, 0, 2*n), params: make([]uint64, 0, 3*n)}
}

func (b *entryBuilder) add(t *schema.Table, a *schema.Action, match []entry.Match, params ...uint64) {
	m0 := len(b.matches)
	b.matches = append(b.matches, match...)
	p0 := len(b.params)
	b.params = append(b.params, params...)
	b.out = append(b.out, entry.Entry{Table: t, Action: a,
		Match:  b.matches[m0:len(b.matches):len(b.matches)],
		Params: b.params[p0:len(b.params):len(b.params)]})
}

func exact(v ...uint64) []entry.Match {
	m := make([]entry.Match, len(v))
	for i, x := range v {
		m[i].Value = x
	}
	return m
}

// SwitchEntryCount is the number of entries SwitchEntries returns for s.
func (g *Generator) SwitchEntryCount(s plan.Switch) int {
	f := g.Plan.F
	if s.Role == plan.RoleT1 {
		return 1 + f.T0Count + 1
	}
	return 1 + f.T1Count + f.T0Down + 2
}

// SwitchEntries returns the static tables of switch s, appended to dst[:0]:
// its own uSID (shift), one /48 route per neighbour uSID, and the default
// queue thresholds of each port class it has.
func (g *Generator) SwitchEntries(s plan.Switch, dst []entry.Entry) []entry.Entry {
	b := newBuilder(dst, g.SwitchEntryCount(s))
	g.switchEntries(s, b)
	return b.out
}

// SwitchOwnEntries returns what is switch s's own of its static tables
// (its my_usid entry), appended to dst[:0]: SwitchEntries(s) is these
// followed by SwitchPlaneEntries(s.Role, s.Plane), by construction. A
// build renders the rest once per role and plane.
func (g *Generator) SwitchOwnEntries(s plan.Switch, dst []entry.Entry) []entry.Entry {
	b := newBuilder(dst, 1)
	g.switchOwn(s, b)
	return b.out
}

// SwitchPlaneEntries returns the static entries every switch of the role
// in the plane holds alike (routes and thresholds), appended to dst[:0].
func (g *Generator) SwitchPlaneEntries(role plan.Role, plane int, dst []entry.Entry) []entry.Entry {
	b := newBuilder(dst, g.SwitchEntryCount(plan.Switch{Role: role, Plane: plane}))
	g.switchPlane(role, plane, b)
	return b.out
}

func (g *Generator) switchEntries(s plan.Switch, b *entryBuilder) {
	g.switchOwn(s, b)
	g.switchPlane(s.Role, s.Plane, b)
}

func (g *Generator) switchOwn(s plan.Switch, b *entryBuilder) {
	p := g.Plan
	m := [1]entry.Match{{Value: p.Key48(p.SwitchUSID(s))}}
	b.add(g.myUSID, g.shift, m[:])
}

// switchPlane adds what every switch of role in plane holds: nothing in
// it may depend on the switch's index (SwitchOwnEntries).
func (g *Generator) switchPlane(role plan.Role, plane int, b *entryBuilder) {
	p, f := g.Plan, g.Plan.F
	var m [1]entry.Match
	key := func(u uint16) []entry.Match { m[0].Value = p.Key48(u); return m[:] }
	thresholds := func(toHost uint64) {
		m[0].Value = toHost
		b.add(g.thresholds, g.setThresholds, m[:], uint64(f.Trim.ThresholdPackets), uint64(f.Trim.ECNPackets), uint64(f.Trim.SizeBytes))
	}
	switch role {
	case plan.RoleT0:
		for t1 := 0; t1 < f.T1Count; t1++ {
			b.add(g.route, g.forward, key(p.T1USID(plane, t1)), uint64(p.T0UpPort(t1)))
		}
		for k := 0; k < f.T0Down; k++ {
			b.add(g.route, g.toHost, key(p.DownUSID(plane, k)), uint64(p.T0DownPort(k)))
		}
		thresholds(0)
		thresholds(1)
	case plan.RoleT1:
		for r := 0; r < f.T0Count; r++ {
			b.add(g.route, g.forward, key(p.T0USID(plane, r)), uint64(p.T1DownPort(r)))
		}
		thresholds(0)
	}
}

// NICCommonEntries returns the tables every NIC of the fabric holds alike:
// the base and backup EV sets and the uSID templates of every T0 row, T1 and
// T0 down port of every plane. Their size is linear in the fabric (P x (T0 +
// T1 + down ports) + 2 x EV set), never per destination.
func (g *Generator) NICCommonEntries() []entry.Entry {
	p, f := g.Plan, g.Plan.F
	backup := p.EVBackupSet()
	n := f.EV.SetSize + len(backup) + f.Planes*(f.T0Count+f.T1Count+f.T0Down)
	b := newBuilder(make([]entry.Entry, 0, n), n)
	for slot, ev := range p.EVSet() {
		b.add(g.evSet, g.setEV, exact(uint64(slot)), uint64(ev))
	}
	for slot, ev := range backup {
		b.add(g.evBackup, g.setBackupEV, exact(uint64(slot)), uint64(ev))
	}
	for pl := 0; pl < f.Planes; pl++ {
		for r := 0; r < f.T0Count; r++ {
			b.add(g.rowUSID, g.setRow, exact(uint64(pl), uint64(r)), uint64(p.T0USID(pl, r)))
		}
	}
	for pl := 0; pl < f.Planes; pl++ {
		for s := 0; s < f.T1Count; s++ {
			b.add(g.t1USID, g.setT1, exact(uint64(pl), uint64(s)), uint64(p.T1USID(pl, s)))
		}
	}
	for pl := 0; pl < f.Planes; pl++ {
		for k := 0; k < f.T0Down; k++ {
			b.add(g.down, g.setDn, exact(uint64(pl), uint64(k)), uint64(p.DownUSID(pl, k)))
		}
	}
	return b.out
}

// NICEntryCount is the number of entries NICEntries returns.
func (g *Generator) NICEntryCount() int { return 2 * g.Plan.F.Planes }

// NICEntries returns the identity of host h's NIC, appended to dst[:0]: its
// row part (NICRowEntries) and its port part (NICPortEntries).
func (g *Generator) NICEntries(h plan.Host, dst []entry.Entry) []entry.Entry {
	dst = g.NICPortEntries(h.Port, dst)
	return append(dst, g.NICRowEntries(h.Row, nil)...)
}

// NICPortEntries returns, appended to dst[:0], what every NIC on T0 down
// port k (of any row) holds alike: for every plane, the NIC port facing it
// and the uDL uSID that port owns.
func (g *Generator) NICPortEntries(k int, dst []entry.Entry) []entry.Entry {
	p, f := g.Plan, g.Plan.F
	b := newBuilder(dst, f.Planes)
	var m [1]entry.Match
	for pl := 0; pl < f.Planes; pl++ {
		m[0].Value = uint64(plan.NICPlanePort(pl))
		b.add(g.rxPlane, g.setRxPlane, m[:], uint64(pl), uint64(p.DownUSID(pl, k)))
	}
	return b.out
}

// NICRowEntries returns, appended to dst[:0], what every NIC on T0 row r
// holds alike: for every plane, its own T0 uSID (the first uSID of every
// path it sends) and its row.
func (g *Generator) NICRowEntries(r int, dst []entry.Entry) []entry.Entry {
	p, f := g.Plan, g.Plan.F
	b := newBuilder(dst, f.Planes)
	var m [1]entry.Match
	for pl := 0; pl < f.Planes; pl++ {
		m[0].Value = uint64(pl)
		b.add(g.planeSelf, g.setSelf, m[:], uint64(p.T0USID(pl, r)), uint64(r))
	}
	return b.out
}

// SwitchMyUSID reports whether switch s's my_usid table, as SwitchEntries
// returns it, holds key (block | uSID, the /48 the switch matches on) with
// the action usid_shift. It answers one lookup without building the
// switch's entries, for a walk over a large fabric; TestSwitchLookup checks
// it against SwitchEntries.
func (g *Generator) SwitchMyUSID(s plan.Switch, key uint64) bool {
	return key == g.Plan.Key48(g.Plan.SwitchUSID(s))
}

// SwitchRoute is switch s's usid_route entry for key (block | uSID), as
// SwitchEntries returns it: the egress port and whether the action is
// forward_to_host; ok is false when the table holds no entry for key.
func (g *Generator) SwitchRoute(s plan.Switch, key uint64) (port int, toHost, ok bool) {
	p, f := g.Plan, g.Plan.F
	if key>>16 != uint64(f.Block) {
		return 0, false, false
	}
	u := uint16(key)
	l := f.USID
	index := int(u) & (1<<l.IndexBits - 1)
	kind := int(u) >> l.IndexBits & (1<<l.KindBits - 1)
	plane := int(u) >> (l.IndexBits + l.KindBits)
	if plane != s.Plane || p.USID(plane, kind, index) != u {
		return 0, false, false
	}
	switch {
	case s.Role == plan.RoleT0 && kind == plan.KindT1 && index < f.T1Count:
		return p.T0UpPort(index), false, true
	case s.Role == plan.RoleT0 && kind == plan.KindDown && index < f.T0Down:
		return p.T0DownPort(index), true, true
	case s.Role == plan.RoleT1 && kind == plan.KindT0 && index < f.T0Count:
		return p.T1DownPort(index), false, true
	}
	return 0, false, false
}
