package verify

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// MaxHops is the most switches a path may cross (T0, T1, T0).
const MaxHops = 3

// Link is one fabric link, named by one of its switch ends.
type Link struct {
	Switch plan.Switch
	Port   int
}

// Options tune a verification.
type Options struct {
	// Down lists links taken down before the walk: a packet routed onto one
	// is lost.
	Down []Link
	// Progress, if set, is called after each plane.
	Progress func(planesDone, planes int)
	// MaxFailures bounds the failures kept in the report (default 20).
	MaxFailures int
}

// Lost is a class of paths that does not deliver: every host on SrcRow
// sending over T1 in Plane to the listed ports of DstRow.
type Lost struct {
	Plane, T1, SrcRow, DstRow int
	// Pairs is the number of (source host, destination host) pairs lost in
	// this class.
	Pairs  uint64
	Reason string
}

// Report is the outcome of a verification.
type Report struct {
	// Paths is the number of (source host, destination host, plane, T1)
	// paths walked; a pair on the same T0 has one path per plane.
	Paths uint64
	// Delivered of them arrived at the right NIC port, within MaxHops, in
	// their plane.
	Delivered uint64
	// States is the number of distinct (switch, uSID level, uSID) states
	// walked: the work actually done.
	States int
	// MaxHopsSeen is the longest delivered path, in switches.
	MaxHopsSeen int
	// Failures are the first problems found (bounded by MaxFailures), each
	// named by device, table and key, with the path classes it breaks.
	Failures []Failure
	// Lost lists the path classes that did not deliver, by plane, T1 and
	// rows, when any did not.
	Lost []Lost
	// EVSet is the NICs' EV set as read, slot by slot, when it is sound
	// (see CheckEVSet); nil otherwise.
	EVSet []plan.EV
	// LostBySource counts the lost paths of each source host, by host
	// index (nil when none is lost): Summarize turns it into shares.
	LostBySource []uint64
}

// OK reports whether every path was delivered.
func (r *Report) OK() bool { return r.Delivered == r.Paths && len(r.Failures) == 0 }

// Run walks every path of the fabric through the entries src serves.
func Run(ctx context.Context, p *plan.Plan, src Source, opt Options) (*Report, error) {
	rep, _, err := run(ctx, p, src, opt, false)
	return rep, err
}

