package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/atomicdir"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/tabletext"
)

// Paths inside a build directory; the table files' names are made by
// SwitchPath, NICCommonPath, NICClonePath, NICRowPath and NICPortPath.
const (
	FabricFile = "fabric.yaml"
	SwitchDir  = "switches"
	NICDir     = "nics"
	P4Dir      = "p4"
)

// Program names in the manifest.
const (
	ProgramSwitch = "switch"
	ProgramNIC    = "nic"
)

// Options tune a build.
type Options struct {
	// Workers is how many devices are written at once (default: GOMAXPROCS).
	Workers int
	// Progress, if set, is called as devices are written (from any
	// goroutine, never concurrently).
	Progress func(done, total int)
	// Force also replaces an mrcgen build of another fabric, and a build
	// whose manifest does not read (damaged, or of another format version).
	// Without it only an empty directory or a build of the same fabric is
	// replaced. A directory that is not an mrcgen build, or that holds at its
	// top anything a build does not write, is never replaced.
	Force bool
	// Text writes the table files in protobuf text format (*.txtpb, one
	// update per line) instead of wire format (*.binpb): four times the
	// bytes, for reading by eye.
	Text bool
}

// Write builds the artifact set of f into dir. It writes everything under a
// temporary name next to dir and renames it into place only once complete,
// so dir is never left half-written: on error it is as it was before.
func Write(ctx context.Context, f *fabric.Fabric, dir string, opt Options) (*Manifest, error) {
	dir = filepath.Clean(dir)
	if err := checkReplaceable(dir, f.Name, opt.Force); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create build directory next to %s: %w", dir, err)
	}
	m, err := writeAll(ctx, f, tmp, opt)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := atomicdir.Swap(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return m, nil
}

// isBuildName reports whether mrcgen writes name at the top level of a
// build of fabric: the build itself (the temporary manifest of an
// interrupted compile included) and the exports that default to the build
// directory (export sonic's sonic/, export clab's topologies and targets
// files, named for the fabric). fabric is "" when the build's manifest
// does not read: then only the build's own names count.
func isBuildName(name, fabric string) bool {
	switch name {
	case ManifestFile, FabricFile, P4Dir, SwitchDir, NICDir:
		return true
	}
	if strings.HasPrefix(name, ".manifest-") && strings.HasSuffix(name, ".json") {
		return true
	}
	if fabric == "" {
		return false
	}
	if name == "sonic" {
		return true
	}
	for _, ext := range []string{".clab.yml", ".targets.yaml"} {
		stem, ok := strings.CutSuffix(name, ext)
		if !ok {
			continue
		}
		if stem == fabric {
			return true
		}
		if k, ok := strings.CutPrefix(stem, fabric+"-host"); ok && k != "" && strings.Trim(k, "0123456789") == "" {
			return true
		}
	}
	return false
}

// checkReplaceable says whether dir may be replaced by a build of fabric:
// it does not exist, is empty, or holds only what a build writes and is an
// mrcgen build (its manifest reads) of that fabric; with force also a build
// of another fabric, or one whose manifest does not read. Anything else is
// refused whatever force says: replacing a directory removes everything in
// it.
func checkReplaceable(dir, fabric string, force bool) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("output %s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("output %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	m, merr := ReadManifest(dir)
	built := ""
	if merr == nil {
		built = m.Fabric
	}
	// Whatever its manifest says, a directory holding anything mrcgen does
	// not write there is not ours to remove.
	var foreign []string
	for _, e := range entries {
		if !isBuildName(e.Name(), built) {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) > 5 {
		foreign = append(foreign[:5], fmt.Sprintf("and %d more", len(foreign)-5))
	}
	if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("output %s exists and is not an mrcgen build (no %s): refusing to replace it, with or without --force; remove it yourself or choose another directory", dir, ManifestFile)
	}
	if len(foreign) > 0 {
		return fmt.Errorf("output %s holds %s, which mrcgen does not write: refusing to replace it, with or without --force", dir, strings.Join(foreign, ", "))
	}
	switch {
	case merr == nil && (m.Fabric == fabric || force):
		return nil
	case merr == nil:
		return fmt.Errorf("output %s holds the build of fabric %q, not %q: refusing to replace it without --force", dir, m.Fabric, fabric)
	}
	if !force {
		return fmt.Errorf("output %s looks like a damaged mrcgen build (%v): refusing to replace it without --force", dir, merr)
	}
	return nil
}

