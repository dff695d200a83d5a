package artifacts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/tabletext"
)

// Build is a build directory opened for reading. Every file it reads is
// checked against the manifest's sha256 first: a file changed after the
// build is refused (ChecksumError), never used.
type Build struct {
	Dir      string
	Manifest *Manifest
	Fabric   *fabric.Fabric
	Plan     *plan.Plan
	Switch   *schema.Program
	NIC      *schema.Program

	mu sync.Mutex
	// shared holds the checked bytes of the files many devices share (the
	// NIC files), read and hashed once.
	shared      map[string][]byte
	nicFiles    map[string][]entry.Entry
	nicEntities map[string][]*p4v1.Entity
}

// ChecksumError says that a file of a build is not the one its manifest
// lists: it was changed after the build.
type ChecksumError struct {
	Dir, File string
	// Want is the manifest's sha256, Got the file's; Got is empty when the
	// size alone told (GotBytes, the manifest's WantBytes).
	Want, Got           string
	WantBytes, GotBytes int64
}

func (e *ChecksumError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("build %s: %s was changed after the build: it has %d bytes, the manifest says %d", e.Dir, e.File, e.GotBytes, e.WantBytes)
	}
	return fmt.Sprintf("build %s: %s was changed after the build: its sha256 is %s, the manifest says %s", e.Dir, e.File, e.Got, e.Want)
}

func sha256Hex(data ...[]byte) string {
	h := sha256.New()
	for _, d := range data {
		h.Write(d)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Open reads the manifest and fabric of build directory dir. It checks the
// fabric file and the P4 programs against the manifest's digests, and that
// every table file is there with its size; each table file's sha256 is
// checked when it is read (ReadFile), so that reading a build reads every
// byte once.
func Open(dir string) (*Build, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, m.FabricFile))
	if err != nil {
		return nil, fmt.Errorf("read build %s: %w", dir, err)
	}
	if m.FabricSHA256 != "" {
		if got := sha256Hex(data); got != m.FabricSHA256 {
			return nil, &ChecksumError{Dir: dir, File: m.FabricFile, Want: m.FabricSHA256, Got: got}
		}
	}
	f, err := fabric.Parse(filepath.Join(dir, m.FabricFile), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	for _, key := range sortedKeys(m.Programs) {
		pr := m.Programs[key]
		src, err := os.ReadFile(filepath.Join(dir, pr.P4))
		if err != nil {
			return nil, fmt.Errorf("read build %s: %w", dir, err)
		}
		info, err := os.ReadFile(filepath.Join(dir, pr.P4Info))
		if err != nil {
			return nil, fmt.Errorf("read build %s: %w", dir, err)
		}
		if got := sha256Hex(src, info); got != pr.SHA256 {
			return nil, &ChecksumError{Dir: dir, File: pr.P4 + " + " + pr.P4Info, Want: pr.SHA256, Got: got}
		}
	}
	if err := checkSizes(dir, m); err != nil {
		return nil, err
	}
	p := plan.New(f)
	if err := m.expandNICs(p); err != nil {
		return nil, fmt.Errorf("read build %s: %w", dir, err)
	}
	return &Build{Dir: dir, Manifest: m, Fabric: f, Plan: p, Switch: schema.Switch(f), NIC: schema.NIC(f)}, nil
}

// checkSizes checks that every table file is there with the size the
// manifest gives: a whole file its Bytes, a packed file the ranges it
// lists, which must tile it from offset 0 without gap or overlap.
func checkSizes(dir string, m *Manifest) error {
	packs := map[string][]string{} // packed file: its ranges
	for _, path := range sortedKeys(m.Files) {
		if file, _, ok := SplitRange(path); ok {
			packs[file] = append(packs[file], path)
			continue
		}
		st, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			return fmt.Errorf("read build %s: %w", dir, err)
		}
		if fi := m.Files[path]; st.Size() != fi.Bytes {
			return &ChecksumError{Dir: dir, File: path, Want: fi.SHA256, WantBytes: fi.Bytes, GotBytes: st.Size()}
		}
	}
	for _, file := range sortedKeys(packs) {
		ranges := packs[file]
		sort.Slice(ranges, func(i, j int) bool { return m.Files[ranges[i]].Offset < m.Files[ranges[j]].Offset })
		var end int64
		for _, r := range ranges {
			fi := m.Files[r]
			if fi.Offset != end || fi.Bytes < 0 {
				return fmt.Errorf("read build %s: %s: range %s at offset %d, %d bytes: the ranges of %s must follow each other from offset 0 (the previous ends at %d)",
					dir, ManifestFile, r, fi.Offset, fi.Bytes, file, end)
			}
			end += fi.Bytes
		}
		st, err := os.Stat(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("read build %s: %w", dir, err)
		}
		if st.Size() != end {
			return &ChecksumError{Dir: dir, File: file, WantBytes: end, GotBytes: st.Size()}
		}
	}
	return nil
}

