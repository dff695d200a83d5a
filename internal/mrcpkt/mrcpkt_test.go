package mrcpkt_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// unhex decodes hex written in groups, spaces ignored.
func unhex(t testing.TB, groups ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(groups, ""), " ", ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

var (
	hostA   = netip.MustParseAddr("2001:db8::a")
	hostB   = netip.MustParseAddr("2001:db8::b")
	carrier = netip.MustParseAddr("fcbb:bb00:102:203:304::")
	macA    = [6]byte{0x02, 0, 0, 0, 0, 0x0a}
	macB    = [6]byte{0x02, 0, 0, 0, 0, 0x0b}
)

// goldenData is the host data packet of TestGoldenData.
func goldenData() mrcpkt.DataOptions {
	return mrcpkt.DataOptions{
		Ethernet: mrcpkt.Ethernet{Dst: macB, Src: macA},
		Src:      hostA,
		Dst:      hostB,
		DSCP:     4,
		SrcPort:  0x1234,
		BTH: mrcpkt.BTH{
			Opcode: mrcpkt.OpWriteOnly,
			Flags:  0x30,
			PKey:   0xffff,
			DstQP:  0x123456,
			AckReq: true,
			PSN:    0xabcdef,
		},
		METH:    mrcpkt.METH{Flags: mrcpkt.METHRetransmission},
		RETH:    mrcpkt.RETH{VAddr: 0x0011223344556677, RKey: 0x89abcdef, DMALen: 4},
		Payload: []byte{0xde, 0xad, 0xbe, 0xef},
	}
}

func TestGoldenData(t *testing.T) {
	want := unhex(t,
		// Ethernet: dst, src, ethertype IPv6.
		"02 00 00 00 00 0b", "02 00 00 00 00 0a", "86 dd",
		// IPv6: version 6 | traffic class 0x10 (DSCP 4 << 2, ECN 0) | flow label 0.
		"61 00 00 00",
		// payload length 44 = UDP 8 + BTH 12 + METH 4 + RETH 16 + payload 4; next header 17; hop limit 64.
		"00 2c", "11", "40",
		"2001 0db8 0000 0000 0000 0000 0000 000a", // src
		"2001 0db8 0000 0000 0000 0000 0000 000b", // dst
		// UDP: src port 0x1234, dst port 4791, length 44, checksum 0.
		"12 34", "12 b7", "00 2c", "00 00",
		// BTH: opcode 0xca (write only), flags 0x30, pkey 0xffff, reserved,
		// dst QP 0x123456, ack request (bit 7) + reserved, PSN 0xabcdef.
		"ca", "30", "ff ff", "00", "12 34 56", "80", "ab cd ef",
		// METH: flags 0x01 (retransmission), 24 reserved bits.
		"01", "00 00 00",
		// RETH: virtual address, rkey, DMA length 4.
		"00 11 22 33 44 55 66 77", "89 ab cd ef", "00 00 00 04",
		// Payload.
		"de ad be ef",
	)
	got, err := mrcpkt.DataPacket(goldenData())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("DataPacket:\n got %x\nwant %x", got, want)
	}
	p, err := mrcpkt.Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	wantP, err := mrcpkt.NewData(goldenData())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, wantP) {
		t.Errorf("Parse(golden):\n got %+v\nwant %+v", p, wantP)
	}
}

// TestGoldenDataECT0 pins the traffic class of a host data packet sent
// ECN-capable, as hosts send their data: DSCP 4 << 2 | ECT(0) = 0x12.
func TestGoldenDataECT0(t *testing.T) {
	o := goldenData()
	o.ECN = mrcpkt.ECNECT0
	got, err := mrcpkt.DataPacket(o)
	if err != nil {
		t.Fatal(err)
	}
	want, err := mrcpkt.DataPacket(goldenData())
	if err != nil {
		t.Fatal(err)
	}
	// Version 6 | traffic class 0x12 | flow label 0; nothing else differs.
	copy(want[14:18], unhex(t, "61 20 00 00"))
	if !bytes.Equal(got, want) {
		t.Errorf("DataPacket with ECT(0):\n got %x\nwant %x", got, want)
	}
	p, err := mrcpkt.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if p.Inner.ECN != mrcpkt.ECNECT0 || p.Inner.DSCP != 4 {
		t.Errorf("parsed DSCP %d ECN %d, want 4 and ECT(0) (%d)", p.Inner.DSCP, p.Inner.ECN, mrcpkt.ECNECT0)
	}
}

