package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

func newPresetsCommand(io streams) *cobra.Command {
	var show string
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the built-in fabrics, or print one as a fabric file (--show NAME)",
		Long: `presets lists the built-in fabrics, or prints one as a complete fabric file (--show
NAME). With --output json: the list as [{name, planes, t0_per_plane, t1_per_plane,
switches, hosts, nic_speed_gbps, port_speed_gbps}], or the preset as the JSON form of a
fabric file (the shape mrcgen schema describes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if show != "" {
				d, err := fabric.Preset(show)
				if err != nil {
					return err
				}
				if io.json() {
					return writeJSON(io.out, d)
				}
				out, err := yaml.Marshal(d)
				if err != nil {
					return err
				}
				_, err = io.out.Write(out)
				return err
			}
			if io.json() {
				list := []*fabricSummary{}
				for _, name := range fabric.PresetNames() {
					f, err := fabric.FromPreset(name)
					if err != nil {
						return err
					}
					list = append(list, summarize(f))
				}
				return writeJSON(io.out, list)
			}
			tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPLANES\tT0/PLANE\tT1/PLANE\tHOSTS\tSWITCHES\tNIC")
			for _, name := range fabric.PresetNames() {
				f, err := fabric.FromPreset(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%dG = %d x %dG\n", name, f.Planes, f.T0Count, f.T1Count, f.Hosts(), f.Switches(),
					f.NICSpeedGbps, f.Planes, f.PortSpeedGbps)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&show, "show", "", "print this preset as a fabric file")
	return cmd
}
