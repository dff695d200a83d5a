package sim

import "testing"

// TestBusyPortListStaysShort: a port kept busy for 10,000 packets, never
// holding more than 3, keeps a data list of at most 8 entries. Its queue
// never empties, so only compaction bounds the list; with the old rule
// (move only past 64 entries behind the head) it held 128.
func TestBusyPortListStaysShort(t *testing.T) {
	var q portQueue
	const ser = 1000
	now := int64(0)
	for i := range 10_000 {
		// A packet arrives every ser ps while two are queued: the port is
		// never idle and never holds more than 3.
		if i < 2 {
			q.schedule(0, ser, 4230, false)
			continue
		}
		now += ser
		q.schedule(now, ser, 4230, false)
		if occ := q.occupancy(now); occ > 3 || occ < 2 {
			t.Fatalf("packet %d: occupancy %d, want 2-3", i, occ)
		}
	}
	if cap(q.data) > 8 {
		t.Fatalf("a queue of at most 3 packets holds a list of %d entries", cap(q.data))
	}
}
