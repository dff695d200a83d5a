package mrcpkt

import (
	"errors"
	"net/netip"
)

// Header sizes in bytes.
const (
	EthernetLen = 14
	IPv6Len     = 40
	UDPLen      = 8
	BTHLen      = 12
	METHLen     = 4
	RETHLen     = 16
	NETHLen     = 12
	SETHLen     = 20
	PETHLen     = 4

	// TrimLen is the default trim size: an encapsulated data packet through
	// RETH, with no payload (14 + 40 + 40 + 8 + 12 + 4 + 16 = 134).
	TrimLen = EthernetLen + 2*IPv6Len + UDPLen + BTHLen + METHLen + RETHLen
)

// Protocol numbers.
const (
	EtherTypeIPv6 = 0x86DD
	ProtoIPv6     = 41 // IPv6 next header of the outer header: IPv6-in-IPv6
	ProtoUDP      = 17
	PortRoCEv2    = 4791 // UDP destination port of every MRC packet
	HopLimit      = 64   // hop limit a host and a NIC put in a new IPv6 header
)

// BTH opcodes. The data opcodes are the RC RDMA Write family (0x06-0x0B)
// with the top bits MRC uses; under profile v1 every one of them carries
// METH + RETH and no ImmDt header, so immediate data, if any, is payload.
const (
	OpWriteFirst   uint8 = 0xC6
	OpWriteMiddle  uint8 = 0xC7
	OpWriteLast    uint8 = 0xC8
	OpWriteLastImm uint8 = 0xC9 // last, with immediate
	OpWriteOnly    uint8 = 0xCA // a message in one packet: the usual test packet
	OpWriteOnlyImm uint8 = 0xCB // only, with immediate
	OpSACK         uint8 = 0xDC // selective ack; also the plain ack
	OpNACK         uint8 = 0xDD
	OpProbe        uint8 = 0xDE // BTH only: tests one EV
	OpProbeAnswer  uint8 = 0xDF // BTH + PETH: a probe's answer, echoing its EV
)

// IsData reports whether op is a data (RDMA Write) opcode.
func IsData(op uint8) bool { return op >= OpWriteFirst && op <= OpWriteOnlyImm }

// NACK reasons (NETH.Reason).
const (
	NACKTrimmed        uint8 = 0x01
	NACKTrimmedLastHop uint8 = 0x02
)

// ECN code points (RFC 3168) of the IPv6 traffic class's two low bits.
// Under mrcgen's reading of profile v1 a host sends its data ECT(0) and the
// sending NIC puts ECT(0) in the outer header of data (the profile's "ECN
// bits 0" would leave the switches nothing they may mark: RFC 3168 forbids
// CE on a Not-ECT packet); answers are Not-ECT. See p4/emit/nic.p4.tmpl.
const (
	ECNNotECT uint8 = 0
	ECNECT1   uint8 = 1
	ECNECT0   uint8 = 2
	ECNCE     uint8 = 3
)

// SACK marks (SETH.Mark, 2 bits).
const (
	MarkNone       uint8 = 0
	MarkSkipOnce   uint8 = 1 // ECN seen: skip the EV for one rotation
	MarkAlwaysSkip uint8 = 2
)

// METHRetransmission is the METH flag (bit 0, the least significant) of a
// retransmitted data packet.
const METHRetransmission uint8 = 0x01

// METHLost (bit 1, with METHRetransmission) says the sender knows the
// packet's previous copy was lost, not trimmed: its SACK-gap rule saw later
// packets acked and the copy older than the reorder window. The sending
// NIC then fails the EV slot that carried that copy at its next turn
// (docs/protocol.md 5).
const METHLost uint8 = 0x02

// BTHAckReq is the ack-request bit: the most significant bit of BTH byte 8,
// as in InfiniBand; the other 7 bits are reserved.
const BTHAckReq = 0x80

// Errors Parse wraps; the message around them names the header and the
// value at fault.
var (
	// ErrTooShort: the frame ends inside a header Parse needs.
	ErrTooShort = errors.New("frame too short")
	// ErrNotMRC: the frame is some other protocol (ethertype, IP version,
	// next header, UDP port or BTH opcode).
	ErrNotMRC = errors.New("not an MRC frame")
	// ErrMalformed: an MRC frame whose length fields disagree with each
	// other or with the frame.
	ErrMalformed = errors.New("malformed MRC frame")
)

