// Package tabletest holds what the tests of tables and its subpackages
// share: a generator for a preset and every device's entries, grouped.
package tabletest

import (
	"fmt"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// Generator returns the table generator of a preset fabric.
func Generator(t testing.TB, preset string) *tables.Generator {
	t.Helper()
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	return tables.NewGenerator(plan.New(f))
}

// Group is a set of entries of one program, named for messages.
type Group struct {
	Name    string
	Prog    *schema.Program
	Entries []entry.Entry
}

// AllGroups lists every device's entries: every switch, the NIC common
// tables, every NIC row and every NIC port.
func AllGroups(g *tables.Generator) []Group {
	p, f := g.Plan, g.Plan.F
	var out []Group
	for _, s := range p.Switches() {
		out = append(out, Group{p.Name(s), g.Switch, g.SwitchEntries(s, nil)})
	}
	out = append(out, Group{"nic common", g.NIC, g.NICCommonEntries()})
	for r := 0; r < f.T0Count; r++ {
		out = append(out, Group{fmt.Sprintf("nic row %d", r), g.NIC, g.NICRowEntries(r, nil)})
	}
	for k := 0; k < f.T0Down; k++ {
		out = append(out, Group{fmt.Sprintf("nic port %d", k), g.NIC, g.NICPortEntries(k, nil)})
	}
	return out
}
