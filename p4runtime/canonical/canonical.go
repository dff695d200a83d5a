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

// Entity returns a canonical deep copy of e, or ErrUnsupported.
func Entity(e *p4v1.Entity) (*p4v1.Entity, error) {
	switch t := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: TableEntry(t.TableEntry)}}, nil
	default:
		return nil, fmt.Errorf("%w: %T", ErrUnsupported, e.GetEntity())
	}
}

// Key identifies an entity on a device: for a TableEntry it is the table id,
// the canonical match fields and the priority. Two entities with the same
// Key are the same entry (an INSERT of one fails with ALREADY_EXISTS when the
// other is present). The key is an opaque string, stable within one build;
// it sorts entries of the same table together, ordered by table id.
func Key(e *p4v1.Entity) (string, error) {
	te := e.GetTableEntry()
	if te == nil {
		return "", fmt.Errorf("%w: %T", ErrUnsupported, e.GetEntity())
	}
	return TableKey(TableEntry(te)), nil
}

// TableKey returns the Key of a TableEntry that is already canonical.
func TableKey(te *p4v1.TableEntry) string {
	k := &p4v1.TableEntry{Match: te.Match, Priority: te.Priority, IsDefaultAction: te.IsDefaultAction}
	id := te.GetTableId()
	// Big-endian table id first so that keys sort by table.
	prefix := []byte{'T', byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
	return string(append(prefix, marshal(k)...))
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
