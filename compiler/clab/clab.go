// Package clab exports a build as a containerlab topology: one node per
// switch and per NIC, wired exactly as the address plan wires them, each a
// `kind: linux` container of the p4lang/behavioral-model image running
// simple_switch_grpc with the build's compiled program (or, with SONiC, the
// switches as `kind: sonic-vs` nodes booting from a CONFIG_DB), and a
// targets file that `mrcgen push --targets` uses to install the build over
// the nodes' management addresses. A lab can be split over several hosts,
// the links between hosts stitched with VXLAN (containerlab's
// `vxlan-stitch` links).
//
// Interfaces: BMv2 port N of a switch is its interface eth(N+1) (eth0 is
// containerlab's management interface). NIC port p+1 (plane p) is eth(p+1);
// the NIC's host port 0 is host0, a veth to the containerlab host (interface
// h<nic name> there), where a test or a traffic generator plays the host.
package clab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

// Defaults.
const (
	DefaultImage      = "p4lang/behavioral-model:latest"
	DefaultSonicImage = "docker-sonic-vs:latest"
	// DefaultMgmtSubnet is a private /16: 65,533 nodes.
	DefaultMgmtSubnet = "172.30.0.0/16"
	GRPCPort          = 9559 // P4Runtime's IANA port
	ThriftPort        = 9090 // BMv2's default thrift port
	VXLANPort         = 4789
	DefaultVNIBase    = 10000
	// HostInterface is the NIC's host-facing interface inside its node.
	HostInterface = "host0"
	// bind target of the programs inside a node.
	programDir = "/mrcgen"
)

// Options shape an export.
type Options struct {
	// OutDir is where the topology is written: binds and startup configs
	// are relative to it, as containerlab resolves them.
	OutDir string
	// Image runs the BMv2 nodes.
	Image string
	// MgmtSubnet holds every node's management address (the first
	// address is the bridge's gateway).
	MgmtSubnet netip.Prefix
	// Sonic makes the switches sonic-vs nodes booting from
	// SonicDir/sonic/<switch>/config_db.json (`mrcgen export sonic`).
	Sonic      bool
	SonicImage string
	SonicDir   string
	// Hosts splits the lab over len(Hosts) machines, by their underlay
	// addresses (VXLAN remotes); empty or one: one topology.
	Hosts   []netip.Addr
	VNIBase int
}

// Topology is a containerlab topology file.
type Topology struct {
	Name     string `yaml:"name"`
	Mgmt     Mgmt   `yaml:"mgmt"`
	Topology Body   `yaml:"topology"`
}

// Mgmt is the management network.
type Mgmt struct {
	Network    string `yaml:"network"`
	IPv4Subnet string `yaml:"ipv4-subnet"`
}

// Body holds the nodes (in plan order) and links.
type Body struct {
	Nodes NodeList `yaml:"nodes"`
	Links []Link   `yaml:"links"`
}

