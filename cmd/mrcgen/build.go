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
	text    bool
}

func newBuildCommand(io streams) *cobra.Command {
	var o buildOptions
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Write a fabric's artifact set: P4 programs, P4Info, per-device tables, manifest",
		Long: `build resolves the fabric, assigns its address plan and writes, into one directory:
  manifest.json               the switches (role, plane, tables, entries), the NICs as one set; every table's place and sha256
  fabric.yaml                 the resolved fabric description
  p4/<program>.p4             the switch and NIC programs (mrc_switch, mrc_nic)
  p4/<program>.p4info.txtpb   their P4Info
  switches.binpb              every switch's static uSID tables, one after another
  nics.binpb                  the NICs' tables: common, clone-sessions, row-<R>, port-<K>
mrcgen compile adds p4/<program>.json.

Each switch's tables are a P4Runtime WriteRequest in protobuf wire format, a byte range of
switches.binpb that manifest.json gives (files: "switches.binpb#<switch>" with offset, bytes
and sha256). nics.binpb holds, the same way, what every NIC holds alike (common: EV set and
backups, uSID templates; clone-sessions: an ACK leaves on its plane), what the NICs on T0
row R hold (row-<R>: their own T0 in every plane) and what the NICs on T0 down port K hold
(port-<K>: plane ports, own uDL). A NIC's tables are common, clone-sessions, its row's and
its port's, in that order (manifest.json gives the list, with {row} and {port}).

Any protobuf library reads a range, or a whole file (the updates of every range), as a
p4.v1.WriteRequest. --text writes them in protobuf text format instead, one update per line
(*.txtpb, four times the bytes). Every reader takes either, and the builds of earlier mrcgen
versions (a file per switch and per NIC part, switches/<switch>.binpb or all text).
The directory is written under a temporary name and renamed into place when complete.

An existing directory is replaced only if it is empty or an mrcgen build of the same
fabric holding nothing at its top that a build does not write. --force also replaces a
build of another fabric, or one whose manifest is damaged. A directory that is not an
mrcgen build, or holds a file of someone else's, is never replaced, with or without --force.

mrcgen verify --build and mrcgen push check each range against the manifest's sha256 as
they read it: a file changed after the build is refused.`,
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
			m, err := artifacts.Write(cmd.Context(), f, out, artifacts.Options{Workers: o.workers, Progress: bar.update, Force: o.force, Text: o.text})
			if err != nil {
				return fmt.Errorf("build %s: %w", f.Name, err)
			}
			sum := summarizeBuild(m, out, time.Since(start))
			if io.json() {
				err = writeJSON(io.out, sum)
			} else {
				printBuildSummary(io, sum)
			}
			for _, w := range append(m.Warnings, sonicWarnings(f)...) {
				fmt.Fprintf(io.errOut, "warning: %s\n", w)
			}
			return err
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.out, "dir", "d", "", "build directory to write (default build/<fabric name>)")
	cmd.Flags().StringVar(&o.out, "out", "", "build directory to write")
	_ = cmd.Flags().MarkDeprecated("out", "use --dir (-d); -o is --output on every command")
	cmd.Flags().BoolVar(&o.force, "force", false, "also replace a build of another fabric, or one whose manifest is damaged (never a directory that is not a build)")
	cmd.Flags().IntVar(&o.workers, "workers", 0, "devices rendered at once (default: number of CPUs, at most 4; one goroutine writes)")
	cmd.Flags().BoolVar(&o.text, "text", false, "write the table files in protobuf text format (*.txtpb) instead of wire format (*.binpb)")
	return cmd
}

// buildSummary is what build reports: the manifest in short.
type buildSummary struct {
	Fabric  string        `json:"fabric"`
	Dir     string        `json:"dir"`
	Seconds float64       `json:"seconds"`
	Roles   []roleSummary `json:"roles"`
	// Files counts the table files, Tables the devices' and NIC parts'
	// tables in them (a range each).
	Files   int               `json:"files"`
	Tables  int               `json:"tables"`
	Entries int64             `json:"entries"`
	Bytes   int64             `json:"bytes"`
	Shared  string            `json:"nic_common_file"`
	Program map[string]progID `json:"programs"`
	Warn    []string          `json:"warnings,omitempty"`
}

type roleSummary struct {
	Role    string `json:"role"`
	Devices int    `json:"devices"`
	Entries int    `json:"entries"`
	// Per device, fewest and most.
	MinEntries int `json:"min_entries_per_device"`
	MaxEntries int `json:"max_entries_per_device"`
}

type progID struct {
	P4     string `json:"p4"`
	P4Info string `json:"p4info"`
	Cookie string `json:"cookie"`
}

func summarizeBuild(m *artifacts.Manifest, dir string, took time.Duration) *buildSummary {
	sum := &buildSummary{Fabric: m.Fabric, Dir: dir, Seconds: took.Seconds(), Files: len(m.TableFiles()), Tables: len(m.Files),
		Entries: m.Totals.Entries, Bytes: m.Totals.Bytes, Shared: m.Layout().NICCommon(),
		Program: map[string]progID{}, Warn: m.Warnings}
	index := map[string]int{}
	for _, d := range m.Devices {
		i, ok := index[d.Role]
		if !ok {
			i = len(sum.Roles)
			index[d.Role] = i
			sum.Roles = append(sum.Roles, roleSummary{Role: d.Role, MinEntries: d.Entries, MaxEntries: d.Entries})
		}
		r := &sum.Roles[i]
		r.Devices++
		r.Entries += d.Entries
		r.MinEntries = min(r.MinEntries, d.Entries)
		r.MaxEntries = max(r.MaxEntries, d.Entries)
	}
	for _, key := range []string{artifacts.ProgramSwitch, artifacts.ProgramNIC} {
		p := m.Programs[key]
		sum.Program[key] = progID{P4: p.P4, P4Info: p.P4Info, Cookie: fmt.Sprintf("%#016x", p.Cookie)}
	}
	return sum
}

func printBuildSummary(io streams, sum *buildSummary) {
	fmt.Fprintf(io.out, "built fabric %q into %s in %.2fs\n\n", sum.Fabric, sum.Dir, sum.Seconds)
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "role\tdevices\tentries/device\tentries\t")
	for _, r := range sum.Roles {
		per := fmt.Sprint(r.MinEntries)
		if r.MaxEntries != r.MinEntries {
			per = fmt.Sprintf("%d-%d", r.MinEntries, r.MaxEntries)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t\n", r.Role, r.Devices, per, r.Entries)
	}
	tw.Flush()
	fmt.Fprintf(io.out, "\n%d tables in %d files, %d entries written (%s); NICs share %s\n",
		sum.Tables, sum.Files, sum.Entries, humanBytes(sum.Bytes), sum.Shared)
	for _, key := range []string{artifacts.ProgramSwitch, artifacts.ProgramNIC} {
		p := sum.Program[key]
		fmt.Fprintf(io.out, "program %-6s %s, %s (cookie %s)\n", key, p.P4, p.P4Info, p.Cookie)
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
