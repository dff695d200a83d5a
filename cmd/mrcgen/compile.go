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
			took := time.Since(start)
			keys := []string{artifacts.ProgramSwitch, artifacts.ProgramNIC}
			if io.json() {
				type compiled struct {
					Program  string `json:"program"`
					P4       string `json:"p4"`
					BMv2JSON string `json:"bmv2_json"`
					SHA256   string `json:"bmv2_json_sha256"`
				}
				out := struct {
					Build    string     `json:"build"`
					Compiler string     `json:"compiler"`
					Seconds  float64    `json:"seconds"`
					Programs []compiled `json:"programs"`
				}{Build: o.build, Compiler: compiler, Seconds: took.Seconds()}
				for _, key := range keys {
					p := m.Programs[key]
					out.Programs = append(out.Programs, compiled{key, p.P4, filepath.Join(o.build, p.BMv2JSON), p.BMv2JSONSHA256})
				}
				return writeJSON(io.out, out)
			}
			for _, key := range keys {
				p := m.Programs[key]
				fmt.Fprintf(io.out, "compiled %-6s %s -> %s (P4Info matches p4c's)\n", key, p.P4, filepath.Join(o.build, p.BMv2JSON))
			}
			fmt.Fprintf(io.out, "with %s in %.1fs\n", compiler, took.Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.build, "build", "build/tiny", "build directory")
	cmd.Flags().StringVar(&o.p4c, "p4c", "", "p4c-bm2-ss to use")
	return cmd
}
