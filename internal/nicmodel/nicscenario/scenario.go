// Package nicscenario generates seeded random scenarios for one NIC of a
// fabric: frames arriving at its host port and its plane ports, and the
// control plane's writes, reacting to what the NIC emits (the EVs its data
// took, the probes it sent). The differential test in bmv2-tests feeds one
// scenario to the NIC program on BMv2 and to internal/nicmodel and compares
// everything they emit; the model's own tests feed scenarios to the model
// alone.
//
// A scenario covers what a NIC meets: several QPs at once, MRC and
// single-path; data from its host (new and retransmitted, every data
// opcode); data from its peers in order and out of order, with holes,
// duplicates, PSNs beyond and behind the window and the 24-bit wrap;
// trimmed packets (TRIMMED and TRIMMED_LASTHOP, cut to the trim size or
// longer); CE and ECT(1) marks, CE over a Not-ECT packet; SACKs and NACKs
// echoing the EVs the NIC used, some marked SKIP_ONCE; black-holed paths
// whose EVs are never echoed, so that slots fail, move to their backups and
// are probed, and paths that come back, so that probe answers revive them;
// probes from peers; the controller's ev_state entries; QPs closed and
// opened again under a new epoch; QP entries out of range; and frames that
// are not MRC, not for this NIC, for unknown QPs, or cut short.
package nicscenario

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// Step is one thing that happens to the NIC: a frame arriving on a port,
// or the control plane writing entries (one update type).
type Step struct {
	What string
	// A frame: Data arrives on Port.
	Port uint32
	Data []byte
	// Or a write.
	Write   bool
	Op      nicmodel.Op
	Entries []entry.Entry
}

// Emitted is a frame the NIC sent, as Observe takes it.
type Emitted struct {
	Port uint32
	Data []byte
}

// Epochs hands out QP state indexes' epochs across scenarios run on one
// NIC: each use of an index gets a new epoch (1-255, never 0), so that a
// scenario starts from fresh per-QP state whatever ran before it.
type Epochs struct {
	uses [schema.NICMaxQPs]int
}

// Next returns the epoch for the next use of index i.
func (e *Epochs) Next(i int) uint8 {
	e.uses[i]++
	return uint8(e.uses[i]%255 + 1)
}

// qp is one QP of the NIC under test and the harness's view of it.
type qp struct {
	q    qpentry.QP
	peer plan.Host
	open bool
	// Send side: the next PSN the host sends; EVs the NIC's data took and
	// no echo has come back for yet; probes sent and not answered.
	txNext uint32
	sent   []sentData
	probes []uint32
	// Receive side: the next PSN its peer sends fresh; PSNs it skipped
	// (holes) and PSNs it sent.
	rxNext  uint32
	skipped []uint32
	rxSent  []uint32
	// peerOffset is the T1 offset of the peer's QP: the EVs its data takes.
	peerOffset int
}

type sentData struct {
	ev  uint32
	psn uint32
}

// Scenario is one seeded scenario for the NIC of host Host.
type Scenario struct {
	Seed   uint64
	plan   *plan.Plan
	prog   *schema.Program
	host   plan.Host
	rng    *rand.Rand
	epochs *Epochs
	steps  int
	// sendMostly makes most events the host's data (a dead plane's
	// scenario: slots, then backups, must fail).
	sendMostly bool
	// recvMostly makes most events the peer's data, with long holes
	// filled in bursts: the receive window's words, the SACK's bases and
	// the in-order walk across words.
	recvMostly bool
	qps        []*qp
	// dead are the (plane, T1) paths whose packets are lost: EVs on them
	// are never echoed and their probes never answered.
	dead     map[[2]int]bool
	evStates []entry.Entry
	pending  []Step
	done     bool
	// badQP is the QP entry out of range written by this scenario, if any.
	badQP []entry.Entry
}

// New returns scenario seed for host's NIC in plan p: about steps steps,
// the QPs on state indexes from firstIndex (at most 8 of them), epochs from
// epochs.
func New(p *plan.Plan, host plan.Host, seed uint64, steps, firstIndex int, epochs *Epochs) *Scenario {
	s := &Scenario{
		Seed: seed, plan: p, prog: schema.NIC(p.F), host: host, epochs: epochs, steps: steps,
		rng:  rand.New(rand.NewPCG(seed, 0x6e6963)),
		dead: map[[2]int]bool{},
	}
	nq := 1 + s.rng.IntN(4)
	// A path or two black-holed in some scenarios; in some, a whole plane
	// (a slot's backup is in its plane: both fail).
	switch s.rng.IntN(4) {
	case 0:
	case 1:
		pl := s.rng.IntN(p.F.Planes)
		for t1 := 0; t1 < p.F.T1Count; t1++ {
			s.dead[[2]int{pl, t1}] = true
		}
		// One QP sending most of the time, long enough for slots to fail,
		// their backups to fail, and the slots to be passed over and
		// probed.
		s.steps *= 3
		s.sendMostly = true
		nq = 1
	default:
		for i := 0; i < 1+s.rng.IntN(2); i++ {
			s.dead[[2]int{s.rng.IntN(p.F.Planes), s.rng.IntN(p.F.T1Count)}] = true
		}
	}
	if !s.sendMostly && s.rng.IntN(3) == 0 {
		s.recvMostly = true
		s.steps *= 2
		nq = 1
	}
	for i := 0; i < nq; i++ {
		s.addQP(firstIndex + i)
	}
	return s
}

