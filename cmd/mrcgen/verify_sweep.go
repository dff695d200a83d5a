package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
)

// sweepOptions are verify's --sweep flags.
type sweepOptions struct {
	what   string // "links"
	sample int
	seed   uint64
	double bool
}

// sweepResult is verify --sweep's --output json.
type sweepResult struct {
	Fabric string `json:"fabric"`
	From   string `json:"from"`
	*verify.SweepReport
	BaselineSeconds float64 `json:"baseline_seconds"`
	Seconds         float64 `json:"seconds"`
	// MicrosecondsPerWhatIf is the core time of one what-if.
	MicrosecondsPerWhatIf float64 `json:"core_microseconds_per_what_if"`
}

func runSweep(ctx context.Context, io streams, p *plan.Plan, src verify.Source, from string, o sweepOptions) error {
	if o.what != "links" {
		return fmt.Errorf("--sweep %q: only links can be swept", o.what)
	}
	if o.double && o.sample <= 0 {
		return fmt.Errorf("--sweep links --double needs --sample N")
	}
	start := time.Now()
	sw, err := verify.NewSweeper(ctx, p, src)
	if err != nil {
		return fmt.Errorf("verify %s: %w", p.F.Name, err)
	}
	baseline := time.Since(start)
	bar := newProgressBar(io.errOut, "what-ifs")
	rep, err := sw.Sweep(ctx, verify.SweepOptions{Sample: o.sample, Seed: o.seed, Double: o.double, Progress: bar.update})
	if err != nil {
		return fmt.Errorf("verify %s: %w", p.F.Name, err)
	}
	took := time.Since(start)
	res := &sweepResult{Fabric: p.F.Name, From: from, SweepReport: rep, BaselineSeconds: baseline.Seconds(), Seconds: took.Seconds()}
	if rep.WhatIfs > 0 {
		res.MicrosecondsPerWhatIf = rep.CoreSeconds / float64(rep.WhatIfs) * 1e6
	}
	if io.json() {
		return writeJSON(io.out, res)
	}
	printSweep(io, p, res)
	return nil
}

func pct(v float64) string { return fmt.Sprintf("%.4g%%", 100*v) }

func printSweep(io streams, p *plan.Plan, r *sweepResult) {
	f := p.F
	kind, which := "single-link", "every link"
	if r.Double {
		kind = "double-link"
	}
	if r.Sampled {
		which = fmt.Sprintf("a sample, seed %d", r.Seed)
	}
	fmt.Fprintf(io.out, "swept fabric %q from %s: %s %s what-ifs of %s links (%s) in %.2fs (baseline walk %.2fs; %.1f µs of one core per what-if)\n",
		f.Name, r.From, verify.Thousands(uint64(r.WhatIfs)), kind, verify.Thousands(uint64(r.Links)), which, r.Seconds, r.BaselineSeconds, r.MicrosecondsPerWhatIf)
	fmt.Fprintf(io.out, "a host sends %s paths: %d planes x %s\n\n", verify.Thousands(r.HostPaths), f.Planes, verify.Thousands(r.PlanePaths))
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLASS\tWHAT-IFS\tLOST PATHS (mean)\tHOSTS AFFECTED (mean)\tHOST PAIRS (mean)\tPATHS LOST BY ONE PAIR (max)\tBASE EV SLOTS LOST (mean)\tWORST HOST: OF ITS PLANE / OF ALL (mean)")
	for _, c := range r.Classes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.0f\t%.3g\t%s / %s\n", c.Class, verify.Thousands(uint64(c.WhatIfs)), verify.Thousands(uint64(c.LostPaths.Mean)),
			verify.Thousands(uint64(c.Hosts.Mean)), verify.Thousands(uint64(c.HostPairs.Mean)), c.MaxPairPaths.Max, c.EVSlots.Mean, pct(c.MaxPlaneShare.Mean), pct(c.MaxHostShare.Mean))
	}
	tw.Flush()
	for _, c := range r.Classes {
		fmt.Fprintf(io.out, "\ncapacity lost per affected host, %s (every what-if x every host that loses a path):\n", c.Class)
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  SHARE OF ITS PATHS\tHOSTS\t")
		for _, b := range c.Shares {
			what := fmt.Sprintf("(%s, %s]", pct(b.Lo), pct(b.Hi))
			if b.Share > 0 {
				what = fmt.Sprintf("%s (1/%.0f)", pct(b.Share), 1/b.Share)
			}
			fmt.Fprintf(tw, "  %s\t%s\t\n", what, verify.Thousands(b.Hosts))
		}
		tw.Flush()
		if c.Class == verify.ClassT0T1 {
			fmt.Fprintf(io.out, "  a failed T0-T1 link costs the worst-hit host %s of its capacity in the link's plane (%s of all its paths)\n",
				pct(c.MaxPlaneShare.Mean), pct(c.MaxHostShare.Mean))
		}
	}
}
