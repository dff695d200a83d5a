package artifacts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/tiny from the current build")

func preset(t testing.TB, name string) *fabric.Fabric {
	t.Helper()
	f, err := fabric.FromPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func write(t *testing.T, f *fabric.Fabric, dir string, opt artifacts.Options) *artifacts.Manifest {
	t.Helper()
	m, err := artifacts.Write(context.Background(), f, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// listFiles returns every regular file under dir, relative, sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// names lists the entries of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// tableBytes returns the bytes of a manifest's table: a whole file, or a
// range of a packed file.
func tableBytes(t *testing.T, dir string, m *artifacts.Manifest, key string) []byte {
	t.Helper()
	file, _, packed := artifacts.SplitRange(key)
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	if !packed {
		return data
	}
	fi, ok := m.Files[key]
	if !ok || fi.Offset+fi.Bytes > int64(len(data)) {
		t.Fatalf("%s: no such range (%+v) in a file of %d bytes", key, fi, len(data))
	}
	return data[fi.Offset : fi.Offset+fi.Bytes]
}

// editTable changes a table of a build in place (a range keeps its
// length: edit must return as many bytes as it is given), and restores it
// when the test ends.
func editTable(t *testing.T, dir string, m *artifacts.Manifest, key string, edit func([]byte) []byte) {
	t.Helper()
	file, _, packed := artifacts.SplitRange(key)
	full := filepath.Join(dir, file)
	orig, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(full, orig, 0o644) })
	data := slices.Clone(orig)
	if packed {
		fi := m.Files[key]
		part := data[fi.Offset : fi.Offset+fi.Bytes]
		if got := edit(slices.Clone(part)); len(got) != len(part) {
			t.Fatalf("editTable: an edit of range %s must keep its %d bytes", key, len(part))
		} else {
			copy(part, got)
		}
	} else {
		data = edit(data)
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestManifestMatchesFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		enc  artifacts.Encoding
	}{{"tiny", artifacts.Binary}, {"small", artifacts.Binary}, {"tiny", artifacts.Text}, {"small", artifacts.Text}} {
		name, enc := c.name, c.enc
		t.Run(name+"/"+string(enc), func(t *testing.T) {
			f := preset(t, name)
			p := plan.New(f)
			g := tables.NewGenerator(p)
			lay := artifacts.Layout{Encoding: enc, Packed: true}
			dir := filepath.Join(t.TempDir(), "out")
			var progress []int
			m := write(t, f, dir, artifacts.Options{Workers: 3, Text: enc == artifacts.Text, Progress: func(done, total int) {
				progress = append(progress, done)
				if total != f.Switches()+2+f.T0Count+f.T0Down {
					t.Errorf("progress total %d", total)
				}
			}})

			// The manifest on disk, once Open adds the NICs, is the one
			// returned; on disk it lists the switches and the NIC set.
			opened, err := artifacts.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(opened.Manifest, m) {
				t.Errorf("manifest.json differs from the returned manifest")
			}
			onDisk, err := artifacts.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(onDisk.Devices) != f.Switches() || onDisk.NICs == nil || onDisk.NICs.Count != f.Hosts() {
				t.Errorf("manifest.json lists %d devices and NICs %+v; want the %d switches and %d NICs", len(onDisk.Devices), onDisk.NICs, f.Switches(), f.Hosts())
			}
			if m.Format != artifacts.Format || m.Fabric != f.Name || m.FabricFile != artifacts.FabricFile || m.TableEncoding != enc {
				t.Errorf("manifest head: %q %q %q %q", m.Format, m.Fabric, m.FabricFile, m.TableEncoding)
			}
			if len(progress) != len(m.Files) || progress[len(progress)-1] != len(m.Files) {
				t.Errorf("progress %v for %d files", progress, len(m.Files))
			}

			// Every listed file: its bytes, checksum and entry count.
			var entries, bytesSum int64
			for path, fi := range m.Files {
				data := tableBytes(t, dir, m, path)
				sum := sha256.Sum256(data)
				if fi.SHA256 != hex.EncodeToString(sum[:]) || fi.Bytes != int64(len(data)) {
					t.Errorf("%s: manifest says %d bytes %s, file has %d bytes %x", path, fi.Bytes, fi.SHA256, len(data), sum)
				}
				if artifacts.EncodingOf(path) != enc {
					t.Errorf("%s is not a %s file", path, enc)
				}
				n := bytes.Count(data, []byte("\nupdates{"))
				if enc == artifacts.Binary {
					var req p4v1.WriteRequest
					if err := proto.Unmarshal(data, &req); err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					n = len(req.Updates)
				}
				if n != fi.Entries {
					t.Errorf("%s: manifest says %d entries, file has %d", path, fi.Entries, n)
				}
				entries += int64(fi.Entries)
				bytesSum += fi.Bytes
			}
			if m.Totals.Entries != entries || m.Totals.Bytes != bytesSum {
				t.Errorf("totals %+v, files sum to %d entries %d bytes", m.Totals, entries, bytesSum)
			}
			// The two packed files, each every one of its ranges after the
			// other: a whole file is a WriteRequest too, with every update.
			packs := []string{artifacts.SwitchesFile(enc), artifacts.NICsFile(enc)}
			if got := m.TableFiles(); !slices.Equal(got, []string{artifacts.NICsFile(enc), artifacts.SwitchesFile(enc)}) {
				t.Errorf("table files %v, want %v", got, packs)
			}
			var packBytes int64
			for _, pack := range packs {
				data, err := os.ReadFile(filepath.Join(dir, pack))
				if err != nil {
					t.Fatal(err)
				}
				packBytes += int64(len(data))
				if enc == artifacts.Binary {
					var req p4v1.WriteRequest
					if err := proto.Unmarshal(data, &req); err != nil {
						t.Fatalf("%s: %v", pack, err)
					}
					want := 0
					for key, fi := range m.Files {
						if file, _, _ := artifacts.SplitRange(key); file == pack {
							want += fi.Entries
						}
					}
					if len(req.Updates) != want {
						t.Errorf("%s: %d updates as one WriteRequest, its ranges hold %d", pack, len(req.Updates), want)
					}
				}
			}
			if packBytes != bytesSum {
				t.Errorf("the packed files have %d bytes, their ranges %d", packBytes, bytesSum)
			}
			if m.Totals.Switches != f.Switches() || m.Totals.NICs != f.Hosts() {
				t.Errorf("totals %+v", m.Totals)
			}
			// Switch entries: per switch, the generator's count; the whole
			// build, every switch plus the NIC files.
			wantEntries := int64(len(g.NICCommonEntries()) + f.Planes + f.T0Count*f.Planes + f.T0Down*f.Planes)
			for _, s := range p.Switches() {
				wantEntries += int64(g.SwitchEntryCount(s))
			}
			if m.Totals.Entries != wantEntries {
				t.Errorf("total entries %d, want %d", m.Totals.Entries, wantEntries)
			}

			// Every device: its files exist and are listed, its entry count
			// is theirs; switches then NICs, in plan order.
			if len(m.Devices) != f.Switches()+f.Hosts() {
				t.Fatalf("%d devices", len(m.Devices))
			}
			used := map[string]bool{}
			for i, d := range m.Devices {
				n := 0
				for _, file := range d.Files {
					fi, ok := m.Files[file]
					if !ok {
						t.Fatalf("%s: file %s not in the manifest", d.Name, file)
					}
					used[file] = true
					n += fi.Entries
				}
				if n != d.Entries {
					t.Errorf("%s: %d entries, its files hold %d", d.Name, d.Entries, n)
				}
				if m.Device(d.Name) != &m.Devices[i] {
					t.Errorf("Device(%q) is not device %d", d.Name, i)
				}
				if i < f.Switches() {
					s := p.Switches()[i]
					if d.Name != p.Name(s) || d.Role != s.Role.String() || d.Plane == nil || *d.Plane != s.Plane || d.Index != s.Index ||
						d.Program != artifacts.ProgramSwitch || d.USID != fmt.Sprintf("%#04x", p.SwitchUSID(s)) ||
						!slices.Equal(d.Files, []string{lay.Switch(p, s)}) {
						t.Errorf("device %d = %+v, want switch %s", i, d, p.Name(s))
					}
					continue
				}
				h := p.HostByIndex(i - f.Switches())
				want := []string{lay.NICCommon(), lay.NICClones(), lay.NICRow(h.Row), lay.NICPort(h.Port)}
				if d.Name != p.HostName(h) || d.Role != "nic" || d.Plane != nil || d.Program != artifacts.ProgramNIC ||
					d.Address != p.HostAddr(h).String() || !slices.Equal(d.Files, want) {
					t.Errorf("device %d = %+v, want NIC %s with files %v", i, d, p.HostName(h), want)
				}
				if d.Entries != len(g.NICCommonEntries())+f.Planes+g.NICEntryCount() {
					t.Errorf("%s: %d entries", d.Name, d.Entries)
				}
			}
			if m.Device("nobody") != nil {
				t.Errorf("Device(nobody) found one")
			}
			// Every table file belongs to a device, and nothing else is there.
			want := m.TableFiles()
			for path := range m.Files {
				if !used[path] {
					t.Errorf("file %s belongs to no device", path)
				}
			}
			want = append(want, artifacts.ManifestFile, artifacts.FabricFile)
			for _, pr := range m.Programs {
				want = append(want, pr.P4, pr.P4Info)
			}
			slices.Sort(want)
			if got := listFiles(t, dir); !slices.Equal(got, want) {
				t.Errorf("directory holds %v\nmanifest lists %v", got, want)
			}
			// The fabric file resolves to the fabric.
			b, err := artifacts.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if *b.Fabric != *f {
				t.Errorf("fabric.yaml resolves to %+v", b.Fabric)
			}
			// A device's entries read back are the generator's.
			d := m.Device(p.Name(p.Switches()[len(p.Switches())-1]))
			got, err := b.DeviceEntries(d)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != d.Entries {
				t.Errorf("DeviceEntries(%s): %d entries", d.Name, len(got))
			}
			last := &m.Devices[len(m.Devices)-1]
			nic, err := b.DeviceEntries(last)
			if err != nil || len(nic) != last.Entries-f.Planes {
				t.Errorf("DeviceEntries(last NIC): %d table entries, %v; want %d", len(nic), err, last.Entries-f.Planes)
			}
			ents, err := b.DeviceEntities(last)
			if err != nil || len(ents) != last.Entries {
				t.Errorf("DeviceEntities(last NIC): %d entities, %v; want %d (with %d clone sessions)", len(ents), err, last.Entries, f.Planes)
			}
		})
	}
}

// TestVerifyBuild proves every path of a written build, read back from its
// files (artifacts.Build is a verify.Source).
func TestVerifyBuild(t *testing.T) {
	for _, name := range []string{"tiny", "small"} {
		f := preset(t, name)
		dir := filepath.Join(t.TempDir(), name)
		write(t, f, dir, artifacts.Options{})
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var src verify.Source = b
		rep, err := verify.Run(context.Background(), b.Plan, src, verify.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fromGen, err := verify.Run(context.Background(), b.Plan, verify.GeneratorSource{G: tables.NewGenerator(b.Plan)}, verify.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Paths == 0 || rep.Paths != fromGen.Paths || rep.Delivered != rep.Paths || rep.States != fromGen.States {
			t.Errorf("%s: from files %+v, from the generator %+v", name, rep, fromGen)
		}
		// The files are the generator's bytes: VerifySource proves them
		// through the generator, naming the build's files, with the same
		// report.
		vsrc, same, err := b.VerifySource(context.Background())
		if err != nil || !same {
			t.Fatalf("%s: VerifySource: same %v, %v", name, same, err)
		}
		if loc, ok := vsrc.(verify.Locator); !ok || loc.SwitchFile(b.Plan.Switches()[0]) != b.SwitchFile(b.Plan.Switches()[0]) {
			t.Errorf("%s: VerifySource does not name the build's files", name)
		}
		viaGen, err := verify.Run(context.Background(), b.Plan, vsrc, verify.Options{})
		if err != nil || !reflect.DeepEqual(viaGen, rep) {
			t.Errorf("%s: via the generator %+v (%v), from the files %+v", name, viaGen, err, rep)
		}
		// Verify proves the same alongside the comparison.
		if got, same, err := b.Verify(context.Background(), verify.Options{}); err != nil || !same || !reflect.DeepEqual(got, rep) {
			t.Errorf("%s: Verify %+v, same %v (%v); from the files %+v", name, got, same, err, rep)
		}
		// A broken file is refused.
		rel := artifacts.SwitchesFile(artifacts.Binary)
		path := filepath.Join(dir, rel)
		data, _ := os.ReadFile(path)
		os.WriteFile(path, append(data, 0), 0o644)
		if _, err := artifacts.Open(dir); err == nil || !strings.Contains(err.Error(), rel) {
			t.Errorf("%s: broken file: %v", name, err)
		}
	}
}

// TestBinaryFileChecked: a byte changed in a binary table file (the size
// unchanged) is refused by every reader, naming the file.
func TestBinaryFileChecked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	m := write(t, preset(t, "tiny"), dir, artifacts.Options{})
	lay := m.Layout()
	for _, rel := range []string{"switches.binpb#p0-t1-0", lay.NICCommon()} {
		t.Run(rel, func(t *testing.T) {
			editTable(t, dir, m, rel, func(data []byte) []byte {
				data[len(data)-1] ^= 1 // a parameter's last byte
				return data
			})
			binaryFileChecked(t, dir, rel)
		})
	}
}

func binaryFileChecked(t *testing.T, dir, rel string) {
	{
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		dev := "p0-t1-0"
		if strings.HasPrefix(rel, "nics") {
			dev = "nic-0"
		}
		_, err = b.DeviceEntities(b.Manifest.Device(dev))
		var ce *artifacts.ChecksumError
		if !errors.As(err, &ce) || ce.File != rel {
			t.Errorf("%s changed: DeviceEntities: %v", rel, err)
		}
		_, err = verify.Run(context.Background(), b.Plan, b, verify.Options{})
		if !errors.As(err, &ce) || ce.File != rel {
			t.Errorf("%s changed: verify: %v", rel, err)
		}
		if _, _, err = b.VerifySource(context.Background()); !errors.As(err, &ce) || ce.File != rel {
			t.Errorf("%s changed: VerifySource: %v", rel, err)
		}
		if _, _, err = b.Verify(context.Background(), verify.Options{}); !errors.As(err, &ce) || ce.File != rel {
			t.Errorf("%s changed: Verify: %v", rel, err)
		}
	}
}

// TestOpenChecksDigests edits a build's files after the build, as a person
// or a disk could, and checks that the build is refused wherever it is
// read, naming the file and both digests.
func TestOpenChecksDigests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	// Text files, so that an edit can be made as a person would; the
	// binary files are checked by the same code (TestBinaryFileChecked).
	m := write(t, preset(t, "tiny"), dir, artifacts.Options{Text: true})
	sw := "switches.txtpb#p0-t1-0"
	edit := func(t *testing.T, path string, from, to string) {
		t.Helper()
		editTable(t, dir, m, path, func(data []byte) []byte {
			i := bytes.LastIndex(data, []byte(from))
			if i < 0 {
				t.Fatalf("%s holds no %q", path, from)
			}
			copy(data[i:], to) // same length: only the digest can tell
			return data
		})
	}
	wantChecksum := func(t *testing.T, err error, file string) {
		t.Helper()
		var ce *artifacts.ChecksumError
		if !errors.As(err, &ce) || ce.File != file {
			t.Fatalf("error %v, want a checksum error for %s", err, file)
		}
		if fi, ok := m.Files[file]; ok && (ce.Want != fi.SHA256 || len(ce.Got) != 64 || ce.Got == ce.Want) {
			t.Errorf("checksum error: want %s got %s; the manifest says %s", ce.Want, ce.Got, fi.SHA256)
		}
		for _, w := range []string{file, "changed after the build", ce.Want, ce.Got} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}

	t.Run("switch file, same size", func(t *testing.T) {
		// A route's port 1 becomes port 0: a valid file, a wrong table.
		edit(t, sw, `params{param_id:1 value:"\x01"}`, `params{param_id:1 value:"\x00"}`)
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatalf("Open checks sizes, then each file as it is read: %v", err)
		}
		_, err = verify.Run(context.Background(), b.Plan, b, verify.Options{})
		wantChecksum(t, err, sw)
		d := b.Manifest.Device("p0-t1-0")
		_, err = b.DeviceEntities(d) // what push reads
		wantChecksum(t, err, sw)
		_, err = b.DeviceEntries(d)
		wantChecksum(t, err, sw)
		if _, err := b.DeviceEntities(b.Manifest.Device("p0-t1-1")); err != nil {
			t.Errorf("an untouched switch: %v", err)
		}
	})
	t.Run("switch file, unparseable", func(t *testing.T) {
		// Parsed while it is hashed: the change is reported, not the
		// parse error it causes.
		edit(t, sw, "table_id", "table_ix")
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.SwitchEntries(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0})
		wantChecksum(t, err, sw)
	})
	t.Run("NIC common file", func(t *testing.T) {
		common := m.Layout().NICCommon()
		edit(t, common, "x", "y")
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.DeviceEntities(b.Manifest.Device("nic-0"))
		wantChecksum(t, err, common)
		_, err = b.NICCommonEntries()
		wantChecksum(t, err, common)
	})
	t.Run("switch file, longer", func(t *testing.T) {
		pack := artifacts.SwitchesFile(artifacts.Text)
		full := filepath.Join(dir, pack)
		orig, _ := os.ReadFile(full)
		t.Cleanup(func() { os.WriteFile(full, orig, 0o644) })
		os.WriteFile(full, append(slices.Clone(orig), "# a comment\n"...), 0o644)
		_, err := artifacts.Open(dir)
		var ce *artifacts.ChecksumError
		want := fmt.Sprintf("%s was changed after the build: it has %d bytes, the manifest says %d", pack, len(orig)+12, len(orig))
		if !errors.As(err, &ce) || ce.File != pack || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open of a build with a longer file: %v", err)
		}
	})
	t.Run("fabric file", func(t *testing.T) {
		edit(t, artifacts.FabricFile, "planes: 2", "planes: 1")
		_, err := artifacts.Open(dir)
		wantChecksum(t, err, artifacts.FabricFile)
	})
	t.Run("P4Info", func(t *testing.T) {
		pr := m.Programs[artifacts.ProgramSwitch]
		edit(t, pr.P4Info, "usid_route", "usid_roure")
		_, err := artifacts.Open(dir)
		var ce *artifacts.ChecksumError
		if !errors.As(err, &ce) || !strings.Contains(ce.File, pr.P4Info) || ce.Want != pr.SHA256 {
			t.Fatalf("Open with an edited P4Info: %v", err)
		}
	})
	t.Run("file not in the manifest", func(t *testing.T) {
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ReadFile("switches.txtpb#p9-t0-0"); err == nil || !strings.Contains(err.Error(), "not in the manifest") {
			t.Errorf("ReadFile of an unlisted file: %v", err)
		}
	})
	t.Run("BMv2 JSON", func(t *testing.T) {
		// As `mrcgen compile` records it (p4c is not needed here).
		pr := m.Programs[artifacts.ProgramSwitch]
		config := []byte(`{"program": "mrc_switch.p4"}`)
		sum := sha256.Sum256(config)
		pr.BMv2JSON, pr.BMv2JSONSHA256 = "p4/mrc_switch.json", hex.EncodeToString(sum[:])
		withJSON := *m
		withJSON.Programs = map[string]artifacts.Program{artifacts.ProgramSwitch: pr, artifacts.ProgramNIC: m.Programs[artifacts.ProgramNIC]}
		data, _ := json.Marshal(&withJSON)
		manifest := filepath.Join(dir, artifacts.ManifestFile)
		orig, _ := os.ReadFile(manifest)
		t.Cleanup(func() { os.WriteFile(manifest, orig, 0o644); os.Remove(filepath.Join(dir, pr.BMv2JSON)) })
		os.WriteFile(manifest, data, 0o644)
		os.WriteFile(filepath.Join(dir, pr.BMv2JSON), config, 0o644)
		b, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.ReadBMv2JSON(artifacts.ProgramSwitch); err != nil || !bytes.Equal(got, config) {
			t.Fatalf("ReadBMv2JSON: %q, %v", got, err)
		}
		if _, err := b.ReadBMv2JSON(artifacts.ProgramNIC); err == nil || !strings.Contains(err.Error(), "not compiled") {
			t.Errorf("ReadBMv2JSON of a program not compiled: %v", err)
		}
		edit(t, pr.BMv2JSON, "switch", "swatch")
		_, err = b.ReadBMv2JSON(artifacts.ProgramSwitch)
		var ce *artifacts.ChecksumError
		if !errors.As(err, &ce) || ce.File != pr.BMv2JSON || ce.Want != pr.BMv2JSONSHA256 {
			t.Errorf("ReadBMv2JSON of an edited file: %v", err)
		}
	})
	// Untouched again: everything reads.
	b, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := verify.Run(context.Background(), b.Plan, b, verify.Options{}); err != nil || !rep.OK() {
		t.Fatalf("restored build: %v %+v", err, rep)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	if _, err := artifacts.Open(dir); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("Open(empty): %v", err)
	}
	os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), []byte(`{"format": "mrcgen/build/v0"}`), 0o644)
	if _, err := artifacts.Open(dir); err == nil || !strings.Contains(err.Error(), `format "mrcgen/build/v0"`) {
		t.Errorf("Open(old format): %v", err)
	}
	os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), []byte(`{`), 0o644)
	if _, err := artifacts.Open(dir); err == nil {
		t.Errorf("Open(bad JSON) succeeded")
	}
}

