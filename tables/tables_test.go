package tables_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/internal/tabletest"
)

func TestEntryCounts(t *testing.T) {
	for _, preset := range fabric.PresetNames() {
		t.Run(preset, func(t *testing.T) {
			g := tabletest.Generator(t, preset)
			p, f := g.Plan, g.Plan.F
			switches := p.Switches()
			if preset == "mrc-131k" {
				// One T0 and one T1 of every plane's far corner: enough to
				// check the formula, cheap enough for every test run.
				switches = nil
				for pl := 0; pl < f.Planes; pl++ {
					switches = append(switches, plan.Switch{Role: plan.RoleT0, Plane: pl, Index: f.T0Count - 1},
						plan.Switch{Role: plan.RoleT1, Plane: pl, Index: f.T1Count - 1})
				}
			}
			var buf []entry.Entry
			for _, s := range switches {
				buf = g.SwitchEntries(s, buf)
				want := 1 + f.T1Count + f.T0Down + 2 // own, routes up and down, two threshold classes
				if s.Role == plan.RoleT1 {
					want = 1 + f.T0Count + 1
				}
				if len(buf) != want || g.SwitchEntryCount(s) != want {
					t.Fatalf("%s: %d entries, SwitchEntryCount %d, want %d", p.Name(s), len(buf), g.SwitchEntryCount(s), want)
				}
				// The route table fits the program's declared size.
				routes := 0
				for _, e := range buf {
					if e.Table.FullName() == schema.SwitchRoute {
						routes++
					}
				}
				if routes > g.Switch.Table(schema.SwitchRoute).Size {
					t.Fatalf("%s: %d routes, table size %d", p.Name(s), routes, g.Switch.Table(schema.SwitchRoute).Size)
				}
			}
			common := g.NICCommonEntries()
			// Base and backup EV sets (a backup per slot: every preset has
			// more than one T1), and the templates.
			if want := 2*f.EV.SetSize + f.Planes*(f.T0Count+f.T1Count+f.T0Down); len(common) != want {
				t.Fatalf("NIC common: %d entries, want %d", len(common), want)
			}
			perTable := map[string]int{}
			for _, e := range common {
				perTable[e.Table.FullName()]++
			}
			for name, n := range perTable {
				if size := g.NIC.Table(name).Size; n > size {
					t.Fatalf("NIC common: %d entries in %s of size %d", n, name, size)
				}
			}
			h := p.HostByIndex(f.Hosts() - 1)
			if n := len(g.NICEntries(h, nil)); n != g.NICEntryCount() || n != 2*f.Planes {
				t.Fatalf("NIC %+v: %d entries, NICEntryCount %d", h, n, g.NICEntryCount())
			}
		})
	}
}

// TestSwitchEntriesContent spells out the tables of one tiny T0 and T1.
func TestSwitchEntriesContent(t *testing.T) {
	g := tabletest.Generator(t, "tiny")
	render := func(s plan.Switch) string {
		var b strings.Builder
		for _, e := range g.SwitchEntries(s, nil) {
			fmt.Fprintf(&b, "%s %s", e.Table.Name, e.Action.Name)
			for _, m := range e.Match {
				fmt.Fprintf(&b, " %#x", m.Value)
			}
			for _, v := range e.Params {
				fmt.Fprintf(&b, " %d", v)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	// Plane 1, T0 row 1: own uSID 0x1401; T1s 0x1800, 0x1801 on up ports 2, 3;
	// down ports 0x1c00, 0x1c01 on ports 0, 1.
	wantT0 := `my_usid usid_shift 0xfcbbbb001401
usid_route forward 0xfcbbbb001800 2
usid_route forward 0xfcbbbb001801 3
usid_route forward_to_host 0xfcbbbb001c00 0
usid_route forward_to_host 0xfcbbbb001c01 1
queue_thresholds set_queue_thresholds 0x0 16 14 134
queue_thresholds set_queue_thresholds 0x1 16 14 134
`
	if got := render(plan.Switch{Role: plan.RoleT0, Plane: 1, Index: 1}); got != wantT0 {
		t.Errorf("p1-t0-1:\n%s\nwant\n%s", got, wantT0)
	}
	wantT1 := `my_usid usid_shift 0xfcbbbb000801
usid_route forward 0xfcbbbb000400 0
usid_route forward 0xfcbbbb000401 1
queue_thresholds set_queue_thresholds 0x0 16 14 134
`
	if got := render(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 1}); got != wantT1 {
		t.Errorf("p0-t1-1:\n%s\nwant\n%s", got, wantT1)
	}
}

// TestEntriesReuseDst checks that a dst slice is reused, not aliased into
// a previous result's values.
func TestEntriesReuseDst(t *testing.T) {
	g := tabletest.Generator(t, "small")
	a := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, nil)
	want := slices.Clone(a)
	for i := range want {
		want[i].Match, want[i].Params = slices.Clone(want[i].Match), slices.Clone(want[i].Params)
	}
	b := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 3, Index: 7}, a)
	c := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, nil)
	for i := range c {
		if !c[i].Equal(&want[i]) {
			t.Fatalf("entry %d changed: %+v", i, c[i])
		}
	}
	if b[0].Equal(&want[0]) {
		t.Fatalf("p3-t0-7 has p0-t0-0's own uSID")
	}
}

// TestSwitchOwnAndPlaneEntries: a switch's entries are its own followed by
// those of its role and plane, which are the same for every switch of the
// role in the plane (what a build renders once).
func TestSwitchOwnAndPlaneEntries(t *testing.T) {
	g := tabletest.Generator(t, "small")
	for _, s := range g.Plan.Switches() {
		want := g.SwitchEntries(s, nil)
		got := append(g.SwitchOwnEntries(s, nil), g.SwitchPlaneEntries(s.Role, s.Plane, nil)...)
		if len(got) != len(want) || len(got) != g.SwitchEntryCount(s) {
			t.Fatalf("%s: %d entries, want %d", g.Plan.Name(s), len(got), len(want))
		}
		for i := range got {
			if !got[i].Equal(&want[i]) {
				t.Fatalf("%s: entry %d %+v, want %+v", g.Plan.Name(s), i, got[i], want[i])
			}
		}
	}
}
