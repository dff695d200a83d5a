package tables_test

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/internal/tabletest"
)

// TestSwitchLookup checks that SwitchMyUSID and SwitchRoute answer every
// key of the 16-bit uSID space (and keys outside the block) exactly as the
// entries SwitchEntries returns: the lazy lookups verify walks are the
// tables build writes.
func TestSwitchLookup(t *testing.T) {
	for _, preset := range fabric.PresetNames() {
		t.Run(preset, func(t *testing.T) {
			g := tabletest.Generator(t, preset)
			p, f := g.Plan, g.Plan.F
			switches := p.Switches()
			if preset == "mrc-131k" {
				switches = nil
				for _, pl := range []int{0, f.Planes - 1} {
					for _, i := range []int{0, 1, f.T1Count - 1} {
						switches = append(switches, plan.Switch{Role: plan.RoleT0, Plane: pl, Index: i}, plan.Switch{Role: plan.RoleT1, Plane: pl, Index: i})
					}
					switches = append(switches, plan.Switch{Role: plan.RoleT0, Plane: pl, Index: f.T0Count - 1})
				}
			}
			var buf []entry.Entry
			for _, s := range switches {
				buf = g.SwitchEntries(s, buf)
				own := map[uint64]bool{}
				type route struct {
					port   int
					toHost bool
				}
				routes := map[uint64]route{}
				for _, e := range buf {
					switch e.Table.FullName() {
					case schema.SwitchMyUSID:
						own[e.Match[0].Value] = e.Action.Name == "usid_shift"
					case schema.SwitchRoute:
						routes[e.Match[0].Value] = route{int(e.Params[0]), e.Action.Name == "forward_to_host"}
					}
				}
				check := func(key uint64) {
					if got := g.SwitchMyUSID(s, key); got != own[key] {
						t.Fatalf("%s: SwitchMyUSID(%#x) = %v, entries say %v", p.Name(s), key, got, own[key])
					}
					port, toHost, ok := g.SwitchRoute(s, key)
					want, wantOK := routes[key]
					if ok != wantOK || ok && (port != want.port || toHost != want.toHost) {
						t.Fatalf("%s: SwitchRoute(%#x) = %d, %v, %v; entries say %+v, %v", p.Name(s), key, port, toHost, ok, want, wantOK)
					}
				}
				for u := 0; u < 1<<16; u++ {
					check(p.Key48(uint16(u)))
				}
				check(uint64(f.Block+1)<<16 | uint64(p.SwitchUSID(s)))
				check(uint64(p.SwitchUSID(s)))
			}
		})
	}
}
