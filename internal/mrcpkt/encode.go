package mrcpkt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// DataOptions describe the data packet a host hands its NIC.
type DataOptions struct {
	Ethernet Ethernet
	Src, Dst netip.Addr // the sending and the receiving host
	DSCP     uint8      // the fabric's TRIMMABLE (or NO_TRIM) value
	ECN      uint8      // inner ECN: hosts send data ECNECT0; 0 is Not-ECT
	SrcPort  uint16     // UDP source port; the NIC overwrites it with EV[31:16]
	BTH      BTH        // Opcode must be a data opcode, e.g. OpWriteOnly
	METH     METH
	RETH     RETH
	Payload  []byte
}

// NewData returns the data packet o describes, every field set: traffic
// class DSCP << 2 | ECN, flow label 0, hop limit 64, UDP dst port 4791 and
// checksum 0, lengths from the content.
func NewData(o DataOptions) (*Packet, error) {
	if !IsData(o.BTH.Opcode) {
		return nil, fmt.Errorf("BTH opcode 0x%02x is not a data opcode (0x%02x-0x%02x)",
			o.BTH.Opcode, OpWriteFirst, OpWriteOnlyImm)
	}
	meth, reth := o.METH, o.RETH
	p := &Packet{
		Ethernet: o.Ethernet,
		Inner:    IPv6{Src: o.Src, Dst: o.Dst, DSCP: o.DSCP, ECN: o.ECN, HopLimit: HopLimit},
		UDP:      UDP{SrcPort: o.SrcPort, DstPort: PortRoCEv2},
		BTH:      o.BTH,
		METH:     &meth,
		RETH:     &reth,
	}
	if len(o.Payload) > 0 {
		p.Payload = append([]byte(nil), o.Payload...)
	}
	if err := p.FixLengths(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// DataPacket returns the frame of the data packet o describes (see NewData).
func DataPacket(o DataOptions) ([]byte, error) {
	p, err := NewData(o)
	if err != nil {
		return nil, err
	}
	return Serialize(p)
}

// FixLengths sets the IPv6 payload lengths and the UDP length from the
// headers and payload p holds, and clears Truncated.
func (p *Packet) FixLengths() error {
	ext := extLen(p.BTH.Opcode)
	if ext < 0 {
		return fmt.Errorf("BTH opcode 0x%02x is not an MRC opcode", p.BTH.Opcode)
	}
	n := UDPLen + BTHLen + ext + len(p.Payload)
	if n+IPv6Len > 0xffff {
		return fmt.Errorf("payload of %d bytes does not fit in an IPv6 packet", len(p.Payload))
	}
	p.UDP.Length = uint16(n)
	p.Inner.PayloadLength = uint16(n)
	if p.Outer != nil {
		p.Outer.PayloadLength = uint16(IPv6Len + n)
	}
	p.Truncated = false
	return nil
}

// Serialize returns the frame p describes. Every field is written as p
// holds it, the length fields and the UDP checksum included (call
// FixLengths first for a packet built by hand), so that a parsed trimmed
// packet serializes to the same bytes. Serialize refuses a Packet that Parse
// could not have returned: a field wider than its wire field, extension
// headers that do not match the opcode, UDP dst port other than 4791, length
// fields that disagree with each other or with the content.
func Serialize(p *Packet) ([]byte, error) {
	if p == nil {
		return nil, errors.New("serialize: nil Packet")
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("serialize: %w", err)
	}
	mrc := make([]byte, 0, BTHLen+extLen(p.BTH.Opcode)+len(p.Payload))
	mrc = appendMRC(mrc, p)
	mrc = append(mrc, p.Payload...)

	eth := p.Ethernet
	ls := []gopacket.SerializableLayer{&layers.Ethernet{
		DstMAC:       eth.Dst[:],
		SrcMAC:       eth.Src[:],
		EthernetType: layers.EthernetTypeIPv6,
	}}
	if p.Outer != nil {
		ls = append(ls, ipv6Layer(p.Outer, layers.IPProtocolIPv6))
	}
	ls = append(ls,
		ipv6Layer(&p.Inner, layers.IPProtocolUDP),
		&layers.UDP{
			SrcPort:  layers.UDPPort(p.UDP.SrcPort),
			DstPort:  layers.UDPPort(p.UDP.DstPort),
			Length:   p.UDP.Length,
			Checksum: p.UDP.Checksum,
		},
		gopacket.Payload(mrc))

	// Neither FixLengths nor ComputeChecksums: gopacket would overwrite the
	// lengths of a trimmed packet and put a checksum where RoCEv2 has 0.
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, ls...); err != nil {
		return nil, fmt.Errorf("serialize: %w", err)
	}
	return buf.Bytes(), nil
}

func ipv6Layer(h *IPv6, next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{
		Version:      6,
		TrafficClass: h.DSCP<<2 | h.ECN,
		FlowLabel:    h.FlowLabel,
		Length:       h.PayloadLength,
		NextHeader:   next,
		HopLimit:     h.HopLimit,
		SrcIP:        h.Src.AsSlice(),
		DstIP:        h.Dst.AsSlice(),
	}
}

// appendMRC appends BTH and the extension headers of p.
func appendMRC(b []byte, p *Packet) []byte {
	h := p.BTH
	var ack byte
	if h.AckReq {
		ack = BTHAckReq
	}
	b = append(b, h.Opcode, h.Flags)
	b = binary.BigEndian.AppendUint16(b, h.PKey)
	b = append(b, 0) // reserved
	b = append24(b, h.DstQP)
	b = append(b, ack)
	b = append24(b, h.PSN)
	switch {
	case IsData(h.Opcode):
		b = append(b, p.METH.Flags, 0, 0, 0)
		b = binary.BigEndian.AppendUint64(b, p.RETH.VAddr)
		b = binary.BigEndian.AppendUint32(b, p.RETH.RKey)
		b = binary.BigEndian.AppendUint32(b, p.RETH.DMALen)
	case h.Opcode == OpNACK:
		n := p.NETH
		b = binary.BigEndian.AppendUint32(b, n.EV)
		b = append24(b, n.PSN)
		b = append(b, n.Reason)
		b = binary.BigEndian.AppendUint16(b, n.TSEcho)
		b = append(b, 0, 0)
	case h.Opcode == OpSACK:
		s := p.SETH
		b = append24(b, s.CumPSN)
		b = append(b, s.Mark<<6)
		b = append24(b, s.BasePSN)
		b = append(b, 0)
		b = binary.BigEndian.AppendUint64(b, s.Bitmap)
		b = binary.BigEndian.AppendUint32(b, s.EV)
	case h.Opcode == OpProbeAnswer:
		b = binary.BigEndian.AppendUint32(b, p.PETH.EV)
	}
	return b
}

func append24(b []byte, v uint32) []byte {
	return append(b, byte(v>>16), byte(v>>8), byte(v))
}

// validate checks that p is a Packet Parse could return.
func (p *Packet) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	ipv6 := func(name string, h *IPv6) {
		for _, a := range []struct {
			what string
			addr netip.Addr
		}{{"src", h.Src}, {"dst", h.Dst}} {
			if !a.addr.Is6() || a.addr.Zone() != "" {
				bad("%s IPv6 %s address %v is not an IPv6 address without zone", name, a.what, a.addr)
			}
		}
		if h.DSCP > 63 {
			bad("%s IPv6 DSCP %d does not fit in 6 bits", name, h.DSCP)
		}
		if h.ECN > 3 {
			bad("%s IPv6 ECN %d does not fit in 2 bits", name, h.ECN)
		}
		if h.FlowLabel > 0xfffff {
			bad("%s IPv6 flow label %#x does not fit in 20 bits", name, h.FlowLabel)
		}
	}
	if p.Outer != nil {
		ipv6("outer", p.Outer)
	}
	ipv6("inner", &p.Inner)
	if p.UDP.DstPort != PortRoCEv2 {
		bad("UDP dst port %d is not RoCEv2 (%d)", p.UDP.DstPort, PortRoCEv2)
	}
	fit24 := func(name string, v uint32) {
		if v > 0xffffff {
			bad("%s %#x does not fit in 24 bits", name, v)
		}
	}
	fit24("BTH destination QP", p.BTH.DstQP)
	fit24("BTH PSN", p.BTH.PSN)
	if p.NETH != nil {
		fit24("NETH PSN", p.NETH.PSN)
	}
	if p.SETH != nil {
		fit24("SETH cumulative PSN", p.SETH.CumPSN)
		fit24("SETH base PSN", p.SETH.BasePSN)
		if p.SETH.Mark > 3 {
			bad("SETH mark %d does not fit in 2 bits", p.SETH.Mark)
		}
	}

	op := p.BTH.Opcode
	data, nack, sack, answer := IsData(op), op == OpNACK, op == OpSACK, op == OpProbeAnswer
	if extLen(op) < 0 {
		bad("BTH opcode 0x%02x is not an MRC opcode", op)
	} else {
		for _, h := range []struct {
			name      string
			set, want bool
		}{
			{"METH", p.METH != nil, data},
			{"RETH", p.RETH != nil, data},
			{"NETH", p.NETH != nil, nack},
			{"SETH", p.SETH != nil, sack},
			{"PETH", p.PETH != nil, answer},
		} {
			if h.set && !h.want {
				bad("BTH opcode 0x%02x carries no %s, but it is set", op, h.name)
			}
			if !h.set && h.want {
				bad("BTH opcode 0x%02x needs %s, but it is nil", op, h.name)
			}
		}
		if !data && len(p.Payload) > 0 {
			bad("BTH opcode 0x%02x carries no payload, got %d bytes", op, len(p.Payload))
		}
	}
	zero := p.UDP.Length == 0 || p.Inner.PayloadLength == 0
	if p.Outer != nil && p.Outer.PayloadLength == 0 {
		zero = true
	}
	if zero {
		bad("a length field is 0 (FixLengths sets them from the content)")
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	content := UDPLen + BTHLen + extLen(op) + len(p.Payload)
	_, err := checkLengths(p, content)
	return err
}

// checkLengths checks the length fields of p against each other and against
// content, the number of bytes after the inner IPv6 header, and reports
// whether they say the packet was cut short. The fields may claim more than
// content (a trimmed packet), never less: no bytes beyond them.
func checkLengths(p *Packet, content int) (truncated bool, err error) {
	inner := int(p.Inner.PayloadLength)
	if p.Outer != nil {
		outer := int(p.Outer.PayloadLength)
		if outer < IPv6Len+content {
			return false, fmt.Errorf("%w: outer IPv6 payload length %d is less than the %d bytes after the outer header",
				ErrMalformed, outer, IPv6Len+content)
		}
		if IPv6Len+inner < outer {
			return false, fmt.Errorf("%w: inner IPv6 packet (%d bytes) is shorter than the outer IPv6 payload (%d bytes)",
				ErrMalformed, IPv6Len+inner, outer)
		}
	}
	if inner < content {
		return false, fmt.Errorf("%w: inner IPv6 payload length %d is less than the %d bytes after the inner header",
			ErrMalformed, inner, content)
	}
	if int(p.UDP.Length) != inner {
		return false, fmt.Errorf("%w: UDP length %d differs from inner IPv6 payload length %d",
			ErrMalformed, p.UDP.Length, inner)
	}
	return inner > content, nil
}

// Trim does to an encapsulated frame what a trimming switch does
// (docs/protocol.md 6.3), in place: it cuts the frame to size bytes (when
// longer), sets the outer DSCP to dscp (keeping the ECN bits) and the
// outer payload length to what is left after the outer IPv6 header.
func Trim(frame []byte, size int, dscp uint8) []byte {
	b := frame[:min(len(frame), size)]
	o := EthernetLen
	b[o] = b[o]&0xf0 | dscp>>2
	b[o+1] = (dscp&3)<<6 | b[o+1]&0x3f
	binary.BigEndian.PutUint16(b[o+4:], uint16(len(b)-EthernetLen-IPv6Len))
	return b
}
