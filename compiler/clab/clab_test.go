package clab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/clab"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

var (
	buildsMu sync.Mutex
	builds   = map[string]*artifacts.Build{}
	buildDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clab-test-")
	if err != nil {
		panic(err)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build writes (once) and opens the build of a preset.
func build(t *testing.T, preset string) *artifacts.Build {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if b := builds[preset]; b != nil {
		return b
	}
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(buildDir, preset)
	if _, err := artifacts.Write(context.Background(), f, dir, artifacts.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	builds[preset] = b
	return b
}

// schema compiles containerlab's JSON Schema from MRCGEN_CLAB_SCHEMA, or
// skips.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := os.Getenv("MRCGEN_CLAB_SCHEMA")
	if path == "" {
		t.Skip("MRCGEN_CLAB_SCHEMA is not set: point it at containerlab's clab.schema.json (shared/schemas/containerlab/) to check the topologies against it")
	}
	c := jsonschema.NewCompiler()
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	return s
}

// asJSON turns YAML into the values a JSON decoder gives, which is what
// the schema validator checks.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(strings.NewReader(string(j)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type variant struct {
	name   string
	preset string
	opt    clab.Options
}

func variants() []variant {
	two := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}
	four := append(append([]netip.Addr{}, two...), netip.MustParseAddr("192.0.2.3"), netip.MustParseAddr("2001:db8::4"))
	return []variant{
		{"tiny", "tiny", clab.Options{}},
		{"small", "small", clab.Options{}},
		{"tiny-sonic", "tiny", clab.Options{Sonic: true}},
		{"small-sonic", "small", clab.Options{Sonic: true}},
		{"tiny-split2", "tiny", clab.Options{Hosts: two}},
		{"small-split4", "small", clab.Options{Hosts: four}},
		{"small-split2-sonic", "small", clab.Options{Hosts: two, Sonic: true}},
	}
}

func export(t *testing.T, v variant) (*artifacts.Build, *clab.Export) {
	t.Helper()
	b := build(t, v.preset)
	v.opt.OutDir = b.Dir
	ex, err := clab.Build(b, v.opt)
	if err != nil {
		t.Fatalf("%s: %v", v.name, err)
	}
	return b, ex
}

// TestExportsValidateAgainstSchema checks every exported topology against
// containerlab's own JSON Schema.
func TestExportsValidateAgainstSchema(t *testing.T) {
	s := schema(t)
	n := 0
	for _, v := range variants() {
		_, ex := export(t, v)
		for _, f := range ex.Files {
			if !strings.HasSuffix(f.Name, ".clab.yml") {
				continue
			}
			if err := s.Validate(asJSON(t, f.Data)); err != nil {
				t.Errorf("%s: %s does not validate: %v", v.name, f.Name, err)
			}
			n++
		}
	}
	// 1 + 1 + 1 + 1 + 2 + 4 + 2 topology files.
	if n != 12 {
		t.Errorf("validated %d topologies, want 12", n)
	}
	t.Logf("%d topologies validate against %s", n, os.Getenv("MRCGEN_CLAB_SCHEMA"))
}

// parsed is an exported topology read back from its YAML.
type parsed struct {
	Name string `yaml:"name"`
	Mgmt struct {
		Subnet string `yaml:"ipv4-subnet"`
	} `yaml:"mgmt"`
	Topology struct {
		Nodes map[string]struct {
			Kind          string   `yaml:"kind"`
			MgmtIPv4      string   `yaml:"mgmt-ipv4"`
			StartupConfig string   `yaml:"startup-config"`
			Binds         []string `yaml:"binds"`
			Exec          []string `yaml:"exec"`
		} `yaml:"nodes"`
		Links []struct {
			Type      string          `yaml:"type"`
			Endpoints []clab.Endpoint `yaml:"endpoints"`
			Endpoint  *clab.Endpoint  `yaml:"endpoint"`
			Remote    string          `yaml:"remote"`
			VNI       int             `yaml:"vni"`
			HostIf    string          `yaml:"host-interface"`
		} `yaml:"links"`
	} `yaml:"topology"`
}