func (s *Scenario) addQP(index int) {
	p := s.plan
	var peer plan.Host
	for {
		peer = p.HostByIndex(s.rng.IntN(p.F.Hosts()))
		if peer != s.host {
			break
		}
	}
	start := s.rng.Uint32() & 0xffffff
	if s.rng.IntN(3) == 0 {
		start = 0xffffff - uint32(s.rng.IntN(40)) // the 24-bit wrap within reach
	}
	q := &qp{
		q: qpentry.QP{Local: s.qpn(), Peer: p.HostAddr(peer), PeerQP: s.qpn(), Index: index,
			T1Offset: s.rng.IntN(p.F.T1Count), StartPSN: start, SinglePath: s.rng.IntN(5) == 0},
		peer: peer, peerOffset: s.rng.IntN(p.F.T1Count),
	}
	if s.rng.IntN(2) == 0 {
		q.q.FirstSlot = s.rng.IntN(len(p.EVSet()))
	}
	s.qps = append(s.qps, q)
	s.openQP(q, "open")
}

// qpn is a QPN no other QP of the scenario has.
func (s *Scenario) qpn() uint32 {
	for {
		n := s.rng.Uint32()&0xffffff | 1
		clash := false
		for _, q := range s.qps {
			clash = clash || q.q.Local == n || q.q.PeerQP == n
		}
		if !clash {
			return n
		}
	}
}

func (s *Scenario) openQP(q *qp, what string) {
	q.q.Epoch = s.epochs.Next(q.q.Index)
	q.txNext = s.rng.Uint32() & 0xffffff
	q.rxNext = q.q.StartPSN
	q.sent, q.probes, q.skipped, q.rxSent = nil, nil, nil, nil
	q.open = true
	send, recv, err := qpentry.Entries(s.prog, s.plan.F.T1Count, q.q)
	if err != nil {
		panic(fmt.Sprintf("nicscenario: %v", err)) // the generator's own QPs are in range
	}
	s.pending = append(s.pending, Step{What: fmt.Sprintf("%s QP %#x (index %d epoch %d, single %v)", what, q.q.Local, q.q.Index, q.q.Epoch, q.q.SinglePath),
		Write: true, Op: nicmodel.Insert, Entries: []entry.Entry{send, recv}})
}

func (s *Scenario) closeQP(q *qp) {
	send, recv, _ := qpentry.Entries(s.prog, s.plan.F.T1Count, q.q)
	q.open = false
	s.pending = append(s.pending, Step{What: fmt.Sprintf("close QP %#x", q.q.Local), Write: true, Op: nicmodel.Delete, Entries: []entry.Entry{send, recv}})
}

// Next returns the next step, or false once the scenario is over (its QPs
// closed and its ev_state entries removed).
func (s *Scenario) Next() (Step, bool) {
	for len(s.pending) == 0 {
		if s.done {
			return Step{}, false
		}
		if s.steps <= 0 {
			s.finish()
			continue
		}
		s.steps--
		s.generate()
	}
	st := s.pending[0]
	s.pending = s.pending[1:]
	return st, true
}

func (s *Scenario) finish() {
	s.done = true
	for _, q := range s.qps {
		if q.open {
			s.closeQP(q)
		}
	}
	if len(s.evStates) > 0 {
		s.pending = append(s.pending, Step{What: "remove ev_state entries", Write: true, Op: nicmodel.Delete, Entries: s.evStates})
		s.evStates = nil
	}
	if len(s.badQP) > 0 {
		s.pending = append(s.pending, Step{What: "remove the out-of-range QP entries", Write: true, Op: nicmodel.Delete, Entries: s.badQP})
		s.badQP = nil
	}
}

func (s *Scenario) openQPs() []*qp {
	var out []*qp
	for _, q := range s.qps {
		if q.open {
			out = append(out, q)
		}
	}
	return out
}

func (s *Scenario) pick() *qp {
	open := s.openQPs()
	if len(open) == 0 {
		return s.qps[s.rng.IntN(len(s.qps))]
	}
	return open[s.rng.IntN(len(open))]
}

