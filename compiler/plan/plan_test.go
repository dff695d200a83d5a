package plan_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// forEachPreset runs fn on the plan of every preset. Every property below is
// checked exhaustively and in time linear in the fabric, mrc-131k included.
func forEachPreset(t *testing.T, fn func(t *testing.T, p *plan.Plan)) {
	for _, name := range fabric.PresetNames() {
		t.Run(name, func(t *testing.T) {
			f, err := fabric.FromPreset(name)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, plan.New(f))
		})
	}
}

func TestUSIDsUniqueAndNonZero(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		l := f.USID
		owner := map[uint16]string{}
		claim := func(u uint16, what string) {
			t.Helper()
			if u == 0 {
				t.Fatalf("%s has the zero uSID (end of carrier)", what)
			}
			if other, dup := owner[u]; dup {
				t.Fatalf("%s and %s share the uSID %#04x", what, other, u)
			}
			owner[u] = what
		}
		for _, s := range p.Switches() {
			u := p.SwitchUSID(s)
			claim(u, p.Name(s))
			// The uSID carries the plane in its top bits and the kind next.
			if pl := int(u >> (l.KindBits + l.IndexBits)); pl != s.Plane {
				t.Fatalf("%s: uSID %#04x says plane %d", p.Name(s), u, pl)
			}
			wantKind := plan.KindT0
			if s.Role == plan.RoleT1 {
				wantKind = plan.KindT1
			}
			if k := int(u>>l.IndexBits) & (1<<l.KindBits - 1); k != wantKind {
				t.Fatalf("%s: uSID %#04x has kind %d", p.Name(s), u, k)
			}
			if k := p.Key48(u); k>>16 != uint64(f.Block) || uint16(k) != u {
				t.Fatalf("%s: Key48 = %#x", p.Name(s), k)
			}
		}
		if len(owner) != f.Switches() {
			t.Fatalf("%d switch uSIDs for %d switches", len(owner), f.Switches())
		}
		// uDLs: unique within a plane (and, carrying the plane, across
		// planes), and never a switch's uSID.
		for pl := 0; pl < f.Planes; pl++ {
			for k := 0; k < f.T0Down; k++ {
				claim(p.DownUSID(pl, k), fmt.Sprintf("uDL of plane %d port %d", pl, k))
			}
		}
		if len(owner) != f.Switches()+f.Planes*f.T0Down {
			t.Fatalf("%d uSIDs in all", len(owner))
		}
	})
}

func TestSwitchesOrderAndNames(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		sw := p.Switches()
		if len(sw) != f.Switches() {
			t.Fatalf("%d switches, want %d", len(sw), f.Switches())
		}
		names := map[string]bool{}
		for i, s := range sw {
			// Plane by plane, T0s then T1s.
			pl, j := i/f.SwitchesPerPlane(), i%f.SwitchesPerPlane()
			want := plan.Switch{Role: plan.RoleT0, Plane: pl, Index: j}
			if j >= f.T0Count {
				want = plan.Switch{Role: plan.RoleT1, Plane: pl, Index: j - f.T0Count}
			}
			if s != want {
				t.Fatalf("Switches()[%d] = %+v, want %+v", i, s, want)
			}
			name := p.Name(s)
			if names[name] {
				t.Fatalf("two switches named %s", name)
			}
			names[name] = true
			got, ok := p.SwitchByName(name)
			if !ok || got != s {
				t.Fatalf("SwitchByName(%q) = %+v, %v; want %+v", name, got, ok, s)
			}
		}
	})
}

func TestSwitchNames(t *testing.T) {
	tiny, _ := fabric.FromPreset("tiny")
	big, _ := fabric.FromPreset("mrc-131k")
	pt, pb := plan.New(tiny), plan.New(big)
	for _, c := range []struct {
		p    *plan.Plan
		s    plan.Switch
		name string
	}{
		{pt, plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 1}, "p0-t0-1"},
		{pt, plan.Switch{Role: plan.RoleT1, Plane: 1, Index: 0}, "p1-t1-0"},
		{pb, plan.Switch{Role: plan.RoleT0, Plane: 7, Index: 5}, "p7-t0-005"},
		{pb, plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 255}, "p0-t1-255"},
	} {
		if got := c.p.Name(c.s); got != c.name {
			t.Errorf("Name(%+v) = %q, want %q", c.s, got, c.name)
		}
	}
	for _, junk := range []string{
		"", "p0", "p0-t0", "p0-t0-", "x0-t0-000", "p0-t2-000", "p0-nic-000", "p8-t0-000", "p-1-t0-000",
		"p0-t0-512", "p0-t1-256", "p0-t0-00", "p0-t0-0000", "p0-t0-000x", "p0-t0-000 ", " p0-t0-000",
		"p00-t0-000", "p+0-t0-000", "p0-t0--01", "P0-T0-000", "p0_t0_000", "p0-t0-1e2",
	} {
		if s, ok := pb.SwitchByName(junk); ok {
			t.Errorf("SwitchByName(%q) = %+v, want refusal", junk, s)
		}
	}
	if _, ok := pt.SwitchByName("p0-t0-000"); ok {
		t.Errorf("tiny accepts mrc-131k's zero padding")
	}
	if r := plan.Role(9).String(); r != "role(9)" {
		t.Errorf("Role(9) = %q", r)
	}
}

