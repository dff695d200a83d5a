// Package emit writes mrcgen's P4-16 programs for a fabric: the switch and
// NIC programs for v1model (BMv2), and the switch program for Intel's
// Tofino2 (T2NA) and Tofino (TNA) architectures. Every control-plane object (table, action, counter, register) is
// declared from p4/schema, with its @id, so the program, the P4Info and the
// table entries share one definition; the templates only hold the dataplane
// logic between those declarations.
package emit

import (
	"bytes"
	_ "embed"
	"fmt"
	"math/bits"
	"strings"
	"text/template"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

//go:embed switch.p4.tmpl
var switchTemplate string

//go:embed nic.p4.tmpl
var nicTemplate string

//go:embed common.p4.tmpl
var commonTemplate string

//go:embed switch_tofino.p4.tmpl
var switchTofinoTemplate string

//go:embed nic_pna.p4.tmpl
var nicPNATemplate string

// Switch returns the switch plane program for f.
func Switch(f *fabric.Fabric) ([]byte, error) {
	return render("switch", switchTemplate, newData(f, schema.Switch(f), v1model))
}

// NIC returns the NIC pipeline program for f.
func NIC(f *fabric.Fabric) ([]byte, error) {
	return render("nic", nicTemplate, newData(f, schema.NIC(f), v1model))
}

// NICPNA returns the NIC pipeline program for f written for PNA, the
// Portable NIC Architecture, as p4c-dpdk compiles it for DPDK's SWX
// pipeline: the same tables and actions (with the same @ids and names) as
// NIC, and the same counters and registers by name; what PNA and p4c-dpdk
// force to differ is in the program's header comment and docs/protocol.md,
// section 8.2.
func NICPNA(f *fabric.Fabric) ([]byte, error) {
	return render("nic_pna", nicPNATemplate, newData(f, schema.NIC(f), pnaNIC))
}

// PNAMaxTries bounds how many EV slots the PNA NIC program passes over for
// one packet: a pass-over recirculates the packet, and PNA's pass number,
// the only state a recirculated packet keeps, has 3 bits (passes 0-7).
const PNAMaxTries = 7

// The PNA NIC program answers a data packet from the fabric (a SACK, or a
// NACK for a trimmed one) from a copy of it (docs/protocol.md, section
// 8.2): mirror session PNAAnswerSession must send the packet out of the
// loopback port (PNALoopPort) cut to PNAAnswerCopyBytes, its headers
// (Ethernet, outer and inner IPv6, UDP, BTH, METH, RETH), and what the
// pipeline sends out of the loopback port must come back in on the input
// port of the same number.
const (
	PNAAnswerSession   = 1
	PNAAnswerCopyBytes = mrcpkt.TrimLen // 134
)

// PNALoopPort is the PNA NIC program's loopback port for fabric f: the
// port after the last plane's (port 0 faces the host, port p+1 plane p).
func PNALoopPort(f *fabric.Fabric) int { return f.Planes + 1 }

// Chip is an Intel Tofino switch ASIC generation.
type Chip string

// The Tofino chips the switch program is written for.
const (
	Tofino  Chip = "tofino"  // Tofino (TNA), 12 MAU stages per pipe
	Tofino2 Chip = "tofino2" // Tofino2 (T2NA), 20 MAU stages per pipe
)

// Arch is the P4 architecture the chip's programs are written against.
func (c Chip) Arch() string {
	if c == Tofino2 {
		return "t2na"
	}
	return "tna"
}

// Stages is the number of match-action stages of one pipe.
func (c Chip) Stages() int {
	if c == Tofino2 {
		return 20
	}
	return 12
}

// CellBytes is the size of a traffic-manager buffer cell, the unit of the
// queue depths the chip reports.
func (c Chip) CellBytes() int {
	if c == Tofino2 {
		return 176
	}
	return 80
}

// ParseChip reads a chip name ("tofino", "tofino2").
func ParseChip(s string) (Chip, error) {
	switch Chip(s) {
	case Tofino, Tofino2:
		return Chip(s), nil
	}
	return "", fmt.Errorf("unknown Tofino chip %q (want tofino or tofino2)", s)
}

// SwitchTofino returns the switch plane program for f, for a Tofino chip:
// the same tables, actions and counters (with the same @ids) as Switch, so
// the same table entries apply; trimming is built from what the chip offers
// (see the program's header comment).
func SwitchTofino(f *fabric.Fabric, chip Chip) ([]byte, error) {
	if _, err := ParseChip(string(chip)); err != nil {
		return nil, err
	}
	return render("switch_"+chip.Arch(), switchTofinoTemplate, newData(f, schema.Switch(f), chip))
}

// Tofino programs assume data frames of at most a RoCEv2 payload of RoCEMTU
// bytes plus the MRC headers (HeaderBytes) when they turn the packet
// thresholds of queue_thresholds into buffer cells.
const (
	RoCEMTU     = 4096
	HeaderBytes = 134
)

// TrimSession is the mirror session the Tofino (TNA) program cuts deflected
// packets with; the control plane sets its egress port (the recirculation
// port) and max_pkt_len (the trim size + TrimMirrorBytes).
const (
	TrimSession     = 1
	TrimMirrorBytes = 4
)

// CellShift is the shift that turns a packet count into buffer cells on
// chip: the cells of the largest data frame, rounded up to a power of two.
func CellShift(chip Chip) int {
	frame := RoCEMTU + HeaderBytes
	cells := (frame + chip.CellBytes() - 1) / chip.CellBytes()
	return bits.Len(uint(cells - 1))
}

// v1model marks data for the BMv2 programs, pnaNIC for the PNA NIC program
// (neither is a Tofino chip).
const (
	v1model Chip = ""
	pnaNIC  Chip = "pna"
)

type data struct {
	F    *fabric.Fabric
	Prog *schema.Program
	// C holds the schema's constants the dataplane logic uses.
	C map[string]int
	// ArchInclude is the architecture's include file; Tofino and Tofino2
	// select the Tofino programs' parts.
	ArchInclude        string
	Tofino, Tofino2    bool
	ArchName, ChipName string
	// PNA selects the PNA NIC program's parts (IPv6 addresses as 64-bit
	// halves).
	PNA bool
}

func newData(f *fabric.Fabric, prog *schema.Program, chip Chip) data {
	d := data{F: f, Prog: prog, C: constants(f), ArchInclude: "v1model.p4"}
	if chip == v1model {
		return d
	}
	if chip == pnaNIC {
		d.PNA, d.ArchInclude, d.ArchName = true, "pna.p4", "PNA"
		d.C["MaxTries"] = PNAMaxTries
		return d
	}
	d.Tofino, d.Tofino2 = true, chip == Tofino2
	d.ArchInclude = chip.Arch() + ".p4"
	d.ArchName, d.ChipName = strings.ToUpper(chip.Arch()), "Tofino"
	if chip == Tofino2 {
		d.ChipName = "Tofino2"
	}
	shift := CellShift(chip)
	for k, v := range map[string]int{
		"PortBits": schema.PortBits, "QIDData": 0, "QIDHigh": 1,
		"CellBytes": chip.CellBytes(), "CellShift": shift, "CellsPerPacket": 1 << shift,
		"MaxFrameBytes": RoCEMTU + HeaderBytes, "RoCEMTU": RoCEMTU, "HeaderBytes": HeaderBytes,
		"TrimSession": TrimSession, "TrimMirrorBytes": TrimMirrorBytes,
	} {
		d.C[k] = v
	}
	return d
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
		"EventFailedTaken": schema.NICEventFailedTaken, "EventBadQPEntry": schema.NICEventBadQPEntry,
		"EventAckCoalesced": schema.NICEventAckCoalesced, "EventLossReported": schema.NICEventLossReported, "AckEvery": f.AckEvery, "AckEveryReciprocal": int(AckEveryReciprocal(f.AckEvery)),
		"SlotGood": schema.SlotGood, "SlotAssumedBad": schema.SlotAssumedBad, "SlotBothBad": schema.SlotBothBad,
		"UnansweredSends": f.Failover.UnansweredSends, "ProbePasses": f.Failover.ProbePasses,
		"RxWindow": f.ReceiveWindow, "RxWords": f.ReceiveWindow / schema.NICRxWordBits,
		// the in-order walk's steps: the words of PSNs e + 1 to e + window - 1
		"RxSteps": f.ReceiveWindow/schema.NICRxWordBits + 1,
		"MaxQPs":  schema.NICMaxQPs, "EVSetSize": f.EV.SetSize, "T1Count": f.T1Count,
		"EVPlaneShift": f.EV.T1Bits + f.EV.SaltBits, "EVT1Shift": f.EV.SaltBits,
		"EVPlaneBits": f.EV.PlaneBits, "EVT1Bits": f.EV.T1Bits, "EVSaltBits": f.EV.SaltBits,
		"MaxTries":    NICMaxTries,
		"PNALoopPort": PNALoopPort(f), "PNAAnswerSession": PNAAnswerSession, "PNAAnswerCopyBytes": PNAAnswerCopyBytes,
	}
}

