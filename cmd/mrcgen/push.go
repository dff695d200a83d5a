package main

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4runtime/deploy"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
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
				printPushResults(io, results, o.dryRun, time.Since(start))
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

func printPushResults(io streams, results []push.Result, dryRun bool, took time.Duration) {
	warned := map[string]bool{}
	for _, r := range results {
		for _, w := range r.Warnings {
			if !warned[w] {
				warned[w] = true
				fmt.Fprintf(io.errOut, "WARNING: %s\n", w)
			}
		}
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
	fmt.Fprintln(tw, "DEVICE\tPIPELINE\tINSERTED\tMODIFIED\tDELETED\tTIME\tRESULT")
	failed := 0
	for _, r := range results {
		pipe := "-"
		switch {
		case r.PipelineSkipped:
			pipe = "same cookie"
		case r.PipelinePushed && dryRun:
			pipe = "would push"
		case r.PipelinePushed:
			pipe = "pushed"
		}
		result := "ok"
		if dryRun {
			result = "dry run"
		}
		if r.Err != nil {
			result = "FAILED: " + r.Err.Error()
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.Device, pipe, r.Inserted, r.Modified, r.Deleted, r.Duration.Round(time.Millisecond), result)
	}
	tw.Flush()
	fmt.Fprintf(io.out, "%d devices, %d failed, in %.2fs\n", len(results), failed, took.Seconds())
}
