package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
)

// Offsets in an encapsulated frame (docs/protocol.md 6.2).
const (
	oOuter    = 14
	oOuterLen = oOuter + 4
	oNextHdr  = oOuter + 6
	oHop      = oOuter + 7
	oDst      = oOuter + 24
	oInnerLen = oOuter + 40 + 4
	oBTH      = oOuter + 80 + 8
	encapHdr  = oOuter + 40
)

func outerDSCP(h []byte) uint8 { return h[oOuter]&0x0f<<2 | h[oOuter+1]>>6 }

func setOuterDSCP(h []byte, d uint8) {
	h[oOuter] = h[oOuter]&0xf0 | d>>2
	h[oOuter+1] = (d&3)<<6 | h[oOuter+1]&0x3f
}

// wireBytes is what an encapsulated frame occupies on a link: its length
// by its outer header, and the framing.
func wireBytes(h []byte) int32 {
	return int32(encapHdr) + int32(binary.BigEndian.Uint16(h[oOuterLen:])) + wireOverhead
}

// arrive: packet pi reaches port in of device dev.
func (s *Sim) arrive(dev int32, in int16, pi int32) {
	d := s.device(dev)
	if d == nil {
		return
	}
	pk := s.pkt(pi)
	if ls := s.packetLink(pk); ls != nil && (ls.down || ls.epoch != pk.epoch) {
		s.lost(pi, ls.downBy, lostDown)
		return
	}
	if d.down {
		s.lost(pi, -1, lostDown)
		return
	}
	s.res.PacketHops++
	if d.kind == kindNIC {
		s.nicArrive(d, dev, in, pi)
		return
	}
	s.switchArrive(d, dev, in, pi)
}

// Loss causes.
const (
	lostDown = iota
	lostRandom
	lostTail
	lostNoRoute
)

// lost counts and frees a packet that goes no further.
func (s *Sim) lost(pi int32, fault int, cause int) {
	pk := s.pkt(pi)
	data := s.wholeData(pk)
	switch {
	case cause == lostTail:
		s.res.Drops.TailDrop++
	case cause == lostNoRoute:
		s.res.Drops.NoRoute++
	case !data:
		s.res.Drops.ControlLost++
	case cause == lostRandom:
		s.res.Drops.RandomLoss++
	default:
		s.res.Drops.LinkDown++
	}
	if fault >= 0 {
		c := &s.cost[fault]
		if data {
			c.lost++
		}
		if k, ok := s.slotOf(pk, data); ok {
			if c.bySlot == nil {
				c.bySlot = map[SlotKey]int{}
			}
			c.bySlot[k]++
		}
	}
	s.release(pi)
}

// SlotKey names a sending host's EV slot (its base or backup EV), and
// whether what was lost was its data or the echo of its data (a SACK or
// NACK coming back on the same EV).
type SlotKey struct {
	Host   int // host index of the data's sender
	Slot   int
	Backup bool
	Echo   bool
}

// slotOf is the EV slot (its salt, docs/protocol.md section 4) and the data
// sender of an encapsulated data packet, or of a SACK or NACK echoing one.
func (s *Sim) slotOf(pk *packet, data bool) (SlotKey, bool) {
	h := pk.hdr[:pk.n]
	if len(h) < oBTH+1 {
		return SlotKey{}, false
	}
	op := h[oBTH]
	if !data && op != 0xdc && op != 0xdd {
		return SlotKey{}, false
	}
	ev := uint32(binary.BigEndian.Uint16(h[oOuter+80:]))<<16 | uint32(binary.BigEndian.Uint16(h[oOuter+2:]))
	salt := int(ev & (1<<s.f.EV.SaltBits - 1))
	addr := oOuter + 8 // the data's sender: its source; an echo's destination
	if !data {
		addr = oOuter + 40 + 24
	}
	row := int(binary.BigEndian.Uint16(h[addr+12:]))
	port := int(binary.BigEndian.Uint16(h[addr+14:])) - 1
	return SlotKey{Host: row*s.f.T0Down + port, Slot: salt % s.f.EV.SetSize, Backup: salt >= s.f.EV.SetSize, Echo: !data}, true
}

// LostBySlot is what fault i cost each sending host's EV slot: its data
// packets lost on the fault's links, and the echoes of its data lost there,
// by the slot whose EV they took.
func (s *Sim) LostBySlot(i int) map[SlotKey]int { return s.cost[i].bySlot }

// wholeData: pk is a data packet, not trimmed.
func (s *Sim) wholeData(pk *packet) bool {
	return pk.n > oBTH && isData(pk.hdr[oBTH]) && !s.trimmedDSCP(outerDSCP(pk.hdr[:]))
}

