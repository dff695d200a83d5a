package canonical_test

import (
	"bytes"
	"errors"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
)

func TestBytes(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{nil, []byte{0}},
		{[]byte{0}, []byte{0}},
		{[]byte{0, 0, 0}, []byte{0}},
		{[]byte{0, 0, 1}, []byte{1}},
		{[]byte{0, 0x80, 0}, []byte{0x80, 0}},
		{[]byte{1, 0}, []byte{1, 0}},
	} {
		got := canonical.Bytes(tc.in)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("Bytes(%x) = %x, want %x", tc.in, got, tc.want)
		}
		if len(tc.in) > 0 && len(got) > 0 && &got[0] == &tc.in[len(tc.in)-len(got)] {
			t.Errorf("Bytes(%x) aliases its input", tc.in)
		}
	}
}

func TestBitLen(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int
	}{{nil, 0}, {[]byte{0, 0}, 0}, {[]byte{1}, 1}, {[]byte{0, 1, 0xff}, 9}, {[]byte{0x80, 0, 0, 0, 0, 0}, 48}} {
		if got := canonical.BitLen(tc.in); got != tc.want {
			t.Errorf("BitLen(%x) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func exact(id uint32, v ...byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

func entry(match []*p4v1.FieldMatch, params ...*p4v1.Action_Param) *p4v1.TableEntry {
	return &p4v1.TableEntry{TableId: 0x02000001, Match: match, Action: &p4v1.TableAction{
		Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000001, Params: params}}}}
}

func TestTableEntryEquivalence(t *testing.T) {
	padded := entry([]*p4v1.FieldMatch{exact(2, 0, 0, 7), exact(1, 0, 0, 0, 0, 0, 1)},
		&p4v1.Action_Param{ParamId: 2, Value: []byte{0, 0}}, &p4v1.Action_Param{ParamId: 1, Value: []byte{0, 5}})
	canon := entry([]*p4v1.FieldMatch{exact(1, 1), exact(2, 7)},
		&p4v1.Action_Param{ParamId: 1, Value: []byte{5}}, &p4v1.Action_Param{ParamId: 2, Value: []byte{0}})
	before := proto.CloneOf(padded)
	a, b := canonical.TableEntry(padded), canonical.TableEntry(canon)
	if !proto.Equal(a, b) {
		t.Fatalf("canonical forms differ:\n%v\n%v", a, b)
	}
	if !proto.Equal(padded, before) {
		t.Fatal("TableEntry modified its input")
	}
	if canonical.TableKey(a) != canonical.TableKey(b) || !bytes.Equal(canonical.State(a), canonical.State(b)) {
		t.Fatal("keys or states differ for equivalent entries")
	}
	other := canonical.TableEntry(entry([]*p4v1.FieldMatch{exact(1, 2), exact(2, 7)}))
	if canonical.TableKey(other) == canonical.TableKey(a) {
		t.Fatal("different match, same key")
	}
	prio := proto.CloneOf(a)
	prio.Priority = 3
	if canonical.TableKey(prio) == canonical.TableKey(a) {
		t.Fatal("priority must be part of the key")
	}
}

func TestDontCareOmitted(t *testing.T) {
	te := &p4v1.TableEntry{TableId: 1, Match: []*p4v1.FieldMatch{
		{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: []byte{1}, Mask: []byte{0, 0}}}},
		{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 0}}},
		{FieldId: 3, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 8}}},
	}}
	got := canonical.TableEntry(te)
	if len(got.Match) != 1 || got.Match[0].FieldId != 3 {
		t.Fatalf("don't-care matches not dropped: %v", got.Match)
	}
}

func TestKeyUnsupported(t *testing.T) {
	_, err := canonical.Key(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{}}})
	if !errors.Is(err, canonical.ErrUnsupported) {
		t.Fatalf("Key(counter) = %v, want ErrUnsupported", err)
	}
}