// tmpLeft lists what a failed or finished write left next to the output.
func tmpLeft(t *testing.T, parent, base string) []string {
	t.Helper()
	var out []string
	for _, n := range names(t, parent) {
		if strings.HasPrefix(n, "."+base+".tmp-") || strings.HasPrefix(n, base+".old-") {
			out = append(out, n)
		}
	}
	return out
}

func TestWriteReplacesBuild(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	write(t, preset(t, "small"), dir, artifacts.Options{})
	// A build of another fabric is replaced only with Force.
	_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{})
	if err == nil || !strings.Contains(err.Error(), `holds the build of fabric "small", not "tiny"`) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Write over another fabric's build: %v", err)
	}
	// A stale file in one of the old build's own folders and a whole other
	// fabric: the new build replaces the old one entirely. (A file at the
	// top of a build is the user's: TestWriteKeepsForeignFilesInABuild.)
	os.WriteFile(filepath.Join(dir, "p4", "stray.txt"), []byte("x"), 0o644)
	m := write(t, preset(t, "tiny"), dir, artifacts.Options{Force: true})
	if m.Fabric != "tiny" {
		t.Fatalf("manifest fabric %q", m.Fabric)
	}
	if _, err := os.Stat(filepath.Join(dir, "p4", "stray.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old build's stray file survived: %v", err)
	}
	if _, ok := m.Files["switches.binpb#p3-t0-7"]; ok || m.Device("p3-t0-7") != nil {
		t.Errorf("a switch of the old build survived")
	}
	if left := tmpLeft(t, parent, "out"); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %v", got)
	}
	// An empty directory is fine too.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	write(t, preset(t, "tiny"), empty, artifacts.Options{})
	// Writing the same fabric twice gives the same bytes.
	again := write(t, preset(t, "tiny"), dir, artifacts.Options{Workers: 1})
	if !reflect.DeepEqual(again, m) {
		t.Errorf("a second build of tiny differs from the first")
	}
}

