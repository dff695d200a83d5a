package lab

import (
	"net/netip"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// The wires count the data packets among their drops: a data packet as a
// plane carries it, whole or trimmed, is data; a SACK, a NACK, a probe,
// its answer and a frame that is not MRC's are not.
func TestIsData(t *testing.T) {
	src, dst := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	carrier := netip.MustParseAddr("fc00:0:1:e001::")
	encap := func(p *mrcpkt.Packet) []byte {
		t.Helper()
		p.Outer = &mrcpkt.IPv6{Src: src, Dst: carrier, DSCP: 4, HopLimit: 64}
		if err := p.FixLengths(); err != nil {
			t.Fatal(err)
		}
		f, err := mrcpkt.Serialize(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	data, err := mrcpkt.NewData(mrcpkt.DataOptions{Src: src, Dst: dst, DSCP: 4,
		BTH: mrcpkt.BTH{Opcode: mrcpkt.OpWriteMiddle, PSN: 7}, RETH: mrcpkt.RETH{DMALen: 100},
		Payload: make([]byte, 100)})
	if err != nil {
		t.Fatal(err)
	}
	dataFrame := encap(data)
	answer := func(op uint8) *mrcpkt.Packet {
		return &mrcpkt.Packet{
			Inner: mrcpkt.IPv6{Src: dst, Dst: src, HopLimit: 64},
			UDP:   mrcpkt.UDP{DstPort: mrcpkt.PortRoCEv2},
			BTH:   mrcpkt.BTH{Opcode: op, PSN: 7},
		}
	}
	sack := answer(mrcpkt.OpSACK)
	sack.SETH = &mrcpkt.SETH{CumPSN: 7, BasePSN: 8}
	nack := answer(mrcpkt.OpNACK)
	nack.NETH = &mrcpkt.NETH{PSN: 7, Reason: mrcpkt.NACKTrimmed}
	probeAnswer := answer(mrcpkt.OpProbeAnswer)
	probeAnswer.PETH = &mrcpkt.PETH{}
	notMRC := append([]byte(nil), dataFrame...)
	notMRC[12], notMRC[13] = 0x08, 0x00 // IPv4

	for _, c := range []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"data", dataFrame, true},
		{"trimmed data", mrcpkt.Trim(append([]byte(nil), dataFrame...), mrcpkt.TrimLen, 8), true},
		{"SACK", encap(sack), false},
		{"NACK", encap(nack), false},
		{"probe", encap(answer(mrcpkt.OpProbe)), false},
		{"probe answer", encap(probeAnswer), false},
		{"IPv4", notMRC, false},
		{"runt", dataFrame[:20], false},
	} {
		if got := isData(c.frame); got != c.want {
			t.Errorf("%s: isData %v, want %v", c.name, got, c.want)
		}
	}
}
