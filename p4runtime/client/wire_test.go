package client

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// randomUpdate builds a table entry update of the shapes the fast encoder
// takes, with empty, zero and large values, negative priorities and
// prefix lengths among them.
func randomUpdate(r *rand.Rand) *p4v1.Update {
	val := func() []byte {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{0}
		case 2:
			return make([]byte, 130+r.IntN(200)) // a two-byte length
		}
		b := make([]byte, 1+r.IntN(16))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	id := func() uint32 {
		return []uint32{0, 1, 127, 128, 0x02000001, 1<<32 - 1}[r.IntN(6)]
	}
	te := &p4v1.TableEntry{TableId: id(), Priority: []int32{0, 1, 300, -1, 1<<31 - 1}[r.IntN(5)]}
	for range r.IntN(5) {
		m := &p4v1.FieldMatch{FieldId: id()}
		switch r.IntN(3) {
		case 0:
			m.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: val()}}
		case 1:
			m.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: val(), Mask: val()}}
		default:
			m.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: val(), PrefixLen: []int32{0, 24, 128, -3}[r.IntN(4)]}}
		}
		te.Match = append(te.Match, m)
	}
	if r.IntN(5) > 0 {
		a := &p4v1.Action{ActionId: id()}
		for range r.IntN(5) {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: id(), Value: val()})
		}
		te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	}
	typ := []p4v1.Update_Type{p4v1.Update_UNSPECIFIED, p4v1.Update_INSERT, p4v1.Update_MODIFY, p4v1.Update_DELETE}[r.IntN(4)]
	return &p4v1.Update{Type: typ, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
}

// The fast encoder gives the bytes proto.Marshal gives, and its size.
func TestFastUpdateEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		u := randomUpdate(r)
		te, ok := fastTableEntry(u)
		if !ok {
			t.Fatalf("update %d not taken by the fast encoder: %v", i, u)
		}
		want, err := proto.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		z := fastUpdateSize(u, te)
		got := appendFastUpdate([]byte{0xee}, u, te, z)
		if !bytes.Equal(got[1:], want) || z.update != len(want) {
			t.Fatalf("update %d: %v\nfast  %x (size %d)\nproto %x", i, u, got[1:], z.update, want)
		}
	}
}

// Whatever the fast encoder does not know goes to the protobuf runtime.
func TestFastUpdateFallback(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	entry := func() (*p4v1.Update, *p4v1.TableEntry) {
		u := randomUpdate(r)
		return u, u.GetEntity().GetTableEntry()
	}
	cases := map[string]func() *p4v1.Update{
		"clone session": func() *p4v1.Update {
			return &p4v1.Update{Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{}}}
		},
		"no entity":       func() *p4v1.Update { return &p4v1.Update{} },
		"default":         func() *p4v1.Update { u, te := entry(); te.IsDefaultAction = true; return u },
		"metadata":        func() *p4v1.Update { u, te := entry(); te.Metadata = []byte{1}; return u },
		"idle timeout":    func() *p4v1.Update { u, te := entry(); te.IdleTimeoutNs = 5; return u },
		"controller meta": func() *p4v1.Update { u, te := entry(); te.ControllerMetadata = 5; return u },
		"const":           func() *p4v1.Update { u, te := entry(); te.IsConst = true; return u },
		"meter":           func() *p4v1.Update { u, te := entry(); te.MeterConfig = &p4v1.MeterConfig{}; return u },
		"counter":         func() *p4v1.Update { u, te := entry(); te.CounterData = &p4v1.CounterData{}; return u },
		"meter counter":   func() *p4v1.Update { u, te := entry(); te.MeterCounterData = &p4v1.MeterCounterData{}; return u },
		"last hit":        func() *p4v1.Update { u, te := entry(); te.TimeSinceLastHit = &p4v1.TableEntry_IdleTimeout{}; return u },
		"range match": func() *p4v1.Update {
			u, te := entry()
			te.Match = append(te.Match, &p4v1.FieldMatch{FieldId: 9, FieldMatchType: &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{}}})
			return u
		},
		"nil match": func() *p4v1.Update { u, te := entry(); te.Match = append(te.Match, nil); return u },
		"profile action": func() *p4v1.Update {
			u, te := entry()
			te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 3}}
			return u
		},
		"unknown field": func() *p4v1.Update {
			u, te := entry()
			te.ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01}) // field 31, varint 1
			return u
		},
	}
	for name, mk := range cases {
		if _, ok := fastTableEntry(mk()); ok {
			t.Errorf("%s: taken by the fast encoder", name)
		}
	}
}

// The fast encoder knows every field of the messages it encodes: a field
// added by a new p4runtime release must be added to it (encoded, or sent
// to the protobuf runtime when set).
func TestFastUpdateKnowsEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[p4v1.Update](): {"Type", "Entity"},
		reflect.TypeFor[p4v1.Entity](): {"Entity"},
		reflect.TypeFor[p4v1.TableEntry](): {"TableId", "Match", "Action", "Priority", "ControllerMetadata", "MeterConfig", "CounterData",
			"MeterCounterData", "IsDefaultAction", "IdleTimeoutNs", "TimeSinceLastHit", "Metadata", "IsConst"},
		reflect.TypeFor[p4v1.FieldMatch]():         {"FieldId", "FieldMatchType"},
		reflect.TypeFor[p4v1.FieldMatch_Exact]():   {"Value"},
		reflect.TypeFor[p4v1.FieldMatch_Ternary](): {"Value", "Mask"},
		reflect.TypeFor[p4v1.FieldMatch_LPM]():     {"Value", "PrefixLen"},
		reflect.TypeFor[p4v1.TableAction]():        {"Type"},
		reflect.TypeFor[p4v1.Action]():             {"ActionId", "Params"},
		reflect.TypeFor[p4v1.Action_Param]():       {"ParamId", "Value"},
	} {
		var got []string
		for f := range typ.Fields() {
			if f.IsExported() {
				got = append(got, f.Name)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s fields %v, the fast encoder knows %v: update fastTableEntry and appendFastUpdate", typ, got, want)
		}
	}
}

// BenchmarkEncodeUpdate compares the fast encoder with the protobuf
// runtime's size and encode on a push's usual entry (one exact match, one
// parameter).
func BenchmarkEncodeUpdate(b *testing.B) {
	u := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: 0x02000001,
		Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{2, 0, 0, 0, 1, 2}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000002,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{7}}}}}},
	}}}}
	buf := make([]byte, 0, 256)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			te, ok := fastTableEntry(u)
			if !ok {
				b.Fatal("not fast")
			}
			buf = appendFastUpdate(buf[:0], u, te, fastUpdateSize(u, te))
		}
	})
	b.Run("proto", func(b *testing.B) {
		for b.Loop() {
			if proto.Size(u) == 0 {
				b.Fatal("empty")
			}
			buf, _ = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf[:0], u)
		}
	})
}