// TestNeighborSymmetric walks every port of every switch: a used port leads
// to a port that leads back; unused ports lead nowhere.
func TestNeighborSymmetric(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		links := 0
		for _, s := range p.Switches() {
			used := p.Ports(s)
			for port := -1; port <= used; port++ {
				nb, ok := p.Neighbor(s, port)
				if port < 0 || port == used {
					if ok {
						t.Fatalf("%s port %d (unused) leads to %+v", p.Name(s), port, nb)
					}
					continue
				}
				if !ok {
					t.Fatalf("%s port %d leads nowhere", p.Name(s), port)
				}
				if nb.Plane != s.Plane {
					t.Fatalf("%s port %d leaves its plane: %+v", p.Name(s), port, nb)
				}
				switch {
				case s.Role == plan.RoleT0 && port < f.T0Down:
					// Down port k: the NIC of host (row, k), on its plane port.
					h := plan.Host{Row: s.Index, Port: port}
					if nb.Role != plan.RoleNIC || nb.Index != p.Index(h) || nb.Port != plan.NICPlanePort(s.Plane) {
						t.Fatalf("%s down port %d leads to %+v", p.Name(s), port, nb)
					}
					if back := p.NICNeighbor(h, s.Plane); back != (plan.Endpoint{Role: plan.RoleT0, Plane: s.Plane, Index: s.Index, Port: port}) {
						t.Fatalf("NIC %s plane %d leads to %+v, not back to %s port %d", p.HostName(h), s.Plane, back, p.Name(s), port)
					}
				default:
					// Fabric link: T0 up port <-> T1 down port.
					wantRole := plan.RoleT1
					if s.Role == plan.RoleT1 {
						wantRole = plan.RoleT0
					}
					if nb.Role != wantRole {
						t.Fatalf("%s port %d leads to a %s", p.Name(s), port, nb.Role)
					}
					back, ok := p.Neighbor(nb.Switch(), nb.Port)
					if !ok || back.Switch() != s || back.Port != port {
						t.Fatalf("%s port %d -> %s port %d -> %+v", p.Name(s), port, p.Name(nb.Switch()), nb.Port, back)
					}
					if s.Role == plan.RoleT0 && (nb.Index != port-f.T0Down || port != p.T0UpPort(nb.Index) || nb.Port != p.T1DownPort(s.Index)) {
						t.Fatalf("%s up port %d leads to %+v", p.Name(s), port, nb)
					}
					links++
				}
			}
		}
		// Every T0-T1 link seen from both ends.
		if want := 2 * f.Planes * f.T0Count * f.T1Count; links != want {
			t.Fatalf("%d fabric link ends, want %d", links, want)
		}
		if _, ok := p.Neighbor(plan.Switch{Role: plan.RoleNIC}, 0); ok {
			t.Fatalf("a NIC is not a switch")
		}
	})
}