// run is Run; with keep it also returns each plane's walk, its states
// memoised (for the sweep).
func run(ctx context.Context, p *plan.Plan, src Source, opt Options, keep bool) (*Report, []*planeWalk, error) {
	if opt.MaxFailures == 0 {
		opt.MaxFailures = 20
	}
	f := p.F
	commonEntries, err := src.NICCommonEntries()
	if err != nil {
		return nil, nil, fmt.Errorf("NIC common tables: %w", err)
	}
	common, err := DecodeNICCommon(commonEntries)
	if err != nil {
		return nil, nil, fmt.Errorf("NIC common tables: %w", err)
	}
	nics, err := decodeNICs(p, src)
	if err != nil {
		return nil, nil, err
	}
	rep := &Report{}
	fs := newFailureSet(rep, opt.MaxFailures)
	loc, _ := src.(Locator)
	evSpec := EVSetSpec{Device: EveryNIC, Table: schema.NICEVSet, Size: f.EV.SetSize}
	if loc != nil {
		evSpec.File = loc.NICCommonFile()
	}
	evFailures := CheckEVSet(p, evSpec, common.EVs)
	for i := range evFailures {
		fs.add(&evFailures[i])
	}
	if len(evFailures) == 0 {
		rep.EVSet = make([]plan.EV, f.EV.SetSize)
		for _, e := range common.EVs {
			rep.EVSet[e.Slot] = e.EV
		}
		// The backup set, slot by slot against the base set as read; a
		// plane with one T1 has no other path, and the set is empty.
		backupSpec := evSpec
		backupSpec.Table, backupSpec.FirstSalt, backupSpec.BackupOf = schema.NICEVBackup, f.EV.SetSize, rep.EVSet
		var backupFailures []Failure
		if f.T1Count > 1 {
			backupFailures = CheckEVSet(p, backupSpec, common.Backup)
		} else if len(common.Backup) > 0 {
			backupFailures = []Failure{{Device: backupSpec.Device, File: backupSpec.File, Table: backupSpec.Table, Key: slotsKey([]int{common.Backup[0].Slot}),
				Problem: fmt.Sprintf("table %s holds %d entries, but a plane has one T1: there is no other path to back up with", backupSpec.Table, len(common.Backup))}}
		}
		for i := range backupFailures {
			fs.add(&backupFailures[i])
		}
	}
	down := map[Link]bool{}
	for _, l := range opt.Down {
		down[l] = true
		if nb, ok := p.Neighbor(l.Switch, l.Port); ok && nb.Role != plan.RoleNIC {
			down[Link{nb.Switch(), nb.Port}] = true
		}
	}
	// The planes are independent: walk them at once, each into its own
	// report, and add those up in plane order (the failures in the order one
	// walk of the planes in turn finds them).
	planes := make([]Report, f.Planes)
	errs := make([]error, f.Planes)
	var walks []*planeWalk
	if keep {
		walks = make([]*planeWalk, f.Planes)
	}
	var next atomic.Int64
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), f.Planes) {
		wg.Go(func() {
			for {
				pl := int(next.Add(1) - 1)
				if pl >= f.Planes {
					return
				}
				if errs[pl] = ctx.Err(); errs[pl] != nil {
					continue
				}
				w, err := newPlaneWalk(p, pl, src, common, nics, down, newFailureSet(&planes[pl], 0), loc)
				if err != nil {
					errs[pl] = err
					continue
				}
				w.run()
				planes[pl].States = len(w.memo)
				if keep {
					walks[pl] = w
				}
				if opt.Progress != nil {
					mu.Lock()
					done++
					opt.Progress(done, f.Planes)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for pl := range planes {
		if errs[pl] != nil {
			return nil, nil, errs[pl]
		}
		r := &planes[pl]
		rep.Paths += r.Paths
		rep.Delivered += r.Delivered
		rep.States += r.States
		rep.MaxHopsSeen = max(rep.MaxHopsSeen, r.MaxHopsSeen)
		fs.merge(r.Failures)
		rep.Lost = append(rep.Lost, r.Lost...)
		if r.LostBySource != nil {
			if rep.LostBySource == nil {
				rep.LostBySource = make([]uint64, f.Hosts())
			}
			for h, n := range r.LostBySource {
				rep.LostBySource[h] += n
			}
		}
	}
	sort.Slice(rep.Lost, func(i, j int) bool {
		a, b := rep.Lost[i], rep.Lost[j]
		if a.Plane != b.Plane {
			return a.Plane < b.Plane
		}
		if a.T1 != b.T1 {
			return a.T1 < b.T1
		}
		if a.SrcRow != b.SrcRow {
			return a.SrcRow < b.SrcRow
		}
		return a.DstRow < b.DstRow
	})
	return rep, walks, nil
}

// nicTables is every NIC's identity, flattened: index host*planes + plane.
type nicTables struct {
	ok      []bool
	ownT0   []uint16
	ownRow  []int32
	rxPlane []int16  // plane the port p+1 says it faces
	rxDown  []uint16 // uDL the port p+1 owns
}

func decodeNICs(p *plan.Plan, src Source) (*nicTables, error) {
	f := p.F
	n := f.Hosts() * f.Planes
	t := &nicTables{ok: make([]bool, n), ownT0: make([]uint16, n), ownRow: make([]int32, n),
		rxPlane: make([]int16, n), rxDown: make([]uint16, n)}
	if parts, ok := src.(NICPartSource); ok {
		return decodeNICParts(p, parts, t)
	}
	for h := 0; h < f.Hosts(); h++ {
		host := p.HostByIndex(h)
		entries, err := src.NICEntries(host)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.HostName(host), err)
		}
		id, err := DecodeNIC(entries)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.HostName(host), err)
		}
		for pl := 0; pl < f.Planes; pl++ {
			i := h*f.Planes + pl
			self, okSelf := id.Self[pl]
			rx, okRx := id.RxPlane[plan.NICPlanePort(pl)]
			// Sending needs only plane_self; rx_plane is for receiving
			// (arrive checks it).
			t.ok[i] = okSelf
			t.ownT0[i], t.ownRow[i] = self.OwnT0, int32(self.Row)
			t.rxPlane[i], t.rxDown[i] = int16(rx.Plane), rx.OwnDown
			if !okRx {
				t.rxPlane[i] = -1
			}
		}
	}
	return t, nil
}

// decodeNICParts fills t from the parts NICs are made of: each row's and
// each down port's entries decoded once, then every NIC's identity is what
// DecodeNIC gives for its port's entries followed by its row's (a later
// entry for the same key wins, as in DecodeNIC).
func decodeNICParts(p *plan.Plan, src NICPartSource, t *nicTables) (*nicTables, error) {
	f := p.F
	decode := func(n int, get func(int) ([]entry.Entry, error), name func(int) string) ([]*NICIdentity, error) {
		out := make([]*NICIdentity, n)
		for i := range out {
			entries, err := get(i)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name(i), err)
			}
			if out[i], err = DecodeNIC(entries); err != nil {
				return nil, fmt.Errorf("%s: %w", name(i), err)
			}
		}
		return out, nil
	}
	ports, err := decode(f.T0Down, src.NICPortEntries, func(k int) string { return fmt.Sprintf("NICs on down port %d", k) })
	if err != nil {
		return nil, err
	}
	rows, err := decode(f.T0Count, src.NICRowEntries, func(r int) string { return fmt.Sprintf("NICs of row %d", r) })
	if err != nil {
		return nil, err
	}
	// Per part and plane: plane_self and rx_plane as the part holds them.
	type flat struct {
		selfOK, rxOK bool
		self         SelfEntry
		rx           RxPort
	}
	flatten := func(ids []*NICIdentity) [][]flat {
		out := make([][]flat, len(ids))
		for i, id := range ids {
			out[i] = make([]flat, f.Planes)
			for pl := range out[i] {
				e := &out[i][pl]
				e.self, e.selfOK = id.Self[pl]
				e.rx, e.rxOK = id.RxPlane[plan.NICPlanePort(pl)]
			}
		}
		return out
	}
	pf, rf := flatten(ports), flatten(rows)
	for h := 0; h < f.Hosts(); h++ {
		host := p.HostByIndex(h)
		for pl := 0; pl < f.Planes; pl++ {
			i := h*f.Planes + pl
			a, b := &pf[host.Port][pl], &rf[host.Row][pl]
			self, okSelf := a.self, a.selfOK
			if b.selfOK {
				self, okSelf = b.self, true
			}
			rx, okRx := a.rx, a.rxOK
			if b.rxOK {
				rx, okRx = b.rx, true
			}
			t.ok[i] = okSelf
			t.ownT0[i], t.ownRow[i] = self.OwnT0, int32(self.Row)
			t.rxPlane[i], t.rxDown[i] = int16(rx.Plane), rx.OwnDown
			if !okRx {
				t.rxPlane[i] = -1
			}
		}
	}
	return t, nil
}