// TestExportWiring reads every export back and checks it wires exactly the
// plan's links (each once, on the interfaces of their BMv2 ports), runs
// the programs it should, and that its targets file reaches every BMv2 node
// at its management address.
func TestExportWiring(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			b, ex := export(t, v)
			p, f := b.Plan, b.Fabric
			// Every link the plan has, by its two ends.
			want := map[[2]clab.Endpoint]bool{}
			for _, s := range p.Switches() {
				for port := 0; port < p.Ports(s); port++ {
					nb, ok := p.Neighbor(s, port)
					if !ok {
						continue
					}
					a := clab.Endpoint{Node: p.Name(s), Interface: fmt.Sprintf("eth%d", port+1)}
					z := clab.Endpoint{Node: p.Name(nb.Switch()), Interface: fmt.Sprintf("eth%d", nb.Port+1)}
					if nb.Role == plan.RoleNIC {
						z = clab.Endpoint{Node: p.HostName(p.HostByIndex(nb.Index)), Interface: fmt.Sprintf("eth%d", nb.Port)}
					}
					want[[2]clab.Endpoint{a, z}], want[[2]clab.Endpoint{z, a}] = true, true
				}
			}
			got := map[[2]clab.Endpoint]int{}
			nodes := map[string]int{} // node -> topology index
			hostLinks := 0
			type half struct {
				topo   int
				end    clab.Endpoint
				remote string
			}
			halves := map[int][]half{}
			var hostAddrs []string
			for _, a := range v.opt.Hosts {
				hostAddrs = append(hostAddrs, a.String())
			}
			for k := 0; k < len(ex.Topologies); k++ {
				var pt parsed
				if err := yaml.Unmarshal(ex.Files[2*k].Data, &pt); err != nil {
					t.Fatal(err)
				}
				tf, err := targets.Parse(ex.Files[2*k+1].Data)
				if err != nil {
					t.Fatalf("targets file: %v", err)
				}
				bmv2 := 0
				for name, n := range pt.Topology.Nodes {
					if _, dup := nodes[name]; dup {
						t.Errorf("node %s in two topologies", name)
					}
					nodes[name] = k
					isNIC := strings.HasPrefix(name, "nic-")
					switch {
					case v.opt.Sonic && !isNIC:
						if n.Kind != "sonic-vs" || n.StartupConfig != "./sonic/"+name+"/config_db.json" || len(n.Exec) != 0 {
							t.Errorf("%s: %+v", name, n)
						}
						if _, ok := tf.Devices[name]; ok {
							t.Errorf("sonic-vs node %s in the P4Runtime targets", name)
						}
					default:
						bmv2++
						prog := "mrc_switch.json"
						if isNIC {
							prog = "mrc_nic.json"
						}
						if n.Kind != "linux" || len(n.Binds) != 1 || n.Binds[0] != "./p4/"+prog+":/mrcgen/"+prog+":ro" ||
							len(n.Exec) != 1 || !strings.Contains(n.Exec[0], "simple_switch_grpc --device-id 1 --thrift-port 9090") ||
							!strings.Contains(n.Exec[0], "/mrcgen/"+prog+" -- --grpc-server-addr 0.0.0.0:9559") {
							t.Errorf("%s: %+v", name, n)
						}
						if isNIC && !strings.Contains(n.Exec[0], "-i 0@host0 -i 1@eth1") {
							t.Errorf("%s: NIC ports %s", name, n.Exec[0])
						}
						e := tf.Resolve(name)
						if e.Address != n.MgmtIPv4+":9559" || e.DeviceID != 1 || e.Insecure == nil || !*e.Insecure {
							t.Errorf("%s: target %+v, mgmt %s", name, e, n.MgmtIPv4)
						}
					}
				}
				if len(tf.Devices) != bmv2 {
					t.Errorf("topology %d: %d targets, %d BMv2 nodes", k, len(tf.Devices), bmv2)
				}
				for _, l := range pt.Topology.Links {
					switch l.Type {
					case "veth":
						got[[2]clab.Endpoint{l.Endpoints[0], l.Endpoints[1]}]++
					case "host":
						hostLinks++
						if l.Endpoint.Interface != "host0" || l.HostIf != "h"+l.Endpoint.Node {
							t.Errorf("host link %+v", l)
						}
					case "vxlan-stitch":
						halves[l.VNI] = append(halves[l.VNI], half{k, *l.Endpoint, l.Remote})
					default:
						t.Errorf("link type %q", l.Type)
					}
				}
			}
			if len(nodes) != f.Switches()+f.Hosts() {
				t.Errorf("%d nodes, want %d", len(nodes), f.Switches()+f.Hosts())
			}
			if hostLinks != f.Hosts() {
				t.Errorf("%d host links, want %d", hostLinks, f.Hosts())
			}
			for vni, hs := range halves {
				if len(hs) != 2 || hs[0].topo == hs[1].topo || hs[0].remote != hostAddrs[hs[1].topo] || hs[1].remote != hostAddrs[hs[0].topo] {
					t.Errorf("VNI %d: halves %+v do not pair up across hosts %v", vni, hs, hostAddrs)
					continue
				}
				got[[2]clab.Endpoint{hs[0].end, hs[1].end}]++
			}
			if len(v.opt.Hosts) > 1 && len(halves) == 0 {
				t.Errorf("split lab without VXLAN links")
			}
			links := 0
			for k, n := range got {
				if !want[k] || n != 1 {
					t.Errorf("link %v: %d times, in the plan: %v", k, n, want[k])
				}
				links++
			}
			if links != len(want)/2 {
				t.Errorf("%d links, the plan has %d", links, len(want)/2)
			}
		})
	}
}

