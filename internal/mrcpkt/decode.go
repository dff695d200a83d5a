package mrcpkt

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Parse decodes an MRC frame. The first IPv6 header is the outer one when
// its next header is 41 (then the inner one follows), the inner one when it
// is 17. The UDP dst port must be 4791 and the BTH opcode an MRC one, which
// selects the extension headers. A frame cut after its headers (a trimmed
// packet: 134 bytes for encapsulated data) parses with Truncated set and
// Payload holding what is left; a frame cut inside a header is an error.
// Errors wrap ErrTooShort, ErrNotMRC or ErrMalformed.
//
// The Packet does not share memory with frame.
//
// gopacket's DecodingLayerParser does not fit here (one decoder per layer
// type, but an MRC frame has two IPv6 headers; lengths that may run past the
// frame), so the layers are decoded one by one.
func Parse(frame []byte) (*Packet, error) {
	p, _, err := parse(frame)
	return p, err
}

// InnerBytes returns the part of frame from the inner IPv6 header on: what a
// receiving NIC must hand its host byte for byte. The frame must parse; the
// result shares memory with frame.
func InnerBytes(frame []byte) ([]byte, error) {
	_, inner, err := parse(frame)
	if err != nil {
		return nil, err
	}
	return frame[inner:], nil
}

// parse is Parse that also returns the offset of the inner IPv6 header.
func parse(frame []byte) (*Packet, int, error) {
	n := len(frame)
	need := func(name string, end int) error {
		if n < end {
			return fmt.Errorf("%w for %s: %d bytes, need %d", ErrTooShort, name, n, end)
		}
		return nil
	}

	if err := need("Ethernet", EthernetLen); err != nil {
		return nil, 0, err
	}
	var eth layers.Ethernet
	if err := eth.DecodeFromBytes(frame, gopacket.NilDecodeFeedback); err != nil {
		return nil, 0, fmt.Errorf("%w: Ethernet: %v", ErrMalformed, err)
	}
	if et := binary.BigEndian.Uint16(frame[12:14]); et != EtherTypeIPv6 {
		return nil, 0, fmt.Errorf("%w: ethertype 0x%04x is not IPv6 (0x%04x)", ErrNotMRC, et, EtherTypeIPv6)
	}
	p := &Packet{}
	copy(p.Ethernet.Dst[:], eth.DstMAC)
	copy(p.Ethernet.Src[:], eth.SrcMAC)

	off := EthernetLen
	first, next, err := decodeIPv6(frame, off, "IPv6")
	if err != nil {
		return nil, 0, err
	}
	switch next {
	case ProtoUDP:
		p.Inner = first
	case ProtoIPv6:
		p.Outer = &first
		off += IPv6Len
		p.Inner, next, err = decodeIPv6(frame, off, "inner IPv6")
		if err != nil {
			return nil, 0, err
		}
		if next != ProtoUDP {
			return nil, 0, fmt.Errorf("%w: inner IPv6 next header %d is not UDP (%d)", ErrNotMRC, next, ProtoUDP)
		}
	default:
		return nil, 0, fmt.Errorf("%w: IPv6 next header %d is neither UDP (%d) nor IPv6 (%d)",
			ErrNotMRC, next, ProtoUDP, ProtoIPv6)
	}
	inner := off
	off += IPv6Len

	if err := need("UDP", off+UDPLen); err != nil {
		return nil, 0, err
	}
	var udp layers.UDP
	// Only the header: the UDP length is checked below, with the others.
	// gopacket fills every field before it can complain about the length.
	_ = udp.DecodeFromBytes(frame[off:off+UDPLen], gopacket.NilDecodeFeedback)
	p.UDP = UDP{
		SrcPort:  uint16(udp.SrcPort),
		DstPort:  uint16(udp.DstPort),
		Length:   udp.Length,
		Checksum: udp.Checksum,
	}
	if p.UDP.DstPort != PortRoCEv2 {
		return nil, 0, fmt.Errorf("%w: UDP dst port %d is not RoCEv2 (%d)", ErrNotMRC, p.UDP.DstPort, PortRoCEv2)
	}
	off += UDPLen

	if err := need("BTH", off+BTHLen); err != nil {
		return nil, 0, err
	}
	b := frame[off:]
	p.BTH = BTH{
		Opcode: b[0],
		Flags:  b[1],
		PKey:   binary.BigEndian.Uint16(b[2:]),
		DstQP:  get24(b[5:]),
		AckReq: b[8]&BTHAckReq != 0,
		PSN:    get24(b[9:]),
	}
	op := p.BTH.Opcode
	if extLen(op) < 0 {
		return nil, 0, fmt.Errorf("%w: BTH opcode 0x%02x is not an MRC opcode", ErrNotMRC, op)
	}
	off += BTHLen

	switch {
	case IsData(op):
		if err := need("METH", off+METHLen); err != nil {
			return nil, 0, err
		}
		p.METH = &METH{Flags: frame[off]}
		off += METHLen
		if err := need("RETH", off+RETHLen); err != nil {
			return nil, 0, err
		}
		b := frame[off:]
		p.RETH = &RETH{
			VAddr:  binary.BigEndian.Uint64(b),
			RKey:   binary.BigEndian.Uint32(b[8:]),
			DMALen: binary.BigEndian.Uint32(b[12:]),
		}
		off += RETHLen
	case op == OpNACK:
		if err := need("NETH", off+NETHLen); err != nil {
			return nil, 0, err
		}
		b := frame[off:]
		p.NETH = &NETH{
			EV:     binary.BigEndian.Uint32(b),
			PSN:    get24(b[4:]),
			Reason: b[7],
			TSEcho: binary.BigEndian.Uint16(b[8:]),
		}
		off += NETHLen
	case op == OpSACK:
		if err := need("SETH", off+SETHLen); err != nil {
			return nil, 0, err
		}
		b := frame[off:]
		p.SETH = &SETH{
			CumPSN:  get24(b),
			Mark:    b[3] >> 6,
			BasePSN: get24(b[4:]),
			Bitmap:  binary.BigEndian.Uint64(b[8:]),
			EV:      binary.BigEndian.Uint32(b[16:]),
		}
		off += SETHLen
	case op == OpProbeAnswer:
		if err := need("PETH", off+PETHLen); err != nil {
			return nil, 0, err
		}
		p.PETH = &PETH{EV: binary.BigEndian.Uint32(frame[off:])}
		off += PETHLen
	}

	if rest := frame[off:]; len(rest) > 0 {
		if !IsData(op) {
			return nil, 0, fmt.Errorf("%w: BTH opcode 0x%02x carries no payload, got %d bytes",
				ErrMalformed, op, len(rest))
		}
		p.Payload = append([]byte(nil), rest...)
	}
	p.Truncated, err = checkLengths(p, n-(inner+IPv6Len))
	if err != nil {
		return nil, 0, err
	}
	return p, inner, nil
}