// Node is one containerlab node.
type Node struct {
	Name          string            `yaml:"-"`
	Kind          string            `yaml:"kind"`
	Image         string            `yaml:"image,omitempty"`
	Group         string            `yaml:"group,omitempty"`
	MgmtIPv4      string            `yaml:"mgmt-ipv4,omitempty"`
	StartupConfig string            `yaml:"startup-config,omitempty"`
	Cmd           string            `yaml:"cmd,omitempty"`
	Binds         []string          `yaml:"binds,omitempty"`
	Exec          []string          `yaml:"exec,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
}

// NodeList is the nodes in order; it encodes as a YAML mapping by name.
type NodeList []*Node

// MarshalYAML keeps the plan's order (switches plane by plane, then NICs).
func (l NodeList) MarshalYAML() (any, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, n := range l {
		var v yaml.Node
		if err := v.Encode(n); err != nil {
			return nil, err
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: n.Name}, &v)
	}
	return m, nil
}

// Endpoint is one end of a link.
type Endpoint struct {
	Node      string `yaml:"node"`
	Interface string `yaml:"interface"`
}

// Link is a link in containerlab's extended form.
type Link struct {
	Type          string     `yaml:"type"`
	Endpoints     []Endpoint `yaml:"endpoints,omitempty"`
	Endpoint      *Endpoint  `yaml:"endpoint,omitempty"`
	HostInterface string     `yaml:"host-interface,omitempty"`
	Remote        string     `yaml:"remote,omitempty"`
	VNI           int        `yaml:"vni,omitempty"`
	DstPort       int        `yaml:"dst-port,omitempty"`
}

// File is one file of an export.
type File struct {
	Name string
	Data []byte
}

// Export is what Build produces.
type Export struct {
	// Topologies are one per host (one without a split).
	Topologies []*Topology
	// Targets are the matching targets files (BMv2 nodes only).
	Targets  []*targets.File
	Files    []File
	Warnings []string
}

// SwitchInterface is the interface of BMv2 port n of a switch.
func SwitchInterface(port int) string { return "eth" + strconv.Itoa(port+1) }

// NICInterface is the interface of NIC port n (0: the host).
func NICInterface(port int) string {
	if port == plan.NICHostPort {
		return HostInterface
	}
	return "eth" + strconv.Itoa(port)
}

// Build exports build b.
func Build(b *artifacts.Build, opt Options) (*Export, error) {
	p, f := b.Plan, b.Fabric
	if opt.Image == "" {
		opt.Image = DefaultImage
	}
	if opt.SonicImage == "" {
		opt.SonicImage = DefaultSonicImage
	}
	if !opt.MgmtSubnet.IsValid() {
		opt.MgmtSubnet = netip.MustParsePrefix(DefaultMgmtSubnet)
	}
	if opt.VNIBase == 0 {
		opt.VNIBase = DefaultVNIBase
	}
	if opt.SonicDir == "" {
		opt.SonicDir = b.Dir
	}
	hosts := max(len(opt.Hosts), 1)
	if hosts > f.Planes {
		return nil, fmt.Errorf("clab: a lab of %d planes splits over at most %d hosts (one or more whole planes per host), not %d", f.Planes, f.Planes, hosts)
	}
	seen := map[netip.Addr]bool{}
	for _, a := range opt.Hosts {
		if !a.Is4() && !a.Is6() || seen[a] {
			return nil, fmt.Errorf("clab: host addresses must be distinct IP addresses, got %v", opt.Hosts)
		}
		seen[a] = true
	}
	if !validName(f.Name) {
		return nil, fmt.Errorf("clab: fabric name %q is not a containerlab lab name (letters, digits, - . _)", f.Name)
	}
	mgmt, err := newAllocator(opt.MgmtSubnet, f.Switches()+f.Hosts())
	if err != nil {
		return nil, err
	}
	ex := &Export{}
	switchJSON, nicJSON, warn := programs(b)
	if warn != "" {
		ex.Warnings = append(ex.Warnings, warn)
	}
	rel := func(path string) (string, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		out, err := filepath.Abs(opt.OutDir)
		if err != nil {
			return "", err
		}
		r, err := filepath.Rel(out, abs)
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(r, ".") {
			r = "./" + r
		}
		return r, nil
	}

	// Which host runs what: whole planes per host, NICs in equal blocks.
	hostOfPlane := func(pl int) int { return pl * hosts / f.Planes }
	hostOfNIC := func(h int) int { return h * hosts / f.Hosts() }
	name := func(k int) string {
		if hosts == 1 {
			return f.Name
		}
		return fmt.Sprintf("%s-host%d", f.Name, k)
	}
	for k := 0; k < hosts; k++ {
		ex.Topologies = append(ex.Topologies, &Topology{Name: name(k), Mgmt: Mgmt{Network: "mrcgen-" + name(k), IPv4Subnet: opt.MgmtSubnet.String()}})
		insecure := true
		ex.Targets = append(ex.Targets, &targets.File{Defaults: targets.Endpoint{Insecure: &insecure, ElectionID: 1}, Devices: map[string]targets.Endpoint{}})
	}
	hostOf := map[string]int{}
	var missingSonic []string
	addBMv2 := func(k int, n *Node, json string, ports []string) error {
		src, err := rel(json)
		if err != nil {
			return err
		}
		prog := programDir + "/" + filepath.Base(json)
		n.Kind, n.Image = "linux", opt.Image
		n.Binds = []string{src + ":" + prog + ":ro"}
		n.Cmd = "sleep infinity"
		n.Exec = []string{bmv2Exec(prog, ports, n.Labels["mrcgen.role"] != "nic")}
		ex.Targets[k].Devices[n.Name] = targets.Endpoint{Address: netip.AddrPortFrom(netip.MustParseAddr(n.MgmtIPv4), GRPCPort).String(),
			DeviceID: 1, ThriftPort: ThriftPort}
		return nil
	}
	for _, s := range p.Switches() {
		k := hostOfPlane(s.Plane)
		n := &Node{Name: p.Name(s), Group: fmt.Sprintf("plane-%d", s.Plane), MgmtIPv4: mgmt.next().String(),
			Labels: map[string]string{"mrcgen.role": s.Role.String(), "mrcgen.plane": strconv.Itoa(s.Plane), "graph-level": level(s.Role)}}
		if opt.Sonic {
			n.Kind, n.Image = "sonic-vs", opt.SonicImage
			cfg := filepath.Join(opt.SonicDir, "sonic", n.Name, "config_db.json")
			if !exists(cfg) {
				missingSonic = append(missingSonic, cfg)
			}
			if n.StartupConfig, err = rel(cfg); err != nil {
				return nil, err
			}
		} else {
			ports := make([]string, p.Ports(s))
			for i := range ports {
				ports[i] = strconv.Itoa(i) + "@" + SwitchInterface(i)
			}
			if err := addBMv2(k, n, filepath.Join(b.Dir, switchJSON), ports); err != nil {
				return nil, err
			}
		}
		ex.Topologies[k].Topology.Nodes = append(ex.Topologies[k].Topology.Nodes, n)
		hostOf[n.Name] = k
	}
	for h := 0; h < f.Hosts(); h++ {
		host := p.HostByIndex(h)
		k := hostOfNIC(h)
		n := &Node{Name: p.HostName(host), Group: "nics", MgmtIPv4: mgmt.next().String(),
			Labels: map[string]string{"mrcgen.role": "nic", "mrcgen.row": strconv.Itoa(host.Row), "mrcgen.port": strconv.Itoa(host.Port), "graph-level": "3"}}
		ports := []string{"0@" + HostInterface}
		for pl := 0; pl < f.Planes; pl++ {
			ports = append(ports, strconv.Itoa(plan.NICPlanePort(pl))+"@"+NICInterface(plan.NICPlanePort(pl)))
		}
		if err := addBMv2(k, n, filepath.Join(b.Dir, nicJSON), ports); err != nil {
			return nil, err
		}
		ex.Topologies[k].Topology.Nodes = append(ex.Topologies[k].Topology.Nodes, n)
		hostOf[n.Name] = k
		ex.Topologies[k].Topology.Links = append(ex.Topologies[k].Topology.Links, Link{Type: "host",
			Endpoint: &Endpoint{Node: n.Name, Interface: HostInterface}, HostInterface: hostVeth(n.Name)})
	}
	if len(missingSonic) > 0 {
		ex.Warnings = append(ex.Warnings, fmt.Sprintf("%d SONiC startup configs are not there yet (first: %s): run `mrcgen export sonic` into %s before `containerlab deploy`",
			len(missingSonic), missingSonic[0], opt.SonicDir))
	}

	// Links, as the plan wires them: every T0 port (its NIC links and its
	// links to the T1s: every link has exactly one T0 end).
	vni := opt.VNIBase
	for _, s := range p.Switches() {
		if s.Role != plan.RoleT0 {
			continue
		}
		for port := 0; port < p.Ports(s); port++ {
			nb, ok := p.Neighbor(s, port)
			if !ok {
				continue
			}
			a := Endpoint{Node: p.Name(s), Interface: SwitchInterface(port)}
			var z Endpoint
			if nb.Role == plan.RoleNIC {
				z = Endpoint{Node: p.HostName(p.HostByIndex(nb.Index)), Interface: NICInterface(nb.Port)}
			} else {
				z = Endpoint{Node: p.Name(nb.Switch()), Interface: SwitchInterface(nb.Port)}
			}
			ka, kz := hostOf[a.Node], hostOf[z.Node]
			if ka == kz {
				ex.Topologies[ka].Topology.Links = append(ex.Topologies[ka].Topology.Links, Link{Type: "veth", Endpoints: []Endpoint{a, z}})
				continue
			}
			if vni > 1<<24-1 {
				return nil, fmt.Errorf("clab: VNI %d is beyond 24 bits: give a smaller VNI base", vni)
			}
			for _, e := range [][2]Endpoint{{a, z}, {z, a}} {
				here, there := hostOf[e[0].Node], hostOf[e[1].Node]
				end := e[0]
				ex.Topologies[here].Topology.Links = append(ex.Topologies[here].Topology.Links, Link{Type: "vxlan-stitch",
					Endpoint: &end, Remote: opt.Hosts[there].String(), VNI: vni, DstPort: VXLANPort})
			}
			vni++
		}
	}
	for _, t := range ex.Topologies {
		if err := Check(t); err != nil {
			return nil, err
		}
	}
	for k, t := range ex.Topologies {
		data, err := Marshal(t)
		if err != nil {
			return nil, err
		}
		ex.Files = append(ex.Files, File{Name: t.Name + ".clab.yml", Data: data})
		var tb strings.Builder
		fmt.Fprintf(&tb, "# mrcgen push targets for containerlab topology %s.clab.yml: P4Runtime on every BMv2 node's\n", t.Name)
		fmt.Fprintf(&tb, "# management address (reachable from the host that runs it).\n")
		if err := ex.Targets[k].Write(&tb); err != nil {
			return nil, err
		}
		ex.Files = append(ex.Files, File{Name: t.Name + ".targets.yaml", Data: []byte(tb.String())})
	}
	return ex, nil
}

// programs returns the build's BMv2 JSON paths, relative to the build, and
// a warning when the build is not compiled yet.
func programs(b *artifacts.Build) (switchJSON, nicJSON, warn string) {
	get := func(key string) string {
		pr := b.Manifest.Programs[key]
		if pr.BMv2JSON != "" {
			return pr.BMv2JSON
		}
		warn = fmt.Sprintf("build %s is not compiled: run `mrcgen compile --build %s` before `containerlab deploy` (the nodes load %s)", b.Dir, b.Dir, strings.TrimSuffix(pr.P4, ".p4")+".json")
		return strings.TrimSuffix(pr.P4, ".p4") + ".json"
	}
	return get(artifacts.ProgramSwitch), get(artifacts.ProgramNIC), warn
}

// bmv2Exec is the command that starts simple_switch_grpc in a node, once
// its data interfaces are there (containerlab adds them after the
// container starts).
func bmv2Exec(prog string, ports []string, isSwitch bool) string {
	var wait, args []string
	for _, pt := range ports {
		_, ifc, _ := strings.Cut(pt, "@")
		wait = append(wait, "/sys/class/net/"+ifc)
		args = append(args, "-i "+pt)
	}
	opts := fmt.Sprintf("--grpc-server-addr 0.0.0.0:%d", GRPCPort)
	if isSwitch {
		opts += " --priority-queues 2" // trimmed headers and control packets take the high queue
	}
	return fmt.Sprintf("sh -c 'for i in $(seq 300); do ok=1; for f in %s; do [ -e $f ] || ok=; done; [ -n \"$ok\" ] && break; sleep 0.1; done; "+
		"nohup simple_switch_grpc --device-id 1 --thrift-port %d %s --log-file /tmp/bmv2 --log-flush %s -- %s >/tmp/bmv2.out 2>&1 &'",
		strings.Join(wait, " "), ThriftPort, strings.Join(args, " "), prog, opts)
}

func level(r plan.Role) string {
	if r == plan.RoleT1 {
		return "1"
	}
	return "2"
}

// hostVeth is the host side of a NIC's host port: at most 15 characters.
func hostVeth(nic string) string {
	v := "h" + nic
	if len(v) > 15 {
		v = v[:15]
	}
	return v
}

// Marshal renders a topology as YAML.
func Marshal(t *Topology) ([]byte, error) {
	var b strings.Builder
	b.WriteString("# containerlab topology written by `mrcgen export clab`: do not edit, re-export.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// Kinds are the node kinds an export uses.
var Kinds = map[string]bool{"linux": true, "sonic-vs": true}

// Check is the semantic check the JSON Schema cannot make: every link end
// names a node of the topology and an interface used once, node kinds are
// ours, management addresses are distinct and inside the subnet, VXLAN
// links are well formed.
func Check(t *Topology) error {
	var errs []error
	nodes := map[string]*Node{}
	subnet, err := netip.ParsePrefix(t.Mgmt.IPv4Subnet)
	if err != nil {
		errs = append(errs, fmt.Errorf("mgmt ipv4-subnet %q: %w", t.Mgmt.IPv4Subnet, err))
	}
	ips := map[string]string{}
	for _, n := range t.Topology.Nodes {
		if nodes[n.Name] != nil {
			errs = append(errs, fmt.Errorf("node %s: defined twice", n.Name))
		}
		nodes[n.Name] = n
		if !Kinds[n.Kind] {
			errs = append(errs, fmt.Errorf("node %s: kind %q is not one mrcgen exports (linux, sonic-vs)", n.Name, n.Kind))
		}
		if n.MgmtIPv4 != "" {
			a, err := netip.ParseAddr(n.MgmtIPv4)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("node %s: mgmt-ipv4 %q: %w", n.Name, n.MgmtIPv4, err))
			case subnet.IsValid() && !subnet.Contains(a):
				errs = append(errs, fmt.Errorf("node %s: mgmt-ipv4 %s is outside %s", n.Name, a, subnet))
			case ips[n.MgmtIPv4] != "":
				errs = append(errs, fmt.Errorf("node %s: mgmt-ipv4 %s is also %s's", n.Name, a, ips[n.MgmtIPv4]))
			}
			ips[n.MgmtIPv4] = n.Name
		}
	}
	used := map[Endpoint]int{}
	end := func(i int, e Endpoint) {
		if nodes[e.Node] == nil {
			errs = append(errs, fmt.Errorf("link %d: endpoint %s:%s: no node %q in the topology", i, e.Node, e.Interface, e.Node))
		}
		if e.Interface == "" {
			errs = append(errs, fmt.Errorf("link %d: endpoint %s: no interface", i, e.Node))
		}
		if j, dup := used[e]; dup {
			errs = append(errs, fmt.Errorf("link %d: %s:%s is already used by link %d", i, e.Node, e.Interface, j))
		}
		used[e] = i
	}
	vnis := map[int]int{}
	for i, l := range t.Topology.Links {
		switch l.Type {
		case "veth":
			if len(l.Endpoints) != 2 {
				errs = append(errs, fmt.Errorf("link %d: a veth has 2 endpoints, not %d", i, len(l.Endpoints)))
			}
			for _, e := range l.Endpoints {
				end(i, e)
			}
		case "host", "vxlan-stitch":
			if l.Endpoint == nil {
				errs = append(errs, fmt.Errorf("link %d: %s link without endpoint", i, l.Type))
				continue
			}
			end(i, *l.Endpoint)
			if l.Type == "vxlan-stitch" {
				if _, err := netip.ParseAddr(l.Remote); err != nil {
					errs = append(errs, fmt.Errorf("link %d: remote %q: %w", i, l.Remote, err))
				}
				if l.VNI < 1 || l.VNI > 1<<24-1 {
					errs = append(errs, fmt.Errorf("link %d: VNI %d outside 1..16777215", i, l.VNI))
				}
				if j, dup := vnis[l.VNI]; dup {
					errs = append(errs, fmt.Errorf("link %d: VNI %d is also link %d's", i, l.VNI, j))
				}
				vnis[l.VNI] = i
			}
		default:
			errs = append(errs, fmt.Errorf("link %d: type %q is not one mrcgen exports", i, l.Type))
		}
	}
	if len(errs) > 8 {
		errs = append(errs[:8], fmt.Errorf("and %d more problems", len(errs)-8))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clab topology %s: %w", t.Name, err)
	}
	return nil
}

type allocator struct{ next_ netip.Addr }

func newAllocator(subnet netip.Prefix, n int) (*allocator, error) {
	if !subnet.Addr().Is4() {
		return nil, fmt.Errorf("clab: management subnet %s is not IPv4", subnet)
	}
	subnet = subnet.Masked()
	size := uint64(1) << (32 - subnet.Bits())
	// network, gateway (first address, containerlab's default) and broadcast
	// are not nodes'.
	if size < 3 || uint64(n) > size-3 {
		need := 30
		for need > 0 && uint64(1)<<(32-need)-3 < uint64(n) {
			need--
		}
		return nil, fmt.Errorf("clab: management subnet %s holds %d nodes, the fabric has %d: give --mgmt-subnet a /%d or larger", subnet, max(int64(size)-3, 0), n, need)
	}
	a := subnet.Addr().Next().Next()
	return &allocator{next_: a}, nil
}

func (a *allocator) next() netip.Addr {
	v := a.next_
	a.next_ = v.Next()
	return v
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && strings.ContainsRune("-._", c)
		if !ok {
			return false
		}
	}
	return true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