// TestNegative: what the schema rejects, and what only our check does.
func TestNegative(t *testing.T) {
	b, ex := export(t, variant{"tiny", "tiny", clab.Options{}})
	_ = b
	base := ex.Topologies[0]
	clone := func() *clab.Topology {
		data, err := clab.Marshal(base)
		if err != nil {
			t.Fatal(err)
		}
		var c clab.Topology
		var raw struct {
			Name     string    `yaml:"name"`
			Mgmt     clab.Mgmt `yaml:"mgmt"`
			Topology struct {
				Nodes map[string]*clab.Node `yaml:"nodes"`
				Links []clab.Link           `yaml:"links"`
			} `yaml:"topology"`
		}
		if err := yaml.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		c.Name, c.Mgmt, c.Topology.Links = raw.Name, raw.Mgmt, raw.Topology.Links
		for _, n := range base.Topology.Nodes {
			nn := *raw.Topology.Nodes[n.Name]
			nn.Name = n.Name
			c.Topology.Nodes = append(c.Topology.Nodes, &nn)
		}
		return &c
	}
	if err := clab.Check(clone()); err != nil {
		t.Fatalf("the clone of a good topology fails: %v", err)
	}

	var veths []int
	for i, l := range base.Topology.Links {
		if l.Type == "veth" {
			veths = append(veths, i)
		}
	}
	v0, v1 := veths[0], veths[1]
	unknownKind := clone()
	unknownKind.Topology.Nodes[0].Kind = "p4_bmv2"
	missingNode := clone()
	missingNode.Topology.Links[v0].Endpoints[1].Node = "p0-t1-9"
	dupIf := clone()
	dupIf.Topology.Links[v1].Endpoints[0] = dupIf.Topology.Links[v0].Endpoints[0]
	for _, tc := range []struct {
		name     string
		topo     *clab.Topology
		want     string
		inSchema bool // the schema rejects it too
	}{
		{"unknown kind", unknownKind, `kind "p4_bmv2" is not one mrcgen exports`, true},
		{"link to a missing node", missingNode, `no node "p0-t1-9" in the topology`, false},
		{"interface used twice", dupIf, fmt.Sprintf("is already used by link %d", v0), false},
	} {
		err := clab.Check(tc.topo)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check says %v, want %q", tc.name, err, tc.want)
		}
		if os.Getenv("MRCGEN_CLAB_SCHEMA") == "" {
			continue
		}
		data, err := clab.Marshal(tc.topo)
		if err != nil {
			t.Fatal(err)
		}
		serr := schema(t).Validate(asJSON(t, data))
		if tc.inSchema && serr == nil {
			t.Errorf("%s: the schema accepts it", tc.name)
		}
		if !tc.inSchema && serr != nil {
			// The gap our check closes: if the schema learns this, the
			// test should say so rather than pass silently.
			t.Logf("%s: the schema now rejects it too: %v", tc.name, serr)
		}
		if tc.inSchema && serr != nil && !strings.Contains(serr.Error(), "kind") {
			t.Errorf("%s: schema error does not name the kind: %v", tc.name, serr)
		}
	}

	// Bad options: a clear error, nothing exported.
	for _, tc := range []struct {
		opt  clab.Options
		want string
	}{
		{clab.Options{MgmtSubnet: netip.MustParsePrefix("10.0.0.0/29")}, "holds 5 nodes, the fabric has 12: give --mgmt-subnet a /28 or larger"},
		{clab.Options{MgmtSubnet: netip.MustParsePrefix("fd00::/64")}, "is not IPv4"},
		{clab.Options{Hosts: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")}}, "splits over at most 2 hosts"},
		{clab.Options{Hosts: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.1")}}, "must be distinct"},
	} {
		tc.opt.OutDir = b.Dir
		if _, err := clab.Build(b, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
}

// TestMgmtAddresses: deterministic, distinct, after the gateway.
func TestMgmtAddresses(t *testing.T) {
	_, ex := export(t, variant{"tiny", "tiny", clab.Options{MgmtSubnet: netip.MustParsePrefix("10.9.8.0/28")}})
	nodes := ex.Topologies[0].Topology.Nodes
	if nodes[0].Name != "p0-t0-0" || nodes[0].MgmtIPv4 != "10.9.8.2" || nodes[len(nodes)-1].Name != "nic-3" || nodes[len(nodes)-1].MgmtIPv4 != "10.9.8.13" {
		t.Errorf("first %s %s, last %s %s", nodes[0].Name, nodes[0].MgmtIPv4, nodes[len(nodes)-1].Name, nodes[len(nodes)-1].MgmtIPv4)
	}
}
