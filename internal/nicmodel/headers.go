package nicmodel

import "encoding/binary"

// The headers of one packet in one pass, each at a fixed place of a work
// buffer (the P4 program's headers_t), with a validity bit each. Parsing
// copies the extracted bytes in; the pipeline edits them there; the
// deparser copies the valid ones out, in order.
const (
	offEth   = 0
	offOuter = offEth + 14
	offInner = offOuter + 40
	offUDP   = offInner + 40
	offBTH   = offUDP + 8
	offMETH  = offBTH + 12
	offRETH  = offMETH + 4
	offNETH  = offRETH + 16
	offSETH  = offNETH + 12
	offPETH  = offSETH + 20
	hdrSpace = offPETH + 4
)

// Header indexes, in deparser order.
const (
	hEth = iota
	hOuter
	hInner
	hUDP
	hBTH
	hMETH
	hRETH
	hNETH
	hSETH
	hPETH
	hCount
)

var hdrOff = [hCount]int{offEth, offOuter, offInner, offUDP, offBTH, offMETH, offRETH, offNETH, offSETH, offPETH}
var hdrLen = [hCount]int{14, 40, 40, 8, 12, 4, 16, 12, 20, 4}

// Protocol values the program fixes (p4/emit/common.p4.tmpl).
const (
	etherTypeIPv6 = 0x86dd
	protoIPv6     = 41
	protoUDP      = 17
	udpRoCEv2     = 4791

	opWriteLast   = 0xc8 // data opcodes from here on end a write
	opSACK        = 0xdc
	opNACK        = 0xdd
	opProbe       = 0xde
	opProbeAnswer = 0xdf

	nackTrimmed        = 0x01
	nackTrimmedLastHop = 0x02
	markSkipOnce       = 1
	bthAckReq          = 0x80

	ecnNotECT = 0
	ecnECT1   = 1
	ecnECT0   = 2
	ecnCE     = 3

	hopLimit = 64
)

// pkt is a packet in one pass of the pipeline: its headers and what the
// parser left (the payload).
type pkt struct {
	h     [hdrSpace]byte
	valid uint16
	// rest is the part of the input frame the parser did not extract.
	rest []byte
	// truncate is the length the frame is cut to when it leaves (0: none).
	truncate int
}

func (p *pkt) isValid(h int) bool { return p.valid&(1<<h) != 0 }
func (p *pkt) setValid(h int)     { p.valid |= 1 << h }
func (p *pkt) setInvalid(h int)   { p.valid &^= 1 << h }

// cut keeps the smallest length ever asked (v1model truncate).
func (p *pkt) cut(n int) {
	if p.truncate == 0 || n < p.truncate {
		p.truncate = n
	}
}

func (p *pkt) u8(off int) uint8   { return p.h[off] }
func (p *pkt) u16(off int) uint16 { return binary.BigEndian.Uint16(p.h[off:]) }
func (p *pkt) u24(off int) uint32 {
	return uint32(p.h[off])<<16 | uint32(p.h[off+1])<<8 | uint32(p.h[off+2])
}
func (p *pkt) u32(off int) uint32      { return binary.BigEndian.Uint32(p.h[off:]) }
func (p *pkt) u64(off int) uint64      { return binary.BigEndian.Uint64(p.h[off:]) }
func (p *pkt) put8(off int, v uint8)   { p.h[off] = v }
func (p *pkt) put16(off int, v uint16) { binary.BigEndian.PutUint16(p.h[off:], v) }
func (p *pkt) put24(off int, v uint32) {
	p.h[off], p.h[off+1], p.h[off+2] = byte(v>>16), byte(v>>8), byte(v)
}
func (p *pkt) put32(off int, v uint32) { binary.BigEndian.PutUint32(p.h[off:], v) }
func (p *pkt) put64(off int, v uint64) { binary.BigEndian.PutUint64(p.h[off:], v) }

// IPv6 fields of the header at o (outer or inner).
func (p *pkt) dscp(o int) uint8 { return (p.h[o]&0x0f)<<2 | p.h[o+1]>>6 }
func (p *pkt) ecn(o int) uint8  { return p.h[o+1] >> 4 & 3 }
func (p *pkt) setDSCP(o int, d uint8) {
	p.h[o] = p.h[o]&0xf0 | d>>2&0x0f
	p.h[o+1] = (d&3)<<6 | p.h[o+1]&0x3f
}
func (p *pkt) setECN(o int, e uint8) { p.h[o+1] = p.h[o+1]&^0x30 | (e&3)<<4 }
func (p *pkt) flowLabel(o int) uint32 {
	return uint32(p.h[o+1]&0x0f)<<16 | uint32(p.h[o+2])<<8 | uint32(p.h[o+3])
}