// generate adds the steps of one random event.
func (s *Scenario) generate() {
	r := s.rng.IntN(1000)
	if s.sendMostly && r < 500 {
		r = 0
	}
	if s.recvMostly && r < 600 {
		r = 600
	}
	switch {
	case r < 330:
		s.hostData(s.pick())
	case r < 580:
		s.echo(s.pick())
	case r < 780:
		s.peerData(s.pick())
	case r < 830:
		s.probeAnswer(s.pick())
	case r < 850:
		s.peerProbe(s.pick())
	case r < 910:
		s.garbage()
	case r < 940:
		s.evState()
	case r < 960:
		s.reopen()
	case r < 970:
		s.outOfRange()
	default:
		s.healOrBreak()
	}
}

// Observe takes what the NIC emitted for the last frame step: the EVs its
// data took and the probes it sent, which later echoes and answers use.
func (s *Scenario) Observe(out []Emitted) {
	for _, o := range out {
		if o.Port == 0 {
			continue
		}
		pk, err := mrcpkt.Parse(o.Data)
		if err != nil || pk.Outer == nil {
			continue
		}
		ev, _ := mrcpkt.EV(pk)
		for _, q := range s.qps {
			if !q.open || q.q.PeerQP != pk.BTH.DstQP || q.q.Peer != pk.Inner.Dst {
				continue
			}
			switch {
			case mrcpkt.IsData(pk.BTH.Opcode):
				q.sent = append(q.sent, sentData{ev: ev, psn: pk.BTH.PSN})
			case pk.BTH.Opcode == mrcpkt.OpProbe:
				q.probes = append(q.probes, ev)
			}
		}
	}
}

// alive reports whether ev's path delivers.
func (s *Scenario) alive(ev uint32) bool {
	f := s.plan.SplitEV(plan.EV(ev))
	return !s.dead[[2]int{f.Plane, f.T1}]
}

func (s *Scenario) frame(port uint32, what string, data []byte) {
	s.pending = append(s.pending, Step{What: what, Port: port, Data: data})
}

// hostData: the host hands its NIC a data packet of q (new, sometimes a
// retransmission, half of those flagged LOST, sometimes odd DSCP or ECN).
func (s *Scenario) hostData(q *qp) {
	p := s.plan
	psn := q.txNext
	meth := uint8(0)
	if s.rng.IntN(6) == 0 {
		psn = (psn - uint32(1+s.rng.IntN(8))) & 0xffffff
		meth = mrcpkt.METHRetransmission
		if s.rng.IntN(2) == 0 {
			meth |= mrcpkt.METHLost // the sender's SACK-gap rule: fail the slot of the lost copy
		}
	} else {
		q.txNext = (q.txNext + 1) & 0xffffff
	}
	dscp := uint8(p.F.DSCP.Trimmable)
	if q.q.SinglePath || s.rng.IntN(10) == 0 {
		dscp = uint8(p.F.DSCP.NoTrim)
	}
	ecn := mrcpkt.ECNECT0
	switch s.rng.IntN(12) {
	case 0:
		ecn = mrcpkt.ECNNotECT
	case 1:
		ecn = mrcpkt.ECNECT1
	}
	pk := s.data(p.HostAddr(s.host), q.q.Peer, q.q.PeerQP, psn, dscp, ecn, meth)
	s.frame(0, fmt.Sprintf("host data QP %#x PSN %#x", q.q.Local, psn), s.serialize(pk))
}

// data is a data packet from src to dst with random content in the fields
// no device reads.
func (s *Scenario) data(src, dst netip.Addr, dstQP, psn uint32, dscp, ecn, methFlags uint8) *mrcpkt.Packet {
	ops := []uint8{mrcpkt.OpWriteFirst, mrcpkt.OpWriteMiddle, mrcpkt.OpWriteLast, mrcpkt.OpWriteLastImm, mrcpkt.OpWriteOnly, mrcpkt.OpWriteOnlyImm}
	payload := make([]byte, s.rng.IntN(300))
	for i := range payload {
		payload[i] = byte(s.rng.Uint32())
	}
	pk := &mrcpkt.Packet{
		Ethernet: s.macs(),
		Inner:    mrcpkt.IPv6{Src: src, Dst: dst, DSCP: dscp, ECN: ecn, HopLimit: mrcpkt.HopLimit, FlowLabel: s.rng.Uint32() & 0xfffff},
		UDP:      mrcpkt.UDP{SrcPort: uint16(s.rng.Uint32()), DstPort: mrcpkt.PortRoCEv2},
		BTH: mrcpkt.BTH{Opcode: ops[s.rng.IntN(len(ops))], Flags: uint8(s.rng.Uint32()), PKey: uint16(s.rng.Uint32()),
			DstQP: dstQP, AckReq: s.rng.IntN(2) == 0, PSN: psn},
		METH:    &mrcpkt.METH{Flags: methFlags},
		RETH:    &mrcpkt.RETH{VAddr: s.rng.Uint64(), RKey: s.rng.Uint32(), DMALen: uint32(len(payload))},
		Payload: payload,
	}
	return pk
}

