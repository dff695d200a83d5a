package fabric_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// TestSONiCSectionRejects checks every rule of the sonic section: each bad
// value is one problem naming its field and why.
func TestSONiCSectionRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		base   string
		mutate func(*fabric.SONiCSpec)
		want   problem
	}{
		{"unknown target", "", func(s *fabric.SONiCSpec) { s.Target = "trident-9" },
			problem{"sonic.target", `"trident-9"`, "unknown switch target"}},
		{"too many lanes", "", func(s *fabric.SONiCSpec) { s.LanesPerPort = 9 },
			problem{"sonic.lanes_per_port", "9", "a port has 1 to 8 lanes"}},
		{"negative first lane", "", func(s *fabric.SONiCSpec) { s.FirstLane = -1 },
			problem{"sonic.first_lane", "-1", "lane numbers start at 0"}},
		{"not a prefix", "", func(s *fabric.SONiCSpec) { s.LinkPrefix = "fd00::1" },
			problem{"sonic.link_prefix", `"fd00::1"`, "not an IPv6 prefix"}},
		{"IPv4", "", func(s *fabric.SONiCSpec) { s.LinkPrefix = "10.0.0.0/8" },
			problem{"sonic.link_prefix", "10.0.0.0/8", "must be an IPv6 prefix"}},
		{"host bits", "", func(s *fabric.SONiCSpec) { s.LinkPrefix = "fd00:1::1/64" },
			problem{"sonic.link_prefix", "fd00:1::1/64", "did you mean fd00:1::/64?"}},
		{"overlaps hosts", "", func(s *fabric.SONiCSpec) { s.LinkPrefix = "fd00:6d72:6300::/80" },
			problem{"sonic.link_prefix", "fd00:6d72:6300::/80", "overlaps the host prefix fd00:6d72:6300::/64"}},
		{"overlaps the uSID block", "", func(s *fabric.SONiCSpec) { s.LinkPrefix = "fcbb:bb00:ffff::/64" },
			problem{"sonic.link_prefix", "fcbb:bb00:ffff::/64", "overlaps the uSID block fcbb:bb00::/32"}},
		// tiny: 2 planes x 2 T0 x (2 T1 + 2 hosts) = 16 links: 32 addresses, a /123.
		{"too small for the links", "", func(s *fabric.SONiCSpec) { s.LinkPrefix = "fd00:1::/124" },
			problem{"sonic.link_prefix", "fd00:1::/124", "16 links need a /127 each: a /124 holds 8, use a /123 or shorter"}},
		{"too small for mrc-131k", "mrc-131k", func(s *fabric.SONiCSpec) { s.LinkPrefix = "fd00:1::/108" },
			problem{"sonic.link_prefix", "fd00:1::/108", "2097152 links need a /127 each: a /108 holds 524288, use a /106 or shorter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fabric.Default()
			if tc.base != "" {
				d, _ = fabric.Preset(tc.base)
			}
			tc.mutate(&d.SONiC)
			_, err := fabric.Resolve(d)
			got := fieldErrors(err)
			if len(got) != 1 || got[0].Field != tc.want.field || got[0].Value == nil ||
				strings.Trim(jsonValue(t, got[0]), `"`) != strings.Trim(tc.want.value, `"`) || !strings.Contains(got[0].Reason, tc.want.reason) {
				t.Fatalf("Resolve: %v\nwant one problem %v", err, tc.want)
			}
		})
	}
	// The smallest prefix that fits is accepted.
	d := fabric.Default()
	d.SONiC.LinkPrefix = "fd00:1::/123"
	if _, err := fabric.Resolve(d); err != nil {
		t.Errorf("a /123 holds tiny's 16 links: %v", err)
	}
}

func jsonValue(t *testing.T, fe *fabric.FieldError) string {
	t.Helper()
	data, err := json.Marshal(fe)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Value string }
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v.Value
}

// TestSONiCSectionInFile reads the section from a file, keeps it through
// Describe, and leaves it out of a description that does not set it.
func TestSONiCSectionInFile(t *testing.T) {
	f, err := fabric.Parse("t.yaml", strings.NewReader("base: tiny\nsonic: {target: spectrum-4, link_prefix: \"fd00:aa::/64\", first_lane: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := fabric.SONiCSpec{Target: "spectrum-4", LinkPrefix: "fd00:aa::/64", FirstLane: 1}
	if f.SONiC != want || f.Describe().SONiC != want {
		t.Errorf("SONiC = %+v, Describe().SONiC = %+v, want %+v", f.SONiC, f.Describe().SONiC, want)
	}
	_, err = fabric.Parse("t.yaml", strings.NewReader("sonic: {target: spectrum4}\n"))
	if fe := fieldErrors(err); len(fe) != 1 || fe[0].Field != "sonic.target" || fe[0].Line != 1 {
		t.Errorf("unknown target: %v, want one problem on sonic.target, line 1", err)
	}
}

// TestSONiCSchemaEnum: the schema's target enum is SONiCTargets.
func TestSONiCSchemaEnum(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Properties map[string]struct{ Enum []string }
		}
	}
	if err := json.Unmarshal(fabric.JSONSchema(), &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties["sonic"].Properties["target"].Enum; !slices.Equal(got, fabric.SONiCTargets) {
		t.Errorf("schema sonic.target enum %v, SONiCTargets %v", got, fabric.SONiCTargets)
	}
}