// ReadFile returns the bytes of the build's table file path (relative to
// the build, as the manifest lists it) once they are checked against the
// manifest's sha256.
func (b *Build) ReadFile(path string) ([]byte, error) {
	share := shared(path)
	if share {
		b.mu.Lock()
		data, ok := b.shared[path]
		b.mu.Unlock()
		if ok {
			return data, nil
		}
	}
	data, fi, err := b.readUnchecked(path)
	if err != nil {
		return nil, err
	}
	if got := sha256Hex(data); got != fi.SHA256 {
		return nil, &ChecksumError{Dir: b.Dir, File: path, Want: fi.SHA256, Got: got}
	}
	if share {
		b.mu.Lock()
		if b.shared == nil {
			b.shared = map[string][]byte{}
		}
		b.shared[path] = data
		b.mu.Unlock()
	}
	return data, nil
}

// readUnchecked returns the bytes of the table file or range path as the
// manifest lists it, not yet checked against its sha256.
func (b *Build) readUnchecked(path string) ([]byte, File, error) {
	fi, ok := b.Manifest.Files[path]
	if !ok {
		return nil, fi, fmt.Errorf("build %s: %s is not in the manifest", b.Dir, path)
	}
	file, _, packed := SplitRange(path)
	if !packed {
		data, err := os.ReadFile(filepath.Join(b.Dir, path))
		if err != nil {
			return nil, fi, fmt.Errorf("build %s: %w", b.Dir, err)
		}
		return data, fi, nil
	}
	f, err := os.Open(filepath.Join(b.Dir, file))
	if err != nil {
		return nil, fi, fmt.Errorf("build %s: %w", b.Dir, err)
	}
	defer f.Close()
	data, err := readRange(f, fi, nil)
	if err != nil {
		return nil, fi, fmt.Errorf("build %s: %s: %w", b.Dir, path, err)
	}
	return data, fi, nil
}

// tableReader reads a build's tables, unchecked, into one reused buffer,
// keeping the packed files it opens open until close: for reading every
// table once (verify --build) without a buffer and an open per table.
type tableReader struct {
	b     *Build
	files map[string]*os.File
	buf   []byte
}

// read returns the bytes of table path, valid until the next read.
func (r *tableReader) read(path string) ([]byte, File, error) {
	file, _, packed := SplitRange(path)
	if !packed {
		return r.b.readUnchecked(path)
	}
	fi, ok := r.b.Manifest.Files[path]
	if !ok {
		return nil, fi, fmt.Errorf("build %s: %s is not in the manifest", r.b.Dir, path)
	}
	f := r.files[file]
	if f == nil {
		var err error
		if f, err = os.Open(filepath.Join(r.b.Dir, file)); err != nil {
			return nil, fi, fmt.Errorf("build %s: %w", r.b.Dir, err)
		}
		if r.files == nil {
			r.files = map[string]*os.File{}
		}
		r.files[file] = f
	}
	if int64(cap(r.buf)) < fi.Bytes {
		r.buf = make([]byte, fi.Bytes)
	}
	data, err := readRange(f, fi, r.buf[:fi.Bytes])
	if err != nil {
		return nil, fi, fmt.Errorf("build %s: %s: %w", r.b.Dir, path, err)
	}
	return data, fi, nil
}

func (r *tableReader) close() {
	for _, f := range r.files {
		f.Close()
	}
}

// readRange reads fi's range of a packed file into data (len fi.Bytes;
// nil: a new slice).
func readRange(f *os.File, fi File, data []byte) ([]byte, error) {
	if data == nil {
		data = make([]byte, fi.Bytes)
	}
	n, err := f.ReadAt(data, fi.Offset)
	if n == len(data) {
		return data, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("%d bytes at offset %d, the file ends after %d", fi.Bytes, fi.Offset, fi.Offset+int64(n))
	}
	return nil, err
}

