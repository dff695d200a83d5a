package tables_test

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/internal/tabletest"
	"github.com/mrc-fabric/mrcgen/tables/tabletext"
)

// The largest fabric has 3,108,864 switch entries; these give the cost of
// one, for a T0 of mrc-131k (515 entries).

func BenchmarkSwitchEntries(b *testing.B) {
	g := tabletest.Generator(b, "mrc-131k")
	s := plan.Switch{Role: plan.RoleT0, Plane: 7, Index: 511}
	var buf []entry.Entry
	b.ReportAllocs()
	for b.Loop() {
		buf = g.SwitchEntries(s, buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(buf)), "ns/entry")
}

func BenchmarkAppendText(b *testing.B) {
	g := tabletest.Generator(b, "mrc-131k")
	entries := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 7, Index: 511}, nil)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i := range entries {
			buf = tabletext.AppendEntry(buf, &entries[i], tabletext.Insert)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/entry")
}

// BenchmarkAppendWire is the binary encoding a build writes (and verify
// --build renders to compare).
func BenchmarkAppendWire(b *testing.B) {
	g := tabletest.Generator(b, "mrc-131k")
	entries := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 7, Index: 511}, nil)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i := range entries {
			buf = tabletext.AppendEntryWire(buf, &entries[i], tabletext.Insert)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/entry")
}

// BenchmarkWireEncoder is BenchmarkAppendWire through a WireEncoder (what
// a build uses).
func BenchmarkWireEncoder(b *testing.B) {
	g := tabletest.Generator(b, "mrc-131k")
	entries := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 7, Index: 511}, nil)
	var buf []byte
	var w tabletext.WireEncoder
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i := range entries {
			buf = w.Append(buf, &entries[i], tabletext.Insert)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/entry")
}

// BenchmarkSwitchEntriesAndText is what a build does per switch.
func BenchmarkSwitchEntriesAndText(b *testing.B) {
	g := tabletest.Generator(b, "mrc-131k")
	s := plan.Switch{Role: plan.RoleT0, Plane: 7, Index: 511}
	var entries []entry.Entry
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		entries = g.SwitchEntries(s, entries)
		buf = buf[:0]
		for i := range entries {
			buf = tabletext.AppendEntry(buf, &entries[i], tabletext.Insert)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/entry")
}
