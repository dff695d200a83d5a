package transporttest

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

const hostDelay = time.Microsecond // NIC to host (PCIe)

// Offsets in an encapsulated frame (docs/protocol.md 6.2).
const (
	offOuter      = mrcpkt.EthernetLen
	offOuterDst   = offOuter + 24
	offOuterHop   = offOuter + 7
	offOuterLen   = offOuter + 4
	offInnerUDP   = offOuter + 2*mrcpkt.IPv6Len
	offBTH        = offInnerUDP + mrcpkt.UDPLen
	offMETH       = offBTH + mrcpkt.BTHLen
	hostOffMETH   = offMETH - mrcpkt.IPv6Len
	hostOffOpcode = offBTH - mrcpkt.IPv6Len
)

// fabricFor is the two-tier fabric the simulation's two NICs sit on: the
// config's planes and T1s, two T0 rows with one host each (so that every
// path crosses a T1), its EV set, K and N. The NICs are the generated NIC
// program's model (internal/nicmodel) with this fabric's tables.
func fabricFor(cfg Config) (*fabric.Fabric, error) {
	ports := max(8, cfg.T1s+1)
	y := fmt.Sprintf(`base: tiny
name: transporttest
planes: %d
nic: {speed_gbps: %d, ack_every: %d, window_packets: %d}
switch: {ports: %d, port_speed_gbps: 100}
t0: {count: 2, down_ports: 1, up_ports: %d}
t1: {count: %d}
ev: {set_size: %d}
failover: {unanswered_sends: %d, probe_passes: %d}
`, cfg.Planes, 100*cfg.Planes, cfg.AckEvery, cfg.ReceiveWindow, ports, cfg.T1s, cfg.T1s, cfg.Slots, cfg.FailAfterSends, cfg.ProbeEvery)
	f, err := fabric.Parse("transporttest", strings.NewReader(y))
	if err != nil {
		return nil, fmt.Errorf("transporttest: fabric of %+v: %w", cfg, err)
	}
	return f, nil
}

// pkt is a frame on a path.
type pkt struct {
	frame []byte // as on the wire (encapsulated)
	plane int
	path  int
	psn   uint32
	from  int // side of the NIC that put it on the path
	data  bool
}

type path struct {
	id    int
	up    bool
	epoch int // bumped at each cut: what was on the path is lost
	loss  float64
	pps   [2]float64
	busy  [2]time.Duration // per direction: when the data queue drains
}

// nic is a host's NIC: the NIC program's model, its host port's
// serialization and the last hop's queue towards it.
type nic struct {
	sim      *Sim
	host     *Host
	side     int
	at       plan.Host
	model    *nicmodel.NIC
	qps      int           // QP state indexes used
	upBusy   time.Duration // host to NIC to fabric, at HostPPS
	lastBusy time.Duration // last hop into this NIC, at HostPPS
	newSent  int64
}

func newNIC(s *Sim, side int, at plan.Host, common *nicmodel.Common) (*nic, error) {
	m, err := nicmodel.New(s.fab, common)
	if err != nil {
		return nil, err
	}
	g := tables.NewGenerator(s.plan)
	if err := m.WriteAll(nicmodel.Insert, g.NICEntries(at, nil)...); err != nil {
		return nil, err
	}
	for _, cs := range schema.NICCloneSessions(s.fab) {
		m.SetCloneSession(cs)
	}
	return &nic{sim: s, side: side, at: at, model: m}, nil
}

func (n *nic) open(qp qpentry.QP) error {
	qp.Index, qp.Epoch = n.qps, 1
	n.qps++
	return n.model.OpenQP(qp)
}

// fromHost takes a frame from the host: serialised at the port rate, then
// through the NIC.
func (n *nic) fromHost(f []byte) {
	s := n.sim
	t := max(s.clock.now, n.upBusy) + perPacket(s.cfg.HostPPS)
	n.upBusy = t
	s.at(t-s.clock.now, func() { n.transmit(f) })
}

func perPacket(pps float64) time.Duration { return time.Duration(float64(time.Second) / pps) }

