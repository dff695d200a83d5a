package reconcile_test

import (
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
)

// BenchmarkCompute50k is the diff of a fresh push of 50,000 exact-match
// entries (all inserts), the client-side cost of a push before its writes.
func BenchmarkCompute50k(b *testing.B) {
	entities := make([]*p4v1.Entity, 50000)
	for i := range entities {
		key := []byte{0xfc, 0xbb, byte(i >> 16), byte(i >> 8), byte(i)}
		entities[i] = &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: 0x02000002,
			Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: key}}}},
			Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000003,
				Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{byte(i % 200)}}}}}},
		}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := reconcile.Compute(entities, nil)
		if err != nil || len(d.Changes) != len(entities) {
			b.Fatal(err)
		}
	}
}