func isData(op uint8) bool { return op >= 0xc6 && op <= 0xcb }

func (s *Sim) trimmedDSCP(d uint8) bool {
	return d == uint8(s.f.DSCP.Trimmed) || d == uint8(s.f.DSCP.TrimmedLastHop)
}

// switchArrive is the switch program: uN shift, /48 route, then the egress
// port's queue with trimming, ECN and tail drop (docs/protocol.md 2, 8);
// RoCE's NO_TRIM data is marked by RED at every egress instead
// (docs/protocol.md 11.2, red.go).
// With PFC the data class is not tail-dropped: the ingress port's account
// pauses its upstream instead (pfc.go).
func (s *Sim) switchArrive(d *device, id int32, in int16, pi int32) {
	pk := s.pkt(pi)
	h := pk.hdr[:pk.n]
	if len(h) < encapHdr || binary.BigEndian.Uint16(h[12:]) != 0x86dd || h[oNextHdr] != 41 {
		s.lost(pi, -1, lostNoRoute)
		return
	}
	if h[oHop] <= 1 {
		s.lost(pi, -1, lostNoRoute)
		return
	}
	h[oHop]--
	block := uint64(binary.BigEndian.Uint32(h[oDst:]))
	if d.look.myUSID(block, binary.BigEndian.Uint16(h[oDst+4:])) {
		copy(h[oDst+4:oDst+14], h[oDst+6:oDst+16])
		h[oDst+14], h[oDst+15] = 0, 0
	}
	active := binary.BigEndian.Uint16(h[oDst+4:])
	out, toHost, ok := d.look.routeOf(block, active)
	if active == 0 || !ok || out < 0 || out >= len(d.ports) {
		s.lost(pi, -1, lostNoRoute)
		return
	}
	f := s.f
	dscp := outerDSCP(h)
	high := dscp == uint8(f.DSCP.Control) || s.trimmedDSCP(dscp)
	if !high {
		occ := 0
		if q := &d.ports[out].q; s.explicit {
			if q.pfc != nil {
				occ = q.pfc.occupancy()
			}
		} else {
			occ = d.occupancy(out, s.now)
		}
		size := int(wireBytes(h)) - wireOverhead
		switch {
		case dscp == uint8(f.DSCP.Trimmable) && occ >= f.Trim.ThresholdPackets && size > f.Trim.SizeBytes:
			s.trim(pi, toHost)
			high = true
		case d.buf == nil && occ >= f.Trim.QueuePackets && s.pfc == nil:
			s.lost(pi, -1, lostTail) // a per-port limit (SwitchBufferPerPort)
			return
		case d.buf != nil && !s.admits(d, out, int64(size)):
			s.lost(pi, -1, lostTail)
			return
		case h[oOuter+1]>>4&3 == 0: // Not-ECT: never marked
		case dscp == uint8(f.DSCP.NoTrim):
			// RoCE's data: RED on the queue's bytes, at every egress.
			if s.red.mark(s.queuedBytes(d, out), &d.rng) {
				h[oOuter+1] |= 0x30 // CE
				s.res.ECNMarks++
			}
		case !toHost && occ >= f.Trim.ECNPackets:
			h[oOuter+1] |= 0x30 // CE
			s.res.ECNMarks++
		}
	}
	if s.explicit {
		pk.inPort = in
	}
	s.send(d, out, pi, high)
}

// admits is the shared buffer's dynamic threshold for a data packet of
// size bytes on switch d's port out (buffer.go). The default queue's
// buffer may count bytes some other port has sent since it was last
// asked: a packet it admits all the same is admitted, and one it does not
// is asked again once every port has said what it still holds.
func (s *Sim) admits(d *device, out int, size int64) bool {
	b := d.buf
	q := s.queuedBytes(d, out)
	if b.admits(q, size) {
		return true
	}
	if !s.explicit {
		d.settle(s.now)
		if b.admits(q, size) {
			return true
		}
	}
	if s.testTailDrop != nil {
		s.testTailDrop(q, b.held, size)
	}
	return false
}

// queuedBytes is the data bytes queued or being sent on device d's port
// out: the explicit queue's with PFC or --exact-queues (it read the
// default queue's, empty there, without PFC: lossy RoCE on exact queues
// was never ECN-marked).
func (s *Sim) queuedBytes(d *device, out int) int64 {
	pt := &d.ports[out]
	if s.explicit {
		if pt.q.pfc == nil {
			return 0
		}
		return pt.q.pfc.queuedBytes()
	}
	d.occupancy(out, s.now)
	return pt.q.dataBytes
}