// parseChecked reads a table file that one device uses and parses it while
// its sha256 is computed alongside; the result is returned only if the
// digest is the manifest's. Files many devices share go through ReadFile
// (read and hashed once).
func parseChecked[T any](b *Build, path string, parse func(name string, data []byte) (T, error)) (T, error) {
	var zero T
	if shared(path) {
		data, err := b.ReadFile(path)
		if err != nil {
			return zero, err
		}
		return parse(filepath.Join(b.Dir, path), data)
	}
	data, fi, err := b.readUnchecked(path)
	if err != nil {
		return zero, err
	}
	sum := make(chan string, 1)
	go func() { sum <- sha256Hex(data) }()
	v, perr := parse(filepath.Join(b.Dir, path), data)
	if got := <-sum; got != fi.SHA256 {
		// A changed file explains any parse error: report the change.
		return zero, &ChecksumError{Dir: b.Dir, File: path, Want: fi.SHA256, Got: got}
	}
	return v, perr
}

// ReadBMv2JSON returns the BMv2 JSON of a compiled program, checked against
// the digest `mrcgen compile` recorded (builds compiled before the digest
// was recorded are read unchecked).
func (b *Build) ReadBMv2JSON(key string) ([]byte, error) {
	pr, ok := b.Manifest.Programs[key]
	if !ok || pr.BMv2JSON == "" {
		return nil, fmt.Errorf("build %s: program %s is not compiled", b.Dir, key)
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, pr.BMv2JSON))
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", b.Dir, err)
	}
	if pr.BMv2JSONSHA256 != "" {
		if got := sha256Hex(data); got != pr.BMv2JSONSHA256 {
			return nil, &ChecksumError{Dir: b.Dir, File: pr.BMv2JSON, Want: pr.BMv2JSONSHA256, Got: got}
		}
	}
	return data, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DeviceEntries reads the table entries of a device, from its files in
// order.
func (b *Build) DeviceEntries(d *Device) ([]entry.Entry, error) {
	prog := b.ProgramFor(d.Program)
	var out []entry.Entry
	for _, f := range d.Files {
		if f == b.layout().NICClones() {
			continue // clone sessions, not table entries: see DeviceEntities
		}
		entries, err := parseChecked(b, f, func(name string, data []byte) ([]entry.Entry, error) {
			return parseEntries(prog, name, data)
		})
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		out = append(out, entries...)
	}
	return out, nil
}

// DeviceEntities reads everything a device's files hold, in order, as
// P4Runtime entities: table entries and clone sessions (what push writes).
// The entities of the files many devices share (the NIC files) are parsed
// once and shared by every device's slice: callers must not change them.
func (b *Build) DeviceEntities(d *Device) ([]*p4v1.Entity, error) {
	prog := b.ProgramFor(d.Program)
	var out []*p4v1.Entity
	for _, f := range d.Files {
		ents, err := b.fileEntities(prog, f)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		out = append(out, ents...)
	}
	return out, nil
}

// fileEntities parses one table file into entities, once per shared file.
func (b *Build) fileEntities(prog *schema.Program, path string) ([]*p4v1.Entity, error) {
	parse := func(name string, data []byte) ([]*p4v1.Entity, error) { return parseEntities(prog, name, data) }
	if !shared(path) {
		return parseChecked(b, path, parse)
	}
	b.mu.Lock()
	ents, ok := b.nicEntities[path]
	b.mu.Unlock()
	if ok {
		return ents, nil
	}
	ents, err := parseChecked(b, path, parse)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.nicEntities == nil {
		b.nicEntities = map[string][]*p4v1.Entity{}
	}
	b.nicEntities[path] = ents
	return ents, nil
}

// parseEntries decodes a table file by its encoding (told by its name).
func parseEntries(prog *schema.Program, name string, data []byte) ([]entry.Entry, error) {
	if EncodingOf(name) == Binary {
		return tabletext.ParseWire(prog, name, data)
	}
	return tabletext.Parse(prog, name, data)
}

// parseEntities decodes a table file into entities by its encoding.
func parseEntities(prog *schema.Program, name string, data []byte) ([]*p4v1.Entity, error) {
	if EncodingOf(name) == Binary {
		return tabletext.ParseEntitiesWire(prog, name, data)
	}
	return tabletext.ParseEntities(prog, name, data)
}

// SwitchEntries reads the table file of switch s (for verify).
func (b *Build) SwitchEntries(s plan.Switch) ([]entry.Entry, error) {
	return parseChecked(b, b.SwitchFile(s), func(name string, data []byte) ([]entry.Entry, error) {
		return parseEntries(b.Switch, name, data)
	})
}

// NICEntries reads the own tables of host h's NIC: its row's and its port's
// files (for verify).
func (b *Build) NICEntries(h plan.Host) ([]entry.Entry, error) {
	port, err := b.cachedNICFile(b.layout().NICPort(h.Port))
	if err != nil {
		return nil, err
	}
	row, err := b.cachedNICFile(b.layout().NICRow(h.Row))
	if err != nil {
		return nil, err
	}
	return append(append([]entry.Entry(nil), port...), row...), nil
}

