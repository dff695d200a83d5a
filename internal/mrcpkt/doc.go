// Package mrcpkt encodes and decodes the frames of an MRC fabric as profile
// v1 lays them out (docs/protocol.md, section 6; p4/emit/common.p4.tmpl):
//
//	Ethernet (14, 0x86DD)
//	[outer IPv6 (40, next header 41): the NIC's encapsulation on a plane port]
//	inner IPv6 (40, next header 17)
//	UDP (8, dst port 4791, checksum 0: ICRC is not modelled)
//	BTH (12)
//	then by BTH opcode:
//	  0xC6-0xCB (RDMA Write): METH (4) + RETH (16) + payload
//	  0xDD (NACK):            NETH (12)
//	  0xDC (SACK):            SETH (20)
//	  0xDE (probe):           nothing
//
// It is the codec the BMv2 tests use to drive host ports and to check what
// the switches and NICs emit. Ethernet, IPv6 and UDP go through gopacket's
// layers; BTH and the MRC extension headers are coded here, big-endian.
//
// Serialize writes every field as the Packet holds it, length fields
// included (a trimmed packet's inner lengths still describe the original
// packet); FixLengths sets them from the content, NewData and DataPacket
// build a complete host data packet. Parse is strict: it accepts only what
// Serialize can write, so Parse(Serialize(p)) reproduces p.
package mrcpkt
