package canonical

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// ErrUnsupported is returned for entity kinds this package does not handle yet.
var ErrUnsupported = errors.New("unsupported entity kind")

// Bytes returns the canonical (shortest) form of a P4Runtime bytestring:
// leading zero bytes removed, and a single zero byte for the value zero
// (including the empty string). The result never aliases b.
func Bytes(b []byte) []byte {
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	if len(b) == 0 {
		return []byte{0}
	}
	return bytes.Clone(b[i:])
}

// IsZero reports whether the bytestring b encodes the value zero.
func IsZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// BitLen returns the number of significant bits of the unsigned big-endian
// value b (0 for zero).
func BitLen(b []byte) int {
	for i, c := range b {
		if c != 0 {
			n := 0
			for c != 0 {
				n++
				c >>= 1
			}
			return (len(b)-i-1)*8 + n
		}
	}
	return 0
}

// TableEntry returns a canonical deep copy of te. The input is not modified.
func TableEntry(te *p4v1.TableEntry) *p4v1.TableEntry {
	out := proto.CloneOf(te)
	match := out.Match[:0]
	for _, m := range out.Match {
		if canonicalMatch(m) {
			match = append(match, m)
		}
	}
	out.Match = match
	slices.SortFunc(out.Match, func(a, b *p4v1.FieldMatch) int { return cmp.Compare(a.GetFieldId(), b.GetFieldId()) })
	if a := out.GetAction(); a != nil {
		switch t := a.Type.(type) {
		case *p4v1.TableAction_Action:
			canonicalAction(t.Action)
		case *p4v1.TableAction_ActionProfileActionSet:
			for _, pa := range t.ActionProfileActionSet.GetActionProfileActions() {
				canonicalAction(pa.GetAction())
			}
			slices.SortFunc(t.ActionProfileActionSet.ActionProfileActions, func(x, y *p4v1.ActionProfileAction) int {
				return bytes.Compare(marshal(x), marshal(y))
			})
		}
	}
	return out
}

// canonicalMatch canonicalizes m in place and reports whether it must be
// kept (false for a don't-care match, which the spec says to omit).
func canonicalMatch(m *p4v1.FieldMatch) bool {
	switch t := m.FieldMatchType.(type) {
	case *p4v1.FieldMatch_Exact_:
		t.Exact.Value = Bytes(t.Exact.Value)
	case *p4v1.FieldMatch_Ternary_:
		if IsZero(t.Ternary.Mask) {
			return false
		}
		t.Ternary.Value = Bytes(t.Ternary.Value)
		t.Ternary.Mask = Bytes(t.Ternary.Mask)
	case *p4v1.FieldMatch_Lpm:
		if t.Lpm.PrefixLen == 0 {
			return false
		}
		t.Lpm.Value = Bytes(t.Lpm.Value)
	case *p4v1.FieldMatch_Range_:
		t.Range.Low = Bytes(t.Range.Low)
		t.Range.High = Bytes(t.Range.High)
	case *p4v1.FieldMatch_Optional_:
		t.Optional.Value = Bytes(t.Optional.Value)
	}
	return true
}

func canonicalAction(a *p4v1.Action) {
	if a == nil {
		return
	}
	for _, p := range a.Params {
		p.Value = Bytes(p.Value)
	}
	slices.SortFunc(a.Params, func(x, y *p4v1.Action_Param) int { return cmp.Compare(x.GetParamId(), y.GetParamId()) })
}

// CloneSession returns a canonical deep copy of cs. The input is not
// modified.
//
// Every replica port becomes a shortest-form bytestring in Replica.port,
// whether it was given as bytes or as the deprecated uint32 egress_port
// (mrcgen writes egress_port, which the PI server of BMv2 reads; a server
// answers in either form), and the replicas are sorted by port, then
// instance: their order carries no meaning, and PI answers in an order of
// its own. Backup replicas keep their order (it is a preference) with
// canonical ports. A replica without a port keeps none.
func CloneSession(cs *p4v1.CloneSessionEntry) *p4v1.CloneSessionEntry {
	out := proto.CloneOf(cs)
	for _, r := range out.GetReplicas() {
		canonicalReplica(r)
	}
	slices.SortFunc(out.Replicas, compareReplicas)
	return out
}

