package nicmodel

import (
	"math/bits"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// meta is the program's metadata_t, and the standard metadata it uses.
type meta struct {
	mrcOK, isData, dropped, encap, qpKnown bool
	evUsable, backupUsable, rxOK, pathOK   bool
	dataTx, onBackup, deliver, singlePath  bool
	tries, qpEpoch                         uint8
	qpIndex, t1Offset, slot, firstSlot     uint16
	peerQP, startPSN                       uint32
	baseEV, backupEV                       uint32
	rxPlane                                uint8
	ownDownUSID, ownT0USID, ownRow         uint16
	rowUSID, t1USID, downUSID              uint16
	fl2                                    fieldList2
	egressSpec                             uint16 // standard_metadata.egress_spec
	high                                   bool   // standard_metadata.priority == PRIO_HIGH
	clone                                  bool   // clone_preserving_field_list(I2E, cloneSession, 2)
	cloneSession                           uint32
	resubmit                               bool
}

// fieldList2 is the metadata of @field_list(2): what travels with a clone
// to egress.
type fieldList2 struct {
	ack, probe, ecnCE bool
	ev                uint32
	plane             uint8
	t1, dstRow        uint16
	dstPort           uint16
	answerQP, cumPSN  uint32
	sackBase          uint32
	bitmap            uint64
	probeEV           uint32
	probeT1           uint16
}

// Process runs one frame arriving on port through the pipeline and returns
// the frames the NIC emits for it (none, one or two), valid until the next
// call (of any NIC sharing its Scratch).
func (n *NIC) Process(port uint32, frame []byte) []Frame {
	if n.scratch == nil {
		n.scratch = NewScratch() // not made in New: a simulator's NICs share one (ShareScratch)
	}
	out := n.scratch.outs[:0]
	var tries uint8
	for {
		m := meta{tries: tries}
		w := &n.scratch.work
		m.mrcOK, m.isData = parse(w, frame, port)
		n.ingress(w, &m, port)
		if m.clone {
			if cp, ok := n.clones.get(uint64(m.cloneSession)); ok {
				c := &n.scratch.clone
				cm := meta{fl2: m.fl2}
				cm.mrcOK, cm.isData = parse(c, frame, port)
				if f, ok := n.egress(c, &cm, true, len(frame), len(out)); ok {
					f.Port, f.Pass = cp, tries
					out = append(out, f)
				}
			}
		}
		if m.resubmit {
			tries = m.tries
			continue
		}
		if m.egressSpec != dropPort {
			if f, ok := n.egress(w, &m, false, len(frame), len(out)); ok {
				f.Port, f.High, f.Pass = uint32(m.egressSpec), m.high, tries
				out = append(out, f)
			}
		}
		return out
	}
}

func (n *NIC) dropFor(m *meta, ev int) {
	m.dropped = true
	m.egressSpec = dropPort
	n.count(ev)
}

// evT1 is the EV's T1 field.
func (n *NIC) evT1(ev uint32) uint16 {
	return uint16(ev>>n.p.T1Shift) & (1<<n.p.T1Bits - 1)
}

// withOffset is the program's with_offset: the QP's T1 offset added to the
// EV's T1 field, modulo the T1 count (one subtraction: right for offsets
// below the T1 count, which ingress checks first).
func (n *NIC) withOffset(ev uint32, offset uint16) uint32 {
	t1 := n.evT1(ev) + offset
	if t1 >= uint16(n.p.T1Count) {
		t1 -= uint16(n.p.T1Count)
	}
	mask := uint32(1<<n.p.T1Bits-1) << n.p.T1Shift
	return ev&^mask | uint32(t1)<<n.p.T1Shift&mask
}

// Slot state word fields (slot_state).
func slotWord(epoch uint8, state uint8, skip, single bool, unanswered, passes uint8) uint32 {
	w := uint32(epoch)<<24 | uint32(state&3)<<22 | uint32(unanswered)<<8 | uint32(passes)
	if skip {
		w |= 1 << 21
	}
	if single {
		w |= 1 << 20
	}
	return w
}

// sentWord is a sent_slot word: the last send of a PSN of a multipath QP.
func sentWord(epoch uint8, backup bool, psn uint32, slot uint16) uint64 {
	w := uint64(epoch)<<56 | uint64(psn&0xffffff)<<16 | uint64(slot)
	if backup {
		w |= 1 << 40
	}
	return w
}

// lossReported: a resend flagged METH LOST names, through sent_slot, the
// slot that carried the lost copy; if that slot still uses the EV the
// copy took, its unanswered count reaches K and it fails at its next turn
// (docs/protocol.md 5).
func (n *NIC) lossReported(regs *qpRegs, m *meta, psn uint32) {
	var sent uint64
	if regs.sent != nil {
		sent = regs.sent[psn&uint32(n.p.ReceiveWindow-1)]
	}
	slot := uint16(sent)
	if uint8(sent>>56) != m.qpEpoch || uint32(sent>>16)&0xffffff != psn || int(slot) >= n.p.SetSize {
		return
	}
	word := regs.slots[slot]
	backup := sent>>40&1 == 1
	state := uint8(word >> 22 & 3)
	if uint8(word>>24) != m.qpEpoch || !(state == schema.SlotGood && !backup || state == schema.SlotAssumedBad && backup) {
		return
	}
	regs.slots[slot] = word&^(0xff<<8) | uint32(n.p.UnansweredSends)<<8
	n.count(schema.NICEventLossReported)
}

func (n *NIC) ingress(w *pkt, m *meta, port uint32) {
	fromHost := port == hostPort
	if !m.mrcOK {
		n.dropFor(m, schema.NICEventUnknownPacket)
	}
	if !m.dropped && !fromHost {
		if rp, ok := n.rxPlane.get(uint64(port)); ok {
			m.rxOK, m.rxPlane, m.ownDownUSID = true, rp.plane, rp.ownDownUSID
		}
		if !m.rxOK || !w.isValid(hOuter) || !n.ownSID(w, m.ownDownUSID) {
			n.dropFor(m, schema.NICEventNotMine)
		}
	}
	if !m.dropped {
		switch {
		case fromHost && !m.isData:
			n.dropFor(m, schema.NICEventUnknownPacket)
		case fromHost:
			k := uint64(w.u32(offInner+ip6Dst+12))<<24 | uint64(w.u24(offBTH+5))
			if q, ok := n.qpSendGet(k); ok {
				m.qpKnown, m.qpIndex, m.t1Offset, m.qpEpoch, m.singlePath, m.firstSlot = true, q.index, q.t1Offset, q.epoch, q.single, q.firstSlot
			}
		default:
			if q, ok := n.qpRecv.get(uint64(w.u24(offBTH + 5))); ok {
				m.qpKnown, m.qpIndex, m.peerQP, m.qpEpoch, m.startPSN = true, q.index, q.peerQP, q.epoch, q.startPSN
			}
		}
	}
	if !m.dropped && !m.qpKnown {
		n.dropFor(m, schema.NICEventUnknownQP)
	}
	if !m.dropped && (m.qpIndex >= schema.NICMaxQPs || m.t1Offset >= uint16(n.p.T1Count) || m.firstSlot >= uint16(n.p.SetSize)) {
		n.dropFor(m, schema.NICEventBadQPEntry)
	}
	if !m.dropped && fromHost {
		n.hostToFabric(w, m)
	}
	if !m.dropped && !fromHost {
		n.fabricToHost(w, m)
	}
}

// ownSID: the outer destination is block ++ own_down_usid ++ 80 zero bits.
func (n *NIC) ownSID(w *pkt, own uint16) bool {
	d := offOuter + ip6Dst
	if w.u32(d) != n.p.Block || w.u16(d+4) != own {
		return false
	}
	return w.u16(d+6) == 0 && w.u64(d+8) == 0
}

// hostToFabric: the host's data packet takes its QP's next slot.
func (n *NIC) hostToFabric(w *pkt, m *meta) {
	p := &n.p
	qi := m.qpIndex
	tx := n.readTx(qi)
	next := m.firstSlot
	if uint8(tx>>24) == m.qpEpoch {
		next = uint16(tx)
	}
	after := next + 1
	if after == uint16(p.SetSize) {
		after = 0
	}
	if m.singlePath {
		after = next
	}
	regs := n.qp(qi)
	regs.tx = uint32(m.qpEpoch)<<24 | uint32(after)
	m.slot = next
	psn := w.u24(offBTH + 9)
	if !m.singlePath && m.tries == 0 && w.u8(offMETH)&mrcpkt.METHLost != 0 {
		n.lossReported(regs, m, psn)
	}

	if ev, ok := n.common.evSet.get(uint64(m.slot)); ok {
		m.baseEV, m.evUsable = ev, true
	}
	if ev, ok := n.common.evBackup.get(uint64(m.slot)); ok {
		m.backupEV, m.backupUsable = ev, true
	}
	m.baseEV = n.withOffset(m.baseEV, m.t1Offset)
	m.backupEV = n.withOffset(m.backupEV, m.t1Offset)

	// The slot's state (fresh when written under another epoch). A slot
	// beyond the register (a tx word the program never writes) reads as
	// nothing, like BMv2's checked register reads.
	var word uint32
	if int(m.slot) < p.SetSize {
		word = regs.slots[m.slot]
	}
	if uint8(word>>24) != m.qpEpoch {
		word = uint32(m.qpEpoch) << 24
	}
	state := uint8(word >> 22 & 3)
	skip := word>>21&1 == 1
	unanswered := uint8(word >> 8)
	passes := uint8(word)

	passOver := false
	passEvent := schema.NICEventBadTaken
	probe := false
	m.fl2.ev = m.baseEV
	usable := m.evUsable
	if !m.singlePath {
		// SKIP is a hint: the last try takes a SKIP slot rather than drop.
		if skip && int(m.tries) < p.MaxTries {
			skip = false
			passOver = true
			passEvent = schema.NICEventSkipTaken
		} else {
			skip = false
			if int(unanswered) >= p.UnansweredSends {
				unanswered = 0
				switch state {
				case schema.SlotGood:
					state = schema.SlotAssumedBad
					passes = 0
					n.count(schema.NICEventPathFailed)
					n.countSlot(&n.c.SlotFailed, int(m.slot))
				case schema.SlotAssumedBad:
					state = schema.SlotBothBad
					n.count(schema.NICEventBackupFailed)
				}
			}
			if state != schema.SlotGood {
				passes++
				if int(passes) >= p.ProbePasses {
					passes = 0
					probe = m.evUsable
				}
				if state == schema.SlotAssumedBad && m.backupUsable {
					m.fl2.ev = m.backupEV
					usable = true
					m.onBackup = true
				} else {
					passOver = true
					passEvent = schema.NICEventFailedTaken
				}
			}
		}
	}
	if !passOver && usable && !m.singlePath {
		m.evUsable = !n.evStateBad(m.fl2.ev)
		usable = m.evUsable
	}
	if !passOver && !usable {
		passOver = true
		passEvent = schema.NICEventBadTaken
	}
	if !passOver && unanswered != 255 {
		unanswered++
	}
	if int(m.slot) < p.SetSize {
		regs.slots[m.slot] = slotWord(m.qpEpoch, state, skip, m.singlePath, unanswered, passes)
	}

	m.fl2.plane = uint8(m.baseEV >> p.PlaneShift)
	m.fl2.dstRow = w.u16(offInner + ip6Dst + 12)
	m.fl2.dstPort = w.u16(offInner+ip6Dst+14) - 1
	if probe {
		m.fl2.probe = true
		m.fl2.probeEV = m.baseEV
		m.fl2.probeT1 = n.evT1(m.baseEV)
		m.clone, m.cloneSession = true, uint32(m.fl2.plane)+1
	}
	if passOver {
		if int(m.tries) < p.MaxTries {
			n.count(passEvent)
			m.tries++
			m.resubmit = true
		} else {
			n.dropFor(m, schema.NICEventNoEV)
		}
		return
	}
	if m.onBackup {
		n.count(schema.NICEventBackupTaken)
	}
	if !m.singlePath {
		if regs.sent == nil {
			regs.sent = make([]uint64, n.p.ReceiveWindow)
		}
		regs.sent[psn&uint32(n.p.ReceiveWindow-1)] = sentWord(m.qpEpoch, m.onBackup, psn, m.slot)
	}
	m.fl2.t1 = n.evT1(m.fl2.ev)
	m.encap = true
	m.dataTx = true
	m.egressSpec = uint16(m.fl2.plane) + 1
}

// fabricToHost: a packet for one of this NIC's QPs.
func (n *NIC) fabricToHost(w *pkt, m *meta) {
	p := &n.p
	m.fl2.ev = uint32(w.u16(offUDP))<<16 | w.flowLabel(offOuter)&0xffff
	var echoEV uint32
	echoProbeAnswer, echoSkip := false, false
	answerPayload := 0
	dscp := w.dscp(offOuter)
	switch {
	case m.isData && (dscp == p.DSCPTrimmed || dscp == p.DSCPTrimmedLastHop):
		w.setValid(hNETH)
		w.put32(offNETH, m.fl2.ev)
		w.put24(offNETH+4, w.u24(offBTH+9))
		w.put16(offNETH+8, 0)
		w.put16(offNETH+10, 0)
		if dscp == p.DSCPTrimmedLastHop {
			w.put8(offNETH+7, nackTrimmedLastHop)
			n.count(schema.NICEventTrimmedLastHop)
		} else {
			w.put8(offNETH+7, nackTrimmed)
		}
		n.count(schema.NICEventTrimmedRx)
		w.put8(offBTH, opNACK)
		answerPayload = 32
	case w.u8(offBTH) == opProbe:
		w.setValid(hPETH)
		w.put32(offPETH, m.fl2.ev)
		w.put8(offBTH, opProbeAnswer)
		answerPayload = 24
		n.count(schema.NICEventProbeAnswered)
	case w.isValid(hPETH):
		n.count(schema.NICEventProbeAnswerRx)
		echoEV = w.u32(offPETH)
		echoProbeAnswer = true
		m.egressSpec = dropPort // mark_to_drop
	case w.isValid(hNETH):
		n.count(schema.NICEventNackRx)
		echoEV = w.u32(offNETH)
		echoSkip = w.u8(offNETH+7) == nackTrimmed
		m.deliver = true
	case w.isValid(hSETH):
		n.count(schema.NICEventAckRx)
		echoEV = w.u32(offSETH + 16)
		echoSkip = w.u8(offSETH+3)>>6 == markSkipOnce
		m.deliver = true
	case m.isData && w.ecn(offOuter) == ecnCE && w.ecn(offInner) == ecnNotECT:
		n.dropFor(m, schema.NICEventCENotECT)
	case m.isData:
		n.receiveData(w, m)
	default:
		n.dropFor(m, schema.NICEventUnknownPacket)
	}

	if answerPayload == 0 && (w.isValid(hPETH) || w.isValid(hNETH) || w.isValid(hSETH)) {
		n.echo(m, echoEV, echoProbeAnswer, echoSkip)
	}

	if answerPayload != 0 {
		n.turnAround(w, m, answerPayload)
		w.put8(offBTH+8, 0)
		w.setInvalid(hMETH)
		w.setInvalid(hRETH)
		w.setInvalid(hOuter)
		w.cut(14 + 40 + 40 + answerPayload)
		m.fl2.plane = m.rxPlane
		m.fl2.t1 = n.evT1(m.fl2.ev)
		m.fl2.dstRow = w.u16(offInner + ip6Dst + 12)
		m.fl2.dstPort = w.u16(offInner+ip6Dst+14) - 1
		m.encap = true
		m.egressSpec = uint16(m.fl2.plane) + 1
		m.high = true
	} else if !m.dropped && m.deliver {
		w.setInvalid(hOuter)
		m.egressSpec = hostPort
	}
}

// turnAround makes the packet an answer to its sender: addresses swapped,
// CONTROL, Not-ECT, the answer's lengths, and the BTH destination QP of
// the QP that sent what it answers.
func (n *NIC) turnAround(w *pkt, m *meta, payload int) {
	var tmp [16]byte
	copy(tmp[:], w.h[offInner+ip6Src:offInner+ip6Src+16])
	copy(w.h[offInner+ip6Src:offInner+ip6Src+16], w.h[offInner+ip6Dst:offInner+ip6Dst+16])
	copy(w.h[offInner+ip6Dst:offInner+ip6Dst+16], tmp[:])
	w.setDSCP(offInner, n.p.DSCPControl)
	w.setECN(offInner, ecnNotECT)
	w.put16(offInner+ip6PayloadLen, uint16(payload))
	w.put16(offUDP+4, uint16(payload))
	w.put24(offBTH+5, m.peerQP)
}

// receiveData updates the QP's receive state (rx_state, rx_bitmap) and
// answers the packet with a SACK (docs/protocol.md 5, Receive state).
func (n *NIC) receiveData(w *pkt, m *meta) {
	qi := m.qpIndex
	regs := n.qp(qi)
	window := uint32(n.p.ReceiveWindow)
	words := window / schema.NICRxWordBits
	// word reads word j of the QP's bitmap: 0 if written under another epoch.
	word := func(j uint32) uint64 {
		j &= words - 1
		if regs.bmEpoch[j] != m.qpEpoch {
			return 0
		}
		return regs.bitmap[j]
	}
	put := func(j uint32, v uint64) {
		j &= words - 1
		regs.bitmap[j], regs.bmEpoch[j] = v, m.qpEpoch
	}
	rx := n.readRx(qi)
	expected := uint32(rx) & 0xffffff
	high := uint32(rx>>24) & 0xffffff
	if uint8(rx>>56) != m.qpEpoch {
		expected = m.startPSN
		high = (m.startPSN - 1) & 0xffffff
	}
	hd := (high - expected) & 0xffffff
	holeIn := hd != 0 && hd < window
	psn := w.u24(offBTH + 9)
	d := (psn - expected) & 0xffffff
	var moved uint32
	switch {
	case d == 0:
		// e moves past every consecutive PSN already received, clearing
		// their bits: a walk of at most words + 1 words.
		pos := (expected + 1) & 0xffffff
		for range words + 1 {
			j := pos >> 6
			v := word(j)
			b := pos & 63
			y := v >> b
			t := uint32(bits.TrailingZeros64(^y)) // 64 when y is all ones
			v &^= (uint64(1)<<t - 1) << b
			put(j, v)
			pos = (pos + t) & 0xffffff
			if t < 64-b {
				break
			}
		}
		moved = (pos - expected) & 0xffffff
		expected = pos
		m.deliver = true
	case d < window:
		j := psn >> 6
		v := word(j)
		bit := uint64(1) << (psn & 63)
		if v&bit != 0 {
			n.count(schema.NICEventDuplicate)
		} else {
			put(j, v|bit)
			m.deliver = true
			if !holeIn || d > hd {
				high = psn
			}
		}
	case d < 0x800000:
		n.count(schema.NICEventBeyondWindow)
	default:
		n.count(schema.NICEventDuplicate)
	}
	// h means nothing once e has passed it: kept at e - 1.
	if hdOut := (high - expected) & 0xffffff; hdOut == 0 || hdOut >= window {
		high = (expected - 1) & 0xffffff
	}
	regs.rx = uint64(m.qpEpoch)<<56 | uint64(high)<<24 | uint64(expected)

	// The SACK's 64 bits: from e, or ending at the PSN received when it is
	// 64 or more past e.
	sackBase := expected
	if d >= 64 && d < window {
		sackBase = (psn - 63) & 0xffffff
	}
	sb := sackBase & 63
	bm := word(sackBase>>6)>>sb | word(sackBase>>6+1)<<(64-sb)

	// Coalescing: an ordinary packet (in order moving the cumulative PSN on
	// by one, or new beyond a hole already there) is answered only if its
	// PSN is AckEvery - 1 modulo AckEvery; anything else at once.
	ce := w.ecn(offOuter) == ecnCE
	ordinary := d == 0 && moved == 1 || d != 0 && d < window && m.deliver && holeIn
	if ordinary && d != 0 && window > schema.NICRxWordBits {
		// A window wider than one bitmap: coalesced only if its answering
		// PSN (the first at or after it, across the 24-bit wrap, whose PSN
		// modulo AckEvery is AckEvery - 1) has not arrived, so that its SACK, sent later,
		// covers this packet.
		a := uint32(n.p.AckEvery)
		ans := psn + a - 1 - psn%a
		if ans > 0xffffff {
			// Past the 24-bit wrap the residues restart at 0.
			ans = a - 1
		}
		if ad := (ans - expected) & 0xffffff; ad != 0 && ad < window && word(ans>>6)&(1<<(ans&63)) != 0 {
			ordinary = false
		}
	}
	atOnce := true
	if ordinary && !ce && w.u8(offBTH) < opWriteLast && w.u8(offBTH+8)&bthAckReq == 0 &&
		int(w.u24(offBTH+9)%uint32(n.p.AckEvery)) != n.p.AckEvery-1 {
		atOnce = false
	}

	m.fl2.ack = atOnce
	m.fl2.cumPSN = (expected - 1) & 0xffffff
	m.fl2.sackBase = sackBase
	m.fl2.bitmap = bm
	m.fl2.answerQP = m.peerQP
	m.fl2.ecnCE = ce
	m.fl2.plane = m.rxPlane
	m.fl2.t1 = n.evT1(m.fl2.ev)
	m.fl2.dstRow = w.u16(offInner + ip6Src + 12)
	m.fl2.dstPort = w.u16(offInner+ip6Src+14) - 1
	if atOnce {
		n.count(schema.NICEventAckSent)
	} else {
		n.count(schema.NICEventAckCoalesced)
	}
	if m.deliver {
		n.count(schema.NICEventDataDelivered)
		// RFC 6040 normal mode: the outer ECN joins the inner.
		outer, inner := w.ecn(offOuter), w.ecn(offInner)
		if outer == ecnCE {
			w.setECN(offInner, ecnCE)
		} else if outer == ecnECT1 && inner == ecnECT0 {
			w.setECN(offInner, ecnECT1)
		}
		m.clone, m.cloneSession = atOnce, uint32(m.rxPlane)+1
	} else {
		m.egressSpec = uint16(m.fl2.plane) + 1
		m.high = true
	}
}

// echo updates the slot an echoed EV names (salt = slot for a base EV, set
// size + slot for a backup), unless it is from another epoch of the QP.
func (n *NIC) echo(m *meta, ev uint32, probeAnswer, skipMark bool) {
	set := uint32(n.p.SetSize)
	salt := ev & (1<<n.p.T1Shift - 1)
	backup, valid := false, true
	if salt >= set {
		salt -= set
		backup = true
	}
	if salt >= set {
		valid = false
	}
	var word uint32
	if valid {
		word = n.readSlot(m.qpIndex, uint16(salt))
	}
	if !valid || uint8(word>>24) != m.qpEpoch {
		n.count(schema.NICEventStaleEcho)
		return
	}
	state := uint8(word >> 22 & 3)
	skip := word>>21&1 == 1
	single := word>>20&1 == 1
	unanswered := uint8(word >> 8)
	passes := uint8(word)
	switch {
	case probeAnswer:
		// Only a probe answer brings a failed base EV back.
		if !backup && state != schema.SlotGood {
			state, unanswered, passes = schema.SlotGood, 0, 0
			n.count(schema.NICEventRevived)
		}
	case state == schema.SlotGood && !backup || state == schema.SlotAssumedBad && backup:
		unanswered = 0
		if skipMark && !single {
			skip = true
			n.count(schema.NICEventSkipSet)
		}
	default:
		n.count(schema.NICEventStaleEcho)
	}
	n.qp(m.qpIndex).slots[salt] = slotWord(m.qpEpoch, state, skip, single, unanswered, passes)
}

// egress is NicEgress and the deparser: it returns the frame (without its
// port) or false when the packet is dropped.
func (n *NIC) egress(w *pkt, m *meta, isClone bool, ingressLen int, buf int) (Frame, bool) {
	fl := &m.fl2
	if fl.ack && (isClone || !m.deliver) {
		// A data packet received becomes its SACK.
		w.setValid(hSETH)
		w.put24(offSETH, fl.cumPSN)
		var mark uint8
		if fl.ecnCE {
			mark = markSkipOnce
		}
		w.put8(offSETH+3, mark<<6)
		w.put24(offSETH+4, fl.sackBase)
		w.put8(offSETH+7, 0)
		w.put64(offSETH+8, fl.bitmap)
		w.put32(offSETH+16, fl.ev)
		w.setInvalid(hMETH)
		w.setInvalid(hRETH)
		w.put8(offBTH, opSACK)
		w.put8(offBTH+8, 0)
		m.peerQP = fl.answerQP
		n.turnAround(w, m, 40)
		w.cut(14 + 40 + 40 + 40)
		m.encap = true
	} else if fl.probe && isClone {
		// The clone of a data packet becomes a probe of the slot's base EV.
		w.setInvalid(hMETH)
		w.setInvalid(hRETH)
		w.put8(offBTH, opProbe)
		w.put8(offBTH+8, bthAckReq)
		w.setDSCP(offInner, n.p.DSCPControl)
		w.setECN(offInner, ecnNotECT)
		w.put16(offInner+ip6PayloadLen, 20)
		w.put16(offUDP+4, 20)
		w.cut(14 + 40 + 40 + 20)
		fl.ev = fl.probeEV
		fl.t1 = fl.probeT1
		m.encap = true
		n.count(schema.NICEventProbeSent)
	}
	if m.encap {
		if !n.encap(w, m, isClone, ingressLen) {
			return Frame{}, false
		}
	}
	head, tail := w.deparse(n.scratch.heads[buf][:])
	return Frame{Head: head, Tail: tail}, true
}

// encap builds the outer header from the plane and the destination's row
// and down port (the path's uSID templates), or drops the packet.
func (n *NIC) encap(w *pkt, m *meta, isClone bool, ingressLen int) bool {
	fl := &m.fl2
	c := n.common
	if s, ok := n.planeSelf.get(uint64(fl.plane)); ok {
		m.ownT0USID, m.ownRow, m.pathOK = s.ownT0USID, s.ownRow, true
	}
	if m.pathOK {
		m.downUSID, m.pathOK = c.downUSID.get(c.dims.templateKey(fl.plane, fl.dstPort, c.dims.down))
	}
	var carrier [16]byte
	putUSID := func(i int, u uint16) { carrier[4+2*i], carrier[5+2*i] = byte(u>>8), byte(u) }
	carrier[0], carrier[1], carrier[2], carrier[3] = byte(n.p.Block>>24), byte(n.p.Block>>16), byte(n.p.Block>>8), byte(n.p.Block)
	if fl.dstRow == m.ownRow {
		// Same T0: turn there.
		putUSID(0, m.ownT0USID)
		putUSID(1, m.downUSID)
	} else {
		if m.pathOK {
			m.t1USID, m.pathOK = c.t1USID.get(c.dims.templateKey(fl.plane, fl.t1, c.dims.t1s))
		}
		if m.pathOK {
			m.rowUSID, m.pathOK = c.rowUSID.get(c.dims.templateKey(fl.plane, fl.dstRow, c.dims.t0s))
		}
		putUSID(0, m.ownT0USID)
		putUSID(1, m.t1USID)
		putUSID(2, m.rowUSID)
		putUSID(3, m.downUSID)
	}
	if !m.pathOK {
		n.count(schema.NICEventNoPath)
		return false
	}
	dataTx := m.dataTx && !isClone
	if dataTx {
		n.count(schema.NICEventDataSent)
		if int(fl.plane) < len(n.c.PlaneTx) {
			n.c.PlaneTx[fl.plane]++
			n.c.PlaneTxBytes[fl.plane] += uint64(ingressLen)
		}
		n.countSlot(&n.c.SlotTx, int(m.slot))
		if m.onBackup {
			n.countSlot(&n.c.SlotBackupTx, int(m.slot))
		}
	}
	o := offOuter
	w.setValid(hOuter)
	ecn := uint8(ecnNotECT)
	if dataTx {
		ecn = ecnECT0
	}
	dscp := w.dscp(offInner)
	w.h[o] = 6<<4 | dscp>>2
	w.h[o+1] = (dscp&3)<<6 | ecn<<4 // flow label's top 4 bits: 0
	w.put16(o+2, uint16(fl.ev))
	w.put16(o+ip6PayloadLen, w.u16(offInner+ip6PayloadLen)+40)
	w.put8(o+ip6NextHdr, protoIPv6)
	w.put8(o+ip6HopLimit, hopLimit)
	copy(w.h[o+ip6Src:o+ip6Src+16], w.h[offInner+ip6Src:offInner+ip6Src+16])
	copy(w.h[o+ip6Dst:o+ip6Dst+16], carrier[:])
	w.put16(offEth+12, etherTypeIPv6)
	w.put16(offUDP, uint16(fl.ev>>16))
	return true
}

// qpSendGet is qp_send's entry for key k.
func (n *NIC) qpSendGet(k uint64) (sendQP, bool) {
	if n.sendHitOK && n.sendHitKey == k {
		return n.sendHit, true
	}
	q, ok := n.qpSend.get(k)
	if ok {
		n.sendHitKey, n.sendHit, n.sendHitOK = k, q, true
	}
	return q, ok
}
