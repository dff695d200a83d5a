package sonic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/sonic"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

func exporter(t testing.TB, preset string, mutate func(*fabric.Description)) *sonic.Exporter {
	t.Helper()
	d, err := fabric.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(&d)
	}
	f, err := fabric.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	x, err := sonic.New(plan.New(f))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func sw(x *sonic.Exporter, name string) plan.Switch {
	s, ok := x.Plan.SwitchByName(name)
	if !ok {
		panic(name)
	}
	return s
}

// TestFragmentTiny pins what p0-t0-0 of tiny holds, table by table.
func TestFragmentTiny(t *testing.T) {
	x := exporter(t, "tiny", nil)
	fr := x.Switch(sw(x, "p0-t0-0"))
	type row = map[string]string
	check := func(table, key string, want row) {
		t.Helper()
		if got := fr[table][key]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s|%s = %v, want %v", table, key, got, want)
		}
	}
	check("SRV6_MY_LOCATORS", "mrc", row{"prefix": "fcbb:bb00:400::", "block_len": "32", "node_len": "16", "func_len": "0", "arg_len": "0"})
	check("SRV6_MY_SIDS", "mrc|fcbb:bb00:400::/48", row{"action": "uN"})
	// Links: p0 T0 0 - T1 s is link s (fd00:6d72:6c00::0/127, ::2/127), the
	// host links come after the 8 fabric links: p0 T0 0 port k is link 8+k.
	check("STATIC_ROUTE", "default|fcbb:bb00:800::/48", row{"nexthop": "fd00:6d72:6c00::1", "ifname": "Ethernet2"})
	check("STATIC_ROUTE", "default|fcbb:bb00:801::/48", row{"nexthop": "fd00:6d72:6c00::3", "ifname": "Ethernet3"})
	check("STATIC_ROUTE", "default|fcbb:bb00:c00::/48", row{"nexthop": "fd00:6d72:6c00::11", "ifname": "Ethernet0"})
	check("STATIC_ROUTE", "default|fcbb:bb00:c01::/48", row{"nexthop": "fd00:6d72:6c00::13", "ifname": "Ethernet1"})
	if n := len(fr["STATIC_ROUTE"]); n != 4 {
		t.Errorf("%d routes, want 2 T1s + 2 hosts", n)
	}
	check("INTERFACE", "Ethernet2|fd00:6d72:6c00::/127", row{})
	check("INTERFACE", "Ethernet0|fd00:6d72:6c00::10/127", row{})
	check("PORT", "Ethernet3", row{"alias": "etp1d", "lanes": "3", "speed": "100000", "mtu": "9100", "admin_status": "up", "index": "1", "description": "p0-t1-1 Ethernet0"})
	check("SWITCH_TRIMMING", "GLOBAL", row{"size": "134", "dscp_value": "from-tc", "tc_value": "7", "queue_index": "6"})
	check("DSCP_TO_TC_MAP", "MRC", row{"5": "0", "4": "1", "12": "5", "13": "4", "46": "6"})
	check("TC_TO_QUEUE_MAP", "MRC", row{"0": "0", "1": "1", "4": "6", "5": "6", "6": "6", "7": "6"})
	check("TC_TO_DSCP_MAP", "MRC_FABRIC", row{"0": "5", "1": "4", "4": "13", "5": "12", "6": "46", "7": "12"})
	check("TC_TO_DSCP_MAP", "MRC_HOST", row{"0": "5", "1": "4", "4": "13", "5": "12", "6": "46", "7": "13"})
	check("PORT_QOS_MAP", "Ethernet0", row{"dscp_to_tc_map": "MRC", "tc_to_queue_map": "MRC", "tc_to_dscp_map": "MRC_HOST"})
	check("PORT_QOS_MAP", "Ethernet2", row{"dscp_to_tc_map": "MRC", "tc_to_queue_map": "MRC", "tc_to_dscp_map": "MRC_FABRIC"})
	check("BUFFER_PROFILE", "mrc_trim_profile", row{"pool": "egress_lossy_pool", "size": "0", "static_th": fmt.Sprint(16 * (134 + 4096)), "packet_discard_action": "trim"})
	check("BUFFER_QUEUE", "Ethernet2|1", row{"profile": "mrc_trim_profile"})
	check("BUFFER_QUEUE", "Ethernet2|0", row{"profile": "mrc_drop_profile"})
	check("BUFFER_QUEUE", "Ethernet2|6", row{"profile": "mrc_high_profile"})
	check("QUEUE", "Ethernet2|6", row{"scheduler": "mrc_strict"})
	// A T1 has only fabric ports: no host map.
	t1 := x.Switch(sw(x, "p1-t1-1"))
	if _, ok := t1["TC_TO_DSCP_MAP"]["MRC_HOST"]; ok {
		t.Error("a T1 defines the host-facing TC_TO_DSCP_MAP")
	}
	if got := t1["STATIC_ROUTE"]["default|fcbb:bb00:1401::/48"]; got["ifname"] != "Ethernet1" {
		t.Errorf("p1-t1-1 route to p1-t0-1: %v", got)
	}
}