// PSNModShift is the shift of the NIC program's PSN modulo: BMv2 cannot
// compute x % A for a runtime x (p4c-bm2-ss refuses it), so the program
// takes q = (psn * AckEveryReciprocal(A)) >> PSNModShift, which is
// floor(psn / A), and psn - q * A. With R = ceil(2^40 / A) = 2^40 / A + e
// (0 <= e < 1), psn * R / 2^40 = psn / A + psn * e / 2^40, and the error
// term is below 2^24 / 2^40 = 2^-16: less than 1 / A for every A up to
// 255, so it never lifts a fraction (at most (A - 1) / A) past the next
// integer; and psn * R < 2^24 * 2^40 fits in 64 bits.
const PSNModShift = 40

// AckEveryReciprocal is ceil(2^PSNModShift / a), for a in 1..255.
func AckEveryReciprocal(a int) uint64 {
	return (uint64(1)<<PSNModShift + uint64(a) - 1) / uint64(a)
}

// PSNMod is psn % a computed as the NIC program does (see PSNModShift).
func PSNMod(psn uint32, a int) uint32 {
	q := (uint64(psn&0xffffff) * AckEveryReciprocal(a)) >> PSNModShift
	return psn&0xffffff - uint32(q)*uint32(a)
}

// NICMaxTries bounds how many EV slots the NIC tries (one pass each, by
// resubmission) before it gives a packet up for want of a usable EV.
const NICMaxTries = 8

