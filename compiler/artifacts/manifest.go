// Package artifacts writes and reads a build directory: the artifact set of
// one fabric (P4 programs and P4Info, one P4Runtime WriteRequest per device,
// the fabric description) and the manifest that indexes it.
package artifacts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// Format names the build directory layout this mrcgen writes; readers
// refuse others but FormatV2 and FormatV1.
//
// v3 packs the table files: every switch's WriteRequest in one file
// (switches.binpb), every NIC file's in another (nics.binpb), each a byte
// range the manifest lists under "<file>#<part>" with its offset, size and
// sha256. Creating ~6,900 files was most of a 131k build's time (the
// kernel's, not ours); two files are written with a few large writes.
// A pack is itself a valid WriteRequest (protobuf concatenation appends the
// repeated updates), and so is each range.
//
// v2 adds table_encoding (the table files may be binary WriteRequests) and
// lists the NICs as one set (nics) instead of one device each: at 131,072
// NICs the per-NIC list was 39 MB of the manifest, all of it derived from
// the fabric.
const Format = "mrcgen/build/v3"

// FormatV2 is the layout of builds with one file per switch and per NIC
// part (switches/<switch>.binpb, nics/row-<R>.binpb...). They are still read.
const FormatV2 = "mrcgen/build/v2"

// FormatV1 is the layout of earlier builds: text table files, every NIC
// listed as a device. They are still read.
const FormatV1 = "mrcgen/build/v1"

// Encoding is how a build's table files are written.
type Encoding string

// Table file encodings.
const (
	// Binary: each file is a P4Runtime WriteRequest in protobuf wire
	// format, named *.binpb (the default).
	Binary Encoding = "binary"
	// Text: the same WriteRequest in protobuf text format, one update per
	// line, named *.txtpb (build --text, and every v1 build).
	Text Encoding = "text"
)

// Ext is the file name extension of e's table files.
func (e Encoding) Ext() string {
	if e == Text {
		return ".txtpb"
	}
	return ".binpb"
}

// EncodingOf tells a table file's encoding by its name (a range
// "<file>#<part>" by its file's).
func EncodingOf(path string) Encoding {
	path, _, _ = strings.Cut(path, "#")
	if strings.HasSuffix(path, ".binpb") {
		return Binary
	}
	return Text
}

// ManifestFile is the manifest's name inside a build directory.
const ManifestFile = "manifest.json"

// Manifest indexes a build directory.
type Manifest struct {
	Format string `json:"format"`
	Fabric string `json:"fabric"`
	// TableEncoding is how the table files are written ("binary" or
	// "text"; absent in v1 builds, which are text).
	TableEncoding Encoding `json:"table_encoding,omitempty"`
	// FabricFile is the resolved description the build came from.
	FabricFile string `json:"fabric_file"`
	// FabricSHA256 is the fabric file's digest (absent in builds made
	// before it was recorded).
	FabricSHA256 string `json:"fabric_sha256,omitempty"`
	// Programs maps a program name ("switch", "nic") to its files.
	Programs map[string]Program `json:"programs"`
	Totals   Totals             `json:"totals"`
	// Files lists every table file with its checksum, by path; in a v3
	// build every table is a range of a packed file, listed as
	// "<file>#<part>" (SplitRange) with its offset.
	Files map[string]File `json:"files"`
	// Devices lists every device, switches first, in a fixed order. On
	// disk a v2 manifest lists only the switches here and the NICs in
	// NICs; Open adds the NICs (from NICs and the fabric), ReadManifest
	// does not.
	Devices []Device `json:"devices"`
	// NICs describes every NIC at once (v2; nil in v1, where Devices
	// lists them).
	NICs *NICSet `json:"nics,omitempty"`
	// Warnings repeats what the build warned about.
	Warnings []string `json:"warnings,omitempty"`
}

// Program is one P4 program of the build.
type Program struct {
	Name   string `json:"name"`
	P4     string `json:"p4"`
	P4Info string `json:"p4info"`
	// BMv2JSON is set by `mrcgen compile`, with its digest.
	BMv2JSON       string `json:"bmv2_json,omitempty"`
	BMv2JSONSHA256 string `json:"bmv2_json_sha256,omitempty"`
	// Cookie identifies the pipeline (P4Info and program) for
	// SetForwardingPipelineConfig; it changes whenever either does.
	Cookie uint64 `json:"cookie"`
	// SHA256 is the digest of the P4 source followed by the P4Info.
	SHA256 string `json:"sha256"`
}

