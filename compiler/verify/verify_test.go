package verify_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

func newPlan(t testing.TB, preset string) *plan.Plan {
	t.Helper()
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	return plan.New(f)
}

func generated(p *plan.Plan) verify.Source {
	return verify.GeneratorSource{G: tables.NewGenerator(p)}
}

// wantPaths is the number of (source, destination, plane, T1) paths of a
// fabric: T1 paths per plane between hosts on different T0s, one per plane
// between hosts on one T0.
func wantPaths(f *fabric.Fabric) uint64 {
	h, d := uint64(f.Hosts()), uint64(f.T0Down)
	perPlane := h*(h-d)*uint64(f.T1Count) + h*(d-1)
	return uint64(f.Planes) * perPlane
}

// TestRunAgreesWithBruteForce is the differential test: on the untouched
// tables of tiny and small, the brute-force walk and Run count the same
// paths and both deliver all of them.
func TestRunAgreesWithBruteForce(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		t.Run(preset, func(t *testing.T) {
			p := newPlan(t, preset)
			src := generated(p)
			b, err := newBrute(p, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			paths, delivered := b.run()
			rep, err := verify.Run(context.Background(), p, src, verify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if paths != wantPaths(p.F) || rep.Paths != paths {
				t.Fatalf("paths: Run %d, brute force %d, formula %d", rep.Paths, paths, wantPaths(p.F))
			}
			if delivered != paths || rep.Delivered != delivered {
				t.Fatalf("delivered: Run %d, brute force %d of %d (%v)", rep.Delivered, delivered, paths, b.why)
			}
			if !rep.OK() || len(rep.Failures) != 0 || len(rep.Lost) != 0 {
				t.Fatalf("report: %+v", rep)
			}
			if rep.MaxHopsSeen != verify.MaxHops {
				t.Errorf("MaxHopsSeen = %d", rep.MaxHopsSeen)
			}
		})
	}
	// tiny by hand: 4 hosts, 2 planes, 2 T1s: per plane, 4 x 2 hosts on the
	// other T0 x 2 T1s + 4 x 1 host on the same T0 = 20; 40 in all.
	if got := wantPaths(newPlan(t, "tiny").F); got != 40 {
		t.Fatalf("tiny has %d paths, want 40", got)
	}
}

// TestRunMRC131k proves every path of the paper's fabric: 131,072 hosts,
// 8 planes, 256 T1s: 8 x 131072 x (130816 x 256 + 255) paths.
func TestRunMRC131k(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds; skipped with -short")
	}
	p := newPlan(t, "mrc-131k")
	planes := 0
	rep, err := verify.Run(context.Background(), p, generated(p), verify.Options{Progress: func(done, total int) {
		if done != planes+1 || total != 8 {
			t.Errorf("progress %d/%d after %d", done, total, planes)
		}
		planes = done
	}})
	if err != nil {
		t.Fatal(err)
	}
	const want = 35_115_919_998_976
	if rep.Paths != want || wantPaths(p.F) != want {
		t.Fatalf("Paths = %d, want %d", rep.Paths, want)
	}
	if !rep.OK() || rep.Delivered != rep.Paths {
		t.Fatalf("report: %+v", rep)
	}
	if planes != 8 {
		t.Errorf("progress reported %d planes", planes)
	}
	// Linear work, not per path: per plane, a long-template state at every
	// T0 (its own uSID), every T1 and every destination T0 (the row uSID),
	// and a short-template state at every T0.
	f := p.F
	if want := f.Planes * (f.T0Count + f.T1Count + f.T0Count + f.T0Count); rep.States != want {
		t.Errorf("States = %d, want %d", rep.States, want)
	}
}

