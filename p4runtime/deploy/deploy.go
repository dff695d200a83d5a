// Package deploy pushes a build directory to the devices a targets file
// names: it checks the whole push before writing anything (every device has
// a target, the build's P4Info is the one its entries were built against),
// then pushes the devices in parallel with p4runtime/push.
//
// Only what the chosen devices and mode need is required: the P4Info of
// their programs (which mrcgen build writes), and the compiled BMv2 JSON of
// a device's program only when the device must be given the pipeline (its
// cookie differs from the manifest's); a dry run never needs it. A device
// that needs a pipeline that is not compiled fails on its own, before
// anything is written to it.
package deploy

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

// Options tune a deployment.
type Options struct {
	// Devices restricts the push to these device names (default: every
	// device of the manifest).
	Devices []string
	// Parallelism bounds the devices pushed at once (default 8).
	Parallelism int
	DryRun      bool
	// Progress is called after each batch, serialized.
	Progress func(device string, done, total int)
	Logger   *slog.Logger
	// DialOptions, when set, gives extra gRPC dial options for a device's
	// connection (the lab counts each device's Write RPCs with them).
	DialOptions func(device string) []grpc.DialOption
}

// pipeline is a program's P4Info, cookie and compiled device config (read
// when first needed).
type pipeline struct {
	info      *p4cfg.P4Info
	cookie    uint64
	config    func() ([]byte, error)
	unmanaged []uint32
	// defaults are the program's default entries (DefaultEntries).
	defaults []*p4v1.Entity
}

// Plan prepares every push job, refusing the whole deployment (before
// anything is written) if a device has no target or the build's P4Info of
// a chosen device's program does not match the schema its entries were
// built against. Programs of devices not chosen are not read; whether a
// program is compiled matters only when a device needs its pipeline (see
// the package doc).
func Plan(b *artifacts.Build, t *targets.File, opt Options) ([]push.Job, error) {
	devices := b.Manifest.Devices
	if len(opt.Devices) > 0 {
		var sel []artifacts.Device
		var unknown []string
		for _, name := range opt.Devices {
			d := b.Manifest.Device(name)
			if d == nil {
				unknown = append(unknown, name)
				continue
			}
			sel = append(sel, *d)
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("devices not in build %s: %s", b.Dir, strings.Join(unknown, ", "))
		}
		devices = sel
	}
	var missing []string
	for _, d := range devices {
		if _, ok := t.Devices[d.Name]; !ok {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		more := ""
		if len(missing) > 10 {
			more = fmt.Sprintf(" and %d more", len(missing)-10)
			missing = missing[:10]
		}
		return nil, fmt.Errorf("refusing to push: no target for %s%s (give every device of the build an address, or select devices)", strings.Join(missing, ", "), more)
	}

	pipes := map[string]*pipeline{}
	for _, d := range devices {
		if _, done := pipes[d.Program]; done {
			continue
		}
		pr, ok := b.Manifest.Programs[d.Program]
		if !ok {
			return nil, fmt.Errorf("device %s: build has no program %q", d.Name, d.Program)
		}
		pipe, err := loadPipeline(b, d.Program, pr)
		if err != nil {
			return nil, err
		}
		pipes[d.Program] = pipe
	}

	jobs := make([]push.Job, 0, len(devices))
	for i := range devices {
		d := &devices[i]
		pipe := pipes[d.Program]
		entities, err := b.DeviceEntities(d)
		if err != nil {
			return nil, err
		}
		entities = append(entities, pipe.defaults...)
		ep := t.Resolve(d.Name)
		insecure := ep.Insecure != nil && *ep.Insecure
		var dialOpts []grpc.DialOption
		if opt.DialOptions != nil {
			dialOpts = opt.DialOptions(d.Name)
		}
		jobs = append(jobs, push.Job{
			Target: push.Target{
				Name: d.Name, Address: ep.Address, DeviceID: ep.DeviceID,
				ElectionID: client.ElectionID{Low: ep.ElectionID}, Role: ep.Role,
				Transport:   client.Transport{Insecure: insecure, CAFile: ep.CAFile, CertFile: ep.CertFile, KeyFile: ep.KeyFile, ServerName: ep.ServerName},
				DialOptions: dialOpts,
			},
			Desired: push.Desired{P4Info: pipe.info, Cookie: pipe.cookie, LoadDeviceConfig: pipe.config, Entities: entities, Unmanaged: pipe.unmanaged},
			Options: push.Options{DryRun: opt.DryRun, Logger: opt.Logger},
		})
	}
	return jobs, nil
}

func loadPipeline(b *artifacts.Build, key string, pr artifacts.Program) (*pipeline, error) {
	info, err := p4c.ReadP4Info(filepath.Join(b.Dir, pr.P4Info))
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", key, err)
	}
	prog := b.ProgramFor(key)
	if diffs := p4infogen.Diff(p4infogen.Build(prog), info); diffs != nil {
		return nil, fmt.Errorf("refusing to push: program %s: the build's P4Info is not the one its entries were built against: %s",
			key, strings.Join(diffs, "; "))
	}
	// The manifest's cookie covers the program's source and P4Info, so a
	// device's pipeline can be recognised without the compiled JSON.
	config := sync.OnceValues(func() ([]byte, error) {
		if pr.BMv2JSON == "" {
			return nil, fmt.Errorf("program %s is not compiled: run `mrcgen compile --build %s` first", key, b.Dir)
		}
		// Checked against the sha256 compile recorded: a JSON edited after
		// compiling is refused, naming the file.
		data, err := b.ReadBMv2JSON(key)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", key, err)
		}
		return data, nil
	})
	var unmanaged []uint32
	for _, t := range prog.Tables {
		if t.Owner == schema.OwnerRuntime {
			unmanaged = append(unmanaged, t.ID)
		}
	}
	return &pipeline{info: info, cookie: pr.Cookie, config: config, unmanaged: unmanaged, defaults: DefaultEntries(prog)}, nil
}

// DefaultEntries returns the default entry of every build-owned table of
// prog with a default action: the program's default_action, which a push
// restores when someone changed it. Runtime-owned tables are left out (a
// push leaves them alone).
func DefaultEntries(prog *schema.Program) []*p4v1.Entity {
	var out []*p4v1.Entity
	for _, t := range prog.Tables {
		if t.Owner != schema.OwnerBuild || t.Default == nil {
			continue
		}
		out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: t.ID, IsDefaultAction: true,
			Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: t.Default.ID}}},
		}}})
	}
	return out
}

// Run pushes the build to its targets. Every device is attempted; the
// error joins one error per failed device.
func Run(ctx context.Context, b *artifacts.Build, t *targets.File, opt Options) ([]push.Result, error) {
	jobs, err := Plan(b, t, opt)
	if err != nil {
		return nil, err
	}
	par := opt.Parallelism
	if par <= 0 {
		par = 8
	}
	res, err := push.PushAll(ctx, jobs, par, opt.Progress)
	if err != nil {
		return res, fmt.Errorf("push %s: %w", b.Dir, err)
	}
	return res, nil
}
