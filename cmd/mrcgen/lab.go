package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/chart"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/labtransfer"
)

func newLabCommand(io streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run a build's fabric on BMv2 switches (up, status, down)",
		Long: `lab runs every switch and NIC of a build as a BMv2 simple_switch_grpc process on
loopback, wired as the address plan says, and pushes the build with mrcgen's controller.
It needs simple_switch_grpc and p4c-bm2-ss on PATH (or in /opt/p4/bin).

  mrcgen lab up        start the lab and keep it running until Ctrl-C
  mrcgen lab status    show the lab's devices and whether they run
  mrcgen lab down      stop every process of the lab (also after a crash)
  mrcgen lab link      cut or restore a link of the running lab
  mrcgen lab throttle  limit a switch port of the running lab
  mrcgen lab loss      make a link of the running lab lose packets at random
  mrcgen lab transfer  RDMA Write between two hosts of the running lab (MRC or RoCE)`,
	}
	cmd.AddCommand(newLabUpCommand(io), newLabStatusCommand(io), newLabDownCommand(io),
		newLabLinkCommand(io), newLabThrottleCommand(io), newLabLossCommand(io), newLabTransferCommand(io))
	return cmd
}

type labOptions struct {
	build string
	dir   string
}

func newLabUpCommand(io streams) *cobra.Command {
	var o labOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab and keep it running until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tools, missing := bmv2.FindTools()
			if len(missing) > 0 {
				return fmt.Errorf("lab needs %s: install BMv2 and p4c (p4lang's packages or the p4lang/behavioral-model and p4lang/p4c container images) and put them on PATH", strings.Join(missing, " and "))
			}
			if st, err := lab.ReadState(o.dir); err == nil {
				return fmt.Errorf("a lab (%s) is already recorded in %s: run `mrcgen lab down --dir %s` first", st.ID, o.dir, o.dir)
			}
			b, err := artifacts.Open(o.build)
			if err != nil {
				return fmt.Errorf("%w (run `mrcgen build` first)", err)
			}
			bar := newProgressBar(io.errOut, "lab")
			stage := ""
			l, err := lab.Up(cmd.Context(), b, lab.Options{Dir: o.dir, Tools: tools, Progress: func(s string, done, total int) {
				if s != stage {
					stage = s
					fmt.Fprintf(io.errOut, "lab: %s\n", s)
				}
				bar.update(done, total)
			}})
			if err != nil {
				return err
			}
			defer l.Close()
			for _, c := range l.Crashes {
				fmt.Fprintf(io.errOut, "lab: a switch process died during start-up; started again: %s\n", c)
			}
			// The control API other mrcgen processes drive the lab with
			// (lab link, lab throttle; a transfer registers its handler on
			// srv with Handle).
			srv := lab.NewServer(l)
			srv.HandleStream("transfer", labtransfer.NewRunner(l).Handler())
			if err := srv.Listen(o.dir); err != nil {
				return err
			}
			defer srv.Close()
			served := make(chan error, 1)
			go func() { served <- srv.Serve() }()
			if io.json() {
				if err := writeLabUp(io, l, o.dir); err != nil {
					return err
				}
			} else {
				printLab(io, l)
				fmt.Fprintf(io.out, "lab %s is up in %.1fs; targets in %s; control socket %s. Ctrl-C stops it.\n",
					l.ID, l.StartUp.Seconds(), l.TargetsPath, filepath.Join(o.dir, lab.ControlSocket))
			}
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-cmd.Context().Done():
					fmt.Fprintln(io.errOut, "lab: stopping")
					return l.Close()
				case err := <-served:
					l.Close()
					return fmt.Errorf("lab: control server stopped: %v", err)
				case <-tick.C:
					for name, d := range l.Devices {
						if !d.Switch.Alive() {
							l.Close()
							return fmt.Errorf("lab: %s (pid %d) exited: %s", name, d.Switch.PID, d.Switch.LogTail(5))
						}
					}
				}
			}
		},
	}
	cmd.Flags().StringVar(&o.build, "build", "build/tiny", "build directory")
	cmd.Flags().StringVar(&o.dir, "dir", ".lab", "directory for the lab's logs, targets and state")
	return cmd
}

// labUp is what `lab up -o json` prints, on one line, once the lab is up.
type labUp struct {
	ID             string  `json:"id"`
	Dir            string  `json:"dir"`
	Targets        string  `json:"targets"`
	Control        string  `json:"control"`
	StartUpSeconds float64 `json:"startup_seconds"`
	// StartUpCrashes: each start-up attempt a dying switch process ended
	// before the one that came up (lab.Lab.Crashes).
	StartUpCrashes []string          `json:"startup_crashes,omitempty"`
	Devices        []labDeviceStatus `json:"devices"`
}

func writeLabUp(io streams, l *lab.Lab, dir string) error {
	u := labUp{ID: l.ID, Dir: dir, Targets: l.TargetsPath, Control: filepath.Join(dir, lab.ControlSocket), StartUpSeconds: l.StartUp.Seconds(), StartUpCrashes: l.Crashes}
	names := make([]string, 0, len(l.Devices))
	for n := range l.Devices {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := l.Devices[n].Switch
		u.Devices = append(u.Devices, labDeviceStatus{Name: n, PID: s.PID, Up: true, P4Runtime: s.GRPCAddr, Dataplane: s.DPAddr, ThriftPort: s.ThriftPort, Log: s.LogPath})
	}
	// One line: a script reads it as soon as the lab is up.
	return json.NewEncoder(io.out).Encode(u)
}

