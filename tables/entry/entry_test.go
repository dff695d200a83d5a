package entry_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/internal/tabletest"
)

func TestCanonical(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		want string
	}{{0, "00"}, {1, "01"}, {0xff, "ff"}, {0x100, "0100"}, {0xfcbbbb001400, "fcbbbb001400"}, {1 << 63, "8000000000000000"}} {
		if got := fmt.Sprintf("%x", entry.Canonical(nil, c.v)); got != c.want {
			t.Errorf("Canonical(%#x) = %s, want %s", c.v, got, c.want)
		}
	}
}

// validSwitchRoute returns a fresh P4Runtime message of a valid route to break.
func validSwitchRoute(t *testing.T) (*tables.Generator, *p4v1.TableEntry) {
	g := tabletest.Generator(t, "tiny")
	entries := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: 0}, nil)
	for _, e := range entries {
		if e.Table.FullName() == schema.SwitchRoute {
			return g, e.Proto().GetTableEntry()
		}
	}
	t.Fatal("no route entry")
	return nil, nil
}

func TestFromProtoRejects(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(te *p4v1.TableEntry)
		wants []string
	}{
		{"unknown table", func(te *p4v1.TableEntry) { te.TableId = 0x02000099 }, []string{"no table with id 0x2000099"}},
		{"unknown field", func(te *p4v1.TableEntry) { te.Match[0].FieldId = 9 }, []string{"has no match field 9"}},
		{"field twice", func(te *p4v1.TableEntry) { te.Match = append(te.Match, te.Match[0]) }, []string{"dst_usid given twice"}},
		{"missing exact field", func(te *p4v1.TableEntry) { te.Match = nil }, []string{"exact field dst_usid missing"}},
		{"wrong match kind", func(te *p4v1.TableEntry) {
			te.Match[0].FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{1}, PrefixLen: 8}}
		}, []string{"want an exact match"}},
		{"non-canonical key", func(te *p4v1.TableEntry) {
			v := te.Match[0].GetExact().Value
			te.Match[0].GetExact().Value = append([]byte{0}, v...)
		}, []string{"not canonical", "leading zero"}},
		{"empty key", func(te *p4v1.TableEntry) { te.Match[0].GetExact().Value = nil }, []string{"empty bytestring"}},
		{"key wider than the field", func(te *p4v1.TableEntry) {
			te.Match[0].GetExact().Value = []byte{1, 0, 0, 0, 0, 0, 0}
		}, []string{"does not fit 48 bits"}},
		{"key wider than any field", func(te *p4v1.TableEntry) {
			te.Match[0].GetExact().Value = []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}
		}, []string{"9 bytes is wider"}},
		{"no action", func(te *p4v1.TableEntry) { te.Action = nil }, []string{"no direct action"}},
		{"unknown action", func(te *p4v1.TableEntry) { te.Action.GetAction().ActionId = 0x01000099 }, []string{"no action with id 0x1000099"}},
		{"action of the wrong table", func(te *p4v1.TableEntry) {
			te.Action.GetAction().ActionId = 0x01000001
			te.Action.GetAction().Params = nil
		},
			[]string{"action SwitchIngress.usid_shift is not allowed"}},
		{"default-only action", func(te *p4v1.TableEntry) {
			te.Action.GetAction().ActionId = 0x01000005
			te.Action.GetAction().Params = nil
		},
			[]string{"action SwitchIngress.route_miss is not allowed"}},
		{"missing param", func(te *p4v1.TableEntry) { te.Action.GetAction().Params = nil }, []string{"0 params, want 1"}},
		{"unknown param", func(te *p4v1.TableEntry) { te.Action.GetAction().Params[0].ParamId = 2 }, []string{"has no param 2"}},
		{"param wider than its field", func(te *p4v1.TableEntry) { te.Action.GetAction().Params[0].Value = []byte{2, 0} },
			[]string{"param port", "does not fit 9 bits"}},
		{"non-canonical param", func(te *p4v1.TableEntry) { te.Action.GetAction().Params[0].Value = []byte{0, 3} },
			[]string{"param port", "not canonical"}},
		{"priority on an exact table", func(te *p4v1.TableEntry) { te.Priority = 1 }, []string{"priority 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, te := validSwitchRoute(t)
			if _, err := entry.FromProto(g.Switch, te); err != nil {
				t.Fatalf("the unbroken entry: %v", err)
			}
			tc.edit(te)
			e, err := entry.FromProto(g.Switch, te)
			if err == nil {
				t.Fatalf("FromProto accepted %v as %+v", prototext.Format(te), e)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// A ternary table needs a priority, and its mask is checked too.
	g := tabletest.Generator(t, "tiny")
	evState := g.NIC.Table(schema.NICEVState)
	te := &p4v1.TableEntry{TableId: evState.ID, Match: []*p4v1.FieldMatch{{FieldId: 1,
		FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: []byte{1}, Mask: []byte{1}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: 0x01000105}}}}
	if _, err := entry.FromProto(g.NIC, te); err == nil || !strings.Contains(err.Error(), "ternary tables need a priority") {
		t.Errorf("ternary without priority: %v", err)
	}
	te.Priority = 1
	if _, err := entry.FromProto(g.NIC, te); err != nil {
		t.Errorf("ternary with priority: %v", err)
	}
	te.Match[0].GetTernary().Mask = []byte{1, 0, 0, 0, 0}
	if _, err := entry.FromProto(g.NIC, te); err == nil || !strings.Contains(err.Error(), "mask") {
		t.Errorf("ternary mask wider than 32 bits: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	g := tabletest.Generator(t, "tiny")
	base := g.SwitchEntries(plan.Switch{Role: plan.RoleT0, Plane: 1, Index: 1}, nil)
	var route, thr entry.Entry
	for _, e := range base {
		switch e.Table.FullName() {
		case schema.SwitchRoute:
			route = e
		case schema.SwitchQueueThresholds:
			thr = e
		}
	}
	clone := func(e entry.Entry) entry.Entry {
		e.Match, e.Params = slices.Clone(e.Match), slices.Clone(e.Params)
		return e
	}
	tests := []struct {
		name string
		e    func() entry.Entry
		want string
	}{
		{"key value over 48 bits", func() entry.Entry { e := clone(route); e.Match[0].Value = 1 << 48; return e }, "value 0x1000000000000 does not fit 48 bits"},
		{"port over 9 bits", func() entry.Entry { e := clone(route); e.Params[0] = 512; return e }, "param port: value 0x200 does not fit 9 bits"},
		{"trim_bytes over 16 bits", func() entry.Entry { e := clone(thr); e.Params[2] = 1 << 16; return e }, "param trim_bytes"},
		{"to_host over 1 bit", func() entry.Entry { e := clone(thr); e.Match[0].Value = 2; return e }, "key to_host"},
		{"too few match values", func() entry.Entry { e := clone(route); e.Match = nil; return e }, "0 match values for 1 key fields"},
		{"too many params", func() entry.Entry { e := clone(route); e.Params = append(e.Params, 1); return e }, "2 values for 1 parameters"},
		{"action of another table", func() entry.Entry { e := clone(route); e.Action = thr.Action; return e }, "is not allowed in entries"},
		{"priority on an exact table", func() entry.Entry { e := clone(route); e.Priority = 3; return e }, "priority 3"},
	}
	if err := route.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		e := tc.e()
		err := e.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}
