package tabletext

import (
	"errors"
	"strconv"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// slowParse is the reference: prototext, then FromProto.
func slowParse(prog *schema.Program, line []byte) (entry.Entry, error) {
	var req p4v1.WriteRequest
	if err := prototext.Unmarshal(line, &req); err != nil {
		return entry.Entry{}, err
	}
	if len(req.GetUpdates()) != 1 || req.GetUpdates()[0].GetType() != p4v1.Update_INSERT ||
		req.GetUpdates()[0].GetEntity().GetTableEntry() == nil {
		return entry.Entry{}, errors.New("not one table entry insert")
	}
	return entry.FromProto(prog, req.GetUpdates()[0].GetEntity().GetTableEntry())
}

func allEntries(t testing.TB, preset string) (*tables.Generator, []entry.Entry, []entry.Entry) {
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(f)
	g := tables.NewGenerator(p)
	var sw []entry.Entry
	for _, s := range p.Switches() {
		sw = append(sw, g.SwitchEntries(s, nil)...)
	}
	nic := append(g.NICCommonEntries(), g.NICEntries(plan.Host{}, nil)...)
	return g, sw, nic
}

// TestFastParseAgreesWithPrototext: every entry mrcgen writes for small,
// and hand-spaced or reordered variants, parse to the same entry.Entry with the
// fast parser as with prototext + FromProto, and the fast parser really
// takes them (no fallback).
func TestFastParseAgreesWithPrototext(t *testing.T) {
	g, sw, nic := allEntries(t, "small")
	check := func(prog *schema.Program, line []byte) {
		t.Helper()
		fast, err := parseEntryLine(prog, line)
		if err != nil {
			t.Fatalf("fast parser refused %s: %v", line, err)
		}
		slow, err := slowParse(prog, line)
		if err != nil || !fast.Equal(&slow) {
			t.Fatalf("%s:\nfast %+v\nslow %+v (%v)", line, fast, slow, err)
		}
	}
	for i := range sw {
		check(g.Switch, AppendEntry(nil, &sw[i], Insert))
	}
	for i := range nic {
		check(g.NIC, AppendEntry(nil, &nic[i], Insert))
	}
	// The multi-line, spaced form prototext itself writes.
	spaced, err := prototext.Marshal(&p4v1.WriteRequest{Updates: []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: sw[3].Proto()}}})
	if err != nil {
		t.Fatal(err)
	}
	check(g.Switch, spaced)
	// A ternary entry with priority and octal escapes.
	evState := g.NIC.Table(schema.NICEVState)
	check(g.NIC, []byte(`updates { type: INSERT entity { table_entry { table_id: `+itoa(evState.ID)+
		` match { field_id: 1 ternary { value: "\020\000\000\000" mask: "\360\000\000\000" } } action { action { action_id: `+
		itoa(evState.Actions[0].Action.ID)+` } } priority: 3 } } }`))
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// TestFastParseFallsBack: what the fast parser does not know is left to
// prototext (errNotFast), never guessed.
func TestFastParseFallsBack(t *testing.T) {
	g, sw, _ := allEntries(t, "tiny")
	line := AppendEntry(nil, &sw[1], Insert)
	for _, bad := range []string{
		string(line[:len(line)-3]),                                        // cut short
		"updates{type:MODIFY" + string(line[len("updates{type:INSERT"):]), // not an insert
		"updates{type:INSERT entity{table_entry{table_id:33554434 is_default_action:true}}}",
		"updates{type:INSERT entity{register_entry{}}}",
		`updates{type:INSERT entity{table_entry{table_id:33554434 match{field_id:1 exact{value:"\u00fc"}} action{action{action_id:16777219 params{param_id:1 value:"\x01"}}}}}}`,
	} {
		if _, err := parseEntryLine(g.Switch, []byte(bad)); !errors.Is(err, errNotFast) {
			t.Errorf("%s: %v, want the prototext fallback", bad, err)
		}
	}
}

// FuzzFastParse: whenever the fast parser accepts a line, prototext +
// FromProto accept it too and agree; whenever it refuses with a real error,
// the reference refuses as well.
func FuzzFastParse(f *testing.F) {
	g, sw, nic := allEntries(f, "tiny")
	for i := range sw {
		f.Add(AppendEntry(nil, &sw[i], Insert), false)
	}
	for i := range nic {
		f.Add(AppendEntry(nil, &nic[i], Insert), true)
	}
	f.Fuzz(func(t *testing.T, line []byte, isNIC bool) {
		prog := g.Switch
		if isNIC {
			prog = g.NIC
		}
		fast, err := parseEntryLine(prog, line)
		if errors.Is(err, errNotFast) {
			return
		}
		slow, serr := slowParse(prog, line)
		if err != nil {
			if serr == nil {
				t.Fatalf("fast refused (%v) what prototext accepts: %q", err, line)
			}
			return
		}
		if serr != nil || !fast.Equal(&slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v (%v)", line, fast, slow, serr)
		}
	})
}

// TestParseReusesBuffersSafely: Parse reads a whole file with one parser
// (its buffers serve every line); every entry must still be the one the
// line alone gives, whatever came before it.
func TestParseReusesBuffersSafely(t *testing.T) {
	g, sw, nic := allEntries(t, "small")
	for _, c := range []struct {
		prog    *schema.Program
		entries []entry.Entry
	}{{g.Switch, sw}, {g.NIC, nic}} {
		var file []byte
		for i := range c.entries {
			file = append(AppendEntry(file, &c.entries[i], Insert), '\n')
		}
		got, err := Parse(c.prog, "file", file)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.entries) {
			t.Fatalf("%d entries, want %d", len(got), len(c.entries))
		}
		for i := range got {
			if !got[i].Equal(&c.entries[i]) {
				t.Fatalf("entry %d: %+v, want %+v", i, got[i], c.entries[i])
			}
		}
	}
}