// trim cuts data packet pi to the trim size (docs/protocol.md 6.3).
func (s *Sim) trim(pi int32, toHost bool) {
	f := s.f
	pk := s.pkt(pi)
	size := f.Trim.SizeBytes
	if int(pk.n) > size {
		pk.n = uint16(size)
	}
	if s.payloads != nil {
		pl := s.payloads[pi]
		s.payloads[pi] = pl[:min(len(pl), size-int(pk.n))]
	}
	h := pk.hdr[:pk.n]
	d := uint8(f.DSCP.Trimmed)
	if toHost {
		d = uint8(f.DSCP.TrimmedLastHop)
		s.res.Trims.LastHop++
	} else {
		s.res.Trims.Fabric++
	}
	setOuterDSCP(h, d)
	binary.BigEndian.PutUint16(h[oOuterLen:], uint16(size-encapHdr))
}

// send puts packet pi on device d's port out.
func (s *Sim) send(d *device, out int, pi int32, high bool) {
	pt := &d.ports[out]
	if pt.peer < 0 {
		s.lost(pi, -1, lostNoRoute)
		return
	}
	pk := s.pkt(pi)
	pk.link = 0
	if ls := pt.link; ls != nil {
		pk.link = ls.idx // both ends of a cable share its state
		if ls.down {
			s.lost(pi, ls.downBy, lostDown)
			return
		}
		if ls.loss > 0 && d.rng.float64() < ls.loss {
			s.lost(pi, ls.lossBy, lostRandom)
			return
		}
		pk.epoch = ls.epoch
	}
	if s.explicit {
		pk.high = high
		s.enqueueLossless(d, out, pi, high)
		return
	}
	wire := int64(pk.wire())
	before := pt.q.dataBytes
	_, end := pt.q.schedule(s.now, s.serialize(pt, wire), wire-wireOverhead, high)
	if d.buf != nil {
		d.track(out, before)
	}
	s.schedule(event{at: end + s.linkDelay(d, pt), kind: evArrive, dev: pt.peer, port: pt.peerPort, arg: pi})
}

// serialize is how long port pt takes to put wire bytes on its link (ps),
// at the link's reduced rate if a --rate fault slowed it.
func (s *Sim) serialize(pt *port, wire int64) int64 {
	if ls := pt.link; ls != nil && ls.rate < fullRate {
		return serializationPS(wire, s.gbps, ls.rate)
	}
	if s.psPerB > 0 {
		return wire * s.psPerB
	}
	return serializationPS(wire, s.gbps, fullRate)
}

// linkDelay is the one-way delay of device d's link on port pt (ps).
func (s *Sim) linkDelay(d *device, pt *port) int64 {
	if pt.toHost || d.kind == kindNIC {
		return s.nicT0Delay
	}
	return s.t0T1Delay
}

// nicArrive runs the NIC model on a frame from the fabric.
func (s *Sim) nicArrive(d *device, id int32, in int16, pi int32) {
	pk := s.pkt(pi)
	if s.wholeData(pk) {
		s.res.DataPackets.Delivered++
	}
	frame := pk.hdr[:pk.n]
	if s.payloads != nil && s.payloads[pi] != nil {
		// The NIC takes one contiguous frame: headers and payload.
		s.buf = append(append(s.buf[:0], frame...), s.payloads[pi]...)
		frame = s.buf
	}
	out := d.host.nic.Process(uint32(in), frame)
	s.emit(d, out)
	s.release(pi)
	s.flushHost(d.host)
}

// emit takes what a NIC put out: plane ports' frames go onto the fabric,
// host frames wait in the host's inbox until flushHost (the engine must
// not run while the NIC's output buffers are still being read).
func (s *Sim) emit(d *device, out []nicmodel.Frame) {
	hs := d.host
	for _, o := range out {
		if o.Port == 0 {
			hs.inbox = append(hs.inbox, o.AppendTo(s.takeBuf()))
			continue
		}
		if int(o.Port) >= len(d.ports) || len(o.Head) > maxHeader || len(o.Head) < encapHdr {
			s.fail(fmt.Errorf("sim: %s emitted a frame of %d header bytes on port %d", s.p.HostName(hs.at), len(o.Head), o.Port))
			return
		}
		pi := s.alloc()
		pk := s.pkt(pi)
		pk.n = uint16(copy(pk.hdr[:], o.Head))
		if len(o.Tail) > 0 {
			s.setPayload(pi, append([]byte(nil), o.Tail...))
		}
		if s.wholeData(pk) {
			s.res.DataPackets.Sent++
		}
		s.send(d, int(o.Port), pi, o.High)
	}
}

func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}
