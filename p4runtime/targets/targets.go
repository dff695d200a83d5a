// Package targets reads the file that maps the devices of a build to their
// P4Runtime endpoints.
//
//	# mrcgen push targets
//	defaults:
//	  insecure: true       # plaintext gRPC: labs only
//	  election_id: 1
//	devices:
//	  p0-t0-0: {address: "127.0.0.1:50001", device_id: 1}
//	  nic-0:   {address: "127.0.0.1:50101", device_id: 1}
package targets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Endpoint is how to reach one device.
type Endpoint struct {
	Address    string `yaml:"address"`
	DeviceID   uint64 `yaml:"device_id"`
	ElectionID uint64 `yaml:"election_id,omitempty"`
	Role       string `yaml:"role,omitempty"`
	Insecure   *bool  `yaml:"insecure,omitempty"`
	CAFile     string `yaml:"ca,omitempty"`
	CertFile   string `yaml:"cert,omitempty"`
	KeyFile    string `yaml:"key,omitempty"`
	ServerName string `yaml:"server_name,omitempty"`
	// ThriftPort is BMv2's runtime CLI port, when the device is a lab
	// switch (not used by push).
	ThriftPort int `yaml:"thrift_port,omitempty"`
}

// File is a targets file.
type File struct {
	Defaults Endpoint            `yaml:"defaults"`
	Devices  map[string]Endpoint `yaml:"devices"`
}

// Read parses a targets file; unknown fields are refused.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("targets %s: %w", path, err)
	}
	return f, nil
}

// Parse parses a targets file.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var errs []error
	for _, name := range f.Names() {
		e := f.Resolve(name)
		if e.Address == "" {
			errs = append(errs, fmt.Errorf("device %s: no address", name))
		}
		if e.DeviceID == 0 {
			errs = append(errs, fmt.Errorf("device %s: device_id 0 (or none): P4Runtime device ids start at 1", name))
		}
	}
	return &f, errors.Join(errs...)
}

// Names lists the devices in a stable order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Devices))
	for n := range f.Devices {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resolve returns a device's endpoint with the defaults filled in.
func (f *File) Resolve(name string) Endpoint {
	e := f.Devices[name]
	d := f.Defaults
	if e.ElectionID == 0 {
		e.ElectionID = d.ElectionID
	}
	if e.ElectionID == 0 {
		e.ElectionID = 1
	}
	if e.Role == "" {
		e.Role = d.Role
	}
	if e.Insecure == nil {
		e.Insecure = d.Insecure
	}
	if e.CAFile == "" {
		e.CAFile = d.CAFile
	}
	if e.CertFile == "" {
		e.CertFile = d.CertFile
	}
	if e.KeyFile == "" {
		e.KeyFile = d.KeyFile
	}
	if e.ServerName == "" {
		e.ServerName = d.ServerName
	}
	return e
}

// Write renders f as YAML.
func (f *File) Write(w io.Writer) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return err
	}
	return enc.Close()
}
