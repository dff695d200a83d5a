package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/sonic"
)

type exportSonicOptions struct {
	fabric fabricOptions
	build  string
	out    string
	check  bool
	yang   string
}

// exportSonicReport is what `export sonic -o json` prints.
type exportSonicReport struct {
	Fabric     string `json:"fabric"`
	Target     string `json:"target"`
	Dir        string `json:"dir"`
	Switches   int    `json:"switches"`
	Routes     int    `json:"routes"`
	Ports      int    `json:"ports"`
	LinkPrefix string `json:"link_prefix"`
	// Checked is the number of fragments yanglint accepted (--check); -1
	// when no check ran.
	Checked int     `json:"checked"`
	Seconds float64 `json:"seconds"`
}

func newExportSonicCommand(io streams) *cobra.Command {
	var o exportSonicOptions
	cmd := &cobra.Command{
		Use:   "sonic",
		Short: "Write one SONiC config_db.json fragment per switch (SRv6 uN, static routes, trimming, QoS)",
		Long: `export sonic writes the configuration of the fabric's switches as SONiC CONFIG_DB
fragments, for fixed-function ASICs (Spectrum, Tomahawk) that run SONiC:

  DIR/index.json                  every switch, its file, SID, port and route counts
  DIR/fabric.yaml                 the resolved fabric (verify --sonic reads it)
  DIR/<switch>/config_db.json     PORT, INTERFACE (/127 link addresses), SRV6_MY_LOCATORS,
                                  SRV6_MY_SIDS (uN), STATIC_ROUTE (one /48 per neighbour uSID),
                                  SWITCH_TRIMMING, DSCP_TO_TC_MAP, TC_TO_QUEUE_MAP,
                                  TC_TO_DSCP_MAP, PORT_QOS_MAP, BUFFER_POOL/PROFILE/QUEUE,
                                  SCHEDULER, QUEUE

Load a fragment on its switch with 'config load -y config_db.json' (or sonic-cfggen -j
... --write-to-db): tables merge into the running configuration.

The fabric comes from --build DIR (the build's fabric.yaml; output DIR/sonic by default)
or from --fabric/--preset (output build/sonic/<fabric> by default). The fabric's sonic section chooses the target ASIC, the link prefix and the lane map; a fabric
that does not fit its target (e.g. a 134-byte trim on Spectrum-4, which trims to 256-1024
bytes) is refused, with what to change. The directory is written under a temporary name
and renamed into place when complete.

--check runs yanglint on every fragment against SONiC's YANG models (--yang DIR, default
$MRCGEN_SONIC_YANG) and fails on the first fragment they reject.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, out, err := o.load()
			if err != nil {
				return err
			}
			yangDir := o.yang
			if o.check {
				if yangDir == "" {
					yangDir = os.Getenv("MRCGEN_SONIC_YANG")
				}
				if yangDir == "" {
					return fmt.Errorf("--check needs SONiC's YANG models: give --yang DIR or set MRCGEN_SONIC_YANG")
				}
			}
			start := time.Now()
			bar := newProgressBar(io.errOut, "writing switches")
			idx, err := sonic.Write(cmd.Context(), f, out, sonic.Options{Progress: bar.update})
			if err != nil {
				return fmt.Errorf("export sonic %s: %w", f.Name, err)
			}
			r := exportSonicReport{Fabric: f.Name, Target: idx.Target, Dir: out, Switches: len(idx.Switches),
				LinkPrefix: idx.LinkPrefix, Checked: -1}
			for _, s := range idx.Switches {
				r.Routes += s.Routes
				r.Ports += s.Ports
			}
			if o.check {
				n, err := checkExport(cmd.Context(), out, yangDir)
				if err != nil {
					return fmt.Errorf("export sonic %s: written to %s, but %w", f.Name, out, err)
				}
				r.Checked = n
			}
			r.Seconds = time.Since(start).Seconds()
			if io.json() {
				return writeJSON(io.out, r)
			}
			fmt.Fprintf(io.out, "exported fabric %q for SONiC target %s into %s in %.2fs\n", r.Fabric, r.Target, r.Dir, r.Seconds)
			fmt.Fprintf(io.out, "  %d switches, %d ports, %d static routes; links /127 from %s\n", r.Switches, r.Ports, r.Routes, r.LinkPrefix)
			if r.Checked >= 0 {
				fmt.Fprintf(io.out, "  yanglint: %d fragments valid against %s\n", r.Checked, yangDir)
			}
			return nil
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.build, "build", "", "export the fabric of this build directory (output DIR/sonic)")
	cmd.Flags().StringVarP(&o.out, "dir", "d", "", "export directory (default <build>/sonic, or build/sonic/<fabric>)")
	cmd.Flags().BoolVar(&o.check, "check", false, "check every fragment with yanglint against SONiC's YANG models")
	cmd.Flags().StringVar(&o.yang, "yang", "", "folder of SONiC's YANG models for --check (default $MRCGEN_SONIC_YANG)")
	return cmd
}

func (o *exportSonicOptions) load() (*fabric.Fabric, string, error) {
	if o.build != "" {
		if o.fabric.file != "" || o.fabric.preset != "" {
			return nil, "", fmt.Errorf("give --build or --fabric/--preset, not both")
		}
		b, err := artifacts.Open(o.build)
		if err != nil {
			return nil, "", err
		}
		out := o.out
		if out == "" {
			out = filepath.Join(o.build, "sonic")
		}
		return b.Fabric, out, nil
	}
	f, err := o.fabric.load()
	if err != nil {
		return nil, "", err
	}
	out := o.out
	if out == "" {
		out = filepath.Join("build", "sonic", f.Name)
	}
	return f, out, nil
}

// checkExport runs yanglint on every fragment of an export (two at a time)
// and returns how many it accepted, or the first rejection, naming the
// switch.
func checkExport(ctx context.Context, dir, yangDir string) (int, error) {
	if _, err := exec.LookPath("yanglint"); err != nil {
		return 0, sonic.ErrNoYanglint
	}
	e, err := sonic.Open(dir)
	if err != nil {
		return 0, err
	}
	switches := e.Plan.Switches()
	var next, ok atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(switches) || ctx.Err() != nil {
					return
				}
				s := switches[i]
				fr, err := e.Fragment(s)
				if err == nil {
					err = sonic.Yanglint(ctx, yangDir, fr)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", e.Plan.Name(s), err))
					mu.Unlock()
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return int(ok.Load()), fmt.Errorf("%d of %d fragments fail the YANG check: %w", len(errs), len(switches), errors.Join(errs...))
	}
	return int(ok.Load()), nil
}

// sonicWarnings lists how a fabric does not fit its SONiC target, for
// validate and build (whose P4 output does not depend on it; export sonic
// refuses such a fabric).
func sonicWarnings(f *fabric.Fabric) []string {
	var out []string
	for _, fd := range sonic.Check(f) {
		out = append(out, fmt.Sprintf("SONiC target %s: %s; export sonic will refuse this fabric", orDefault(f.SONiC.Target, sonic.DefaultTarget), fd))
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