// Path templates: the uSID lists a NIC builds.
const (
	tmplLong  = 0 // own T0, T1, destination row, destination down port
	tmplShort = 1 // own T0, destination down port (same T0)
)

// Levels of each template: what the uSID at each level names.
const (
	lvlOwn = iota
	lvlT1
	lvlRow
	lvlDown
)

var templates = [2][]int{
	tmplLong:  {lvlOwn, lvlT1, lvlRow, lvlDown},
	tmplShort: {lvlOwn, lvlDown},
}

// stateKey packs a state into one word (a cheap map key): the template,
// the level of the active uSID, the depth (the number of switches the
// packet crossed before this one: a path is delivered only within MaxHops
// switches, and tables that detour a packet can bring it to one state at
// different depths), the switch, the active uSID and, for a same-T0 packet,
// its destination row (the sender's own row, which no uSID of its carrier
// names; -1 for the long template). Switches and rows number fewer than
// 2^16 (a switch has at most fabric.MaxPorts ports).
type stateKey uint64

func newStateKey(tmpl uint8, level, depth, sw int, usid uint16, row int) stateKey {
	return stateKey(uint64(tmpl)<<63 | uint64(level&7)<<60 | uint64(depth&0xff)<<52 |
		uint64(sw&0xffff)<<36 | uint64(usid)<<20 | uint64((row+1)&0xfffff))
}

// usidIndex maps a uSID to the index of its device in a template family,
// or -1.
type usidIndex []int32

func newUSIDIndex() usidIndex {
	x := make(usidIndex, 1<<16)
	for i := range x {
		x[i] = -1
	}
	return x
}

func (x usidIndex) get(v uint16) (int, bool) { i := x[v]; return int(i), i >= 0 }

type result struct {
	busy bool // being evaluated: meeting it again is a loop
	hops int
	// nic is the host a last-level state delivers to, or -1.
	nic int
	// lost counts the completions of this state that do not deliver.
	lost uint64
	// childLost counts lost completions per member of the next level's
	// family (nil at the last level), and childReason says why (nil when
	// nothing is lost: see why).
	childLost   []uint64
	childReason []*Failure
	lostList    []int32 // see lostAt
	// children are the states each member of the next level's family leads
	// to (nil where the packet was lost or delivered at that hop).
	children []*result
	// reason is why lost completions are lost (the first cause found).
	reason *Failure
}

// lostAt lists the members of the next level's family whose completions
// are (partly) lost, in order; computed once per state.
func (r *result) lostAt() []int32 {
	if r.lostList == nil && r.childLost != nil {
		r.lostList = []int32{}
		for i, l := range r.childLost {
			if l > 0 {
				r.lostList = append(r.lostList, int32(i))
			}
		}
	}
	return r.lostList
}

// child is the state member i of the next level's family leads to, or nil.
func (r *result) child(i int) *result {
	if r.children == nil {
		return nil
	}
	return r.children[i]
}

// why is the reason the completions through member i of the next level's
// family are lost.
func (r *result) why(i int) *Failure {
	if r.childReason == nil {
		return nil
	}
	return r.childReason[i]
}

type planeWalk struct {
	p      *plan.Plan
	plane  int
	common *NICCommon
	nics   *nicTables
	rep    *Report
	fs     *failureSet
	loc    Locator // nil when the source is not files

	sw        []SwitchLookup // T0s then T1s
	family    [4][]uint16    // values of each level kind (lvlT1, lvlRow, lvlDown)
	rowOf     usidIndex
	downOf    usidIndex
	t1Of      usidIndex
	memo      map[stateKey]*result
	lostIndex map[lostKey]int
	// classSeen are the (failure, lost class) pairs already noted.
	classSeen map[failureLost]bool
	// downAt says which ports of the plane's switches are down (index
	// sw*downStride + port); nil when none is.
	downAt     []bool
	downStride int
	selfKey    string // "plane N", the plane_self key
}

type failureLost struct {
	failure int
	class   lostKey
}

