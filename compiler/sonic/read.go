package sonic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// ParseFragment reads a config_db.json fragment: an object of tables, each
// an object of keys, each an object of string fields.
func ParseFragment(data []byte) (Fragment, error) {
	var fr Fragment
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&fr); err != nil {
		return nil, fmt.Errorf("not a config_db.json fragment ({\"TABLE\": {\"key\": {\"field\": \"value\"}}}): %w", err)
	}
	return fr, nil
}

// Route is one static route of a switch as its fragment gives it, with the
// port the interface name stands for.
type Route struct {
	// Key is the STATIC_ROUTE key ("default|fcbb:bb00:801::/48").
	Key     string
	Prefix  netip.Prefix
	IfName  string
	NextHop netip.Addr
	Port    int
	// ToHost is set when the port's PORT_QOS_MAP marks trimmed packets
	// TRIMMED_LASTHOP (the host-facing TC_TO_DSCP_MAP).
	ToHost bool
}

// SwitchTables is what a switch forwards by, read from its fragment: its
// uN SIDs and its /48 routes, both by 48-bit key (block | uSID).
type SwitchTables struct {
	Name string
	// Own maps the key of every uN SID to its SRV6_MY_SIDS key.
	Own    map[uint64]string
	Routes map[uint64]Route
}

// key48 is the 48-bit key of a /48 inside the block, or an error naming why
// the switch model cannot match on it.
func (x *Exporter) key48(p netip.Prefix) (uint64, error) {
	if !p.Addr().Is6() || p.Bits() != 48 {
		return 0, fmt.Errorf("%s is not an IPv6 /48: the switches match block | uSID, exactly 48 bits", p)
	}
	if p.Masked() != p {
		return 0, fmt.Errorf("%s has bits set beyond /48", p)
	}
	a := p.Addr().As16()
	if b := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]); b != x.Plan.F.Block {
		return 0, fmt.Errorf("%s is outside the uSID block", p)
	}
	return uint64(a[0])<<40 | uint64(a[1])<<32 | uint64(a[2])<<24 | uint64(a[3])<<16 | uint64(a[4])<<8 | uint64(a[5]), nil
}

// Read reads switch s's fragment into the tables it forwards by. It checks
// what the forwarding depends on and names the table and key of every
// problem: a SID or route that is not a /48 of the block, a route whose
// interface is no port of the switch or has no address, a next hop that is
// not the other end of that interface's /127, a key given twice.
func (x *Exporter) Read(s plan.Switch, fr Fragment) (*SwitchTables, error) {
	name := x.Plan.Name(s)
	st := &SwitchTables{Name: name, Own: map[uint64]string{}, Routes: map[uint64]Route{}}
	bad := func(table, key, format string, args ...any) error {
		return fmt.Errorf("%s: %s %s: %s", name, table, key, fmt.Sprintf(format, args...))
	}
	locators := fr["SRV6_MY_LOCATORS"]
	for _, key := range sortedKeys(fr["SRV6_MY_SIDS"]) {
		fields := fr["SRV6_MY_SIDS"][key]
		loc, pfx, ok := strings.Cut(key, "|")
		if !ok {
			return nil, bad("SRV6_MY_SIDS", key, "want LOCATOR|PREFIX")
		}
		if _, ok := locators[loc]; !ok {
			return nil, bad("SRV6_MY_SIDS", key, "locator %q is not in SRV6_MY_LOCATORS", loc)
		}
		if fields["action"] != "uN" {
			continue // not a uN: the switch does not shift on it
		}
		p, err := netip.ParsePrefix(pfx)
		if err != nil {
			return nil, bad("SRV6_MY_SIDS", key, "%v", err)
		}
		k, err := x.key48(p)
		if err != nil {
			return nil, bad("SRV6_MY_SIDS", key, "%v", err)
		}
		st.Own[k] = key
	}
	// Interface addresses, by interface.
	addrs := map[string]netip.Prefix{}
	for _, key := range sortedKeys(fr["INTERFACE"]) {
		ifname, pfx, ok := strings.Cut(key, "|")
		if !ok {
			continue
		}
		p, err := netip.ParsePrefix(pfx)
		if err != nil {
			return nil, bad("INTERFACE", key, "%v", err)
		}
		if _, dup := addrs[ifname]; dup {
			return nil, bad("INTERFACE", key, "%s has two addresses: which /127 a next hop is on would be ambiguous", ifname)
		}
		addrs[ifname] = p
	}
	hostMap := map[string]bool{}
	for _, ifname := range sortedKeys(fr["PORT_QOS_MAP"]) {
		hostMap[ifname] = fr["PORT_QOS_MAP"][ifname]["tc_to_dscp_map"] == MapHost
	}
	for _, key := range sortedKeys(fr["STATIC_ROUTE"]) {
		fields := fr["STATIC_ROUTE"][key]
		pfx := key
		if vrf, rest, ok := strings.Cut(key, "|"); ok {
			if vrf != VRF {
				continue // another VRF: not the fabric's forwarding
			}
			pfx = rest
		}
		p, err := netip.ParsePrefix(pfx)
		if err != nil {
			return nil, bad("STATIC_ROUTE", key, "%v", err)
		}
		k, err := x.key48(p)
		if err != nil {
			return nil, bad("STATIC_ROUTE", key, "%v", err)
		}
		if _, dup := st.Routes[k]; dup {
			return nil, bad("STATIC_ROUTE", key, "a second route for %s", p)
		}
		r := Route{Key: key, Prefix: p, IfName: fields["ifname"]}
		if strings.Contains(r.IfName, ",") || strings.Contains(fields["nexthop"], ",") {
			return nil, bad("STATIC_ROUTE", key, "several next hops: the fabric's routes have one")
		}
		port, ok := x.Ports.Port(r.IfName)
		if !ok {
			return nil, bad("STATIC_ROUTE", key, "ifname %q is no port of a %d-port switch with %d lanes per port", r.IfName, x.Ports.Ports, x.Ports.LanesPerPort)
		}
		if _, ok := fr["PORT"][r.IfName]; !ok {
			return nil, bad("STATIC_ROUTE", key, "ifname %s has no PORT entry", r.IfName)
		}
		r.Port = port
		if r.NextHop, err = netip.ParseAddr(fields["nexthop"]); err != nil {
			return nil, bad("STATIC_ROUTE", key, "nexthop: %v", err)
		}
		ifp, ok := addrs[r.IfName]
		switch {
		case !ok:
			return nil, bad("STATIC_ROUTE", key, "ifname %s has no INTERFACE address", r.IfName)
		case !ifp.Masked().Contains(r.NextHop) || ifp.Addr() == r.NextHop:
			return nil, bad("STATIC_ROUTE", key, "nexthop %s is not the other end of %s's %s", r.NextHop, r.IfName, ifp)
		}
		r.ToHost = hostMap[r.IfName]
		st.Routes[k] = r
	}
	return st, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return sortedKeysInto(make([]string, 0, len(m)), m)
}

