package artifacts

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
// Layout (the switches' and NICs' packed files, SwitchesFile and NICsFile,
// and v1 and v2 builds' directories of files, SwitchDir and NICDir).
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
	for _, enc := range []Encoding{Binary, Text} {
		if name == SwitchesFile(enc) || name == NICsFile(enc) {
			return true
		}
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
	entries, err := atomicdir.Contents(dir)
	if err != nil || len(entries) == 0 {
		return err
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

// job is one table file to write: table entries from fill, followed by
// those of shared, or, when raw is set, other updates raw appends
// (returning how many). header is written as a comment at the top of a
// text file.
type job struct {
	path   string
	header string
	fill   func(dst []entry.Entry) []entry.Entry
	shared *sharedPart
	raw    func(dst []byte, enc Encoding) ([]byte, int)
}

// sharedPart is the entries many files end with (what every switch of a
// role and plane holds alike: all but its my_usid entry), rendered once
// by whichever worker needs them first. Encoding a sequence of entries is
// encoding each in turn, so a switch's bytes are its own entry's followed
// by these: 16 renders at mrc-131k instead of 6,144.
type sharedPart struct {
	entries func() []entry.Entry
	once    sync.Once
	bytes   []byte
	count   int
}

func (s *sharedPart) render(enc Encoding) ([]byte, int) {
	s.once.Do(func() {
		var r renderer
		entries := s.entries()
		s.bytes = r.appendEntries(nil, entries, enc)
		s.count = len(entries)
	})
	return s.bytes, s.count
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
	lay := Layout{Encoding: enc, Packed: true}
	for _, s := range p.Switches() {
		plane := s.Plane
		m.Devices = append(m.Devices, Device{
			Name: p.Name(s), Role: s.Role.String(), Plane: &plane, Index: s.Index,
			USID: fmt.Sprintf("%#04x", p.SwitchUSID(s)), Program: ProgramSwitch,
			Files: []string{lay.Switch(p, s)}, Entries: g.SwitchEntryCount(s),
		})
	}
	jobs := tableJobs(p, g, lay)
	common := g.NICCommonEntries()
	clones := schema.NICCloneSessions(f)
	m.NICs = &NICSet{Count: f.Hosts(), Program: ProgramNIC, Entries: len(common) + len(clones) + g.NICEntryCount(),
		Files: []string{lay.NICCommon(), lay.NICClones(), lay.NICRow(-1), lay.NICPort(-1)}}
	m.Totals.Switches = f.Switches()
	m.Totals.NICs = f.Hosts()

	// The returned manifest lists every NIC (131,072 devices at most, a
	// tenth of a second): made while the tables are written.
	expanded := make(chan error, 1)
	go func() { expanded <- m.expandNICs(p) }()
	files, err := runJobs(ctx, root, jobs, enc, opt)
	if xerr := <-expanded; err == nil {
		err = xerr
	}
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
func tableJobs(p *plan.Plan, g *tables.Generator, lay Layout) []job {
	var jobs []job
	type rolePlane struct {
		role  plan.Role
		plane int
	}
	shared := map[rolePlane]*sharedPart{}
	for _, s := range p.Switches() {
		s := s
		name := p.Name(s)
		path := lay.Switch(p, s)
		rp := rolePlane{s.Role, s.Plane}
		if shared[rp] == nil {
			shared[rp] = &sharedPart{entries: func() []entry.Entry { return g.SwitchPlaneEntries(rp.role, rp.plane, nil) }}
		}
		jobs = append(jobs, job{path: path,
			header: fmt.Sprintf("# %s: %s switch %d of plane %d, uSID %#04x", name, s.Role, s.Index, s.Plane, p.SwitchUSID(s)),
			fill:   func(dst []entry.Entry) []entry.Entry { return g.SwitchOwnEntries(s, dst) },
			shared: shared[rp]})
	}
	// Every NIC's tables are the common file, the clone sessions, its row's
	// file and its port's file, written in that order: the NIC identity is shared by the NICs of
	// a row (own T0) and by the NICs on the same down port (own uDL), so the
	// largest fabric needs 769 NIC files, not 131,072.
	common := g.NICCommonEntries()
	jobs = append(jobs, job{path: lay.NICCommon(),
		header: "# tables every NIC holds alike: EV set, row / T1 / down-port uSID templates",
		fill:   func([]entry.Entry) []entry.Entry { return common }})
	clones := schema.NICCloneSessions(p.F)
	jobs = append(jobs, job{path: lay.NICClones(),
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
		jobs = append(jobs, job{path: lay.NICRow(r),
			header: fmt.Sprintf("# NICs on T0 row %d: their own T0 uSID in every plane", r),
			fill:   func(dst []entry.Entry) []entry.Entry { return g.NICRowEntries(r, dst) }})
	}
	for k := 0; k < p.F.T0Down; k++ {
		jobs = append(jobs, job{path: lay.NICPort(k),
			header: fmt.Sprintf("# NICs on T0 down port %d: their plane ports and the uDL each owns", k),
			fill:   func(dst []entry.Entry) []entry.Entry { return g.NICPortEntries(k, dst) }})
	}
	return jobs
}

// renderer is one worker's reusable memory for rendering jobs.
type renderer struct {
	entries []entry.Entry
	wire    tabletext.WireEncoder
}

// render appends the file's bytes to buf, returning them with the number
// of updates.
func (j *job) render(buf []byte, r *renderer, enc Encoding) ([]byte, int) {
	if enc == Text {
		buf = append(buf, j.header...)
		buf = append(buf, '\n')
	}
	switch {
	case j.raw != nil:
		return j.raw(buf, enc)
	}
	entries := j.fill(r.entries)
	r.entries = entries
	buf = r.appendEntries(buf, entries, enc)
	n := len(entries)
	if j.shared != nil {
		b, c := j.shared.render(enc)
		buf = append(buf, b...)
		n += c
	}
	return buf, n
}

// appendEntries appends the entries' updates in encoding enc.
func (r *renderer) appendEntries(buf []byte, entries []entry.Entry, enc Encoding) []byte {
	if enc == Text {
		for k := range entries {
			buf = tabletext.AppendEntry(buf, &entries[k], tabletext.Insert)
		}
		return buf
	}
	for k := range entries {
		buf = r.wire.Append(buf, &entries[k], tabletext.Insert)
	}
	return buf
}

// maxDefaultWorkers bounds the default number of renderers (Options.Workers).
const maxDefaultWorkers = 4

// runJobs renders every table with a pool of workers and writes them, in
// job order, from one goroutine: a job whose path is a range
// "<file>#<part>" is appended to file (each file's ranges are consecutive
// jobs), any other job is a file of its own. The writes go through a 4 MiB
// buffer, so a 131k build's 150 MB are a few dozen write calls into two
// files, whatever the number of cores: more writers only contended in the
// kernel (at GOMAXPROCS 16 the system time of a file per switch was ten
// times that at 2). Rendering and hashing run in parallel, at most a few
// files ahead of the writer.
func runJobs(ctx context.Context, root string, jobs []job, enc Encoding, opt Options) ([]File, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), maxDefaultWorkers)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type slot struct {
		buf   []byte
		count int
		sum   [sha256.Size]byte
		ready chan struct{}
	}
	slots := make([]slot, len(jobs))
	for i := range slots {
		slots[i].ready = make(chan struct{})
	}
	ahead := 4 * workers
	tokens := make(chan struct{}, ahead) // rendered or rendering, not yet written
	free := make(chan []byte, ahead+workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			var r renderer
			for {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					<-tokens
					return
				}
				var buf []byte
				select {
				case buf = <-free:
				default:
				}
				s := &slots[i]
				s.buf, s.count = jobs[i].render(buf[:0], &r, enc)
				s.sum = sha256.Sum256(s.buf)
				close(s.ready)
			}
		})
	}
	files, err := writeInOrder(ctx, root, jobs, len(slots), func(i int) ([]byte, int, [sha256.Size]byte, error) {
		s := &slots[i]
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, 0, s.sum, ctx.Err()
		}
		return s.buf, s.count, s.sum, nil
	}, func(i int) {
		select {
		case free <- slots[i].buf:
		default:
		}
		slots[i].buf = nil
		<-tokens
		if opt.Progress != nil {
			opt.Progress(i+1, len(jobs))
		}
	})
	cancel()
	wg.Wait()
	return files, err
}