func (s *Scenario) macs() mrcpkt.Ethernet {
	var e mrcpkt.Ethernet
	for i := range e.Dst {
		e.Dst[i], e.Src[i] = byte(s.rng.Uint32()), byte(s.rng.Uint32())
	}
	return e
}

// serialize writes pk and puts random bits in the BTH's reserved byte and
// reserved bits, which both programs must carry as they arrived.
func (s *Scenario) serialize(pk *mrcpkt.Packet) []byte {
	if err := pk.FixLengths(); err != nil {
		panic(fmt.Sprintf("nicscenario: %v", err))
	}
	b, err := mrcpkt.Serialize(pk)
	if err != nil {
		panic(fmt.Sprintf("nicscenario: %v", err))
	}
	bth := mrcpkt.EthernetLen + mrcpkt.IPv6Len + mrcpkt.UDPLen
	if pk.Outer != nil {
		bth += mrcpkt.IPv6Len
	}
	if s.rng.IntN(4) == 0 {
		b[bth+4] = byte(s.rng.Uint32())
		b[bth+8] |= byte(s.rng.Uint32()) & 0x7f
	}
	return b
}

// arrive makes pk a frame arriving at the NIC under test on plane pl's
// port, sent on ev by peer (its outer header as the last T0 leaves it).
func (s *Scenario) arrive(pk *mrcpkt.Packet, peer netip.Addr, pl int, ev uint32, ecn uint8) {
	pk.UDP.SrcPort = uint16(ev >> 16)
	pk.Outer = &mrcpkt.IPv6{Src: peer, Dst: s.plan.NICPortSID(pl, s.host), DSCP: pk.Inner.DSCP, ECN: ecn,
		FlowLabel: ev & 0xffff, HopLimit: mrcpkt.HopLimit - 3}
}

// peerEV is an EV q's peer sends on: a slot of the set in a random plane,
// moved by the peer's T1 offset.
func (s *Scenario) peerEV(q *qp) (uint32, int) {
	p := s.plan
	set := p.EVSet()
	f := p.SplitEV(set[s.rng.IntN(len(set))])
	f.T1 = (f.T1 + q.peerOffset) % p.F.T1Count
	return uint32(p.MakeEV(f)), f.Plane
}

// echo: an answer to one of the NIC's data packets comes back (unless its
// path is dead), a SACK or a NACK, on the EV it went on.
func (s *Scenario) echo(q *qp) {
	if len(q.sent) == 0 {
		s.peerData(q)
		return
	}
	// Mostly the oldest unanswered, sometimes any: answers overtake.
	i := 0
	if s.rng.IntN(3) == 0 {
		i = s.rng.IntN(len(q.sent))
	}
	d := q.sent[i]
	q.sent = append(q.sent[:i], q.sent[i+1:]...)
	if !s.alive(d.ev) {
		return // lost on the way, or its answer was
	}
	p := s.plan
	pl := p.SplitEV(plan.EV(d.ev)).Plane
	pk := &mrcpkt.Packet{
		Ethernet: s.macs(),
		Inner:    mrcpkt.IPv6{Src: q.q.Peer, Dst: p.HostAddr(s.host), DSCP: uint8(p.F.DSCP.Control), HopLimit: mrcpkt.HopLimit},
		UDP:      mrcpkt.UDP{DstPort: mrcpkt.PortRoCEv2},
		BTH:      mrcpkt.BTH{Opcode: mrcpkt.OpSACK, DstQP: q.q.Local, PSN: d.psn},
	}
	what := "SACK"
	if s.rng.IntN(4) == 0 {
		pk.BTH.Opcode = mrcpkt.OpNACK
		reason := mrcpkt.NACKTrimmed
		switch s.rng.IntN(5) {
		case 0, 1:
			reason = mrcpkt.NACKTrimmedLastHop
		case 2:
			reason = uint8(s.rng.Uint32()) // not a reason the NIC knows
		}
		pk.NETH = &mrcpkt.NETH{EV: d.ev, PSN: d.psn, Reason: reason}
		what = fmt.Sprintf("NACK reason %#x", reason)
	} else {
		mark := mrcpkt.MarkNone
		switch s.rng.IntN(8) {
		case 0, 1:
			mark = mrcpkt.MarkSkipOnce
		case 2:
			mark = uint8(2 + s.rng.IntN(2))
		}
		pk.SETH = &mrcpkt.SETH{CumPSN: d.psn, Mark: mark, BasePSN: (d.psn + 1) & 0xffffff, Bitmap: s.rng.Uint64() &^ 1, EV: d.ev}
		what = fmt.Sprintf("SACK mark %d", mark)
	}
	s.arrive(pk, q.q.Peer, pl, d.ev, mrcpkt.ECNNotECT)
	s.frame(uint32(pl+1), fmt.Sprintf("%s for QP %#x PSN %#x EV %#x", what, q.q.Local, d.psn, d.ev), s.serialize(pk))
}

