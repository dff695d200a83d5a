package sonic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/atomicdir"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// Files of an export directory.
const (
	IndexFile    = "index.json"
	FabricFile   = "fabric.yaml"
	FragmentFile = "config_db.json"
	// Format names the export directory layout; readers refuse others.
	Format = "mrcgen/sonic/v1"
)

// Index describes an export directory.
type Index struct {
	Format     string        `json:"format"`
	Fabric     string        `json:"fabric"`
	Target     string        `json:"target"`
	LinkPrefix string        `json:"link_prefix"`
	Lanes      int           `json:"lanes_per_port"`
	Switches   []IndexSwitch `json:"switches"`
}

// IndexSwitch is one switch of an export.
type IndexSwitch struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	SID    string `json:"sid"`
	Ports  int    `json:"ports"`
	Routes int    `json:"routes"`
}

// Options tune an export.
type Options struct {
	// Workers is how many switches are written at once (default GOMAXPROCS).
	Workers int
	// Progress, if set, is called as switches are written (never
	// concurrently).
	Progress func(done, total int)
}

// SwitchPath is where switch s's fragment goes in an export directory.
func SwitchPath(p *plan.Plan, s plan.Switch) string {
	return filepath.Join(p.Name(s), FragmentFile)
}

// Write exports f into dir: fabric.yaml, index.json and one
// <switch>/config_db.json per switch. It writes under a temporary name
// next to dir and renames it into place once complete, so dir is never
// half-written; it refuses to replace a directory that is not an export.
func Write(ctx context.Context, f *fabric.Fabric, dir string, opt Options) (*Index, error) {
	p := plan.New(f)
	x, err := New(p)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	if err := checkReplaceable(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create export directory next to %s: %w", dir, err)
	}
	idx, err := x.writeAll(ctx, tmp, opt)
	if err == nil {
		err = atomicdir.Swap(tmp, dir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return idx, nil
}

func (x *Exporter) writeAll(ctx context.Context, root string, opt Options) (*Index, error) {
	p, f := x.Plan, x.Plan.F
	desc, err := yaml.Marshal(f.Describe())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, FabricFile), desc, 0o644); err != nil {
		return nil, err
	}
	switches := p.Switches()
	idx := &Index{Format: Format, Fabric: f.Name, Target: x.Target.Name, LinkPrefix: x.Links.Prefix().String(),
		Lanes: x.Ports.LanesPerPort, Switches: make([]IndexSwitch, len(switches))}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, done atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(switches) || ctx.Err() != nil {
					return
				}
				s := switches[i]
				fr := x.Switch(s)
				path := SwitchPath(p, s)
				err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)
				var data []byte
				if err == nil {
					data, err = Marshal(fr)
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(root, path), data, 0o644)
				}
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("write %s: %w", path, err)
					}
					cancel()
					mu.Unlock()
					return
				}
				idx.Switches[i] = IndexSwitch{Name: p.Name(s), File: path, SID: x.SID(s).String(), Ports: len(fr["PORT"]), Routes: len(fr["STATIC_ROUTE"])}
				d := int(done.Add(1))
				if opt.Progress != nil {
					opt.Progress(d, len(switches))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, IndexFile), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return idx, nil
}

func checkReplaceable(dir string) error {
	entries, err := atomicdir.Contents(dir)
	if err != nil || len(entries) == 0 {
		return err
	}
	idx, err := readIndex(dir)
	if err != nil {
		return fmt.Errorf("output %s exists and is not an mrcgen SONiC export (no %s): refusing to replace it", dir, IndexFile)
	}
	// An export holding anything the export did not write (a file someone
	// put there) is not ours to remove.
	ours := map[string]bool{IndexFile: true, FabricFile: true}
	for _, sw := range idx.Switches {
		ours[sw.Name] = true
	}
	for _, e := range entries {
		if !ours[e.Name()] {
			return fmt.Errorf("output %s holds %s, which the export did not write: refusing to replace it", dir, e.Name())
		}
	}
	return nil
}

func readIndex(dir string) (*Index, error) {
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil, err
	}
	var idx Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, IndexFile), err)
	}
	if idx.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q", filepath.Join(dir, IndexFile), idx.Format, Format)
	}
	return &idx, nil
}

// Export is an export directory opened for reading. It serves `verify`:
// each switch's entries come from its config_db.json fragment (read with
// Read, turned into the switch program's entries); the NICs, which SONiC
// does not configure, get the entries the generator gives them.
type Export struct {
	Dir      string
	Index    *Index
	Fabric   *fabric.Fabric
	Plan     *plan.Plan
	Exporter *Exporter
	gen      *tables.Generator
}

// Open reads the index and fabric of export directory dir.
func Open(dir string) (*Export, error) {
	idx, err := readIndex(dir)
	if err != nil {
		return nil, fmt.Errorf("open SONiC export: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, FabricFile))
	if err != nil {
		return nil, fmt.Errorf("open SONiC export: %w", err)
	}
	f, err := fabric.Parse(filepath.Join(dir, FabricFile), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	p := plan.New(f)
	x, err := New(p)
	if err != nil {
		return nil, err
	}
	return &Export{Dir: dir, Index: idx, Fabric: f, Plan: p, Exporter: x, gen: tables.NewGenerator(p)}, nil
}

// Fragment reads switch s's fragment.
func (e *Export) Fragment(s plan.Switch) (Fragment, error) {
	path := filepath.Join(e.Dir, SwitchPath(e.Plan, s))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fr, err := ParseFragment(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fr, nil
}

// Tables reads switch s's forwarding tables from its fragment.
func (e *Export) Tables(s plan.Switch) (*SwitchTables, error) {
	fr, err := e.Fragment(s)
	if err != nil {
		return nil, err
	}
	return e.Exporter.Read(s, fr)
}

// SwitchEntries implements verify.Source from the switch's fragment.
func (e *Export) SwitchEntries(s plan.Switch) ([]entry.Entry, error) {
	st, err := e.Tables(s)
	if err != nil {
		return nil, err
	}
	return e.Exporter.Entries(st), nil
}

// NICEntries implements verify.Source: the generator's (SONiC configures
// no NIC).
func (e *Export) NICEntries(h plan.Host) ([]entry.Entry, error) { return e.gen.NICEntries(h, nil), nil }

// NICCommonEntries implements verify.Source: the generator's.
func (e *Export) NICCommonEntries() ([]entry.Entry, error) { return e.gen.NICCommonEntries(), nil }

// Blame lists, for every switch, how its fragment differs from the plan's
// intent (see Exporter.Blame), and every fragment that cannot be read.
func (e *Export) Blame() []string {
	var out []string
	for _, s := range e.Plan.Switches() {
		st, err := e.Tables(s)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		out = append(out, e.Exporter.Blame(s, st)...)
	}
	return out
}