func canonicalReplica(r *p4v1.Replica) {
	switch t := r.PortKind.(type) {
	case *p4v1.Replica_EgressPort:
		v := t.EgressPort
		r.PortKind = &p4v1.Replica_Port{Port: Bytes([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})}
	case *p4v1.Replica_Port:
		r.PortKind = &p4v1.Replica_Port{Port: Bytes(t.Port)}
	}
	for _, b := range r.GetBackupReplicas() {
		b.Port = Bytes(b.Port)
	}
}

// compareReplicas orders canonical replicas by port value, then instance,
// then backups.
func compareReplicas(a, b *p4v1.Replica) int {
	pa, pb := a.GetPort(), b.GetPort()
	return cmp.Or(
		cmp.Compare(len(pa), len(pb)), // canonical: shorter is smaller
		bytes.Compare(pa, pb),
		cmp.Compare(a.GetInstance(), b.GetInstance()),
		bytes.Compare(marshal(&p4v1.Replica{BackupReplicas: a.GetBackupReplicas()}), marshal(&p4v1.Replica{BackupReplicas: b.GetBackupReplicas()})),
	)
}

// ReplicaPort returns the port of a replica as a number, from either
// port form; ok is false when the replica has no port or a port wider than
// 32 bits.
func ReplicaPort(r *p4v1.Replica) (port uint32, ok bool) {
	switch t := r.GetPortKind().(type) {
	case *p4v1.Replica_EgressPort:
		return t.EgressPort, true
	case *p4v1.Replica_Port:
		if len(t.Port) == 0 || BitLen(t.Port) > 32 {
			return 0, false
		}
		for _, c := range t.Port {
			port = port<<8 | uint32(c)
		}
		return port, true
	default:
		return 0, false
	}
}

// CloneSessionKey returns the Key of the clone session with the given id.
func CloneSessionKey(id uint32) string {
	return string(AppendCloneSessionKey(nil, id))
}

// AppendCloneSessionKey appends the Key of the clone session with the
// given id to dst.
func AppendCloneSessionKey(dst []byte, id uint32) []byte {
	// 'C' sorts before the 'T' of table keys: clone sessions come first in
	// each phase, by session id.
	return append(dst, 'C', byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// CloneSessionState returns the part of a canonical CloneSessionEntry that
// a MODIFY replaces: the replicas, the class of service and the packet
// length.
func CloneSessionState(cs *p4v1.CloneSessionEntry) []byte {
	return marshal(&p4v1.CloneSessionEntry{
		Replicas:          cs.Replicas,
		ClassOfService:    cs.ClassOfService,
		PacketLengthBytes: cs.PacketLengthBytes,
	})
}

// Entity returns a canonical deep copy of e, or ErrUnsupported.
func Entity(e *p4v1.Entity) (*p4v1.Entity, error) {
	switch t := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: TableEntry(t.TableEntry)}}, nil
	case *p4v1.Entity_PacketReplicationEngineEntry:
		if cs := t.PacketReplicationEngineEntry.GetCloneSessionEntry(); cs != nil {
			return CloneSessionEntity(CloneSession(cs)), nil
		}
	}
	return nil, unsupported(e)
}

// CloneSessionEntity wraps cs in an Entity.
func CloneSessionEntity(cs *p4v1.CloneSessionEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs},
	}}}
}

// unsupported names the kind of e in an ErrUnsupported error.
func unsupported(e *p4v1.Entity) error {
	if mg := e.GetPacketReplicationEngineEntry().GetMulticastGroupEntry(); mg != nil {
		return fmt.Errorf("%w: multicast group %d (only clone sessions of the packet replication engine are supported)", ErrUnsupported, mg.GetMulticastGroupId())
	}
	return fmt.Errorf("%w: %T", ErrUnsupported, e.GetEntity())
}

// Key identifies an entity on a device: for a TableEntry it is the table id,
// the canonical match fields and the priority; for a clone session, its
// session id. Two entities with the same Key are the same entry (an INSERT
// of one fails with ALREADY_EXISTS when the other is present). The key is an
// opaque string, stable within one build; clone sessions sort first, by
// session id, then table entries, the entries of a table together, ordered
// by table id.
func Key(e *p4v1.Entity) (string, error) {
	if cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
		return CloneSessionKey(cs.GetSessionId()), nil
	}
	te := e.GetTableEntry()
	if te == nil {
		return "", unsupported(e)
	}
	return TableKey(TableEntry(te)), nil
}

