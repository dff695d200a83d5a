package bmv2tests

import (
	"fmt"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// errorRecorder is a testing.TB that records Errorf instead of failing, so
// that a test can check what a checker rejects.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Helper() {}
func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckSACKWindowEdges runs checkSACK (what the BMv2 tests assert of
// every SACK) on SACKs built by hand, without BMv2, at the edges of the
// bitmap's reach: from base = cumulative + 1 the bitmap covers cumulative
// + 2 to cumulative + 64 (bit d = base + d, d 1 to 63), so a SACK for 64
// above the cumulative PSN (bit 63) is valid; for a packet 64 or more past
// the first missing PSN the base is the packet's PSN - 63 (docs/protocol.md
// 6.5, a receive window above 64), and a SACK for 65 above based at
// cumulative + 1 is wrong twice: its base, and it does not cover the PSN.
func TestCheckSACKWindowEdges(t *testing.T) {
	const cum = 0xffffe0 // the window crosses the 24-bit wrap
	sack := func(above uint32, bitmap uint64) parsed {
		return parsed{pkt: &mrcpkt.Packet{
			BTH:  mrcpkt.BTH{Opcode: mrcpkt.OpSACK, PSN: (cum + above) & 0xffffff},
			SETH: &mrcpkt.SETH{CumPSN: cum, BasePSN: (cum + 1) & 0xffffff, Bitmap: bitmap},
		}}
	}
	for _, c := range []struct {
		name   string
		s      parsed
		want   int
		errors int
	}{
		{"at the cumulative PSN", sack(0, 0), 0, 0},
		{"behind the cumulative PSN", sack(0xfffff0, 0), 0, 0},
		{"lowest bitmap PSN (bit 1)", sack(2, 1<<1), 2, 0},
		{"window's last PSN (bit 63)", sack(64, 1<<63), 64, 0},
		{"window's last PSN, bit clear", sack(64, 1<<62), -1, 1},
		{"the first missing PSN (bit 0 is always clear)", sack(1, 0), -1, 1},
		{"65 above, based at cumulative + 1", sack(65, 1<<63), -1, 2},
		{"65 above, based at its PSN - 63 (bit 63)", func() parsed {
			p := sack(65, 1<<63)
			p.pkt.SETH.BasePSN = (cum + 65 - 63) & 0xffffff
			return p
		}(), 65, 0},
		{"bit 0 set", sack(2, 1<<1|1), 2, 1},
	} {
		r := &errorRecorder{TB: t}
		if got := checkSACK(r, c.s); got != c.want || len(r.errs) != c.errors {
			t.Errorf("%s: checkSACK = %d with errors %q; want %d with %d error(s)", c.name, got, r.errs, c.want, c.errors)
		}
	}
}