// TestPortMap: SONiC's first-lane names for the 64 x 800G switch broken out
// into 512 x 100G, left whole, and in 200G ports; Port inverts Name.
func TestPortMap(t *testing.T) {
	for _, tc := range []struct {
		m                  sonic.PortMap
		port               int
		name, lanes, alias string
	}{
		{sonic.PortMap{LanesPerPort: 1, Ports: 512}, 0, "Ethernet0", "0", "etp1a"},
		{sonic.PortMap{LanesPerPort: 1, Ports: 512}, 9, "Ethernet9", "9", "etp2b"},
		{sonic.PortMap{LanesPerPort: 1, Ports: 512}, 511, "Ethernet511", "511", "etp64h"},
		{sonic.PortMap{LanesPerPort: 8, Ports: 64}, 63, "Ethernet504", "504,505,506,507,508,509,510,511", "etp64"},
		{sonic.PortMap{LanesPerPort: 2, Ports: 256, FirstLane: 1}, 5, "Ethernet10", "11,12", "etp2b"},
	} {
		if got := tc.m.Name(tc.port); got != tc.name {
			t.Errorf("%+v: Name(%d) = %s, want %s", tc.m, tc.port, got, tc.name)
		}
		if got := tc.m.Lanes(tc.port); got != tc.lanes {
			t.Errorf("%+v: Lanes(%d) = %s, want %s", tc.m, tc.port, got, tc.lanes)
		}
		if got := tc.m.Alias(tc.port); got != tc.alias {
			t.Errorf("%+v: Alias(%d) = %s, want %s", tc.m, tc.port, got, tc.alias)
		}
		if got, ok := tc.m.Port(tc.name); !ok || got != tc.port {
			t.Errorf("%+v: Port(%s) = %d, %v", tc.m, tc.name, got, ok)
		}
	}
	m := sonic.PortMap{LanesPerPort: 2, Ports: 4}
	for _, name := range []string{"Ethernet1", "Ethernet8", "Ethernet02", "Ethernet", "eth0", "Ethernet-2"} {
		if p, ok := m.Port(name); ok {
			t.Errorf("Port(%q) = %d, want none", name, p)
		}
	}
	// small: 200G ports take 2 lanes by default.
	if x := exporter(t, "small", nil); x.Ports.LanesPerPort != 2 || x.Ports.Name(3) != "Ethernet6" {
		t.Errorf("small: %+v", x.Ports)
	}
}

// TestLinkAddresses: every link of small has its own /127, both ends agree
// on it and each holds one of its two addresses.
func TestLinkAddresses(t *testing.T) {
	x := exporter(t, "small", nil)
	p := x.Plan
	seen := map[netip.Prefix]string{}
	for _, s := range p.Switches() {
		for port := 0; port < p.Ports(s); port++ {
			l, ok := x.Links.Switch(s, port)
			if !ok {
				t.Fatalf("%s port %d: no link", p.Name(s), port)
			}
			if l.Prefix.Bits() != 127 || !l.Prefix.Contains(l.Local) || !l.Prefix.Contains(l.Peer) || l.Local == l.Peer {
				t.Fatalf("%s port %d: %+v", p.Name(s), port, l)
			}
			nb, _ := p.Neighbor(s, port)
			var back sonic.Link
			if nb.Role == plan.RoleNIC {
				back = x.Links.NIC(p.HostByIndex(nb.Index), nb.Plane)
			} else {
				back, _ = x.Links.Switch(nb.Switch(), nb.Port)
			}
			if back.Local != l.Peer || back.Peer != l.Local {
				t.Fatalf("%s port %d: %+v, the other end says %+v", p.Name(s), port, l, back)
			}
			if nb.Role != plan.RoleNIC && s.Role == plan.RoleT1 {
				continue // counted from the T0 side
			}
			if other, dup := seen[l.Prefix]; dup {
				t.Fatalf("%s port %d and %s share %s", p.Name(s), port, other, l.Prefix)
			}
			seen[l.Prefix] = fmt.Sprintf("%s port %d", p.Name(s), port)
		}
	}
	if len(seen) != p.F.LinkCount() {
		t.Errorf("%d distinct /127s, the fabric has %d links", len(seen), p.F.LinkCount())
	}
}

