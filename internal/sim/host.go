package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/internal/transport"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// Transport parameters of the simulated hosts: the same for MRC and RoCE.
// The engine's own defaults are for a lab whose round trips are
// milliseconds; a fabric's are microseconds.
const (
	simInitialRTO = 1 * time.Millisecond
	simMinRTO     = 100 * time.Microsecond
	simMaxRTO     = 100 * time.Millisecond
)

// clock is the engines' view of the simulated time.
type clock struct {
	s    *Sim
	base time.Time
}

func (c *clock) Now() time.Time                       { return c.base.Add(dur(c.s.now)) }
func (c *clock) After(time.Duration) <-chan time.Time { return nil }

// Origin and Elapsed make it a transport.ElapsedClock: the engines read
// the simulated time as a duration, never as a time.Time.
func (c *clock) Origin() time.Time      { return c.base }
func (c *clock) Elapsed() time.Duration { return dur(c.s.now) }

var epoch0 = time.Unix(1_700_000_000, 0)

// host is one host: its NIC (the NIC program's model) and its transport.
type host struct {
	at  plan.Host
	id  int32
	dev *device
	nic *nicmodel.NIC
	eng *transport.Engine
	qps map[qpKey]*qpEnd
	// byQPN are its QP ends by local QPN, which the host numbers from 1
	// (index 0 is unused): a slice, not a map, because every delivered
	// frame looks its QP up.
	byQPN []*qpEnd
	// nextQPN, nextIndex number the host's QPs and their NIC state.
	nextQPN   uint32
	nextIndex int
	nextAddr  uint64 // where the next write into this host goes
	inbox     [][]byte
	timerGen  uint32
	timerAt   int64
	armed     bool
	failedAt  uint64 // the NIC's path-failed count last seen
	delivered int64  // payload bytes its NIC handed it
}

type qpKey struct {
	peer  int32
	plane int16 // a RoCE QP's plane; -1-k for a pair's MRC QP k (all planes)
	k     int16 // a RoCE QP's number among the pair's on its plane
}

// qpEnd is one end of a QP pair.
type qpEnd struct {
	qp    *transport.QP
	entry qpentry.QP
	peer  *host
	other *qpEnd
	// Sender side: parts waiting, the one being written.
	queue  []int32
	active *transport.Transfer
	part   int32
	// Receiver side: the parts the peer writes, in order, and the writes
	// completed so far.
	expect []int32
	msgs   int64
	// RoCE: its plane and number there (plane -1: an MRC QP), the T1 its
	// T0's ECMP group sends its frames through (roce.go) and the one it
	// picked when the QP opened, and when routing last moved it (0: never).
	plane, k     int
	t1, openedOn int
	movedAt      int64
}

// part is one write of a flow: its share on one of the pair's QPs.
type part struct {
	flow  int32
	bytes int64
	vaddr uint64
	rkey  uint32
	data  []byte // Options.Payload
	mr    *transport.MemoryRegion
	q     *qpEnd // the sender's end of its QP
}

const virtualRKey = 1

func (s *Sim) newHost(h plan.Host, d *device) (*host, error) {
	id := s.nicID(h)
	n, err := nicmodel.New(s.f, s.common)
	if err != nil {
		return nil, err
	}
	own, err := s.src.NICEntries(h)
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", s.p.HostName(h), err)
	}
	if err := n.WriteAll(nicmodel.Insert, own...); err != nil {
		return nil, fmt.Errorf("sim: %s: %w", s.p.HostName(h), err)
	}
	n.ShareScratch(s.nicScratch)
	for _, cs := range schema.NICCloneSessions(s.f) {
		n.SetCloneSession(cs)
	}
	if s.clk == nil {
		s.clk = &clock{s, epoch0}
	}
	eng, err := transport.New(transport.Config{Addr: s.p.HostAddr(h), Clock: s.clk,
		DSCPTrimmable: uint8(s.f.DSCP.Trimmable), DSCPNoTrim: uint8(s.f.DSCP.NoTrim), VirtualPayload: !s.opt.Payload,
		NICRate: float64(s.f.NICSpeedGbps) * 1e9, NICFrameOverhead: mrcpkt.IPv6Len + wireOverhead,
		SingleGoroutine: true}) // each run is one goroutine's: the engines need no lock
	if err != nil {
		return nil, err
	}
	hs := &host{at: h, id: id, dev: d, nic: n, eng: eng, qps: map[qpKey]*qpEnd{}, byQPN: []*qpEnd{nil}, nextQPN: 1}
	if !s.opt.Payload {
		if _, err := eng.RegisterVirtualMR(0, virtualRKey, 1<<50); err != nil {
			return nil, err
		}
	}
	s.hosts[id] = hs
	return hs, nil
}