// Ethernet holds the MAC addresses; the ethertype is always IPv6.
type Ethernet struct {
	Dst, Src [6]byte
}

// IPv6 is an IPv6 header without extension headers. The next header is not
// a field: it is 41 for Packet.Outer and 17 for Packet.Inner.
type IPv6 struct {
	Src, Dst      netip.Addr // IPv6 addresses, without zone
	DSCP          uint8      // 6 bits: traffic class >> 2
	ECN           uint8      // 2 bits: traffic class & 3
	FlowLabel     uint32     // 20 bits
	HopLimit      uint8
	PayloadLength uint16 // as on the wire (see Packet.Truncated)
}

// UDP is the UDP header. Checksum is kept as on the wire; MRC sends 0.
type UDP struct {
	SrcPort, DstPort uint16
	Length           uint16
	Checksum         uint16
}

// BTH is the InfiniBand base transport header (12 bytes). The reserved byte
// and the 7 reserved bits after the ack-request bit are written as zero and
// ignored by Parse.
type BTH struct {
	Opcode uint8
	Flags  uint8 // SE, M, pad count (2 bits), transport version (4 bits)
	PKey   uint16
	DstQP  uint32 // 24 bits
	AckReq bool
	PSN    uint32 // 24 bits
}

// METH is the MRC extension header of data packets (4 bytes).
type METH struct {
	Flags uint8 // METHRetransmission, METHLost; the 24 bits after it are reserved
}

// RETH is the RDMA extended transport header (16 bytes).
type RETH struct {
	VAddr  uint64
	RKey   uint32
	DMALen uint32
}

// NETH is the NACK extension header (12 bytes).
type NETH struct {
	EV     uint32 // echoed entropy value
	PSN    uint32 // 24 bits: the NACKed PSN
	Reason uint8  // NACKTrimmed or NACKTrimmedLastHop
	TSEcho uint16 // sender timestamp echo; 16 reserved bits follow
}

// SETH is the SACK extension header (20 bytes).
type SETH struct {
	CumPSN  uint32 // 24 bits: cumulative ack PSN
	Mark    uint8  // 2 bits: MarkNone, MarkSkipOnce, MarkAlwaysSkip
	BasePSN uint32 // 24 bits: PSN of bitmap bit 0
	Bitmap  uint64 // bit i set: BasePSN + i received
	EV      uint32 // echoed entropy value
}

// PETH is the probe answer extension header (4 bytes; profile v1 as mrcgen
// defines it, docs/protocol.md section 6.7).
type PETH struct {
	EV uint32 // the probe's entropy value, echoed
}

// Packet is one MRC frame. Exactly the extension headers the BTH opcode
// calls for are set: METH and RETH for data, NETH for a NACK, SETH for a
// SACK, PETH for a probe answer, none for a probe.
type Packet struct {
	Ethernet Ethernet
	Outer    *IPv6 // nil unless encapsulated (IPv6-in-IPv6, on a plane port)
	Inner    IPv6
	UDP      UDP
	BTH      BTH
	METH     *METH
	RETH     *RETH
	NETH     *NETH
	SETH     *SETH
	PETH     *PETH
	Payload  []byte // nil when empty

	// Truncated is set by Parse when the frame is shorter than its length
	// fields say: a trimmed packet (the inner lengths still describe the
	// original) or a frame cut short. Payload then holds the bytes present.
	// Serialize ignores it.
	Truncated bool
}

// extLen is the length of the extension headers opcode op carries, or -1 for
// an opcode that is not MRC's.
func extLen(op uint8) int {
	switch {
	case IsData(op):
		return METHLen + RETHLen
	case op == OpNACK:
		return NETHLen
	case op == OpSACK:
		return SETHLen
	case op == OpProbe:
		return 0
	case op == OpProbeAnswer:
		return PETHLen
	}
	return -1
}

// EV returns the packet's entropy value, (inner UDP source port << 16) |
// (outer flow label & 0xffff) under profile v1. ok is false when p has no
// outer header, which holds the low half.
func EV(p *Packet) (ev uint32, ok bool) {
	if p.Outer == nil {
		return 0, false
	}
	return uint32(p.UDP.SrcPort)<<16 | p.Outer.FlowLabel&0xffff, true
}