// decodeIPv6 decodes the IPv6 header at frame[off:] and returns it with its
// next header.
func decodeIPv6(frame []byte, off int, name string) (IPv6, uint8, error) {
	if len(frame) < off+IPv6Len {
		return IPv6{}, 0, fmt.Errorf("%w for %s: %d bytes, need %d", ErrTooShort, name, len(frame), off+IPv6Len)
	}
	var l layers.IPv6
	// Only the fixed header. gopacket fills every field before it looks
	// further, and then can only complain about a hop-by-hop next header or
	// a zero payload length: the caller rejects the first, checkLengths the
	// second, both in MRC terms.
	_ = l.DecodeFromBytes(frame[off:off+IPv6Len], gopacket.NilDecodeFeedback)
	if l.Version != 6 {
		return IPv6{}, 0, fmt.Errorf("%w: %s version %d is not 6", ErrNotMRC, name, l.Version)
	}
	h := IPv6{
		Src:           netip.AddrFrom16([16]byte(l.SrcIP)),
		Dst:           netip.AddrFrom16([16]byte(l.DstIP)),
		DSCP:          l.TrafficClass >> 2,
		ECN:           l.TrafficClass & 3,
		FlowLabel:     l.FlowLabel,
		HopLimit:      l.HopLimit,
		PayloadLength: l.Length,
	}
	return h, uint8(l.NextHeader), nil
}

func get24(b []byte) uint32 {
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}