// Entries turns switch tables into the P4 entries of the switch program that
// hold the same forwarding (my_usid shift per uN SID, usid_route forward or
// forward_to_host per route), so that `verify` proves a SONiC export with
// the very walk it proves P4Runtime entries with.
func (x *Exporter) Entries(st *SwitchTables) []entry.Entry {
	prog := schema.Switch(x.Plan.F)
	my, route := prog.Table(schema.SwitchMyUSID), prog.Table(schema.SwitchRoute)
	action := func(t *schema.Table, name string) *schema.Action {
		for _, r := range t.Actions {
			if r.Action.Name == name {
				return r.Action
			}
		}
		panic("sonic: switch program has no action " + name)
	}
	shift, forward, toHost := action(my, "usid_shift"), action(route, "forward"), action(route, "forward_to_host")
	out := make([]entry.Entry, 0, len(st.Own)+len(st.Routes))
	for _, k := range sortedU64(st.Own) {
		out = append(out, entry.Entry{Table: my, Action: shift, Match: []entry.Match{{Value: k}}})
	}
	for _, k := range sortedU64(st.Routes) {
		r := st.Routes[k]
		a := forward
		if r.ToHost {
			a = toHost
		}
		out = append(out, entry.Entry{Table: route, Action: a, Match: []entry.Match{{Value: k}}, Params: []uint64{uint64(r.Port)}})
	}
	return out
}

func sortedU64[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Blame compares switch tables with what the plan means them to hold and
// names, in SONiC's terms, every difference: a missing or extra uN SID, a
// route missing, extra, or leaving by another interface than the one that
// leads to the owner of its uSID. `verify --sonic` shows it when the proof
// fails, so that an operator sees which CONFIG_DB key to fix.
func (x *Exporter) Blame(s plan.Switch, st *SwitchTables) []string {
	p := x.Plan
	var out []string
	ownKey := p.Key48(p.SwitchUSID(s))
	if _, ok := st.Own[ownKey]; !ok {
		out = append(out, fmt.Sprintf("%s: SRV6_MY_SIDS has no uN for its own SID %s", st.Name, x.SID(s)))
	}
	for _, k := range sortedU64(st.Own) {
		if k != ownKey {
			out = append(out, fmt.Sprintf("%s: SRV6_MY_SIDS %s is a uN for another switch's SID", st.Name, st.Own[k]))
		}
	}
	want := map[uint64]int{}
	for port := 0; port < p.Ports(s); port++ {
		if usid, _, ok := x.neighbourUSID(s, port); ok {
			want[p.Key48(usid)] = port
		}
	}
	for _, k := range sortedU64(want) {
		port := want[k]
		nb, _ := p.Neighbor(s, port)
		r, ok := st.Routes[k]
		pfx := x.sid(uint16(k))
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: STATIC_ROUTE has no route for %s (%s, by %s)", st.Name, pfx, x.owner(nb), x.Ports.Name(port)))
		case r.Port != port:
			got := "an unwired port"
			if onb, ok := p.Neighbor(s, r.Port); ok {
				got = x.owner(onb)
			}
			out = append(out, fmt.Sprintf("%s: STATIC_ROUTE %s leaves by %s (to %s), but %s is %s's, by %s", st.Name, r.Key, r.IfName, got, pfx, x.owner(nb), x.Ports.Name(port)))
		case r.ToHost != (nb.Role == plan.RoleNIC):
			out = append(out, fmt.Sprintf("%s: PORT_QOS_MAP %s: tc_to_dscp_map does not match what the port faces (%s)", st.Name, r.IfName, x.owner(nb)))
		}
	}
	for _, k := range sortedU64(st.Routes) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: STATIC_ROUTE %s routes a uSID no neighbour owns", st.Name, st.Routes[k].Key))
		}
	}
	return out
}

func (x *Exporter) owner(nb plan.Endpoint) string {
	if nb.Role == plan.RoleNIC {
		return x.Plan.HostName(x.Plan.HostByIndex(nb.Index))
	}
	return x.Plan.Name(nb.Switch())
}
