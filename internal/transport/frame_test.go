package transport

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// The engine's own encoder writes what mrcpkt.DataPacket writes.
func TestDataFrameMatchesMrcpkt(t *testing.T) {
	mac := Ethernet{Src: [6]byte{2, 0, 0, 0, 0, 1}, Dst: [6]byte{2, 0, 0, 0, 0, 2}}
	tmpl := dataTemplate(addrA, addrB, mac, 4, 0xFFFF, 0xABCDEF)
	for _, c := range []struct {
		op    uint8
		psn   uint32
		flags uint8
		len   int
	}{
		{mrcpkt.OpWriteFirst, 0xFFFFFF, 0, 1024},
		{mrcpkt.OpWriteMiddle, 0, mrcpkt.METHRetransmission, 1024},
		{mrcpkt.OpWriteLastImm, 0x123456, 0, 17},
		{mrcpkt.OpWriteOnlyImm, 7, mrcpkt.METHRetransmission, 1},
	} {
		payload := bytes.Repeat([]byte{byte(c.len)}, c.len)
		got := appendData(nil, tmpl, c.op, c.psn, c.flags, 0x7000_0000_1000, 0xBEEF, payload)
		want, err := mrcpkt.DataPacket(mrcpkt.DataOptions{
			Ethernet: mrcpkt.Ethernet{Src: mac.Src, Dst: mac.Dst},
			Src:      addrA, Dst: addrB, DSCP: 4, ECN: mrcpkt.ECNECT0, SrcPort: hostUDPSrc,
			BTH:     mrcpkt.BTH{Opcode: c.op, PKey: 0xFFFF, DstQP: 0xABCDEF, PSN: c.psn},
			METH:    mrcpkt.METH{Flags: c.flags},
			RETH:    mrcpkt.RETH{VAddr: 0x7000_0000_1000, RKey: 0xBEEF, DMALen: uint32(c.len)},
			Payload: payload,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("opcode %#x PSN %#x: engine frame\n%x\nmrcpkt frame\n%x", c.op, c.psn, got, want)
		}
	}
}

// parseFrame reads what mrcpkt writes, for every kind the host receives,
// with and without the outer header.
func TestParseFrameMatchesMrcpkt(t *testing.T) {
	data, err := mrcpkt.NewData(mrcpkt.DataOptions{
		Src: addrB, Dst: addrA, DSCP: 4, SrcPort: 0x1000,
		BTH:     mrcpkt.BTH{Opcode: mrcpkt.OpWriteMiddle, DstQP: qpnA, PSN: 0xFFFFFE},
		METH:    mrcpkt.METH{Flags: 1},
		RETH:    mrcpkt.RETH{VAddr: 0x1234_5678_9abc, RKey: 0x42, DMALen: 3},
		Payload: []byte{1, 2, 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	sack := answer(mrcpkt.OpSACK, qpnA, 0xFFFFF0)
	sack.SETH = &mrcpkt.SETH{CumPSN: 0xFFFFFD, Mark: 1, BasePSN: 0xFFFFFE, Bitmap: 0x8000_0000_0000_0006, EV: 0x1004_0003}
	nack := answer(mrcpkt.OpNACK, qpnA, 0x000003)
	nack.NETH = &mrcpkt.NETH{EV: 0x1004_0003, PSN: 3, Reason: mrcpkt.NACKTrimmedLastHop}
	for _, p := range []*mrcpkt.Packet{data, sack, nack} {
		for _, encap := range []bool{false, true} {
			q := *p
			if encap {
				q.Outer = &mrcpkt.IPv6{Src: addrB, Dst: addrA, FlowLabel: 3, HopLimit: 60}
			}
			f := serialize(t, &q)
			var r rxFrame
			if err := parseFrame(f, &r, false); err != nil {
				t.Fatalf("opcode %#x encap %v: %v", p.BTH.Opcode, encap, err)
			}
			if r.op != p.BTH.Opcode || r.dstQP != p.BTH.DstQP || r.psn != p.BTH.PSN {
				t.Errorf("opcode %#x: BTH read as op %#x QP %#x PSN %#x", p.BTH.Opcode, r.op, r.dstQP, r.psn)
			}
			switch {
			case p.RETH != nil:
				if r.methFlags != 1 || r.vaddr != p.RETH.VAddr || r.rkey != p.RETH.RKey || r.dmaLen != 3 || !bytes.Equal(r.payload, p.Payload) {
					t.Errorf("data read as %+v", r)
				}
			case p.SETH != nil:
				s := p.SETH
				if r.cum != s.CumPSN || r.mark != s.Mark || r.base != s.BasePSN || r.bitmap != s.Bitmap || r.ev != s.EV {
					t.Errorf("SACK read as %+v, want %+v", r, *s)
				}
			case p.NETH != nil:
				if r.reason != mrcpkt.NACKTrimmedLastHop || r.ev != p.NETH.EV {
					t.Errorf("NACK read as %+v", r)
				}
			}
		}
	}
}

func TestParseFrameRefuses(t *testing.T) {
	data := appendData(nil, dataTemplate(addrB, addrA, Ethernet{}, 4, 0xFFFF, qpnA), mrcpkt.OpWriteMiddle, 1, 0, 0, 1, make([]byte, 100))
	probe := serialize(t, answer(mrcpkt.OpProbe, qpnA, 9))
	port := append([]byte(nil), data...)
	port[offUDP+3] ^= 1
	for name, f := range map[string][]byte{
		"trimmed data (cut after RETH)": data[:dataHdrLen],
		"probe":                         probe,
		"UDP port 4790":                 port,
		"too short":                     data[:40],
	} {
		var r rxFrame
		if err := parseFrame(f, &r, false); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	// Random damage never panics and never yields a frame mrcpkt refuses
	// (the engine is at most as permissive as the codec).
	rng := rand.New(rand.NewPCG(1, 2))
	sack := sackFrame(t, 5, 4, 0)
	for i := 0; i < 20000; i++ {
		src := data
		if i%2 == 1 {
			src = sack
		}
		f := append([]byte(nil), src[:rng.IntN(len(src)+1)]...)
		for k := rng.IntN(4); k > 0 && len(f) > 0; k-- {
			f[rng.IntN(len(f))] ^= byte(1 << rng.IntN(8))
		}
		var r rxFrame
		if parseFrame(f, &r, false) != nil {
			continue
		}
		if _, err := mrcpkt.Parse(f); err != nil {
			t.Fatalf("engine accepted %x, mrcpkt refuses it: %v", f, err)
		}
	}
}

func TestPSNArithmetic(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		d    int
	}{
		{0, 0xFFFFFF, 1}, {0xFFFFFF, 0, -1}, {5, 0xFFFFF0, 21}, {0xFFFFF0, 5, -21},
		{0x7FFFFF, 0, 0x7FFFFF}, {0x800000, 0, -0x800000},
	} {
		if got := PSNDiff(c.a, c.b); got != c.d {
			t.Errorf("PSNDiff(%#x, %#x) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if got := PSNAdd(0xFFFFF0, 0x20); got != 0x10 {
		t.Errorf("PSNAdd wrap = %#x", got)
	}
	if got := PSNAdd(0, -1); got != 0xFFFFFF {
		t.Errorf("PSNAdd(0, -1) = %#x", got)
	}
}
