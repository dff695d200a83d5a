package fabric_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// fieldErrors collects every *FieldError in an error tree, in order.
func fieldErrors(err error) []*fabric.FieldError { return fabric.Problems(err) }

// problem is one expected FieldError: its field, its value as printed, and
// a piece of its reason.
type problem struct {
	field, value, reason string
}

func (p problem) String() string { return fmt.Sprintf("%s: %s: ...%s...", p.field, p.value, p.reason) }

func TestResolveRejects(t *testing.T) {
	tests := []struct {
		name   string
		base   string // preset; default tiny
		mutate func(d *fabric.Description)
		want   []problem
	}{
		{"more T0s than T1 down ports", "", func(d *fabric.Description) { d.T0.Count = 9 },
			[]problem{{"t0.count", "9", "more T0s than T1 down ports: a T1 has one down port to each T0 and has 8 ports (switch.ports)"}}},
		{"nic speed does not split into planes", "", func(d *fabric.Description) { d.NIC.SpeedGbps = 201 },
			[]problem{{"nic.speed_gbps", "201", "does not split evenly into 2 plane ports"}}},
		{"nic plane port speed is not the switch port speed", "", func(d *fabric.Description) { d.NIC.SpeedGbps = 400 },
			[]problem{{"nic.speed_gbps", "400", "gives 200G per port, but switch ports are 100G"}}},
		{"t1.count differs from t0.up_ports", "", func(d *fabric.Description) { d.T1.Count = 3 },
			[]problem{{"t1.count", "3", "t1.count must equal t0.up_ports (2)"}}},
		{"t0 ports exceed the switch", "", func(d *fabric.Description) { d.T0.DownPorts = 7 },
			[]problem{{"t0.down_ports", "7", "down 7 + up 2 = 9 ports, more than a switch has (switch.ports = 8)"}}},
		{"switch wider than v1model", "", func(d *fabric.Description) { d.Switch.Ports = 513 },
			[]problem{{"switch.ports", "513", "at most 512 ports"}}},
		{"zero planes", "", func(d *fabric.Description) { d.Planes = 0 },
			[]problem{{"planes", "0", "must be at least 1"}}},
		{"negative t0 count", "", func(d *fabric.Description) { d.T0.Count = -1 },
			[]problem{{"t0.count", "-1", "must be at least 1"}}},
		{"uSID layout is not 16 bits", "", func(d *fabric.Description) { d.USID.IndexBits = 9 },
			[]problem{{"usid", "plane_bits 4 + kind_bits 2 + index_bits 9", "must add up to 16"}}},
		{"uSID layout with a negative width", "", func(d *fabric.Description) { d.USID.PlaneBits, d.USID.IndexBits = -1, 15 },
			[]problem{{"usid", "plane_bits -1 + kind_bits 2 + index_bits 15", "must add up to 16"}}},
		{"index_bits too narrow", "small", func(d *fabric.Description) { d.USID.KindBits, d.USID.IndexBits = 10, 2 },
			[]problem{
				{"usid.index_bits", "2", "2 bits number 4 T0 switches, the fabric has 8 (t0.count)"},
			}},
		{"index_bits zero", "", func(d *fabric.Description) { d.USID.KindBits, d.USID.IndexBits = 12, 0 },
			[]problem{
				{"usid.index_bits", "0", "0 bits number 1 T0 switches, the fabric has 2 (t0.count)"},
				{"usid.index_bits", "0", "0 bits number 1 T1 switches, the fabric has 2 (t1.count)"},
				{"usid.index_bits", "0", "0 bits number 1 T0 down ports, the fabric has 2 (t0.down_ports)"},
			}},
		{"kind_bits below 2", "", func(d *fabric.Description) { d.USID.KindBits, d.USID.IndexBits = 1, 11 },
			[]problem{{"usid.kind_bits", "1", "needs at least 2 bits for the kinds"}}},
		{"plane_bits too narrow", "small", func(d *fabric.Description) { d.USID.PlaneBits, d.USID.IndexBits = 1, 13 },
			[]problem{{"usid.plane_bits", "1", "1 bits hold 2 planes, the fabric has 4"}}},
		{"block not a prefix", "", func(d *fabric.Description) { d.USID.Block = "fcbb:bb00::" },
			[]problem{{"usid.block", `"fcbb:bb00::"`, "not an IPv6 prefix"}}},
		{"block garbage", "", func(d *fabric.Description) { d.USID.Block = "nonsense" },
			[]problem{{"usid.block", `"nonsense"`, "not an IPv6 prefix"}}},
		{"block IPv4", "", func(d *fabric.Description) { d.USID.Block = "10.1.0.0/16" },
			[]problem{{"usid.block", "10.1.0.0/16", "must be an IPv6 prefix"}}},
		{"block IPv4-mapped", "", func(d *fabric.Description) { d.USID.Block = "::ffff:10.0.0.0/32" },
			[]problem{{"usid.block", "::ffff:10.0.0.0/32", "must be an IPv6 prefix"}}},
		{"block not /32", "", func(d *fabric.Description) { d.USID.Block = "fcbb:bb00::/48" },
			[]problem{{"usid.block", "fcbb:bb00::/48", "F3216 needs a /32 block, not /48"}}},
		{"block not masked", "", func(d *fabric.Description) { d.USID.Block = "fcbb:bb00:1::/32" },
			[]problem{{"usid.block", "fcbb:bb00:1::/32", "has bits set beyond /32 (did you mean fcbb:bb00::/32?)"}}},
		{"block all zero", "", func(d *fabric.Description) { d.USID.Block = "::/32" },
			[]problem{{"usid.block", "::/32", "all-zero block"}}},
		{"duplicate DSCP", "", func(d *fabric.Description) { d.DSCP.Trimmed = d.DSCP.Trimmable },
			[]problem{{"dscp.trimmed", "4", "same code point as dscp.trimmable"}}},
		{"DSCP out of range", "", func(d *fabric.Description) { d.DSCP.NoTrim = 64 },
			[]problem{{"dscp.no_trim", "64", "a DSCP is 6 bits (0-63)"}}},
		{"trim size below the headers", "", func(d *fabric.Description) { d.Trim.SizeBytes = 128 },
			[]problem{{"trim.size_bytes", "128", "must keep the 134 bytes of headers"}}},
		{"trim size above a jumbo frame", "", func(d *fabric.Description) { d.Trim.SizeBytes = 9217 },
			[]problem{{"trim.size_bytes", "9217", "larger than a jumbo frame"}}},
		{"trim threshold zero", "", func(d *fabric.Description) { d.Trim.ThresholdPackets = 0 },
			[]problem{{"trim.threshold_packets", "0", "must be between 1 and 524287"}}},
		{"ecn threshold too deep", "", func(d *fabric.Description) { d.Trim.ECNPackets = 1 << 19 },
			[]problem{{"trim.ecn_packets", "524288", "must be between 1 and 524287"}}},
		{"trim threshold at the queue capacity", "", func(d *fabric.Description) { d.Trim.ThresholdPackets = 64 },
			[]problem{{"trim.threshold_packets", "64", "must be below the queue capacity (trim.queue_packets = 64)"}}},
		{"trim and ECN thresholds of issue 10", "", func(d *fabric.Description) { d.Trim.ThresholdPackets, d.Trim.ECNPackets = 200, 300 },
			[]problem{
				{"trim.threshold_packets", "200", "must be below the queue capacity (trim.queue_packets = 64): a full queue drops packets instead of trimming them"},
				{"trim.ecn_packets", "300", "must be below the trim threshold (trim.threshold_packets = 200)"},
			}},
		{"ECN threshold equal to the trim threshold", "", func(d *fabric.Description) { d.Trim.ECNPackets = d.Trim.ThresholdPackets },
			[]problem{{"trim.ecn_packets", "16", "must be below the trim threshold (trim.threshold_packets = 16): a queue that deep already trims"}}},
		{"queue smaller than the trim threshold", "", func(d *fabric.Description) { d.Trim.QueuePackets = 10 },
			[]problem{{"trim.threshold_packets", "16", "must be below the queue capacity (trim.queue_packets = 10)"}}},
		{"queue capacity zero", "", func(d *fabric.Description) { d.Trim.QueuePackets = 0 },
			[]problem{{"trim.queue_packets", "0", "must be between 1 and 524287"}}},
		{"hosts prefix is the block", "", func(d *fabric.Description) { d.Hosts.Prefix = "fcbb:bb00::/64" },
			[]problem{{"hosts.prefix", "fcbb:bb00::/64", "overlaps the uSID block fcbb:bb00::/32"}}},
		{"hosts prefix contains the block", "", func(d *fabric.Description) { d.Hosts.Prefix = "fcbb::/16" },
			[]problem{{"hosts.prefix", "fcbb::/16", "overlaps the uSID block"}}},
		{"hosts prefix longer than /96", "", func(d *fabric.Description) { d.Hosts.Prefix = "fd00::/112" },
			[]problem{{"hosts.prefix", "fd00::/112", "must be /96 or shorter"}}},
		{"hosts prefix not masked", "", func(d *fabric.Description) { d.Hosts.Prefix = "fd00::1/64" },
			[]problem{{"hosts.prefix", "fd00::1/64", "has bits set beyond /64 (did you mean fd00::/64?)"}}},
		{"hosts prefix IPv4", "", func(d *fabric.Description) { d.Hosts.Prefix = "10.0.0.0/8" },
			[]problem{{"hosts.prefix", "10.0.0.0/8", "must be an IPv6 prefix"}}},
		{"hosts prefix garbage", "", func(d *fabric.Description) { d.Hosts.Prefix = "" },
			[]problem{{"hosts.prefix", `""`, "not an IPv6 prefix"}}},
		{"EV layout is not 32 bits", "", func(d *fabric.Description) { d.EV.SaltBits = 17 },
			[]problem{{"ev", "plane_bits 4 + t1_bits 10 + salt_bits 17", "must add up to 32"}}},
		{"EV plane_bits too narrow", "small", func(d *fabric.Description) { d.EV.PlaneBits, d.EV.SaltBits = 1, 21 },
			[]problem{{"ev.plane_bits", "1", "1 bits hold 2 planes, the fabric has 4"}}},
		{"EV t1_bits too narrow", "small", func(d *fabric.Description) { d.EV.T1Bits, d.EV.SaltBits = 1, 27 },
			[]problem{{"ev.t1_bits", "1", "1 bits hold 2 T1s, the fabric has 4"}}},
		{"set_size not a multiple of planes", "", func(d *fabric.Description) { d.EV.SetSize = 15 },
			[]problem{{"ev.set_size", "15", "must be a multiple of planes (2)"}}},
		{"set_size zero", "", func(d *fabric.Description) { d.EV.SetSize = 0 },
			[]problem{{"ev.set_size", "0", "must be between 1 and 4096"}}},
		{"set_size too large", "", func(d *fabric.Description) { d.EV.SetSize = 4098 },
			[]problem{{"ev.set_size", "4098", "must be between 1 and 4096"}}},
		{"salt_bits too narrow", "", func(d *fabric.Description) { d.EV.T1Bits, d.EV.SaltBits = 24, 4; d.EV.SetSize = 32 },
			[]problem{{"ev.salt_bits", "4", "4 bits number 16 salts, the base and backup sets need 64 (2 x ev.set_size)"}}},
		{"salt_bits hold the base set but not the backup", "", func(d *fabric.Description) { d.EV.T1Bits, d.EV.SaltBits = 24, 4; d.EV.SetSize = 16 },
			[]problem{{"ev.salt_bits", "4", "4 bits number 16 salts, the base and backup sets need 32 (2 x ev.set_size)"}}},
		{"unanswered_sends of one", "", func(d *fabric.Description) { d.Failover.UnansweredSends = 1 },
			[]problem{{"failover.unanswered_sends", "1", "must be between 2 and 255"}}},
		{"unanswered_sends beyond the counter", "", func(d *fabric.Description) { d.Failover.UnansweredSends = 256 },
			[]problem{{"failover.unanswered_sends", "256", "must be between 2 and 255"}}},
		{"ack_every zero", "", func(d *fabric.Description) { d.NIC.AckEvery = 0 },
			[]problem{{"nic.ack_every", "0", "must be between 1 and 255"}}},
		{"ack_every sharing a factor with the set", "", func(d *fabric.Description) { d.NIC.AckEvery = 4 },
			[]problem{{"nic.ack_every", "4", "must have no factor in common with ev.set_size (16)"}}},
		{"K too small for ack_every and the window", "", func(d *fabric.Description) {
			d.NIC.AckEvery, d.NIC.WindowPackets, d.Failover.UnansweredSends = 5, 64, 8
		},
			[]problem{{"failover.unanswered_sends", "8", "must be at least nic.ack_every (5) + the sends a full window keeps in flight on each of 16 slots (4: 63 PSNs before the one sent, nic.window_packets 64) + 1 = 10"}}},
		{"K too small on a small set, every packet answered", "", func(d *fabric.Description) {
			d.NIC.AckEvery, d.EV.SetSize, d.NIC.WindowPackets, d.Failover.UnansweredSends = 1, 8, 64, 8
		},
			[]problem{{"failover.unanswered_sends", "8", "(8: 63 PSNs before the one sent, nic.window_packets 64) + 1 = 10"}}},
		{"unanswered_sends at a window's sends per slot", "", func(d *fabric.Description) { d.Failover.UnansweredSends, d.NIC.WindowPackets = 4, 64 },
			[]problem{{"failover.unanswered_sends", "4", "must be at least nic.ack_every (3) + the sends a full window keeps in flight on each of 16 slots (4"}}},
		{"unanswered_sends of two with 32 slots, every packet answered", "", func(d *fabric.Description) {
			d.Failover.UnansweredSends, d.EV.SetSize, d.NIC.AckEvery, d.NIC.WindowPackets = 2, 32, 1, 64
		},
			[]problem{{"failover.unanswered_sends", "2", "(2: 63 PSNs before the one sent, nic.window_packets 64) + 1 = 4"}}},
		{"probe_passes zero", "", func(d *fabric.Description) { d.Failover.ProbePasses = 0 },
			[]problem{{"failover.probe_passes", "0", "must be between 1 and 255"}}},
		{"negative NIC link delay", "", func(d *fabric.Description) { d.Links.NICT0Ns = -1 },
			[]problem{{"links.nic_t0_ns", "-1", "a one-way propagation delay must be between 0 and 1000000 ns (1 ms)"}}},
		{"T0-T1 link delay beyond 1 ms", "", func(d *fabric.Description) { d.Links.T0T1Ns = 1_000_001 },
			[]problem{{"links.t0_t1_ns", "1000001", "a one-way propagation delay must be between 0 and 1000000 ns (1 ms)"}}},
		{"both link delays out of range", "mrc-131k", func(d *fabric.Description) { d.Links.NICT0Ns, d.Links.T0T1Ns = 2_000_000, -150 },
			[]problem{
				{"links.nic_t0_ns", "2000000", "between 0 and 1000000 ns"},
				{"links.t0_t1_ns", "-150", "between 0 and 1000000 ns"},
			}},
		{"name with capitals", "", func(d *fabric.Description) { d.Name = "Tiny" },
			[]problem{{"name", `"Tiny"`, "must be 1-63 characters"}}},
		{"name empty", "", func(d *fabric.Description) { d.Name = "" },
			[]problem{{"name", `""`, "must be 1-63 characters"}}},
		{"name with a slash", "", func(d *fabric.Description) { d.Name = "../x" },
			[]problem{{"name", `"../x"`, "it names files"}}},
		{"name too long", "", func(d *fabric.Description) { d.Name = strings.Repeat("a", 64) },
			[]problem{{"name", `"` + strings.Repeat("a", 64) + `"`, "must be 1-63 characters"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = "tiny"
			}
			d, err := fabric.Preset(base)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(&d)
			f, err := fabric.Resolve(d)
			if err == nil {
				t.Fatalf("Resolve accepted it: %+v", f)
			}
			if f != nil {
				t.Errorf("Resolve returned a fabric with its error")
			}
			if !errors.Is(err, fabric.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			got := fieldErrors(err)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(got), len(tc.want), err)
			}
			msg := err.Error()
			for i, w := range tc.want {
				g := got[i]
				if g.Field != w.field || fmt.Sprint(g.Value) != w.value || !strings.Contains(g.Reason, w.reason) {
					t.Errorf("problem %d = %s: %v: %s\nwant %s", i, g.Field, g.Value, g.Reason, w)
				}
				// The message the user reads names field, value and reason.
				if line := w.field + ": " + w.value + ": "; !strings.Contains(msg, line) || !strings.Contains(msg, w.reason) {
					t.Errorf("message does not name %q and %q:\n%s", line, w.reason, msg)
				}
			}
		})
	}
}