func TestWriteRefusesForeignDirectory(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "precious")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("years of work"), 0o644)
	_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{})
	if err == nil {
		t.Fatal("Write replaced a directory that is not a build")
	}
	for _, w := range []string{dir, "is not an mrcgen build", "manifest.json", "with or without --force"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if got := listFiles(t, dir); !slices.Equal(got, []string{"thesis.tex"}) {
		t.Errorf("the directory now holds %v", got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "thesis.tex")); string(data) != "years of work" {
		t.Errorf("the file changed: %q", data)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"precious"}) {
		t.Errorf("parent holds %v", got)
	}
	// A file in the way is refused too.
	file := filepath.Join(parent, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := artifacts.Write(context.Background(), preset(t, "tiny"), file, artifacts.Options{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Write over a file: %v", err)
	}
	// Nor with Force: it is not a build.
	if _, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{Force: true}); err == nil || !strings.Contains(err.Error(), "is not an mrcgen build") {
		t.Errorf("Write with Force over a directory that is not a build: %v", err)
	}
	// A manifest.json that is not mrcgen's, next to the user's files:
	// refused, with Force too.
	os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), []byte(`{"name": "my-web-app"}`), 0o644)
	for _, force := range []bool{false, true} {
		_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{Force: force})
		if err == nil || !strings.Contains(err.Error(), "thesis.tex, which mrcgen does not write") {
			t.Errorf("Force %v, a foreign manifest.json: %v", force, err)
		}
	}
	if got := listFiles(t, dir); !slices.Equal(got, []string{"manifest.json", "thesis.tex"}) {
		t.Errorf("the directory now holds %v", got)
	}
}

