package reconcile_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/canonical"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
)

// referenceDiff is the diff spelled out the plain way (a map of each side
// by canonical.Key, then a sort of the changes by op and key): Compute's
// sorted merge must give the same changes in the same order.
func referenceDiff(t *testing.T, desired, current []*p4v1.Entity) (changes []string, unchanged int) {
	t.Helper()
	key := func(e *p4v1.Entity) string {
		k, err := canonical.Key(e)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	state := func(e *p4v1.Entity) string {
		if te := e.GetTableEntry(); te != nil {
			return string(canonical.State(canonical.TableEntry(te)))
		}
		return string(canonical.CloneSessionState(canonical.CloneSession(e.GetPacketReplicationEngineEntry().GetCloneSessionEntry())))
	}
	want, have := map[string]*p4v1.Entity{}, map[string]*p4v1.Entity{}
	for _, e := range desired {
		want[key(e)] = e
	}
	for _, e := range current {
		have[key(e)] = e
	}
	type ch struct {
		op  reconcile.Op
		key string
		e   *p4v1.Entity
	}
	var out []ch
	for k, h := range have {
		if _, ok := want[k]; !ok && !h.GetTableEntry().GetIsDefaultAction() {
			out = append(out, ch{reconcile.Delete, k, h})
		}
	}
	for k, w := range want {
		h, ok := have[k]
		switch {
		case !ok && w.GetTableEntry().GetIsDefaultAction():
			out = append(out, ch{reconcile.Modify, k, w})
		case !ok:
			out = append(out, ch{reconcile.Insert, k, w})
		case state(w) != state(h):
			out = append(out, ch{reconcile.Modify, k, w})
		default:
			unchanged++
		}
	}
	slices.SortFunc(out, func(a, b ch) int { return cmp.Or(cmp.Compare(a.op, b.op), strings.Compare(a.key, b.key)) })
	for _, c := range out {
		changes = append(changes, fmt.Sprintf("%s %p", c.op, c.e))
	}
	return changes, unchanged
}

// TestComputeMatchesReference diffs random mixes of table entries, default
// entries and clone sessions, in random order on both sides (sorted, as a
// build and BMv2 give them, or shuffled), against referenceDiff.
func TestComputeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var desired, current []*p4v1.Entity
		for mac := range uint64(60) {
			port := uint16(1 + r.IntN(3))
			switch r.IntN(4) {
			case 0: // desired only
				desired = append(desired, p4rttest.L2Entry(mac, port))
			case 1: // device only
				current = append(current, asDevice(p4rttest.L2Entry(mac, port)))
			case 2: // both, maybe another port on the device
				desired = append(desired, p4rttest.L2Entry(mac, port))
				current = append(current, asDevice(p4rttest.L2Entry(mac, uint16(1+r.IntN(3)))))
			}
		}
		for id := range uint32(6) {
			switch r.IntN(3) {
			case 0:
				desired = append(desired, p4rttest.CloneSession(id+1, 1, 2))
			case 1:
				current = append(current, sessionAsDevice(p4rttest.CloneSession(id+1, 2)))
			default:
				desired = append(desired, p4rttest.CloneSession(id+1, 1, 2))
				current = append(current, sessionAsDevice(p4rttest.CloneSession(id+1, uint32(1+r.IntN(2)), 2)))
			}
		}
		switch r.IntN(3) {
		case 0:
			desired = append(desired, p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{1}))
		case 1:
			desired = append(desired, p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{1}))
			current = append(current, p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{byte(1 + r.IntN(2))}))
		default:
			current = append(current, p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{2}))
		}
		if round%2 == 1 {
			r.Shuffle(len(desired), func(i, j int) { desired[i], desired[j] = desired[j], desired[i] })
			r.Shuffle(len(current), func(i, j int) { current[i], current[j] = current[j], current[i] })
		}
		d, err := reconcile.Compute(desired, current)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range d.Changes {
			got = append(got, fmt.Sprintf("%s %p", c.Op, c.Entity))
		}
		want, unchanged := referenceDiff(t, desired, current)
		if !slices.Equal(got, want) || d.Unchanged != unchanged {
			t.Fatalf("round %d: Compute gave\n%s\n(%d unchanged), the reference\n%s\n(%d unchanged)",
				round, strings.Join(got, "\n"), d.Unchanged, strings.Join(want, "\n"), unchanged)
		}
	}
}

// TestComputeDuplicateNamesEarliest: whatever the order of the keys, the
// error names the first entity (in input order) that repeats a key.
func TestComputeDuplicateNamesEarliest(t *testing.T) {
	desired := []*p4v1.Entity{
		p4rttest.L2Entry(9, 1), p4rttest.L2Entry(5, 1), p4rttest.L2Entry(7, 1),
		p4rttest.L2Entry(7, 2), // entity 3 repeats entity 2
		p4rttest.L2Entry(5, 2), // entity 4 repeats entity 1
	}
	_, err := reconcile.Compute(desired, nil)
	if err == nil || !strings.Contains(err.Error(), "desired entity 3: duplicate key") {
		t.Fatalf("Compute = %v, want entity 3 named as a duplicate", err)
	}
	current := []*p4v1.Entity{sessionAsDevice(p4rttest.CloneSession(4, 1)), sessionAsDevice(p4rttest.CloneSession(4, 2))}
	if _, err := reconcile.Compute(nil, current); err == nil || !strings.Contains(err.Error(), "device entity 1: duplicate key (clone session 4") {
		t.Fatalf("Compute = %v, want device entity 1 named as clone session 4 given twice", err)
	}
}

// The keys are the sort order: a held count per table is what Plan needs.
func TestComputeHeldAcrossUnsortedTables(t *testing.T) {
	var current []*p4v1.Entity
	for i := range 6 {
		current = append(current, asDevice(p4rttest.L2Entry(uint64(10-i), 1)))
	}
	d, err := reconcile.Compute(p4rttest.L2Entries(100, 3), current)
	if err != nil {
		t.Fatal(err)
	}
	// Room for 8: 6 held and 3 new do not fit, so the deletes go first.
	ph := d.Plan(func(uint32) int64 { return 8 })
	if len(ph) != 2 || ph[0].Name != "DELETE (make room)" || len(ph[0].Changes) != 6 {
		t.Fatalf("plan %v, want the 6 deletes first", ph)
	}
}