// TestThresholdsBelowADeeperQueue: a deeper queue makes room for deeper
// thresholds (the thresholds are checked against trim.queue_packets, not
// against BMv2's 64).
func TestThresholdsBelowADeeperQueue(t *testing.T) {
	d := fabric.Default()
	d.Trim.QueuePackets, d.Trim.ThresholdPackets, d.Trim.ECNPackets = 256, 200, 100
	f, err := fabric.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	if f.Trim != d.Trim {
		t.Errorf("Trim = %+v, want %+v", f.Trim, d.Trim)
	}
	// The smallest legal ordering: ECN 1 < trim 2 < queue 3.
	d.Trim.QueuePackets, d.Trim.ThresholdPackets, d.Trim.ECNPackets = 3, 2, 1
	if _, err := fabric.Resolve(d); err != nil {
		t.Errorf("ECN 1 < trim 2 < queue 3: %v", err)
	}
}

// TestLinkDelays: the links section takes 0 to 1 ms, keeps the default of
// a delay the file leaves out, and reaches the Fabric as written.
func TestLinkDelays(t *testing.T) {
	for _, name := range fabric.PresetNames() {
		f, err := fabric.FromPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := (fabric.LinkSpec{NICT0Ns: 10, T0T1Ns: 150}); f.Links != want {
			t.Errorf("%s: Links = %+v, want %+v", name, f.Links, want)
		}
	}
	for _, tc := range []struct {
		yaml string
		want fabric.LinkSpec
	}{
		{"links: {nic_t0_ns: 25}\n", fabric.LinkSpec{NICT0Ns: 25, T0T1Ns: 150}},
		{"links:\n  t0_t1_ns: 500\n", fabric.LinkSpec{NICT0Ns: 10, T0T1Ns: 500}},
		{"links: {nic_t0_ns: 0, t0_t1_ns: 0}\n", fabric.LinkSpec{}},
		{"links: {nic_t0_ns: 1000000, t0_t1_ns: 1_000_000}\n", fabric.LinkSpec{NICT0Ns: 1_000_000, T0T1Ns: 1_000_000}},
		{"base: mrc-131k\nlinks: {t0_t1_ns: 0x10}\n", fabric.LinkSpec{NICT0Ns: 10, T0T1Ns: 16}},
	} {
		f, err := fabric.Parse("lab.yaml", strings.NewReader(tc.yaml))
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if f.Links != tc.want {
			t.Errorf("%q: Links = %+v, want %+v", tc.yaml, f.Links, tc.want)
		}
	}
	// Out of range: the message names the field, the value and its line.
	_, err := fabric.Parse("lab.yaml", strings.NewReader("name: lab\nlinks:\n  nic_t0_ns: -5\n  t0_t1_ns: 1000001\n"))
	var got []string
	for _, fe := range fieldErrors(err) {
		got = append(got, fe.Error())
	}
	want := []string{
		"links.nic_t0_ns: -5: line 3: a one-way propagation delay must be between 0 and 1000000 ns (1 ms)",
		"links.t0_t1_ns: 1000001: line 4: a one-way propagation delay must be between 0 and 1000000 ns (1 ms)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestResolveReportsEveryProblem(t *testing.T) {
	d := fabric.Default()
	d.Name = "Bad Name"
	d.T1.Count = 3
	d.USID.Block = "fcbb:bb00::/48"
	d.EV.SetSize = 15
	d.DSCP.Control = d.DSCP.NoTrim
	d.Trim.SizeBytes = 128
	d.Hosts.Prefix = "fd00::/120"
	_, err := fabric.Resolve(d)
	if !errors.Is(err, fabric.ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	var got []string
	for _, fe := range fieldErrors(err) {
		got = append(got, fe.Field)
	}
	want := []string{"name", "t1.count", "usid.block", "ev.set_size", "dscp.no_trim", "trim.size_bytes", "hosts.prefix"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("fields reported: %v\nwant %v\n%v", got, want, err)
	}
	// One problem per line, so that each can be read on its own.
	if n := strings.Count(err.Error(), "\n") + 1; n != len(want) {
		t.Errorf("message has %d lines, want %d:\n%v", n, len(want), err)
	}
}

func TestPresetsResolve(t *testing.T) {
	names := fabric.PresetNames()
	if strings.Join(names, ",") != "mrc-131k,mrc-1k,small,tiny" {
		t.Errorf("PresetNames() = %v", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			f, err := fabric.FromPreset(name)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != name {
				t.Errorf("Name = %q", f.Name)
			}
			if f.EV.SetSize%f.Planes != 0 || f.EVsPerPlane()*f.Planes != f.EV.SetSize {
				t.Errorf("EV set %d does not split over %d planes", f.EV.SetSize, f.Planes)
			}
			if f.Switches() != f.Planes*(f.T0Count+f.T1Count) {
				t.Errorf("Switches() = %d", f.Switches())
			}
		})
	}
	// The paper's fabric, by the numbers of the MRC profile.
	f, err := fabric.FromPreset("mrc-131k")
	if err != nil {
		t.Fatal(err)
	}
	if f.Hosts() != 131072 || f.Switches() != 6144 || f.SwitchesPerPlane() != 768 {
		t.Errorf("mrc-131k: %d hosts, %d switches (%d per plane)", f.Hosts(), f.Switches(), f.SwitchesPerPlane())
	}
	if w := f.Warnings(); len(w) != 2 {
		t.Errorf("mrc-131k warnings: %q, want the two drop-port warnings", w)
	}
	// The simulator's 1,024-host fabric: 8 planes of 32 T0 and 32 T1 on
	// 64-port switches, every port used, within BMv2's port numbers.
	f, err = fabric.FromPreset("mrc-1k")
	if err != nil {
		t.Fatal(err)
	}
	if f.Hosts() != 1024 || f.Switches() != 512 || f.SwitchesPerPlane() != 64 || f.EVsPerPlane() != 32 {
		t.Errorf("mrc-1k: %d hosts, %d switches (%d per plane), %d EVs per plane", f.Hosts(), f.Switches(), f.SwitchesPerPlane(), f.EVsPerPlane())
	}
	if f.NICSpeedGbps != 800 || f.PortSpeedGbps != 100 || f.SwitchPorts != 64 || f.T0Down+f.T0Up != f.SwitchPorts || f.T1Count != 32 || f.EV.SetSize != 256 {
		t.Errorf("mrc-1k: %+v", f)
	}
	if w := f.Warnings(); len(w) != 0 {
		t.Errorf("mrc-1k warnings: %q, want none", w)
	}
	// Everything else is the profile's defaults, as in every other preset.
	k1, _ := fabric.Preset("mrc-1k")
	k1.Name, k1.Planes, k1.NIC, k1.Switch, k1.T0, k1.T1, k1.EV.SetSize = "", 0, fabric.NICSpec{}, fabric.SwitchSpec{}, fabric.T0Spec{}, fabric.T1Spec{}, 0
	small, _ := fabric.Preset("small")
	small.Name, small.Planes, small.NIC, small.Switch, small.T0, small.T1, small.EV.SetSize = "", 0, fabric.NICSpec{}, fabric.SwitchSpec{}, fabric.T0Spec{}, fabric.T1Spec{}, 0
	if k1 != small {
		t.Errorf("mrc-1k's profile values %+v differ from small's %+v", k1, small)
	}
	if _, err := fabric.FromPreset("huge"); err == nil || !strings.Contains(err.Error(), `unknown preset "huge"`) {
		t.Errorf("FromPreset(huge) = %v", err)
	}
	// Presets are fresh copies: changing one does not change the next.
	d, _ := fabric.Preset("tiny")
	d.Planes = 9
	if d2, _ := fabric.Preset("tiny"); d2.Planes != 2 {
		t.Errorf("Preset returned shared state")
	}
}

func TestDescribeRoundTrip(t *testing.T) {
	for _, name := range fabric.PresetNames() {
		t.Run(name, func(t *testing.T) {
			f, err := fabric.FromPreset(name)
			if err != nil {
				t.Fatal(err)
			}
			// The preset with its derived values: the window and K.
			d, _ := fabric.Preset(name)
			d.NIC.WindowPackets, d.Failover.UnansweredSends = f.ReceiveWindow, f.Failover.UnansweredSends
			if got := f.Describe(); got != d {
				t.Errorf("Describe() = %+v\nwant the preset %+v", got, d)
			}
			g, err := fabric.Resolve(f.Describe())
			if err != nil {
				t.Fatal(err)
			}
			if *g != *f {
				t.Errorf("Resolve(Describe()) = %+v\nwant %+v", g, f)
			}
			// Through YAML, as a build writes fabric.yaml and Open reads it.
			text, err := yaml.Marshal(f.Describe())
			if err != nil {
				t.Fatal(err)
			}
			h, err := fabric.Parse("fabric.yaml", strings.NewReader(string(text)))
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if *h != *f {
				t.Errorf("Parse(yaml(Describe())) = %+v\nwant %+v", h, f)
			}
		})
	}
	// A non-default block and prefix survive the round trip too.
	d := fabric.Default()
	d.USID.Block = "2001:DB8::/32"
	d.Hosts.Prefix = "fd12:3456::/48"
	d.Links = fabric.LinkSpec{NICT0Ns: 3, T0T1Ns: 0}
	f, err := fabric.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	if f.Block != 0x20010db8 {
		t.Errorf("Block = %#x", f.Block)
	}
	g, err := fabric.Resolve(f.Describe())
	if err != nil || *g != *f {
		t.Errorf("round trip: %+v, %v", g, err)
	}
	// The YAML a build writes names the links section, zero delays too.
	text, err := yaml.Marshal(f.Describe())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "\nlinks:\n    nic_t0_ns: 3\n    t0_t1_ns: 0\n") {
		t.Errorf("yaml(Describe()) has no links section with 3 and 0:\n%s", text)
	}
	h, err := fabric.Parse("fabric.yaml", strings.NewReader(string(text)))
	if err != nil || *h != *f {
		t.Errorf("round trip through YAML: %+v, %v", h, err)
	}
}