// TestWriteKeepsForeignFilesInABuild: a real build into which a user put a
// file of their own is not replaced, with Force or without: removing the
// build would remove their file.
func TestWriteKeepsForeignFilesInABuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	write(t, preset(t, "tiny"), dir, artifacts.Options{})
	notes := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notes, []byte("lab results"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{Force: force})
		if err == nil || !strings.Contains(err.Error(), "notes.md, which mrcgen does not write") {
			t.Errorf("Force %v, a build holding notes.md: %v", force, err)
		}
	}
	if data, err := os.ReadFile(notes); err != nil || string(data) != "lab results" {
		t.Errorf("notes.md after the refused builds: %q, %v", data, err)
	}
}

// TestWriteReplacesExportsInABuild: what mrcgen's exports write into a
// build directory by default (export sonic's sonic/, export clab's
// topologies and targets files) does not stop a rebuild; a file of the
// same shape named for another fabric does.
func TestWriteReplacesExportsInABuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	write(t, preset(t, "tiny"), dir, artifacts.Options{})
	if err := os.MkdirAll(filepath.Join(dir, "sonic", "p0-t0-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiny.clab.yml", "tiny.targets.yaml", "tiny-host1.clab.yml", "tiny-host1.targets.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(t, preset(t, "tiny"), dir, artifacts.Options{})
	if got := listFiles(t, dir); slices.Contains(got, "tiny.clab.yml") {
		t.Errorf("the rebuilt directory still holds the old export: %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "prod.targets.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{Force: true})
	if err == nil || !strings.Contains(err.Error(), "prod.targets.yaml, which mrcgen does not write") {
		t.Errorf("rebuild over prod.targets.yaml: %v", err)
	}
}

// TestWriteReplacesDamagedBuild: a build whose manifest does not read (cut
// short, or of another format) is replaced with Force only.
func TestWriteReplacesDamagedBuild(t *testing.T) {
	for name, manifest := range map[string]string{"cut short": `{"format": "mrcgen/bu`, "old format": `{"format": "mrcgen/build/v0", "fabric": "tiny"}`} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			write(t, preset(t, "tiny"), dir, artifacts.Options{})
			os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), []byte(manifest), 0o644)
			_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{})
			if err == nil || !strings.Contains(err.Error(), "looks like a damaged mrcgen build") || !strings.Contains(err.Error(), "without --force") {
				t.Fatalf("Write over a damaged build: %v", err)
			}
			write(t, preset(t, "tiny"), dir, artifacts.Options{Force: true})
			if _, err := artifacts.Open(dir); err != nil {
				t.Errorf("the new build: %v", err)
			}
		})
	}
}

