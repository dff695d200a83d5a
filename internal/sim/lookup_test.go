package sim

import (
	"encoding/binary"
	"slices"
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

// TestKnownRoute: the prefetch's guess of a hop's egress port
// (knownRoute) is never made from cells the hop has not filled, never
// differs from the port the hop takes (the shift of an own uSID, then the
// route of the active one), and is made for every hop the cells answer.
func TestKnownRoute(t *testing.T) {
	f, p, _ := genSource(t, "small")
	g := tables.NewGenerator(p)
	h := make([]byte, oDst+16)
	for _, sw := range p.Switches() {
		st, err := verify.DecodeSwitch(g.SwitchEntries(sw, nil))
		if err != nil {
			t.Fatal(err)
		}
		l := newCachedLookup(f, sw.Plane, st)
		hop := func(block uint64, u1, u2 uint16) (int, bool) {
			active := u1
			if l.myUSID(block, u1) {
				active = u2
			}
			if active == 0 {
				return 0, false
			}
			out, _, ok := l.routeOf(block, active)
			return out, ok
		}
		// The uSIDs the switch shifts on, and those it routes (and one it
		// does not): the next uSIDs that make a shifted hop.
		var own, next []uint16
		for u := 0; u < 1<<16; u++ {
			key := uint64(f.Block)<<16 | uint64(u)
			if st.MyUSID(key) {
				own = append(own, uint16(u))
			}
			if _, ok := st.Route(key); ok {
				next = append(next, uint16(u))
			} else if len(next) > 0 && next[len(next)-1] != 0xffff {
				next = append(next, 0xffff)
			}
		}
		if len(own) == 0 || len(next) < 2 {
			t.Fatalf("%s: %d own uSIDs and %d routed", p.Name(sw), len(own), len(next))
		}
		shifted := 0
		for _, block := range []uint64{uint64(f.Block), uint64(f.Block) ^ 1} {
			binary.BigEndian.PutUint32(h[oDst:], uint32(block))
			for u1 := 0; u1 < 1<<16; u1++ {
				u2s := []uint16{0, next[u1%len(next)]}
				if slices.Contains(own, uint16(u1)) {
					u2s = append(slices.Clip(next), 0)
				}
				for _, u2 := range u2s {
					binary.BigEndian.PutUint16(h[oDst+4:], uint16(u1))
					binary.BigEndian.PutUint16(h[oDst+6:], u2)
					before, known := l.knownRoute(h)
					out, ok := hop(block, uint16(u1), u2)
					if known && (!ok || before != out) {
						t.Fatalf("%s: %#x then %#x: known route %d before the hop, which takes %d (%v)", p.Name(sw), u1, u2, before, out, ok)
					}
					after, known := l.knownRoute(h)
					if known != ok || ok && after != out {
						t.Fatalf("%s: %#x then %#x: known route %d (%v) after the hop, which took %d (%v)", p.Name(sw), u1, u2, after, known, out, ok)
					}
					if ok && slices.Contains(own, uint16(u1)) {
						shifted++
					}
				}
			}
		}
		if shifted == 0 {
			t.Fatalf("%s: no hop shifted and routed", p.Name(sw))
		}
	}
}
