// Package emit writes mrcgen's P4-16 programs (v1model, for BMv2) for a
// fabric. Every control-plane object (table, action, counter, register) is
// declared from p4/schema, with its @id, so the program, the P4Info and the
// table entries share one definition; the templates only hold the dataplane
// logic between those declarations.
package emit

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

//go:embed switch.p4.tmpl
var switchTemplate string

//go:embed nic.p4.tmpl
var nicTemplate string

//go:embed common.p4.tmpl
var commonTemplate string

// Switch returns the switch plane program for f.
func Switch(f *fabric.Fabric) ([]byte, error) {
	return render("switch", switchTemplate, f, schema.Switch(f))
}

// NIC returns the NIC pipeline program for f.
func NIC(f *fabric.Fabric) ([]byte, error) {
	return render("nic", nicTemplate, f, schema.NIC(f))
}

type data struct {
	F    *fabric.Fabric
	Prog *schema.Program
	// C holds the schema's constants the dataplane logic uses.
	C map[string]int
}

func constants(f *fabric.Fabric) map[string]int {
	return map[string]int{
		"ClassData": schema.ClassData, "ClassTrimmed": schema.ClassTrimmed,
		"ClassControl": schema.ClassControl, "ClassDropped": schema.ClassDropped,
		"DropUnknownPacket": schema.DropUnknownPacket, "DropRouteMiss": schema.DropRouteMiss,
		"DropHopLimit": schema.DropHopLimit, "DropEndOfCarrier": schema.DropEndOfCarrier,
		"EventDataSent": schema.NICEventDataSent, "EventDataDelivered": schema.NICEventDataDelivered,
		"EventTrimmedRx": schema.NICEventTrimmedRx, "EventTrimmedLastHop": schema.NICEventTrimmedLastHop,
		"EventNackRx": schema.NICEventNackRx, "EventSkipSet": schema.NICEventSkipSet,
		"EventSkipTaken": schema.NICEventSkipTaken, "EventBadTaken": schema.NICEventBadTaken,
		"EventNoEV": schema.NICEventNoEV, "EventNotMine": schema.NICEventNotMine,
		"EventUnknownQP": schema.NICEventUnknownQP, "EventUnknownPacket": schema.NICEventUnknownPacket,
		"EventAckSent": schema.NICEventAckSent, "EventAckRx": schema.NICEventAckRx,
		"EventNoPath": schema.NICEventNoPath, "EventCENotECT": schema.NICEventCENotECT,
		"EventDuplicate": schema.NICEventDuplicate, "EventBeyondWindow": schema.NICEventBeyondWindow,
		"EventPathFailed": schema.NICEventPathFailed, "EventBackupFailed": schema.NICEventBackupFailed,
		"EventBackupTaken": schema.NICEventBackupTaken, "EventProbeSent": schema.NICEventProbeSent,
		"EventProbeAnswered": schema.NICEventProbeAnswered, "EventProbeAnswerRx": schema.NICEventProbeAnswerRx,
		"EventRevived": schema.NICEventRevived, "EventStaleEcho": schema.NICEventStaleEcho,
		"EventFailedTaken": schema.NICEventFailedTaken,
		"SlotGood":         schema.SlotGood, "SlotAssumedBad": schema.SlotAssumedBad, "SlotBothBad": schema.SlotBothBad,
		"UnansweredSends": f.Failover.UnansweredSends, "ProbePasses": f.Failover.ProbePasses,
		"RxWindow": schema.NICRxWindow,
		"MaxQPs":   schema.NICMaxQPs, "EVSetSize": f.EV.SetSize, "T1Count": f.T1Count,
		"EVPlaneShift": f.EV.T1Bits + f.EV.SaltBits, "EVT1Shift": f.EV.SaltBits,
		"EVPlaneBits": f.EV.PlaneBits, "EVT1Bits": f.EV.T1Bits, "EVSaltBits": f.EV.SaltBits,
		"MaxTries": NICMaxTries,
	}
}

// NICMaxTries bounds how many EV slots the NIC tries (one pass each, by
// resubmission) before it gives a packet up for want of a usable EV.
const NICMaxTries = 8

