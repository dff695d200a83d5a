package artifacts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/tabletext"
)

// Build is a build directory opened for reading.
type Build struct {
	Dir      string
	Manifest *Manifest
	Fabric   *fabric.Fabric
	Plan     *plan.Plan
	Switch   *schema.Program
	NIC      *schema.Program

	nicFiles map[string][]entry.Entry
}

// Open reads the manifest and fabric of build directory dir.
func Open(dir string) (*Build, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, m.FabricFile))
	if err != nil {
		return nil, fmt.Errorf("read build %s: %w", dir, err)
	}
	f, err := fabric.Parse(filepath.Join(dir, m.FabricFile), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	p := plan.New(f)
	return &Build{Dir: dir, Manifest: m, Fabric: f, Plan: p, Switch: schema.Switch(f), NIC: schema.NIC(f)}, nil
}

// DeviceEntries reads the table entries of a device, from its files in
// order.
func (b *Build) DeviceEntries(d *Device) ([]entry.Entry, error) {
	prog := b.ProgramFor(d.Program)
	var out []entry.Entry
	for _, f := range d.Files {
		if f == NICCloneFile {
			continue // clone sessions, not table entries: see DeviceEntities
		}
		entries, err := tabletext.ReadFile(prog, filepath.Join(b.Dir, f))
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		out = append(out, entries...)
	}
	return out, nil
}

// DeviceEntities reads everything a device's files hold, in order, as
// P4Runtime entities: table entries and clone sessions (what push writes).
func (b *Build) DeviceEntities(d *Device) ([]*p4v1.Entity, error) {
	prog := b.ProgramFor(d.Program)
	var out []*p4v1.Entity
	for _, f := range d.Files {
		ents, err := tabletext.ReadEntities(prog, filepath.Join(b.Dir, f))
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		out = append(out, ents...)
	}
	return out, nil
}

// SwitchEntries reads the table file of switch s (for verify).
func (b *Build) SwitchEntries(s plan.Switch) ([]entry.Entry, error) {
	return tabletext.ReadFile(b.Switch, filepath.Join(b.Dir, SwitchPath(b.Plan, s)))
}

// NICEntries reads the own tables of host h's NIC: its row's and its port's
// files (for verify).
func (b *Build) NICEntries(h plan.Host) ([]entry.Entry, error) {
	port, err := b.cachedNICFile(NICPortPath(h.Port))
	if err != nil {
		return nil, err
	}
	row, err := b.cachedNICFile(NICRowPath(h.Row))
	if err != nil {
		return nil, err
	}
	return append(append([]entry.Entry(nil), port...), row...), nil
}

// NICCommonEntries reads the table file all NICs share (for verify).
func (b *Build) NICCommonEntries() ([]entry.Entry, error) {
	return b.cachedNICFile(NICCommonFile)
}

func (b *Build) cachedNICFile(path string) ([]entry.Entry, error) {
	if e, ok := b.nicFiles[path]; ok {
		return e, nil
	}
	e, err := tabletext.ReadFile(b.NIC, filepath.Join(b.Dir, path))
	if err != nil {
		return nil, err
	}
	if b.nicFiles == nil {
		b.nicFiles = map[string][]entry.Entry{}
	}
	b.nicFiles[path] = e
	return e, nil
}

// SwitchPath is where a build keeps switch s's table file.
func SwitchPath(p *plan.Plan, s plan.Switch) string {
	return filepath.Join(SwitchDir, p.Name(s)+".txtpb")
}

// NICRowPath is where a build keeps the tables the NICs of T0 row r share.
func NICRowPath(r int) string { return filepath.Join(NICDir, fmt.Sprintf("row-%d.txtpb", r)) }

// NICPortPath is where a build keeps the tables the NICs on T0 down port k
// share.
func NICPortPath(k int) string { return filepath.Join(NICDir, fmt.Sprintf("port-%d.txtpb", k)) }

// SwitchFile names the file of switch s's entries (verify.Locator).
func (b *Build) SwitchFile(s plan.Switch) string { return SwitchPath(b.Plan, s) }

// NICFile names the file that holds host h's entries of a NIC table
// (verify.Locator): the port file holds rx_plane, the row file plane_self,
// the common file the rest.
func (b *Build) NICFile(h plan.Host, table string) string {
	switch table {
	case schema.NICRxPlane:
		return NICPortPath(h.Port)
	case schema.NICPlaneSelf:
		return NICRowPath(h.Row)
	}
	return NICCommonFile
}

// NICCommonFile names the file every NIC shares (verify.Locator).
func (b *Build) NICCommonFile() string { return NICCommonFile }