// TestTargets: the target list is fabric's, and the limits say what to do.
func TestTargets(t *testing.T) {
	var names []string
	for _, tg := range sonic.Targets() {
		names = append(names, tg.Name)
	}
	if !slices.Equal(names, fabric.SONiCTargets) {
		t.Errorf("targets %v, fabric.SONiCTargets %v", names, fabric.SONiCTargets)
	}
	f := func(target string, size int) *fabric.Fabric {
		d := fabric.Default()
		d.SONiC.Target, d.Trim.SizeBytes = target, size
		fab, err := fabric.Resolve(d)
		if err != nil {
			t.Fatal(err)
		}
		return fab
	}
	for _, tc := range []struct {
		target string
		size   int
		want   string // "" = fits
	}{
		{"generic", 134, ""},
		{"tomahawk-5", 134, ""},
		{"spectrum-4", 134, "trim.size_bytes: 134: spectrum-4 trims to 256-1024 bytes, not less (raise trim.size_bytes to 256: the payload kept beyond the 134 bytes of headers is harmless"},
		{"spectrum-5", 134, "raise trim.size_bytes to 256"},
		{"spectrum-4", 256, ""},
		{"spectrum-4", 1024, ""},
		{"spectrum-4", 258, "spectrum-4 trims to a multiple of 4 bytes (set trim.size_bytes to 260)"},
		{"spectrum-4", 1500, "not more (lower trim.size_bytes to 1024"},
	} {
		fs := sonic.Check(f(tc.target, tc.size))
		switch {
		case tc.want == "" && len(fs) > 0:
			t.Errorf("%s, %d bytes: %v, want it to fit", tc.target, tc.size, fs)
		case tc.want != "" && (len(fs) != 1 || !strings.Contains(fs[0].String(), tc.want)):
			t.Errorf("%s, %d bytes: %v, want one finding with %q", tc.target, tc.size, fs, tc.want)
		}
	}
	// New refuses what Check finds.
	if _, err := sonic.New(plan.New(f("spectrum-4", 134))); err == nil || !strings.Contains(err.Error(), "does not fit SONiC target spectrum-4") {
		t.Errorf("New on a 134-byte trim for spectrum-4: %v", err)
	}
	// A target without per-port trim DSCP cannot mark TRIMMED_LASTHOP; one
	// with 4 queues cannot hold the high queue 6; 100G lanes cannot carry
	// a 200G port on one lane.
	tg, _ := sonic.TargetByName("generic")
	tg.DSCPModes, tg.UnicastQueues = []string{sonic.ModeDSCPValue}, 4
	fs := tg.Check(f("generic", 134))
	if len(fs) != 2 || !strings.Contains(fs[0].Reason, "cannot mark TRIMMED_LASTHOP (13)") || !strings.Contains(fs[1].Reason, "4 unicast queues") {
		t.Errorf("restricted target: %v", fs)
	}
	d, _ := fabric.Preset("small")
	d.SONiC.LanesPerPort = 1
	small, _ := fabric.Resolve(d)
	if fs := sonic.Check(small); len(fs) != 1 || fs[0].Fix != "set sonic.lanes_per_port to 2" {
		t.Errorf("200G ports on one lane: %v", fs)
	}
}

