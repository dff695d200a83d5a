// Package artifacts writes and reads a build directory: the artifact set of
// one fabric (P4 programs and P4Info, one P4Runtime WriteRequest per device,
// the fabric description) and the manifest that indexes it.
package artifacts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Format names the build directory layout; readers refuse others.
const Format = "mrcgen/build/v1"

// ManifestFile is the manifest's name inside a build directory.
const ManifestFile = "manifest.json"

// Manifest indexes a build directory.
type Manifest struct {
	Format string `json:"format"`
	Fabric string `json:"fabric"`
	// FabricFile is the resolved description the build came from.
	FabricFile string `json:"fabric_file"`
	// FabricSHA256 is the fabric file's digest (absent in builds made
	// before it was recorded).
	FabricSHA256 string `json:"fabric_sha256,omitempty"`
	// Programs maps a program name ("switch", "nic") to its files.
	Programs map[string]Program `json:"programs"`
	Totals   Totals             `json:"totals"`
	// Files lists every table file with its checksum, by path.
	Files map[string]File `json:"files"`
	// Devices lists every device, switches first, in a fixed order.
	Devices []Device `json:"devices"`
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

// File is one written table file.
type File struct {
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
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
	if m.Format != Format {
		return nil, fmt.Errorf("read build %s: format %q, this mrcgen reads %q", dir, m.Format, Format)
	}
	return &m, nil
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
