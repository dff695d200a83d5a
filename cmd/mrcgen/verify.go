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
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

type verifyOptions struct {
	fabric fabricOptions
	build  string
	fail   []string
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
never sampled.

With --build DIR it reads the files of a build directory; otherwise it generates the
tables of --fabric/--preset in memory, exactly as build would write them.

--fail takes links down first (SWITCH:NEIGHBOUR, e.g. p0-t0-0:p0-t1-1, or SWITCH/PORT)
and shows which host pairs lose which EVs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p *plan.Plan
			var src verify.Source
			from := "generated tables"
			if o.build != "" {
				if o.fabric.file != "" || o.fabric.preset != "" {
					return fmt.Errorf("give --build or --fabric/--preset, not both")
				}
				b, err := artifacts.Open(o.build)
				if err != nil {
					return err
				}
				p, src, from = b.Plan, b, "build "+o.build
			} else {
				f, err := o.fabric.load()
				if err != nil {
					return err
				}
				p = plan.New(f)
				src = verify.GeneratorSource{G: tables.NewGenerator(p)}
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
			rep, err := verify.Run(cmd.Context(), p, src, verify.Options{Down: down, Progress: bar.update})
			if err != nil {
				return fmt.Errorf("verify %s: %w", p.F.Name, err)
			}
			printVerifyReport(io, p, rep, from, time.Since(start), len(down) > 0)
			if len(down) == 0 && !rep.OK() {
				return fmt.Errorf("verify %s: %d of %d paths not delivered", p.F.Name, rep.Paths-rep.Delivered, rep.Paths)
			}
			return nil
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.build, "build", "", "verify the files of this build directory")
	cmd.Flags().StringArrayVar(&o.fail, "fail", nil, "take a link down first: SWITCH:NEIGHBOUR or SWITCH/PORT (repeatable)")
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
		group(rep.Paths), f.Hosts(), f.Planes)
	fmt.Fprintf(tw, "  delivered\t%s\t\n", group(rep.Delivered))
	fmt.Fprintf(tw, "  states walked\t%s\t(distinct switch, uSID level, uSID; every path goes through them)\n", group(uint64(rep.States)))
	fmt.Fprintf(tw, "  longest path\t%d switches\t\n", rep.MaxHopsSeen)
	tw.Flush()
	if len(rep.Lost) > 0 {
		evs := p.EVSet()
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
				dstName(p, l), group(l.Pairs), lostSlots(p, evs, l), l.Reason)
		}
		tw.Flush()
		if failMode {
			fmt.Fprintln(io.out, "\nA sender keeps these paths' EVs ASSUMED_BAD; every other EV of the set keeps carrying traffic.")
			fmt.Fprintln(io.out, "Base EV slots shown for a QP with T1 offset 0; a QP with offset o loses the slots whose T1 + o is the failed T1.")
			fmt.Fprintln(io.out, verify.Summarize(p, rep).Line(p))
		}
	}
	for _, msg := range rep.Failures {
		if !failMode {
			fmt.Fprintf(io.errOut, "FAIL: %s\n", msg)
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

// lostSlots lists the base EV set's slots whose EV crosses the lost class's
// plane and T1.
func lostSlots(p *plan.Plan, evs []plan.EV, l verify.Lost) string {
	var slots []string
	for i, ev := range evs {
		fl := p.SplitEV(ev)
		if fl.Plane == l.Plane && (l.T1 < 0 || fl.T1 == l.T1) {
			slots = append(slots, strconv.Itoa(i))
		}
	}
	if len(slots) > 8 {
		return fmt.Sprintf("%s ... (%d)", strings.Join(slots[:8], ","), len(slots))
	}
	if len(slots) == 0 {
		return "none"
	}
	return strings.Join(slots, ",")
}

// group prints n with thousands separators.
func group(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
