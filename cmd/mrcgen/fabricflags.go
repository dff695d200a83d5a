package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// fabricOptions selects the fabric a command works on: a file or a preset.
type fabricOptions struct {
	file   string
	preset string
}

func (o *fabricOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.file, "fabric", "f", "", "fabric description file (YAML)")
	fs.StringVarP(&o.preset, "preset", "p", "", fmt.Sprintf("built-in fabric %v (default %q)", fabric.PresetNames(), fabric.DefaultPreset))
}

func (o *fabricOptions) load() (*fabric.Fabric, error) {
	switch {
	case o.file != "" && o.preset != "":
		return nil, fmt.Errorf("give --fabric or --preset, not both")
	case o.file != "":
		fh, err := os.Open(o.file)
		if err != nil {
			return nil, fmt.Errorf("fabric: %w", err)
		}
		defer fh.Close()
		return fabric.Parse(o.file, fh)
	case o.preset != "":
		return fabric.FromPreset(o.preset)
	default:
		return fabric.FromPreset(fabric.DefaultPreset)
	}
}