// hostOf returns host h, allocating its NIC.
func (s *Sim) hostOf(h plan.Host) *host {
	d := s.device(s.nicID(h))
	if d == nil {
		return nil
	}
	return d.host
}

// qpEnd is the host's QP end whose local QPN is qpn, or nil.
func (hs *host) qpEnd(qpn uint32) *qpEnd {
	if qpn < uint32(len(hs.byQPN)) {
		return hs.byQPN[qpn]
	}
	return nil
}

// takeBuf is a buffer for an inbox frame.
func (s *Sim) takeBuf() []byte {
	if n := len(s.spareFrames); n > 0 {
		b := s.spareFrames[n-1]
		s.spareFrames = s.spareFrames[:n-1]
		return b[:0]
	}
	return nil
}

// flushHost hands the host the frames its NIC delivered, then sends what
// its transport queued.
func (s *Sim) flushHost(hs *host) {
	// By index, the inbox kept whole: re-slicing it from the front
	// shrank its capacity, and every refill allocated a new one.
	for i := 0; i < len(hs.inbox); i++ {
		f := hs.inbox[i]
		s.deliver(hs, f)
		s.spareFrames = append(s.spareFrames, f)
	}
	clear(hs.inbox)
	hs.inbox = hs.inbox[:0]
	s.kick(hs)
}

// deliver is one frame from the NIC to the host's transport.
func (s *Sim) deliver(hs *host, f []byte) {
	const bthEnd = 14 + 40 + 8 + 12 // a NACK is 86 bytes, a SACK 94, data 94 and more
	if len(f) < bthEnd {
		_ = hs.eng.HandleFrame(f) // the engine counts what it cannot read
		return
	}
	op := f[62]
	qpn := uint32(f[67])<<16 | uint32(f[68])<<8 | uint32(f[69])
	if isData(op) && len(f) >= 94 {
		size := int64(binary.BigEndian.Uint32(f[90:]))
		_ = hs.eng.HandleFrame(f)
		hs.delivered += size
		s.addDelivered(s.now/s.binPS, size)
		if q := hs.qpEnd(qpn); q != nil {
			s.received(hs, q)
		}
		return
	}
	_ = hs.eng.HandleFrame(f)
	if q := hs.qpEnd(qpn); q != nil && q.active != nil && q.active.Complete() {
		s.sent(hs, q)
	}
}

// kick sends what the host's transport queued through its NIC, and sets
// its timer.
func (s *Sim) kick(hs *host) {
	s.out = hs.eng.TakeOutput(s.out[:0])
	if len(s.out) > 0 {
		for _, f := range s.out {
			s.emit(hs.dev, hs.nic.Process(0, f)) // emit copies what it keeps
		}
		hs.eng.Recycle(s.out)
		clear(s.out)
	}
	if c := hs.nic.Event(schema.NICEventPathFailed); c != hs.failedAt {
		hs.failedAt = c
		s.retired(hs)
	}
	at, ok := hs.eng.NextDeadlineElapsed() // since the clock's origin, epoch0
	if !ok {
		hs.armed = false
		return
	}
	t := int64(at) * 1000
	if hs.armed && hs.timerAt == t {
		return
	}
	hs.timerGen++
	hs.armed, hs.timerAt = true, t
	s.q.push(event{at: max(t, s.now), kind: evTimer, dev: hs.id, gen: hs.timerGen})
}

func (hs *host) timer(s *Sim, gen uint32) {
	if gen != hs.timerGen || !hs.armed {
		return
	}
	hs.armed = false
	hs.eng.HandleTimers() // completes no write: only a SACK does (deliver sees it)
	s.kick(hs)
}