// TestRunLinkDownTiny takes down one T0-T1 link of tiny and checks the
// exact loss, worked out by hand.
//
// tiny: 2 planes, T0 rows 0 and 1, T1s 0 and 1, hosts (row, port) with 2
// ports per T0. T0 port numbering: down ports 0, 1; up port to T1 s is
// 2 + s. Taking down p0-t0-0 port 3 (to p0-t1-1) takes down both
// directions of that cable. In plane 0 via T1 1:
//   - the 2 hosts of row 0 cannot reach the 2 hosts of row 1 (their T0
//     cannot send up to T1 1): 2 x 2 = 4 pairs;
//   - the 2 hosts of row 1 cannot reach the 2 hosts of row 0 (T1 1 cannot
//     send down to T0 0): 4 pairs.
//
// Nothing else is lost: the other T1, the other plane and same-T0 pairs do
// not use the link. Lost: 8 of 40 paths, in two classes.
func TestRunLinkDownTiny(t *testing.T) {
	p := newPlan(t, "tiny")
	link := verify.Link{Switch: plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, Port: 3}
	for _, down := range [][]verify.Link{
		{link},
		// The same cable named from its T1 end.
		{{Switch: plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 1}, Port: 0}},
		// Both ends named: still one cable.
		{link, {Switch: plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 1}, Port: 0}},
	} {
		rep, err := verify.Run(context.Background(), p, generated(p), verify.Options{Down: down})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Paths != 40 || rep.Delivered != 32 || rep.OK() {
			t.Fatalf("down %v: %d of %d delivered, OK %v", down, rep.Delivered, rep.Paths, rep.OK())
		}
		want := []verify.Lost{
			{Plane: 0, T1: 1, SrcRow: 0, DstRow: 1, Pairs: 4},
			{Plane: 0, T1: 1, SrcRow: 1, DstRow: 0, Pairs: 4},
		}
		if len(rep.Lost) != len(want) {
			t.Fatalf("down %v: lost %+v", down, rep.Lost)
		}
		for i, l := range rep.Lost {
			reason := l.Reason
			l.Reason = ""
			if l != want[i] {
				t.Errorf("down %v: lost[%d] = %+v, want %+v", down, i, l, want[i])
			}
			if !strings.Contains(reason, "is down") {
				t.Errorf("lost[%d] reason %q", i, reason)
			}
		}
		b, _ := newBrute(p, generated(p), down)
		if paths, delivered := b.run(); paths != rep.Paths || delivered != rep.Delivered {
			t.Fatalf("brute force: %d of %d", delivered, paths)
		}
		checkLostClasses(t, b, rep)
	}

	// A NIC link down: host (0, 1) in plane 1 can neither send nor receive
	// there. It sends 2 x 2 + 1 = 5 paths; it receives from the 2 hosts of
	// row 1 over 2 T1s and from host (0, 0): 5 more. 10 lost.
	nic := verify.Link{Switch: plan.Switch{Role: plan.RoleT0, Plane: 1, Index: 0}, Port: 1}
	rep, err := verify.Run(context.Background(), p, generated(p), verify.Options{Down: []verify.Link{nic}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 30 || rep.OK() {
		t.Fatalf("NIC link down: %d of %d delivered", rep.Delivered, rep.Paths)
	}
	b, _ := newBrute(p, generated(p), []verify.Link{nic})
	if paths, delivered := b.run(); paths != rep.Paths || delivered != rep.Delivered {
		t.Fatalf("brute force: %d of %d", delivered, paths)
	}
}

// checkLostClasses compares Run's Lost classes with the brute force's,
// where they use the same classes: a path lost between different T0s is
// classed by (plane, T1, source row, destination row).
func checkLostClasses(t *testing.T, b *brute, rep *verify.Report) {
	t.Helper()
	got := map[lostClass]uint64{}
	for _, l := range rep.Lost {
		got[lostClass{l.Plane, l.T1, l.SrcRow, l.DstRow}] += l.Pairs
	}
	for k, n := range b.lostBy {
		if got[k] != n {
			t.Errorf("lost class %+v: Run %d, brute force %d", k, got[k], n)
		}
	}
	for k, n := range got {
		if b.lostBy[k] != n {
			t.Errorf("lost class %+v: Run %d, brute force %d", k, n, b.lostBy[k])
		}
	}
}

// tampered serves a generator's entries with changes applied.
type tampered struct {
	p        *plan.Plan
	switches map[plan.Switch][]entry.Entry
	nics     map[plan.Host][]entry.Entry
	common   []entry.Entry
}

func newTampered(p *plan.Plan) *tampered {
	g := tables.NewGenerator(p)
	t := &tampered{p: p, switches: map[plan.Switch][]entry.Entry{}, nics: map[plan.Host][]entry.Entry{}}
	for _, s := range p.Switches() {
		t.switches[s] = deepCopy(g.SwitchEntries(s, nil))
	}
	for i := 0; i < p.F.Hosts(); i++ {
		h := p.HostByIndex(i)
		t.nics[h] = deepCopy(g.NICEntries(h, nil))
	}
	t.common = deepCopy(g.NICCommonEntries())
	return t
}

func deepCopy(in []entry.Entry) []entry.Entry {
	out := make([]entry.Entry, len(in))
	for i, e := range in {
		e.Match, e.Params = slices.Clone(e.Match), slices.Clone(e.Params)
		out[i] = e
	}
	return out
}

func (t *tampered) SwitchEntries(s plan.Switch) ([]entry.Entry, error) { return t.switches[s], nil }
func (t *tampered) NICEntries(h plan.Host) ([]entry.Entry, error)      { return t.nics[h], nil }
func (t *tampered) NICCommonEntries() ([]entry.Entry, error)           { return t.common, nil }

// entriesOf returns the indexes of s's entries in table name.
func (t *tampered) entriesOf(s plan.Switch, name string) []int {
	var out []int
	for i, e := range t.switches[s] {
		if e.Table.FullName() == name {
			out = append(out, i)
		}
	}
	return out
}

// newRoute is a usid_route entry forwarding key to a fabric port.
func (t *tampered) newRoute(key uint64, port int) entry.Entry {
	prog := schema.Switch(t.p.F)
	route := prog.Table(schema.SwitchRoute)
	for _, r := range route.Actions {
		if r.Action.Name == "forward" {
			return entry.Entry{Table: route, Action: r.Action, Match: []entry.Match{{Value: key}}, Params: []uint64{uint64(port)}}
		}
	}
	panic("the switch program has no forward action")
}

func (t *tampered) randomSwitch(rng *rand.Rand, role plan.Role) plan.Switch {
	f := t.p.F
	s := plan.Switch{Role: plan.RoleT0, Plane: rng.IntN(f.Planes), Index: rng.IntN(f.T0Count)}
	if role == plan.RoleT1 || role == 0 && rng.IntN(2) == 0 {
		s = plan.Switch{Role: plan.RoleT1, Plane: s.Plane, Index: rng.IntN(f.T1Count)}
	}
	return s
}

// tamper is one way of breaking the tables; it returns what it did.
type tamper func(t *tampered, rng *rand.Rand) string

var tampers = map[string]tamper{
	"drop a route": func(t *tampered, rng *rand.Rand) string {
		s := t.randomSwitch(rng, 0)
		idx := t.entriesOf(s, schema.SwitchRoute)
		if len(idx) == 0 {
			return "nothing: " + t.p.Name(s) + " has no route left"
		}
		i := idx[rng.IntN(len(idx))]
		e := t.switches[s][i]
		t.switches[s] = slices.Delete(t.switches[s], i, i+1)
		return fmt.Sprintf("dropped %s route %#x", t.p.Name(s), e.Match[0].Value)
	},
	"change a route's port": func(t *tampered, rng *rand.Rand) string {
		s := t.randomSwitch(rng, 0)
		idx := t.entriesOf(s, schema.SwitchRoute)
		if len(idx) == 0 {
			return "nothing: " + t.p.Name(s) + " has no route left"
		}
		e := t.switches[s][idx[rng.IntN(len(idx))]]
		old := e.Params[0]
		for e.Params[0] == old {
			e.Params[0] = uint64(rng.IntN(t.p.Ports(s) + 2)) // sometimes an unwired port
		}
		return fmt.Sprintf("%s route %#x: port %d -> %d", t.p.Name(s), e.Match[0].Value, old, e.Params[0])
	},
	"swap two row templates": func(t *tampered, rng *rand.Rand) string {
		return t.swapTemplates(rng, schema.NICRowUSID, t.p.F.T0Count)
	},
	"swap two T1 templates": func(t *tampered, rng *rand.Rand) string {
		return t.swapTemplates(rng, schema.NICT1USID, t.p.F.T1Count)
	},
	"swap two down-port templates": func(t *tampered, rng *rand.Rand) string {
		return t.swapTemplates(rng, schema.NICDownUSID, t.p.F.T0Down)
	},
	"remove a my_usid entry": func(t *tampered, rng *rand.Rand) string {
		s := t.randomSwitch(rng, 0)
		idx := t.entriesOf(s, schema.SwitchMyUSID)
		if len(idx) == 0 {
			return "nothing: " + t.p.Name(s) + " has no my_usid entry left"
		}
		i := idx[0]
		t.switches[s] = slices.Delete(t.switches[s], i, i+1)
		return "removed the my_usid entry of " + t.p.Name(s)
	},
	"T1 route loops back up": func(t *tampered, rng *rand.Rand) string {
		// T1 s sends row b's traffic down to T0 c instead, and T0 c sends
		// anything for row b back up to T1 s: a loop.
		f := t.p.F
		s1 := t.randomSwitch(rng, plan.RoleT1)
		b := rng.IntN(f.T0Count)
		c := (b + 1 + rng.IntN(f.T0Count-1)) % f.T0Count
		for _, i := range t.entriesOf(s1, schema.SwitchRoute) {
			if e := t.switches[s1][i]; e.Match[0].Value == t.p.Key48(t.p.T0USID(s1.Plane, b)) {
				e.Params[0] = uint64(t.p.T1DownPort(c))
			}
		}
		t0 := plan.Switch{Role: plan.RoleT0, Plane: s1.Plane, Index: c}
		key := t.p.Key48(t.p.T0USID(s1.Plane, b))
		for _, i := range t.entriesOf(t0, schema.SwitchRoute) {
			if t.switches[t0][i].Match[0].Value == key {
				return "nothing: " + t.p.Name(t0) + " already routes row " + fmt.Sprint(b)
			}
		}
		t.switches[t0] = append(t.switches[t0], t.newRoute(key, t.p.T0UpPort(s1.Index)))
		return fmt.Sprintf("loop: %s sends row %d to row %d, which sends it back up", t.p.Name(s1), b, c)
	},
	"flip a to_host flag": func(t *tampered, rng *rand.Rand) string {
		s := t.randomSwitch(rng, plan.RoleT0)
		idx := t.entriesOf(s, schema.SwitchRoute)
		if len(idx) == 0 {
			return "nothing: " + t.p.Name(s) + " has no route left"
		}
		i := idx[rng.IntN(len(idx))]
		e := &t.switches[s][i]
		for _, r := range e.Table.Actions {
			if r.Action != e.Action && r.Scope != schema.DefaultOnly {
				e.Action = r.Action
				break
			}
		}
		return fmt.Sprintf("%s route %#x now %s", t.p.Name(s), e.Match[0].Value, e.Action.Name)
	},
	"NIC port owns another uDL": func(t *tampered, rng *rand.Rand) string {
		f := t.p.F
		h := t.p.HostByIndex(rng.IntN(f.Hosts()))
		entries := t.nics[h]
		for i, e := range entries {
			if e.Table.FullName() == schema.NICRxPlane {
				e.Params[1] = uint64(t.p.DownUSID(int(e.Params[0]), (h.Port+1)%f.T0Down))
				return fmt.Sprintf("%s plane port %d owns another uDL", t.p.HostName(h), i)
			}
		}
		return "nothing: " + t.p.HostName(h) + " has no rx_plane entry left"
	},
	"NIC port forgets its plane": func(t *tampered, rng *rand.Rand) string {
		f := t.p.F
		h := t.p.HostByIndex(rng.IntN(f.Hosts()))
		pl := rng.IntN(f.Planes)
		for i, e := range t.nics[h] {
			if e.Table.FullName() == schema.NICRxPlane && int(e.Params[0]) == pl {
				t.nics[h] = slices.Delete(t.nics[h], i, i+1)
				return fmt.Sprintf("%s has no rx_plane entry for plane %d", t.p.HostName(h), pl)
			}
		}
		return "nothing: " + t.p.HostName(h) + " has no rx_plane entry left for plane " + fmt.Sprint(pl)
	},
	"delete an EV slot": func(t *tampered, rng *rand.Rand) string {
		idx := t.evEntries()
		if len(idx) == 0 {
			return "nothing: no EV entry left"
		}
		i := idx[rng.IntN(len(idx))]
		slot := t.common[i].Match[0].Value
		t.common = slices.Delete(t.common, i, i+1)
		return fmt.Sprintf("deleted EV slot %d", slot)
	},
	"give an EV another slot's salt": func(t *tampered, rng *rand.Rand) string {
		idx := t.evEntries()
		if len(idx) == 0 {
			return "nothing: no EV entry left"
		}
		e := t.common[idx[rng.IntN(len(idx))]]
		fl := t.p.SplitEV(plan.EV(e.Params[0]))
		fl.Salt = (fl.Salt + 1 + rng.IntN(t.p.F.EV.SetSize-1)) % t.p.F.EV.SetSize
		e.Params[0] = uint64(t.p.MakeEV(fl))
		return fmt.Sprintf("EV slot %d has salt %d", e.Match[0].Value, fl.Salt)
	},
	"move an EV to another plane": func(t *tampered, rng *rand.Rand) string {
		idx := t.evEntries()
		if len(idx) == 0 {
			return "nothing: no EV entry left"
		}
		e := t.common[idx[rng.IntN(len(idx))]]
		fl := t.p.SplitEV(plan.EV(e.Params[0]))
		fl.Plane = (fl.Plane + 1 + rng.IntN(t.p.F.Planes-1)) % t.p.F.Planes
		e.Params[0] = uint64(t.p.MakeEV(fl))
		return fmt.Sprintf("EV slot %d moved to plane %d", e.Match[0].Value, fl.Plane)
	},
	"zero every EV": func(t *tampered, rng *rand.Rand) string {
		for _, i := range t.evEntries() {
			t.common[i].Params[0] = 0
		}
		return "every EV is 0"
	},
	"NIC forgets its row": func(t *tampered, rng *rand.Rand) string {
		f := t.p.F
		h := t.p.HostByIndex(rng.IntN(f.Hosts()))
		for _, e := range t.nics[h] {
			if e.Table.FullName() == schema.NICPlaneSelf {
				e.Params[1] = uint64((h.Row + 1) % f.T0Count)
				return fmt.Sprintf("%s plane %d thinks it is on row %d", t.p.HostName(h), e.Match[0].Value, e.Params[1])
			}
		}
		return "nothing: " + t.p.HostName(h) + " has no plane_self entry"
	},
}

// evEntries returns the indexes of the common entries in the EV set.
func (t *tampered) evEntries() []int {
	var out []int
	for i, e := range t.common {
		if e.Table.FullName() == schema.NICEVSet {
			out = append(out, i)
		}
	}
	return out
}

func (t *tampered) swapTemplates(rng *rand.Rand, table string, n int) string {
	pl := rng.IntN(t.p.F.Planes)
	a := rng.IntN(n)
	b := (a + 1 + rng.IntN(n-1)) % n
	var ea, eb *entry.Entry
	for i := range t.common {
		e := &t.common[i]
		if e.Table.FullName() == table && int(e.Match[0].Value) == pl {
			switch int(e.Match[1].Value) {
			case a:
				ea = e
			case b:
				eb = e
			}
		}
	}
	if ea == nil || eb == nil {
		return "nothing: a template is missing"
	}
	ea.Params[0], eb.Params[0] = eb.Params[0], ea.Params[0]
	return fmt.Sprintf("plane %d: %s %d <-> %d", pl, table, a, b)
}

// randomLinks picks n links to take down: any switch port, fabric or NIC.
func randomLinks(p *plan.Plan, rng *rand.Rand, n int) []verify.Link {
	var out []verify.Link
	sw := p.Switches()
	for i := 0; i < n; i++ {
		s := sw[rng.IntN(len(sw))]
		out = append(out, verify.Link{Switch: s, Port: rng.IntN(p.Ports(s))})
	}
	return out
}

// checkAgainstBrute runs both walks on src and fails on any difference.
func checkAgainstBrute(t *testing.T, p *plan.Plan, src verify.Source, down []verify.Link, what string) *verify.Report {
	t.Helper()
	b, err := newBrute(p, src, down)
	if err != nil {
		t.Fatalf("%s: brute force: %v", what, err)
	}
	paths, delivered := b.run()
	rep, err := verify.Run(context.Background(), p, src, verify.Options{Down: down, MaxFailures: 1000})
	if err != nil {
		t.Fatalf("%s: Run: %v", what, err)
	}
	if rep.Paths != paths || rep.Delivered != delivered {
		t.Fatalf("%s:\nRun delivers %d of %d, brute force %d of %d\nbrute force losses: %v\nRun failures: %q",
			what, rep.Delivered, rep.Paths, delivered, paths, b.why, rep.Failures)
	}
	if rep.OK() != (delivered == paths && b.evSetOK) {
		t.Fatalf("%s: OK() = %v with %d of %d delivered, EV set sound %v; failures %q", what, rep.OK(), delivered, paths, b.evSetOK, rep.Failures)
	}
	if (rep.EVSet != nil) != b.evSetOK {
		t.Fatalf("%s: Run read an EV set %v, brute force says sound: %v", what, rep.EVSet != nil, b.evSetOK)
	}
	if delivered < paths && len(rep.Failures) == 0 {
		t.Fatalf("%s: paths lost and no failure reported", what)
	}
	var lost uint64
	for _, l := range rep.Lost {
		lost += l.Pairs
	}
	if lost != paths-delivered {
		t.Fatalf("%s: Lost classes hold %d paths, %d were lost: %+v", what, lost, paths-delivered, rep.Lost)
	}
	checkLostClasses(t, b, rep)
	if t.Failed() {
		t.FailNow()
	}
	return rep
}

// TestRunAgreesUnderTampering breaks the tables of tiny and small in every
// known way, one at a time and several at once, with links down, and checks
// that Run's count is the brute force's every time, and that it is not OK.
func TestRunAgreesUnderTampering(t *testing.T) {
	names := make([]string, 0, len(tampers))
	for name := range tampers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, preset := range []string{"tiny", "small"} {
		p := newPlan(t, preset)
		rng := rand.New(rand.NewPCG(42, uint64(len(preset))))
		rounds := 8
		if preset == "small" {
			rounds = 4
		}
		// Each tamper alone: it must lose paths.
		for _, name := range names {
			for r := 0; r < rounds; r++ {
				src := newTampered(p)
				what := preset + ": " + name + ": " + tampers[name](src, rng)
				rep := checkAgainstBrute(t, p, src, nil, what)
				// Every tamper loses paths or breaks the EV set; swapped
				// T1 templates deliver, but over another T1 than the EV
				// names, which Run counts as lost (a failure of that T1
				// would take other EVs down than the ones senders mark).
				if rep.OK() {
					t.Fatalf("%s: OK() = %v", what, rep.OK())
				}
			}
		}
		// Mixtures, with links down.
		for r := 0; r < 6*rounds; r++ {
			src := newTampered(p)
			var did []string
			for k := rng.IntN(3); k >= 0; k-- {
				did = append(did, tampers[names[rng.IntN(len(names))]](src, rng))
			}
			down := randomLinks(p, rng, rng.IntN(3))
			checkAgainstBrute(t, p, src, down, fmt.Sprintf("%s: %q, down %v", preset, did, down))
		}
		// Links down alone.
		for r := 0; r < 4*rounds; r++ {
			down := randomLinks(p, rng, 1+rng.IntN(3))
			rep := checkAgainstBrute(t, p, generated(p), down, fmt.Sprintf("%s: down %v", preset, down))
			if rep.OK() {
				t.Fatalf("%s: down %v: still OK", preset, down)
			}
		}
	}
}

// TestRunDetourTooLong builds tables that deliver a path correctly but over
// five switches (T0, T1, T0, T1, T0): not within MaxHops, so not delivered.
func TestRunDetourTooLong(t *testing.T) {
	p := newPlan(t, "small")
	src := newTampered(p)
	// Plane 0: T1 0 sends row 1's traffic to row 2; T0 2 sends it up to T1
	// 1, which sends it to row 1 as it should.
	t1 := plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0}
	for _, i := range src.entriesOf(t1, schema.SwitchRoute) {
		if e := src.switches[t1][i]; e.Match[0].Value == p.Key48(p.T0USID(0, 1)) {
			e.Params[0] = uint64(p.T1DownPort(2))
		}
	}
	t0 := plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 2}
	src.switches[t0] = append(src.switches[t0], src.newRoute(p.Key48(p.T0USID(0, 1)), p.T0UpPort(1)))
	rep := checkAgainstBrute(t, p, src, nil, "detour")
	// 7 source rows (all but row 1) x 4 hosts x 4 destinations via T1 0.
	if lost := rep.Paths - rep.Delivered; lost != 7*4*4 {
		t.Errorf("%d paths lost, want %d", lost, 7*4*4)
	}
	if rep.MaxHopsSeen > verify.MaxHops {
		t.Errorf("MaxHopsSeen = %d counts a path that was not delivered", rep.MaxHopsSeen)
	}
	// The cause is T1 0's route, not the switch where the path got too long.
	want := "p0-t1-0: table SwitchIngress.usid_route entry for key fcbb:bb00:401::/48 (uN of p0-t0-1) sends to port 2 (p0-t0-2), not to p0-t0-1 (port 1)"
	if len(rep.Failures) != 1 || rep.Failures[0].Cause() != want || rep.Failures[0].MorePaths+len(rep.Failures[0].Paths) != 7 {
		t.Errorf("failures %q, want one: %s, for 7 source rows", rep.Failures, want)
	}
}