func TestHostAddresses(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		names := map[string]bool{}
		for i := 0; i < f.Hosts(); i++ {
			h := p.HostByIndex(i)
			if p.Index(h) != i || h.Row >= f.T0Count || h.Port >= f.T0Down {
				t.Fatalf("HostByIndex(%d) = %+v", i, h)
			}
			a := p.HostAddr(h)
			if !f.HostPrefix.Contains(a) {
				t.Fatalf("%+v: address %s outside %s", h, a, f.HostPrefix)
			}
			b := a.As16()
			if row, port := int(b[12])<<8|int(b[13]), int(b[14])<<8|int(b[15]); row != h.Row || port != h.Port+1 {
				t.Fatalf("%+v: address %s holds row %d port+1 %d", h, a, row, port)
			}
			if got, ok := p.HostOfAddr(a); !ok || got != h {
				t.Fatalf("HostOfAddr(%s) = %+v, %v; want %+v", a, got, ok, h)
			}
			if i < 1000 || i%997 == 0 {
				name := p.HostName(h)
				if names[name] {
					t.Fatalf("two hosts named %s", name)
				}
				names[name] = true
			}
			if i%4099 == 0 {
				for pl := 0; pl < f.Planes; pl++ {
					sid := p.NICPortSID(pl, h).As16()
					want := p.Carrier(p.DownUSID(pl, h.Port))
					if sid != want {
						t.Fatalf("NICPortSID(%d, %+v) = %x", pl, h, sid)
					}
				}
			}
		}
		pa := f.HostPrefix.Addr().As16()
		with := func(edit func(b *[16]byte)) netip.Addr {
			b := pa
			edit(&b)
			return netip.AddrFrom16(b)
		}
		for _, foreign := range []netip.Addr{
			netip.MustParseAddr("2001:db8::1"),
			netip.MustParseAddr("10.0.0.1"),
			netip.AddrFrom16(p.Carrier(p.T0USID(0, 0))),
			with(func(b *[16]byte) { b[15] = 1; b[0] ^= 0x80 }),                                      // other prefix
			with(func(b *[16]byte) {}),                                                               // port+1 = 0
			with(func(b *[16]byte) { b[14], b[15] = byte((f.T0Down+1)>>8), byte(f.T0Down+1) }),       // port = T0Down
			with(func(b *[16]byte) { b[12], b[13], b[15] = byte(f.T0Count>>8), byte(f.T0Count), 1 }), // row = T0Count
			with(func(b *[16]byte) { b[11], b[15] = 1, 1 }),                                          // bits between prefix and row
			with(func(b *[16]byte) { b[15] = 1 }).WithZone("eth0"),                                   // zoned
		} {
			if h, ok := p.HostOfAddr(foreign); ok {
				t.Errorf("HostOfAddr(%s) = %+v, want refusal", foreign, h)
			}
		}
	})
}

func TestEVSet(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		set := p.EVSet()
		if len(set) != f.EV.SetSize {
			t.Fatalf("%d EVs, want %d", len(set), f.EV.SetSize)
		}
		seen := map[plan.EV]bool{}
		perPlane := make([]int, f.Planes)
		perT1 := make([]map[int]int, f.Planes)
		for i := range perT1 {
			perT1[i] = map[int]int{}
		}
		for i, ev := range set {
			if seen[ev] {
				t.Fatalf("slot %d repeats EV %#x", i, ev)
			}
			seen[ev] = true
			x := p.SplitEV(ev)
			if x.Salt != i {
				t.Fatalf("slot %d has salt %d", i, x.Salt)
			}
			if x.Plane != i%f.Planes {
				t.Fatalf("slot %d is in plane %d, want %d", i, x.Plane, i%f.Planes)
			}
			if x.T1 < 0 || x.T1 >= f.T1Count {
				t.Fatalf("slot %d names T1 %d of %d", i, x.T1, f.T1Count)
			}
			if p.MakeEV(x) != ev {
				t.Fatalf("MakeEV(SplitEV(%#x)) = %#x", ev, p.MakeEV(x))
			}
			perPlane[x.Plane]++
			perT1[x.Plane][x.T1]++
		}
		for pl, n := range perPlane {
			if n != f.EVsPerPlane() {
				t.Fatalf("plane %d holds %d EVs, want %d", pl, n, f.EVsPerPlane())
			}
			// Spread evenly over the T1s: counts differ by at most one, and
			// with fewer EVs than T1s, no T1 twice.
			lo, hi := f.EVsPerPlane(), 0
			for s := 0; s < f.T1Count; s++ {
				lo, hi = min(lo, perT1[pl][s]), max(hi, perT1[pl][s])
			}
			if hi-lo > 1 {
				t.Fatalf("plane %d: EVs per T1 range from %d to %d", pl, lo, hi)
			}
		}
	})
}

func TestEVBackupSet(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		base, backup := p.EVSet(), p.EVBackupSet()
		if len(backup) != len(base) {
			t.Fatalf("%d backup EVs for %d slots", len(backup), len(base))
		}
		perT1 := map[[2]int]int{}
		for i, ev := range backup {
			b, x := p.SplitEV(base[i]), p.SplitEV(ev)
			if x.Plane != b.Plane || x.T1 == b.T1 || x.Salt != f.EV.SetSize+i {
				t.Fatalf("slot %d: backup %+v for base %+v: want the same plane, another T1, salt %d", i, x, b, f.EV.SetSize+i)
			}
			perT1[[2]int{x.Plane, x.T1}]++
			for _, e := range []struct {
				ev     plan.EV
				backup bool
			}{{base[i], false}, {ev, true}} {
				if slot, isBackup, ok := p.EVSlot(e.ev); !ok || slot != i || isBackup != e.backup {
					t.Fatalf("EVSlot(%#x) = %d, %v, %v; want slot %d, backup %v", e.ev, slot, isBackup, ok, i, e.backup)
				}
			}
		}
		lo, hi := len(base), 0
		for _, n := range perT1 {
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 1 {
			t.Fatalf("backup EVs per (plane, T1) range from %d to %d", lo, hi)
		}
		if _, _, ok := p.EVSlot(p.MakeEV(plan.EVFields{Salt: 2 * f.EV.SetSize})); ok {
			t.Fatalf("salt %d names a slot", 2*f.EV.SetSize)
		}
	})
}