// peerData: q's peer's data arrives: in order, past a hole, filling one, a
// duplicate, behind or beyond the window; sometimes trimmed on the way,
// sometimes ECN-marked.
func (s *Scenario) peerData(q *qp) {
	p := s.plan
	var psn uint32
	var what string
	window := uint32(p.F.ReceiveWindow)
	r := s.rng.IntN(20)
	if s.recvMostly && r >= 12 && s.rng.IntN(2) == 0 {
		// Half of the other cases become long holes and their filling.
		r = 20 + s.rng.IntN(2)
	}
	switch {
	case r < 9:
		psn, what = q.rxNext, "in order"
		q.rxNext = (q.rxNext + 1) & 0xffffff
	case r < 12:
		gap := uint32(1 + s.rng.IntN(4))
		for i := uint32(0); i < gap; i++ {
			q.skipped = append(q.skipped, (q.rxNext+i)&0xffffff)
		}
		psn, what = (q.rxNext+gap)&0xffffff, "past a hole"
		q.rxNext = (psn + 1) & 0xffffff
	case r < 15 && len(q.skipped) > 0:
		i := s.rng.IntN(len(q.skipped))
		psn, what = q.skipped[i], "filling a hole"
		q.skipped = append(q.skipped[:i], q.skipped[i+1:]...)
	case r < 17 && len(q.rxSent) > 0:
		psn, what = q.rxSent[s.rng.IntN(len(q.rxSent))], "again"
	case r < 18:
		psn, what = (q.rxNext+window-2+uint32(s.rng.IntN(6)))&0xffffff, "near the window's end"
	case r < 19:
		psn, what = (q.q.StartPSN-uint32(1+s.rng.IntN(5)))&0xffffff, "behind the start"
	case r == 20:
		// A hole of 40 PSNs to half the window: the packet past it is
		// 64 or more past the expected PSN once holes pile up, and its
		// SACK's bitmap then ends at it.
		gap := 40 + uint32(s.rng.IntN(int(window/2)))
		for i := uint32(0); i < gap; i++ {
			q.skipped = append(q.skipped, (q.rxNext+i)&0xffffff)
		}
		psn, what = (q.rxNext+gap)&0xffffff, "past a long hole"
		q.rxNext = (psn + 1) & 0xffffff
	case r == 21 && len(q.skipped) > 0:
		// The oldest holes filled in order, up to 48 of them, the last
		// one here: the expected PSN then walks over what arrived past
		// them, across words.
		n := min(len(q.skipped), 1+s.rng.IntN(48))
		for _, h := range q.skipped[:n-1] {
			q.rxSent = append(q.rxSent, h)
			s.peerDataFrame(q, h, "filling the oldest hole")
		}
		psn, what = q.skipped[n-1], "filling the oldest hole"
		q.skipped = q.skipped[n:]
	default:
		psn, what = s.rng.Uint32()&0xffffff, "anywhere"
	}
	q.rxSent = append(q.rxSent, psn)
	s.peerDataFrame(q, psn, what)
}

// peerDataFrame: q's peer's data packet psn arrives, sometimes ECN-marked
// or trimmed on the way.
func (s *Scenario) peerDataFrame(q *qp, psn uint32, what string) {
	p := s.plan
	ev, pl := s.peerEV(q)
	dscp := uint8(p.F.DSCP.Trimmable)
	if q.q.SinglePath {
		dscp = uint8(p.F.DSCP.NoTrim)
	}
	innerECN := mrcpkt.ECNECT0
	if s.rng.IntN(10) == 0 {
		innerECN = mrcpkt.ECNNotECT
	}
	outerECN := mrcpkt.ECNECT0
	switch s.rng.IntN(10) {
	case 0, 1:
		outerECN, what = mrcpkt.ECNCE, what+", CE"
	case 2:
		outerECN, what = mrcpkt.ECNECT1, what+", ECT(1)"
	}
	pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local, psn, dscp, innerECN, 0)
	s.arrive(pk, q.q.Peer, pl, ev, outerECN)
	b := s.serialize(pk)
	if s.rng.IntN(8) == 0 {
		b, what = s.trim(b), what+", trimmed"
	}
	s.frame(uint32(pl+1), fmt.Sprintf("peer data QP %#x PSN %#x (%s) EV %#x", q.q.Local, psn, what, ev), b)
}

// trim cuts an arriving data frame as a switch does (docs/protocol.md 6.3).
func (s *Scenario) trim(b []byte) []byte {
	p := s.plan
	n := p.F.Trim.SizeBytes + s.rng.IntN(2)*s.rng.IntN(64)
	dscp := uint8(p.F.DSCP.Trimmed)
	if s.rng.IntN(3) == 0 {
		dscp = uint8(p.F.DSCP.TrimmedLastHop)
	}
	return mrcpkt.Trim(b, n, dscp)
}