// FuzzRunTampered drives the tampering from fuzz input on tiny: any
// sequence of tampers and downed links, Run must agree with the brute force.
//
// Run it with: go test -run '^$' -fuzz FuzzRunTampered ./compiler/verify
func FuzzRunTampered(f *testing.F) {
	f.Add(uint64(1), []byte{0})
	f.Add(uint64(2), []byte{1, 2, 3})
	f.Add(uint64(3), []byte{4, 5, 6, 7, 8, 9, 10})
	f.Add(uint64(4), []byte{255, 128})
	names := make([]string, 0, len(tampers))
	for name := range tampers {
		names = append(names, name)
	}
	slices.Sort(names)
	p := newPlan(f, "tiny")
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		if len(ops) > 8 {
			ops = ops[:8]
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		src := newTampered(p)
		var did []string
		var down []verify.Link
		for _, op := range ops {
			if int(op) < len(names) {
				did = append(did, tampers[names[op]](src, rng))
			} else if op&1 == 1 {
				down = append(down, randomLinks(p, rng, 1)...)
			}
		}
		checkAgainstBrute(t, p, src, down, fmt.Sprintf("%q, down %v", did, down))
	})
}

func TestRunErrors(t *testing.T) {
	p := newPlan(t, "tiny")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := verify.Run(ctx, p, generated(p), verify.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Run: %v", err)
	}
	// A missing template: the NIC could not build those paths at all.
	src := newTampered(p)
	for i, e := range src.common {
		if e.Table.FullName() == schema.NICRowUSID {
			src.common = slices.Delete(src.common, i, i+1)
			break
		}
	}
	if _, err := verify.Run(context.Background(), p, src, verify.Options{}); err == nil || !strings.Contains(err.Error(), "no row template") {
		t.Errorf("missing row template: %v", err)
	}
	// Two templates with one uSID: paths could not be told apart.
	src = newTampered(p)
	var first *entry.Entry
	for i := range src.common {
		if e := &src.common[i]; e.Table.FullName() == schema.NICDownUSID {
			if first == nil {
				first = e
			} else {
				e.Params[0] = first.Params[0]
				break
			}
		}
	}
	if _, err := verify.Run(context.Background(), p, src, verify.Options{}); err == nil || !strings.Contains(err.Error(), "share the uSID") {
		t.Errorf("duplicate down template: %v", err)
	}
	// A source that fails.
	boom := errors.New("boom")
	if _, err := verify.Run(context.Background(), p, failing{generated(p), boom}, verify.Options{}); !errors.Is(err, boom) {
		t.Errorf("failing source: %v", err)
	}
	// An entry outside its width.
	src = newTampered(p)
	sw := plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}
	src.switches[sw][1].Params[0] = 1 << 9
	if _, err := verify.Run(context.Background(), p, src, verify.Options{}); err == nil || !strings.Contains(err.Error(), "p0-t0-0") {
		t.Errorf("invalid entry: %v", err)
	}
	// MaxFailures bounds the report.
	src = newTampered(p)
	for s := range src.switches {
		src.switches[s] = nil
	}
	rep, err := verify.Run(context.Background(), p, src, verify.Options{MaxFailures: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 0 || len(rep.Failures) != 3 {
		t.Errorf("no switch entries: %d delivered, %d failures", rep.Delivered, len(rep.Failures))
	}
}

type failing struct {
	verify.Source
	err error
}

func (f failing) NICEntries(plan.Host) ([]entry.Entry, error) { return nil, f.err }

// BenchmarkVerify131k proves mrc-131k from the generator: "lazy" asks it
// for each lookup the walk makes (what verify -p does), "entries" decodes
// every switch's and NIC's entries first (what a source without lookups
// costs, e.g. the way verify -p worked before lookups).
func BenchmarkVerify131k(b *testing.B) {
	p := newPlan(b, "mrc-131k")
	for _, c := range []struct {
		name string
		src  verify.Source
	}{{"lazy", generated(p)}, {"entries", entriesOnly{generated(p)}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var rep *verify.Report
			for b.Loop() {
				var err error
				rep, err = verify.Run(context.Background(), p, c.src, verify.Options{})
				if err != nil {
					b.Fatal(err)
				}
			}
			if !rep.OK() {
				b.Fatalf("report: %+v", rep)
			}
			b.ReportMetric(float64(rep.Paths)/b.Elapsed().Seconds()*float64(b.N), "paths/s")
			b.ReportMetric(float64(rep.States), "states")
		})
	}
}