func render(name, text string, d data) ([]byte, error) {
	prog := d.Prog
	counter, register := counterDecl, registerDecl
	if d.Tofino {
		counter, register = tnaCounterDecl, tnaRegisterDecl
	}
	if d.PNA {
		counter, register = pnaCounterDecl, pnaRegisterDecl
	}
	// The PNA program has one control: its objects carry their schema
	// names (NicIngress.x, NicEgress.x) as absolute @names.
	abs := d.PNA
	funcs := template.FuncMap{
		"action":   func(n string) (string, error) { return actionDecl(prog, n, abs) },
		"table":    func(n string, keyExprs ...string) (string, error) { return tableDecl(prog, n, abs, keyExprs...) },
		"mulc":     mulConst,
		"counter":  func(n string) (string, error) { return counter(prog, n) },
		"register": func(n string) (string, error) { return register(prog, n) },
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
	if err := t.ExecuteTemplate(&buf, name+".body", d); err != nil {
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
func actionDecl(prog *schema.Program, local string, absName bool) (string, error) {
	a, err := findAction(prog, local)
	if err != nil {
		return "", err
	}
	name := ""
	if absName {
		name = fmt.Sprintf("@name(\".%s\") ", a.FullName())
	}
	params := make([]string, len(a.Params))
	for i, p := range a.Params {
		params[i] = fmt.Sprintf("@id(%d) bit<%d> %s", p.ID, p.Bits, p.Name)
	}
	return fmt.Sprintf("%s@id(%#08x) action %s(%s)", name, a.ID, a.Name, strings.Join(params, ", ")), nil
}

// tableDecl declares a table of the schema. keyExprs, in pairs, replace a
// key's expression in this program (the schema's, then this program's):
// the key keeps its name and ID, so the P4Info does not change.
// With absName the table carries its full schema name as an absolute
// @name.
func tableDecl(prog *schema.Program, local string, absName bool, keyExprs ...string) (string, error) {
	if len(keyExprs)%2 != 0 {
		return "", fmt.Errorf("program %s: table %q: key expressions must come in pairs (schema's, program's)", prog.Name, local)
	}
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
	if absName {
		fmt.Fprintf(&b, "    @name(\".%s\")\n", t.FullName())
	}
	fmt.Fprintf(&b, "    @id(%#08x)\n    table %s {\n        key = {\n", t.ID, t.Name)
	replaced := 0
	for _, k := range t.Keys {
		expr := k.Expr
		for i := 0; i < len(keyExprs); i += 2 {
			if keyExprs[i] == expr {
				expr = keyExprs[i+1]
				replaced++
				break
			}
		}
		fmt.Fprintf(&b, "            %s: %s @id(%d) @name(\"%s\");\n", expr, k.Match, k.ID, k.Name)
	}
	if replaced != len(keyExprs)/2 {
		return "", fmt.Errorf("program %s: table %q: a key expression to replace is not the schema's (%q)", prog.Name, local, keyExprs)
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

// tnaCounterDecl declares an indexed counter with TNA's Counter extern,
// indexed by the narrowest bit<N> that covers its size. TNA externs carry no
// @id: the Tofino compiler identifies counters and registers in its P4Info
// by a hash of their name whatever @id says
// (backends/tofino/bf-p4c/control-plane/bfruntime_arch_handler.h adds them to
// its symbol table by name only). Tables and actions keep the schema's @id.
func tnaCounterDecl(prog *schema.Program, full string) (string, error) {
	c := prog.Counter(full)
	if c == nil {
		return "", fmt.Errorf("program %s: no counter %q in the schema", prog.Name, full)
	}
	unit := map[schema.CounterUnit]string{schema.Packets: "PACKETS", schema.Bytes: "BYTES", schema.PacketsAndBytes: "PACKETS_AND_BYTES"}[c.Unit]
	indent := ""
	if c.Control != "" {
		indent = "    "
	}
	return fmt.Sprintf("// %s\n%sCounter<bit<64>, bit<%d>>(%d, CounterType_t.%s) %s;",
		c.Doc, indent, IndexBits(c.Size), c.Size, unit, c.Name), nil
}

// tnaRegisterDecl declares a register array with TNA's Register extern. The
// chip's stateful ALUs hold 8, 16, 32 or 64-bit cells, so the schema's width
// is rounded up to one of those; the index is a PortId_t when the array has
// one cell per port.
func tnaRegisterDecl(prog *schema.Program, full string) (string, error) {
	for _, r := range prog.Registers {
		if r.FullName() != full {
			continue
		}
		width := 8
		for width < r.Bits {
			width *= 2
		}
		index := fmt.Sprintf("bit<%d>", IndexBits(r.Size))
		if r.Size == schema.CounterPorts {
			index = "PortId_t"
		}
		indent := ""
		if r.Control != "" {
			indent = "    "
		}
		// The schema's Doc describes the v1model program's use: the Tofino
		// template says what the register holds there.
		return fmt.Sprintf("%sRegister<bit<%d>, %s>(%d, 0) %s;", indent, width, index, r.Size, r.Name), nil
	}
	return "", fmt.Errorf("program %s: no register %q in the schema", prog.Name, full)
}

// pnaCounterDecl declares an indexed counter with PNA's Counter extern
// (32-bit packet and byte counts, as p4c-dpdk keeps them), with the
// schema's @id and full name.
func pnaCounterDecl(prog *schema.Program, full string) (string, error) {
	c := prog.Counter(full)
	if c == nil {
		return "", fmt.Errorf("program %s: no counter %q in the schema", prog.Name, full)
	}
	unit := map[schema.CounterUnit]string{schema.Packets: "PACKETS", schema.Bytes: "BYTES", schema.PacketsAndBytes: "PACKETS_AND_BYTES"}[c.Unit]
	return fmt.Sprintf("// %s\n    @name(\".%s\") @id(%#08x) Counter<bit<32>, bit<32>>(%d, PNA_CounterType_t.%s) %s;",
		c.Doc, c.FullName(), c.ID, c.Size, unit, c.Name), nil
}

// pnaRegisterDecl declares a register array with PNA's Register extern,
// indexed by bit<32>, with the schema's @id and full name.
func pnaRegisterDecl(prog *schema.Program, full string) (string, error) {
	for _, r := range prog.Registers {
		if r.FullName() == full {
			return fmt.Sprintf("// %s\n    @name(\".%s\") @id(%#08x) Register<bit<%d>, bit<32>>(%d) %s;",
				r.Doc, r.FullName(), r.ID, r.Bits, r.Size, r.Name), nil
		}
	}
	return "", fmt.Errorf("program %s: no register %q in the schema", prog.Name, full)
}

// mulConst writes expr * k without a multiplication, which p4c-dpdk does
// not implement: a sum of left shifts, one per set bit of k.
func mulConst(expr string, k int) (string, error) {
	if k < 0 {
		return "", fmt.Errorf("mulc: negative factor %d", k)
	}
	if k == 0 {
		return "0", nil
	}
	var terms []string
	for b := bits.Len(uint(k)) - 1; b >= 0; b-- {
		if k&(1<<b) == 0 {
			continue
		}
		if b == 0 {
			terms = append(terms, "("+expr+")")
		} else {
			terms = append(terms, fmt.Sprintf("((%s) << %d)", expr, b))
		}
	}
	return "(" + strings.Join(terms, " + ") + ")", nil
}

// IndexBits is the width of an index into an array of size cells.
func IndexBits(size int) int {
	if size <= 1 {
		return 1
	}
	return bits.Len(uint(size - 1))
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
