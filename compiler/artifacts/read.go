package artifacts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	for _, path := range sortedKeys(m.Files) {
		st, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			return nil, fmt.Errorf("read build %s: %w", dir, err)
		}
		if fi := m.Files[path]; st.Size() != fi.Bytes {
			return nil, &ChecksumError{Dir: dir, File: path, Want: fi.SHA256, WantBytes: fi.Bytes, GotBytes: st.Size()}
		}
	}
	p := plan.New(f)
	if err := m.expandNICs(p); err != nil {
		return nil, fmt.Errorf("read build %s: %w", dir, err)
	}
	return &Build{Dir: dir, Manifest: m, Fabric: f, Plan: p, Switch: schema.Switch(f), NIC: schema.NIC(f)}, nil
}

// ReadFile returns the bytes of the build's table file path (relative to
// the build, as the manifest lists it) once they are checked against the
// manifest's sha256.
func (b *Build) ReadFile(path string) ([]byte, error) {
	share := strings.HasPrefix(path, NICDir+"/")
	if share {
		b.mu.Lock()
		data, ok := b.shared[path]
		b.mu.Unlock()
		if ok {
			return data, nil
		}
	}
	fi, ok := b.Manifest.Files[path]
	if !ok {
		return nil, fmt.Errorf("build %s: %s is not in the manifest", b.Dir, path)
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, path))
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", b.Dir, err)
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

// parseChecked reads a table file that one device uses and parses it while
// its sha256 is computed alongside; the result is returned only if the
// digest is the manifest's. Files many devices share go through ReadFile
// (read and hashed once).
func parseChecked[T any](b *Build, path string, parse func(name string, data []byte) (T, error)) (T, error) {
	var zero T
	if strings.HasPrefix(path, NICDir+"/") {
		data, err := b.ReadFile(path)
		if err != nil {
			return zero, err
		}
		return parse(filepath.Join(b.Dir, path), data)
	}
	fi, ok := b.Manifest.Files[path]
	if !ok {
		return zero, fmt.Errorf("build %s: %s is not in the manifest", b.Dir, path)
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, path))
	if err != nil {
		return zero, fmt.Errorf("build %s: %w", b.Dir, err)
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
		if f == NICClonePath(EncodingOf(f)) {
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
	if !strings.HasPrefix(path, NICDir+"/") {
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
	port, err := b.cachedNICFile(NICPortPath(h.Port, b.enc()))
	if err != nil {
		return nil, err
	}
	row, err := b.cachedNICFile(NICRowPath(h.Row, b.enc()))
	if err != nil {
		return nil, err
	}
	return append(append([]entry.Entry(nil), port...), row...), nil
}

// NICPortEntries reads what every NIC on T0 down port k holds (for verify:
// NICEntries(h) is NICPortEntries(h.Port) then NICRowEntries(h.Row)).
func (b *Build) NICPortEntries(k int) ([]entry.Entry, error) {
	return b.cachedNICFile(NICPortPath(k, b.enc()))
}

// NICRowEntries reads what every NIC of T0 row r holds (for verify).
func (b *Build) NICRowEntries(r int) ([]entry.Entry, error) {
	return b.cachedNICFile(NICRowPath(r, b.enc()))
}

// NICCommonEntries reads the table file all NICs share (for verify).
func (b *Build) NICCommonEntries() ([]entry.Entry, error) {
	return b.cachedNICFile(NICCommonPath(b.enc()))
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

// SwitchPath is where a build keeps switch s's table file.
func SwitchPath(p *plan.Plan, s plan.Switch, enc Encoding) string {
	return SwitchDir + "/" + p.Name(s) + enc.Ext()
}

// NICCommonPath is where a build keeps the tables every NIC holds alike.
func NICCommonPath(enc Encoding) string { return NICDir + "/common" + enc.Ext() }

// NICClonePath is where a build keeps the clone sessions every NIC holds.
func NICClonePath(enc Encoding) string { return NICDir + "/clone-sessions" + enc.Ext() }

// NICRowPath is where a build keeps the tables the NICs of T0 row r share
// (r < 0: the pattern, with "{row}").
func NICRowPath(r int, enc Encoding) string { return NICDir + "/row-" + num(r, "{row}") + enc.Ext() }

// NICPortPath is where a build keeps the tables the NICs on T0 down port k
// share (k < 0: the pattern, with "{port}").
func NICPortPath(k int, enc Encoding) string { return NICDir + "/port-" + num(k, "{port}") + enc.Ext() }

func num(i int, pattern string) string {
	if i < 0 {
		return pattern
	}
	return strconv.Itoa(i)
}

// SwitchFile names the file of switch s's entries (verify.Locator).
func (b *Build) SwitchFile(s plan.Switch) string { return SwitchPath(b.Plan, s, b.enc()) }

// NICFile names the file that holds host h's entries of a NIC table
// (verify.Locator): the port file holds rx_plane, the row file plane_self,
// the common file the rest.
func (b *Build) NICFile(h plan.Host, table string) string {
	switch table {
	case schema.NICRxPlane:
		return NICPortPath(h.Port, b.enc())
	case schema.NICPlaneSelf:
		return NICRowPath(h.Row, b.enc())
	}
	return NICCommonPath(b.enc())
}

// NICCommonFile names the file every NIC shares (verify.Locator).
func (b *Build) NICCommonFile() string { return NICCommonPath(b.enc()) }

// enc is the encoding of the build's table files.
func (b *Build) enc() Encoding { return b.Manifest.TableEncoding }
