package main

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/clab"
)

func newExportClabCommand(io streams) *cobra.Command {
	var build, out, subnet, hosts string
	var opt clab.Options
	cmd := &cobra.Command{
		Use:   "clab",
		Short: "Write a containerlab topology (and push targets) for a build",
		Long: `clab writes <fabric>.clab.yml, a containerlab topology of the build: one node per switch
and per NIC, wired exactly as the address plan wires them. Every node is kind linux in the
p4lang/behavioral-model image running simple_switch_grpc with the build's compiled
program (bound read-only from the build), P4Runtime on port 9559 and thrift on 9090 of
its management address; BMv2 port N of a switch is interface eth(N+1), NIC port p+1
(plane p) is eth(p+1) and the NIC's host port 0 is host0, a veth to the containerlab host
(interface h<nic>). Run "mrcgen compile --build DIR" first.

Beside it, <fabric>.targets.yaml addresses every BMv2 node by its management address
(deterministic, from --mgmt-subnet; the gateway takes the first address):

  mrcgen export clab --build build/tiny
  sudo containerlab deploy -t build/tiny/tiny.clab.yml
  mrcgen push --build build/tiny --targets build/tiny/tiny.targets.yaml

--sonic makes the switches kind sonic-vs, booting from <sonic-dir>/sonic/<switch>/
config_db.json as written by "mrcgen export sonic" (the NICs stay BMv2).

--split-hosts A,B,... splits the lab over those hosts (their underlay addresses): whole
planes per host, NICs in equal blocks, one <fabric>-hostK.clab.yml and targets file per
host, and every link between hosts a pair of vxlan-stitch links (VNI from --vni-base,
UDP 4789). Deploy each file on its host.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := artifacts.Open(build)
			if err != nil {
				return fmt.Errorf("%w (run `mrcgen build` first)", err)
			}
			if out == "" {
				out = build
			}
			opt.OutDir = out
			if opt.MgmtSubnet, err = netip.ParsePrefix(subnet); err != nil {
				return fmt.Errorf("--mgmt-subnet %q: want an IPv4 prefix like %s", subnet, clab.DefaultMgmtSubnet)
			}
			if hosts != "" {
				for _, h := range strings.Split(hosts, ",") {
					a, err := netip.ParseAddr(strings.TrimSpace(h))
					if err != nil {
						return fmt.Errorf("--split-hosts %q: %q is not an IP address", hosts, h)
					}
					opt.Hosts = append(opt.Hosts, a)
				}
			}
			ex, err := clab.Build(b, opt)
			if err != nil {
				return err
			}
			files := map[string][]byte{}
			for _, f := range ex.Files {
				files[filepath.Join(out, f.Name)] = f.Data
			}
			if err := replaceFiles(files); err != nil {
				return fmt.Errorf("export clab: %w", err)
			}
			for _, w := range ex.Warnings {
				fmt.Fprintf(io.errOut, "warning: %s\n", w)
			}
			if io.json() {
				type written struct {
					Topology string `json:"topology"`
					Targets  string `json:"targets"`
					Nodes    int    `json:"nodes"`
					Links    int    `json:"links"`
				}
				res := struct {
					Topologies []written `json:"topologies"`
					Warnings   []string  `json:"warnings"`
				}{Topologies: []written{}, Warnings: append([]string{}, ex.Warnings...)}
				for i, t := range ex.Topologies {
					res.Topologies = append(res.Topologies, written{filepath.Join(out, ex.Files[2*i].Name),
						filepath.Join(out, ex.Files[2*i+1].Name), len(t.Topology.Nodes), len(t.Topology.Links)})
				}
				return writeJSON(io.out, res)
			}
			for i, t := range ex.Topologies {
				fmt.Fprintf(io.out, "wrote %s (%d nodes, %d links) and %s\n", filepath.Join(out, ex.Files[2*i].Name),
					len(t.Topology.Nodes), len(t.Topology.Links), filepath.Join(out, ex.Files[2*i+1].Name))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&build, "build", "build/tiny", "build directory")
	cmd.Flags().StringVar(&out, "out", "", "directory for the topology and targets (default: the build directory)")
	cmd.Flags().StringVar(&opt.Image, "image", clab.DefaultImage, "container image of the BMv2 nodes")
	cmd.Flags().StringVar(&subnet, "mgmt-subnet", clab.DefaultMgmtSubnet, "IPv4 management subnet of the lab")
	cmd.Flags().BoolVar(&opt.Sonic, "sonic", false, "run the switches as sonic-vs nodes with mrcgen export sonic's CONFIG_DB")
	cmd.Flags().StringVar(&opt.SonicImage, "sonic-image", clab.DefaultSonicImage, "container image of the sonic-vs nodes")
	cmd.Flags().StringVar(&opt.SonicDir, "sonic-dir", "", "directory holding sonic/<switch>/config_db.json (default: the build directory)")
	cmd.Flags().StringVar(&hosts, "split-hosts", "", "split the lab over these hosts' underlay addresses (comma-separated), linked by VXLAN")
	cmd.Flags().IntVar(&opt.VNIBase, "vni-base", clab.DefaultVNIBase, "first VXLAN VNI of a split lab")
	return cmd
}
