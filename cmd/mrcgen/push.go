package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/deploy"
	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

type pushOptions struct {
	build    string
	targets  string
	devices  []string
	parallel int
	dryRun   bool
	verbose  bool
}

func newPushCommand(io streams) *cobra.Command {
	var o pushOptions
	cmd := &cobra.Command{
		Use:   "push",
		Short: "Install a build on its devices over P4Runtime; a second push writes nothing",
		Long: `push installs the pipeline and every table of a (compiled) build on the devices of a
targets file, over P4Runtime. For each device it arbitrates as primary, skips the pipeline
when the device already has the same cookie, reads what the device holds and writes only
the DELETE / MODIFY / INSERT needed: pushing the same build twice writes nothing.

Before anything is written, the push is refused if a chosen device has no target or the
build's P4Info does not match. Only the chosen devices' programs are read, and the
compiled BMv2 JSON (mrcgen compile) only for a device that does not run the build's
pipeline yet (its cookie differs); --dry-run needs no JSON at all. Devices are pushed in
parallel; a failing device is named with every failed entity and the others still
complete. --dry-run prints each device's diff and writes nothing.

The targets file (YAML):
  defaults: {insecure: true, election_id: 1}
  devices:
    p0-t0-0: {address: "127.0.0.1:50001", device_id: 1}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := artifacts.Open(o.build)
			if err != nil {
				return err
			}
			t, err := targets.Read(o.targets)
			if err != nil {
				return err
			}
			var logger *slog.Logger
			if o.verbose {
				logger = slog.New(slog.NewTextHandler(io.errOut, nil))
			}
			bar := newProgressBar(io.errOut, "pushing")
			var mu sync.Mutex
			doneByDevice := map[string][2]int{}
			progress := func(device string, done, total int) {
				mu.Lock()
				defer mu.Unlock()
				doneByDevice[device] = [2]int{done, total}
				d, n := 0, 0
				for _, v := range doneByDevice {
					d, n = d+v[0], n+v[1]
				}
				bar.update(d, n)
			}
			start := time.Now()
			results, err := deploy.Run(cmd.Context(), b, t, deploy.Options{
				Devices: o.devices, Parallelism: o.parallel, DryRun: o.dryRun, Progress: progress, Logger: logger,
			})
			if results != nil {
				if perr := printPushResults(io, results, o.dryRun, time.Since(start)); perr != nil && err == nil {
					err = perr
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&o.build, "build", "build/tiny", "build directory (compiled with mrcgen compile for devices that need the pipeline)")
	cmd.Flags().StringVar(&o.targets, "targets", "", "targets file mapping devices to P4Runtime addresses (required)")
	cmd.Flags().StringSliceVar(&o.devices, "device", nil, "push only these devices (repeatable, comma-separated)")
	cmd.Flags().IntVar(&o.parallel, "parallel", 8, "devices pushed at once")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print each device's diff; write nothing")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "log each step to stderr")
	_ = cmd.MarkFlagRequired("targets")
	return cmd
}

func printPushResults(io streams, results []push.Result, dryRun bool, took time.Duration) error {
	warned := map[string]bool{}
	for _, r := range results {
		for _, w := range r.Warnings {
			if !warned[w] {
				warned[w] = true
				fmt.Fprintf(io.errOut, "WARNING: %s\n", w)
			}
		}
	}
	if io.json() {
		return writeJSON(io.out, pushReport(results, dryRun, took))
	}
	if dryRun {
		for _, r := range results {
			if r.Diff == nil {
				continue
			}
			fmt.Fprintf(io.out, "%s: %s\n", r.Device, r.Diff.Summary())
			var sb strings.Builder
			_ = r.Diff.Render(&sb, r.Index)
			for _, line := range strings.Split(strings.TrimRight(sb.String(), "\n"), "\n") {
				if line != "" {
					fmt.Fprintf(io.out, "  %s\n", line)
				}
			}
		}
	}
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	// CONNECT+READ is the device's time to answer before anything is
	// written (dial, arbitration, cookie and state); a slow device shows
	// there or in WRITE.
	fmt.Fprintln(tw, "DEVICE\tPIPELINE\tINSERTED\tMODIFIED\tDELETED\tTIME\tCONNECT+READ\tWRITE\tRESULT")
	failed := 0
	for _, r := range results {
		result := "ok"
		if dryRun {
			result = "dry run"
		}
		if r.Err != nil {
			result = "FAILED: " + r.Err.Error()
			failed++
		}
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Device, pipelineState(r, dryRun), r.Inserted, r.Modified, r.Deleted,
			ms(r.Duration), ms(r.Phases.Connect+r.Phases.Read), ms(r.Phases.Write), result)
	}
	tw.Flush()
	fmt.Fprintf(io.out, "%d devices, %d failed, in %.2fs\n", len(results), failed, took.Seconds())
	// Every refused entity of every failed device, by table and key.
	for _, r := range results {
		fails := entityFailures(r)
		if len(fails) == 0 {
			continue
		}
		fmt.Fprintf(io.errOut, "%s: %d updates refused:\n", r.Device, len(fails))
		for _, f := range fails {
			fmt.Fprintf(io.errOut, "  %s %s: %s: %s\n", f.Op, f.Entity, f.Code, f.Message)
		}
	}
	return nil
}

func pipelineState(r push.Result, dryRun bool) string {
	switch {
	case r.PipelineSkipped:
		return "same cookie"
	case r.PipelinePushed && dryRun:
		return "would push"
	case r.PipelinePushed:
		return "pushed"
	}
	return "-"
}

// pushJSON is push's --output json.
type pushJSON struct {
	DryRun  bool             `json:"dry_run"`
	Devices []pushDeviceJSON `json:"devices"`
	Failed  int              `json:"failed"`
	Seconds float64          `json:"seconds"`
}

type pushDeviceJSON struct {
	Device   string  `json:"device"`
	Pipeline string  `json:"pipeline"`
	Cookie   string  `json:"cookie,omitempty"`
	Inserted int     `json:"inserted"`
	Modified int     `json:"modified"`
	Deleted  int     `json:"deleted"`
	Seconds  float64 `json:"seconds"`
	// Phases splits seconds by step (push.Phases).
	Phases phasesJSON `json:"phases"`
	// Diff is what the push writes (with --dry-run: would write).
	Diff     *diffJSON         `json:"diff,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
	Error    string            `json:"error,omitempty"`
	Failures []entityFailure   `json:"failures,omitempty"`
	Write    *writeOutcomeJSON `json:"write_outcome,omitempty"`
}

type phasesJSON struct {
	Prepare  float64 `json:"prepare"`
	Connect  float64 `json:"connect"`
	Read     float64 `json:"read"`
	Pipeline float64 `json:"pipeline"`
	Diff     float64 `json:"diff"`
	Write    float64 `json:"write"`
}

func phasesReport(p push.Phases) phasesJSON {
	return phasesJSON{Prepare: p.Prepare.Seconds(), Connect: p.Connect.Seconds(), Read: p.Read.Seconds(),
		Pipeline: p.Pipeline.Seconds(), Diff: p.Diff.Seconds(), Write: p.Write.Seconds()}
}

type diffJSON struct {
	Counts   diffCounts   `json:"counts"`
	Inserts  []string     `json:"inserts"`
	Modifies []modifyJSON `json:"modifies"`
	Deletes  []string     `json:"deletes"`
}

type diffCounts struct {
	Insert    int `json:"insert"`
	Modify    int `json:"modify"`
	Delete    int `json:"delete"`
	Unchanged int `json:"unchanged"`
}

type modifyJSON struct {
	Entity string `json:"entity"`
	Was    string `json:"was,omitempty"`
}

// entityFailure is one update a device refused.
type entityFailure struct {
	Op      string `json:"op"`
	Entity  string `json:"entity"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeOutcomeJSON counts a write stopped by an RPC error.
type writeOutcomeJSON struct {
	Applied int `json:"applied"`
	InDoubt int `json:"in_doubt"`
	NotSent int `json:"not_sent"`
}

func pushReport(results []push.Result, dryRun bool, took time.Duration) pushJSON {
	out := pushJSON{DryRun: dryRun, Devices: []pushDeviceJSON{}, Seconds: took.Seconds()}
	for _, r := range results {
		d := pushDeviceJSON{Device: r.Device, Pipeline: pipelineState(r, dryRun), Inserted: r.Inserted, Modified: r.Modified,
			Deleted: r.Deleted, Seconds: r.Duration.Seconds(), Phases: phasesReport(r.Phases), Warnings: r.Warnings, Failures: entityFailures(r)}
		if r.Cookie != 0 {
			d.Cookie = fmt.Sprintf("%#016x", r.Cookie)
		}
		if r.Diff != nil && r.Index != nil {
			d.Diff = diffReport(r.Diff, r.Index)
		}
		if r.Err != nil {
			out.Failed++
			d.Error = r.Err.Error()
			if werr, ok := errors.AsType[*client.WriteError](r.Err); ok && werr.Err != nil {
				d.Write = &writeOutcomeJSON{Applied: werr.Applied(), InDoubt: werr.InDoubt, NotSent: werr.NotSent}
			}
		}
		out.Devices = append(out.Devices, d)
	}
	return out
}

func diffReport(d *reconcile.Diff, idx *infoindex.Index) *diffJSON {
	out := &diffJSON{Inserts: []string{}, Modifies: []modifyJSON{}, Deletes: []string{}, Counts: diffCounts{
		Insert: d.Count(reconcile.Insert), Modify: d.Count(reconcile.Modify), Delete: d.Count(reconcile.Delete), Unchanged: d.Unchanged}}
	for _, c := range d.Changes {
		switch c.Op {
		case reconcile.Insert:
			out.Inserts = append(out.Inserts, idx.Describe(c.Entity))
		case reconcile.Delete:
			out.Deletes = append(out.Deletes, idx.Describe(c.Entity))
		case reconcile.Modify:
			m := modifyJSON{Entity: idx.Describe(c.Entity)}
			if c.Current != nil {
				m.Was = idx.DescribeState(c.Current)
			}
			out.Modifies = append(out.Modifies, m)
		}
	}
	return out
}

// entityFailures lists the updates the device refused, each named by table
// and key (or clone session) with the P4Info's names.
func entityFailures(r push.Result) []entityFailure {
	werr, ok := errors.AsType[*client.WriteError](r.Err)
	if !ok || r.Index == nil {
		return nil
	}
	out := make([]entityFailure, len(werr.Errors))
	for i, f := range werr.Errors {
		out[i] = entityFailure{Op: f.Update.GetType().String(), Entity: r.Index.Describe(f.Update.GetEntity()), Code: codeName(f.Code), Message: f.Message}
	}
	return out
}

// codeName renders a gRPC code as the P4Runtime spec writes it, e.g.
// RESOURCE_EXHAUSTED.
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
