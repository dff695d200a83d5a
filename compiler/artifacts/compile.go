package artifacts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// P4InfoMismatchError says that p4c's P4Info for a program differs from the
// one mrcgen emitted from its schema.
type P4InfoMismatchError struct {
	Program string
	Diffs   []string
}

func (e *P4InfoMismatchError) Error() string {
	return fmt.Sprintf("program %s: p4c's P4Info differs from mrcgen's: %s", e.Program, strings.Join(e.Diffs, "; "))
}

// Compile runs p4c on both programs of the build in dir, writes the BMv2
// JSON next to each program (and p4c's own P4Info as <name>.p4c.p4info.txtpb),
// checks that p4c's P4Info equals mrcgen's, and records the JSON in the
// manifest.
func Compile(ctx context.Context, dir, compiler string) (*Manifest, error) {
	b, err := Open(dir)
	if err != nil {
		return nil, err
	}
	m := b.Manifest
	for _, key := range []string{ProgramSwitch, ProgramNIC} {
		pr, ok := m.Programs[key]
		if !ok {
			return nil, fmt.Errorf("build %s: manifest lists no %s program", dir, key)
		}
		base := strings.TrimSuffix(pr.P4, ".p4")
		jsonPath, p4cInfo := base+".json", base+".p4c.p4info.txtpb"
		if err := p4c.Compile(ctx, compiler, filepath.Join(dir, pr.P4), filepath.Join(dir, jsonPath), filepath.Join(dir, p4cInfo)); err != nil {
			return nil, err
		}
		got, err := p4c.ReadP4Info(filepath.Join(dir, p4cInfo))
		if err != nil {
			return nil, err
		}
		prog := b.Switch
		if key == ProgramNIC {
			prog = b.NIC
		}
		if diffs := p4infogen.Diff(p4infogen.Build(prog), got); diffs != nil {
			return nil, &P4InfoMismatchError{Program: pr.Name, Diffs: diffs}
		}
		config, err := os.ReadFile(filepath.Join(dir, jsonPath))
		if err != nil {
			return nil, err
		}
		pr.BMv2JSON, pr.BMv2JSONSHA256 = jsonPath, sha256Hex(config)
		m.Programs[key] = pr
	}
	if err := writeManifest(dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

// ProgramFor returns the schema of a manifest program key.
func (b *Build) ProgramFor(key string) *schema.Program {
	if key == ProgramNIC {
		return b.NIC
	}
	return b.Switch
}

// writeManifest replaces the manifest atomically.
func writeManifest(dir string, m *Manifest) error {
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	enc := json.NewEncoder(tmp)
	enc.SetIndent("", " ")
	if err := enc.Encode(m.onDisk()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}
