package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// The engine builds and reads host frames itself, on a fixed layout
// (docs/protocol.md 6.1, 6.4, 6.5), rather than through mrcpkt's general
// gopacket-based codec: it is on the per-packet path. Tests check both
// directions byte for byte against mrcpkt.

// Offsets in a host (inner) frame.
const (
	offTC      = mrcpkt.EthernetLen // version | traffic class | flow label
	offIPLen   = offTC + 4
	offNext    = offTC + 6
	offUDP     = mrcpkt.EthernetLen + mrcpkt.IPv6Len
	offUDPLen  = offUDP + 4
	offBTH     = offUDP + mrcpkt.UDPLen
	offExt     = offBTH + mrcpkt.BTHLen
	offRETH    = offExt + mrcpkt.METHLen
	dataHdrLen = offRETH + mrcpkt.RETHLen // 94
	hostUDPSrc = 0xC000                   // the NIC overwrites it with EV[31:16]
)

// dataTemplate returns the 94 header bytes every data packet of a QP shares;
// writeData fills in the per-packet fields.
func dataTemplate(src, dst netip.Addr, mac Ethernet, dscp uint8, pkey uint16, peerQPN uint32) []byte {
	h := make([]byte, dataHdrLen)
	copy(h[0:6], mac.Dst[:])
	copy(h[6:12], mac.Src[:])
	binary.BigEndian.PutUint16(h[12:], mrcpkt.EtherTypeIPv6)
	tc := dscp<<2 | mrcpkt.ECNECT0
	h[offTC] = 0x60 | tc>>4
	h[offTC+1] = tc << 4
	h[offNext] = mrcpkt.ProtoUDP
	h[offNext+1] = mrcpkt.HopLimit
	s, d := src.As16(), dst.As16()
	copy(h[offTC+8:], s[:])
	copy(h[offTC+24:], d[:])
	binary.BigEndian.PutUint16(h[offUDP:], hostUDPSrc)
	binary.BigEndian.PutUint16(h[offUDP+2:], mrcpkt.PortRoCEv2)
	binary.BigEndian.PutUint16(h[offBTH+2:], pkey)
	put24(h[offBTH+5:], peerQPN)
	return h
}

// appendData appends to dst one data frame: the template with the opcode,
// PSN, METH flags and RETH filled in, then the payload.
func appendData(dst, tmpl []byte, op uint8, psn uint32, methFlags uint8, vaddr uint64, rkey uint32, payload []byte) []byte {
	dst = appendDataHeader(dst, tmpl, op, psn, methFlags, vaddr, rkey, len(payload))
	return append(dst, payload...)
}

// appendDataHeader appends a data frame's headers, their lengths counting
// a payload of size bytes that the caller appends (or, in a virtual
// payload, does not).
func appendDataHeader(dst, tmpl []byte, op uint8, psn uint32, methFlags uint8, vaddr uint64, rkey uint32, size int) []byte {
	n := len(dst)
	dst = append(dst, tmpl...)
	h := dst[n:]
	l := uint16(mrcpkt.UDPLen + mrcpkt.BTHLen + mrcpkt.METHLen + mrcpkt.RETHLen + size)
	binary.BigEndian.PutUint16(h[offIPLen:], l)
	binary.BigEndian.PutUint16(h[offUDPLen:], l)
	h[offBTH] = op
	put24(h[offBTH+9:], psn)
	h[offExt] = methFlags
	binary.BigEndian.PutUint64(h[offRETH:], vaddr)
	binary.BigEndian.PutUint32(h[offRETH+8:], rkey)
	binary.BigEndian.PutUint32(h[offRETH+12:], uint32(size))
	return dst
}