func newPlaneWalk(p *plan.Plan, pl int, src Source, common *NICCommon, nics *nicTables, down map[Link]bool, fs *failureSet, loc Locator) (*planeWalk, error) {
	f := p.F
	w := &planeWalk{p: p, plane: pl, common: common, nics: nics, rep: fs.rep, fs: fs, loc: loc,
		rowOf: newUSIDIndex(), downOf: newUSIDIndex(), t1Of: newUSIDIndex(), memo: map[stateKey]*result{}, lostIndex: map[lostKey]int{},
		classSeen: map[failureLost]bool{}, selfKey: fmt.Sprintf("plane %d", pl)}
	for l := range down {
		if l.Switch.Plane != pl || l.Port < 0 || l.Switch.Index < 0 {
			continue
		}
		if l.Switch.Role == plan.RoleT0 && l.Switch.Index >= f.T0Count || l.Switch.Role == plan.RoleT1 && l.Switch.Index >= f.T1Count {
			continue
		}
		if w.downAt == nil {
			w.downStride = max(f.T0Down+f.T0Up, f.T0Count)
			w.downAt = make([]bool, (f.T0Count+f.T1Count)*w.downStride)
		}
		if l.Port < w.downStride {
			w.downAt[w.switchIndex(l.Switch)*w.downStride+l.Port] = true
		}
	}
	lookups, _ := src.(LookupSource)
	for i := 0; i < f.T0Count+f.T1Count; i++ {
		s := w.switchAt(i)
		if lookups != nil {
			l, err := lookups.SwitchLookup(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name(s), err)
			}
			w.sw = append(w.sw, l)
			continue
		}
		entries, err := src.SwitchEntries(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name(s), err)
		}
		st, err := DecodeSwitch(entries)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name(s), err)
		}
		w.sw = append(w.sw, st)
	}
	fill := func(kind, n int, m map[[2]int]uint16, what string, rev usidIndex) error {
		w.family[kind] = make([]uint16, n)
		for i := 0; i < n; i++ {
			v, ok := m[[2]int{pl, i}]
			if !ok {
				return fmt.Errorf("NIC tables: plane %d: no %s template for %d", pl, what, i)
			}
			w.family[kind][i] = v
			if rev != nil {
				if j, dup := rev.get(v); dup {
					return fmt.Errorf("NIC tables: plane %d: %s %d and %d share the uSID %#04x: their paths cannot be told apart", pl, what, j, i, v)
				}
				rev[v] = int32(i)
			}
		}
		return nil
	}
	if err := fill(lvlT1, f.T1Count, common.T1, "T1", w.t1Of); err != nil {
		return nil, err
	}
	if err := fill(lvlRow, f.T0Count, common.Row, "row", w.rowOf); err != nil {
		return nil, err
	}
	if err := fill(lvlDown, f.T0Down, common.Down, "down port", w.downOf); err != nil {
		return nil, err
	}
	return w, nil
}

// isDown reports whether port of switch sw (its index in the plane) is
// down.
func (w *planeWalk) isDown(sw, port int) bool {
	return w.downAt != nil && port >= 0 && port < w.downStride && w.downAt[sw*w.downStride+port]
}

func (w *planeWalk) switchAt(i int) plan.Switch {
	if i < w.p.F.T0Count {
		return plan.Switch{Role: plan.RoleT0, Plane: w.plane, Index: i}
	}
	return plan.Switch{Role: plan.RoleT1, Plane: w.plane, Index: i - w.p.F.T0Count}
}

func (w *planeWalk) switchIndex(s plan.Switch) int {
	if s.Role == plan.RoleT1 {
		return w.p.F.T0Count + s.Index
	}
	return s.Index
}

// switchFailure is a problem of switch sw: in table (with key) when they
// are given.
func (w *planeWalk) switchFailure(sw int, table, key, format string, args ...any) *Failure {
	s := w.switchAt(sw)
	f := &Failure{Device: w.p.Name(s), Table: table, Key: key, Problem: fmt.Sprintf(format, args...)}
	if w.loc != nil {
		f.File = w.loc.SwitchFile(s)
	}
	return f
}

// nicFailure is a problem of host h's NIC, in its own table.
func (w *planeWalk) nicFailure(h plan.Host, table, key, format string, args ...any) *Failure {
	f := &Failure{Device: w.p.HostName(h), Table: table, Key: key, Problem: fmt.Sprintf(format, args...)}
	if w.loc != nil {
		f.File = w.loc.NICFile(h, table)
	}
	return f
}

// commonFailure is a problem of a table every NIC holds.
func (w *planeWalk) commonFailure(table, key, format string, args ...any) *Failure {
	f := &Failure{Device: EveryNIC, Table: table, Key: key, Problem: fmt.Sprintf(format, args...)}
	if w.loc != nil {
		f.File = w.loc.NICCommonFile()
	}
	return f
}

// completions is the number of uSID lists that share a state at level.
func (w *planeWalk) completions(tmpl uint8, level int) uint64 {
	n := uint64(1)
	for _, kind := range templates[tmpl][level+1:] {
		n *= uint64(len(w.family[kind]))
	}
	return n
}

func (w *planeWalk) familyAt(tmpl uint8, level int) []uint16 {
	t := templates[tmpl]
	if level >= len(t) {
		return []uint16{0} // end of carrier
	}
	return w.family[t[level]]
}

// owner is the switch the NIC templates give the uSID at level of tmpl to
// (the source or destination T0, or the EV's T1).
func (w *planeWalk) owner(tmpl uint8, level int, v uint16) (int, bool) {
	switch templates[tmpl][level] {
	case lvlOwn, lvlRow:
		r, ok := w.rowOf.get(v)
		return r, ok
	case lvlT1:
		t, ok := w.t1Of.get(v)
		return w.p.F.T0Count + t, ok
	}
	return 0, false
}

// hop is where a switch sends a packet whose active uSID is active.
type hop struct {
	nb     plan.Endpoint
	reason *Failure // non-nil: the packet is lost here
	// wrong is set when the route exists but leads elsewhere than the
	// address plan puts the uSID's owner: the cause of whatever happens to
	// the packet next.
	wrong *Failure
}

