package transport

import (
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// sackAt is a SACK for data PSN psn whose 64 bits start at base.
func sackAt(t testing.TB, psn, cum, base uint32, bitmap uint64) []byte {
	p := answer(mrcpkt.OpSACK, qpnA, psn&0xffffff)
	p.SETH = &mrcpkt.SETH{CumPSN: cum & 0xffffff, BasePSN: base & 0xffffff, Bitmap: bitmap, EV: 0x10000001}
	return serialize(t, p)
}

// TestSACKGapNeedsAMissingReport: with a receive window of 256, packets
// 100-103 are acked by SACKs whose 64 bits end at them (bases 37-40):
// packets 0-36 are in none of them and may have arrived, so the SACK-gap
// rule resends none of them however long it waits, while 37-99, shown
// missing, are resent. A SACK whose bits start at 0 and show packet 0
// clear makes it lost, and it is resent once older than the reorder
// window.
func TestSACKGapNeedsAMissingReport(t *testing.T) {
	e, q, clk := newSender(t, QPConfig{Mode: MRC, CongestionControl: CCOff, ReceiveWindow: 256, Window: 128})
	tr, _ := startWrite(t, e, q, 128*DefaultSegment)
	start := tr.StartPSN()
	clk.advance(5 * time.Microsecond)
	// Packets 100..103 arrive; every SACK's 64 bits end at its packet.
	for i := uint32(100); i < 104; i++ {
		base := start + i - 63
		var bm uint64
		for j := uint32(100); j <= i; j++ {
			bm |= 1 << (j - (i - 63))
		}
		handle(t, e, sackAt(t, start+i, start-1, base, bm))
	}
	// Far past the reorder window (RTT samples of 5 µs), within the RTO
	// (at least 1 ms); another SACK runs the rule again.
	clk.advance(200 * time.Microsecond)
	e.HandleTimers()
	handle(t, e, sackAt(t, start+103, start-1, start+40, 0xf<<60))
	// Those SACKs showed 37-99 missing (their bits start at 37-40): they
	// are resent; 0-36 are in none of them and are not.
	for _, s := range takeSent(t, e) {
		if i := (s.psn - start) & 0xffffff; s.retx && i < 37 {
			t.Fatalf("packet %d resent though no SACK showed it missing", i)
		}
	}
	// Packet 104's SACK, its bits from packet 0: 0 to 99 clear.
	handle(t, e, sackAt(t, start+104, start-1, start, 0))
	clk.advance(200 * time.Microsecond)
	e.HandleTimers()
	handle(t, e, sackAt(t, start+104, start-1, start+41, 0x1f<<59))
	lost := false
	for _, s := range takeSent(t, e) {
		lost = lost || s.psn == start && s.retx
	}
	if !lost {
		t.Fatalf("packet 0, shown missing, not resent")
	}
}
