package main

import "github.com/spf13/cobra"

// newExportCommand groups the exporters of a fabric into other systems'
// formats (`mrcgen export sonic`, `mrcgen export clab`): it only holds
// subcommands.
func newExportCommand(_ streams, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export a fabric for other systems (SONiC CONFIG_DB, containerlab)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(subs...)
	return cmd
}
