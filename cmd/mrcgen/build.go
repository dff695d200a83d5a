package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
)

type buildOptions struct {
	fabric  fabricOptions
	out     string
	force   bool
	workers int
}

func newBuildCommand(io streams) *cobra.Command {
	var o buildOptions
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Write a fabric's artifact set: P4 programs, P4Info, per-device tables, manifest",
		Long: `build resolves the fabric, assigns its address plan and writes, into one directory:
  manifest.json            every device, its role, plane, files, entry count; file checksums
  fabric.yaml              the resolved fabric description
  p4/                      the switch and NIC programs and their P4Info
  switches/<switch>.txtpb  each switch's static uSID tables (a P4Runtime WriteRequest)
  nics/common.txtpb        the tables every NIC holds alike (EV set, uSID templates)
  nics/row-R/<nic>.txtpb   each NIC's own identity
The directory is written under a temporary name and renamed into place when complete.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := o.fabric.load()
			if err != nil {
				return err
			}
			out := o.out
			if out == "" {
				out = filepath.Join("build", f.Name)
			}
			start := time.Now()
			bar := newProgressBar(io.errOut, "writing devices")
			m, err := artifacts.Write(cmd.Context(), f, out, artifacts.Options{Workers: o.workers, Progress: bar.update, Force: o.force})
			if err != nil {
				return fmt.Errorf("build %s: %w", f.Name, err)
			}
			printBuildSummary(io, m, out, time.Since(start))
			for _, w := range sonicWarnings(f) {
				fmt.Fprintf(io.errOut, "warning: %s\n", w)
			}
			return nil
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.out, "dir", "d", "", "build directory to write (default build/<fabric name>)")
	cmd.Flags().StringVar(&o.out, "out", "", "build directory to write")
	_ = cmd.Flags().MarkDeprecated("out", "use --dir (-d); -o is --output on every command")
	cmd.Flags().BoolVar(&o.force, "force", false, "replace the output directory even if it is not an mrcgen build")
	cmd.Flags().IntVar(&o.workers, "workers", 0, "devices written at once (default: number of CPUs)")
	return cmd
}

func printBuildSummary(io streams, m *artifacts.Manifest, dir string, took time.Duration) {
	type row struct {
		devices, entries int
		minE, maxE       int
	}
	rows := map[string]*row{}
	order := []string{}
	for _, d := range m.Devices {
		r, ok := rows[d.Role]
		if !ok {
			r = &row{minE: d.Entries, maxE: d.Entries}
			rows[d.Role] = r
			order = append(order, d.Role)
		}
		r.devices++
		r.entries += d.Entries
		r.minE = min(r.minE, d.Entries)
		r.maxE = max(r.maxE, d.Entries)
	}
	fmt.Fprintf(io.out, "built fabric %q into %s in %.2fs\n\n", m.Fabric, dir, took.Seconds())
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "role\tdevices\tentries/device\tentries\t")
	for _, role := range order {
		r := rows[role]
		per := fmt.Sprint(r.minE)
		if r.maxE != r.minE {
			per = fmt.Sprintf("%d-%d", r.minE, r.maxE)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t\n", role, r.devices, per, r.entries)
	}
	tw.Flush()
	fmt.Fprintf(io.out, "\n%d table files, %d entries written (%s); NICs share nics/common.txtpb\n",
		len(m.Files), m.Totals.Entries, humanBytes(m.Totals.Bytes))
	for _, key := range []string{artifacts.ProgramSwitch, artifacts.ProgramNIC} {
		p := m.Programs[key]
		fmt.Fprintf(io.out, "program %-6s %s, %s (cookie %#016x)\n", key, p.P4, p.P4Info, p.Cookie)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(io.errOut, "warning: %s\n", w)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