// planPort is the port switch s sends uSID v out of by the address plan:
// towards v's owner when s is wired to it (a T0 to a T1, a T1 to a T0, a T0
// to its own down ports). ok is false when s has no reason to hold v.
func (w *planeWalk) planPort(s plan.Switch, v uint16) (port int, ok bool) {
	pl, kind, index, ok := usidOwner(w.p, v)
	if !ok || pl != w.plane {
		return 0, false
	}
	switch {
	case s.Role == plan.RoleT0 && kind == plan.KindT1:
		return w.p.T0UpPort(index), true
	case s.Role == plan.RoleT1 && kind == plan.KindT0:
		return w.p.T1DownPort(index), true
	case s.Role == plan.RoleT0 && kind == plan.KindDown:
		return w.p.T0DownPort(index), true
	}
	return 0, false
}

// endpointName names what a port faces.
func (w *planeWalk) endpointName(nb plan.Endpoint) string {
	if nb.Role == plan.RoleNIC {
		return w.p.HostName(w.p.HostByIndex(nb.Index))
	}
	return w.p.Name(nb.Switch())
}

// portText is "port 3 (p0-t1-1)", or "port 9 (not wired)".
func (w *planeWalk) portText(s plan.Switch, port int) string {
	if nb, ok := w.p.Neighbor(s, port); ok {
		return fmt.Sprintf("port %d (%s)", port, w.endpointName(nb))
	}
	return fmt.Sprintf("port %d (not wired)", port)
}

func (w *planeWalk) forward(sw int, active uint16) hop {
	s := w.switchAt(sw)
	key := w.p.Key48(active)
	r, ok := w.sw[sw].Route(key)
	if !ok {
		kt := keyText(w.p, active)
		return hop{reason: w.switchFailure(sw, schema.SwitchRoute, kt, "table %s has no entry for key %s", schema.SwitchRoute, kt)}
	}
	if w.isDown(sw, r.Port) {
		return hop{reason: w.switchFailure(sw, "", fmt.Sprintf("port %d", r.Port), "%s is down", w.portText(s, r.Port))}
	}
	var wrong *Failure
	if want, planned := w.planPort(s, active); planned && r.Port != want {
		owner, _ := w.p.Neighbor(s, want)
		kt := keyText(w.p, active)
		wrong = w.switchFailure(sw, schema.SwitchRoute, kt, "table %s entry for key %s sends to %s, not to %s (port %d)",
			schema.SwitchRoute, kt, w.portText(s, r.Port), w.endpointName(owner), want)
	}
	nb, ok := w.p.Neighbor(s, r.Port)
	if !ok {
		kt := keyText(w.p, active)
		return hop{reason: w.switchFailure(sw, schema.SwitchRoute, kt, "table %s entry for key %s sends to port %d, which is not wired", schema.SwitchRoute, kt, r.Port)}
	}
	if nb.Plane != w.plane {
		return hop{reason: w.switchFailure(sw, "", fmt.Sprintf("port %d", r.Port), "port %d leaves plane %d", r.Port, w.plane)}
	}
	if (nb.Role == plan.RoleNIC) != r.ToHost {
		kt := keyText(w.p, active)
		action := "forward"
		if r.ToHost {
			action = "forward_to_host"
		}
		return hop{reason: w.switchFailure(sw, schema.SwitchRoute, kt, "table %s entry for key %s has action %s, but %s faces a %s",
			schema.SwitchRoute, kt, action, w.portText(s, r.Port), nb.Role)}
	}
	return hop{nb: nb, wrong: wrong}
}

// arrive checks a packet reaching NIC port nb with active uSID v at level
// of tmpl: the NIC accepts only its own block | uDL with nothing after it.
// It returns the host index, or -1 and the reason.
func (w *planeWalk) arrive(nb plan.Endpoint, tmpl uint8, level int, v uint16) (int, *Failure) {
	host := w.p.HostByIndex(nb.Index)
	if level != len(templates[tmpl])-1 {
		return -1, w.nicFailure(host, "", "", "a packet arrived with uSIDs left in its carrier (active %s)", keyText(w.p, v))
	}
	i := nb.Index*w.p.F.Planes + (nb.Port - 1)
	if nb.Port >= 1 && nb.Port <= w.p.F.Planes && w.nics.rxPlane[i] == int16(w.plane) && w.nics.rxDown[i] == v {
		return nb.Index, nil
	}
	key := fmt.Sprintf("port %d", nb.Port)
	switch {
	case nb.Port < 1 || nb.Port > w.p.F.Planes:
		return -1, w.nicFailure(host, "", key, "port %d is not a plane port", nb.Port)
	case w.nics.rxPlane[i] < 0:
		return -1, w.nicFailure(host, schema.NICRxPlane, key, "table %s has no entry for port %d (it faces plane %d)", schema.NICRxPlane, nb.Port, w.plane)
	case w.nics.rxPlane[i] != int16(w.plane):
		return -1, w.nicFailure(host, schema.NICRxPlane, key, "table %s entry for port %d says plane %d, the port faces plane %d", schema.NICRxPlane, nb.Port, w.nics.rxPlane[i], w.plane)
	}
	if own := w.nics.rxDown[i]; own != v {
		if v == w.p.DownUSID(w.plane, host.Port) {
			return -1, w.nicFailure(host, schema.NICRxPlane, key, "table %s entry for port %d holds own_down_usid %#04x (%s), not its own %#04x (%s)",
				schema.NICRxPlane, nb.Port, own, usidText(w.p, own), v, usidText(w.p, v))
		}
		return -1, w.nicFailure(host, schema.NICRxPlane, key, "a packet arrived for %s; the port owns %#04x", keyText(w.p, v), own)
	}
	return nb.Index, nil
}

