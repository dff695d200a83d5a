package main

import "github.com/spf13/cobra"

// newExportCommand groups the exporters of a fabric into other systems'
// formats (`mrcgen export sonic`, ...).
func newExportCommand(io streams, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export a fabric into another system's configuration format",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(subs...)
	return cmd
}