// TestEVSetDamage breaks tiny's EV set (16 slots, 2 planes, 2 T1s: slot i
// is plane i mod 2, T1 (i div 2) mod 2, salt i) and checks that Run fails
// it, naming the table and the slots or plane, while every path is still
// delivered (the EV set decides which paths a QP uses, not whether they
// deliver).
func TestEVSetDamage(t *testing.T) {
	p := newPlan(t, "tiny")
	evAt := func(src *tampered, slot int) *entry.Entry {
		for _, i := range src.evEntries() {
			if int(src.common[i].Match[0].Value) == slot {
				return &src.common[i]
			}
		}
		t.Fatalf("no EV slot %d", slot)
		return nil
	}
	setEV := func(src *tampered, slot int, fl plan.EVFields) { evAt(src, slot).Params[0] = uint64(p.MakeEV(fl)) }
	for _, tc := range []struct {
		name   string
		damage func(src *tampered)
		want   []string // one failure each, by its Cause()
	}{
		{"every entry deleted", func(src *tampered) {
			src.common = slices.DeleteFunc(src.common, func(e entry.Entry) bool { return e.Table.FullName() == schema.NICEVSet })
		}, []string{"every NIC: table NicIngress.ev_set slots 0-15: no entry (the set has 16 slots, 0-15; 16 of them are missing)"}},
		{"two entries deleted", func(src *tampered) {
			src.common = slices.DeleteFunc(src.common, func(e entry.Entry) bool {
				return e.Table.FullName() == schema.NICEVSet && (e.Match[0].Value == 3 || e.Match[0].Value == 9)
			})
		}, []string{"every NIC: table NicIngress.ev_set slots 3,9: no entry (the set has 16 slots, 0-15; 2 of them are missing)"}},
		{"every EV zero", func(src *tampered) {
			for _, i := range src.evEntries() {
				src.common[i].Params[0] = 0
			}
		}, []string{"every NIC: table NicIngress.ev_set slots 1-15: salt is not the slot (slot 1 holds EV 0x00000000, salt 0, want 1): an echoed EV must name its slot"}},
		{"a wrong salt", func(src *tampered) {
			setEV(src, 5, plan.EVFields{Plane: 1, T1: 0, Salt: 4})
		}, []string{"every NIC: table NicIngress.ev_set slot 5: salt is not the slot (slot 5 holds EV 0x10000004, salt 4, want 5): an echoed EV must name its slot"}},
		{"a slot twice", func(src *tampered) {
			e := *evAt(src, 7)
			src.common = append(src.common, e)
		}, []string{"every NIC: table NicIngress.ev_set slot 7: more than one entry"}},
		{"a slot outside the set", func(src *tampered) {
			e := deepCopy([]entry.Entry{*evAt(src, 7)})[0]
			e.Match[0].Value = 16
			src.common = append(src.common, e)
		}, []string{"every NIC: table NicIngress.ev_set slot 16: outside the set (slots 0-15)"}},
		{"a plane out of range", func(src *tampered) {
			setEV(src, 2, plan.EVFields{Plane: 2, T1: 1, Salt: 2})
		}, []string{"every NIC: table NicIngress.ev_set slot 2: plane out of range (slot 2 holds EV 0x20040002, plane 2; the fabric has 2 planes)"}},
		{"a T1 out of range", func(src *tampered) {
			setEV(src, 2, plan.EVFields{Plane: 0, T1: 2, Salt: 2})
		}, []string{"every NIC: table NicIngress.ev_set slot 2: T1 out of range (slot 2 holds EV 0x00080002, T1 2; a plane has 2 T1s)"}},
		{"an unbalanced plane", func(src *tampered) {
			// Slot 1 (plane 1) moves to plane 0: 9 EVs against 7.
			setEV(src, 1, plan.EVFields{Plane: 0, T1: 0, Salt: 1})
		}, []string{"every NIC: table NicIngress.ev_set planes: unbalanced: plane 0 holds 9, plane 1 holds 7; every plane must hold 8 (16 slots over 2 planes)"}},
		{"unbalanced T1s", func(src *tampered) {
			// Slot 2 (plane 0, T1 1) moves to T1 0: 5 EVs against 3.
			setEV(src, 2, plan.EVFields{Plane: 0, T1: 0, Salt: 2})
		}, []string{"every NIC: table NicIngress.ev_set plane 0: T1s unbalanced: T1 0 holds 5, T1 1 holds 3; each T1 must hold 4 (8 EVs over 2 T1s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newTampered(p)
			tc.damage(src)
			rep := checkAgainstBrute(t, p, src, nil, tc.name)
			if rep.Delivered != rep.Paths || rep.OK() || rep.EVSet != nil {
				t.Fatalf("delivered %d of %d, OK %v, EV set %v", rep.Delivered, rep.Paths, rep.OK(), rep.EVSet)
			}
			var got []string
			for _, f := range rep.Failures {
				got = append(got, f.Cause())
				if f.Table != schema.NICEVSet || f.Device != verify.EveryNIC {
					t.Errorf("failure %+v: not in the EV set of every NIC", f)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("failures\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	// Untouched, the set is read slot by slot.
	rep, err := verify.Run(context.Background(), p, generated(p), verify.Options{})
	if err != nil || !rep.OK() || !slices.Equal(rep.EVSet, p.EVSet()) {
		t.Fatalf("untouched: %v, %+v", err, rep)
	}
}

// TestRunChecksBackupSet: Run reads the ev_backup table and names what is
// wrong with it, without disturbing the proof of the paths.
func TestRunChecksBackupSet(t *testing.T) {
	p := newPlan(t, "tiny")
	src := newTampered(p)
	kept := src.common[:0]
	for _, e := range src.common {
		if e.Table.FullName() != schema.NICEVBackup {
			kept = append(kept, e)
		}
	}
	src.common = kept
	rep, err := verify.Run(context.Background(), p, src, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || len(rep.Failures) != 1 || rep.Delivered != rep.Paths {
		t.Fatalf("no backup set: OK %v, %d failures, delivered %d of %d", rep.OK(), len(rep.Failures), rep.Delivered, rep.Paths)
	}
	want := "every NIC: table NicIngress.ev_backup slots 0-15: no entry (the set has 16 slots, 0-15; 16 of them are missing)"
	if got := rep.Failures[0].Cause(); got != want {
		t.Errorf("failure %q, want %q", got, want)
	}
}

// TestCheckEVSetBackup checks a set that is not the base one (as a backup
// set would be: its own table, salts after the base set's) with the same
// function, and mrc-131k's set, whose 32 EVs per plane spread over 256 T1s
// (each T1 holds 0 or 1).
func TestCheckEVSetBackup(t *testing.T) {
	p := newPlan(t, "tiny")
	spec := verify.EVSetSpec{Device: verify.EveryNIC, File: "nics/backup.txtpb", Table: "NicIngress.ev_backup", Size: 16, FirstSalt: 16}
	var set []verify.SlotEV
	for i, ev := range p.EVSet() {
		fl := p.SplitEV(ev)
		fl.Salt += 16
		set = append(set, verify.SlotEV{Slot: i, EV: p.MakeEV(fl)})
	}
	if got := verify.CheckEVSet(p, spec, set); got != nil {
		t.Errorf("sound backup set: %v", got)
	}
	set[4].EV = set[3].EV
	got := verify.CheckEVSet(p, spec, set)
	want := "every NIC (nics/backup.txtpb): table NicIngress.ev_backup slot 4: salt is not the slot (slot 4 holds EV 0x10040013, salt 19, want 20): an echoed EV must name its slot"
	if len(got) != 1 || got[0].String() != want || got[0].Key != "slot 4" {
		t.Errorf("backup set with slot 4 = slot 3:\n%v\nwant\n%s", got, want)
	}
	// A base EV (salt 0) in slot 0 of the backup set: a wrong salt, and
	// slots 1-15 missing.
	if got := verify.CheckEVSet(p, spec, []verify.SlotEV{{Slot: 0, EV: p.EVSet()[0]}}); len(got) != 2 {
		t.Errorf("one base EV as a backup set: %v", got)
	}

	// Against the base set: a backup must stay in its base EV's plane and
	// cross another T1.
	bspec := verify.EVSetSpec{Device: verify.EveryNIC, Table: schema.NICEVBackup, Size: 16, FirstSalt: 16, BackupOf: p.EVSet()}
	set = nil
	for i, ev := range p.EVBackupSet() {
		set = append(set, verify.SlotEV{Slot: i, EV: ev})
	}
	if got := verify.CheckEVSet(p, bspec, set); got != nil {
		t.Errorf("the plan's backup set: %v", got)
	}
	same := slices.Clone(set)
	fl := p.SplitEV(p.EVSet()[2])
	fl.Salt = 18
	same[2].EV = p.MakeEV(fl) // slot 2's base EV with a backup salt
	got = verify.CheckEVSet(p, bspec, same)
	if len(got) != 1 || !strings.Contains(got[0].Problem, "slot 2: backup crosses the same T1 as its base EV (slot 2 holds EV 0x00040012 on T1 1, as its base EV 0x00040002): it would fail with it") {
		t.Errorf("backup on its base's T1: %v", got)
	}
	other := slices.Clone(set)
	fl = p.SplitEV(other[2].EV)
	fl.Plane = 1
	other[2].EV = p.MakeEV(fl)
	got = verify.CheckEVSet(p, bspec, other)
	if len(got) != 1 || !strings.Contains(got[0].Problem, "slot 2: backup in another plane than its base EV") {
		t.Errorf("backup in another plane: %v", got)
	}

	big := newPlan(t, "mrc-131k")
	set = nil
	for i, ev := range big.EVSet() {
		set = append(set, verify.SlotEV{Slot: i, EV: ev})
	}
	base := verify.EVSetSpec{Device: verify.EveryNIC, Table: schema.NICEVSet, Size: big.F.EV.SetSize}
	if got := verify.CheckEVSet(big, base, set); got != nil {
		t.Errorf("mrc-131k base set: %v", got)
	}
	// Two EVs of plane 0 on T1 0 (its T1 8 now holds none, which is allowed).
	fl = big.SplitEV(set[8].EV)
	fl.T1 = big.SplitEV(set[0].EV).T1
	set[8].EV = big.MakeEV(fl)
	if got := verify.CheckEVSet(big, base, set); len(got) != 1 || !strings.Contains(got[0].Problem, "plane 0: T1s unbalanced: T1 0 holds 2; each T1 must hold 0 or 1 (32 EVs over 256 T1s)") {
		t.Errorf("mrc-131k, two EVs on T1 0: %v", got)
	}
}

// TestFailureNamesCause breaks one entry of tiny at a time and checks that
// Run names that entry (device, table, key), not where the packets it
// misleads end up, and the path classes that need it.
func TestFailureNamesCause(t *testing.T) {
	p := newPlan(t, "tiny")
	t1 := plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0}
	t01 := plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 1}
	routeFor := func(src *tampered, s plan.Switch, usid uint16) int {
		for _, i := range src.entriesOf(s, schema.SwitchRoute) {
			if src.switches[s][i].Match[0].Value == p.Key48(usid) {
				return i
			}
		}
		t.Fatalf("%s has no route for %#04x", p.Name(s), usid)
		return -1
	}
	nicEntry := func(src *tampered, h plan.Host, table string, key uint64) int {
		for i, e := range src.nics[h] {
			if e.Table.FullName() == table && e.Match[0].Value == key {
				return i
			}
		}
		t.Fatalf("%s has no %s entry %d", p.HostName(h), table, key)
		return -1
	}
	for _, tc := range []struct {
		name               string
		damage             func(src *tampered)
		device, table, key string
		want               string // the failure's String()
	}{
		{"T1 route deleted", func(src *tampered) {
			i := routeFor(src, t1, p.T0USID(0, 1))
			src.switches[t1] = slices.Delete(src.switches[t1], i, i+1)
		}, "p0-t1-0", schema.SwitchRoute, "fcbb:bb00:401::/48 (uN of p0-t0-1)",
			"p0-t1-0: table SwitchIngress.usid_route has no entry for key fcbb:bb00:401::/48 (uN of p0-t0-1), needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0"},
		{"T1 route sends back to the source T0", func(src *tampered) {
			src.switches[t1][routeFor(src, t1, p.T0USID(0, 1))].Params[0] = 0
		}, "p0-t1-0", schema.SwitchRoute, "fcbb:bb00:401::/48 (uN of p0-t0-1)",
			"p0-t1-0: table SwitchIngress.usid_route entry for key fcbb:bb00:401::/48 (uN of p0-t0-1) sends to port 0 (p0-t0-0), not to p0-t0-1 (port 1), needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0"},
		{"T1 my_usid deleted", func(src *tampered) {
			i := src.entriesOf(t1, schema.SwitchMyUSID)[0]
			src.switches[t1] = slices.Delete(src.switches[t1], i, i+1)
		}, "p0-t1-0", schema.SwitchMyUSID, "fcbb:bb00:800::/48 (uN of p0-t1-0)",
			"p0-t1-0: table SwitchIngress.my_usid has no entry for key fcbb:bb00:800::/48 (uN of p0-t1-0), the switch's own uSID, needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0; p0-t0-1 -> p0-t0-0 via p0-t1-0"},
		{"T0 down route to the wrong port", func(src *tampered) {
			src.switches[t01][routeFor(src, t01, p.DownUSID(0, 0))].Params[0] = 1
		}, "p0-t0-1", schema.SwitchRoute, "fcbb:bb00:c00::/48 (uDL of down port 0 in plane 0)",
			"p0-t0-1: table SwitchIngress.usid_route entry for key fcbb:bb00:c00::/48 (uDL of down port 0 in plane 0) sends to port 1 (nic-3), not to nic-2 (port 0), needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0; p0-t0-0 -> p0-t0-1 via p0-t1-1; p0-t0-1 -> p0-t0-1 (same T0)"},
		{"T1 templates swapped", func(src *tampered) {
			for i := range src.common {
				if e := src.common[i]; e.Table.FullName() == schema.NICT1USID && e.Match[0].Value == 0 {
					e.Params[0] = uint64(p.T1USID(0, 1-int(e.Match[1].Value)))
				}
			}
		}, verify.EveryNIC, schema.NICT1USID, "plane 0, t1 0",
			"every NIC: table NicEgress.t1_usid entry (plane 0, t1 0) holds 0x0801 (uN of p0-t1-1), not 0x0800 (uN of p0-t1-0), needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0; p0-t0-1 -> p0-t0-0 via p0-t1-0"},
		{"down-port templates swapped", func(src *tampered) {
			for i := range src.common {
				if e := src.common[i]; e.Table.FullName() == schema.NICDownUSID && e.Match[0].Value == 1 {
					e.Params[0] = uint64(p.DownUSID(1, 1-int(e.Match[1].Value)))
				}
			}
		}, verify.EveryNIC, schema.NICDownUSID, "plane 1, port 0",
			"every NIC: table NicEgress.down_usid entry (plane 1, port 0) holds 0x1c01 (uDL of down port 1 in plane 1), not 0x1c00 (uDL of down port 0 in plane 1), needed by paths p1-t0-0 -> p1-t0-1 via p1-t1-0; p1-t0-0 -> p1-t0-1 via p1-t1-1; p1-t0-0 -> p1-t0-0 (same T0); p1-t0-1 -> p1-t0-0 via p1-t1-0; p1-t0-1 -> p1-t0-0 via p1-t1-1; p1-t0-1 -> p1-t0-1 (same T0)"},
		{"NIC's own T0 uSID wrong", func(src *tampered) {
			h := plan.Host{Row: 0, Port: 0}
			src.nics[h][nicEntry(src, h, schema.NICPlaneSelf, 0)].Params[0] = uint64(p.T0USID(0, 1))
		}, "nic-0", schema.NICPlaneSelf, "plane 0",
			"nic-0: table NicEgress.plane_self entry for plane 0 says own_t0_usid 0x0401 (uN of p0-t0-1), its T0's uN is 0x0400, needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0; p0-t0-0 -> p0-t0-1 via p0-t1-1; p0-t0-0 -> p0-t0-0 (same T0)"},
		{"NIC port forgets its plane", func(src *tampered) {
			h := plan.Host{Row: 1, Port: 1}
			i := nicEntry(src, h, schema.NICRxPlane, 1)
			src.nics[h] = slices.Delete(src.nics[h], i, i+1)
		}, "nic-3", schema.NICRxPlane, "port 1",
			"nic-3: table NicIngress.rx_plane has no entry for port 1 (it faces plane 0), needed by paths p0-t0-0 -> p0-t0-1 via p0-t1-0; p0-t0-0 -> p0-t0-1 via p0-t1-1; p0-t0-1 -> p0-t0-1 (same T0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newTampered(p)
			tc.damage(src)
			rep := checkAgainstBrute(t, p, src, nil, tc.name)
			if rep.OK() || len(rep.Failures) == 0 {
				t.Fatalf("OK %v, failures %q", rep.OK(), rep.Failures)
			}
			f := rep.Failures[0]
			if f.String() != tc.want {
				t.Errorf("failure\n%s\nwant\n%s\n(all: %q)", f, tc.want, rep.Failures)
			}
			if f.Device != tc.device || f.Table != tc.table || f.Key != tc.key {
				t.Errorf("device %q table %q key %q, want %q %q %q", f.Device, f.Table, f.Key, tc.device, tc.table, tc.key)
			}
			// Every lost class is explained by a failure that lists it.
			for _, l := range rep.Lost {
				found := false
				for _, f := range rep.Failures {
					found = found || f.Cause() == l.Reason
				}
				if !found {
					t.Errorf("lost class %+v: no failure %q", l, l.Reason)
				}
			}
		})
	}
}

// BenchmarkVerify131kFail is verify --fail: one T0-T1 link and one host
// link of mrc-131k down.
func BenchmarkVerify131kFail(b *testing.B) {
	p := newPlan(b, "mrc-131k")
	src := generated(p)
	for _, c := range []struct {
		name string
		link verify.Link
	}{
		{"t0-t1", verify.Link{Switch: plan.Switch{Role: plan.RoleT0, Plane: 3, Index: 100}, Port: p.T0UpPort(7)}},
		{"host", verify.Link{Switch: plan.Switch{Role: plan.RoleT0, Plane: 3, Index: 100}, Port: p.T0DownPort(5)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var rep *verify.Report
			for b.Loop() {
				var err error
				rep, err = verify.Run(context.Background(), p, src, verify.Options{Down: []verify.Link{c.link}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rep.Paths-rep.Delivered), "lost-paths")
			b.ReportMetric(float64(len(rep.Lost)), "lost-classes")
		})
	}
}
