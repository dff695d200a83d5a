package infoindex

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
)

// ErrInvalidEntity is wrapped by every error Validate returns.
var ErrInvalidEntity = errors.New("invalid entity")

// Index is a read-only lookup structure over one P4Info. It is safe for
// concurrent use.
type Index struct {
	info    *p4configv1.P4Info
	tables  map[uint32]*Table
	actions map[uint32]*Action
}

// Table is one table of the P4Info with its match fields and allowed actions
// indexed by id.
type Table struct {
	Proto *p4configv1.Table
	// NeedsPriority is true when the table has a ternary, range or optional
	// match field: entries must then carry a priority > 0; otherwise the
	// priority must be 0.
	NeedsPriority bool
	fields        map[uint32]*p4configv1.MatchField
	actions       map[uint32]p4configv1.ActionRef_Scope
}

// Action is one action of the P4Info with its parameters indexed by id.
type Action struct {
	Proto  *p4configv1.Action
	params map[uint32]*p4configv1.Action_Param
}

// New indexes info. It fails on a nil P4Info and on duplicate ids.
func New(info *p4configv1.P4Info) (*Index, error) {
	if info == nil {
		return nil, errors.New("p4info: nil P4Info")
	}
	x := &Index{info: info, tables: map[uint32]*Table{}, actions: map[uint32]*Action{}}
	for _, a := range info.GetActions() {
		id := a.GetPreamble().GetId()
		if _, dup := x.actions[id]; dup || id == 0 {
			return nil, fmt.Errorf("p4info: action %q: duplicate or zero id %#x", a.GetPreamble().GetName(), id)
		}
		ax := &Action{Proto: a, params: map[uint32]*p4configv1.Action_Param{}}
		for _, p := range a.GetParams() {
			if _, dup := ax.params[p.GetId()]; dup || p.GetId() == 0 {
				return nil, fmt.Errorf("p4info: action %q param %q: duplicate or zero id %d", a.GetPreamble().GetName(), p.GetName(), p.GetId())
			}
			ax.params[p.GetId()] = p
		}
		x.actions[id] = ax
	}
	for _, t := range info.GetTables() {
		id := t.GetPreamble().GetId()
		if _, dup := x.tables[id]; dup || id == 0 {
			return nil, fmt.Errorf("p4info: table %q: duplicate or zero id %#x", t.GetPreamble().GetName(), id)
		}
		tx := &Table{Proto: t, fields: map[uint32]*p4configv1.MatchField{}, actions: map[uint32]p4configv1.ActionRef_Scope{}}
		for _, f := range t.GetMatchFields() {
			if _, dup := tx.fields[f.GetId()]; dup || f.GetId() == 0 {
				return nil, fmt.Errorf("p4info: table %q field %q: duplicate or zero id %d", t.GetPreamble().GetName(), f.GetName(), f.GetId())
			}
			tx.fields[f.GetId()] = f
			switch f.GetMatchType() {
			case p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
				tx.NeedsPriority = true
			}
		}
		for _, r := range t.GetActionRefs() {
			if _, ok := x.actions[r.GetId()]; !ok {
				return nil, fmt.Errorf("p4info: table %q refers to unknown action id %#x", t.GetPreamble().GetName(), r.GetId())
			}
			tx.actions[r.GetId()] = r.GetScope()
		}
		x.tables[id] = tx
	}
	return x, nil
}

// P4Info returns the indexed message.
func (x *Index) P4Info() *p4configv1.P4Info { return x.info }