// job is one table file to write: table entries from fill, or, when raw is
// set, other updates raw appends (returning how many). header is written
// as a comment at the top of a text file.
type job struct {
	path   string
	header string
	fill   func(dst []entry.Entry) []entry.Entry
	raw    func(dst []byte, enc Encoding) ([]byte, int)
}

func writeAll(ctx context.Context, f *fabric.Fabric, root string, opt Options) (*Manifest, error) {
	p := plan.New(f)
	g := tables.NewGenerator(p)
	enc := Binary
	if opt.Text {
		enc = Text
	}
	m := &Manifest{
		Format:        Format,
		TableEncoding: enc,
		Fabric:        f.Name,
		FabricFile:    FabricFile,
		Programs:      map[string]Program{},
		Files:         map[string]File{},
		Warnings:      f.Warnings(),
	}

	desc, err := yaml.Marshal(f.Describe())
	if err != nil {
		return nil, fmt.Errorf("render fabric description: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, FabricFile), desc, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", FabricFile, err)
	}
	m.FabricSHA256 = sha256Hex(desc)
	if err := os.MkdirAll(filepath.Join(root, P4Dir), 0o755); err != nil {
		return nil, err
	}
	for _, prog := range []struct {
		key  string
		sch  *schema.Program
		emit func(*fabric.Fabric) ([]byte, error)
	}{{ProgramSwitch, g.Switch, emit.Switch}, {ProgramNIC, g.NIC, emit.NIC}} {
		src, err := prog.emit(f)
		if err != nil {
			return nil, err
		}
		info, err := p4infogen.Text(p4infogen.Build(prog.sch))
		if err != nil {
			return nil, err
		}
		pr := Program{
			Name:   prog.sch.Name,
			P4:     filepath.Join(P4Dir, prog.sch.Name+".p4"),
			P4Info: filepath.Join(P4Dir, prog.sch.Name+".p4info.txtpb"),
		}
		if err := os.WriteFile(filepath.Join(root, pr.P4), src, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", pr.P4, err)
		}
		if err := os.WriteFile(filepath.Join(root, pr.P4Info), info, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", pr.P4Info, err)
		}
		sum := sha256.New()
		sum.Write(src)
		sum.Write(info)
		digest := sum.Sum(nil)
		pr.SHA256 = hex.EncodeToString(digest)
		pr.Cookie = binary.BigEndian.Uint64(digest[:8])
		m.Programs[prog.key] = pr
	}

	// Devices and their table files.
	for _, s := range p.Switches() {
		plane := s.Plane
		m.Devices = append(m.Devices, Device{
			Name: p.Name(s), Role: s.Role.String(), Plane: &plane, Index: s.Index,
			USID: fmt.Sprintf("%#04x", p.SwitchUSID(s)), Program: ProgramSwitch,
			Files: []string{SwitchPath(p, s, enc)}, Entries: g.SwitchEntryCount(s),
		})
	}
	jobs := tableJobs(p, g, enc)
	common := g.NICCommonEntries()
	clones := schema.NICCloneSessions(f)
	m.NICs = &NICSet{Count: f.Hosts(), Program: ProgramNIC, Entries: len(common) + len(clones) + g.NICEntryCount(),
		Files: []string{NICCommonPath(enc), NICClonePath(enc), NICRowPath(-1, enc), NICPortPath(-1, enc)}}
	if err := m.expandNICs(p); err != nil {
		return nil, err
	}
	m.Totals.Switches = f.Switches()
	m.Totals.NICs = f.Hosts()

	files, err := runJobs(ctx, root, jobs, enc, opt)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		m.Files[j.path] = files[i]
		m.Totals.Entries += int64(files[i].Entries)
		m.Totals.Bytes += files[i].Bytes
	}

	if err := writeManifest(root, m); err != nil {
		return nil, err
	}
	return m, nil
}