// qpPair returns the QP ends of a and b for their QP k on the plane (from
// a's side; plane -1-k: MRC's QP k), opening them on both NICs and engines
// the first time.
func (s *Sim) qpPair(a, b *host, plane, k int) (*qpEnd, error) {
	key := qpKey{peer: b.id, plane: int16(plane), k: int16(k)}
	if q := a.qps[key]; q != nil {
		return q, nil
	}
	mode := transport.MRC
	// An MRC QP starts its rotation at a slot and T1 of its own, so that
	// QPs starting together do not send in step.
	first, offset := int(s.pairHash(a, b, plane, 1)%uint64(s.f.EV.SetSize)), int(s.pairHash(a, b, plane, 0)%uint64(s.f.T1Count))
	qa, qb := &qpEnd{peer: b, plane: -1}, &qpEnd{peer: a, plane: -1}
	qa.other, qb.other = qb, qa
	offsets := [2]int{offset, offset}
	if plane >= 0 {
		mode = transport.RoCE
		first = plane // slot p of the EV set is in plane p
		base := s.p.SplitEV(s.p.EVSet()[first]).T1
		// Each end's frames go by the T1 its own T0 picks: the same one
		// while nothing has failed.
		for i, x := range [2]struct {
			q        *qpEnd
			from, to *host
		}{{qa, a, b}, {qb, b, a}} {
			x.q.plane, x.q.k = plane, k
			x.q.t1 = s.ecmp(x.from, x.to, plane, k)
			x.q.openedOn = x.q.t1
			offsets[i] = ((x.q.t1-base)%s.f.T1Count + s.f.T1Count) % s.f.T1Count
		}
	}
	for i, x := range []struct {
		h    *host
		q    *qpEnd
		peer *host
	}{{a, qa, b}, {b, qb, a}} {
		if x.h.nextIndex >= schema.NICMaxQPs {
			return nil, fmt.Errorf("sim: %s needs more than %d QPs (the NIC's limit): fewer peers per host", s.p.HostName(x.h.at), schema.NICMaxQPs)
		}
		x.q.entry = qpentry.QP{Local: x.h.nextQPN, Index: x.h.nextIndex, Epoch: 1, T1Offset: offsets[i], StartPSN: 0,
			SinglePath: mode == transport.RoCE, FirstSlot: first, Peer: s.p.HostAddr(x.peer.at)}
		x.h.nextQPN++
		x.h.nextIndex++
	}
	qa.entry.PeerQP, qb.entry.PeerQP = qb.entry.Local, qa.entry.Local
	for _, x := range []struct {
		h *host
		q *qpEnd
	}{{a, qa}, {b, qb}} {
		if err := x.h.nic.OpenQP(x.q.entry); err != nil {
			return nil, err
		}
		cc := s.congestionControl()
		// A RoCE QP sends on one plane port; an MRC QP on the whole NIC.
		rate := float64(s.f.NICSpeedGbps) * 1e9
		if mode == transport.RoCE {
			rate = float64(s.f.PortSpeedGbps) * 1e9
		}
		qp, err := x.h.eng.OpenQP(transport.QPConfig{LocalQPN: x.q.entry.Local, PeerQPN: x.q.entry.PeerQP, Peer: x.q.entry.Peer,
			Mode: mode, Segment: s.opt.Segment, Window: s.opt.Window, ReceiveWindow: s.f.ReceiveWindow, CongestionControl: cc, LineRate: rate, AckEvery: s.f.AckEvery, NoLossReport: s.opt.NoLossReport,
			InitialRTO: simInitialRTO, MinRTO: simMinRTO, MaxRTO: simMaxRTO})
		if err != nil {
			return nil, err
		}
		x.q.qp = qp
		for uint32(len(x.h.byQPN)) <= x.q.entry.Local {
			x.h.byQPN = append(x.h.byQPN, nil)
		}
		x.h.byQPN[x.q.entry.Local] = x.q
	}
	a.qps[key] = qa
	b.qps[qpKey{peer: a.id, plane: int16(plane), k: int16(k)}] = qb
	return qa, nil
}

// pairHash is the hash of a host pair's QP (FNV-1a over the two addresses,
// the plane and salt, finished by mix64): the start slot and T1 offset of
// an MRC QP, the ECMP hash of a RoCE QP's 5-tuple. Deterministic: a
// function of the pair alone, as a switch's ECMP hash is of the packet's
// header.
func (s *Sim) pairHash(a, b *host, plane int, salt uint64) uint64 {
	h := fnv.New64a()
	aa, bb := s.p.HostAddr(a.at).As16(), s.p.HostAddr(b.at).As16()
	h.Write(aa[:])
	h.Write(bb[:])
	var x [16]byte
	binary.BigEndian.PutUint64(x[:], uint64(plane+1))
	binary.BigEndian.PutUint64(x[8:], salt^s.opt.Seed)
	h.Write(x[:])
	return mix64(h.Sum64())
}

