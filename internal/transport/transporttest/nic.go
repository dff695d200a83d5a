package transporttest

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

const (
	hostDelay     = time.Microsecond // NIC to host (PCIe)
	dscpTrimmable = 4
	dscpControl   = 46
)

type kind uint8

const (
	kData kind = iota
	kSACK
	kNACK
	kProbe
	kProbeAnswer
)

// pkt is a packet on the simulated fabric.
type pkt struct {
	kind      kind
	frame     []byte // host-format frame: data as the host sent it, answers as the NIC hands them up
	qpn       uint32 // BTH destination QP
	psn       uint32
	ev        uint32
	path      int
	from      int // side of the NIC that put it on the path
	trimmable bool
	trimmed   bool
	lastHop   bool
	ce        bool
}

type path struct {
	id    int
	up    bool
	epoch int // bumped at each cut: what was on the path is lost
	loss  float64
	pps   [2]float64
	busy  [2]time.Duration // per direction: when the data queue drains
}

type sendKey struct {
	addr netip.Addr
	qpn  uint32
}

const (
	slotGood uint8 = iota
	slotBad        // ASSUMED_BAD: on the backup EV
	slotDead       // the backup failed too: passed over until a probe answer
)

type slot struct {
	state      uint8
	unanswered int // sends on the EV in use with no echo since
	skip       bool
}

type nicQP struct {
	local, peer uint32
	peerAddr    netip.Addr
	single      bool
	// receive state
	expected uint32 // cum_psn + 1
	bitmap   uint64 // bit i: expected + i arrived (bit 0 always 0)
	// send state
	slots  []slot
	rot    int
	passes int
}

type nic struct {
	sim      *Sim
	host     *Host
	side     int
	qps      map[uint32]*nicQP // by local QPN (qp_recv)
	send     map[sendKey]*nicQP
	upBusy   time.Duration // host to NIC to fabric, at HostPPS
	lastBusy time.Duration // last hop into this NIC, at HostPPS
	newSent  int64
}

func (n *nic) open(local, peer uint32, peerAddr netip.Addr, start uint32, single bool) {
	q := &nicQP{local: local, peer: peer, peerAddr: peerAddr, single: single, expected: start,
		slots: make([]slot, n.sim.cfg.Slots)}
	n.qps[local] = q
	n.send[sendKey{peerAddr, peer}] = q
}

// ev is slot i's base or backup EV: plane << 28 | t1 << 18 | salt, the
// backup on the same plane and the next T1, salt Slots + i.
func (s *Sim) ev(i int, backup bool) uint32 {
	plane := i % s.cfg.Planes
	t1 := (i / s.cfg.Planes) % s.cfg.T1s
	salt := i
	if backup {
		t1 = (t1 + 1) % s.cfg.T1s
		salt += s.cfg.Slots
	}
	return uint32(plane)<<28 | uint32(t1)<<18 | uint32(salt)
}

func (s *Sim) pathOf(ev uint32) int {
	return int(ev>>28)*s.cfg.T1s + int(ev>>18&0x3ff)
}

func (s *Sim) slotOf(ev uint32) (i int, backup bool) {
	salt := int(ev & 0x3ffff)
	if salt >= s.cfg.Slots {
		return salt - s.cfg.Slots, true
	}
	return salt, false
}

// fromHost takes a frame from the host: serialised at the port rate, then
// sprayed.
func (n *nic) fromHost(f []byte) {
	s := n.sim
	t := max(s.clock.now, n.upBusy) + perPacket(s.cfg.HostPPS)
	n.upBusy = t
	s.at(t-s.clock.now, func() { n.transmit(f) })
}

func perPacket(pps float64) time.Duration { return time.Duration(float64(time.Second) / pps) }

func (n *nic) transmit(f []byte) {
	s := n.sim
	p, err := mrcpkt.Parse(f)
	if err != nil || !mrcpkt.IsData(p.BTH.Opcode) {
		s.c.UnknownQP++ // the NIC drops it; the engine sends only data
		return
	}
	q := n.send[sendKey{p.Inner.Dst, p.BTH.DstQP}]
	if q == nil {
		s.c.UnknownQP++
		return
	}
	if p.METH.Flags&mrcpkt.METHRetransmission == 0 {
		n.newSent++
		for i := 0; i < len(s.hooks); i++ {
			if hk := s.hooks[i]; hk.h == n.host && n.newSent >= hk.count {
				s.hooks = append(s.hooks[:i], s.hooks[i+1:]...)
				i--
				hk.fn()
			}
		}
	}
	i, backup, ok := n.pick(q)
	if !ok {
		s.c.LostNoSlot++
		return
	}
	ev := s.ev(i, backup)
	s.c.DataSent++
	if backup {
		s.c.BackupTaken++
	}
	s.onPath(&pkt{kind: kData, frame: f, qpn: p.BTH.DstQP, psn: p.BTH.PSN, ev: ev, path: s.pathOf(ev),
		from: n.side, trimmable: p.Inner.DSCP == dscpTrimmable})
}