// TestToYANGForm checks the conversion's shape without yanglint: module
// wrapping, list names, key leaves, inner map lists and number encoding.
func TestToYANGForm(t *testing.T) {
	x := exporter(t, "tiny", nil)
	data, err := sonic.ToYANG(x.Switch(sw(x, "p0-t0-0")))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	sids := doc["sonic-srv6:sonic-srv6"]["SRV6_MY_SIDS"]["SRV6_MY_SIDS_LIST"].([]any)
	if want := map[string]any{"locator": "mrc", "ip_prefix": "fcbb:bb00:400::/48", "action": "uN"}; !reflect.DeepEqual(sids[0], want) {
		t.Errorf("SRV6_MY_SIDS_LIST[0] = %v, want %v", sids[0], want)
	}
	trim := doc["sonic-trimming:sonic-trimming"]["SWITCH_TRIMMING"]["GLOBAL"]
	if want := map[string]any{"size": 134.0, "dscp_value": "from-tc", "tc_value": 7.0, "queue_index": 6.0}; !reflect.DeepEqual(trim, want) {
		t.Errorf("SWITCH_TRIMMING GLOBAL = %v, want %v", trim, want)
	}
	maps := doc["sonic-dscp-tc-map:sonic-dscp-tc-map"]["DSCP_TO_TC_MAP"]["DSCP_TO_TC_MAP_LIST"].([]any)
	inner := maps[0].(map[string]any)["DSCP_TO_TC_MAP"].([]any)
	if want := map[string]any{"dscp": "4", "tc": 1.0}; !reflect.DeepEqual(inner[0], want) {
		t.Errorf("DSCP_TO_TC_MAP first pair = %v, want %v (dscp a string, tc a number, by DSCP value)", inner[0], want)
	}
	routes := doc["sonic-static-route:sonic-static-route"]["STATIC_ROUTE"]["STATIC_ROUTE_LIST"].([]any)
	if r := routes[0].(map[string]any); r["vrf_name"] != "default" || r["prefix"] != "fcbb:bb00:800::/48" {
		t.Errorf("STATIC_ROUTE_LIST[0] = %v", r)
	}
	// An unknown table or field is refused, not guessed at.
	for _, fr := range []sonic.Fragment{
		{"ACL_RULE": {"x": {}}},
		{"PORT": {"Ethernet0": {"lanes": "0", "speeed": "100000"}}},
		{"STATIC_ROUTE": {"a|b|c": {}}},
	} {
		if _, err := sonic.ToYANG(fr); err == nil {
			t.Errorf("ToYANG(%v) accepted it", fr)
		}
	}
}

// yangModels returns the SONiC YANG models folder, or skips.
func yangModels(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MRCGEN_SONIC_YANG")
	if dir == "" {
		t.Skip("MRCGEN_SONIC_YANG is not set: set it to a folder of SONiC's YANG models (src/sonic-yang-models/yang-models) to check the fragments with yanglint")
	}
	if _, err := exec.LookPath("yanglint"); err != nil {
		t.Fatalf("MRCGEN_SONIC_YANG is set but yanglint is not on PATH (Debian/Ubuntu: apt-get install libyang2-tools)")
	}
	if _, err := os.Stat(filepath.Join(dir, "sonic-srv6.yang")); err != nil {
		t.Fatalf("MRCGEN_SONIC_YANG=%s: %v", dir, err)
	}
	return dir
}

// TestFragmentsPassYanglint checks every switch's fragment of tiny and small
// against SONiC's YANG models.
func TestFragmentsPassYanglint(t *testing.T) {
	dir := yangModels(t)
	n := 0
	for _, preset := range []string{"tiny", "small"} {
		x := exporter(t, preset, nil)
		for _, s := range x.Plan.Switches() {
			if err := sonic.Yanglint(context.Background(), dir, x.Switch(s)); err != nil {
				t.Errorf("%s %s: %v", preset, x.Plan.Name(s), err)
			}
			n++
		}
	}
	t.Logf("yanglint accepted %d fragments", n)
}