func TestDecode(t *testing.T) {
	small, _ := fabric.Preset("small")
	tests := []struct {
		name string
		yaml string
		want func() fabric.Description
	}{
		{"base alone is the preset", "base: tiny\n", fabric.Default},
		{"override one field", "planes: 1\nnic: {speed_gbps: 100}\n", func() fabric.Description {
			d := fabric.Default()
			d.Planes, d.NIC.SpeedGbps = 1, 100
			return d
		}},
		{"nested override keeps siblings", "t0:\n  count: 3\n", func() fabric.Description {
			d := fabric.Default()
			d.T0.Count = 3
			return d
		}},
		{"base small", "base: small\nname: lab\n", func() fabric.Description {
			d := small
			d.Name = "lab"
			return d
		}},
		{"base after fields", "name: lab\nbase: small\n", func() fabric.Description {
			d := small
			d.Name = "lab"
			return d
		}},
		{"explicit document start", "---\nname: lab\n", func() fabric.Description {
			d := fabric.Default()
			d.Name = "lab"
			return d
		}},
		{"YAML integer forms", "planes: 0x2\nt0: {count: +3}\nev: {set_size: 1_6}\n", func() fabric.Description {
			d := fabric.Default()
			d.T0.Count = 3
			return d
		}},
		{"anchors and merge keys", "t0: &t0 {count: 1}\nt1: {count: 4}\ntrim: {<<: {size_bytes: 200, ecn_packets: 3}, size_bytes: 300}\n", func() fabric.Description {
			d := fabric.Default()
			d.T0.Count, d.T1.Count = 1, 4
			d.Trim.SizeBytes, d.Trim.ECNPackets = 300, 3 // the mapping's own key wins over the merged one
			return d
		}},
		{"a string field takes any scalar", "name: 123\n", func() fabric.Description {
			d := fabric.Default()
			d.Name = "123"
			return d
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fabric.Decode([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(); got != want {
				t.Errorf("Decode = %+v\nwant %+v", got, want)
			}
		})
	}
}

// mergeBomb merges 10^5 mappings through five levels of aliases.
const mergeBomb = "t1: &a0 {count: 2}\nt0:\n  <<: &a1 {<<: [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]}\n" +
	"  <<: &a2 {<<: [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]}\n" +
	"  <<: &a3 {<<: [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]}\n" +
	"  <<: &a4 {<<: [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]}\n" +
	"  <<: &a5 {<<: [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]}\n"

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // every problem's message, in order
	}{
		{"unknown top-level field", "name: lab\nplanez: 2\n", []string{"planez: line 2: unknown field (did you mean planes?)"}},
		{"unknown nested field", "name: lab\nt0:\n  count: 2\n  uplinks: 2\n", []string{"t0.uplinks: line 4: unknown field (known: count, down_ports, up_ports)"}},
		{"unknown field near a known one", "name: lab\nt0:\n  cont: 2\n", []string{"t0.cont: line 3: unknown field (did you mean count?)"}},
		{"wrong type", "name: lab\nplanes: two\n", []string{`planes: "two": line 2: want an integer`}},
		{"quoted number", "planes: \"two\"\n", []string{`planes: "two": line 1: want an integer`}},
		{"wrong type nested", "usid:\n  block: [1, 2]\n", []string{"usid.block: [...]: line 2: want a string, not a list"}},
		{"not a mapping", "- planes\n", []string{"line 1: a fabric file is a mapping of fields (name: value), not a list"}},
		{"second document", "name: a\n---\nname: b\n", []string{"line 3: the file holds more than one YAML document"}},
		{"unknown base", "base: huge\n", []string{`base: "huge": line 1: unknown preset "huge" (known: [mrc-131k mrc-1k small tiny])`}},
		{"base of the wrong type", "base: [small]\n", []string{"base: [...]: line 1: want a string, not a list"}},
		{"syntax error", "name: [lab\n", []string{"line 1: YAML syntax: did not find expected ',' or ']'"}},

		{"empty file", "", []string{"fabric file is empty (a file that starts from a preset says so: base: tiny)"}},
		{"comment only", "# nothing\n", []string{"fabric file is empty (a file that starts from a preset says so: base: tiny)"}},
		{"document start only", "---\n", []string{"fabric file is empty (a file that starts from a preset says so: base: tiny)"}},
		{"null document", "~\n", []string{"fabric file is empty (a file that starts from a preset says so: base: tiny)"}},
		{"empty mapping", "{}\n", []string{"fabric file is empty (a file that starts from a preset says so: base: tiny)"}},
		{"a scalar", "tiny\n", []string{"line 1: a fabric file is a mapping of fields (name: value), not a single value"}},
		{"fraction for an integer", "planes: 2.5\n", []string{`planes: "2.5": line 1: want an integer`}},
		{"boolean for an integer", "t1: {count: yes}\n", []string{`t1.count: "yes": line 1: want an integer`}},
		{"integer too large", "planes: 99999999999999999999\n", []string{`planes: "99999999999999999999": line 1: integer out of range`}},
		{"mapping for an integer", "planes: {n: 2}\n", []string{"planes: {...}: line 1: want an integer, not a mapping"}},
		{"scalar for a mapping", "t0: 8\n", []string{`t0: "8": line 1: want a mapping of count, down_ports, up_ports`}},
		{"no value", "name: lab\nplanes:\n", []string{"planes: line 2: no value: give one, or leave the field out to keep the base preset's"}},
		{"set twice", "planes: 2\nname: a\nplanes: 4\n", []string{"planes: line 3: set twice (first on line 1)"}},
		{"key that is not a word", "? [a]\n: 1\n", []string{"?: [...]: line 1: a field name must be a plain word, not a list"}},
		{"merge of a scalar", "t0: {<<: 1}\n", []string{`t0.<<: "1": line 1: a merge key takes mappings, not a single value`}},
		{"a mapping that merges itself", "t0: &a {<<: [*a, *a], count: 1}\n", []string{"t0.<<: line 1: a mapping merges itself", "t0.<<: line 1: a mapping merges itself"}},
		{"merges without end", mergeBomb, []string{"t0.<<: line 4: more than 1000 merged mappings"}},
		{"unknown field under links", "links:\n  nic_t0_ns: 10\n  t0_t1: 150\n", []string{"links.t0_t1: line 3: unknown field (did you mean t0_t1_ns?)"}},
		{"link delay with a unit", "links: {t0_t1_ns: 150ns}\n", []string{`links.t0_t1_ns: "150ns": line 1: want an integer`}},
		{"link delay as a fraction", "links: {nic_t0_ns: 9.5}\n", []string{`links.nic_t0_ns: "9.5": line 1: want an integer`}},
		{"scalar for links", "links: 150\n", []string{`links: "150": line 1: want a mapping of nic_t0_ns, t0_t1_ns`}},
		{"every problem at once", "base: small\nplanes: two\nt0:\n  cont: 2\n  up_ports: [4]\nnic: {speed_gbps: 800, speed: 1}\n",
			[]string{
				`planes: "two": line 2: want an integer`,
				"t0.cont: line 4: unknown field (did you mean count?)",
				"t0.up_ports: [...]: line 5: want an integer, not a list",
				"nic.speed: line 6: unknown field (did you mean speed_gbps?)",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fabric.Decode([]byte(tc.yaml))
			if err == nil {
				t.Fatal("Decode accepted it")
			}
			if !errors.Is(err, fabric.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			var got []string
			for _, fe := range fieldErrors(err) {
				got = append(got, fe.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// Parse names the file in front and reports the same problems
			// (the files above are consistent apart from them).
			_, err = fabric.Parse("lab.yaml", strings.NewReader(tc.yaml))
			if err == nil || !strings.HasPrefix(err.Error(), "fabric lab.yaml: ") || !errors.Is(err, fabric.ErrInvalid) {
				t.Errorf("Parse: %v", err)
			}
			if n := len(fieldErrors(err)); n != len(tc.want) {
				t.Errorf("Parse reports %d problems, want %d: %v", n, len(tc.want), err)
			}
		})
	}
}

// TestParseReportsEveryProblem: the problems of the file itself and the
// inconsistent values are reported together, each with its line; a value
// that came from the base preset has none.
func TestParseReportsEveryProblem(t *testing.T) {
	text := "name: lab\nt0:\n  cont: 2\n  down_ports: 7\nt1: {count: 3}\ndscp: {trimmed: 4}\n"
	_, err := fabric.Parse("lab.yaml", strings.NewReader(text))
	var got []string
	for _, fe := range fieldErrors(err) {
		got = append(got, fe.Error())
	}
	want := []string{
		"t0.cont: line 3: unknown field (did you mean count?)",
		"t0.down_ports: 7: line 4: down 7 + up 2 = 9 ports, more than a switch has (switch.ports = 8)",
		"t1.count: 3: line 5: every T0 has one up port to each T1, so t1.count must equal t0.up_ports (2)",
		"dscp.trimmed: 4: line 6: same code point as dscp.trimmable: the switches could not tell the classes apart",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(err.Error(), "fabric lab.yaml: invalid fabric description: t0.cont: line 3: ") {
		t.Errorf("message: %v", err)
	}
	// A problem with a preset's value has no line to point at, and says
	// whose value it is.
	_, err = fabric.Parse("lab.yaml", strings.NewReader("t0: {up_ports: 3}\n"))
	if fe := fieldErrors(err); len(fe) != 1 || fe[0].Error() != "t1.count: 2: every T0 has one up port to each T1, so t1.count must equal t0.up_ports (3); the value is preset tiny's, which the file starts from" {
		t.Errorf("Parse = %v", err)
	}
	_, err = fabric.Parse("lab.yaml", strings.NewReader("base: small\ntrim: {threshold_packets: 12}\n"))
	if fe := fieldErrors(err); len(fe) != 1 || fe[0].Error() != "trim.ecn_packets: 14: must be below the trim threshold (trim.threshold_packets = 12): a queue that deep already trims, so ECN would never warn first; the value is preset small's, which the file starts from" {
		t.Errorf("Parse = %v", err)
	}
	_, err = fabric.Parse("lab.yaml", strings.NewReader("base: small\nusid: {plane_bits: 1, kind_bits: 2, index_bits: 13}\n"))
	if fe := fieldErrors(err); len(fe) != 1 || fe[0].Error() != "usid.plane_bits: 1: line 2: 1 bits hold 2 planes, the fabric has 4" {
		t.Errorf("Parse = %v", err)
	}
	// An unknown base stops there: checking the values against another
	// preset would report problems the user does not have.
	_, err = fabric.Parse("lab.yaml", strings.NewReader("base: smal\nt0: {count: 8}\n"))
	if fe := fieldErrors(err); len(fe) != 1 || fe[0].Field != "base" {
		t.Errorf("Parse = %v", err)
	}
}

// A syntax error after the first document is reported (it used to be
// ignored along with the rest of the file).
func TestDecodeSecondDocumentSyntax(t *testing.T) {
	_, err := fabric.Decode([]byte("name: a\n---\nname: [b\n"))
	if fe := fieldErrors(err); len(fe) != 1 || !strings.Contains(fe[0].Reason, "YAML syntax: did not find expected ',' or ']'") {
		t.Errorf("Decode = %v", err)
	}
}

func TestFieldErrorJSON(t *testing.T) {
	for _, tc := range []struct {
		fe   fabric.FieldError
		want string
	}{
		{fabric.FieldError{Field: "planes", Value: `"two"`, Line: 2, Reason: "want an integer"}, `{"field":"planes","value":"two","reason":"want an integer","line":2}`},
		{fabric.FieldError{Field: "t0.count", Value: 9, Reason: "r"}, `{"field":"t0.count","value":"9","reason":"r","line":0}`},
		{fabric.FieldError{Field: "t0.cont", Line: 3, Reason: "unknown field"}, `{"field":"t0.cont","value":null,"reason":"unknown field","line":3}`},
		{fabric.FieldError{Field: "name", Value: `""`, Reason: "r"}, `{"field":"name","value":"","reason":"r","line":0}`},
		{fabric.FieldError{Field: "usid.block", Value: "fcbb::/48", Reason: "r"}, `{"field":"usid.block","value":"fcbb::/48","reason":"r","line":0}`},
	} {
		got, err := json.Marshal(&tc.fe)
		if err != nil || string(got) != tc.want {
			t.Errorf("json(%s) = %s, %v\nwant %s", tc.fe.Error(), got, err, tc.want)
		}
	}
}

func TestParseResolves(t *testing.T) {
	_, err := fabric.Parse("lab.yaml", strings.NewReader("t1: {count: 5}\n"))
	if !errors.Is(err, fabric.ErrInvalid) || len(fieldErrors(err)) != 1 || fieldErrors(err)[0].Field != "t1.count" {
		t.Fatalf("Parse = %v, want the t1.count problem", err)
	}
	if !strings.HasPrefix(err.Error(), "fabric lab.yaml: ") {
		t.Errorf("error %q does not name the file", err)
	}
	f, err := fabric.Parse("lab.yaml", strings.NewReader("base: mrc-131k\nname: big-lab\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "big-lab" || f.Hosts() != 131072 {
		t.Errorf("Parse = %+v", f)
	}
}

// TestUnansweredSendsFloor: K must be at least nic.ack_every plus the sends
// a full window leaves unanswered on one slot (window - 1 PSNs before the
// one in hand, spread over the set) plus one; that floor is accepted and
// one below it refused, for every preset's set size and ack_every.
func TestUnansweredSendsFloor(t *testing.T) {
	for _, c := range []struct{ size, window, want int }{
		{1, 64, 63}, {16, 64, 4}, {32, 64, 2}, {63, 64, 1}, {64, 64, 1}, {128, 64, 1}, {256, 64, 1},
		{16, 256, 16}, {128, 512, 4}, {256, 1024, 4}, {256, 4096, 16}, {100, 1024, 11},
	} {
		if got := fabric.InFlightPerSlot(c.size, c.window); got != c.want {
			t.Errorf("InFlightPerSlot(%d, %d) = %d, want %d", c.size, c.window, got, c.want)
		}
	}
	for _, name := range fabric.PresetNames() {
		d, err := fabric.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fabric.Resolve(d)
		if err != nil {
			t.Fatal(err)
		}
		floor := max(2, fabric.UnansweredSendsFloor(d.NIC.AckEvery, d.EV.SetSize, f.ReceiveWindow))
		d.Failover.UnansweredSends = floor
		if _, err := fabric.Resolve(d); err != nil {
			t.Errorf("%s with K = %d: %v", name, d.Failover.UnansweredSends, err)
		}
		d.Failover.UnansweredSends = floor - 1
		if _, err := fabric.Resolve(d); err == nil && floor > 2 {
			t.Errorf("%s with K = %d, below the floor %d: accepted", name, floor-1, floor)
		}
	}
}

// TestPresetWindows pins every preset's derived receive window and K, from
// the derivation worked by hand (docs/protocol.md 5, The receive window).
// With 4,096-byte payloads a data frame on a link is 4,254 bytes (134 of
// headers, 24 of preamble, FCS and gap), a SACK 158.
//   - 100G ports (tiny, mrc-1k, mrc-131k): a data frame serializes in
//     340,320 ps, a SACK in 12,640. Unloaded round trip: 4 x (10 + 150 ns)
//     of propagation + 4 x 340,320 + 4 x 12,640 = 2,051,840 ps. Trimming
//     lets 3 x 16 x 340,320 = 16,335,360 ps queue.
//   - 200G ports (small): 170,160 and 6,320 ps; 1,345,920 ps unloaded;
//     8,167,680 ps of queueing.
//
// BDP = NIC Gb/s x ps / (4,254 x 8,000), rounded up: tiny (200G) 13 and
// 109, so 2 x 109 = 218 -> 256; small (800G) 32 and 224 -> 448 -> 512;
// mrc-1k and mrc-131k (800G) 49 and 433 -> 866 -> 1,024. K is the larger
// of 8 and 3 + ceil((W - 1) / set size) + 1: tiny 3 + 16 + 1 = 20 (16
// slots), small 3 + 4 + 1 = 8 (128), mrc-1k 3 + 4 + 1 = 8 (256).
func TestPresetWindows(t *testing.T) {
	// The send window is twice BDP, rounded up to a power of two of at
	// least 64: 26 -> 64, 64, 98 -> 128.
	want := map[string]struct {
		rtt, queue                   int64
		bdp, loaded, window, k, send int
	}{
		"tiny":     {2_051_840, 16_335_360, 13, 109, 256, 20, 64},
		"small":    {1_345_920, 8_167_680, 32, 224, 512, 8, 64},
		"mrc-1k":   {2_051_840, 16_335_360, 49, 433, 1024, 8, 128},
		"mrc-131k": {2_051_840, 16_335_360, 49, 433, 1024, 8, 128},
	}
	for _, name := range fabric.PresetNames() {
		w, ok := want[name]
		if !ok {
			t.Errorf("preset %s has no expected window here", name)
			continue
		}
		d, _ := fabric.Preset(name)
		wd := fabric.DeriveWindow(d.NIC.SpeedGbps, d.Switch.PortSpeedGbps, d.Links, d.Trim.ThresholdPackets)
		if wd.UnloadedRTTps != w.rtt || wd.QueueingPs != w.queue || wd.BDP != w.bdp || wd.LoadedBDP != w.loaded || wd.Default != w.window {
			t.Errorf("%s: derivation %+v, want rtt %d ps, queueing %d ps, BDP %d, loaded %d, window %d", name, wd, w.rtt, w.queue, w.bdp, w.loaded, w.window)
		}
		f, err := fabric.Resolve(d)
		if err != nil {
			t.Fatal(err)
		}
		if f.ReceiveWindow != w.window || f.Failover.UnansweredSends != w.k || f.SendWindow() != w.send {
			t.Errorf("%s: window %d, K %d, send window %d; want %d, %d, %d", name, f.ReceiveWindow, f.Failover.UnansweredSends, f.SendWindow(), w.window, w.k, w.send)
		}
		// Describe gives the resolved values back, and they resolve again.
		if g, err := fabric.Resolve(f.Describe()); err != nil || g.ReceiveWindow != f.ReceiveWindow || g.Failover != f.Failover {
			t.Errorf("%s: the described fabric resolves to %+v, %v", name, g, err)
		}
	}
}

// TestWindowChecks: a window that is not a power of two, outside 64..4096
// or below one BDP is refused, naming the field, the value and the BDP; a
// set window is kept; a longer link derives a wider window.
func TestWindowChecks(t *testing.T) {
	for _, c := range []struct {
		w    int
		want string
	}{
		{32, "must be a power of two from 64 to 4096"},
		{100, "must be a power of two from 64 to 4096"},
		{8192, "must be a power of two from 64 to 4096"},
		{-64, "must be a power of two from 64 to 4096"},
	} {
		d, _ := fabric.Preset("small")
		d.NIC.WindowPackets = c.w
		_, err := fabric.Resolve(d)
		if err == nil || !strings.Contains(err.Error(), "nic.window_packets") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("window %d: %v, want nic.window_packets ... %q", c.w, err, c.want)
		}
	}
	// mrc-1k's BDP is 49 packets; with 2 µs more of fibre each way it is
	// 800 Gb/s x (2,051,840 + 4 x 2,000,000 ps) / 34,032,000 = 237 (236.5):
	// 128 is refused, 256 accepted.
	d, _ := fabric.Preset("mrc-1k")
	d.Links.T0T1Ns += 2000
	d.NIC.WindowPackets = 128
	_, err := fabric.Resolve(d)
	if err == nil || !strings.Contains(err.Error(), "below one bandwidth-delay product, 237 packets") {
		t.Errorf("window 128 on a 10 µs fabric: %v", err)
	}
	d.NIC.WindowPackets = 256
	if f, err := fabric.Resolve(d); err != nil || f.ReceiveWindow != 256 {
		t.Errorf("window 256 on a 10 µs fabric: %v", err)
	}
	d.NIC.WindowPackets = 0
	if f, err := fabric.Resolve(d); err != nil || f.ReceiveWindow != 2048 {
		t.Errorf("derived window on a 10 µs fabric: %+v, %v; want 2048 (2 x (237 + 433 - 49) = 1,242)", f, err)
	}
	// K set below the window's floor is refused with the window named.
	d, _ = fabric.Preset("tiny")
	d.Failover.UnansweredSends = 8
	if _, err := fabric.Resolve(d); err == nil || !strings.Contains(err.Error(), "nic.window_packets 256") {
		t.Errorf("tiny with K = 8: %v", err)
	}
	d.NIC.WindowPackets = 64
	if f, err := fabric.Resolve(d); err != nil || f.ReceiveWindow != 64 || f.Failover.UnansweredSends != 8 {
		t.Errorf("tiny with window 64 and K = 8: %+v, %v", f, err)
	}
}