// nack is an encapsulated NACK as a receiving NIC sends it.
func nack() *mrcpkt.Packet {
	return &mrcpkt.Packet{
		Ethernet: mrcpkt.Ethernet{Dst: macA, Src: macB},
		Outer: &mrcpkt.IPv6{Src: hostB, Dst: carrier, DSCP: 46, ECN: 1, FlowLabel: 0x5beef,
			HopLimit: 64},
		Inner: mrcpkt.IPv6{Src: hostB, Dst: hostA, DSCP: 46, HopLimit: 63},
		UDP:   mrcpkt.UDP{SrcPort: 0xabcd, DstPort: mrcpkt.PortRoCEv2},
		BTH:   mrcpkt.BTH{Opcode: mrcpkt.OpNACK, PKey: 0xffff, DstQP: 7, PSN: 0x102},
		NETH: &mrcpkt.NETH{EV: 0x01020304, PSN: 0x0a0b0c, Reason: mrcpkt.NACKTrimmedLastHop,
			TSEcho: 0x7788},
	}
}

func TestGoldenNACK(t *testing.T) {
	want := unhex(t,
		"02 00 00 00 00 0a", "02 00 00 00 00 0b", "86 dd",
		// Outer IPv6: traffic class 0xb9 (DSCP 46 << 2 | ECN 1), flow label 0x5beef:
		// 0110 1011 | 1001 0101 | 1011 1110 | 1110 1111.
		"6b 95 be ef",
		// payload length 72 = inner IPv6 40 + UDP 8 + BTH 12 + NETH 12; next header 41; hop limit 64.
		"00 48", "29", "40",
		"2001 0db8 0000 0000 0000 0000 0000 000b",
		"fcbb bb00 0102 0203 0304 0000 0000 0000",
		// Inner IPv6: traffic class 0xb8, flow label 0; payload length 32; UDP; hop limit 63.
		"6b 80 00 00", "00 20", "11", "3f",
		"2001 0db8 0000 0000 0000 0000 0000 000b",
		"2001 0db8 0000 0000 0000 0000 0000 000a",
		// UDP: src 0xabcd (EV[31:16]), dst 4791, length 32, checksum 0.
		"ab cd", "12 b7", "00 20", "00 00",
		// BTH: NACK, no flags, pkey, reserved, dst QP 7, no ack request, PSN 0x102.
		"dd", "00", "ff ff", "00", "00 00 07", "00", "00 01 02",
		// NETH: EV, PSN 0x0a0b0c, reason TRIMMED_LASTHOP, timestamp echo, reserved.
		"01 02 03 04", "0a 0b 0c", "02", "77 88", "00 00",
	)
	p := nack()
	if err := p.FixLengths(); err != nil {
		t.Fatal(err)
	}
	got, err := mrcpkt.Serialize(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Serialize:\n got %x\nwant %x", got, want)
	}
}

// sack is a SACK as the receiving NIC's host side sees it (no outer header).
func sack() *mrcpkt.Packet {
	return &mrcpkt.Packet{
		Ethernet: mrcpkt.Ethernet{Dst: macA, Src: macB},
		Inner:    mrcpkt.IPv6{Src: hostB, Dst: hostA, DSCP: 46, HopLimit: 64},
		UDP:      mrcpkt.UDP{SrcPort: 0xabcd, DstPort: mrcpkt.PortRoCEv2},
		BTH: mrcpkt.BTH{Opcode: mrcpkt.OpSACK, Flags: 0x40, PKey: 0x8000, DstQP: 0xabcdef,
			AckReq: true, PSN: 0x10},
		SETH: &mrcpkt.SETH{CumPSN: 0x102, Mark: mrcpkt.MarkAlwaysSkip, BasePSN: 0xf0,
			Bitmap: 0x8000000000000001, EV: 0xdeadbeef},
	}
}