// NICPortEntries reads what every NIC on T0 down port k holds (for verify:
// NICEntries(h) is NICPortEntries(h.Port) then NICRowEntries(h.Row)).
func (b *Build) NICPortEntries(k int) ([]entry.Entry, error) {
	return b.cachedNICFile(b.layout().NICPort(k))
}

// NICRowEntries reads what every NIC of T0 row r holds (for verify).
func (b *Build) NICRowEntries(r int) ([]entry.Entry, error) {
	return b.cachedNICFile(b.layout().NICRow(r))
}

// NICCommonEntries reads the table file all NICs share (for verify).
func (b *Build) NICCommonEntries() ([]entry.Entry, error) {
	return b.cachedNICFile(b.layout().NICCommon())
}

func (b *Build) cachedNICFile(path string) ([]entry.Entry, error) {
	b.mu.Lock()
	e, ok := b.nicFiles[path]
	b.mu.Unlock()
	if ok {
		return e, nil
	}
	data, err := b.ReadFile(path)
	if err != nil {
		return nil, err
	}
	e, err = parseEntries(b.NIC, filepath.Join(b.Dir, path), data)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.nicFiles == nil {
		b.nicFiles = map[string][]entry.Entry{}
	}
	b.nicFiles[path] = e
	return e, nil
}

// Layout names a build's table files: how they are encoded, and whether
// they are ranges of two packed files (v3: "switches.binpb#<switch>",
// "nics.binpb#row-<R>") or a file each (v1, v2: "switches/<switch>.binpb",
// "nics/row-<R>.binpb").
type Layout struct {
	Encoding Encoding
	Packed   bool
}

// Layout is the layout of the build m describes.
func (m *Manifest) Layout() Layout {
	return Layout{Encoding: m.TableEncoding, Packed: m.Format == Format}
}

// SwitchesFile and NICsFile are the packed files of a v3 build with table
// encoding enc.
func SwitchesFile(enc Encoding) string { return SwitchDir + enc.Ext() }

// NICsFile is the packed file of a v3 build's NIC tables.
func NICsFile(enc Encoding) string { return NICDir + enc.Ext() }

func (l Layout) path(dir, part string) string {
	if l.Packed {
		return dir + l.Encoding.Ext() + "#" + part
	}
	return dir + "/" + part + l.Encoding.Ext()
}

// Switch names switch s's tables.
func (l Layout) Switch(p *plan.Plan, s plan.Switch) string { return l.path(SwitchDir, p.Name(s)) }

// NICCommon names the tables every NIC holds alike.
func (l Layout) NICCommon() string { return l.path(NICDir, "common") }

// NICClones names the clone sessions every NIC holds.
func (l Layout) NICClones() string { return l.path(NICDir, "clone-sessions") }

// NICRow names the tables the NICs of T0 row r share (r < 0: the pattern,
// with "{row}").
func (l Layout) NICRow(r int) string { return l.path(NICDir, "row-"+num(r, "{row}")) }

// NICPort names the tables the NICs on T0 down port k share (k < 0: the
// pattern, with "{port}").
func (l Layout) NICPort(k int) string { return l.path(NICDir, "port-"+num(k, "{port}")) }

// shared reports whether many devices use the table file or range path
// (the NICs' files), so that it is read and parsed once.
func shared(path string) bool {
	return strings.HasPrefix(path, NICDir+"/") || strings.HasPrefix(path, NICDir+".")
}

func num(i int, pattern string) string {
	if i < 0 {
		return pattern
	}
	return strconv.Itoa(i)
}

// SwitchFile names the file of switch s's entries (verify.Locator).
func (b *Build) SwitchFile(s plan.Switch) string { return b.layout().Switch(b.Plan, s) }

// NICFile names the file that holds host h's entries of a NIC table
// (verify.Locator): the port file holds rx_plane, the row file plane_self,
// the common file the rest.
func (b *Build) NICFile(h plan.Host, table string) string {
	switch table {
	case schema.NICRxPlane:
		return b.layout().NICPort(h.Port)
	case schema.NICPlaneSelf:
		return b.layout().NICRow(h.Row)
	}
	return b.layout().NICCommon()
}

// NICCommonFile names the file every NIC shares (verify.Locator).
func (b *Build) NICCommonFile() string { return b.layout().NICCommon() }

// layout names the build's table files.
func (b *Build) layout() Layout { return b.Manifest.Layout() }
