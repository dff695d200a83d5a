package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// run executes mrcgen with args and returns the process exit code; tests
// call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "mrcgen: %v\n", err)
		return 1
	}
	return 0
}

// streams are where a command writes: results to out, logs and progress to
// errOut, so that `--output json` on stdout stays parseable. format is the
// global --output flag, read once flags are parsed.
type streams struct {
	out, errOut io.Writer
	format      *outputFormat
}

// json reports whether the command was asked for JSON output.
func (s streams) json() bool { return *s.format == outputJSON }

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	format := outputTable
	io := streams{out: stdout, errOut: stderr, format: &format}
	root := &cobra.Command{
		Use:   "mrcgen",
		Short: "Generate, verify and push the static SRv6 dataplane of an MRC fabric",
		Long: `mrcgen turns the description of an MRC (Multipath Reliable Connection) AI-training
fabric into everything its dataplane needs: the uSID address plan, the static forwarding
tables of every switch and NIC as P4Runtime entities, and the P4 programs and P4Info
that hold them. It proves every path delivers, pushes the result over P4Runtime, and
runs the fabric on BMv2 switches.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().VarP(&format, "output", "o", "output format: table for people, json for scripts")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newBuildCommand(io),
		newPlanCommand(io),
		newVerifyCommand(io),
		newValidateCommand(io),
		newSchemaCommand(io),
		newPresetsCommand(io),
		newCompileCommand(io),
		newPushCommand(io),
		newLabCommand(io),
		newVersionCommand(io),
		newDrawCommand(io),
		newSimCommand(io),
		newExportCommand(io, newExportSonicCommand(io), newExportClabCommand(io)),
	)
	return root
}