// TableIDs returns the ids of all tables, sorted.
func (x *Index) TableIDs() []uint32 {
	ids := make([]uint32, 0, len(x.tables))
	for id := range x.tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Table returns the table with the given id.
func (x *Index) Table(id uint32) (*Table, bool) {
	t, ok := x.tables[id]
	return t, ok
}

// Action returns the action with the given id.
func (x *Index) Action(id uint32) (*Action, bool) {
	a, ok := x.actions[id]
	return a, ok
}

// TableName returns the table's name, or its id in hex when unknown.
func (x *Index) TableName(id uint32) string {
	if t, ok := x.tables[id]; ok {
		return t.Proto.GetPreamble().GetName()
	}
	return fmt.Sprintf("table(%#x)", id)
}

// ActionName returns the action's name, or its id in hex when unknown.
func (x *Index) ActionName(id uint32) string {
	if a, ok := x.actions[id]; ok {
		return a.Proto.GetPreamble().GetName()
	}
	return fmt.Sprintf("action(%#x)", id)
}

// Limits of BMv2's v1model and of its PI server on clone sessions, checked
// by Validate.
const (
	// ReplicaPortBits is the width of a port (standard_metadata egress_port
	// is bit<9> in v1model).
	ReplicaPortBits = 9
	// MaxReplicaInstance is the largest replica instance (egress_rid is
	// bit<16> in v1model).
	MaxReplicaInstance = 1<<16 - 1
	// MaxCloneSessionID is the largest clone session id PI accepts (its
	// PreCloneMgr takes ids in [1, 32768)).
	MaxCloneSessionID = 1<<15 - 1
)

// Validate checks an entity against the P4Info.
//
// A TableEntry needs a known table, match fields of the right kind and
// width, every exact field present, priority as the table requires, an
// action the table allows with every parameter of the right width.
//
// A clone session (PacketReplicationEngineEntry with a CloneSessionEntry)
// needs a session id in 1..MaxCloneSessionID, at least one replica, each
// with a port of at most ReplicaPortBits bits and an instance of at most
// MaxReplicaInstance, no (port, instance) pair twice, no backup replicas,
// class_of_service 0 and packet_length_bytes 0 (PI refuses the others:
// UNIMPLEMENTED for a class of service, and BMv2 does not truncate clones).
//
// Other entity kinds, multicast groups included, are refused with
// canonical.ErrUnsupported. The error wraps ErrInvalidEntity and names the
// entity ("clone session N" for a clone session).
func (x *Index) Validate(e *p4v1.Entity) error {
	if te := e.GetTableEntry(); te != nil {
		if err := x.validateTableEntry(te); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalidEntity, x.Describe(e), err)
		}
		return nil
	}
	if cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
		if err := validateCloneSession(cs); err != nil {
			return fmt.Errorf("%w: clone session %d: %w", ErrInvalidEntity, cs.GetSessionId(), err)
		}
		return nil
	}
	// Another kind: Key's error names it and wraps canonical.ErrUnsupported.
	_, err := canonical.Key(e)
	return fmt.Errorf("%w: %w", ErrInvalidEntity, err)
}

func validateCloneSession(cs *p4v1.CloneSessionEntry) error {
	var errs []error
	switch id := cs.GetSessionId(); {
	case id == 0:
		errs = append(errs, errors.New("session id 0 is not allowed"))
	case id > MaxCloneSessionID:
		errs = append(errs, fmt.Errorf("session id above %d (PI's largest)", MaxCloneSessionID))
	}
	if len(cs.GetReplicas()) == 0 {
		errs = append(errs, errors.New("no replicas"))
	}
	if n := cs.GetPacketLengthBytes(); n != 0 {
		errs = append(errs, fmt.Errorf("packet_length_bytes %d: truncating clone sessions are not supported (BMv2 refuses them)", n))
	}
	if c := cs.GetClassOfService(); c != 0 {
		errs = append(errs, fmt.Errorf("class_of_service %d: PI supports only 0", c))
	}
	type pair struct{ port, instance uint32 }
	seen := map[pair]bool{}
	for i, r := range cs.GetReplicas() {
		port, ok := canonical.ReplicaPort(r)
		switch {
		case r.GetPortKind() == nil:
			errs = append(errs, fmt.Errorf("replica %d: no port", i))
			continue
		case !ok && len(r.GetPort()) == 0:
			errs = append(errs, fmt.Errorf("replica %d: empty port", i))
			continue
		case !ok:
			errs = append(errs, fmt.Errorf("replica %d: port 0x%x is wider than 32 bits", i, r.GetPort()))
			continue
		case port >= 1<<ReplicaPortBits:
			errs = append(errs, fmt.Errorf("replica %d: port %d does not fit in %d bits", i, port, ReplicaPortBits))
		}
		if r.GetInstance() > MaxReplicaInstance {
			errs = append(errs, fmt.Errorf("replica %d: instance %d does not fit in 16 bits", i, r.GetInstance()))
		}
		if len(r.GetBackupReplicas()) > 0 {
			errs = append(errs, fmt.Errorf("replica %d: backup replicas are not supported", i))
		}
		p := pair{port, r.GetInstance()}
		if seen[p] {
			errs = append(errs, fmt.Errorf("replica %d: port %d instance %d given twice", i, port, r.GetInstance()))
		}
		seen[p] = true
	}
	return errors.Join(errs...)
}