// mix64 is SplitMix64's finalizer: every output bit depends on every input
// bit. The hash is taken modulo small powers of two (the T1 count, the EV
// set's size), and FNV-1a's low k bits depend only on the low k bits of
// each byte it read: without the mixer, a pair's T1 offset was a function
// of its start slot, the seed only relabelled the T1s, and the ECMP hash
// of a RoCE QP spread an all-to-all over the T1s as evenly as a schedule
// would, which no switch's hash does.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// prepareFlow opens flow i's QPs on both hosts and splits it into parts,
// which its receiver's QP ends expect in that order; startFlow, at the
// flow's start, queues them at the sender. Flows are prepared in the order
// they start (by time, then index), between a parallel run's windows
// (parallel.go): it touches both hosts, which two workers may own. Opening
// a QP reads the clock (congestion control's starts there): the caller
// sets it to the flow's start.
func (s *Sim) prepareFlow(i int) {
	fl := &s.flows[i]
	a, b := s.hostOf(fl.Src), s.hostOf(fl.Dst)
	if a == nil || b == nil {
		return
	}
	// planes are the QPs' keys: a RoCE QP's plane and number on it, or
	// -1-k for an MRC pair's QP k (every plane).
	var planes [][2]int
	if s.opt.Transport == RoCE {
		for k := range s.qpsPerPair / s.f.Planes {
			for p := 0; p < s.f.Planes; p++ {
				planes = append(planes, [2]int{p, k})
			}
		}
	} else {
		for k := range s.qpsPerPair {
			planes = append(planes, [2]int{-1 - k, 0})
		}
	}
	fl.parts = len(planes)
	fl.firstPart = int32(len(s.parts))
	for j, pl := range planes {
		q, err := s.qpPair(a, b, pl[0], pl[1])
		if err != nil {
			s.fail(err)
			return
		}
		n := partBytes(fl.Bytes, len(planes), j)
		if n == 0 {
			fl.partsDone++
			continue
		}
		pt := part{flow: int32(i), bytes: n, vaddr: b.nextAddr, rkey: virtualRKey, q: q}
		b.nextAddr += uint64(n+4095) &^ 4095
		if s.opt.Payload {
			pt.data = payloadOf(s.opt.Seed, i, j, int(n))
			pt.rkey = uint32(len(s.parts) + 2)
			pt.vaddr = 0
			mr, err := b.eng.RegisterMR(0, pt.rkey, make([]byte, n))
			if err != nil {
				s.fail(err)
				return
			}
			pt.mr = mr
		}
		s.parts = append(s.parts, pt)
		q.other.expect = append(q.other.expect, int32(len(s.parts)-1))
	}
	fl.lastPart = int32(len(s.parts))
}

// startFlow queues flow i's parts on their QPs at its sender (prepareFlow
// made them), and sends.
func (s *Sim) startFlow(i int) {
	fl := &s.flows[i]
	a := s.hostOf(fl.Src)
	if a == nil {
		return
	}
	for pi := fl.firstPart; pi < fl.lastPart; pi++ {
		q := s.parts[pi].q
		q.queue = append(q.queue, pi)
		s.nextWrite(a, q)
	}
	s.kick(a)
}

// nextWrite starts the QP's next queued write if none is in progress.
func (s *Sim) nextWrite(hs *host, q *qpEnd) {
	if q.active != nil || len(q.queue) == 0 {
		return
	}
	pi := q.queue[0]
	q.queue = q.queue[1:]
	pt := &s.parts[pi]
	req := transport.WriteRequest{RemoteVAddr: pt.vaddr, RKey: pt.rkey}
	if pt.data != nil {
		req.Data = pt.data
	} else {
		req.Length = int(pt.bytes)
	}
	tr, err := q.qp.Write(req)
	if err != nil {
		s.fail(fmt.Errorf("sim: %s: %w", s.p.HostName(hs.at), err))
		return
	}
	q.active, q.part = tr, pi
	if q.plane >= 0 {
		s.stalls(hs, q, -1) // a write started on a path a failure cuts
	}
}

// sent: the sender's write on q is acked in full.
func (s *Sim) sent(hs *host, q *qpEnd) {
	s.account(q)
	s.flows[s.parts[q.part].flow].sentParts++
	q.active = nil
	s.nextWrite(hs, q)
}

// account adds the resends of q's write to its flow's.
func (s *Sim) account(q *qpEnd) {
	st := q.active.Stats()
	fl := &s.flows[s.parts[q.part].flow]
	fl.retx.Add(st.Retransmits)
}

// received: a data packet reached hs on q; a write may have completed.
func (s *Sim) received(hs *host, q *qpEnd) {
	m := q.qp.RecvCounters().Messages
	for q.msgs < m && len(q.expect) > 0 {
		q.msgs++
		pi := q.expect[0]
		q.expect = q.expect[1:]
		pt := &s.parts[pi]
		fl := &s.flows[pt.flow]
		if pt.mr != nil && string(pt.mr.Bytes()) != string(pt.data) {
			fl.corrupt = true
		}
		pt.data, pt.mr = nil, nil
		fl.partsDone++
		if fl.partsDone == fl.parts {
			fl.doneAt = s.now
			s.done++
			if fl.step > 0 {
				// The step's barrier hears of it at the window's end.
				s.stepDone = append(s.stepDone, pt.flow)
			}
		}
	}
}

// congestionControl is what the run's QPs run (Options.NoCongestionControl,
// Options.DelayCC, or the transport's own).
func (s *Sim) congestionControl() transport.CongestionControl {
	switch {
	case s.opt.NoCongestionControl:
		return transport.CCOff
	case s.opt.Transport == RoCE:
		return transport.DCQCN
	case s.opt.DelayCC:
		return transport.Delay
	}
	return transport.DCTCP
}
