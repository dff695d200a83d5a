package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

// FromBuild serves a build directory's own tables: each switch's entries,
// read from its files (checked against the manifest) when a packet first
// reaches it. A damaged table shows in the run.
func FromBuild(b *artifacts.Build) Source { return buildSource{b} }

type buildSource struct{ *artifacts.Build }

func (s buildSource) SwitchLookup(sw plan.Switch) (verify.SwitchLookup, error) {
	entries, err := s.SwitchEntries(sw)
	if err != nil {
		return nil, err
	}
	return verify.DecodeSwitch(entries)
}

// FromGenerator serves the tables build would write for p, generated on
// demand (no build directory).
func FromGenerator(p *plan.Plan) Source { return verify.GeneratorSource{G: tables.NewGenerator(p)} }

// ParseBytes reads a size: 4096, 256KiB, 4MiB, 1GiB (KB, MB, GB: powers of
// ten).
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult, num := int64(1), s
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v <= 0 || v > (1<<40)/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes above 0 and up to 1 TiB, e.g. 4096, 256KiB, 4MiB", s)
	}
	return v * mult, nil
}