// templateFailure blames the NIC template that gives uSID v to the device
// at index of the template family kind, when the plan says v is another's.
func (w *planeWalk) templateFailure(kind, index int, v uint16, want uint16) *Failure {
	var table, what string
	switch kind {
	case lvlOwn, lvlRow:
		table, what = schema.NICRowUSID, "row"
	case lvlT1:
		table, what = schema.NICT1USID, "t1"
	default:
		table, what = schema.NICDownUSID, "port"
	}
	key := fmt.Sprintf("plane %d, %s %d", w.plane, what, index)
	return w.commonFailure(table, key, "table %s entry (%s) holds %#04x (%s), not %#04x (%s)",
		table, key, v, usidText(w.p, v), want, usidText(w.p, want))
}

// eval returns the outcome of a packet at switch sw whose active uSID is v,
// at level of tmpl, after crossing depth switches, for every completion of
// its uSID list. row is the destination row of a same-T0 packet (-1 for
// the long template).
func (w *planeWalk) eval(tmpl uint8, sw, level int, v uint16, depth, row int) *result {
	key := newStateKey(tmpl, level, depth, sw, v, row)
	if r, ok := w.memo[key]; ok {
		if r.busy {
			return &result{nic: -1, lost: w.completions(tmpl, level), reason: w.switchFailure(sw, "", "", "forwarding loop")}
		}
		return r
	}
	r := &result{busy: true, nic: -1}
	w.memo[key] = r
	last := len(templates[tmpl]) - 1
	s := w.switchAt(sw)

	lostAll := func(reason *Failure) {
		r.lost, r.reason = w.completions(tmpl, level), reason
		if level < last {
			n := len(w.familyAt(tmpl, level+1))
			r.childLost = make([]uint64, n)
			r.childReason = make([]*Failure, n)
			per := w.completions(tmpl, level+1)
			for i := range r.childLost {
				r.childLost[i], r.childReason[i] = per, reason
			}
		}
	}

	if depth >= MaxHops {
		lostAll(w.switchFailure(sw, "", "", "a path reaches it after crossing %d switches (at most %d): a detour or a loop", depth, MaxHops))
		r.busy = false
		return r
	}

	if !w.sw[sw].MyUSID(w.p.Key48(v)) {
		// Transit: forward on the active uSID unchanged.
		h := w.forward(sw, v)
		switch {
		case h.reason != nil:
			lostAll(h.reason)
		case h.nb.Role == plan.RoleNIC:
			host, why := w.arrive(h.nb, tmpl, level, v)
			if host < 0 {
				lostAll(why)
			} else {
				r.nic, r.hops = host, 1
			}
		default:
			sub := w.eval(tmpl, w.switchIndex(h.nb.Switch()), level, v, depth+1, row)
			*r = *sub
			r.hops = sub.hops + 1
		}
		// The switch should have shifted v: its own uSID by the plan.
		if r.lost > 0 && w.p.SwitchUSID(s) == v {
			kt := keyText(w.p, v)
			cause := w.switchFailure(sw, schema.SwitchMyUSID, kt, "table %s has no entry for key %s, the switch's own uSID", schema.SwitchMyUSID, kt)
			r.reason = cause
			if r.childLost != nil {
				r.childReason = make([]*Failure, len(r.childLost))
				for i, l := range r.childLost {
					if l > 0 {
						r.childReason[i] = cause
					}
				}
			}
		}
		r.busy = false
		return r
	}

	// A switch that shifts a uSID the plan does not give it: its my_usid
	// table is the cause of whatever the packet meets.
	var ownWrong *Failure
	if own := w.p.SwitchUSID(s); own != v {
		kt := keyText(w.p, v)
		ownWrong = w.switchFailure(sw, schema.SwitchMyUSID, kt, "table %s has an entry for key %s, which is not the switch's own uSID (%#04x)", schema.SwitchMyUSID, kt, own)
	}
	if level == last {
		lostAll(cmp.Or(ownWrong, w.switchFailure(sw, "", "", "its own uSID is the last of the carrier: nothing left to forward on")))
		r.busy = false
		return r
	}
	// The uSID consumed here names a device in the NIC templates (the EV's
	// T1, the destination's T0): a path that shifts it elsewhere crosses
	// another switch than its EV names, and a link failure would take down
	// other EVs than the ones the senders mark. When v is sw's own uSID by
	// the plan, the template is wrong.
	if owner, ok := w.owner(tmpl, level, v); ok && owner != sw {
		kind := templates[tmpl][level]
		index := owner
		if kind == lvlT1 {
			index -= w.p.F.T0Count
		}
		lostAll(cmp.Or(ownWrong, w.templateFailure(kind, index, v, w.p.SwitchUSID(w.switchAt(owner)))))
		r.busy = false
		return r
	}
	// uN: shift, then forward on the next uSID.
	fam := w.familyAt(tmpl, level+1)
	r.childLost = make([]uint64, len(fam))
	per := w.completions(tmpl, level+1)
	rowLevel := templates[tmpl][level] == lvlRow || tmpl == tmplShort && level == 0
	for i, y := range fam {
		h := w.forward(sw, y)
		var lost uint64
		var why *Failure
		hops := 0
		switch {
		case h.reason != nil:
			lost, why = per, h.reason
		case h.nb.Role == plan.RoleNIC:
			host, reason := w.arrive(h.nb, tmpl, level+1, y)
			if host < 0 {
				lost, why = per, reason
			} else {
				hops = 1
				if rowLevel {
					lost, why = w.expect(s, tmpl, v, row, y, host)
				}
			}
		default:
			sub := w.eval(tmpl, w.switchIndex(h.nb.Switch()), level+1, y, depth+1, row)
			if r.children == nil {
				r.children = make([]*result, len(fam))
			}
			r.children[i] = sub
			lost, why, hops = sub.lost, sub.reason, sub.hops+1
			if level+1 == last && sub.lost == 0 && rowLevel {
				lost, why = w.expect(s, tmpl, v, row, y, sub.nic)
			}
		}
		if lost > 0 {
			why = cmp.Or(ownWrong, h.wrong, why)
		}
		r.childLost[i] = lost
		if why != nil {
			if r.childReason == nil {
				r.childReason = make([]*Failure, len(fam))
			}
			r.childReason[i] = why
		}
		r.lost += lost
		if lost > 0 && r.reason == nil {
			r.reason = why
		}
		if lost < per && hops > r.hops {
			r.hops = hops
		}
	}
	r.busy = false
	return r
}