// Totals sums the build.
type Totals struct {
	Switches int   `json:"switches"`
	NICs     int   `json:"nics"`
	Entries  int64 `json:"entries"`
	Bytes    int64 `json:"bytes"`
}

// File is one written table file, or one range of a packed file (v3): its
// Bytes bytes from Offset.
type File struct {
	Entries int    `json:"entries"`
	Offset  int64  `json:"offset,omitempty"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// SplitRange splits a Files key "<file>#<part>" into the file that holds
// the range and the part's name; ok is false for a whole file.
func SplitRange(key string) (file, part string, ok bool) {
	return strings.Cut(key, "#")
}

// TableFiles lists the table files on disk, sorted: each file of a v1 or
// v2 build, each packed file of a v3 build once.
func (m *Manifest) TableFiles() []string {
	seen := map[string]bool{}
	var out []string
	for key := range m.Files {
		file, _, _ := SplitRange(key)
		if !seen[file] {
			seen[file] = true
			out = append(out, file)
		}
	}
	sort.Strings(out)
	return out
}

// Device is one device of the fabric and the files that hold its tables, in
// the order they are written to it.
type Device struct {
	Name    string   `json:"name"`
	Role    string   `json:"role"`
	Plane   *int     `json:"plane,omitempty"`
	Index   int      `json:"index"`
	USID    string   `json:"usid,omitempty"`
	Address string   `json:"address,omitempty"`
	Program string   `json:"program"`
	Files   []string `json:"files"`
	Entries int      `json:"entries"`
}

// NICSet describes the NICs of a build, which differ only in their name,
// address and the row and port their files are for: NIC i is host
// plan.HostByIndex(i).
type NICSet struct {
	Count   int    `json:"count"`
	Program string `json:"program"`
	// Entries each NIC holds.
	Entries int `json:"entries"`
	// Files are each NIC's table files in push order; "{row}" and "{port}"
	// stand for its T0 row and down port.
	Files []string `json:"files"`
}

// NICFiles returns the files of the NIC on row and port.
func (s *NICSet) NICFiles(row, port int) []string {
	out := make([]string, len(s.Files))
	for i, f := range s.Files {
		f = strings.ReplaceAll(f, "{row}", strconv.Itoa(row))
		out[i] = strings.ReplaceAll(f, "{port}", strconv.Itoa(port))
	}
	return out
}

// expandNICs appends the NIC devices of m.NICs to m.Devices.
func (m *Manifest) expandNICs(p *plan.Plan) error {
	s := m.NICs
	if s == nil {
		return nil
	}
	if s.Count != p.F.Hosts() {
		return fmt.Errorf("manifest lists %d NICs, fabric %s has %d", s.Count, p.F.Name, p.F.Hosts())
	}
	// Each pattern's names are made once per row or port, and every NIC's
	// list is a window of one array.
	var names [][]string // per pattern: by row, by port, or the one name
	for _, f := range s.Files {
		var by []string
		switch {
		case strings.Contains(f, "{row}"):
			for r := 0; r < p.F.T0Count; r++ {
				by = append(by, strings.ReplaceAll(f, "{row}", strconv.Itoa(r)))
			}
		case strings.Contains(f, "{port}"):
			for k := 0; k < p.F.T0Down; k++ {
				by = append(by, strings.ReplaceAll(f, "{port}", strconv.Itoa(k)))
			}
		default:
			by = []string{f}
		}
		names = append(names, by)
	}
	nf := len(s.Files)
	all := make([]string, s.Count*nf)
	devs := make([]Device, 0, len(m.Devices)+s.Count)
	devs = append(devs, m.Devices...)
	role := plan.RoleNIC.String()
	// Every NIC's name and address are substrings of one string: two
	// strings made per NIC were most of the time of opening a 131k build.
	var text []byte
	ends := make([]int, 2*s.Count)
	for i := 0; i < s.Count; i++ {
		h := p.HostByIndex(i)
		text = p.AppendHostName(text, h)
		ends[2*i] = len(text)
		text = p.HostAddr(h).AppendTo(text)
		ends[2*i+1] = len(text)
	}
	strs := string(text)
	for i := 0; i < s.Count; i++ {
		h := p.HostByIndex(i)
		files := all[i*nf : (i+1)*nf : (i+1)*nf]
		for j, f := range s.Files {
			switch {
			case strings.Contains(f, "{row}"):
				files[j] = names[j][h.Row]
			case strings.Contains(f, "{port}"):
				files[j] = names[j][h.Port]
			default:
				files[j] = names[j][0]
			}
		}
		start := 0
		if i > 0 {
			start = ends[2*i-1]
		}
		devs = append(devs, Device{Name: strs[start:ends[2*i]], Role: role, Index: i, Address: strs[ends[2*i]:ends[2*i+1]],
			Program: s.Program, Files: files, Entries: s.Entries})
	}
	m.Devices = devs
	return nil
}

// onDisk is the manifest as written: with a NIC set, the devices it
// describes are left out of Devices.
func (m *Manifest) onDisk() *Manifest {
	c := *m
	if c.Format == FormatV1 {
		c.TableEncoding = "" // implied
	}
	if m.NICs == nil {
		return &c
	}
	c.Devices = nil
	role := plan.RoleNIC.String()
	for _, d := range m.Devices {
		if d.Role != role {
			c.Devices = append(c.Devices, d)
		}
	}
	return &c
}

// ReadManifest reads and checks the manifest of build directory dir.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read build %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read build %s: %s: %w", dir, ManifestFile, err)
	}
	switch m.Format {
	case Format, FormatV2:
		if m.TableEncoding != Binary && m.TableEncoding != Text {
			return nil, fmt.Errorf("read build %s: %s: table_encoding %q, want %q or %q", dir, ManifestFile, m.TableEncoding, Binary, Text)
		}
	case FormatV1:
		if m.TableEncoding != "" || m.NICs != nil {
			return nil, fmt.Errorf("read build %s: %s: format %s has no table_encoding or nics", dir, ManifestFile, FormatV1)
		}
		m.TableEncoding = Text
	default:
		return nil, fmt.Errorf("read build %s: format %q, this mrcgen reads %q, %q and %q", dir, m.Format, Format, FormatV2, FormatV1)
	}
	if err := m.checkLocal(); err != nil {
		return nil, fmt.Errorf("read build %s: %s: %w", dir, ManifestFile, err)
	}
	return &m, nil
}

// checkLocal checks that every file the manifest names is inside the build
// directory (filepath.IsLocal: relative, no "..", not empty), so that
// reading a build reads nothing outside it whatever its manifest says. It
// names the first few that are not.
func (m *Manifest) checkLocal() error {
	var bad []string
	check := func(field, name string) {
		file, _, _ := SplitRange(name)
		if !filepath.IsLocal(file) {
			bad = append(bad, fmt.Sprintf("%s %q", field, name))
		}
	}
	check("fabric_file", m.FabricFile)
	for _, key := range sortedKeys(m.Programs) {
		pr := m.Programs[key]
		check("programs."+key+".p4", pr.P4)
		check("programs."+key+".p4info", pr.P4Info)
		if pr.BMv2JSON != "" {
			check("programs."+key+".bmv2_json", pr.BMv2JSON)
		}
	}
	for _, key := range sortedKeys(m.Files) {
		check("files", key)
	}
	for _, d := range m.Devices {
		for _, f := range d.Files {
			check("devices."+d.Name+".files", f)
		}
	}
	if m.NICs != nil {
		for _, f := range m.NICs.Files {
			check("nics.files", f)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if len(bad) == 1 {
		return fmt.Errorf("%s: not a file name inside the build directory", bad[0])
	}
	const show = 5
	more := ""
	if len(bad) > show {
		more = fmt.Sprintf(" and %d more", len(bad)-show)
		bad = bad[:show]
	}
	return fmt.Errorf("%s%s: not file names inside the build directory", strings.Join(bad, ", "), more)
}

// Device returns the device with the given name, or nil.
func (m *Manifest) Device(name string) *Device {
	for i := range m.Devices {
		if m.Devices[i].Name == name {
			return &m.Devices[i]
		}
	}
	return nil
}