// probeAnswer: the answer to a probe the NIC sent, if its path works now;
// or, rarely, an answer to a probe it never sent.
func (s *Scenario) probeAnswer(q *qp) {
	ev := uint32(0)
	switch {
	case len(q.probes) > 0:
		i := s.rng.IntN(len(q.probes))
		ev = q.probes[i]
		q.probes = append(q.probes[:i], q.probes[i+1:]...)
		if !s.alive(ev) {
			return
		}
	default:
		ev, _ = s.peerEV(q)
		set := uint32(len(s.plan.EVSet()))
		ev = ev&^0x3ffff | uint32(s.rng.IntN(int(2*set+2))) // any slot, backup or none
	}
	p := s.plan
	pl := p.SplitEV(plan.EV(ev)).Plane % p.F.Planes
	pk := &mrcpkt.Packet{
		Ethernet: s.macs(),
		Inner:    mrcpkt.IPv6{Src: q.q.Peer, Dst: p.HostAddr(s.host), DSCP: uint8(p.F.DSCP.Control), HopLimit: mrcpkt.HopLimit},
		UDP:      mrcpkt.UDP{DstPort: mrcpkt.PortRoCEv2},
		BTH:      mrcpkt.BTH{Opcode: mrcpkt.OpProbeAnswer, DstQP: q.q.Local, PSN: s.rng.Uint32() & 0xffffff},
		PETH:     &mrcpkt.PETH{EV: ev},
	}
	s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNNotECT)
	s.frame(uint32(pl+1), fmt.Sprintf("probe answer QP %#x EV %#x", q.q.Local, ev), s.serialize(pk))
}

// peerProbe: q's peer probes one of its EVs.
func (s *Scenario) peerProbe(q *qp) {
	p := s.plan
	ev, pl := s.peerEV(q)
	pk := &mrcpkt.Packet{
		Ethernet: s.macs(),
		Inner:    mrcpkt.IPv6{Src: q.q.Peer, Dst: p.HostAddr(s.host), DSCP: uint8(p.F.DSCP.Control), HopLimit: mrcpkt.HopLimit},
		UDP:      mrcpkt.UDP{DstPort: mrcpkt.PortRoCEv2},
		BTH:      mrcpkt.BTH{Opcode: mrcpkt.OpProbe, DstQP: q.q.Local, AckReq: true, PSN: s.rng.Uint32() & 0xffffff},
	}
	s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNNotECT)
	s.frame(uint32(pl+1), fmt.Sprintf("peer probe QP %#x EV %#x", q.q.Local, ev), s.serialize(pk))
}