// pick is the EV rotation with SKIP, the K-unanswered rule and backups.
func (n *nic) pick(q *nicQP) (int, bool, bool) {
	if q.single {
		return 0, false, true
	}
	cfg := &n.sim.cfg
	for tries := 0; tries <= 8; tries++ {
		i := q.rot
		q.rot++
		if q.rot == len(q.slots) {
			q.rot = 0
			q.passes++
			if q.passes%cfg.ProbeEvery == 0 {
				n.probe(q)
			}
		}
		sl := &q.slots[i]
		if sl.skip {
			sl.skip = false
			continue
		}
		switch sl.state {
		case slotGood:
			if sl.unanswered >= cfg.FailAfterSends {
				sl.state, sl.unanswered = slotBad, 0
				n.sim.c.PathFailed++
			}
		case slotBad:
			if sl.unanswered >= cfg.FailAfterSends {
				sl.state = slotDead
				n.sim.c.BackupFailed++
			}
		}
		if sl.state == slotDead {
			continue
		}
		sl.unanswered++
		return i, sl.state == slotBad, true
	}
	return 0, false, false
}

func (n *nic) probe(q *nicQP) {
	s := n.sim
	for i := range q.slots {
		if q.slots[i].state == slotGood {
			continue
		}
		ev := s.ev(i, false)
		s.c.ProbesSent++
		s.onPath(&pkt{kind: kProbe, qpn: q.peer, ev: ev, path: s.pathOf(ev), from: n.side})
	}
}

// echo: a SACK or NACK came back carrying ev.
func (n *nic) echo(q *nicQP, ev uint32, skip bool) {
	if q.single {
		return
	}
	i, backup := n.sim.slotOf(ev)
	if i >= len(q.slots) {
		return
	}
	sl := &q.slots[i]
	if (sl.state == slotGood && !backup) || (sl.state == slotBad && backup) {
		sl.unanswered = 0
		if skip {
			sl.skip = true
		}
		return
	}
	n.sim.c.StaleEchoes++
}

// onPath puts pk on its path, in direction pk.from.
func (s *Sim) onPath(pk *pkt) {
	pa := s.paths[pk.path]
	data := pk.kind == kData && !pk.trimmed
	lost := func(random bool) {
		s.note('l', pk)
		switch {
		case pk.kind != kData:
			s.c.ControlLost++
		case random:
			s.c.LostRandom++
		default:
			s.c.LostCut++
		}
	}
	if !pa.up {
		lost(false)
		return
	}
	if pa.loss > 0 && s.rng.Float64() < pa.loss {
		lost(true)
		return
	}
	now := s.clock.now
	arrive := now + s.cfg.PathDelay
	if data {
		dir := pk.from
		svc := perPacket(pa.pps[dir])
		occ := queued(pa.busy[dir], now, svc)
		switch {
		case pk.trimmable && occ >= s.cfg.TrimAt:
			pk.trimmed = true
			s.c.Trimmed++
			s.note('t', pk)
		case occ >= s.cfg.QueueCap:
			s.c.LostOverflow++
			s.note('o', pk)
			return
		default:
			if occ >= s.cfg.ECNAt {
				pk.ce = true
				s.c.ECNMarked++
			}
			pa.busy[dir] = max(now, pa.busy[dir]) + svc
			arrive = pa.busy[dir] + s.cfg.PathDelay
		}
	}
	epoch := pa.epoch
	dst := s.hosts[1-pk.from].nic
	s.at(arrive-now, func() {
		if !pa.up || pa.epoch != epoch {
			lost(false)
			if pk.kind == kData {
				s.c.DataLostInFlight++
			}
			return
		}
		if pk.kind == kData && !pk.trimmed {
			dst.lastHopIn(pk)
			return
		}
		dst.fromFabric(pk)
	})
}

// queued is how many packets wait in a queue that drains at busy.
func queued(busy, now, svc time.Duration) int {
	if busy <= now {
		return 0
	}
	return int(math.Ceil(float64(busy-now) / float64(svc)))
}