func (x *Index) validateTableEntry(te *p4v1.TableEntry) error {
	t, ok := x.tables[te.GetTableId()]
	if !ok {
		return fmt.Errorf("table id %#x is not in the P4Info", te.GetTableId())
	}
	if te.GetIsDefaultAction() {
		return x.validateDefaultEntry(t, te)
	}
	seen := map[uint32]bool{}
	for _, m := range te.GetMatch() {
		f, ok := t.fields[m.GetFieldId()]
		if !ok {
			return fmt.Errorf("match field id %d is not in table %s", m.GetFieldId(), t.Proto.GetPreamble().GetName())
		}
		if seen[m.GetFieldId()] {
			return fmt.Errorf("match field %s given twice", f.GetName())
		}
		seen[m.GetFieldId()] = true
		if err := checkMatch(f, m); err != nil {
			return fmt.Errorf("match field %s: %w", f.GetName(), err)
		}
	}
	for _, f := range t.Proto.GetMatchFields() {
		if f.GetMatchType() == p4configv1.MatchField_EXACT && !seen[f.GetId()] {
			return fmt.Errorf("exact match field %s is missing", f.GetName())
		}
	}
	switch {
	case t.NeedsPriority && te.GetPriority() <= 0:
		return fmt.Errorf("table %s needs a priority > 0", t.Proto.GetPreamble().GetName())
	case !t.NeedsPriority && te.GetPriority() != 0:
		return fmt.Errorf("table %s takes no priority (got %d)", t.Proto.GetPreamble().GetName(), te.GetPriority())
	}
	switch a := te.GetAction().GetType().(type) {
	case *p4v1.TableAction_Action:
		return x.checkAction(t, a.Action)
	case *p4v1.TableAction_ActionProfileMemberId, *p4v1.TableAction_ActionProfileGroupId, *p4v1.TableAction_ActionProfileActionSet:
		if t.Proto.GetImplementationId() == 0 {
			return fmt.Errorf("table %s has no action profile", t.Proto.GetPreamble().GetName())
		}
		return nil
	default:
		return errors.New("no action")
	}
}

// validateDefaultEntry checks a default entry (is_default_action) as PI
// does: no match and no priority, a table without a const default action
// and without an action profile, and an explicit action allowed as a
// default (not TABLE_ONLY). An entry without action (which asks a device to
// reset the program's default) is refused: mrcgen writes what it wants.
func (x *Index) validateDefaultEntry(t *Table, te *p4v1.TableEntry) error {
	name := t.Proto.GetPreamble().GetName()
	switch {
	case len(te.GetMatch()) > 0:
		return fmt.Errorf("default entry of table %s has match fields", name)
	case te.GetPriority() != 0:
		return fmt.Errorf("default entry of table %s has a priority", name)
	case t.Proto.GetConstDefaultActionId() != 0:
		return fmt.Errorf("table %s has a const default action", name)
	case t.Proto.GetImplementationId() != 0:
		return fmt.Errorf("table %s has an action profile: its default cannot be set", name)
	}
	a := te.GetAction().GetAction()
	if a == nil {
		return fmt.Errorf("default entry of table %s has no action", name)
	}
	if t.actions[a.GetActionId()] == p4configv1.ActionRef_TABLE_ONLY {
		return fmt.Errorf("action %s is table-only in table %s: not a default action", x.ActionName(a.GetActionId()), name)
	}
	return x.checkActionParams(t, a)
}