// garbage: a frame the NIC must drop, or one that is odd but valid.
func (s *Scenario) garbage() {
	p := s.plan
	q := s.pick()
	planes := p.F.Planes
	switch s.rng.IntN(11) {
	case 0: // random bytes (at least one: an empty frame never reaches a pipeline, BMv2's or a NIC's)
		b := make([]byte, 1+s.rng.IntN(159))
		for i := range b {
			b[i] = byte(s.rng.Uint32())
		}
		s.frame(uint32(s.rng.IntN(planes+2)), fmt.Sprintf("%d random bytes", len(b)), b)
	case 1: // a valid arriving frame cut short
		ev, pl := s.peerEV(q)
		pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local, q.rxNext, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNECT0)
		b := s.serialize(pk)
		b = b[:1+s.rng.IntN(133)]
		s.frame(uint32(pl+1), fmt.Sprintf("arriving data cut to %d bytes", len(b)), b)
	case 2: // not for this NIC port: another uDL, or a uSID left
		ev, pl := s.peerEV(q)
		pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local, q.rxNext, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNECT0)
		b := s.serialize(pk)
		d := mrcpkt.EthernetLen + 24
		if s.rng.IntN(2) == 0 {
			b[d+5] ^= 1 << s.rng.IntN(8)
		} else {
			b[d+6+s.rng.IntN(10)] = byte(1 + s.rng.IntN(255))
		}
		s.frame(uint32(pl+1), "data for another NIC port", b)
	case 3: // on the wrong plane's port, or on a port facing no plane
		ev, pl := s.peerEV(q)
		pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local, q.rxNext, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNECT0)
		port := uint32((pl+1)%planes + 1)
		if s.rng.IntN(2) == 0 {
			port = uint32(planes + 1 + s.rng.IntN(3))
		}
		s.frame(port, fmt.Sprintf("plane %d's data on port %d", pl, port), s.serialize(pk))
	case 4: // not IPv6, not UDP 4791, not an MRC opcode, outer not IPv6-in-IPv6
		ev, pl := s.peerEV(q)
		pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local, q.rxNext, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNECT0)
		b := s.serialize(pk)
		port := uint32(pl + 1)
		if s.rng.IntN(3) == 0 {
			b = b[:mrcpkt.EthernetLen+copy(b[mrcpkt.EthernetLen:], b[mrcpkt.EthernetLen+mrcpkt.IPv6Len:])]
			port = 0 // as if from the host
		}
		o := 0
		if port != 0 {
			o = mrcpkt.IPv6Len
		}
		switch s.rng.IntN(4) {
		case 0:
			binary.BigEndian.PutUint16(b[12:], 0x0800)
		case 1:
			binary.BigEndian.PutUint16(b[mrcpkt.EthernetLen+o+mrcpkt.IPv6Len+2:], 4790)
		case 2:
			b[mrcpkt.EthernetLen+o+mrcpkt.IPv6Len+mrcpkt.UDPLen] = byte(s.rng.IntN(0xc6))
		case 3:
			b[mrcpkt.EthernetLen+6] = byte(s.rng.IntN(41))
		}
		s.frame(port, "not an MRC frame", b)
	case 5: // the host sends an answer, or a probe: only data is the host's
		ops := []uint8{mrcpkt.OpSACK, mrcpkt.OpNACK, mrcpkt.OpProbe, mrcpkt.OpProbeAnswer}
		op := ops[s.rng.IntN(len(ops))]
		pk := &mrcpkt.Packet{
			Inner: mrcpkt.IPv6{Src: p.HostAddr(s.host), Dst: q.q.Peer, DSCP: uint8(p.F.DSCP.Control), HopLimit: mrcpkt.HopLimit},
			UDP:   mrcpkt.UDP{DstPort: mrcpkt.PortRoCEv2},
			BTH:   mrcpkt.BTH{Opcode: op, DstQP: q.q.PeerQP},
		}
		switch op {
		case mrcpkt.OpSACK:
			pk.SETH = &mrcpkt.SETH{}
		case mrcpkt.OpNACK:
			pk.NETH = &mrcpkt.NETH{Reason: mrcpkt.NACKTrimmed}
		case mrcpkt.OpProbeAnswer:
			pk.PETH = &mrcpkt.PETH{}
		}
		s.frame(0, fmt.Sprintf("host sends opcode %#x", op), s.serialize(pk))
	case 6: // the host's data for a QP the NIC does not know
		pk := s.data(p.HostAddr(s.host), q.q.Peer, q.q.PeerQP^0x5a5a, 7, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.frame(0, "host data for an unknown QP", s.serialize(pk))
	case 7: // data arriving for an unknown QP
		ev, pl := s.peerEV(q)
		pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local^0x3c3c, 7, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNECT0)
		s.frame(uint32(pl+1), "data for an unknown QP", s.serialize(pk))
	case 8: // an answer from a peer whose row or port has no template
		ev, pl := s.peerEV(q)
		peer := q.q.Peer.As16()
		peer[13] ^= 0x40 // a row beyond the fabric
		if s.rng.IntN(2) == 0 {
			peer[12], peer[13], peer[14], peer[15] = 0, byte(s.rng.IntN(2)), 0, 0 // down port field 0: port -1
		}
		src := netip.AddrFrom16(peer)
		pk := s.data(src, p.HostAddr(s.host), q.q.Local, q.rxNext, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, src, pl, ev, mrcpkt.ECNECT0)
		s.frame(uint32(pl+1), "data from an address with no path back", s.serialize(pk))
	case 9: // an EV with a T1 beyond the fabric
		_, pl := s.peerEV(q)
		f := plan.EVFields{Plane: pl, T1: p.F.T1Count + s.rng.IntN(3), Salt: s.rng.IntN(1 << 10)}
		ev := uint32(p.MakeEV(f))
		pk := s.data(q.q.Peer, p.HostAddr(s.host), q.q.Local, q.rxNext, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
		s.arrive(pk, q.q.Peer, pl, ev, mrcpkt.ECNECT0)
		s.frame(uint32(pl+1), fmt.Sprintf("data on EV %#x (T1 %d)", ev, f.T1), s.serialize(pk))
	default: // a hop limit and MACs the NIC ignores; SACK for an old epoch's PSN
		s.echo(q)
	}
}

