// Package p4infogen produces the P4Info of a program from its schema: the same
// message p4c writes with --p4runtime-files, which a test proves.
package p4infogen

import (
	"fmt"
	"sort"
	"strings"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// Build returns the P4Info of prog for the v1model architecture.
func Build(prog *schema.Program) *p4cfg.P4Info {
	// p4c always writes an (empty) type_info.
	info := &p4cfg.P4Info{PkgInfo: &p4cfg.PkgInfo{Arch: "v1model"}, TypeInfo: &p4cfg.P4TypeInfo{}}
	for _, t := range prog.Tables {
		pt := &p4cfg.Table{
			Preamble: preamble(t.ID, t.FullName(), t.Name),
			Size:     int64(t.Size),
		}
		for _, k := range t.Keys {
			mf := &p4cfg.MatchField{Id: k.ID, Name: k.Name, Bitwidth: int32(k.Bits)}
			switch k.Match {
			case schema.Exact:
				mf.Match = &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_EXACT}
			case schema.Ternary:
				mf.Match = &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_TERNARY}
			case schema.LPM:
				mf.Match = &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_LPM}
			}
			pt.MatchFields = append(pt.MatchFields, mf)
		}
		for _, r := range t.Actions {
			ref := &p4cfg.ActionRef{Id: r.Action.ID}
			switch r.Scope {
			case schema.TableOnly:
				ref.Scope = p4cfg.ActionRef_TABLE_ONLY
				ref.Annotations = []string{"@tableonly"}
			case schema.DefaultOnly:
				ref.Scope = p4cfg.ActionRef_DEFAULT_ONLY
				ref.Annotations = []string{"@defaultonly"}
			}
			pt.ActionRefs = append(pt.ActionRefs, ref)
		}
		info.Tables = append(info.Tables, pt)
	}
	for _, a := range prog.Actions {
		pa := &p4cfg.Action{Preamble: preamble(a.ID, a.FullName(), a.Name)}
		// An internal action's arguments come from the program, not from
		// the control plane: p4c lists no parameters for it.
		for _, p := range a.Params {
			if a.Internal {
				break
			}
			pa.Params = append(pa.Params, &p4cfg.Action_Param{Id: p.ID, Name: p.Name, Bitwidth: int32(p.Bits)})
		}
		info.Actions = append(info.Actions, pa)
	}
	for _, c := range prog.Counters {
		unit := p4cfg.CounterSpec_BOTH
		switch c.Unit {
		case schema.Packets:
			unit = p4cfg.CounterSpec_PACKETS
		case schema.Bytes:
			unit = p4cfg.CounterSpec_BYTES
		}
		info.Counters = append(info.Counters, &p4cfg.Counter{
			Preamble: preamble(c.ID, c.FullName(), c.Name),
			Spec:     &p4cfg.CounterSpec{Unit: unit},
			Size:     int64(c.Size),
		})
	}
	for _, r := range prog.Registers {
		info.Registers = append(info.Registers, &p4cfg.Register{
			Preamble: preamble(r.ID, r.FullName(), r.Name),
			TypeSpec: &p4cfg.P4DataTypeSpec{TypeSpec: &p4cfg.P4DataTypeSpec_Bitstring{
				Bitstring: &p4cfg.P4BitstringLikeTypeSpec{TypeSpec: &p4cfg.P4BitstringLikeTypeSpec_Bit{
					Bit: &p4cfg.P4BitTypeSpec{Bitwidth: int32(r.Bits)}}}}},
			Size: int32(r.Size),
		})
	}
	return info
}

func preamble(id uint32, name, alias string) *p4cfg.Preamble {
	return &p4cfg.Preamble{Id: id, Name: name, Alias: alias}
}

// Text renders a P4Info in protobuf text format, stably.
func Text(info *p4cfg.P4Info) ([]byte, error) {
	out, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("render P4Info: %w", err)
	}
	// prototext randomises whitespace to discourage byte comparisons; make
	// the output stable so that it can be a golden file and a checksum.
	return []byte(normalizeSpaces(string(out))), nil
}

func normalizeSpaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		indent := len(l) - len(trimmed)
		// collapse the "key:  value" double space prototext may emit
		trimmed = strings.Replace(trimmed, ":  ", ": ", 1)
		lines[i] = strings.Repeat(" ", indent) + trimmed
	}
	return strings.Join(lines, "\n")
}

// Normalize sorts the objects of a P4Info by ID, so that two P4Infos that
// list the same objects in another order compare equal.
func Normalize(info *p4cfg.P4Info) *p4cfg.P4Info {
	out := proto.Clone(info).(*p4cfg.P4Info)
	sort.Slice(out.Tables, func(i, j int) bool { return out.Tables[i].Preamble.Id < out.Tables[j].Preamble.Id })
	sort.Slice(out.Actions, func(i, j int) bool { return out.Actions[i].Preamble.Id < out.Actions[j].Preamble.Id })
	sort.Slice(out.Counters, func(i, j int) bool { return out.Counters[i].Preamble.Id < out.Counters[j].Preamble.Id })
	sort.Slice(out.Registers, func(i, j int) bool { return out.Registers[i].Preamble.Id < out.Registers[j].Preamble.Id })
	return out
}

// Diff compares two P4Infos (after Normalize) and describes the first
// differences, line by line of their text forms; nil when they are equal.
func Diff(want, got *p4cfg.P4Info) []string {
	a, b := Normalize(want), Normalize(got)
	if proto.Equal(a, b) {
		return nil
	}
	ta, _ := Text(a)
	tb, _ := Text(b)
	la, lb := strings.Split(string(ta), "\n"), strings.Split(string(tb), "\n")
	var out []string
	for i := 0; i < max(len(la), len(lb)) && len(out) < 12; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d: mrcgen %q, p4c %q", i+1, strings.TrimSpace(x), strings.TrimSpace(y)))
		}
	}
	if len(out) == 0 {
		out = append(out, "the P4Infos differ in a way their text forms do not show")
	}
	return out
}