func TestWriteLeavesNothingOnFailure(t *testing.T) {
	t.Run("cancelled before", func(t *testing.T) {
		parent := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := artifacts.Write(ctx, preset(t, "small"), filepath.Join(parent, "out"), artifacts.Options{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Write = %v, want context.Canceled", err)
		}
		if got := names(t, parent); len(got) != 0 {
			t.Errorf("left behind: %v", got)
		}
	})
	t.Run("cancelled during, over an old build", func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "out")
		old := write(t, preset(t, "tiny"), dir, artifacts.Options{})
		before := listFiles(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		_, err := artifacts.Write(ctx, preset(t, "small"), dir, artifacts.Options{Workers: 2, Force: true, Progress: func(done, total int) {
			calls++
			if done == 3 {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Write = %v, want context.Canceled", err)
		}
		if calls >= 1+8+4+4*12 {
			t.Errorf("every file was written (%d) before the cancel was seen", calls)
		}
		if left := tmpLeft(t, parent, "out"); len(left) != 0 {
			t.Errorf("left behind: %v", left)
		}
		// The old build is untouched.
		if got := listFiles(t, dir); !slices.Equal(got, before) {
			t.Errorf("the old build changed: %v", got)
		}
		if b, err := artifacts.Open(dir); err != nil || !reflect.DeepEqual(b.Manifest, old) {
			t.Errorf("the old manifest changed: %v", err)
		}
	})
	t.Run("parent is a file", func(t *testing.T) {
		parent := t.TempDir()
		file := filepath.Join(parent, "file")
		os.WriteFile(file, []byte("x"), 0o644)
		_, err := artifacts.Write(context.Background(), preset(t, "tiny"), filepath.Join(file, "out"), artifacts.Options{})
		if err == nil {
			t.Fatal("Write under a file succeeded")
		}
		if got := names(t, parent); !slices.Equal(got, []string{"file"}) {
			t.Errorf("parent holds %v", got)
		}
	})
	t.Run("unwritable parent", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into read-only directories: covered by 'parent is a file'")
		}
		parent := t.TempDir()
		ro := filepath.Join(parent, "ro")
		os.Mkdir(ro, 0o555)
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
		_, err := artifacts.Write(context.Background(), preset(t, "tiny"), filepath.Join(ro, "out"), artifacts.Options{})
		if err == nil || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Write into a read-only parent: %v", err)
		}
		if got := names(t, ro); len(got) != 0 {
			t.Errorf("left behind: %v", got)
		}
	})
	t.Run("unwritable table file", func(t *testing.T) {
		// A directory where the build wants its NICs' file: creating it
		// fails inside the temporary build, which must be removed.
		parent := t.TempDir()
		dir := filepath.Join(parent, "out")
		_, err := artifacts.Write(context.Background(), preset(t, "tiny"), dir, artifacts.Options{Progress: func(int, int) {
			for _, n := range names(t, parent) {
				if strings.HasPrefix(n, ".out.tmp-") {
					os.Mkdir(filepath.Join(parent, n, artifacts.NICsFile(artifacts.Binary)), 0o755)
				}
			}
		}, Workers: 1})
		if err == nil || !strings.Contains(err.Error(), artifacts.NICsFile(artifacts.Binary)) {
			t.Fatalf("Write with a directory in the place of %s: %v", artifacts.NICsFile(artifacts.Binary), err)
		}
		if got := names(t, parent); len(got) != 0 {
			t.Errorf("left behind: %v", got)
		}
	})
}

