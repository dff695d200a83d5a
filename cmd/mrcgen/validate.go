package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCommand(io streams) *cobra.Command {
	var o fabricOptions
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a fabric description and print what it describes; writes nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := o.load()
			if err != nil {
				return err
			}
			fmt.Fprintf(io.out, "fabric %q is valid: %d planes, %d T0 + %d T1 per plane (%d switches), %d hosts, %dG NIC as %d x %dG\n",
				f.Name, f.Planes, f.T0Count, f.T1Count, f.Switches(), f.Hosts(), f.NICSpeedGbps, f.Planes, f.PortSpeedGbps)
			for _, w := range f.Warnings() {
				fmt.Fprintf(io.errOut, "warning: %s\n", w)
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