func checkMatch(f *p4configv1.MatchField, m *p4v1.FieldMatch) error {
	w := int(f.GetBitwidth())
	fits := func(what string, b []byte) error {
		if len(b) == 0 {
			return fmt.Errorf("empty %s", what)
		}
		if n := canonical.BitLen(b); w > 0 && n > w {
			return fmt.Errorf("%s needs %d bits, field is %d bits", what, n, w)
		}
		return nil
	}
	want := f.GetMatchType()
	switch t := m.GetFieldMatchType().(type) {
	case *p4v1.FieldMatch_Exact_:
		if want != p4configv1.MatchField_EXACT {
			return fmt.Errorf("exact match given, field is %v", want)
		}
		return fits("value", t.Exact.GetValue())
	case *p4v1.FieldMatch_Lpm:
		if want != p4configv1.MatchField_LPM {
			return fmt.Errorf("lpm match given, field is %v", want)
		}
		if p := int(t.Lpm.GetPrefixLen()); p < 0 || (w > 0 && p > w) {
			return fmt.Errorf("prefix length %d out of range 0..%d", p, w)
		}
		return fits("value", t.Lpm.GetValue())
	case *p4v1.FieldMatch_Ternary_:
		if want != p4configv1.MatchField_TERNARY {
			return fmt.Errorf("ternary match given, field is %v", want)
		}
		if err := fits("value", t.Ternary.GetValue()); err != nil {
			return err
		}
		return fits("mask", t.Ternary.GetMask())
	case *p4v1.FieldMatch_Range_:
		if want != p4configv1.MatchField_RANGE {
			return fmt.Errorf("range match given, field is %v", want)
		}
		if err := fits("low", t.Range.GetLow()); err != nil {
			return err
		}
		return fits("high", t.Range.GetHigh())
	case *p4v1.FieldMatch_Optional_:
		if want != p4configv1.MatchField_OPTIONAL {
			return fmt.Errorf("optional match given, field is %v", want)
		}
		return fits("value", t.Optional.GetValue())
	default:
		return fmt.Errorf("unsupported match kind %T", t)
	}
}

func (x *Index) checkAction(t *Table, a *p4v1.Action) error {
	ax, ok := x.actions[a.GetActionId()]
	if !ok {
		return fmt.Errorf("action id %#x is not in the P4Info", a.GetActionId())
	}
	name := ax.Proto.GetPreamble().GetName()
	scope, ok := t.actions[a.GetActionId()]
	if !ok {
		return fmt.Errorf("action %s is not an action of table %s", name, t.Proto.GetPreamble().GetName())
	}
	if scope == p4configv1.ActionRef_DEFAULT_ONLY {
		return fmt.Errorf("action %s is default-only in table %s", name, t.Proto.GetPreamble().GetName())
	}
	return x.checkActionParams(t, a)
}