func render(name, text string, f *fabric.Fabric, prog *schema.Program) ([]byte, error) {
	funcs := template.FuncMap{
		"action":   func(n string) (string, error) { return actionDecl(prog, n) },
		"table":    func(n string) (string, error) { return tableDecl(prog, n) },
		"counter":  func(n string) (string, error) { return counterDecl(prog, n) },
		"register": func(n string) (string, error) { return registerDecl(prog, n) },
		"hex":      func(v any) string { return fmt.Sprintf("%#x", v) },
		"mul":      func(a, b int) int { return a * b },
		"sub":      func(a, b int) int { return a - b },
		"add":      func(a, b int) int { return a + b },
	}
	t, err := template.New(name).Funcs(funcs).Parse(commonTemplate)
	if err != nil {
		return nil, fmt.Errorf("emit %s: common template: %w", name, err)
	}
	if _, err := t.New(name + ".body").Parse(text); err != nil {
		return nil, fmt.Errorf("emit %s: template: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name+".body", data{F: f, Prog: prog, C: constants(f)}); err != nil {
		return nil, fmt.Errorf("emit %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

func findAction(prog *schema.Program, local string) (*schema.Action, error) {
	for _, a := range prog.Actions {
		if a.Name == local {
			return a, nil
		}
	}
	return nil, fmt.Errorf("program %s: no action %q in the schema", prog.Name, local)
}

// actionDecl is the head of an action declaration: annotations, name and
// parameters; the template writes the body after it.
func actionDecl(prog *schema.Program, local string) (string, error) {
	a, err := findAction(prog, local)
	if err != nil {
		return "", err
	}
	params := make([]string, len(a.Params))
	for i, p := range a.Params {
		params[i] = fmt.Sprintf("@id(%d) bit<%d> %s", p.ID, p.Bits, p.Name)
	}
	return fmt.Sprintf("@id(%#08x) action %s(%s)", a.ID, a.Name, strings.Join(params, ", ")), nil
}

func tableDecl(prog *schema.Program, local string) (string, error) {
	var t *schema.Table
	for _, x := range prog.Tables {
		if x.Name == local {
			t = x
		}
	}
	if t == nil {
		return "", fmt.Errorf("program %s: no table %q in the schema", prog.Name, local)
	}
	var b strings.Builder
	for _, line := range wrap(t.Doc, 72) {
		fmt.Fprintf(&b, "    // %s\n", line)
	}
	fmt.Fprintf(&b, "    @id(%#08x)\n    table %s {\n        key = {\n", t.ID, t.Name)
	for _, k := range t.Keys {
		fmt.Fprintf(&b, "            %s: %s @id(%d) @name(\"%s\");\n", k.Expr, k.Match, k.ID, k.Name)
	}
	b.WriteString("        }\n        actions = {\n")
	for _, r := range t.Actions {
		ann := ""
		switch r.Scope {
		case schema.TableOnly:
			ann = "@tableonly "
		case schema.DefaultOnly:
			ann = "@defaultonly "
		}
		fmt.Fprintf(&b, "            %s%s;\n", ann, r.Action.Name)
	}
	fmt.Fprintf(&b, "        }\n        default_action = %s();\n        size = %d;\n    }", t.Default.Name, t.Size)
	return b.String(), nil
}

func counterDecl(prog *schema.Program, full string) (string, error) {
	c := prog.Counter(full)
	if c == nil {
		return "", fmt.Errorf("program %s: no counter %q in the schema", prog.Name, full)
	}
	unit := map[schema.CounterUnit]string{schema.Packets: "packets", schema.Bytes: "bytes", schema.PacketsAndBytes: "packets_and_bytes"}[c.Unit]
	indent := ""
	if c.Control != "" {
		indent = "    " // declared inside its control
	}
	return fmt.Sprintf("// %s\n%s@id(%#08x) counter(%d, CounterType.%s) %s;", c.Doc, indent, c.ID, c.Size, unit, c.Name), nil
}

func registerDecl(prog *schema.Program, full string) (string, error) {
	for _, r := range prog.Registers {
		if r.FullName() == full {
			indent := ""
			if r.Control != "" {
				indent = "    " // declared inside its control
			}
			return fmt.Sprintf("// %s\n%s@id(%#08x) register<bit<%d>>(%d) %s;", r.Doc, indent, r.ID, r.Bits, r.Size, r.Name), nil
		}
	}
	return "", fmt.Errorf("program %s: no register %q in the schema", prog.Name, full)
}

func wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, w := range strings.Fields(s) {
		if cur.Len() > 0 && cur.Len()+1+len(w) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(w)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}
