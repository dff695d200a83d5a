package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/draw"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

type drawOptions struct {
	fabric  fabricOptions
	build   string
	fail    []string
	out     string
	summary bool
	full    bool
}

func newDrawCommand(io streams) *cobra.Command {
	var o drawOptions
	cmd := &cobra.Command{
		Use:   "draw",
		Short: "Draw the fabric as SVG, with the cost of failed links",
		Long: `draw writes an SVG picture of the fabric: its planes side by side, in each the T1s over
the T0s over the NIC ports. tiny and small are drawn device by device; a fabric of more
than 128 switches (mrc-131k) is summarised per plane (a strip per tier with its count,
link bundles with theirs), so that it stays readable.

--fail takes links down (as verify --fail: SWITCH:NEIGHBOUR or SWITCH/PORT, repeatable):
the picture then marks the failed links, the (plane, T1) paths lost and the links that
carried them, the hosts that lose paths, and lists the host pairs affected with the
share of their paths (and so of their capacity) lost, from verify's analysis.

  mrcgen draw --preset tiny --fail p0-t0-0:p0-t1-1 --out docs/img/tiny-fail.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.summary && o.full {
				return fmt.Errorf("give --summary or --full, not both")
			}
			var p *plan.Plan
			var src verify.Source
			if o.build != "" {
				if o.fabric.file != "" || o.fabric.preset != "" {
					return fmt.Errorf("give --build or --fabric/--preset, not both")
				}
				b, err := artifacts.Open(o.build)
				if err != nil {
					return err
				}
				p, src = b.Plan, b
			} else {
				f, err := o.fabric.load()
				if err != nil {
					return err
				}
				p = plan.New(f)
				src = verify.GeneratorSource{G: tables.NewGenerator(p)}
			}
			opt := draw.Options{}
			switch {
			case o.summary:
				opt.Mode = draw.Summary
			case o.full:
				opt.Mode = draw.Full
				if p.F.Switches() > 4*draw.FullLimit {
					return fmt.Errorf("--full: fabric %s has %d switches; draw at most %d in full (or leave --full out to summarise)", p.F.Name, p.F.Switches(), 4*draw.FullLimit)
				}
			}
			for _, spec := range o.fail {
				l, err := parseLink(p, spec)
				if err != nil {
					return err
				}
				opt.Down = append(opt.Down, l)
			}
			start := time.Now()
			if len(opt.Down) > 0 {
				bar := newProgressBar(io.errOut, "walking planes")
				rep, err := verify.Run(cmd.Context(), p, src, verify.Options{Down: opt.Down, Progress: bar.update})
				if err != nil {
					return fmt.Errorf("draw %s: %w", p.F.Name, err)
				}
				opt.Report = rep
			}
			var buf bytes.Buffer
			if err := draw.Draw(&buf, p, opt); err != nil {
				return err
			}
			if o.out == "" || o.out == "-" {
				if io.json() {
					return fmt.Errorf("draw: -o json describes the file written: give --out FILE (the SVG itself goes to standard output only without -o json)")
				}
				_, err := io.out.Write(buf.Bytes())
				return err
			}
			if err := replaceFiles(map[string][]byte{o.out: buf.Bytes()}); err != nil {
				return fmt.Errorf("draw: %w", err)
			}
			if io.json() {
				return writeJSON(io.out, struct {
					Fabric  string   `json:"fabric"`
					File    string   `json:"file"`
					Bytes   int      `json:"bytes"`
					Failed  []string `json:"failed_links"`
					Seconds float64  `json:"seconds"`
				}{p.F.Name, o.out, buf.Len(), append([]string{}, o.fail...), time.Since(start).Seconds()})
			}
			fmt.Fprintf(io.errOut, "drew fabric %q into %s (%d bytes) in %.2fs\n", p.F.Name, o.out, buf.Len(), time.Since(start).Seconds())
			return nil
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.build, "build", "", "draw the fabric of this build directory (and verify its files)")
	cmd.Flags().StringArrayVar(&o.fail, "fail", nil, "take a link down: SWITCH:NEIGHBOUR or SWITCH/PORT (repeatable)")
	cmd.Flags().StringVar(&o.out, "out", "", "write the SVG to this file (default: standard output)")
	cmd.Flags().BoolVar(&o.summary, "summary", false, "summarise per plane even when the fabric is small")
	cmd.Flags().BoolVar(&o.full, "full", false, "draw every device even when the fabric is large")
	return cmd
}
