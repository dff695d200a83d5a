package transport

import (
	"context"
	"fmt"
	"math/bits"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// WriteRequest is one RDMA Write: Data into the peer's memory region
// (RemoteVAddr, RKey).
type WriteRequest struct {
	Data        []byte // not copied: keep it unchanged until the write completes
	RemoteVAddr uint64
	RKey        uint32
	// Length, with Data nil, writes Length bytes whose content is not
	// carried: on an engine with Config.VirtualPayload only (a simulator's
	// seam), its frames are headers whose lengths count the payload.
	Length int
	// SendLimit, when above 0, holds the write's first sends before packet
	// SendLimit until Transfer.SetSendLimit raises it: what was sent is
	// still answered and resent, nothing new goes. A lab applies a scenario
	// step at an exact packet so (a link cut after 256 first sends, not
	// after however many went while it looked).
	SendLimit int
}

// Transfer is the sender's side of one write in progress or done.
type Transfer struct {
	e      *Engine
	q      *QP
	data   []byte
	size   int // bytes: len(data), or the virtual write's Length
	vaddr  uint64
	rkey   uint32
	seg    int
	n      int    // packets
	limit  int    // first sends stop before it (n: none held; SetSendLimit)
	start  uint32 // PSN of packet 0
	window int
	d      int // reorder threshold
	roce   bool

	una  int // every packet below it is acked (the sender's cum_psn + 1)
	next int // next packet never sent
	hi   int // highest packet known acked, -1 before any

	// ring holds the state of the last len(ring) packets sent, packet i
	// at i&mask (pkt): the window [una, next), which is never more than
	// window packets, and as many below it, for late answers (onSACK).
	// Every packet below una is acked and every packet from next on was
	// never sent, so a write's state is O(window), whatever its length.
	ring     []pktState
	mask     int
	inflight int // packets sent and not acked (the SACK state)
	// sendLog holds the sends from sendHead on, oldest first, but for
	// some that can never count again (compactSendLog): the RTO's
	// deadline is its first entry still in flight, found without walking
	// the window (oldestInFlight).
	sendLog  []sendRecord
	sendHead int
	// Under DCTCP or Delay a trimmed packet's resend waits for room in the
	// congestion window, as a new packet does: trimQ holds the NACKed
	// packets not resent yet, pktOut marks them (out of the network, so
	// out of the window's count), nOut counts them. A packet is queued
	// only while not out, and stays out until it is resent (popped) or
	// acked, and while trimQ is not empty no new packet goes: so trimQ
	// holds distinct packets of the window, at most window of them.
	trimQ []int
	nOut  int

	// A go-back-N round (RoCE) resends [rsNext, rsEnd) in order, as the
	// pacer lets it (at once without DCQCN), counting each in *rsCause.
	rsNext, rsEnd int
	rsCause       *int64
	ccBase        time.Duration // t0 since the QP was opened: congestion control's clock

	rtt   *rttEstimator // the QP's: what one write learns of the paths, the next starts from
	reoAt time.Duration // when the SACK-gap rule must look again, noTime if never
	// Tail-loss probe (MRC): quietSince is the last send of a packet the
	// receiving NIC answers at once, or the last SACK that acked something
	// new; probeAt when the last probe
	// went (noTime: none yet), probeIdx the packet it resent and probeSeq
	// its transmission number.
	quietSince time.Duration
	probeAt    time.Duration
	probeIdx   int
	probeSeq   uint64
	gbnAt      time.Duration // last go-back-N (RoCE), noTime if none
	gbnUna     int
	t0         time.Duration // since the engine's origin
	stats      Stats
	done       chan struct{}
	isComplete bool
	waitingNIC bool // queued in the engine's transmit scheduler
	// dlAt, dlOK: deadline's answer, valid (dlValid) until the write's
	// state changes, which only onSACK, onNACK, onTimer and pump do. An
	// engine with hundreds of QPs asks for the next deadline after every
	// frame; recomputing each QP's walks its whole window.
	dlAt    time.Duration
	dlOK    bool
	dlValid bool
}

const noTime = time.Duration(-1 << 62)

// sendRecord is one send of packet i, the QP's transmission number seq.
type sendRecord struct {
	i   int32
	seq uint64
}

// pktState is what the sender knows of one packet it has sent.
type pktState struct {
	lastSent time.Duration // since t0
	prevSent time.Duration // the send before the last, since t0 (once sent twice)
	rackAt   time.Duration // last SACK-gap resend, noTime if none
	seq      uint64        // transmission number (QP.txSeq) of the last send
	sends    uint16        // saturating
	flags    pktFlags
}

type pktFlags uint8

const (
	pktAcked pktFlags = 1 << iota
	// pktOut: trimmed, its resend waiting in trimQ (setOut).
	pktOut
	// pktAskedAck: its last send carried BTH's ack request. The receiving
	// NIC answers those at once, the others it may answer later, with a
	// SACK for a later packet (coalescing).
	pktAskedAck
	// pktAnswered: a SACK has answered it (its PSN the packet's).
	pktAnswered
	// pktMissing: a SACK whose bitmap covers the packet showed it missing
	// since its last send. A receive window wider than one bitmap (64
	// PSNs) puts only 64 of its PSNs in each SACK, so a packet no SACK
	// has covered may have arrived unreported: the SACK-gap rule takes
	// only a packet shown missing for lost.
	pktMissing
)

// ringSize is how many packets' state a write keeps: a power of two (pkt
// masks the index) of at least twice the window. The window [una, next)
// needs window entries; the others keep the packets just below una for
// the answers that come after una passed them. When packet a was last
// sent, next was at most a + window. Where answers come back in the
// order of the sends (one path), the sender has had, when a's comes,
// answers to earlier sends only, which ack nothing from that next on: una
// is at most that next, next at most a window beyond it, and a at most
// twice the window below next. Sprayed answers may cross by more, rarely:
// in the simulator's runs (small, MRC and RoCE, with cuts, flaps, loss
// and incasts, window 64) none came more than 127 packets below next. An
// answer to a packet further below finds it forgotten (onSACK). A write
// of fewer packets keeps no more entries than it has packets.
func ringSize(packets, window int) int {
	return 1 << bits.Len(uint(min(packets, 2*window)-1))
}

// Write starts an RDMA Write of req.Data on the QP and queues its first
// window of packets. PSNs continue from the QP's previous write (the first
// starts at QPConfig.StartPSN). A QP runs one write at a time.
func (q *QP) Write(req WriteRequest) (*Transfer, error) {
	e := q.e
	name := fmt.Sprintf("write on QP %#x of %v", q.cfg.LocalQPN, e.cfg.Addr)
	size := len(req.Data)
	switch {
	case req.Data != nil && req.Length != 0:
		return nil, fmt.Errorf("%s: both Data and Length given", name)
	case req.Data == nil && req.Length > 0 && !e.cfg.VirtualPayload:
		return nil, fmt.Errorf("%s: a write without Data needs an engine with VirtualPayload", name)
	case req.Data == nil:
		size = req.Length
	}
	if size <= 0 {
		return nil, fmt.Errorf("%s: empty buffer", name)
	}
	seg := q.cfg.Segment
	n := (size + seg - 1) / seg
	if n > MaxPackets {
		return nil, fmt.Errorf("%s: %d bytes is %d packets of %d, more than %d", name, size, n, seg, MaxPackets)
	}
	if req.SendLimit < 0 {
		return nil, fmt.Errorf("%s: send limit %d is negative", name, req.SendLimit)
	}
	if req.RemoteVAddr+uint64(size) < req.RemoteVAddr {
		return nil, fmt.Errorf("%s: remote address %#x + %d bytes overflows", name, req.RemoteVAddr, size)
	}
	e.lock()
	defer e.unlock()
	if q.active != nil {
		return nil, fmt.Errorf("%s: %w", name, errBusy)
	}
	now := e.now()
	t := &Transfer{
		e: e, q: q, data: req.Data, size: size, vaddr: req.RemoteVAddr, rkey: req.RKey,
		seg: seg, n: n, limit: sendLimit(req.SendLimit, n), start: q.nextPSN, window: q.cfg.Window, d: q.cfg.ReorderThreshold,
		roce:    q.cfg.Mode == RoCE,
		hi:      -1,
		rtt:     &q.rtt,
		gbnAt:   noTime,
		reoAt:   noTime,
		probeAt: noTime,
		t0:      now,
		ccBase:  now - q.epoch,
		done:    make(chan struct{}),
	}
	t.ring = make([]pktState, ringSize(n, t.window))
	t.mask = len(t.ring) - 1
	t.stats = Stats{Mode: q.cfg.Mode, Bytes: int64(size), Packets: int64(n), Start: e.at(now)}
	t.stats.Congestion = Congestion{Algorithm: q.cc.kind, MinWindow: q.cc.cwnd, MinRate: q.cc.rc}
	q.nextPSN = PSNAdd(q.nextPSN, n)
	q.active = t
	t.pump(0)
	e.queued()
	return t, nil
}

// sendLimit is the packet first sends stop before: n unless a limit below
// it holds them (0 is none).
func sendLimit(limit, n int) int {
	if limit <= 0 || limit > n {
		return n
	}
	return limit
}

// SetSendLimit moves the packet the write's first sends stop before
// (WriteRequest.SendLimit): raising it lets them go on at once, 0 or the
// write's packet count or more releases them all. It cannot take back what
// was sent: a limit below the packets already sent holds the rest.
func (t *Transfer) SetSendLimit(limit int) {
	t.e.lock()
	defer t.e.unlock()
	if t.isComplete {
		return
	}
	t.limit = sendLimit(limit, t.n)
	t.pump(t.e.now() - t.t0)
	t.e.queued()
}

// StartPSN is the PSN of the write's first packet.
func (t *Transfer) StartPSN() uint32 { return t.start }

// Done is closed when every packet is acked.
func (t *Transfer) Done() <-chan struct{} { return t.done }

// Complete reports whether every packet is acked, as Done's being closed
// does, without a channel: a simulator asks it after every SACK, and the
// channel is an allocation of its own, a cache miss each time at scale.
func (t *Transfer) Complete() bool {
	t.e.lock()
	defer t.e.unlock()
	return t.isComplete
}

// Stats returns the write's statistics so far.
func (t *Transfer) Stats() Stats {
	t.e.lock()
	defer t.e.unlock()
	s := t.stats
	s.SRTT, s.RTTVar, s.RTO = t.rtt.srtt, t.rtt.rttvar, t.rtt.rto
	if !t.isComplete {
		t.q.cc.report(&s.Congestion)
	}
	return s
}

// SetNICEvents records the NIC's EV events over the write (from counters
// the caller read before and after it).
func (t *Transfer) SetNICEvents(ev NICEvents) {
	t.e.lock()
	defer t.e.unlock()
	t.stats.NIC = ev
}

// Wait blocks until the write completes or ctx ends.
func (t *Transfer) Wait(ctx context.Context) (Stats, error) {
	select {
	case <-t.done:
		return t.Stats(), nil
	case <-ctx.Done():
		return t.Stats(), fmt.Errorf("write of %d bytes on QP %#x: %w", t.size, t.q.cfg.LocalQPN, ctx.Err())
	}
}

// pkt is packet i's state: valid while remembered(i), which every packet
// of the window [una, next) is.
func (t *Transfer) pkt(i int) *pktState { return &t.ring[i&t.mask] }

// remembered reports whether packet i of the write was sent and its entry
// in the ring is still its own: it is among the last len(ring) packets
// sent. (A negative i is an answer to the QP's previous write.)
func (t *Transfer) remembered(i int) bool { return i < t.next && i >= max(0, t.next-len(t.ring)) }

// isAcked: every packet below una is, none from next on (never sent).
func (t *Transfer) isAcked(i int) bool {
	if i < t.una {
		return true
	}
	return i < t.next && t.pkt(i).flags&pktAcked != 0
}

// setAcked marks packet i, in the window, acked and reports whether it was
// news.
func (t *Transfer) setAcked(i int) bool {
	p := t.pkt(i)
	if p.flags&pktAcked != 0 {
		return false
	}
	p.flags |= pktAcked
	t.inflight--
	t.setOut(i, false)
	if i > t.hi {
		t.hi = i
	}
	return true
}

func (t *Transfer) opcode(i int) uint8 {
	switch {
	case t.n == 1:
		return mrcpkt.OpWriteOnlyImm
	case i == 0:
		return mrcpkt.OpWriteFirst
	case i == t.n-1:
		return mrcpkt.OpWriteLastImm
	}
	return mrcpkt.OpWriteMiddle
}

// asksAnswer reports whether the next new packet asks for an answer at
// once: the write's last does, and one after which the window lets
// nothing more go, when that window is below AckEvery. The receiving NIC
// answers an in-order packet only when its PSN is AckEvery - 1 modulo
// AckEvery, so once everything sent has arrived at most AckEvery - 1
// packets wait for their SACK; a window of AckEvery or more still has
// room for the packet that brings it, a smaller one would wait for the
// RTO. Asking on every window-closing packet would answer every packet of
// a window-limited sender, which is most of the time, and undo the
// coalescing.
func (t *Transfer) asksAnswer() bool {
	if t.next+1 >= t.limit {
		return true
	}
	win := min(t.window, t.q.cc.sendWindow())
	if win >= t.q.cfg.AckEvery {
		return false
	}
	return t.next+1 >= t.una+t.window || t.inWindow()+1 >= t.q.cc.sendWindow()
}

// send queues packet i. Its RETH describes that packet alone: the address
// of its own payload, the rkey, and its own payload length. ackReq sets
// BTH's ack request bit, which the receiving NIC answers at once instead
// of coalescing the SACK (docs/protocol.md 5): on every resend, which the
// sender waits on, and where asksAnswer says.
func (t *Transfer) send(i int, flags uint8, ackReq bool, now time.Duration) {
	off := i * t.seg
	end := min(off+t.seg, t.size)
	var f []byte
	if t.data == nil {
		f = appendDataHeader(t.q.e.headerFrame(), t.q.tmpl, t.opcode(i), PSNAdd(t.start, i), flags, t.vaddr+uint64(off), t.rkey, end-off)
	} else {
		f = make([]byte, 0, dataHdrLen+end-off)
		f = appendData(f, t.q.tmpl, t.opcode(i), PSNAdd(t.start, i), flags, t.vaddr+uint64(off), t.rkey, t.data[off:end])
	}
	p := t.pkt(i)
	p.flags &^= pktMissing
	if ackReq {
		f[offBTH+8] |= mrcpkt.BTHAckReq
		p.flags |= pktAskedAck
	} else {
		p.flags &^= pktAskedAck
	}
	if t.answeredAtOnce(i) {
		// The receiving NIC answers this one at once: the tail-loss
		// probe waits two SRTTs from it. A packet it coalesces is
		// answered with a later one, which may leave only when its QP's
		// turn at the NIC comes.
		t.quietSince = now
	}
	t.e.out = append(t.e.out, f)
	if p.sends < ^uint16(0) {
		p.sends++
	}
	p.prevSent = p.lastSent
	p.lastSent = now
	t.q.txSeq++
	p.seq = t.q.txSeq
	if len(t.sendLog) >= 4*max(t.window, 64) {
		t.compactSendLog() // nothing asked for a deadline lately: keep the log short anyway
	}
	t.sendLog = append(t.sendLog, sendRecord{int32(i), t.q.txSeq})
	t.stats.PacketsSent++
	t.q.cc.sent(t.ccBase+now, dataHdrLen+end-off)
	t.e.nicTake(t.t0+now, dataHdrLen+end-off)
}

// sendNew sends packet next, the first send of it. Every packet sent is
// below una + window (the NIC's receive window), so that [una, next) never
// holds more than window packets, which the ring's size counts on: a new
// packet only ever goes here, and resends (go-back-N rounds, tail probes,
// SACK-gap, timeout and trimmed resends) only send packets of [una, next).
func (t *Transfer) sendNew(ackReq bool, now time.Duration) {
	if t.next >= t.una+t.window {
		panic(fmt.Sprintf("transport: packet %d sent beyond the window [%d, %d+%d)", t.next, t.una, t.una, t.window))
	}
	// The entry was packet next-len(ring)'s, below una - window by now.
	*t.pkt(t.next) = pktState{rackAt: noTime}
	t.send(t.next, 0, ackReq, now)
	t.next++
	t.inflight++
}

// retransmit resends packet i unless the SACK state covers it.
func (t *Transfer) retransmit(i int, cause *int64, now time.Duration) bool {
	return t.resend(i, mrcpkt.METHRetransmission, cause, now)
}

// resend sends packet i again with METH flags unless the SACK state
// covers it.
func (t *Transfer) resend(i int, flags uint8, cause *int64, now time.Duration) bool {
	if t.isAcked(i) {
		return false
	}
	t.setOut(i, false)
	t.send(i, flags, true, now)
	*cause++
	return true
}

// setOut marks packet i, in the window, out of the network (trimmed, its
// resend waiting) or back in it.
func (t *Transfer) setOut(i int, out bool) {
	p := t.pkt(i)
	switch {
	case out && p.flags&pktOut == 0:
		p.flags |= pktOut
		t.nOut++
	case !out && p.flags&pktOut != 0:
		p.flags &^= pktOut
		t.nOut--
	}
}

// isOut: a packet below una is acked, which took it back in (setAcked).
func (t *Transfer) isOut(i int) bool {
	return i >= t.una && i < t.next && t.pkt(i).flags&pktOut != 0
}

// inWindow is what the congestion window counts: packets sent and neither
// acked nor known to be out of the network.
func (t *Transfer) inWindow() int { return t.inflight - t.nOut }

// pump sends what may go: first what a go-back-N round still has to
// resend, then new packets while the window allows: fewer than Window past
// the last cumulative ack (which keeps every PSN below cum_psn + 65), and
// fewer unacked than the congestion window. DCQCN's pacer holds either
// back until its time; the deadline brings the engine back then.
func (t *Transfer) pump(now time.Duration) {
	t.invalidateDeadline()
	cc := &t.q.cc
	cnow := t.ccBase + now
	cc.advance(cnow)
	// nicBusy: the NIC cannot take a packet now; the engine's transmit
	// scheduler brings the write back in its turn.
	nicBusy := func() bool {
		if t.e.nicFree(t.t0 + now) {
			return false
		}
		t.e.wait(t)
		return true
	}
	for t.rsNext < t.rsEnd {
		if !cc.mayRelease(cnow) || nicBusy() {
			return
		}
		i := t.rsNext
		t.rsNext++
		if i >= t.una {
			t.send(i, mrcpkt.METHRetransmission, t.rsNext == t.rsEnd, now)
			*t.rsCause++
		}
	}
	for len(t.trimQ) > 0 && t.inWindow() < cc.sendWindow() {
		if nicBusy() {
			return
		}
		t.resendTrimmed(now)
	}
	for t.next < t.limit && t.next < t.una+t.window && t.inWindow() < cc.sendWindow() && len(t.trimQ) == 0 {
		if !cc.mayRelease(cnow) || nicBusy() {
			return
		}
		t.sendNew(t.asksAnswer(), now)
	}
	// The window is shut with something left to send: if no packet in the
	// network is sure to be answered, one asking packet goes beyond it
	// (answerComing says why).
	if len(t.trimQ) == 0 && t.next >= t.limit || t.answerComing() || nicBusy() {
		return
	}
	switch {
	case len(t.trimQ) > 0:
		t.resendTrimmed(now)
	case t.next < t.una+t.window && cc.mayRelease(cnow):
		t.sendNew(true, now)
	}
}

// resendTrimmed resends the oldest trimmed packet waiting for the window.
func (t *Transfer) resendTrimmed(now time.Duration) {
	i := t.trimQ[0]
	t.trimQ = t.trimQ[1:]
	if t.isOut(i) {
		t.retransmit(i, &t.stats.Retransmits.TrimNACK, now)
	}
}

// answeredAtOnce reports whether the receiving NIC answers packet i as
// soon as it arrives (docs/protocol.md 5): it asked (BTH ack request), its
// PSN is the last of an AckEvery group, or it is the write's last.
func (t *Transfer) answeredAtOnce(i int) bool {
	a := uint32(t.q.cfg.AckEvery)
	return t.pkt(i).flags&pktAskedAck != 0 || PSNAdd(t.start, i)%a == a-1 || i == t.n-1
}

// answerComing reports whether a packet in the network is sure to be
// answered at once (answeredAtOnce). Its SACK then acks it and every
// packet before it that arrived, and the window moves. Without one, the
// packets in flight may all have arrived in order and wait, at the
// receiving NIC, for a SACK that only a later packet would bring: a trim
// can take the packet that would have brought it and shrink the window
// below what is still in flight. Then the window would stay shut until
// the RTO, so a trimmed packet's resend, which asks for an answer and
// whose SACK acks them all, goes beyond the window: one packet at most,
// as after it an answer is coming.
func (t *Transfer) answerComing() bool {
	for i := t.next - 1; i >= t.una; i-- { // the newest first: one in A is answered
		if t.isAcked(i) || t.isOut(i) {
			continue
		}
		if t.answeredAtOnce(i) {
			return true
		}
	}
	return false
}

// held reports whether the pacer holds back a packet that could go
// otherwise.
func (t *Transfer) held() bool {
	return t.rsNext < t.rsEnd || t.next < t.limit && t.next < t.una+t.window && t.inWindow() < t.q.cc.sendWindow()
}

// pending reports whether packet i waits in a go-back-N round, not yet
// resent: its timer has not started.
func (t *Transfer) pending(i int) bool { return i >= t.rsNext && i < t.rsEnd }

// onSACK applies one SACK: its cumulative PSN and (MRC) bitmap, an RTT
// sample when it answers a packet sent once, then the loss rules.
func (t *Transfer) onSACK(r *rxFrame, now time.Duration) {
	t.invalidateDeadline()
	t.stats.SACKs++
	marked := r.mark == mrcpkt.MarkSkipOnce
	if marked {
		t.stats.Congestion.Marks++
	}
	a := PSNDiff(r.psn, t.start) // the packet this SACK answers
	inflight := t.inflight
	// delaySample is the RTT Delay reacts to: a first send's, and only of
	// a packet the receiving NIC answers at once. A coalesced answer waits
	// for later packets of the QP, up to AckEvery-1 of them, which is the
	// sender's pace and not the path's queue.
	delaySample := time.Duration(-1)
	// An answer to a packet the ring has forgotten (a >= 0 but not
	// remembered: sent more than len(ring) packets before next, at least a
	// window below una) teaches nothing: the packet is acked, and whether
	// an earlier SACK answered it is forgotten with it. It counts as no
	// duplicate (it may as well be a first answer that crossed a later
	// one, as below, as a late copy's), gives no RTT sample (Karn's rule:
	// an acked packet gives none anyway) and no late copy's delay (its
	// sends' times are gone); the congestion control takes it for the
	// answer to a send older than any it remembers (sentSeq). Its
	// cumulative ack and bitmap still count.
	if t.remembered(a) {
		// A second answer to the same packet means a second copy
		// arrived. An answer to a packet already acked does not: another
		// packet's SACK, sent after this one's, may have come back first
		// on a faster path and acked it through its bitmap. Taken for a
		// late copy, such a packet whose first copy was lost and whose
		// resend was answered would widen the reorder window by the
		// loss's whole recovery time (on a flapping link it grew from 5 to
		// 38 µs), and every later SACK-gap resend would wait that long.
		p := t.pkt(a)
		first := p.flags&pktAnswered == 0
		p.flags |= pktAnswered
		if t.isAcked(a) && !first {
			t.stats.Duplicates++
			if p.sends > 1 {
				// Another copy was answered first. The SACK does not say
				// which copy this is: the engine takes it for the one
				// sent before the last send, the copy whose resend
				// proved needless, late by now - prevSent. If it is the
				// last copy instead (the one before it was acked
				// first, after the resend went out), this overstates
				// that copy's delay by less than the last copy's RTT.
				// Measured from the first send instead, the delay
				// would grow with every resend: the time the packet
				// spent trimmed or lost, not a path's delay.
				t.rtt.late(now - p.prevSent)
			}
		} else if !t.isAcked(a) && p.sends == 1 { // Karn: no sample from a resent packet
			r := now - p.lastSent
			t.rtt.sample(r)
			if t.answeredAtOnce(a) {
				delaySample = r
			}
		}
	}
	c := min(PSNDiff(r.cum, t.start), t.next-1)
	for i := t.una; i <= c; i++ {
		t.setAcked(i)
	}
	if !t.roce {
		// bit i = PSN base + i arrived. A RoCE sender has no SACK: it
		// believes the cumulative ack alone.
		base := PSNDiff(r.base, t.start)
		for bm := r.bitmap; bm != 0; bm &= bm - 1 {
			if j := base + bits.TrailingZeros64(bm); j >= t.una && j < t.next {
				t.setAcked(j)
			}
		}
		// And the packets its 64 bits show missing (pktMissing).
		for miss := ^r.bitmap; miss != 0; miss &= miss - 1 {
			j := base + bits.TrailingZeros64(miss)
			if j >= t.next {
				break
			}
			if j >= t.una && !t.isAcked(j) {
				t.pkt(j).flags |= pktMissing
			}
		}
	}
	for t.una < t.next && t.isAcked(t.una) {
		t.una++
	}
	if t.inflight < inflight {
		t.quietSince = now
	}
	if cc := &t.q.cc; marked && cc.kind == DCQCN {
		if cc.cnp(t.ccBase + now) {
			t.stats.Congestion.CNPs++
			t.stats.Congestion.MinRate = min(t.stats.Congestion.MinRate, cc.rc)
		}
	} else if cc.windowed() && a >= 0 && a < t.next {
		if cc.dctcpSACK(t.sentSeq(a), marked, delaySample, inflight-t.inflight, t.q.txSeq) {
			if cc.kind == Delay {
				t.stats.Congestion.DelayCuts++
			} else {
				t.stats.Congestion.ECNCuts++
			}
			t.stats.Congestion.MinWindow = min(t.stats.Congestion.MinWindow, cc.cwnd)
		}
	}
	if t.roce {
		// A later PSN arrived while cum_psn stays below it: RoCE's
		// NAK-sequence-error.
		if (r.bitmap != 0 || a > c) && t.una < t.next && t.gbnAllowed(now) {
			t.goBackN(&t.stats.Retransmits.SeqError, now)
		}
	} else {
		t.sackGap(now)
	}
	t.pump(now)
}

// sackGap is the RACK-like rule: a packet is lost when it is still missing
// while at least D higher packets sent after it (later transmission number)
// are acked, and it was sent more than the reorder window ago (5/4 of the
// largest recent RTT plus SRTT/4, at most MaxRTO: spraying reorders by up
// to the slowest path's delay). A packet that qualifies by count but not yet by age sets the
// reorder deadline, so that the check runs again then without waiting for
// another SACK. "Sent after it" keeps a resent packet from being judged
// again on the old evidence; on top of that a packet is resent by this rule
// at most once per RTT.
func (t *Transfer) sackGap(now time.Duration) {
	t.reoAt = noTime
	rtt, wnd := t.rtt.rtt(), t.rtt.reorderWindow()
	for i := t.una; i < t.hi; i++ {
		// A trimmed packet (out) is not lost: its NACK came, its resend
		// waits its turn in the window.
		// Nor is a packet no SACK has shown missing since its last send
		// (pktMissing): with a receive window wider than 64 it may have
		// arrived, in no SACK's 64 bits yet.
		p := t.pkt(i)
		if p.flags&(pktAcked|pktOut) != 0 || p.flags&pktMissing == 0 || p.sends == 0 {
			continue
		}
		later := 0
		for j := i + 1; j <= t.hi && later < t.d; j++ {
			if q := t.pkt(j); q.seq > p.seq && q.flags&pktAcked != 0 {
				later++
			}
		}
		if later < t.d && !t.probeVouches(i) {
			continue
		}
		at := p.lastSent + wnd
		if p.rackAt != noTime {
			at = max(at, p.rackAt+rtt)
		}
		if at > now {
			if t.reoAt == noTime || at < t.reoAt {
				t.reoAt = at
			}
			continue
		}
		// The copy is lost, not trimmed (a trim is NACKed) nor late (the
		// reorder window passed): METH LOST tells the NIC to fail the
		// slot that carried it.
		flags := mrcpkt.METHRetransmission | mrcpkt.METHLost
		if t.q.cfg.NoLossReport {
			flags = mrcpkt.METHRetransmission
		}
		if t.resend(i, flags, &t.stats.Retransmits.SACKGap, now) {
			p.rackAt = now
		}
	}
}

// probeVouches reports whether the tail-loss probe's answer stands for
// the D later packets the SACK-gap rule wants of packet i: the probe was
// sent after i and is acked. At the tail of a write no D packets follow a
// lost one; RACK (RFC 8985) needs none, only the reorder window's age,
// which sackGap still asks of i.
func (t *Transfer) probeVouches(i int) bool {
	return t.probeAt != noTime && t.probeSeq > t.pkt(i).seq && t.isAcked(t.probeIdx)
}

// sentSeq is the transmission number of packet a's last send, for the
// congestion control's rounds (a SACK or NACK may name any packet sent).
// A packet the ring has forgotten gets 0, before any send: it was last
// sent more than a window of new packets ago, and its answer, or its
// trim, is old news that neither ends a round nor cuts nor grows the
// window; it counts among the round's answers, and marks, all the same.
func (t *Transfer) sentSeq(a int) uint64 {
	if !t.remembered(a) {
		return 0
	}
	return t.pkt(a).seq
}

// probeDeadline is when the tail-loss probe is due (RACK-TLP, RFC 8985 7):
// two SRTTs, and no less than the reorder window, after the sender last
// sent a packet the receiving NIC answers at once (it asks, its PSN is
// AckEvery - 1 modulo AckEvery, or it ends the write) or learnt of one
// acked; once per such quiet spell, for MRC, once an RTT has been
// measured. The reorder window is how late an answer may be without a
// loss; a probe sooner would resend what is only queued. A SACK-gap
// resend needs D acked packets sent after the lost one; at the tail of a
// write (a step of a collective is one) none may follow, and the loss
// would wait for the RTO, whose floor is many RTTs. The probe's SACK
// brings the missing packets' news in one RTT instead.
func (t *Transfer) probeDeadline() (time.Duration, bool) {
	if t.roce || t.q.cfg.NoTailProbe || t.rtt.samples == 0 || t.una >= t.next || t.probeAt != noTime && t.probeAt >= t.quietSince {
		return 0, false
	}
	return t.quietSince + min(max(2*t.rtt.srtt, t.rtt.reorderWindow()), t.rtt.max), true
}

// tailProbe resends the newest packet in the network not yet acked, with
// an ack request: its answer acks it and reports, in its bitmap, every
// packet before it that arrived; probeVouches then lets the SACK-gap rule
// resend the others once they are older than the reorder window.
func (t *Transfer) tailProbe(now time.Duration) {
	t.probeAt = now
	for i := t.next - 1; i >= t.una; i-- {
		if t.isAcked(i) || t.isOut(i) || t.pending(i) {
			continue
		}
		if t.retransmit(i, &t.stats.Retransmits.TailProbe, now) {
			t.probeIdx, t.probeSeq = i, t.pkt(i).seq
		}
		return
	}
}

// onNACK: a trimmed copy of a packet. MRC resends it at once unless it is
// already acked; RoCE (which should see none: its data is NO_TRIM) takes it
// as a sequence error.
func (t *Transfer) onNACK(r *rxFrame, now time.Duration) {
	t.invalidateDeadline()
	t.stats.NACKs++
	a := PSNDiff(r.psn, t.start)
	if cc := &t.q.cc; cc.windowed() && a >= 0 && a < t.next {
		// The trim happened, whatever the SACK state says of the packet.
		if cc.dctcpTrim(t.sentSeq(a), r.reason == mrcpkt.NACKTrimmedLastHop, t.q.txSeq) {
			t.stats.Congestion.TrimCuts++
			t.stats.Congestion.MinWindow = min(t.stats.Congestion.MinWindow, cc.cwnd)
		}
	}
	if a < t.una || a >= t.next || t.isAcked(a) {
		return
	}
	if t.roce {
		if t.gbnAllowed(now) {
			t.goBackN(&t.stats.Retransmits.SeqError, now)
		}
		return
	}
	if !t.q.cc.windowed() {
		t.retransmit(a, &t.stats.Retransmits.TrimNACK, now)
		return
	}
	// The trimmed copy is out of the network: its resend takes its turn
	// in the congestion window (pump), ahead of new packets.
	if !t.isOut(a) {
		t.setOut(a, true)
		t.trimQ = append(t.trimQ, a)
	}
	t.pump(now)
}

// gbnAllowed rate-limits go-back-N on sequence errors: at most once per
// RTT, and for the same hole (cum_psn unchanged) not again before an RTO,
// as a RoCE responder NAKs a sequence error once until the retry arrives.
func (t *Transfer) gbnAllowed(now time.Duration) bool {
	if t.gbnAt == noTime {
		return true
	}
	since := now - t.gbnAt
	if since < t.rtt.rtt() {
		return false
	}
	return t.una != t.gbnUna || since >= t.rtt.rto
}

// goBackN resends every packet from the cumulative ack on: at once, or
// as DCQCN's pacer lets it (a round still under way starts again).
func (t *Transfer) goBackN(cause *int64, now time.Duration) {
	t.rsNext, t.rsEnd, t.rsCause = t.una, t.next, cause
	t.gbnAt, t.gbnUna = now, t.una
	t.stats.GoBackNs++
	t.pump(now)
}

// timeout is how long an unacked packet waits before the timer resends it:
// the RTO, but never less than the reorder window: with paths of unequal
// delay a timer below the slowest path's RTT would resend what is only late.
// Both are capped at MaxRTO, so no unacked packet waits longer than MaxRTO
// after its last send.
func (t *Transfer) timeout() time.Duration { return max(t.rtt.rto, t.rtt.reorderWindow()) }

// deadline is the earliest time an unacked packet's RTO expires.
func (t *Transfer) deadline() (time.Duration, bool) {
	if t.isComplete {
		return 0, false
	}
	at, ok := t.reoAt, t.reoAt != noTime
	if d, has := t.probeDeadline(); has && (!ok || d < at) {
		at, ok = d, true
	}
	// A write waiting for the NIC comes back with the engine's transmit
	// scheduler (its deadline is the engine's); its pacer's time may
	// have passed already.
	if t.q.cc.paced() && t.held() && !t.waitingNIC {
		if d := t.q.cc.wake() - t.ccBase; !ok || d < at {
			at, ok = d, true
		}
	}
	if i, has := t.oldestInFlight(); has {
		if d := t.pkt(i).lastSent + t.timeout(); !ok || d < at {
			at, ok = d, true
		}
	}
	return at, ok
}

// oldestInFlight is the packet whose last send is the oldest of those the
// RTO covers: sent, unacked, neither in a go-back-N round's resends nor
// out of the network (trimmed, its resend waiting). Sends are logged in
// time order, so it is the first such packet whose log entry is its last
// send. Entries that can never count again (acked, below una, or followed
// by a later send of their packet) leave the log's head for good; the
// others (a pending or out packet's last send) stay, as they count again
// if their packet is back in flight unsent.
func (t *Transfer) oldestInFlight() (int, bool) {
	t.dropStaleSends()
	for _, r := range t.sendLog[t.sendHead:] {
		i := int(r.i)
		if t.staleSend(r) || t.pending(i) || t.isOut(i) {
			continue
		}
		return i, true
	}
	return 0, false
}

// dropStaleSends takes the entries that can never count again off the
// send log's head, and moves the rest to the front once the head is past
// half of it.
func (t *Transfer) dropStaleSends() {
	for t.sendHead < len(t.sendLog) && t.staleSend(t.sendLog[t.sendHead]) {
		t.sendHead++
	}
	switch {
	case t.sendHead == len(t.sendLog):
		t.sendLog, t.sendHead = t.sendLog[:0], 0
	case t.sendHead > 64 && t.sendHead*2 > len(t.sendLog):
		t.sendLog = t.sendLog[:copy(t.sendLog, t.sendLog[t.sendHead:])]
		t.sendHead = 0
	}
}

// compactSendLog takes every entry that can never count again out of the
// send log, wherever it is, keeping the others in order: what is left is
// the last send of distinct packets of the window, at most window
// entries. dropStaleSends alone stops at the first entry that may count
// again (a packet pending in a go-back-N round, or out, not resent for
// long), behind which the log would grow with every send. A stale entry
// stays stale (una and a packet's sends only move on, acks stay), so
// oldestInFlight finds what it found before.
func (t *Transfer) compactSendLog() {
	log := t.sendLog[:0]
	for _, r := range t.sendLog[t.sendHead:] {
		if !t.staleSend(r) {
			log = append(log, r)
		}
	}
	t.sendLog, t.sendHead = log, 0
}

// staleSend: r is not its packet's last send, or the packet is acked.
func (t *Transfer) staleSend(r sendRecord) bool {
	i := int(r.i)
	return i < t.una || t.pkt(i).seq != r.seq || t.isAcked(i)
}

// invalidateDeadline: the write's state changed; its deadline is computed
// again when next asked, and the engine's timer queue asks.
func (t *Transfer) invalidateDeadline() {
	t.dlValid = false
	t.q.e.markDirty(t.q)
}

// cachedDeadline is deadline, computed once per change of the write's
// state.
func (t *Transfer) cachedDeadline() (time.Duration, bool) {
	if !t.dlValid {
		t.dlAt, t.dlOK = t.deadline()
		t.dlValid = true
	}
	return t.dlAt, t.dlOK
}

// onTimer is the last resort: MRC resends every unacked packet whose RTO
// has expired; RoCE goes back N. Either way the RTO doubles.
func (t *Transfer) onTimer(now time.Duration) {
	t.invalidateDeadline()
	if t.isComplete {
		return
	}
	if !t.roce && t.reoAt != noTime && t.reoAt <= now {
		t.sackGap(now)
	}
	due := false
	to := t.timeout()
	for i := t.una; i < t.next; i++ {
		if !t.isAcked(i) && !t.pending(i) && !t.isOut(i) && t.pkt(i).lastSent+to <= now {
			due = true
			if t.roce {
				break
			}
			t.retransmit(i, &t.stats.Retransmits.Timeout, now)
		}
	}
	if !due {
		// RFC 8985 7.2: the probe only ever comes before the RTO.
		if at, ok := t.probeDeadline(); ok && at <= now {
			t.tailProbe(now)
		}
		return
	}
	if t.roce {
		t.goBackN(&t.stats.Retransmits.Timeout, now)
	}
	t.rtt.backoff()
}

// finishIfDone completes the write once every packet is acked.
func (t *Transfer) finishIfDone(now time.Duration) {
	if t.isComplete || t.una < t.n {
		return
	}
	t.isComplete = true
	t.stats.Complete = true
	t.stats.End = t.e.at(now)
	t.q.cc.report(&t.stats.Congestion)
	t.q.active = nil
	t.q.e.markDirty(t.q) // its deadline leaves the engine's timer queue
	close(t.done)
}
