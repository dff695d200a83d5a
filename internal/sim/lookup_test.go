package sim

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

// TestCachedLookup: the switches' cached lookups answer every uSID (own
// plane or not, cached or not, asked once or twice) as the tables do.
func TestCachedLookup(t *testing.T) {
	f, p, _ := genSource(t, "small")
	g := tables.NewGenerator(p)
	for _, sw := range p.Switches() {
		st, err := verify.DecodeSwitch(g.SwitchEntries(sw, nil))
		if err != nil {
			t.Fatal(err)
		}
		l := newCachedLookup(f, sw.Plane, st)
		for round := 0; round < 2; round++ {
			for u := 0; u < 1<<16; u++ {
				for _, block := range []uint64{uint64(f.Block), uint64(f.Block) ^ 1} {
					key := block<<16 | uint64(u)
					if got, want := l.myUSID(block, uint16(u)), st.MyUSID(key); got != want {
						t.Fatalf("%s: my_usid %#x: %v, tables %v", p.Name(sw), key, got, want)
					}
					port, toHost, ok := l.routeOf(block, uint16(u))
					r, wok := st.Route(key)
					if ok != wok || ok && (port != r.Port || toHost != r.ToHost) {
						t.Fatalf("%s: route %#x: %d %v %v, tables %+v %v", p.Name(sw), key, port, toHost, ok, r, wok)
					}
				}
			}
		}
	}
}