// lastHopIn is the T0 port facing this NIC.
func (n *nic) lastHopIn(pk *pkt) {
	s := n.sim
	now := s.clock.now
	svc := perPacket(s.cfg.HostPPS)
	occ := queued(n.lastBusy, now, svc)
	switch {
	case pk.trimmable && occ >= s.cfg.TrimAt:
		pk.trimmed, pk.lastHop = true, true
		s.c.TrimmedLastHop++
		n.fromFabric(pk)
		return
	case occ >= s.cfg.QueueCap:
		s.c.LostOverflow++
		return
	}
	n.lastBusy = max(now, n.lastBusy) + svc
	s.at(n.lastBusy-now, func() { n.fromFabric(pk) })
}

func (n *nic) fromFabric(pk *pkt) {
	s := n.sim
	q := n.qps[pk.qpn]
	if q == nil {
		s.c.UnknownQP++
		return
	}
	switch pk.kind {
	case kData:
		n.receiveData(q, pk)
	case kSACK, kNACK:
		skip := false
		if pk.kind == kNACK {
			skip = !pk.lastHop
		} else {
			skip = pk.ce
		}
		n.echo(q, pk.ev, skip)
		f := pk.frame
		s.at(hostDelay, func() { n.host.deliver(f) })
	case kProbe:
		s.c.ProbesAnswered++
		s.onPath(&pkt{kind: kProbeAnswer, qpn: q.peer, ev: pk.ev, path: pk.path, from: n.side})
	case kProbeAnswer:
		i, _ := s.slotOf(pk.ev)
		if i < len(q.slots) && q.slots[i].state != slotGood {
			q.slots[i] = slot{}
			s.c.Revived++
		}
	}
}

// receiveData is the receiving NIC's SACK state machine.
func (n *nic) receiveData(q *nicQP, pk *pkt) {
	s := n.sim
	if pk.trimmed {
		s.c.NACKs++
		reason := mrcpkt.NACKTrimmed
		if pk.lastHop {
			reason = mrcpkt.NACKTrimmedLastHop
		}
		a := n.answer(q, mrcpkt.OpNACK, pk)
		a.NETH = &mrcpkt.NETH{EV: pk.ev, PSN: pk.psn, Reason: reason}
		n.sendAnswer(kNACK, q, a, pk)
		return
	}
	d := transport.PSNDiff(pk.psn, q.expected)
	fresh := false
	switch {
	case d < 0 || (d < 64 && q.bitmap&(1<<d) != 0):
		s.c.Duplicates++
	case d >= 64:
		s.c.BeyondWindow++
	default:
		fresh = true
		q.bitmap |= 1 << d
		for q.bitmap&1 != 0 {
			q.bitmap >>= 1
			q.expected = transport.PSNAdd(q.expected, 1)
		}
	}
	s.c.SACKs++
	a := n.answer(q, mrcpkt.OpSACK, pk)
	var mark uint8
	if pk.ce {
		mark = mrcpkt.MarkSkipOnce
	}
	a.SETH = &mrcpkt.SETH{CumPSN: transport.PSNAdd(q.expected, -1), Mark: mark,
		BasePSN: q.expected, Bitmap: q.bitmap, EV: pk.ev}
	n.sendAnswer(kSACK, q, a, pk)
	if fresh {
		s.c.Delivered++
		f := append([]byte(nil), pk.frame...)
		binary.BigEndian.PutUint16(f[mrcpkt.EthernetLen+mrcpkt.IPv6Len:], uint16(pk.ev>>16))
		s.at(hostDelay, func() { n.host.deliver(f) })
	}
}

func (n *nic) answer(q *nicQP, op uint8, pk *pkt) *mrcpkt.Packet {
	return &mrcpkt.Packet{
		Inner: mrcpkt.IPv6{Src: n.host.Addr, Dst: q.peerAddr, DSCP: dscpControl, HopLimit: mrcpkt.HopLimit},
		UDP:   mrcpkt.UDP{SrcPort: uint16(pk.ev >> 16), DstPort: mrcpkt.PortRoCEv2},
		BTH:   mrcpkt.BTH{Opcode: op, DstQP: q.peer, PSN: pk.psn},
	}
}

func (n *nic) sendAnswer(k kind, q *nicQP, a *mrcpkt.Packet, data *pkt) {
	err := a.FixLengths()
	var f []byte
	if err == nil {
		f, err = mrcpkt.Serialize(a)
	}
	if err != nil {
		if n.sim.err == nil {
			n.sim.err = fmt.Errorf("transporttest: NIC %d: build answer: %w", n.side, err)
		}
		return
	}
	n.sim.onPath(&pkt{kind: k, frame: f, qpn: q.peer, psn: data.psn, ev: data.ev, path: data.path,
		from: n.side, lastHop: data.lastHop, ce: data.ce})
}
