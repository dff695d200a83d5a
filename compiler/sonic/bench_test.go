package sonic_test

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/sonic"
)

// BenchmarkSwitch131k builds one mrc-131k T0's fragment (512 ports) and
// BenchmarkMarshal131k writes it as config_db.json: the per-switch work of
// `export sonic -p mrc-131k`, 6,144 times over.
func BenchmarkSwitch131k(b *testing.B) {
	x := exporter(b, "mrc-131k", nil)
	s := sw(x, "p0-t0-000")
	b.ReportAllocs()
	for b.Loop() {
		x.Switch(s)
	}
}

func BenchmarkMarshal131k(b *testing.B) {
	x := exporter(b, "mrc-131k", nil)
	fr := x.Switch(sw(x, "p0-t0-000"))
	data, err := sonic.Marshal(fr)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sonic.Marshal(fr); err != nil {
			b.Fatal(err)
		}
	}
}