func put24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }
func get24(b []byte) uint32    { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// rxFrame is what the engine reads from a frame its NIC hands it. Payload
// shares memory with the frame.
type rxFrame struct {
	op        uint8
	dstQP     uint32
	psn       uint32
	methFlags uint8
	vaddr     uint64
	rkey      uint32
	dmaLen    uint32
	payload   []byte
	// size is the payload's length: len(payload), or, for a virtual
	// payload's header-only frame, the length its headers count.
	size int
	// NACK (its NETH PSN repeats the BTH PSN: psn)
	reason uint8
	// SACK: its mark is SKIP_ONCE when the data packet arrived ECN CE,
	// congestion control's signal (it also drives the NIC's EV state).
	cum, base uint32
	mark      uint8
	bitmap    uint64
	// NACK and SACK
	ev uint32
}

var errFrame = errors.New("not a frame the transport engine accepts")

// parseFrame reads a host frame: Ethernet, IPv6 (an outer IPv6-in-IPv6
// header is skipped if present), UDP to 4791, BTH and the extension headers
// of a data packet, SACK or NACK. A frame shorter than its length fields
// (a trimmed packet: a NIC never hands one to its host) is refused, unless
// virtual (an engine with Config.VirtualPayload): then a data frame that
// ends right after RETH, its lengths counting its DMA length of payload, is
// a packet whose payload is not carried.
func parseFrame(f []byte, r *rxFrame, virtual bool) error {
	if len(f) < offExt {
		return fmt.Errorf("%w: %d bytes, shorter than the %d of Ethernet+IPv6+UDP+BTH", errFrame, len(f), offExt)
	}
	if et := binary.BigEndian.Uint16(f[12:]); et != mrcpkt.EtherTypeIPv6 {
		return fmt.Errorf("%w: ethertype 0x%04x", errFrame, et)
	}
	ip := f[mrcpkt.EthernetLen:]
	if ip[0]>>4 != 6 {
		return fmt.Errorf("%w: IP version %d", errFrame, ip[0]>>4)
	}
	if ip[6] == mrcpkt.ProtoIPv6 { // encapsulated: skip the outer header
		ip = ip[mrcpkt.IPv6Len:]
		if len(ip) < mrcpkt.IPv6Len+mrcpkt.UDPLen+mrcpkt.BTHLen || ip[0]>>4 != 6 {
			return fmt.Errorf("%w: encapsulated frame without a whole inner IPv6+UDP+BTH", errFrame)
		}
	}
	if ip[6] != mrcpkt.ProtoUDP {
		return fmt.Errorf("%w: IPv6 next header %d", errFrame, ip[6])
	}
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	rest := ip[mrcpkt.IPv6Len:]
	carried := len(rest)
	if virtual && len(rest) == mrcpkt.UDPLen+mrcpkt.BTHLen+mrcpkt.METHLen+mrcpkt.RETHLen && mrcpkt.IsData(rest[mrcpkt.UDPLen]) &&
		plen == len(rest)+int(binary.BigEndian.Uint32(rest[len(rest)-4:])) {
		carried = plen
	}
	if plen != carried {
		return fmt.Errorf("%w: IPv6 payload length %d, %d bytes follow the header", errFrame, plen, len(rest))
	}
	if dp := binary.BigEndian.Uint16(rest[2:]); dp != mrcpkt.PortRoCEv2 {
		return fmt.Errorf("%w: UDP dst port %d", errFrame, dp)
	}
	if ul := int(binary.BigEndian.Uint16(rest[4:])); ul != plen {
		return fmt.Errorf("%w: UDP length %d, IPv6 payload length %d", errFrame, ul, plen)
	}
	b := rest[mrcpkt.UDPLen:]
	r.op = b[0]
	r.dstQP = get24(b[5:])
	r.psn = get24(b[9:])
	x := b[mrcpkt.BTHLen:]
	switch {
	case mrcpkt.IsData(r.op):
		if len(x) < mrcpkt.METHLen+mrcpkt.RETHLen {
			return fmt.Errorf("%w: data opcode 0x%02x without whole METH+RETH", errFrame, r.op)
		}
		r.methFlags = x[0]
		r.vaddr = binary.BigEndian.Uint64(x[4:])
		r.rkey = binary.BigEndian.Uint32(x[12:])
		r.dmaLen = binary.BigEndian.Uint32(x[16:])
		r.payload = x[mrcpkt.METHLen+mrcpkt.RETHLen:]
		r.size = len(r.payload)
		if carried != len(rest) {
			r.size = int(r.dmaLen)
		}
	case r.op == mrcpkt.OpSACK:
		if len(x) != mrcpkt.SETHLen {
			return fmt.Errorf("%w: SACK with %d bytes after BTH, want %d", errFrame, len(x), mrcpkt.SETHLen)
		}
		r.cum = get24(x)
		r.mark = x[3] >> 6
		r.base = get24(x[4:])
		r.bitmap = binary.BigEndian.Uint64(x[8:])
		r.ev = binary.BigEndian.Uint32(x[16:])
	case r.op == mrcpkt.OpNACK:
		if len(x) != mrcpkt.NETHLen {
			return fmt.Errorf("%w: NACK with %d bytes after BTH, want %d", errFrame, len(x), mrcpkt.NETHLen)
		}
		r.ev = binary.BigEndian.Uint32(x)
		r.reason = x[7]
	default:
		return fmt.Errorf("%w: BTH opcode 0x%02x (the engine takes data, SACK and NACK)", errFrame, r.op)
	}
	return nil
}