func TestGoldenSACK(t *testing.T) {
	want := unhex(t,
		// BTH: SACK, flags 0x40, pkey 0x8000, reserved, dst QP, ack request, PSN 0x10.
		"dc", "40", "80 00", "00", "ab cd ef", "80", "00 00 10",
		// SETH: cumulative PSN 0x102; mark 2 in the top 2 bits + 6 reserved;
		// base PSN 0xf0 + 8 reserved bits; bitmap; EV.
		"00 01 02", "80", "00 00 f0", "00", "80 00 00 00 00 00 00 01", "de ad be ef",
	)
	p := sack()
	if err := p.FixLengths(); err != nil {
		t.Fatal(err)
	}
	got, err := mrcpkt.Serialize(p)
	if err != nil {
		t.Fatal(err)
	}
	const bthOff = 14 + 40 + 8
	if len(got) != bthOff+len(want) {
		t.Fatalf("SACK frame is %d bytes, want %d", len(got), bthOff+len(want))
	}
	if !bytes.Equal(got[bthOff:], want) {
		t.Errorf("SACK from BTH on:\n got %x\nwant %x", got[bthOff:], want)
	}
	if udpLen := got[14+40+4 : 14+40+6]; !bytes.Equal(udpLen, []byte{0, 40}) {
		t.Errorf("UDP length bytes %x, want 0028 (8 + 12 + 20)", udpLen)
	}
}

// probeAnswer is an encapsulated probe answer as a receiving NIC sends it:
// the probe's EV 0x10040003 echoed, and carried back on it.
func probeAnswer() *mrcpkt.Packet {
	return &mrcpkt.Packet{
		Ethernet: mrcpkt.Ethernet{Dst: macA, Src: macB},
		Outer:    &mrcpkt.IPv6{Src: hostB, Dst: carrier, DSCP: 46, FlowLabel: 0x0003, HopLimit: 64},
		Inner:    mrcpkt.IPv6{Src: hostB, Dst: hostA, DSCP: 46, HopLimit: 64},
		UDP:      mrcpkt.UDP{SrcPort: 0x1004, DstPort: mrcpkt.PortRoCEv2},
		BTH:      mrcpkt.BTH{Opcode: mrcpkt.OpProbeAnswer, PKey: 0xffff, DstQP: 0x000404, PSN: 0x00002a},
		PETH:     &mrcpkt.PETH{EV: 0x10040003},
	}
}

func TestGoldenProbeAnswer(t *testing.T) {
	want := unhex(t,
		"02 00 00 00 00 0a", "02 00 00 00 00 0b", "86 dd",
		// Outer IPv6: traffic class 0xb8 (DSCP 46, Not-ECT), flow label 0x00003.
		"6b 80 00 03",
		// payload length 64 = inner IPv6 40 + UDP 8 + BTH 12 + PETH 4; next header 41; hop limit 64.
		"00 40", "29", "40",
		"2001 0db8 0000 0000 0000 0000 0000 000b",
		"fcbb bb00 0102 0203 0304 0000 0000 0000",
		// Inner IPv6: traffic class 0xb8, flow label 0; payload length 24; UDP; hop limit 64.
		"6b 80 00 00", "00 18", "11", "40",
		"2001 0db8 0000 0000 0000 0000 0000 000b",
		"2001 0db8 0000 0000 0000 0000 0000 000a",
		// UDP: src 0x1004 (EV[31:16]), dst 4791, length 24, checksum 0.
		"10 04", "12 b7", "00 18", "00 00",
		// BTH: probe answer 0xdf, no flags, pkey, reserved, dst QP (the prober's), no ack request, PSN.
		"df", "00", "ff ff", "00", "00 04 04", "00", "00 00 2a",
		// PETH: the echoed EV.
		"10 04 00 03",
	)
	p := probeAnswer()
	if err := p.FixLengths(); err != nil {
		t.Fatal(err)
	}
	got, err := mrcpkt.Serialize(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Serialize:\n got %x\nwant %x", got, want)
	}
	if len(want) != 118 {
		t.Errorf("probe answer is %d bytes on the fabric, want 118", len(want))
	}
	back, err := mrcpkt.Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("Parse(golden):\n got %+v\nwant %+v", back, p)
	}
	if ev, ok := mrcpkt.EV(back); !ok || ev != back.PETH.EV {
		t.Errorf("the answer travels on EV %#x, echoes %#x: want the same", ev, back.PETH.EV)
	}
}

