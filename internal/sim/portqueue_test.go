package sim

import "testing"

// TestBusyPortSpillStaysShort: a port kept busy for 10,000 packets, never
// holding more than 7, keeps its 4 oldest inline and a spill list of at
// most 8 entries. Its queue never empties, so only compaction bounds the
// list; with the old rule (move only past 64 entries behind the head) it
// held 128.
func TestBusyPortSpillStaysShort(t *testing.T) {
	var q portQueue
	const ser = 1000
	now := int64(0)
	for i := range 10_000 {
		// A packet arrives every ser ps while six are queued: the port is
		// never idle and never holds more than 7.
		if i < 6 {
			q.schedule(0, ser, 4230, false)
			continue
		}
		now += ser
		q.schedule(now, ser, 4230, false)
		if occ := q.occupancy(now); occ > 7 || occ < 6 {
			t.Fatalf("packet %d: occupancy %d, want 6-7", i, occ)
		}
	}
	if q.spill == nil || cap(q.spill.q) > 8 {
		t.Fatalf("a queue of at most 7 packets spills %v", q.spill)
	}
}

// TestPortQueueOrder: data packets leave a port in the order queued, at
// the times computed when each was queued, across the inline ring and the
// spill; a high-priority packet waits only for the data packet being
// sent. 10 packets of 1,000 ps at 0 on an idle port end at 1,000 to
// 10,000; a high-priority one of 100 ps at 2,500 waits for the third's
// end at 3,000, and those queued behind it keep their departures.
func TestPortQueueOrder(t *testing.T) {
	var q portQueue
	for i := range 10 {
		if _, end := q.schedule(0, 1000, int64(100+i), false); end != int64(1000*(i+1)) {
			t.Fatalf("packet %d ends at %d, want %d", i, end, 1000*(i+1))
		}
	}
	if got := q.occupancy(0); got != 10 || q.dataBytes != 1045 {
		t.Fatalf("at 0: %d packets, %d bytes; want 10 and 1045", got, q.dataBytes)
	}
	if start, end := q.schedule(2500, 100, 60, true); start != 3000 || end != 3100 {
		t.Errorf("a high-priority packet at 2,500 runs over [%d, %d), want [3000, 3100)", start, end)
	}
	for _, c := range []struct {
		now   int64
		n     int
		bytes int64
	}{{2999, 8, 1045 - 100 - 101}, {3000, 7, 1045 - 100 - 101 - 102}, {6999, 4, 108 + 107 + 106 + 109}, {9999, 1, 109}, {10_000, 0, 0}} {
		if got := q.occupancy(c.now); got != c.n || q.dataBytes != c.bytes {
			t.Errorf("at %d: %d packets, %d bytes; want %d and %d", c.now, got, q.dataBytes, c.n, c.bytes)
		}
	}
	if q.busy != 10_100 {
		t.Errorf("busy until %d, want 10,100 (the data after the high-priority packet)", q.busy)
	}
}