// TestGoldenTiny compares the tiny build, in text (--text, readable in a
// review), with testdata/golden/tiny: the fabric file, every table file
// and the manifest's devices, NICs and files. The P4 programs and the
// manifest's programs section are left out: they change with the P4
// sources, which have their own tests. The binary build must hold the
// same WriteRequests, file by file.
//
// go test ./compiler/artifacts -run TestGoldenTiny -update rewrites it.
func TestGoldenTiny(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	write(t, preset(t, "tiny"), dir, artifacts.Options{Text: true})
	got := map[string][]byte{}
	for _, path := range listFiles(t, dir) {
		if path == artifacts.ManifestFile || strings.HasPrefix(path, artifacts.P4Dir+"/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		got[path] = data
	}
	binDir := filepath.Join(t.TempDir(), "tiny")
	textM, err := artifacts.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	binM := write(t, preset(t, "tiny"), binDir, artifacts.Options{})
	if len(binM.Files) != len(textM.Files) {
		t.Errorf("binary build: %d tables, text %d", len(binM.Files), len(textM.Files))
	}
	for key := range textM.Files {
		file, part, _ := artifacts.SplitRange(key)
		binKey := strings.TrimSuffix(file, ".txtpb") + ".binpb#" + part
		text, bin := tableBytes(t, dir, textM, key), tableBytes(t, binDir, binM, binKey)
		var fromText, fromBin p4v1.WriteRequest
		if err := prototext.Unmarshal(text, &fromText); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := proto.Unmarshal(bin, &fromBin); err != nil {
			t.Fatalf("%s: %v", binKey, err)
		}
		if len(fromText.Updates) == 0 || !proto.Equal(&fromText, &fromBin) {
			t.Errorf("%s does not hold the WriteRequest of %s", binKey, key)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, artifacts.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(raw, &sections); err != nil {
		t.Fatal(err)
	}
	kept := map[string]json.RawMessage{"devices": sections["devices"], "nics": sections["nics"], "files": sections["files"]}
	text, err := json.MarshalIndent(kept, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got["manifest-devices-files.json"] = append(text, '\n')

	golden := filepath.Join("testdata", "golden", "tiny")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for path, data := range got {
			full := filepath.Join(golden, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("rewrote %s (%d files)", golden, len(got))
		return
	}
	want := listFiles(t, golden)
	var gotNames []string
	for path := range got {
		gotNames = append(gotNames, path)
	}
	slices.Sort(gotNames)
	if !slices.Equal(gotNames, want) {
		t.Errorf("build files %v\ngolden files %v\n(run with -update if the change is intended)", gotNames, want)
	}
	for _, path := range want {
		data, err := os.ReadFile(filepath.Join(golden, path))
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := got[path]; ok && !bytes.Equal(g, data) {
			t.Errorf("%s differs from the golden file:\n%s\n(run with -update if the change is intended)", path, firstDiff(string(g), string(data)))
		}
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "(same lines)"
}

// cpuTime is the process's user and system CPU time so far: on a machine
// shared with other jobs wall time varies with their load, CPU time much
// less. The benchmarks report both.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start (from cpuTime).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuTime(b)-start).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkWrite131k writes the paper's fabric: 6,144 switch files and
// 769 NIC files, about 3.1 million entries and 570 MB.
func BenchmarkWrite131k(b *testing.B) {
	f := preset(b, "mrc-131k")
	parent := b.TempDir()
	dir := filepath.Join(parent, "build")
	var m *artifacts.Manifest
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		var err error
		m, err = artifacts.Write(context.Background(), f, dir, artifacts.Options{})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
	b.StopTimer()
	if err := os.RemoveAll(dir); err != nil {
		b.Error(err)
	}
	b.SetBytes(m.Totals.Bytes)
	b.ReportMetric(float64(m.Totals.Entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(float64(m.Totals.Bytes)/1e6, "MB")
	b.ReportMetric(float64(m.Totals.Entries), "entries")
}

// BenchmarkVerifyBuild131k compares, in one run, verify of mrc-131k from
// its written files (Open, then Verify: the proof through the generator
// while every range is read, hashed and compared with the generator's
// bytes; what verify --build does) with verify from the generator (what
// `verify -p` does). The target:
// Build at most twice Generator. The build is written once, in binary
// (the default) and, for the old layout, in text.
func BenchmarkVerifyBuild131k(b *testing.B) {
	f := preset(b, "mrc-131k")
	ctx := context.Background()
	b.Run("Generator", func(b *testing.B) {
		cpu := cpuTime(b)
		defer reportCPU(b, cpu)
		for b.Loop() {
			p := plan.New(f)
			rep, err := verify.Run(ctx, p, verify.GeneratorSource{G: tables.NewGenerator(p)}, verify.Options{})
			if err != nil || !rep.OK() {
				b.Fatal(err)
			}
		}
	})
	for _, enc := range []artifacts.Encoding{artifacts.Binary, artifacts.Text} {
		dir := filepath.Join(b.TempDir(), "build")
		if _, err := artifacts.Write(ctx, f, dir, artifacts.Options{Text: enc == artifacts.Text}); err != nil {
			b.Fatal(err)
		}
		b.Run("Build-"+string(enc), func(b *testing.B) {
			cpu := cpuTime(b)
			defer reportCPU(b, cpu)
			for b.Loop() {
				bd, err := artifacts.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				rep, same, err := bd.Verify(ctx, verify.Options{}) // what verify --build does
				if err != nil || !same || !rep.OK() {
					b.Fatalf("Verify: same %v, %v", same, err)
				}
			}
		})
		os.RemoveAll(dir)
	}
}

// unpack rewrites a v3 build in dir as an earlier mrcgen wrote it: a file
// per switch and per NIC part (switches/<switch>.binpb, nics/row-<R>.binpb)
// with a v2 manifest, or, for format v1 (text only), with every NIC listed
// as a device. The bytes of each table are the same: v3 packed them.
func unpack(t *testing.T, dir, format string) {
	t.Helper()
	m, err := artifacts.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := artifacts.Layout{Encoding: m.TableEncoding}
	rename := func(key string) string {
		file, part, ok := artifacts.SplitRange(key)
		if !ok {
			t.Fatalf("%s is not a range", key)
		}
		dir, _, _ := strings.Cut(file, ".")
		return dir + "/" + part + m.TableEncoding.Ext()
	}
	files := map[string]artifacts.File{}
	for key, fi := range m.Files {
		data := tableBytes(t, dir, m, key)
		path := filepath.Join(dir, rename(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fi.Offset = 0
		files[rename(key)] = fi
	}
	for _, file := range m.TableFiles() {
		os.Remove(filepath.Join(dir, file))
	}
	m.Files = files
	m.Format = artifacts.FormatV2
	for i := range m.Devices {
		for j, f := range m.Devices[i].Files {
			m.Devices[i].Files[j] = rename(f)
		}
	}
	m.NICs.Files = []string{old.NICCommon(), old.NICClones(), old.NICRow(-1), old.NICPort(-1)}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if format == artifacts.FormatV1 {
		if m.TableEncoding != artifacts.Text {
			t.Fatal("v1 builds are text")
		}
		b, err := artifacts.Open(dir) // as v2, to list the NICs
		if err != nil {
			t.Fatal(err)
		}
		v1 := *b.Manifest
		v1.Format, v1.NICs, v1.TableEncoding = format, nil, ""
		if raw, err = json.Marshal(&v1); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, artifacts.ManifestFile), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadsEarlierLayouts: the builds of earlier mrcgen versions (v2, a
// file per switch and NIC part; v1, text with every NIC listed) are read
// as before: every device's entities are those of the packed build, the
// proof goes through the generator, and a changed file is refused.
func TestReadsEarlierLayouts(t *testing.T) {
	f := preset(t, "tiny")
	for _, c := range []struct {
		format string
		enc    artifacts.Encoding
	}{{artifacts.FormatV2, artifacts.Binary}, {artifacts.FormatV2, artifacts.Text}, {artifacts.FormatV1, artifacts.Text}} {
		t.Run(c.format+"/"+string(c.enc), func(t *testing.T) {
			packed := filepath.Join(t.TempDir(), "v3")
			write(t, f, packed, artifacts.Options{Text: c.enc == artifacts.Text})
			dir := filepath.Join(t.TempDir(), "old")
			write(t, f, dir, artifacts.Options{Text: c.enc == artifacts.Text})
			unpack(t, dir, c.format)
			if got := listFiles(t, dir); !slices.Contains(got, "switches/p0-t1-0"+c.enc.Ext()) || !slices.Contains(got, "nics/row-1"+c.enc.Ext()) {
				t.Fatalf("unpacked build holds %v", got)
			}
			want, err := artifacts.Open(packed)
			if err != nil {
				t.Fatal(err)
			}
			b, err := artifacts.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if b.Manifest.Format != c.format || b.Manifest.Layout().Packed || len(b.Manifest.Devices) != len(want.Manifest.Devices) {
				t.Fatalf("manifest %s, layout %+v, %d devices", b.Manifest.Format, b.Manifest.Layout(), len(b.Manifest.Devices))
			}
			for i := range b.Manifest.Devices {
				d, wd := &b.Manifest.Devices[i], &want.Manifest.Devices[i]
				got, err := b.DeviceEntities(d)
				if err != nil {
					t.Fatal(err)
				}
				exp, err := want.DeviceEntities(wd)
				if err != nil {
					t.Fatal(err)
				}
				if d.Name != wd.Name || len(got) != len(exp) {
					t.Fatalf("%s: %d entities, the packed build's %s %d", d.Name, len(got), wd.Name, len(exp))
				}
				for k := range got {
					if !proto.Equal(got[k], exp[k]) {
						t.Fatalf("%s: entity %d differs", d.Name, k)
					}
				}
			}
			src, same, err := b.VerifySource(context.Background())
			if err != nil || !same {
				t.Fatalf("VerifySource: same %v, %v", same, err)
			}
			if loc := src.(verify.Locator); loc.SwitchFile(b.Plan.Switches()[0]) != "switches/p0-t0-0"+c.enc.Ext() {
				t.Errorf("failures would name %s", loc.SwitchFile(b.Plan.Switches()[0]))
			}
			if rep, err := verify.Run(context.Background(), b.Plan, b, verify.Options{}); err != nil || !rep.OK() {
				t.Errorf("verify from the files: %+v, %v", rep, err)
			}
			rel := "nics/common" + c.enc.Ext()
			editTable(t, dir, b.Manifest, rel, func(data []byte) []byte {
				data[len(data)-2] ^= 1
				return data
			})
			if b, err = artifacts.Open(dir); err != nil {
				t.Fatal(err)
			}
			_, err = b.DeviceEntities(b.Manifest.Device("nic-0"))
			var ce *artifacts.ChecksumError
			if !errors.As(err, &ce) || ce.File != rel {
				t.Errorf("%s changed: %v", rel, err)
			}
		})
	}
}

// TestOpenRefusesFilesOutsideTheBuild: every file name a manifest gives
// (fabric file, programs, BMv2 JSON, table files) must be local to the
// build directory (filepath.IsLocal). Each case puts a good copy of the
// file where the name points, so that only the check stops the read.
func TestOpenRefusesFilesOutsideTheBuild(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "build")
	write(t, preset(t, "tiny"), dir, artifacts.Options{})
	manifest := filepath.Join(dir, artifacts.ManifestFile)
	orig, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := artifacts.Open(dir); err != nil {
		t.Fatalf("the build as written: %v", err)
	}
	cp := func(from, to string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		old  string // in the manifest's text
		new  string
		copy func() // puts the named file there
		want string // in the error
	}{
		{"fabric file ../", `"fabric_file": "fabric.yaml"`, `"fabric_file": "../fabric.yaml"`,
			func() { cp("fabric.yaml", filepath.Join(root, "fabric.yaml")) }, `fabric_file "../fabric.yaml"`},
		{"fabric file absolute", `"fabric_file": "fabric.yaml"`, `"fabric_file": "` + filepath.Join(root, "abs.yaml") + `"`,
			func() { cp("fabric.yaml", filepath.Join(root, "abs.yaml")) }, "fabric_file"},
		{"fabric file empty", `"fabric_file": "fabric.yaml"`, `"fabric_file": ""`, func() {}, `fabric_file ""`},
		{"P4 source", `"p4": "p4/mrc_switch.p4"`, `"p4": "p4/../../mrc_switch.p4"`,
			func() { cp("p4/mrc_switch.p4", filepath.Join(root, "mrc_switch.p4")) }, `programs.switch.p4 "p4/../../mrc_switch.p4"`},
		{"P4Info", `"p4info": "p4/mrc_nic.p4info.txtpb"`, `"p4info": "../mrc_nic.p4info.txtpb"`,
			func() { cp("p4/mrc_nic.p4info.txtpb", filepath.Join(root, "mrc_nic.p4info.txtpb")) }, `programs.nic.p4info "../mrc_nic.p4info.txtpb"`},
		{"BMv2 JSON", `"p4info": "p4/mrc_nic.p4info.txtpb",`, `"p4info": "p4/mrc_nic.p4info.txtpb", "bmv2_json": "../../etc/mrc_nic.json",`,
			func() {}, `programs.nic.bmv2_json "../../etc/mrc_nic.json"`},
		{"switch tables", `"switches.binpb#`, `"../switches.binpb#`,
			func() { cp("switches.binpb", filepath.Join(root, "switches.binpb")) }, `"../switches.binpb#p0-t0-0"`},
		{"NIC tables", `"nics.binpb#`, `"../nics.binpb#`,
			func() { cp("nics.binpb", filepath.Join(root, "nics.binpb")) }, `"../nics.binpb#`},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if !bytes.Contains(orig, []byte(c.old)) {
				t.Fatalf("manifest has no %s", c.old)
			}
			t.Cleanup(func() { os.WriteFile(manifest, orig, 0o644) })
			if err := os.WriteFile(manifest, bytes.ReplaceAll(orig, []byte(c.old), []byte(c.new)), 0o644); err != nil {
				t.Fatal(err)
			}
			c.copy()
			for what, err := range map[string]error{"Open": openErr(dir), "ReadManifest": readManifestErr(dir)} {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "inside the build directory") {
					t.Errorf("%s: %v, want an error naming %s as outside the build", what, err, c.want)
				}
			}
		})
	}
}

func openErr(dir string) error {
	_, err := artifacts.Open(dir)
	return err
}

func readManifestErr(dir string) error {
	_, err := artifacts.ReadManifest(dir)
	return err
}