// checkActionParams checks that a is an action of table t with exactly
// its parameters, each fitting its width.
func (x *Index) checkActionParams(t *Table, a *p4v1.Action) error {
	ax, ok := x.actions[a.GetActionId()]
	if !ok {
		return fmt.Errorf("action id %#x is not in the P4Info", a.GetActionId())
	}
	name := ax.Proto.GetPreamble().GetName()
	if _, ok := t.actions[a.GetActionId()]; !ok {
		return fmt.Errorf("action %s is not an action of table %s", name, t.Proto.GetPreamble().GetName())
	}
	seen := map[uint32]bool{}
	for _, p := range a.GetParams() {
		px, ok := ax.params[p.GetParamId()]
		if !ok {
			return fmt.Errorf("param id %d is not a parameter of action %s", p.GetParamId(), name)
		}
		if seen[p.GetParamId()] {
			return fmt.Errorf("action %s param %s given twice", name, px.GetName())
		}
		seen[p.GetParamId()] = true
		if len(p.GetValue()) == 0 {
			return fmt.Errorf("action %s param %s: empty value", name, px.GetName())
		}
		if n, w := canonical.BitLen(p.GetValue()), int(px.GetBitwidth()); w > 0 && n > w {
			return fmt.Errorf("action %s param %s: value needs %d bits, param is %d bits", name, px.GetName(), n, w)
		}
	}
	if len(seen) != len(ax.params) {
		for _, px := range ax.Proto.GetParams() {
			if !seen[px.GetId()] {
				return fmt.Errorf("action %s param %s is missing", name, px.GetName())
			}
		}
	}
	return nil
}

// Describe renders an entity on one line with names from the P4Info, e.g.
//
//	ingress.l2_fwd dst_addr=00:00:00:00:00:01 -> ingress.set_port(port=5)
//	clone session 1 -> port 1
//
// Unknown ids are shown in hex; Describe never fails.
func (x *Index) Describe(e *p4v1.Entity) string {
	if te := e.GetTableEntry(); te != nil {
		return x.DescribeMatch(te) + " -> " + x.DescribeAction(te)
	}
	pre := e.GetPacketReplicationEngineEntry()
	if cs := pre.GetCloneSessionEntry(); cs != nil {
		return fmt.Sprintf("clone session %d -> %s", cs.GetSessionId(), DescribeCloneSession(cs))
	}
	if mg := pre.GetMulticastGroupEntry(); mg != nil {
		return fmt.Sprintf("multicast group %d (%d replicas)", mg.GetMulticastGroupId(), len(mg.GetReplicas()))
	}
	return fmt.Sprintf("%T", e.GetEntity())
}

// DescribeState renders what a MODIFY of e replaces: the action of a table
// entry (DescribeAction), the replicas and settings of a clone session
// (DescribeCloneSession).
func (x *Index) DescribeState(e *p4v1.Entity) string {
	if te := e.GetTableEntry(); te != nil {
		return x.DescribeAction(te)
	}
	if cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
		return DescribeCloneSession(cs)
	}
	return x.Describe(e)
}

// DescribeCloneSession renders the replicas of cs in canonical order (by
// port, then instance), and its class of service and packet length when
// set, e.g. "port 1", "port 1, port 2 instance 3 cos=1 truncate=64". A
// session without replicas is "no replicas".
func DescribeCloneSession(cs *p4v1.CloneSessionEntry) string {
	var b strings.Builder
	for i, r := range canonical.CloneSession(cs).GetReplicas() {
		if i > 0 {
			b.WriteString(", ")
		}
		if r.GetPortKind() == nil {
			b.WriteString("no port")
		} else {
			b.WriteString("port ")
			b.WriteString(FormatValue(r.GetPort(), 0))
		}
		if r.GetInstance() != 0 {
			fmt.Fprintf(&b, " instance %d", r.GetInstance())
		}
		for _, br := range r.GetBackupReplicas() {
			fmt.Fprintf(&b, " (backup port %s instance %d)", FormatValue(br.GetPort(), 0), br.GetInstance())
		}
	}
	if len(cs.GetReplicas()) == 0 {
		b.WriteString("no replicas")
	}
	if c := cs.GetClassOfService(); c != 0 {
		fmt.Fprintf(&b, " cos=%d", c)
	}
	if n := cs.GetPacketLengthBytes(); n != 0 {
		fmt.Fprintf(&b, " truncate=%d", n)
	}
	return b.String()
}

