package qpentry

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// TestEntriesRefuseOutOfRange: the NIC program adds a QP's T1 offset with
// one subtraction and indexes its registers by the state index, so an entry
// beyond either is refused where QP entries are made, with the reason.
func TestEntriesRefuseOutOfRange(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	prog := schema.NIC(f)
	ok := QP{Local: 1, Peer: netip.MustParseAddr("fd00:6d72:6300::1:2"), PeerQP: 2, Index: 3, Epoch: 1, T1Offset: f.T1Count - 1}
	if _, _, err := Entries(prog, f.T1Count, ok); err != nil {
		t.Fatalf("a QP in range: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*QP)
		want string
	}{
		{"offset = T1 count", func(q *QP) { q.T1Offset = f.T1Count }, "T1 offset 2 is outside 0-1"},
		{"offset = 2 x T1 count", func(q *QP) { q.T1Offset = 2 * f.T1Count }, "T1 offset 4 is outside 0-1"},
		{"negative offset", func(q *QP) { q.T1Offset = -1 }, "T1 offset -1"},
		{"index = registers", func(q *QP) { q.Index = schema.NICMaxQPs }, "state index 256 is outside 0-255"},
		{"epoch 0", func(q *QP) { q.Epoch = 0 }, "epoch 0"},
		{"first slot = set size", func(q *QP) { q.FirstSlot = f.EV.SetSize }, "first slot 16 is outside the EV set's 0-15"},
	} {
		q := ok
		tc.edit(&q)
		if _, _, err := Entries(prog, f.T1Count, q); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