// Offsets inside an IPv6 header.
const (
	ip6PayloadLen = 4
	ip6NextHdr    = 6
	ip6HopLimit   = 7
	ip6Src        = 8
	ip6Dst        = 24
)

// parse is NicParser followed by the MRC parser tail: it fills p from frame
// (arriving on port) and reports what the parser states set in metadata. A
// frame too short for a header stops the parse there (the packet still goes
// through ingress, with the headers extracted so far).
//
// Ethernet to RETH lie in the work buffer in the order they come on the
// wire (the outer header's place is skipped for a host's frame), so one or
// two copies fill them; the parse then decides which are valid. Bytes
// copied past the last valid header are never read or emitted.
func parse(p *pkt, frame []byte, port uint32) (mrcOK, isData bool) {
	p.valid, p.truncate = 0, 0
	n := len(frame)
	if n < hdrLen[hEth] {
		p.rest = frame
		return false, false
	}
	at := 0 // the end of the headers extracted so far, in frame
	if port == hostPort {
		copy(p.h[:offOuter], frame)
		copy(p.h[offInner:offNETH], frame[offOuter:])
	} else {
		copy(p.h[:offNETH], frame)
	}
	p.valid = 1 << hEth
	at = offOuter
	mrcOK, isData, at = p.parseAfterEth(frame, at, port)
	p.rest = frame[at:]
	return mrcOK, isData
}

// parseAfterEth continues the parse after Ethernet; it returns where the
// extracted headers end in frame.
func (p *pkt) parseAfterEth(frame []byte, at int, port uint32) (mrcOK, isData bool, end int) {
	n := len(frame)
	if p.u16(offEth+12) != etherTypeIPv6 {
		return false, false, at
	}
	if port != hostPort {
		if n-at < 40 {
			return false, false, at
		}
		at += 40
		p.valid |= 1 << hOuter
		if p.h[offOuter+ip6NextHdr] != protoIPv6 {
			return false, false, at
		}
	}
	if n-at < 40 {
		return false, false, at
	}
	at += 40
	p.valid |= 1 << hInner
	if p.h[offInner+ip6NextHdr] != protoUDP || n-at < 8 {
		return false, false, at
	}
	at += 8
	p.valid |= 1 << hUDP
	if p.u16(offUDP+2) != udpRoCEv2 || n-at < 12 {
		return false, false, at
	}
	at += 12
	p.valid |= 1 << hBTH
	op := p.h[offBTH]
	var h int
	switch {
	case op >= 0xc6 && op <= 0xcb:
		if n-at < 4 {
			return false, false, at
		}
		at += 4
		p.valid |= 1 << hMETH
		if n-at < 16 {
			return false, false, at
		}
		p.valid |= 1 << hRETH
		return true, true, at + 16
	case op == opProbe:
		return true, false, at
	case op == opNACK:
		h = hNETH
	case op == opSACK:
		h = hSETH
	case op == opProbeAnswer:
		h = hPETH
	default:
		return false, false, at
	}
	// An extension header at its own place in the work buffer.
	l := hdrLen[h]
	if n-at < l {
		return false, false, at
	}
	copy(p.h[hdrOff[h]:hdrOff[h]+l], frame[at:at+l])
	p.valid |= 1 << h
	return true, false, at + l
}

// deparse writes the valid headers in order, then reports the payload that
// follows them, both cut to the truncation length. Headers sit in the work
// buffer in deparser order, so each run of valid ones is one copy.
func (p *pkt) deparse(dst []byte) (head, tail []byte) {
	n := 0
	for h := 0; h < hCount; {
		if p.valid&(1<<h) == 0 {
			h++
			continue
		}
		e := h + 1
		for e < hCount && p.valid&(1<<e) != 0 {
			e++
		}
		n += copy(dst[n:], p.h[hdrOff[h]:hdrOff[e-1]+hdrLen[e-1]])
		h = e
	}
	head, tail = dst[:n], p.rest
	if t := p.truncate; t > 0 {
		if t <= n {
			return head[:t], nil
		}
		if t-n < len(tail) {
			tail = tail[:t-n]
		}
	}
	return head, tail
}