func TestEVRoundTrip(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		l := p.F.EV
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 10000; i++ {
			x := plan.EVFields{Plane: rng.IntN(1 << l.PlaneBits), T1: rng.IntN(1 << l.T1Bits), Salt: rng.IntN(1 << l.SaltBits)}
			if i == 0 {
				x = plan.EVFields{Plane: 1<<l.PlaneBits - 1, T1: 1<<l.T1Bits - 1, Salt: 1<<l.SaltBits - 1}
			}
			if got := p.SplitEV(p.MakeEV(x)); got != x {
				t.Fatalf("SplitEV(MakeEV(%+v)) = %+v", x, got)
			}
			ev := plan.EV(rng.Uint32())
			if got := p.MakeEV(p.SplitEV(ev)); got != ev {
				t.Fatalf("MakeEV(SplitEV(%#x)) = %#x", ev, got)
			}
		}
		// The profile layout: plane(4) | t1(10) | salt(18).
		if ev := p.MakeEV(plan.EVFields{Plane: 3, T1: 5, Salt: 7}); ev != 3<<28|5<<18|7 {
			t.Fatalf("MakeEV = %#x", ev)
		}
	})
}

func TestPath(t *testing.T) {
	forEachPreset(t, func(t *testing.T, p *plan.Plan) {
		f := p.F
		rng := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 2000; i++ {
			src, dst := p.HostByIndex(rng.IntN(f.Hosts())), p.HostByIndex(rng.IntN(f.Hosts()))
			if i%3 == 0 {
				dst.Row = src.Row
			}
			pl, t1 := rng.IntN(f.Planes), rng.IntN(f.T1Count)
			path := p.Path(pl, src, dst, t1)
			want := []uint16{p.T0USID(pl, src.Row), p.T1USID(pl, t1), p.T0USID(pl, dst.Row), p.DownUSID(pl, dst.Port)}
			if src.Row == dst.Row {
				want = []uint16{p.T0USID(pl, src.Row), p.DownUSID(pl, dst.Port)}
			}
			if fmt.Sprint(path) != fmt.Sprint(want) {
				t.Fatalf("Path(%d, %+v, %+v, %d) = %x, want %x", pl, src, dst, t1, path, want)
			}
			c := p.Carrier(path...)
			for j := 0; j < 6; j++ {
				u := uint16(c[4+2*j])<<8 | uint16(c[5+2*j])
				if j < len(path) && u != path[j] || j >= len(path) && u != 0 {
					t.Fatalf("carrier %x: uSID %d = %#04x", c, j, u)
				}
			}
			if b := uint32(c[0])<<24 | uint32(c[1])<<16 | uint32(c[2])<<8 | uint32(c[3]); b != f.Block {
				t.Fatalf("carrier %x: block %#x", c, b)
			}
		}
	})
	tiny, _ := fabric.FromPreset("tiny")
	p := plan.New(tiny)
	if got := netip.AddrFrom16(p.Carrier(p.Path(1, plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}, 1)...)); got.String() != "fcbb:bb00:1400:1801:1401:1c01::" {
		t.Errorf("tiny carrier = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("a carrier of 7 uSIDs did not panic")
		}
	}()
	p.Carrier(1, 2, 3, 4, 5, 6, 7)
}

// TestHostName: the names are "nic-" and the index zero-padded to the
// widest index, for every host of tiny and small and those of mrc-131k at
// each number of digits.
func TestHostName(t *testing.T) {
	for _, name := range []string{"tiny", "small", "mrc-131k"} {
		f, err := fabric.FromPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		p := plan.New(f)
		width := len(fmt.Sprint(f.Hosts() - 1))
		for _, i := range []int{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 99999, 100000, f.Hosts() - 1} {
			if i >= f.Hosts() {
				continue
			}
			h := p.HostByIndex(i)
			if got, want := p.HostName(h), fmt.Sprintf("nic-%0*d", width, i); got != want {
				t.Errorf("%s: host %d is %q, want %q", name, i, got, want)
			}
		}
	}
}