func (n *nic) transmit(f []byte) {
	s := n.sim
	if len(f) > hostOffMETH && mrcpkt.IsData(f[hostOffOpcode]) && f[hostOffMETH]&mrcpkt.METHRetransmission == 0 {
		n.newSent++
		for i := 0; i < len(s.hooks); i++ {
			if hk := s.hooks[i]; hk.h == n.host && n.newSent >= hk.count {
				s.hooks = append(s.hooks[:i], s.hooks[i+1:]...)
				i--
				hk.fn()
			}
		}
	}
	n.emit(n.model.Process(0, f))
}

// emit sends what the NIC put out: to its host, or onto the plane's path.
func (n *nic) emit(out []nicmodel.Frame) {
	s := n.sim
	for _, o := range out {
		f := o.AppendTo(nil)
		if o.Port == 0 {
			s.at(hostDelay, func() { n.host.deliver(f) })
			continue
		}
		plane := int(o.Port) - 1
		ev := uint32(binary.BigEndian.Uint16(f[offInnerUDP:]))<<16 | uint32(binary.BigEndian.Uint16(f[offOuter+2:]))
		t1 := s.plan.SplitEV(plan.EV(ev)).T1
		if plane >= s.cfg.Planes || t1 >= s.cfg.T1s {
			s.c.ControlLost++ // the fabric cannot route it
			continue
		}
		dscp := f[offOuter]&0x0f<<2 | f[offOuter+1]>>6
		s.onPath(&pkt{frame: f, plane: plane, path: plane*s.cfg.T1s + t1, psn: get24(f[offBTH+9:]), from: n.side,
			data: mrcpkt.IsData(f[offBTH]) && dscp != uint8(s.fab.DSCP.Trimmed) && dscp != uint8(s.fab.DSCP.TrimmedLastHop)})
	}
}

func get24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

func (pk *pkt) dscp() uint8 { return pk.frame[offOuter]&0x0f<<2 | pk.frame[offOuter+1]>>6 }

func (pk *pkt) setDSCP(d uint8) {
	f := pk.frame
	f[offOuter] = f[offOuter]&0xf0 | d>>2
	f[offOuter+1] = (d&3)<<6 | f[offOuter+1]&0x3f
}

// trim cuts the packet to the trim size (docs/protocol.md 6.3).
func (s *Sim) trim(pk *pkt, lastHop bool) {
	n := min(len(pk.frame), s.fab.Trim.SizeBytes)
	pk.frame = pk.frame[:n]
	d := uint8(s.fab.DSCP.Trimmed)
	if lastHop {
		d = uint8(s.fab.DSCP.TrimmedLastHop)
	}
	pk.setDSCP(d)
	binary.BigEndian.PutUint16(pk.frame[offOuterLen:], uint16(n-mrcpkt.EthernetLen-mrcpkt.IPv6Len))
	pk.data = false
}

// markCE sets the outer ECN to CE on an ECN-capable packet.
func (pk *pkt) markCE() bool {
	f := pk.frame
	if f[offOuter+1]>>4&3 == mrcpkt.ECNNotECT {
		return false
	}
	f[offOuter+1] |= 0x30
	return true
}

// onPath puts pk on its path, in direction pk.from.
func (s *Sim) onPath(pk *pkt) {
	pa := s.paths[pk.path]
	lost := func(random bool) {
		s.note('l', pk)
		switch {
		case !pk.data:
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
	if pk.data {
		dir := pk.from
		svc := perPacket(pa.pps[dir])
		occ := queued(pa.busy[dir], now, svc)
		switch {
		case pk.dscp() == uint8(s.fab.DSCP.Trimmable) && occ >= s.cfg.TrimAt:
			s.trim(pk, false)
			s.c.Trimmed++
			s.note('t', pk)
		case occ >= s.cfg.QueueCap:
			s.c.LostOverflow++
			s.note('o', pk)
			return
		default:
			if occ >= s.cfg.ECNAt && pk.markCE() {
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
			if pk.data {
				s.c.DataLostInFlight++
			}
			return
		}
		// The switches have used the carrier up: it names the
		// destination's NIC port; three switches took a hop each.
		sid := s.plan.NICPortSID(pk.plane, dst.at).As16()
		copy(pk.frame[offOuterDst:offOuterDst+16], sid[:])
		pk.frame[offOuterHop] -= 3
		if pk.data {
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
	case pk.dscp() == uint8(s.fab.DSCP.Trimmable) && occ >= s.cfg.TrimAt:
		s.trim(pk, true)
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
	n.emit(n.model.Process(uint32(pk.plane+1), pk.frame))
}
