package main

import "github.com/spf13/cobra"

// newExportCommand groups the exporters of a build into other tools'
// formats (containerlab, SONiC): it only holds subcommands.
func newExportCommand(_ streams, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export a build for other tools (containerlab, ...)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(subs...)
	return cmd
}