// packets returns one packet of every kind, each without and with an outer
// header, lengths fixed.
func packets(t testing.TB) map[string]*mrcpkt.Packet {
	t.Helper()
	data, err := mrcpkt.NewData(goldenData())
	if err != nil {
		t.Fatal(err)
	}
	empty, err := mrcpkt.NewData(mrcpkt.DataOptions{
		Src: hostA, Dst: hostB, DSCP: 5, BTH: mrcpkt.BTH{Opcode: mrcpkt.OpWriteFirst},
	})
	if err != nil {
		t.Fatal(err)
	}
	probe := sack()
	probe.SETH = nil
	probe.BTH.Opcode = mrcpkt.OpProbe
	nackHost := nack()
	nackHost.Outer = nil
	answerHost := probeAnswer()
	answerHost.Outer = nil

	ps := map[string]*mrcpkt.Packet{
		"data": data, "data without payload": empty,
		"NACK": nackHost, "SACK": sack(), "probe": probe, "probe answer": answerHost,
	}
	for _, name := range []string{"data", "data without payload", "NACK", "SACK", "probe", "probe answer"} {
		p := ps[name]
		e := *p
		e.Outer = &mrcpkt.IPv6{Src: p.Inner.Src, Dst: carrier, DSCP: p.Inner.DSCP, ECN: 2,
			FlowLabel: 0x0f00d, HopLimit: 64}
		ps[name+" encapsulated"] = &e
	}
	for name, p := range ps {
		if err := p.FixLengths(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return ps
}

func TestRoundTrip(t *testing.T) {
	for name, p := range packets(t) {
		t.Run(name, func(t *testing.T) {
			frame, err := mrcpkt.Serialize(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mrcpkt.Parse(frame)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, p) {
				t.Errorf("Parse(Serialize(p)):\n got %+v\nwant %+v", got, p)
			}
			if got.Truncated {
				t.Error("complete frame parsed as truncated")
			}
		})
	}
}

// encapsulatedData is a data packet with a 100-byte payload as the sending
// NIC puts it on a plane port.
func encapsulatedData(t testing.TB) (*mrcpkt.Packet, []byte) {
	t.Helper()
	o := goldenData()
	o.Payload = bytes.Repeat([]byte{0x5a}, 100)
	o.RETH.DMALen = 100
	p, err := mrcpkt.NewData(o)
	if err != nil {
		t.Fatal(err)
	}
	p.Outer = &mrcpkt.IPv6{Src: hostA, Dst: carrier, DSCP: 4, FlowLabel: 0x1234, HopLimit: 64}
	if err := p.FixLengths(); err != nil {
		t.Fatal(err)
	}
	frame, err := mrcpkt.Serialize(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) != mrcpkt.TrimLen+100 {
		t.Fatalf("encapsulated data frame is %d bytes, want %d", len(frame), mrcpkt.TrimLen+100)
	}
	return p, frame
}

// trim does to frame what a trimming switch does, on the bytes: cut to
// size, outer DSCP to dscp, outer payload length to what is left.
func trim(frame []byte, size int, dscp uint8) []byte {
	b := append([]byte(nil), frame[:size]...)
	b[14] = b[14]&0xf0 | dscp>>2
	b[15] = b[15]&0x3f | dscp<<6
	b[18], b[19] = byte((size-54)>>8), byte(size-54)
	return b
}

func TestParseTrimmed(t *testing.T) {
	orig, frame := encapsulatedData(t)
	trimmed := trim(frame, mrcpkt.TrimLen, 12)
	// Trim, which the NIC scenarios and the PNA tests cut frames with,
	// does the same bytes as the literal offsets above.
	if got := mrcpkt.Trim(append([]byte(nil), frame...), mrcpkt.TrimLen, 12); !bytes.Equal(got, trimmed) {
		t.Fatalf("Trim:\n %x\nwant\n %x", got, trimmed)
	}
	p, err := mrcpkt.Parse(trimmed)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || p.Payload != nil {
		t.Errorf("trimmed: Truncated %v, payload %d bytes; want true, none", p.Truncated, len(p.Payload))
	}
	want := *orig
	outer := *orig.Outer
	outer.DSCP = 12
	outer.PayloadLength = mrcpkt.TrimLen - 54
	want.Outer = &outer
	want.Payload = nil
	want.Truncated = true
	if !reflect.DeepEqual(p, &want) {
		t.Errorf("trimmed:\n got %+v\nwant %+v", p, &want)
	}
	// The inner lengths still describe the original packet.
	if p.Inner.PayloadLength != orig.Inner.PayloadLength || p.UDP.Length != orig.UDP.Length {
		t.Errorf("inner lengths %d/%d, want the original's %d", p.Inner.PayloadLength, p.UDP.Length,
			orig.Inner.PayloadLength)
	}
	// Serializing what was parsed gives the trimmed frame back.
	again, err := mrcpkt.Serialize(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, trimmed) {
		t.Errorf("Serialize(Parse(trimmed)):\n got %x\nwant %x", again, trimmed)
	}

	// Cut without rewriting the outer length: still parses, truncated.
	p, err = mrcpkt.Parse(frame[:mrcpkt.TrimLen])
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || p.Payload != nil || !reflect.DeepEqual(p.RETH, orig.RETH) {
		t.Errorf("cut to 134: Truncated %v, payload %d bytes, RETH %+v", p.Truncated, len(p.Payload), p.RETH)
	}

	// Cut into RETH: an error naming it.
	_, err = mrcpkt.Parse(trim(frame, 120, 12))
	if !errors.Is(err, mrcpkt.ErrTooShort) || !strings.Contains(err.Error(), "RETH") {
		t.Errorf("cut to 120: error %v, want ErrTooShort naming RETH", err)
	}
	t.Logf("cut to 120: %v", err)
}

// TestParseEveryCut parses the data frame cut at every length: an error
// until RETH is complete, then a packet whose payload is what is left.
func TestParseEveryCut(t *testing.T) {
	orig, frame := encapsulatedData(t)
	for n := 0; n <= len(frame); n++ {
		p, err := mrcpkt.Parse(frame[:n])
		if n < mrcpkt.TrimLen {
			if !errors.Is(err, mrcpkt.ErrTooShort) {
				t.Errorf("cut to %d: error %v, want ErrTooShort", n, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("cut to %d: %v", n, err)
			continue
		}
		if p.Truncated != (n < len(frame)) || !bytes.Equal(p.Payload, orig.Payload[:n-mrcpkt.TrimLen]) {
			t.Errorf("cut to %d: Truncated %v, payload %d bytes", n, p.Truncated, len(p.Payload))
		}
	}
}

func TestParseRejects(t *testing.T) {
	_, frame := encapsulatedData(t)
	probe := packets(t)["probe"]
	probeFrame, err := mrcpkt.Serialize(probe)
	if err != nil {
		t.Fatal(err)
	}
	const outer, inner, udp, bth = 14, 54, 94, 102
	for _, tc := range []struct {
		name  string
		frame []byte
		patch func(b []byte) []byte
		want  error
		says  string // the error names this
	}{
		{"ethertype IPv4", frame, func(b []byte) []byte { b[12], b[13] = 0x08, 0x00; return b },
			mrcpkt.ErrNotMRC, "0x0800"},
		{"IPv6 version 4", frame, func(b []byte) []byte { b[outer] = 0x40 | b[outer]&0x0f; return b },
			mrcpkt.ErrNotMRC, "version 4"},
		{"outer next header TCP", frame, func(b []byte) []byte { b[outer+6] = 6; return b },
			mrcpkt.ErrNotMRC, "next header 6"},
		{"outer next header hop-by-hop", frame, func(b []byte) []byte { b[outer+6] = 0; return b },
			mrcpkt.ErrNotMRC, "next header 0"},
		{"inner next header TCP", frame, func(b []byte) []byte { b[inner+6] = 6; return b },
			mrcpkt.ErrNotMRC, "inner IPv6 next header 6"},
		{"inner next header IPv6", frame, func(b []byte) []byte { b[inner+6] = 41; return b },
			mrcpkt.ErrNotMRC, "inner IPv6 next header 41"},
		{"UDP dst port 53", frame, func(b []byte) []byte { b[udp+2], b[udp+3] = 0, 53; return b },
			mrcpkt.ErrNotMRC, "UDP dst port 53"},
		{"opcode RC write only", frame, func(b []byte) []byte { b[bth] = 0x0a; return b },
			mrcpkt.ErrNotMRC, "0x0a"},
		{"UDP length differs", frame, func(b []byte) []byte { b[udp+5]--; return b },
			mrcpkt.ErrMalformed, "UDP length"},
		{"inner payload length 0", frame, func(b []byte) []byte { b[inner+4], b[inner+5] = 0, 0; return b },
			mrcpkt.ErrMalformed, "inner IPv6 packet (40 bytes)"},
		{"payload length 0, no outer", probeFrame, func(b []byte) []byte { b[18], b[19] = 0, 0; return b },
			mrcpkt.ErrMalformed, "inner IPv6 payload length 0"},
		{"outer payload length short", frame, func(b []byte) []byte { b[outer+5]--; return b },
			mrcpkt.ErrMalformed, "outer IPv6 payload length"},
		{"inner shorter than outer payload", frame, func(b []byte) []byte { b[outer+5]++; return b[:len(b)-1] },
			mrcpkt.ErrMalformed, "shorter than the outer"},
		{"trailing byte", frame, func(b []byte) []byte { return append(b, 0) },
			mrcpkt.ErrMalformed, "outer IPv6 payload length"},
		{"probe with payload", probeFrame, func(b []byte) []byte {
			b[18+1] += 2 // inner IPv6 payload length (no outer header)
			b[54+5] += 2 // UDP length
			return append(b, 1, 2)
		}, mrcpkt.ErrMalformed, "carries no payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.patch(append([]byte(nil), tc.frame...))
			p, err := mrcpkt.Parse(b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse = %+v, %v; want error %v", p, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			if _, ierr := mrcpkt.InnerBytes(b); !errors.Is(ierr, tc.want) {
				t.Errorf("InnerBytes error %v, want %v", ierr, tc.want)
			}
		})
	}
}

func TestSerializeRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(p *mrcpkt.Packet)
	}{
		{"DSCP 64", func(p *mrcpkt.Packet) { p.Inner.DSCP = 64 }},
		{"outer ECN 4", func(p *mrcpkt.Packet) { p.Outer.ECN = 4 }},
		{"flow label 21 bits", func(p *mrcpkt.Packet) { p.Outer.FlowLabel = 1 << 20 }},
		{"IPv4 address", func(p *mrcpkt.Packet) { p.Inner.Src = netip.MustParseAddr("10.0.0.1") }},
		{"zero address", func(p *mrcpkt.Packet) { p.Outer.Dst = netip.Addr{} }},
		{"zoned address", func(p *mrcpkt.Packet) { p.Inner.Dst = p.Inner.Dst.WithZone("eth0") }},
		{"QP 25 bits", func(p *mrcpkt.Packet) { p.BTH.DstQP = 1 << 24 }},
		{"PSN 25 bits", func(p *mrcpkt.Packet) { p.BTH.PSN = 1 << 24 }},
		{"UDP dst port", func(p *mrcpkt.Packet) { p.UDP.DstPort = 53 }},
		{"unknown opcode", func(p *mrcpkt.Packet) { p.BTH.Opcode = 0x0a }},
		{"data with NETH", func(p *mrcpkt.Packet) { p.NETH = &mrcpkt.NETH{} }},
		{"data without RETH", func(p *mrcpkt.Packet) { p.RETH = nil }},
		{"NACK opcode on data", func(p *mrcpkt.Packet) { p.BTH.Opcode = mrcpkt.OpNACK }},
		{"lengths not fixed", func(p *mrcpkt.Packet) { p.UDP.Length, p.Inner.PayloadLength = 0, 0 }},
		{"UDP length differs", func(p *mrcpkt.Packet) { p.UDP.Length++ }},
		{"payload beyond lengths", func(p *mrcpkt.Packet) { p.Payload = append(p.Payload, 1) }},
		{"outer length short", func(p *mrcpkt.Packet) { p.Outer.PayloadLength-- }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := packets(t)["data encapsulated"]
			tc.break_(p)
			if frame, err := mrcpkt.Serialize(p); err == nil {
				t.Errorf("Serialize accepted %+v: %x", p, frame)
			} else {
				t.Log(err)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		break_ func(p *mrcpkt.Packet)
	}{
		{"NETH PSN 25 bits", func(p *mrcpkt.Packet) { p.NETH.PSN = 1 << 24 }},
		{"NACK without NETH", func(p *mrcpkt.Packet) { p.NETH = nil }},
		{"NACK with payload", func(p *mrcpkt.Packet) { p.Payload = []byte{1}; _ = p.FixLengths() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := packets(t)["NACK"]
			tc.break_(p)
			if _, err := mrcpkt.Serialize(p); err == nil {
				t.Errorf("Serialize accepted %+v", p)
			}
		})
	}
	p := packets(t)["SACK"]
	p.SETH.Mark = 4
	if _, err := mrcpkt.Serialize(p); err == nil {
		t.Error("Serialize accepted SACK mark 4")
	}
	if _, err := mrcpkt.NewData(mrcpkt.DataOptions{Src: hostA, Dst: hostB,
		BTH: mrcpkt.BTH{Opcode: mrcpkt.OpNACK}}); err == nil {
		t.Error("NewData accepted a NACK opcode")
	}
}

func TestEV(t *testing.T) {
	p, frame := encapsulatedData(t)
	p.UDP.SrcPort = 0xabcd
	p.Outer.FlowLabel = 0xf1234 // the top 4 bits are not part of the EV
	if ev, ok := mrcpkt.EV(p); !ok || ev != 0xabcd1234 {
		t.Errorf("EV = %#x, %v; want 0xabcd1234, true", ev, ok)
	}
	// From the wire: UDP src port 0x1234 (goldenData), flow label 0x1234.
	parsed, err := mrcpkt.Parse(frame)
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := mrcpkt.EV(parsed); !ok || ev != 0x12341234 {
		t.Errorf("EV(parsed) = %#x, %v; want 0x12341234, true", ev, ok)
	}
	parsed.Outer = nil
	if _, ok := mrcpkt.EV(parsed); ok {
		t.Error("EV of a packet without outer header reported ok")
	}
}

func TestInnerBytes(t *testing.T) {
	_, encap := encapsulatedData(t)
	got, err := mrcpkt.InnerBytes(encap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, encap[54:]) {
		t.Errorf("InnerBytes(encapsulated) does not start at byte 54")
	}
	// What the receiving NIC hands its host: Ethernet + the inner packet.
	host := append(append([]byte(nil), encap[:14]...), encap[54:]...)
	fromHost, err := mrcpkt.InnerBytes(host)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromHost, got) {
		t.Errorf("InnerBytes differ:\nhost %x\nwire %x", fromHost, got)
	}
	if _, err := mrcpkt.InnerBytes(encap[:100]); !errors.Is(err, mrcpkt.ErrTooShort) {
		t.Errorf("InnerBytes(cut) error %v, want ErrTooShort", err)
	}
}
