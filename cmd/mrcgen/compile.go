package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
)

type compileOptions struct {
	build string
	p4c   string
}

func newCompileCommand(io streams) *cobra.Command {
	var o compileOptions
	cmd := &cobra.Command{
		Use:   "compile",
		Short: "Compile a build's P4 programs to BMv2 JSON with p4c and check p4c's P4Info equals mrcgen's",
		Long: `compile runs p4c-bm2-ss on the switch and NIC programs of a build directory, writes
the BMv2 JSON next to each program, and checks that the P4Info p4c derives from the program
is the one mrcgen emitted from its schema (the one the table entries were built against).

p4c-bm2-ss is looked up as --p4c, then $MRCGEN_P4C, then on PATH, then in /opt/p4/bin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			compiler, err := p4c.Find(o.p4c)
			if err != nil {
				return err
			}
			start := time.Now()
			m, err := artifacts.Compile(cmd.Context(), o.build, compiler)
			if err != nil {
				return fmt.Errorf("compile %s: %w", o.build, err)
			}
			for _, key := range []string{artifacts.ProgramSwitch, artifacts.ProgramNIC} {
				p := m.Programs[key]
				fmt.Fprintf(io.out, "compiled %-6s %s -> %s (P4Info matches p4c's)\n", key, p.P4, filepath.Join(o.build, p.BMv2JSON))
			}
			fmt.Fprintf(io.out, "with %s in %.1fs\n", compiler, time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.build, "build", "build/tiny", "build directory")
	cmd.Flags().StringVar(&o.p4c, "p4c", "", "p4c-bm2-ss to use")
	return cmd
}