// expect checks that the packet whose row-level uSID was rowUSID (for the
// long template; a same-T0 packet is for row sameRow) and last uSID
// downUSID reached the host those name.
func (w *planeWalk) expect(s plan.Switch, tmpl uint8, rowUSID uint16, sameRow int, downUSID uint16, got int) (uint64, *Failure) {
	row, ok1 := w.rowOf.get(rowUSID)
	if tmpl == tmplShort {
		row, ok1 = sameRow, true
	}
	port, ok2 := w.downOf.get(downUSID)
	if !ok1 || !ok2 {
		return 1, w.switchFailure(w.switchIndex(s), "", "", "carrier %#04x/%#04x names no host", rowUSID, downUSID)
	}
	want := w.p.Index(plan.Host{Row: row, Port: port})
	if got == want {
		return 0, nil
	}
	if plane, kind, index, ok := usidOwner(w.p, downUSID); !ok || plane != w.plane || kind != plan.KindDown || index != port {
		return 1, w.templateFailure(lvlDown, port, downUSID, w.p.DownUSID(w.plane, port))
	}
	return 1, w.nicFailure(w.p.HostByIndex(got), "", "", "received packets for %s", w.p.HostName(w.p.HostByIndex(want)))
}

// run walks every source NIC port of the plane.
// chargeHost adds n lost paths to source host h's count (Report.LostBySource).
func (w *planeWalk) chargeHost(h int, n uint64) {
	if n == 0 {
		return
	}
	if w.rep.LostBySource == nil {
		w.rep.LostBySource = make([]uint64, w.p.F.Hosts())
	}
	w.rep.LostBySource[h] += n
}

func (w *planeWalk) run() {
	f, p := w.p.F, w.p
	perPair := uint64(f.T1Count) // long paths per (source, destination) pair
	longPaths := perPair * uint64(f.Hosts()-f.T0Down)
	shortPaths := uint64(f.T0Down - 1)
	// Hosts of one row that start from the same state lose the same long
	// paths for the same reasons: the first of a run of them records its
	// lost classes, the others only add their pairs (in flush).
	var run struct {
		long    *result
		row     int
		lost    uint64      // long paths each host of the run loses
		more    uint64      // hosts of the run after the first
		effects []lostShare // the classes the first host's losses went to
	}
	flush := func() {
		for _, e := range run.effects {
			w.rep.Lost[e.class].Pairs += e.pairs * run.more
		}
		run.long, run.effects, run.more = nil, run.effects[:0], 0
	}
	defer flush()
	for h := 0; h < f.Hosts(); h++ {
		host := p.HostByIndex(h)
		w.rep.Paths += longPaths + shortPaths
		i := h*f.Planes + w.plane
		if !w.nics.ok[i] {
			w.addLost(host.Row, -1, -1, longPaths+shortPaths,
				w.nicFailure(host, schema.NICPlaneSelf, w.selfKey, "table %s has no entry for plane %d", schema.NICPlaneSelf, w.plane))
			w.chargeHost(h, longPaths+shortPaths)
			continue
		}
		// The NIC tells a same-T0 destination from the others by its own
		// row: if that is not the row it is cabled to, which of its paths
		// are same-T0 is not defined, and none counts as delivered. Its own
		// T0 uSID is only the first uSID of its carriers: the walk finds
		// out where a wrong one leads.
		ownT0, ownRow := w.nics.ownT0[i], int(w.nics.ownRow[i])
		if ownRow != host.Row {
			w.addLost(host.Row, -1, -1, longPaths+shortPaths,
				w.nicFailure(host, schema.NICPlaneSelf, w.selfKey, "table %s entry for plane %d says own_row %d, the NIC is cabled to row %d",
					schema.NICPlaneSelf, w.plane, ownRow, host.Row))
			w.chargeHost(h, longPaths+shortPaths)
			continue
		}
		first := p.NICNeighbor(host, w.plane)
		x0 := w.switchIndex(first.Switch())
		if w.isDown(x0, first.Port) {
			w.addLost(host.Row, -1, -1, longPaths+shortPaths,
				w.nicFailure(host, "", "", "its plane %d link (%s port %d) is down", w.plane, p.Name(first.Switch()), first.Port))
			w.chargeHost(h, longPaths+shortPaths)
			continue
		}
		// A wrong own T0 uSID is the cause of whatever its paths meet.
		var selfWrong *Failure
		if want := p.T0USID(w.plane, host.Row); ownT0 != want {
			selfWrong = w.nicFailure(host, schema.NICPlaneSelf, w.selfKey, "table %s entry for plane %d says own_t0_usid %#04x (%s), its T0's uN is %#04x",
				schema.NICPlaneSelf, w.plane, ownT0, usidText(p, ownT0), want)
		}
		or := func(why *Failure) *Failure {
			if selfWrong != nil {
				return selfWrong
			}
			return why
		}

		// Different T0: every (T1, destination row, destination port).
		long := w.eval(tmplLong, x0, 0, ownT0, 0, -1)
		var lost uint64
		if selfWrong == nil && run.long == long && run.row == ownRow {
			lost = run.lost
			run.more++
		} else {
			flush()
			if selfWrong == nil {
				run.long, run.row = long, ownRow
			}
			lost = w.longLost(long, host.Row, ownRow, longPaths, or, &run.effects)
			run.lost = lost
		}
		if long.hops > w.rep.MaxHopsSeen {
			w.rep.MaxHopsSeen = long.hops
		}
		// Same T0: every other port.
		short := w.eval(tmplShort, x0, 0, ownT0, 0, host.Row)
		if short.lost > 0 && short.childLost == nil {
			for k := 0; k < f.T0Down; k++ {
				if k != host.Port {
					lost++
					w.addLost(host.Row, -1, host.Row, 1, or(short.reason))
				}
			}
		}
		for _, k := range short.lostAt() {
			if int(k) != host.Port {
				l := short.childLost[k]
				lost += l
				w.addLost(host.Row, -1, host.Row, l, or(short.why(int(k))))
			}
		}
		if long.hops > MaxHops || short.hops > MaxHops {
			w.fs.add(w.nicFailure(host, "", "", "plane %d: a path crosses %d switches (at most %d)", w.plane, max(long.hops, short.hops), MaxHops))
		}
		w.rep.Delivered += longPaths + shortPaths - lost
		w.chargeHost(h, lost)
	}
}