// tableJobs lists every table file of a build of p, in the manifest's
// order: the switches', then the NICs'. Every NIC's tables are the common
// file, the clone sessions, its row's file and its port's file, written in
// that order: the NIC identity is shared by the NICs of a row (own T0) and
// by the NICs on the same down port (own uDL), so the largest fabric needs
// 769 NIC files, not 131,072.
func tableJobs(p *plan.Plan, g *tables.Generator, enc Encoding) []job {
	var jobs []job
	for _, s := range p.Switches() {
		s := s
		name := p.Name(s)
		path := SwitchPath(p, s, enc)
		jobs = append(jobs, job{path: path,
			header: fmt.Sprintf("# %s: %s switch %d of plane %d, uSID %#04x", name, s.Role, s.Index, s.Plane, p.SwitchUSID(s)),
			fill:   func(dst []entry.Entry) []entry.Entry { return g.SwitchEntries(s, dst) }})
	}
	// Every NIC's tables are the common file, the clone sessions, its row's
	// file and its port's file, written in that order: the NIC identity is shared by the NICs of
	// a row (own T0) and by the NICs on the same down port (own uDL), so the
	// largest fabric needs 769 NIC files, not 131,072.
	common := g.NICCommonEntries()
	jobs = append(jobs, job{path: NICCommonPath(enc),
		header: "# tables every NIC holds alike: EV set, row / T1 / down-port uSID templates",
		fill:   func([]entry.Entry) []entry.Entry { return common }})
	clones := schema.NICCloneSessions(p.F)
	jobs = append(jobs, job{path: NICClonePath(enc),
		header: "# clone sessions every NIC holds: the ACK of a delivered packet leaves on the plane it came from",
		raw: func(dst []byte, enc Encoding) ([]byte, int) {
			for _, cs := range clones {
				if enc == Text {
					dst = tabletext.AppendCloneSession(dst, cs, tabletext.Insert)
				} else {
					dst = tabletext.AppendCloneSessionWire(dst, cs, tabletext.Insert)
				}
			}
			return dst, len(clones)
		}})
	for r := 0; r < p.F.T0Count; r++ {
		jobs = append(jobs, job{path: NICRowPath(r, enc),
			header: fmt.Sprintf("# NICs on T0 row %d: their own T0 uSID in every plane", r),
			fill:   func(dst []entry.Entry) []entry.Entry { return g.NICRowEntries(r, dst) }})
	}
	for k := 0; k < p.F.T0Down; k++ {
		jobs = append(jobs, job{path: NICPortPath(k, enc),
			header: fmt.Sprintf("# NICs on T0 down port %d: their plane ports and the uDL each owns", k),
			fill:   func(dst []entry.Entry) []entry.Entry { return g.NICPortEntries(k, dst) }})
	}
	return jobs
}

// render appends the file's bytes to buf (entries is scratch), returning
// them with the number of updates.
func (j *job) render(buf []byte, entries []entry.Entry, enc Encoding) ([]byte, []entry.Entry, int) {
	if enc == Text {
		buf = append(buf, j.header...)
		buf = append(buf, '\n')
	}
	switch {
	case j.raw != nil:
		var n int
		buf, n = j.raw(buf, enc)
		return buf, entries, n
	case enc == Text:
		entries = j.fill(entries)
		for k := range entries {
			buf = tabletext.AppendEntry(buf, &entries[k], tabletext.Insert)
		}
	default:
		entries = j.fill(entries)
		for k := range entries {
			buf = tabletext.AppendEntryWire(buf, &entries[k], tabletext.Insert)
		}
	}
	return buf, entries, len(entries)
}

// maxDefaultWorkers bounds the default number of writers (Options.Workers).
const maxDefaultWorkers = 4

// runJobs writes every table file with a pool of workers.
func runJobs(ctx context.Context, root string, jobs []job, enc Encoding, opt Options) ([]File, error) {
	workers := opt.Workers
	if workers <= 0 {
		// More writers than this only contend in the kernel (page cache
		// and directory locks): on 16 cores the system time of 16 writers
		// was ten times that of two. Generating and encoding a file costs
		// less than writing it, so a few writers keep up.
		workers = min(runtime.GOMAXPROCS(0), maxDefaultWorkers)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files := make([]File, len(jobs))
	var next, done atomic.Int64
	var progressMu sync.Mutex
	var firstErr error
	var errOnce sync.Once
	var madeDirs sync.Map
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var entries []entry.Entry
			var buf []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := jobs[i]
				dir := filepath.Dir(filepath.Join(root, j.path))
				if _, ok := madeDirs.Load(dir); !ok {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("create %s: %w", dir, err); cancel() })
						return
					}
					madeDirs.Store(dir, true)
				}
				var count int
				buf, entries, count = j.render(buf[:0], entries, enc)
				if err := os.WriteFile(filepath.Join(root, j.path), buf, 0o644); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("write %s: %w", j.path, err); cancel() })
					return
				}
				sum := sha256.Sum256(buf)
				files[i] = File{Entries: count, Bytes: int64(len(buf)), SHA256: hex.EncodeToString(sum[:])}
				d := int(done.Add(1))
				if opt.Progress != nil {
					progressMu.Lock()
					opt.Progress(d, len(jobs))
					progressMu.Unlock()
				}
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
	return files, nil
}
