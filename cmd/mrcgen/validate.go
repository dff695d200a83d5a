package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// validateReport is what `validate -o json` prints: the fabric and its
// warnings when it is valid, every problem when it is not.
type validateReport struct {
	Valid    bool                 `json:"valid"`
	Fabric   *fabricSummary       `json:"fabric,omitempty"`
	Warnings []string             `json:"warnings"`
	Errors   []*fabric.FieldError `json:"errors"`
}

// fabricSummary is the shape of a fabric in a few numbers.
type fabricSummary struct {
	Name          string `json:"name"`
	Planes        int    `json:"planes"`
	T0PerPlane    int    `json:"t0_per_plane"`
	T1PerPlane    int    `json:"t1_per_plane"`
	Switches      int    `json:"switches"`
	Hosts         int    `json:"hosts"`
	NICSpeedGbps  int    `json:"nic_speed_gbps"`
	PortSpeedGbps int    `json:"port_speed_gbps"`
	// ReceiveWindow is nic.window_packets (derived when the file leaves
	// it out), UnansweredSends K, SendWindow the window a QP keeps by
	// default: what the NIC and its transport run with.
	ReceiveWindow   int `json:"receive_window_packets"`
	UnansweredSends int `json:"unanswered_sends"`
	SendWindow      int `json:"send_window_packets"`
}

func summarize(f *fabric.Fabric) *fabricSummary {
	return &fabricSummary{Name: f.Name, Planes: f.Planes, T0PerPlane: f.T0Count, T1PerPlane: f.T1Count,
		Switches: f.Switches(), Hosts: f.Hosts(), NICSpeedGbps: f.NICSpeedGbps, PortSpeedGbps: f.PortSpeedGbps,
		ReceiveWindow: f.ReceiveWindow, UnansweredSends: f.Failover.UnansweredSends, SendWindow: f.SendWindow()}
}

func newValidateCommand(io streams) *cobra.Command {
	var o fabricOptions
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a fabric description and print what it describes; writes nothing",
		Long: `validate checks a fabric description and reports every problem at once, each with its
field, value, line and reason; it exits non-zero if there is any. With --output json it
prints {valid, fabric, warnings, errors} on stdout, each error as {field, value, reason,
line} (line 0: the value did not come from the file).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := o.load()
			if io.json() {
				return writeValidateJSON(io, f, err)
			}
			if err != nil {
				return err
			}
			s := summarize(f)
			fmt.Fprintf(io.out, "fabric %q is valid: %d planes, %d T0 + %d T1 per plane (%d switches), %d hosts, %dG NIC as %d x %dG; receive window %d PSNs, K %d, send window %d\n",
				s.Name, s.Planes, s.T0PerPlane, s.T1PerPlane, s.Switches, s.Hosts, s.NICSpeedGbps, s.Planes, s.PortSpeedGbps, s.ReceiveWindow, s.UnansweredSends, s.SendWindow)
			for _, w := range f.Warnings() {
				fmt.Fprintf(io.errOut, "warning: %s\n", w)
			}
			for _, w := range sonicWarnings(f) {
				fmt.Fprintf(io.errOut, "warning: %s\n", w)
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func writeValidateJSON(io streams, f *fabric.Fabric, err error) error {
	r := validateReport{Warnings: []string{}, Errors: []*fabric.FieldError{}}
	if err == nil {
		r.Valid, r.Fabric = true, summarize(f)
		r.Warnings = append(r.Warnings, f.Warnings()...)
		r.Warnings = append(r.Warnings, sonicWarnings(f)...)
		return writeJSON(io.out, r)
	}
	r.Errors = fabric.Problems(err)
	if len(r.Errors) == 0 { // not a problem of the description: the file cannot be read
		r.Errors = []*fabric.FieldError{{Reason: err.Error()}}
	}
	if werr := writeJSON(io.out, r); werr != nil {
		return werr
	}
	if errors.Is(err, fabric.ErrInvalid) {
		return fmt.Errorf("invalid fabric description: %d problems (listed on stdout)", len(r.Errors))
	}
	return err
}