// lostShare is what one host's losses added to a lost class.
type lostShare struct {
	class int // index in the report's Lost
	pairs uint64
}

// longLost records the lost long paths of one host on srcRow (its NIC's
// own row ownRow) whose long paths start at state long, and returns how
// many it loses; effects gets the classes they went to.
func (w *planeWalk) longLost(long *result, srcRow, ownRow int, longPaths uint64, or func(*Failure) *Failure, effects *[]lostShare) uint64 {
	f := w.p.F
	lost := uint64(0)
	add := func(t1, dst int, l uint64, reason *Failure) {
		lost += l
		*effects = append(*effects, lostShare{w.addLost(srcRow, t1, dst, l, or(reason)), l})
	}
	if long.lost == 0 {
		return 0
	}
	if long.childLost == nil {
		add(-1, -1, longPaths, long.reason)
		return lost
	}
	for _, s32 := range long.lostAt() {
		s := int(s32)
		c := long.child(s)
		if c != nil && c.childLost != nil {
			for _, b := range c.lostAt() {
				if int(b) != ownRow {
					add(s, int(b), c.childLost[b], c.why(int(b)))
				}
			}
			continue
		}
		reason := long.why(s)
		if c != nil {
			reason = c.reason
		}
		for b := 0; b < f.T0Count; b++ {
			if b != ownRow {
				add(s, b, uint64(f.T0Down), reason)
			}
		}
	}
	return lost
}

type lostKey struct{ plane, t1, src, dst int }

// classText names a lost class: "p0-t0-0 -> p0-t0-1 via p0-t1-0".
func (w *planeWalk) classText(srcRow, t1, dstRow int) string {
	t0 := func(r int) string { return w.p.Name(plan.Switch{Role: plan.RoleT0, Plane: w.plane, Index: r}) }
	switch {
	case dstRow < 0:
		return fmt.Sprintf("every path from %s", t0(srcRow))
	case t1 < 0:
		return fmt.Sprintf("%s -> %s (same T0)", t0(srcRow), t0(dstRow))
	}
	return fmt.Sprintf("%s -> %s via %s", t0(srcRow), t0(dstRow), w.p.Name(plan.Switch{Role: plan.RoleT1, Plane: w.plane, Index: t1}))
}

// addLost records lost paths of hosts on srcRow (per source host), and the
// failure that explains them. It returns the class's index in the report.
func (w *planeWalk) addLost(srcRow, t1, dstRow int, pairs uint64, reason *Failure) int {
	if reason == nil {
		reason = &Failure{Device: w.p.Name(plan.Switch{Role: plan.RoleT0, Plane: w.plane, Index: srcRow}), Problem: "paths lost for a reason the walk did not record"}
	}
	k := lostKey{w.plane, t1, srcRow, dstRow}
	if fi := w.fs.add(reason); fi >= 0 && !w.classSeen[failureLost{fi, k}] {
		w.classSeen[failureLost{fi, k}] = true
		w.fs.addPath(fi, func() string { return w.classText(srcRow, t1, dstRow) })
	}
	if i, ok := w.lostIndex[k]; ok {
		w.rep.Lost[i].Pairs += pairs
		return i
	}
	w.lostIndex[k] = len(w.rep.Lost)
	w.rep.Lost = append(w.rep.Lost, Lost{Plane: w.plane, T1: t1, SrcRow: srcRow, DstRow: dstRow, Pairs: pairs, Reason: reason.Cause()})
	return len(w.rep.Lost) - 1
}
