package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/sonic"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

type verifyOptions struct {
	fabric fabricOptions
	build  string
	sonic  string
	fail   []string
	sweep  sweepOptions
}

func newVerifyCommand(io streams) *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Prove that every path of the fabric delivers, by walking the emitted tables",
		Long: `verify walks every path of the fabric through the emitted table entries, applying only
what a switch does (uN shift, exact /48 lookup), from every source NIC port, for every
plane, T1, destination T0 and destination port, with the outer destination built from the
NIC's own tables. Every path must reach the right NIC port, within 3 switch hops, in its
plane. The walk is exhaustive (paths sharing a (switch, uSID) state share its outcome) and
never sampled: on mrc-131k, 35,115,919,998,976 paths. It also checks the NICs' EV set:
every slot once, plane and T1 in range, salt = slot, equal EVs per plane, the EVs of a
plane spread evenly over its T1s.

What the proof assumes (the model it walks), and nothing more:
  - a switch: if block|active uSID is in my_usid, shift the uSIDs left by 16 bits (uN,
    zeros fill in); then look block|active uSID up, exactly, in usid_route (a /48) and
    send it out of that port (forward_to_host only towards a NIC); no entry drops it.
    A path counts only if delivered within 3 switches (the IPv6 hop limit field itself
    is not modelled: a path that long never nears it).
  - a NIC: the outer destination is its own T0 uN (plane_self), the EV's T1, the
    destination row's T0 and its down port uDL, from the common templates (own T0 and
    uDL alone on the same T0); it accepts only block|its own uDL (rx_plane), nothing after.
  - the wiring of the fabric description; every link up except those --fail takes down.
It does NOT model: queues, congestion, ECN or trimming; packet contents other than the
outer destination; the P4 programs' code beyond those table semantics (a P4 bug is not
found here: the BMv2 tests run the programs); the EV state machine (SKIP, ASSUMED_BAD,
probes), a QP's T1 offset and EV rotation; tables written at run time (qp_send, qp_recv,
ev_state); whether the devices hold what the build says (push reads them back).

With --build DIR it reads the files of a build directory (each checked against the
manifest's sha256); with --sonic DIR the switch tables of a SONiC export (SRV6_MY_SIDS,
STATIC_ROUTE; NIC tables generated); otherwise it generates the tables of --fabric/--preset in memory,
exactly as build would write them. A failure names the device, file, table and key of the
entry that is missing or wrong, and the paths (source T0 -> destination T0 via T1) that
need it.

--fail takes links down first (SWITCH:NEIGHBOUR, e.g. p0-t0-0:p0-t1-1, or SWITCH/PORT)
and shows which host pairs lose which EVs.

--sweep links takes every link down in turn (--sample N: N random links, --seed;
--double: pairs of links) and sums up, per class of link (T0-T1, host), what each
failure costs: paths, hosts and host pairs affected, base EV slots lost, and the
distribution of the share of its paths each affected host loses. Each what-if is
computed from one walk with every link up (the paths crossing the link), not assumed
from the fabric's symmetry; the fabric must verify first.

With --output json it prints the result (OK or failed), the counts, every failure and
every lost path class with its EV slots.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p *plan.Plan
			var src verify.Source
			from := "generated tables"
			var sonicExport *sonic.Export
			var build *artifacts.Build
			if o.sonic != "" {
				e, err := openSonicForVerify(o)
				if err != nil {
					return err
				}
				sonicExport, p, src, from = e, e.Plan, e, "SONiC export "+o.sonic
			} else if o.build != "" {
				if o.fabric.file != "" || o.fabric.preset != "" {
					return fmt.Errorf("give --build or --fabric/--preset, not both")
				}
				b, err := artifacts.Open(o.build)
				if err != nil {
					return err
				}
				build, p, src, from = b, b.Plan, b, "build "+o.build
			} else {
				f, err := o.fabric.load()
				if err != nil {
					return err
				}
				p = plan.New(f)
				src = verify.GeneratorSource{G: tables.NewGenerator(p)}
			}
			if o.sweep.what != "" {
				if build != nil {
					// Files that are the bytes this mrcgen generates are
					// proven through the generator; others entry by entry.
					bsrc, _, err := build.VerifySource(cmd.Context())
					if err != nil {
						return err
					}
					src = bsrc
				}
				return runSweep(cmd.Context(), io, p, src, from, o.sweep)
			}
			var down []verify.Link
			for _, spec := range o.fail {
				l, err := parseLink(p, spec)
				if err != nil {
					return err
				}
				down = append(down, l)
			}
			start := time.Now()
			bar := newProgressBar(io.errOut, "walking planes")
			opt := verify.Options{Down: down, Progress: bar.update}
			var rep *verify.Report
			var err error
			if build != nil {
				// Through the generator while the files are compared with
				// its bytes; entry by entry if they differ.
				rep, _, err = build.Verify(cmd.Context(), opt)
			} else {
				rep, err = verify.Run(cmd.Context(), p, src, opt)
			}
			if err != nil {
				return fmt.Errorf("verify %s: %w", p.F.Name, err)
			}
			took := time.Since(start)
			if io.json() {
				if err := writeJSON(io.out, verifyJSON(p, rep, from, took, o.fail)); err != nil {
					return err
				}
			} else {
				printVerifyReport(io, p, rep, from, took, len(down) > 0)
			}
			if len(down) == 0 && !rep.OK() {
				printSonicBlame(io, sonicExport)
				if rep.Delivered == rep.Paths {
					n := fmt.Sprintf("%d problems", len(rep.Failures))
					if len(rep.Failures) == 1 {
						n = "1 problem"
					}
					return fmt.Errorf("verify %s: every path delivered, but %s found", p.F.Name, n)
				}
				return fmt.Errorf("verify %s: %d of %d paths not delivered", p.F.Name, rep.Paths-rep.Delivered, rep.Paths)
			}
			return nil
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.build, "build", "", "verify the files of this build directory")
	cmd.Flags().StringVar(&o.sonic, "sonic", "", "verify the switch tables of this SONiC export (mrcgen export sonic): SRV6_MY_SIDS and STATIC_ROUTE")
	cmd.Flags().StringArrayVar(&o.fail, "fail", nil, "take a link down first: SWITCH:NEIGHBOUR or SWITCH/PORT (repeatable)")
	cmd.Flags().StringVar(&o.sweep.what, "sweep", "", "links: take each link down in turn and sum up what each failure costs")
	cmd.Flags().IntVar(&o.sweep.sample, "sample", 0, "with --sweep: that many random links (or pairs with --double) instead of every link")
	cmd.Flags().Uint64Var(&o.sweep.seed, "seed", 1, "with --sweep --sample: the random seed")
	cmd.Flags().BoolVar(&o.sweep.double, "double", false, "with --sweep --sample: take two links down at once")
	cmd.MarkFlagsMutuallyExclusive("sweep", "fail")
	return cmd
}

// parseLink reads "p0-t0-0:p0-t1-1" (a link by its two switches) or
// "p0-t0-0/2" (a switch port).
func parseLink(p *plan.Plan, spec string) (verify.Link, error) {
	if a, b, ok := strings.Cut(spec, ":"); ok {
		sa, okA := p.SwitchByName(a)
		sb, okB := p.SwitchByName(b)
		if !okA || !okB {
			return verify.Link{}, fmt.Errorf("--fail %q: no such switch in fabric %s", spec, p.F.Name)
		}
		for port := 0; port < p.Ports(sa); port++ {
			if nb, ok := p.Neighbor(sa, port); ok && nb.Role != plan.RoleNIC && nb.Switch() == sb {
				return verify.Link{Switch: sa, Port: port}, nil
			}
		}
		return verify.Link{}, fmt.Errorf("--fail %q: %s and %s are not linked", spec, a, b)
	}
	if name, port, ok := strings.Cut(spec, "/"); ok {
		s, okS := p.SwitchByName(name)
		n, err := strconv.Atoi(port)
		if !okS || err != nil {
			return verify.Link{}, fmt.Errorf("--fail %q: want SWITCH/PORT with a switch of fabric %s", spec, p.F.Name)
		}
		if _, ok := p.Neighbor(s, n); !ok {
			return verify.Link{}, fmt.Errorf("--fail %q: port %d of %s is not wired", spec, n, name)
		}
		return verify.Link{Switch: s, Port: n}, nil
	}
	return verify.Link{}, fmt.Errorf("--fail %q: want SWITCH:NEIGHBOUR (p0-t0-0:p0-t1-1) or SWITCH/PORT (p0-t0-0/2)", spec)
}

func printVerifyReport(io streams, p *plan.Plan, rep *verify.Report, from string, took time.Duration, failMode bool) {
	f := p.F
	fmt.Fprintf(io.out, "verified fabric %q from %s in %.2fs\n", f.Name, from, took.Seconds())
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  paths\t%s\t(%d hosts x %d planes: one path per T1 between hosts on different T0s, one on the same T0)\n",
		verify.Thousands(rep.Paths), f.Hosts(), f.Planes)
	fmt.Fprintf(tw, "  delivered\t%s\t\n", verify.Thousands(rep.Delivered))
	fmt.Fprintf(tw, "  states walked\t%s\t(distinct switch, uSID level, uSID; every path goes through them)\n", verify.Thousands(uint64(rep.States)))
	fmt.Fprintf(tw, "  longest path\t%d switches\t\n", rep.MaxHopsSeen)
	tw.Flush()
	if len(rep.Lost) > 0 {
		// The EV set as read from the tables (nil when it is broken: the
		// failures say how).
		evs := rep.EVSet
		fmt.Fprintf(io.out, "\nlost paths (%d classes):\n", len(rep.Lost))
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PLANE\tT1\tSRC T0\tDST T0\tHOST PAIRS\tBASE EV SLOTS LOST\tREASON")
		shown := 0
		for _, l := range rep.Lost {
			if shown == 40 {
				fmt.Fprintf(tw, "  ... %d more classes\n", len(rep.Lost)-shown)
				break
			}
			shown++
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Plane, orAll(l.T1), p.Name(plan.Switch{Role: plan.RoleT0, Plane: l.Plane, Index: l.SrcRow}),
				dstName(p, l), verify.Thousands(l.Pairs), lostSlots(p, evs, l), l.Reason)
		}
		tw.Flush()
		if failMode {
			fmt.Fprintln(io.out, "\nA sender keeps these paths' EVs ASSUMED_BAD; every other EV of the set keeps carrying traffic.")
			fmt.Fprintln(io.out, "Base EV slots shown for a QP with T1 offset 0; a QP with offset o loses the slots whose T1 + o is the failed T1.")
			fmt.Fprintln(io.out, verify.Summarize(p, rep).Line(p))
		}
	}
	for _, f := range rep.Failures {
		if !failMode {
			fmt.Fprintf(io.errOut, "FAIL: %s\n", f)
		}
	}
	if rep.OK() {
		fmt.Fprintln(io.out, "OK: every path delivered")
	}
}

func dstName(p *plan.Plan, l verify.Lost) string {
	if l.DstRow < 0 {
		return "all"
	}
	return p.Name(plan.Switch{Role: plan.RoleT0, Plane: l.Plane, Index: l.DstRow})
}

func orAll(v int) string {
	if v < 0 {
		return "all"
	}
	return strconv.Itoa(v)
}

// lostSlotNumbers are the base EV set's slots whose EV crosses the lost
// class's plane and T1.
func lostSlotNumbers(p *plan.Plan, evs []plan.EV, l verify.Lost) []int {
	slots := []int{}
	for i, ev := range evs {
		fl := p.SplitEV(ev)
		if fl.Plane == l.Plane && (l.T1 < 0 || fl.T1 == l.T1) {
			slots = append(slots, i)
		}
	}
	return slots
}

// lostSlots lists lostSlotNumbers for people.
func lostSlots(p *plan.Plan, evs []plan.EV, l verify.Lost) string {
	var slots []string
	for _, i := range lostSlotNumbers(p, evs, l) {
		slots = append(slots, strconv.Itoa(i))
	}
	if len(slots) > 8 {
		return fmt.Sprintf("%s ... (%d)", strings.Join(slots[:8], ","), len(slots))
	}
	if evs == nil {
		return "(EV set broken)"
	}
	if len(slots) == 0 {
		return "none"
	}
	return strings.Join(slots, ",")
}

// verifyResult is verify's --output json.
type verifyResult struct {
	Fabric string `json:"fabric"`
	// From is "generated tables" or "build DIR".
	From string `json:"from"`
	// Result is "OK" when every path delivered and nothing failed, else
	// "failed".
	Result      string           `json:"result"`
	LinksDown   []string         `json:"links_down,omitempty"`
	Paths       uint64           `json:"paths"`
	Delivered   uint64           `json:"delivered"`
	States      int              `json:"states"`
	LongestPath int              `json:"longest_path_switches"`
	Seconds     float64          `json:"seconds"`
	Failures    []verify.Failure `json:"failures"`
	Lost        []lostJSON       `json:"lost"`
}

// lostJSON is one lost path class: every host on SrcT0 to the hosts of
// DstT0 (null: every T0) over T1 (null: every T1, or the same T0).
type lostJSON struct {
	Plane     int     `json:"plane"`
	T1        *string `json:"t1"`
	SrcT0     string  `json:"src_t0"`
	DstT0     *string `json:"dst_t0"`
	HostPairs uint64  `json:"host_pairs"`
	// EVSlots are the slots of the base EV set (T1 offset 0) whose paths
	// are lost; null when the EV set itself is broken.
	EVSlots []int  `json:"ev_slots"`
	Reason  string `json:"reason"`
}

func verifyJSON(p *plan.Plan, rep *verify.Report, from string, took time.Duration, fail []string) *verifyResult {
	out := &verifyResult{Fabric: p.F.Name, From: from, Result: "OK", LinksDown: fail, Paths: rep.Paths, Delivered: rep.Delivered,
		States: rep.States, LongestPath: rep.MaxHopsSeen, Seconds: took.Seconds(), Failures: rep.Failures, Lost: []lostJSON{}}
	if !rep.OK() {
		out.Result = "failed"
	}
	if out.Failures == nil {
		out.Failures = []verify.Failure{}
	}
	for _, l := range rep.Lost {
		j := lostJSON{Plane: l.Plane, SrcT0: p.Name(plan.Switch{Role: plan.RoleT0, Plane: l.Plane, Index: l.SrcRow}), HostPairs: l.Pairs, Reason: l.Reason}
		if l.T1 >= 0 {
			t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: l.Plane, Index: l.T1})
			j.T1 = &t1
		}
		if l.DstRow >= 0 {
			dst := p.Name(plan.Switch{Role: plan.RoleT0, Plane: l.Plane, Index: l.DstRow})
			j.DstT0 = &dst
		}
		if rep.EVSet != nil {
			j.EVSlots = lostSlotNumbers(p, rep.EVSet, l)
		}
		out.Lost = append(out.Lost, j)
	}
	return out
}
