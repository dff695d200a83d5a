package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/internal/lab"
)

// callLab runs one command of the control API of the lab running in dir.
func callLab(cmd *cobra.Command, dir, name string, req, res any) error {
	c, err := lab.Dial(dir)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(cmd.Context(), name, req, res)
}

// splitPair splits "A:B" into two non-empty device names.
func splitPair(s string) (a, b string, ok bool) {
	a, b, ok = strings.Cut(s, ":")
	return a, b, ok && a != "" && b != "" && !strings.Contains(b, ":")
}

func newLabLinkCommand(io streams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "link down|up A:B",
		Short: "Cut or restore the lab's wire between two devices",
		Long: `link cuts (down) or restores (up) the wire between devices A and B of the lab running
in --dir, in both directions, and tells both switches' port monitors, e.g.

  mrcgen lab link down p0-t0-0:p0-t1-1

With --output json: {"a", "b", "up"}.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var up bool
			switch args[0] {
			case "down":
			case "up":
				up = true
			default:
				return fmt.Errorf("lab link: %q is neither down nor up", args[0])
			}
			a, b, ok := splitPair(args[1])
			if !ok {
				return fmt.Errorf("lab link: %q is not A:B (two device names, e.g. p0-t0-0:p0-t1-1)", args[1])
			}
			var res lab.LinkRequest
			if err := callLab(cmd, dir, "link", lab.LinkRequest{A: a, B: b, Up: up}, &res); err != nil {
				return err
			}
			if io.json() {
				return writeJSON(io.out, res)
			}
			tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "LINK\tSTATE")
			fmt.Fprintf(tw, "%s:%s\t%s\n", res.A, res.B, map[bool]string{true: "up", false: "down"}[res.Up])
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".lab", "the lab's directory")
	return cmd
}

func newLabThrottleCommand(io streams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "throttle SW/PORT|SW:NEIGHBOUR PPS",
		Short: "Limit a switch port of the lab to PPS packets/s (0 restores)",
		Long: `throttle sets the rate of a port of a switch of the lab running in --dir (BMv2's
set_queue_rate through simple_switch_CLI); the port is a number or the one facing a
neighbour, e.g.

  mrcgen lab throttle p0-t1-0/1 200
  mrcgen lab throttle p0-t1-0:p0-t0-1 200
  mrcgen lab throttle p0-t1-0:p0-t0-1 0      # restore

With --output json: {"device", "port", "pps"}.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := lab.ThrottleRequest{}
			if sw, p, ok := strings.Cut(args[0], "/"); ok && sw != "" {
				n, err := strconv.ParseUint(p, 10, 32)
				if err != nil {
					return fmt.Errorf("lab throttle: port %q of %s is not a number", p, sw)
				}
				req.Device, req.Port = sw, uint32(n)
			} else if a, b, ok := splitPair(args[0]); ok {
				req.Device, req.Neighbour = a, b
			} else {
				return fmt.Errorf("lab throttle: %q is neither SW/PORT nor SW:NEIGHBOUR", args[0])
			}
			pps, err := strconv.Atoi(args[1])
			if err != nil || pps < 0 {
				return fmt.Errorf("lab throttle: rate %q is not a number of packets/s (0 restores)", args[1])
			}
			req.PPS = pps
			var res lab.ThrottleResult
			if err := callLab(cmd, dir, "throttle", req, &res); err != nil {
				return err
			}
			if io.json() {
				return writeJSON(io.out, res)
			}
			rate := strconv.Itoa(res.PPS) + " pkt/s"
			if res.PPS == 0 {
				rate = "unlimited"
			}
			tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SWITCH\tPORT\tRATE")
			fmt.Fprintf(tw, "%s\t%d\t%s\n", res.Device, res.Port, rate)
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".lab", "the lab's directory")
	return cmd
}