// TableKey returns the Key of a TableEntry that is already canonical:
// table id (big-endian, so that keys sort by table), priority, default flag,
// then each match as field id, kind and length-prefixed values. Exact,
// ternary and LPM matches are encoded directly (a push computes one key per
// entry); other kinds fall back to their deterministic protobuf encoding.
func TableKey(te *p4v1.TableEntry) string {
	return string(AppendTableKey(make([]byte, 0, 16+24*len(te.Match)), te))
}

// AppendTableKey appends TableKey(te) to b: a push keys every entry of a
// device into one buffer rather than a string each.
func AppendTableKey(b []byte, te *p4v1.TableEntry) []byte {
	id, prio := te.GetTableId(), uint32(te.GetPriority())
	b = append(b, 'T', byte(id>>24), byte(id>>16), byte(id>>8), byte(id),
		byte(prio>>24), byte(prio>>16), byte(prio>>8), byte(prio))
	if te.GetIsDefaultAction() {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	lp := func(v []byte) {
		b = append(b, byte(len(v)>>8), byte(len(v)))
		b = append(b, v...)
	}
	for _, m := range te.Match {
		f := m.GetFieldId()
		b = append(b, byte(f>>24), byte(f>>16), byte(f>>8), byte(f))
		switch t := m.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			b = append(b, 'e')
			lp(t.Exact.GetValue())
		case *p4v1.FieldMatch_Ternary_:
			b = append(b, 't')
			lp(t.Ternary.GetValue())
			lp(t.Ternary.GetMask())
		case *p4v1.FieldMatch_Lpm:
			pl := uint32(t.Lpm.GetPrefixLen())
			b = append(b, 'l', byte(pl>>24), byte(pl>>16), byte(pl>>8), byte(pl))
			lp(t.Lpm.GetValue())
		default:
			b = append(b, 'p')
			lp(marshal(m))
		}
	}
	return b
}

// State returns the part of a canonical TableEntry that a MODIFY replaces
// and that a device returns on a plain read: the action, the controller
// metadata, the opaque metadata and the idle timeout. Counter data, meter
// configuration and hit times are left out (a device returns them only when
// asked, and they are not configured by mrcgen).
func State(te *p4v1.TableEntry) []byte {
	return marshal(&p4v1.TableEntry{
		Action:             te.Action,
		ControllerMetadata: te.ControllerMetadata,
		Metadata:           te.Metadata,
		IdleTimeoutNs:      te.IdleTimeoutNs,
	})
}

func marshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Marshalling a well-formed in-memory message cannot fail; a
		// failure here is a programming error (e.g. invalid UTF-8 in a
		// string field set by the caller).
		panic(fmt.Sprintf("canonical: marshal %T: %v", m, err))
	}
	return b
}

// isCanonicalBytes reports whether b is already in shortest form.
func isCanonicalBytes(b []byte) bool {
	return len(b) == 1 || len(b) > 1 && b[0] != 0
}

// IsCanonical reports whether te is already canonical (TableEntry would
// return an equal copy): entries built by mrcgen and read from a device
// are, so the copy can be skipped.
func IsCanonical(te *p4v1.TableEntry) bool {
	prev := uint32(0)
	for i, m := range te.GetMatch() {
		if i > 0 && m.GetFieldId() <= prev {
			return false
		}
		prev = m.GetFieldId()
		switch t := m.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			if !isCanonicalBytes(t.Exact.GetValue()) {
				return false
			}
		case *p4v1.FieldMatch_Ternary_:
			if IsZero(t.Ternary.GetMask()) || !isCanonicalBytes(t.Ternary.GetValue()) || !isCanonicalBytes(t.Ternary.GetMask()) {
				return false
			}
		default:
			return false // rarer kinds: let TableEntry handle them
		}
	}
	a, ok := te.GetAction().GetType().(*p4v1.TableAction_Action)
	if !ok {
		return te.GetAction() == nil
	}
	prev = 0
	for i, p := range a.Action.GetParams() {
		if i > 0 && p.GetParamId() <= prev || !isCanonicalBytes(p.GetValue()) {
			return false
		}
		prev = p.GetParamId()
	}
	return true
}

// View returns te itself when it is already canonical, else a canonical
// copy (TableEntry). The result must not be modified.
func View(te *p4v1.TableEntry) *p4v1.TableEntry {
	if IsCanonical(te) {
		return te
	}
	return TableEntry(te)
}