// DescribeMatch renders the table name, match fields and priority of te.
func (x *Index) DescribeMatch(te *p4v1.TableEntry) string {
	var b strings.Builder
	b.WriteString(x.TableName(te.GetTableId()))
	t := x.tables[te.GetTableId()]
	for _, m := range canonical.TableEntry(te).GetMatch() {
		var f *p4configv1.MatchField
		if t != nil {
			f = t.fields[m.GetFieldId()]
		}
		name, w := fmt.Sprintf("field%d", m.GetFieldId()), 0
		if f != nil {
			name, w = f.GetName(), int(f.GetBitwidth())
		}
		b.WriteByte(' ')
		b.WriteString(name)
		b.WriteByte('=')
		switch v := m.GetFieldMatchType().(type) {
		case *p4v1.FieldMatch_Exact_:
			b.WriteString(FormatValue(v.Exact.GetValue(), w))
		case *p4v1.FieldMatch_Lpm:
			fmt.Fprintf(&b, "%s/%d", FormatValue(v.Lpm.GetValue(), w), v.Lpm.GetPrefixLen())
		case *p4v1.FieldMatch_Ternary_:
			fmt.Fprintf(&b, "%s&&&%s", FormatValue(v.Ternary.GetValue(), w), FormatValue(v.Ternary.GetMask(), w))
		case *p4v1.FieldMatch_Range_:
			fmt.Fprintf(&b, "%s..%s", FormatValue(v.Range.GetLow(), w), FormatValue(v.Range.GetHigh(), w))
		case *p4v1.FieldMatch_Optional_:
			b.WriteString(FormatValue(v.Optional.GetValue(), w))
		default:
			b.WriteString("?")
		}
	}
	if te.GetPriority() != 0 {
		fmt.Fprintf(&b, " priority=%d", te.GetPriority())
	}
	if te.GetIsDefaultAction() {
		b.WriteString(" (default)")
	}
	return b.String()
}

// DescribeAction renders the action of te, e.g. "ingress.set_port(port=5)".
func (x *Index) DescribeAction(te *p4v1.TableEntry) string {
	switch a := te.GetAction().GetType().(type) {
	case *p4v1.TableAction_Action:
		ax := x.actions[a.Action.GetActionId()]
		var b strings.Builder
		b.WriteString(x.ActionName(a.Action.GetActionId()))
		b.WriteByte('(')
		params := canonical.TableEntry(te).GetAction().GetAction().GetParams()
		for i, p := range params {
			if i > 0 {
				b.WriteString(", ")
			}
			name, w := fmt.Sprintf("param%d", p.GetParamId()), 0
			if ax != nil {
				if px := ax.params[p.GetParamId()]; px != nil {
					name, w = px.GetName(), int(px.GetBitwidth())
				}
			}
			fmt.Fprintf(&b, "%s=%s", name, FormatValue(p.GetValue(), w))
		}
		b.WriteByte(')')
		return b.String()
	case *p4v1.TableAction_ActionProfileMemberId:
		return fmt.Sprintf("member(%d)", a.ActionProfileMemberId)
	case *p4v1.TableAction_ActionProfileGroupId:
		return fmt.Sprintf("group(%d)", a.ActionProfileGroupId)
	case *p4v1.TableAction_ActionProfileActionSet:
		return fmt.Sprintf("action_set(%d actions)", len(a.ActionProfileActionSet.GetActionProfileActions()))
	default:
		return "no-action"
	}
}

// FormatValue renders a bytestring for a field of the given bit width: a
// MAC address for 48 bits, an IPv6 address for 128 bits, decimal up to 64
// bits, hex beyond.
func FormatValue(b []byte, bitwidth int) string {
	c := canonical.Bytes(b)
	switch {
	case bitwidth == 48 && len(c) <= 6:
		var m [6]byte
		copy(m[6-len(c):], c)
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
	case bitwidth == 128 && len(c) <= 16:
		var a [16]byte
		copy(a[16-len(c):], c)
		return netip.AddrFrom16(a).String()
	case len(c) <= 8:
		var v uint64
		for _, x := range c {
			v = v<<8 | uint64(x)
		}
		return fmt.Sprintf("%d", v)
	default:
		return fmt.Sprintf("0x%x", c)
	}
}