func printLab(io streams, l *lab.Lab) {
	names := make([]string, 0, len(l.Devices))
	for n := range l.Devices {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tROLE\tP4RUNTIME\tDATAPLANE\tTHRIFT\tPID")
	for _, n := range names {
		d := l.Devices[n]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", n, d.Role, d.Switch.GRPCAddr, d.Switch.DPAddr, d.Switch.ThriftPort, d.Switch.PID)
	}
	tw.Flush()
}

// labStatus is what `lab status -o json` prints.
type labStatus struct {
	ID      string            `json:"id"`
	Build   string            `json:"build"`
	Targets string            `json:"targets"`
	Running int               `json:"running"`
	Total   int               `json:"total"`
	Devices []labDeviceStatus `json:"devices"`
	// Counters are set with --counters.
	Counters *labCounters `json:"counters,omitempty"`
	// Writes are the P4Runtime Write RPCs the lab sent each device, when
	// its process answers on the control socket.
	Writes map[string]uint64 `json:"writes,omitempty"`
}

type labDeviceStatus struct {
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	Up         bool   `json:"up"`
	P4Runtime  string `json:"p4runtime"`
	Dataplane  string `json:"dataplane"`
	ThriftPort int    `json:"thrift_port"`
	Log        string `json:"log"`
}

func readLabStatus(dir string) (*labStatus, error) {
	st, err := lab.ReadState(dir)
	if err != nil {
		return nil, err
	}
	alive := st.Alive()
	s := &labStatus{ID: st.ID, Build: st.Build, Targets: st.Targets, Total: len(st.Devices), Devices: []labDeviceStatus{}}
	for _, d := range st.Devices {
		if alive[d.Name] {
			s.Running++
		}
		s.Devices = append(s.Devices, labDeviceStatus{Name: d.Name, PID: d.PID, Up: alive[d.Name], P4Runtime: d.GRPC,
			Dataplane: d.Dataplane, ThriftPort: d.ThriftPort, Log: d.Log})
	}
	return s, nil
}

func newLabStatusCommand(io streams) *cobra.Command {
	var dir, svgPath, build string
	var counters bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the lab's devices and whether their processes run",
		Long: `status lists the lab's devices: process id, P4Runtime, dataplane and thrift ports,
and whether the process runs. It exits non-zero when any device is down. With --output
json: {id, build, targets, running, total, devices: [{name, pid, up, p4runtime,
dataplane, thrift_port, log}], writes}; writes (the P4Runtime Write RPCs the lab sent
each device) is there when the lab's process answers on its control socket.

--counters reads every device's counters over P4Runtime and adds the spray (data packets
per plane, per (plane, T1) from the T0 up ports, per EV slot) and the trims per switch
port, NACKs per NIC and drops per reason (JSON: "counters"). --svg FILE also draws them as
histograms.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := readLabStatus(dir)
			if err != nil {
				return err
			}
			var wr lab.WritesResult
			if err := callLab(cmd, dir, "writes", struct{}{}, &wr); err == nil {
				s.Writes = wr.Writes
			}
			if counters || svgPath != "" {
				c, p, err := readLabCounters(cmd.Context(), dir, build)
				if err != nil {
					return err
				}
				s.Counters = c
				if svgPath != "" {
					if err := replaceFiles(map[string][]byte{svgPath: chart.Render(c.histograms(p))}); err != nil {
						return fmt.Errorf("lab status --svg: %w", err)
					}
					fmt.Fprintf(io.errOut, "drew the lab's counters into %s\n", svgPath)
				}
			}
			if io.json() {
				if err := writeJSON(io.out, s); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "DEVICE\tPID\tP4RUNTIME\tDATAPLANE\tTHRIFT\tSTATE")
				for _, d := range s.Devices {
					state := "up"
					if !d.Up {
						state = "DOWN (see " + filepath.Base(d.Log) + ")"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", d.Name, d.PID, d.P4Runtime, d.Dataplane, d.ThriftPort, state)
				}
				tw.Flush()
				fmt.Fprintf(io.out, "lab %s (build %s): %d of %d devices up\n", s.ID, s.Build, s.Running, s.Total)
				if counters && s.Counters != nil {
					s.Counters.print(io)
				}
			}
			if s.Running < s.Total {
				return fmt.Errorf("%d of %d lab devices are down", s.Total-s.Running, s.Total)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".lab", "the lab's directory")
	cmd.Flags().BoolVar(&counters, "counters", false, "read the devices' counters: spray per plane, (plane, T1) and EV slot; trims, NACKs, drops")
	cmd.Flags().StringVar(&svgPath, "svg", "", "draw the counters as histograms into this SVG file")
	cmd.Flags().StringVar(&build, "build", "", "the lab's build directory (default: the one the lab recorded)")
	return cmd
}

// labDown is what `lab down -o json` prints.
type labDown struct {
	Dir     string `json:"dir"`
	Found   bool   `json:"found"`
	Stopped int    `json:"stopped"`
}

func newLabDownCommand(io streams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every process of the lab, found by its marker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := lab.Down(dir)
			found := !errors.Is(err, os.ErrNotExist)
			if !found {
				err = nil
			}
			if io.json() {
				if jerr := writeJSON(io.out, labDown{Dir: dir, Found: found, Stopped: n}); jerr != nil {
					return jerr
				}
				return err
			}
			if !found {
				fmt.Fprintf(io.out, "no lab in %s\n", dir)
				return nil
			}
			fmt.Fprintf(io.out, "stopped %d processes\n", n)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".lab", "the lab's directory")
	return cmd
}