// TestYanglintRejectsDamage proves the check is live: each damaged fragment
// is refused, with libyang naming the damaged node.
func TestYanglintRejectsDamage(t *testing.T) {
	dir := yangModels(t)
	x := exporter(t, "tiny", nil)
	s := sw(x, "p0-t0-0")
	for _, tc := range []struct {
		name   string
		damage func(sonic.Fragment)
		want   string
	}{
		{"SID action", func(fr sonic.Fragment) { fr["SRV6_MY_SIDS"]["mrc|fcbb:bb00:400::/48"]["action"] = "uX" }, `Invalid enumeration value "uX"`},
		{"DSCP 99 in a DSCP_TO_TC_MAP", func(fr sonic.Fragment) { fr["DSCP_TO_TC_MAP"]["MRC"]["99"] = "1" }, "Invalid DSCP"},
		{"DSCP 99 in a TC_TO_DSCP_MAP", func(fr sonic.Fragment) { fr["TC_TO_DSCP_MAP"]["MRC_HOST"]["7"] = "99" }, "Invalid DSCP"},
		{"trimmed DSCP 99", func(fr sonic.Fragment) { fr["SWITCH_TRIMMING"]["GLOBAL"]["dscp_value"] = "99" }, "dscp_value"},
		{"queue of an unknown port", func(fr sonic.Fragment) {
			fr["BUFFER_QUEUE"]["Ethernet99|1"] = map[string]string{"profile": "mrc_trim_profile"}
		}, `Invalid leafref value "Ethernet99"`},
		{"unknown buffer profile", func(fr sonic.Fragment) { fr["BUFFER_QUEUE"]["Ethernet0|1"]["profile"] = "lossless" }, `Invalid leafref value "lossless"`},
		{"route prefix", func(fr sonic.Fragment) {
			fr["STATIC_ROUTE"]["default|fcbb:bb00:800::/129"] = map[string]string{"nexthop": "fd00::1", "ifname": "Ethernet2"}
		}, "fcbb:bb00:800::/129"},
		{"TC 16", func(fr sonic.Fragment) { fr["TC_TO_QUEUE_MAP"]["MRC"]["16"] = "1" }, "Invalid Traffic Class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := x.Switch(s)
			tc.damage(fr)
			err := sonic.Yanglint(context.Background(), dir, fr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("yanglint on a damaged fragment: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestReadBackEquivalent reads every switch's fragment back and checks its
// entries equal the generator's P4 entries of the same switch (routes and
// own SID; the P4-only queue thresholds aside), for tiny and small.
func TestReadBackEquivalent(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		x := exporter(t, preset, nil)
		g := tables.NewGenerator(x.Plan)
		for _, s := range x.Plan.Switches() {
			name := x.Plan.Name(s)
			data, err := sonic.Marshal(x.Switch(s))
			if err != nil {
				t.Fatal(err)
			}
			fr, err := sonic.ParseFragment(data)
			if err != nil {
				t.Fatal(err)
			}
			st, err := x.Read(s, fr)
			if err != nil {
				t.Fatalf("%s %s: %v", preset, name, err)
			}
			got, err := verify.DecodeSwitch(x.Entries(st))
			if err != nil {
				t.Fatal(err)
			}
			want, err := verify.DecodeSwitch(g.SwitchEntries(s, nil))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: from SONiC %+v\nfrom the generator %+v", preset, name, got, want)
			}
			if b := x.Blame(s, st); len(b) > 0 {
				t.Errorf("%s %s: blamed %v", preset, name, b)
			}
		}
	}
}

// TestReadRejects names the switch, table and key of a fragment the switch
// model cannot be read from.
func TestReadRejects(t *testing.T) {
	x := exporter(t, "tiny", nil)
	s := sw(x, "p0-t0-0")
	for _, tc := range []struct {
		name   string
		damage func(sonic.Fragment)
		want   string
	}{
		{"not a /48", func(fr sonic.Fragment) {
			fr["STATIC_ROUTE"]["default|fcbb:bb00:800::/64"] = fr["STATIC_ROUTE"]["default|fcbb:bb00:800::/48"]
		}, "p0-t0-0: STATIC_ROUTE default|fcbb:bb00:800::/64: fcbb:bb00:800::/64 is not an IPv6 /48"},
		{"unknown interface", func(fr sonic.Fragment) {
			fr["STATIC_ROUTE"]["default|fcbb:bb00:800::/48"]["ifname"] = "Ethernet9"
		}, `p0-t0-0: STATIC_ROUTE default|fcbb:bb00:800::/48: ifname "Ethernet9" is no port`},
		{"next hop off the link", func(fr sonic.Fragment) {
			fr["STATIC_ROUTE"]["default|fcbb:bb00:800::/48"]["nexthop"] = "fd00:6d72:6c00::3"
		}, "nexthop fd00:6d72:6c00::3 is not the other end of Ethernet2's fd00:6d72:6c00::/127"},
		{"SID outside the block", func(fr sonic.Fragment) {
			fr["SRV6_MY_SIDS"]["mrc|fcbb:bb01:400::/48"] = map[string]string{"action": "uN"}
		}, "SRV6_MY_SIDS mrc|fcbb:bb01:400::/48: fcbb:bb01:400::/48 is outside the uSID block"},
		{"unknown locator", func(fr sonic.Fragment) {
			fr["SRV6_MY_SIDS"]["main|fcbb:bb00:400::/48"] = map[string]string{"action": "uN"}
		}, `locator "main" is not in SRV6_MY_LOCATORS`},
	} {
		fr := x.Switch(s)
		tc.damage(fr)
		if _, err := x.Read(s, fr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