// writeInOrder writes job i's bytes (from get) for i in order, then calls
// done(i); see runJobs.
func writeInOrder(ctx context.Context, root string, jobs []job, n int,
	get func(i int) ([]byte, int, [sha256.Size]byte, error), done func(i int)) ([]File, error) {
	files := make([]File, n)
	var (
		f      *os.File
		w      *bufio.Writer
		name   string
		offset int64
	)
	closeFile := func() error {
		if f == nil {
			return nil
		}
		err := w.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		f = nil
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			if f != nil {
				f.Close()
			}
			return nil, err
		}
		file, _, packed := SplitRange(jobs[i].path)
		if f == nil || !packed || file != name {
			if err := closeFile(); err != nil {
				return nil, err
			}
			name, offset = file, 0
			path := filepath.Join(root, file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
			}
			var err error
			if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
				return nil, fmt.Errorf("write %s: %w", file, err)
			}
			if w == nil {
				w = bufio.NewWriterSize(f, 4<<20)
			} else {
				w.Reset(f)
			}
		}
		buf, count, sum, err := get(i)
		if err != nil {
			f.Close()
			return nil, err
		}
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		fi := File{Entries: count, Bytes: int64(len(buf)), SHA256: hex.EncodeToString(sum[:])}
		if packed {
			fi.Offset = offset
		}
		offset += int64(len(buf))
		files[i] = fi
		done(i)
	}
	if err := closeFile(); err != nil {
		return nil, err
	}
	return files, nil
}