// evState: the controller marks an EV, or every EV of a (plane, T1), ASSUMED_BAD
// or DENIED, or takes an entry away.
func (s *Scenario) evState() {
	p := s.plan
	if len(s.evStates) > 0 && s.rng.IntN(3) == 0 {
		i := s.rng.IntN(len(s.evStates))
		e := s.evStates[i]
		s.evStates = append(s.evStates[:i], s.evStates[i+1:]...)
		s.pending = append(s.pending, Step{What: "ev_state: remove an entry", Write: true, Op: nicmodel.Delete, Entries: []entry.Entry{e}})
		return
	}
	t := s.prog.Table(schema.NICEVState)
	action := "ev_assumed_bad"
	if s.rng.IntN(2) == 0 {
		action = "ev_denied"
	}
	f := plan.EVFields{Plane: s.rng.IntN(p.F.Planes), T1: s.rng.IntN(p.F.T1Count)}
	mask := uint32(p.MakeEV(plan.EVFields{Plane: 1<<p.F.EV.PlaneBits - 1, T1: 1<<p.F.EV.T1Bits - 1}))
	if s.rng.IntN(3) == 0 {
		f.Salt = s.rng.IntN(2 * len(p.EVSet()))
		mask = ^uint32(0)
	}
	value := uint32(p.MakeEV(f)) & mask
	prio := int32(1 + s.rng.IntN(1000))
	for _, o := range s.evStates {
		if o.Match[0].Value == uint64(value) && o.Match[0].Mask == uint64(mask) {
			return // P4Runtime keys a ternary entry by value, mask and priority: keep one per (value, mask)
		}
	}
	var e entry.Entry
	for _, r := range t.Actions {
		if r.Action.Name == action {
			e = entry.Entry{Table: t, Action: r.Action, Match: []entry.Match{{Value: uint64(value), Mask: uint64(mask)}}, Priority: prio}
		}
	}
	s.evStates = append(s.evStates, e)
	s.pending = append(s.pending, Step{What: fmt.Sprintf("ev_state: %s %#x/%#x", action, value, mask), Write: true, Op: nicmodel.Insert, Entries: []entry.Entry{e}})
}

// reopen closes a QP and opens it again under a new epoch: its state must
// start afresh.
func (s *Scenario) reopen() {
	if s.sendMostly {
		return // a dead plane's QP keeps its state: its slots must fail
	}
	q := s.qps[s.rng.IntN(len(s.qps))]
	if q.open {
		s.closeQP(q)
	}
	if s.rng.IntN(3) > 0 {
		s.openQP(q, "reopen")
	}
}

// outOfRange writes a QP entry the program must not trust (a state index
// past its registers, a T1 offset of T1 count or more) and sends it a
// packet each way.
func (s *Scenario) outOfRange() {
	if len(s.badQP) > 0 {
		return
	}
	p := s.plan
	local, peerQP := s.qpn(), s.qpn()
	var peer plan.Host
	for peer = s.host; peer == s.host; {
		peer = p.HostByIndex(s.rng.IntN(p.F.Hosts()))
	}
	index, offset, first := uint64(schema.NICMaxQPs+s.rng.IntN(1000)), uint64(0), uint64(0)
	switch s.rng.IntN(3) {
	case 0:
		index, offset = uint64(s.rng.IntN(schema.NICMaxQPs)), uint64(p.F.T1Count+s.rng.IntN(2*p.F.T1Count))
	case 1:
		index, first = uint64(s.rng.IntN(schema.NICMaxQPs)), uint64(len(p.EVSet())+s.rng.IntN(100))
	}
	a := p.HostAddr(peer).As16()
	host := uint64(binary.BigEndian.Uint32(a[12:]))
	send, err := qpentry.Make(s.prog, schema.NICQPSend, schema.NICSetSendQPAction,
		[]entry.Match{{Value: host}, {Value: uint64(peerQP)}}, index, offset, 1, uint64(s.rng.IntN(2)), first)
	if err != nil {
		panic(fmt.Sprintf("nicscenario: %v", err))
	}
	recv, err := qpentry.Make(s.prog, schema.NICQPRecv, schema.NICSetRecvQPAction,
		[]entry.Match{{Value: uint64(local)}}, index, uint64(peerQP), 1, 0)
	if err != nil {
		panic(fmt.Sprintf("nicscenario: %v", err))
	}
	s.badQP = []entry.Entry{send, recv}
	s.pending = append(s.pending, Step{What: fmt.Sprintf("QP entries out of range (index %d, T1 offset %d, first slot %d)", index, offset, first),
		Write: true, Op: nicmodel.Insert, Entries: s.badQP})
	pk := s.data(p.HostAddr(s.host), p.HostAddr(peer), peerQP, 1, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
	s.frame(0, "host data on the out-of-range QP", s.serialize(pk))
	ev, pl := s.peerEV(&qp{})
	pk = s.data(p.HostAddr(peer), p.HostAddr(s.host), local, 0, uint8(p.F.DSCP.Trimmable), mrcpkt.ECNECT0, 0)
	s.arrive(pk, p.HostAddr(peer), pl, ev, mrcpkt.ECNECT0)
	s.frame(uint32(pl+1), "peer data on the out-of-range QP", s.serialize(pk))
}

// healOrBreak: a dead path comes back, or a live one dies.
func (s *Scenario) healOrBreak() {
	p := s.plan
	k := [2]int{s.rng.IntN(p.F.Planes), s.rng.IntN(p.F.T1Count)}
	s.dead[k] = !s.dead[k]
}
