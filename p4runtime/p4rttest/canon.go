package p4rttest

import (
	"math/big"
	"sort"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// The server canonicalizes on its own, independently of package canonical,
// so that tests of that package's use by clients can fail.

func canonBytes(b []byte) []byte {
	v := new(big.Int).SetBytes(b).Bytes()
	if len(v) == 0 {
		return []byte{0}
	}
	return v
}

func canonEntry(te *p4v1.TableEntry) *p4v1.TableEntry {
	out := proto.CloneOf(te)
	for _, m := range out.GetMatch() {
		switch t := m.GetFieldMatchType().(type) {
		case *p4v1.FieldMatch_Exact_:
			t.Exact.Value = canonBytes(t.Exact.GetValue())
		case *p4v1.FieldMatch_Lpm:
			t.Lpm.Value = canonBytes(t.Lpm.GetValue())
		case *p4v1.FieldMatch_Ternary_:
			t.Ternary.Value, t.Ternary.Mask = canonBytes(t.Ternary.GetValue()), canonBytes(t.Ternary.GetMask())
		case *p4v1.FieldMatch_Range_:
			t.Range.Low, t.Range.High = canonBytes(t.Range.GetLow()), canonBytes(t.Range.GetHigh())
		case *p4v1.FieldMatch_Optional_:
			t.Optional.Value = canonBytes(t.Optional.GetValue())
		}
	}
	sort.Slice(out.Match, func(i, j int) bool { return out.Match[i].GetFieldId() < out.Match[j].GetFieldId() })
	if a := out.GetAction().GetAction(); a != nil {
		for _, p := range a.GetParams() {
			p.Value = canonBytes(p.GetValue())
		}
		sort.Slice(a.Params, func(i, j int) bool { return a.Params[i].GetParamId() < a.Params[j].GetParamId() })
	}
	return out
}

// entryKey is the identity of a canonical entry: table, match, priority.
func entryKey(te *p4v1.TableEntry) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&p4v1.TableEntry{TableId: te.GetTableId(), Match: te.GetMatch(), Priority: te.GetPriority()})
	if err != nil {
		panic(err) // no string fields: cannot fail
	}
	id := te.GetTableId()
	return string([]byte{byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}) + string(b)
}
