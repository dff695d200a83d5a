package schema

import "github.com/mrc-fabric/mrcgen/compiler/fabric"

// Sizes of the NIC program's runtime state.
const (
	// NICMaxQPs is how many QPs a NIC program tracks: the size of
	// qp_send and qp_recv and of the per-QP registers (send rotation,
	// receive state, per-slot EV state).
	NICMaxQPs = 256
	// NICEVStateSize bounds the controller's EV state entries.
	NICEVStateSize = 1024
	// NICMaxPlanes is the size of the per-plane counters.
	NICMaxPlanes = 16
	// NICRxWordBits is the width of one word of the receive bitmap
	// (rx_bitmap): the NIC's receive window, the fabric's
	// nic.window_packets, is a whole number of such words per QP, and a
	// SACK carries one word's worth of it.
	NICRxWordBits = 64
)

// NIC event counter indexes (events: counted by both ingress and egress).
const (
	NICEventDataSent       = 0  // data packet encapsulated and sent (counted in egress)
	NICEventDataDelivered  = 1  // new data packet decapsulated to the host
	NICEventTrimmedRx      = 2  // trimmed packet received, NACK sent
	NICEventTrimmedLastHop = 3  // of which TRIMMED_LASTHOP
	NICEventNackRx         = 4  // NACK received (and handed to the host)
	NICEventSkipSet        = 5  // EV marked SKIP by a NACK TRIMMED or a SACK SKIP_ONCE
	NICEventSkipTaken      = 6  // a slot passed over because it was SKIP
	NICEventBadTaken       = 7  // a slot passed over: its EV is ASSUMED_BAD or DENIED by the controller, or not installed
	NICEventNoEV           = 8  // no usable EV within the bounded tries: dropped
	NICEventNotMine        = 9  // outer destination is not this NIC port: dropped
	NICEventUnknownQP      = 10 // data or an answer for a QP the NIC does not know: dropped
	NICEventUnknownPacket  = 11 // not an MRC packet: dropped
	NICEventAckSent        = 12 // SACK sent for a data packet received (new, duplicate or beyond the window)
	NICEventAckRx          = 13 // SACK received (handed to the host)
	NICEventNoPath         = 14 // egress found no path (plane, row, T1 or down port template missing): dropped
	NICEventCENotECT       = 15 // CE-marked outer over a Not-ECT inner packet: dropped (RFC 6040)
	NICEventDuplicate      = 16 // data packet already received: SACKed, not delivered
	NICEventBeyondWindow   = 17 // data packet more than the window beyond the first missing PSN: SACKed, not delivered
	NICEventPathFailed     = 18 // a slot's base EV declared ASSUMED_BAD (unanswered sends): its backup takes over
	NICEventBackupFailed   = 19 // a slot's backup EV failed too: the slot is passed over
	NICEventBackupTaken    = 20 // data packet sent on its slot's backup EV
	NICEventProbeSent      = 21 // probe sent on an ASSUMED_BAD slot's base EV (counted in egress)
	NICEventProbeAnswered  = 22 // probe received and answered
	NICEventProbeAnswerRx  = 23 // answer to one of this NIC's probes received
	NICEventRevived        = 24 // a slot back to GOOD by a probe answer
	NICEventStaleEcho      = 25 // an echo for an EV its slot no longer uses, or for an older epoch of the QP: ignored
	NICEventFailedTaken    = 26 // a slot passed over: both its EVs failed (or it has no backup)
	NICEventBadQPEntry     = 27 // a packet of a QP whose entry is out of range (state index, T1 offset, first slot): dropped
	NICEventAckCoalesced   = 28 // data packet received and answered later, by a coalesced SACK (nic.ack_every)
	NICEventLossReported   = 29 // a resend flagged METH LOST named the slot of its lost copy: the slot fails at its next turn
	NICEventCount          = 30
)

// The layout of the NIC's per-(QP, slot) state word (register slot_state)
// and per-QP words (tx_state, rx_state): bits [31:24] hold the QP's epoch
// in every one of them, so that a QP opened again with a new epoch starts
// from fresh state without any register write.
const (
	// SlotGood, SlotAssumedBad and SlotBothBad are the values of a slot's
	// dataplane state (slot_state bits [23:22]).
	SlotGood       = 0
	SlotAssumedBad = 1
	SlotBothBad    = 2
)

// Names of the NIC program's control-plane objects (full names).
const (
	NICQPSend          = "NicIngress.qp_send"
	NICQPRecv          = "NicIngress.qp_recv"
	NICEVSet           = "NicIngress.ev_set"
	NICEVBackup        = "NicIngress.ev_backup"
	NICEVState         = "NicIngress.ev_state"
	NICRxPlane         = "NicIngress.rx_plane"
	NICPlaneSelf       = "NicEgress.plane_self"
	NICRowUSID         = "NicEgress.row_usid"
	NICT1USID          = "NicEgress.t1_usid"
	NICDownUSID        = "NicEgress.down_usid"
	NICEventCounter    = "events"
	NICPlaneTx         = "NicEgress.plane_tx"
	NICSlotTx          = "NicEgress.slot_tx"
	NICSlotBackupTx    = "NicEgress.slot_backup_tx"
	NICSlotFailed      = "NicIngress.slot_failed"
	NICSetSendQPAction = "set_send_qp"
	NICSetRecvQPAction = "set_recv_qp"
)

// NIC is the interface of the NIC pipeline program for fabric f: one
// host-facing port (0) and one port per plane (plane p is port p+1).
func NIC(f *fabric.Fabric) *Program {
	const ing, eg = "NicIngress", "NicEgress"
	setSendQP := &Action{ID: 0x01000101, Control: ing, Name: NICSetSendQPAction, Params: []Param{
		{ID: 1, Name: "qp_index", Bits: 16}, {ID: 2, Name: "t1_offset", Bits: 16},
		{ID: 3, Name: "epoch", Bits: 8}, {ID: 4, Name: "single_path", Bits: 1}, {ID: 5, Name: "first_slot", Bits: 16}}}
	unknownQP := &Action{ID: 0x01000102, Control: ing, Name: "unknown_qp"}
	setEV := &Action{ID: 0x01000103, Control: ing, Name: "set_ev", Params: []Param{{ID: 1, Name: "ev", Bits: 32}}}
	evMissing := &Action{ID: 0x01000104, Control: ing, Name: "ev_missing"}
	evBad := &Action{ID: 0x01000105, Control: ing, Name: "ev_assumed_bad"}
	evDenied := &Action{ID: 0x01000106, Control: ing, Name: "ev_denied"}
	evGood := &Action{ID: 0x01000107, Control: ing, Name: "ev_good"}
	setRxPlane := &Action{ID: 0x01000108, Control: ing, Name: "set_rx_plane", Params: []Param{
		{ID: 1, Name: "plane", Bits: 8}, {ID: 2, Name: "own_down_usid", Bits: USIDBits}}}
	notPlane := &Action{ID: 0x01000109, Control: ing, Name: "not_a_plane_port"}
	setSelf := &Action{ID: 0x0100010a, Control: eg, Name: "set_self", Params: []Param{
		{ID: 1, Name: "own_t0_usid", Bits: USIDBits}, {ID: 2, Name: "own_row", Bits: 16}}}
	setRow := &Action{ID: 0x0100010b, Control: eg, Name: "set_row_usid", Params: []Param{{ID: 1, Name: "usid", Bits: USIDBits}}}
	setT1 := &Action{ID: 0x0100010c, Control: eg, Name: "set_t1_usid", Params: []Param{{ID: 1, Name: "usid", Bits: USIDBits}}}
	setDown := &Action{ID: 0x0100010d, Control: eg, Name: "set_down_usid", Params: []Param{{ID: 1, Name: "usid", Bits: USIDBits}}}
	noPath := &Action{ID: 0x0100010e, Control: eg, Name: "no_path"}
	setRecvQP := &Action{ID: 0x01000114, Control: ing, Name: NICSetRecvQPAction, Params: []Param{
		{ID: 1, Name: "qp_index", Bits: 16}, {ID: 2, Name: "peer_qp", Bits: 24},
		{ID: 3, Name: "epoch", Bits: 8}, {ID: 4, Name: "start_psn", Bits: 24}}}
	setBackupEV := &Action{ID: 0x01000115, Control: ing, Name: "set_backup_ev", Params: []Param{{ID: 1, Name: "ev", Bits: 32}}}
	backupMissing := &Action{ID: 0x01000116, Control: ing, Name: "backup_missing"}
	internal := []*Action{
		{ID: 0x01000110, Control: ing, Name: "drop_for", Params: []Param{{ID: 1, Name: "event", Bits: 32}}, Internal: true},
		{ID: 0x01000113, Control: ing, Name: "next_try", Params: []Param{{ID: 1, Name: "event", Bits: 32}}, Internal: true},
	}

	plane := func(expr string) Field { return Field{ID: 1, Name: "plane", Bits: 8, Match: Exact, Expr: expr} }
	slot := func() []Field { return []Field{{ID: 1, Name: "slot", Bits: 16, Match: Exact, Expr: "meta.slot"}} }
	return &Program{
		Name: "mrc_nic",
		Tables: []*Table{
			{ID: 0x02000101, Control: ing, Name: "qp_send", Owner: OwnerRuntime,
				Keys: []Field{{ID: 1, Name: "dst_host", Bits: 32, Match: Exact, Expr: "hdr.inner_ipv6.dst_addr[31:0]"},
					{ID: 2, Name: "dst_qp", Bits: 24, Match: Exact, Expr: "hdr.bth.dst_qp"}},
				Actions: []ActionRef{{setSendQP, TableOnly}, {unknownQP, DefaultOnly}}, Default: unknownQP, Size: NICMaxQPs,
				Doc: "QPs the host has opened, for the data it sends (written at run time): by peer host (the low 32 bits of its address: row and down port + 1) and peer QPN, the QP's state index and epoch, its T1 offset, path mode and first EV slot."},
			{ID: 0x02000109, Control: ing, Name: "qp_recv", Owner: OwnerRuntime,
				Keys:    []Field{{ID: 1, Name: "dst_qp", Bits: 24, Match: Exact, Expr: "hdr.bth.dst_qp"}},
				Actions: []ActionRef{{setRecvQP, TableOnly}, {unknownQP, DefaultOnly}}, Default: unknownQP, Size: NICMaxQPs,
				Doc: "QPs the host has opened, for what arrives for them (written at run time): by local QPN, the QP's state index and epoch, the peer's QPN (answers carry it) and the first PSN expected."},
			{ID: 0x02000102, Control: ing, Name: "ev_set",
				Keys:    slot(),
				Actions: []ActionRef{{setEV, TableOnly}, {evMissing, DefaultOnly}}, Default: evMissing, Size: f.EV.SetSize,
				Doc: "The EV set, slot by slot (the same for every NIC; a QP adds its T1 offset)."},
			{ID: 0x0200010a, Control: ing, Name: "ev_backup",
				Keys:    slot(),
				Actions: []ActionRef{{setBackupEV, TableOnly}, {backupMissing, DefaultOnly}}, Default: backupMissing, Size: f.EV.SetSize,
				Doc: "The backup EV set, slot by slot: same plane, another T1; a slot's packets take it while its base EV is ASSUMED_BAD."},
			{ID: 0x02000103, Control: ing, Name: "ev_state", Owner: OwnerRuntime,
				Keys:    []Field{{ID: 1, Name: "ev", Bits: 32, Match: Ternary, Expr: "meta.ev"}},
				Actions: []ActionRef{{evBad, TableOnly}, {evDenied, TableOnly}, {evGood, DefaultOnly}}, Default: evGood, Size: NICEVStateSize,
				Doc: "EV state set by the controller: ASSUMED_BAD or DENIED, over the dataplane's own. Ternary, so that one entry can cover every EV of a (plane, T1)."},
			{ID: 0x02000104, Control: ing, Name: "rx_plane",
				Keys:    []Field{{ID: 1, Name: "port", Bits: PortBits, Match: Exact, Expr: "standard_metadata.ingress_port"}},
				Actions: []ActionRef{{setRxPlane, TableOnly}, {notPlane, DefaultOnly}}, Default: notPlane, Size: NICMaxPlanes,
				Doc: "Plane ports: which plane a port faces and the uDL uSID the NIC port owns in it."},
			{ID: 0x02000105, Control: eg, Name: "plane_self",
				Keys:    []Field{plane("meta.plane")},
				Actions: []ActionRef{{setSelf, TableOnly}, {noPath, DefaultOnly}}, Default: noPath, Size: NICMaxPlanes,
				Doc: "The NIC's own T0 in each plane: the first uSID of every path, and its row."},
			{ID: 0x02000106, Control: eg, Name: "row_usid",
				Keys:    []Field{plane("meta.plane"), {ID: 2, Name: "row", Bits: 16, Match: Exact, Expr: "meta.dst_row"}},
				Actions: []ActionRef{{setRow, TableOnly}, {noPath, DefaultOnly}}, Default: noPath, Size: f.Planes * f.T0Count,
				Doc: "Row templates: the uN uSID of every T0 row in every plane."},
			{ID: 0x02000107, Control: eg, Name: "t1_usid",
				Keys:    []Field{plane("meta.plane"), {ID: 2, Name: "t1", Bits: 16, Match: Exact, Expr: "meta.t1"}},
				Actions: []ActionRef{{setT1, TableOnly}, {noPath, DefaultOnly}}, Default: noPath, Size: f.Planes * f.T1Count,
				Doc: "The uN uSID of every T1 in every plane."},
			{ID: 0x02000108, Control: eg, Name: "down_usid",
				Keys:    []Field{plane("meta.plane"), {ID: 2, Name: "port", Bits: 16, Match: Exact, Expr: "meta.dst_port"}},
				Actions: []ActionRef{{setDown, TableOnly}, {noPath, DefaultOnly}}, Default: noPath, Size: f.Planes * f.T0Down,
				Doc: "The uDL uSID of every T0 down port in every plane: the last uSID of a path."},
		},
		Actions: append([]*Action{setSendQP, unknownQP, setEV, evMissing, evBad, evDenied, evGood, setRxPlane, notPlane,
			setSelf, setRow, setT1, setDown, noPath, setRecvQP, setBackupEV, backupMissing}, internal...),
		Counters: []*Counter{
			{ID: 0x12000101, Name: "events", Size: NICEventCount, Unit: Packets, Doc: "What the NIC did, per event (ingress and egress)."},
			{ID: 0x12000102, Control: eg, Name: "plane_tx", Size: NICMaxPlanes, Unit: PacketsAndBytes, Doc: "Data packets sent per plane (counted once egress has routed them)."},
			{ID: 0x12000103, Control: eg, Name: "slot_tx", Size: f.EV.SetSize, Unit: Packets, Doc: "Data packets sent per EV slot, on its base or backup EV (counted once egress has routed them)."},
			{ID: 0x12000104, Control: eg, Name: "slot_backup_tx", Size: f.EV.SetSize, Unit: Packets, Doc: "Of slot_tx, the data packets sent on the slot's backup EV."},
			{ID: 0x12000105, Control: ing, Name: "slot_failed", Size: f.EV.SetSize, Unit: Packets, Doc: "Per EV slot, how often the NIC declared its base EV ASSUMED_BAD (all QPs)."},
		},
		Registers: []*Register{
			{ID: 0x16000101, Control: ing, Name: "tx_state", Size: NICMaxQPs, Bits: 32, Doc: "Per QP: epoch [31:24] and the next EV slot of its rotation [15:0]."},
			{ID: 0x16000102, Control: ing, Name: "slot_state", Size: NICMaxQPs * f.EV.SetSize, Bits: 32,
				Doc: "Per QP and slot: epoch [31:24], state [23:22] (GOOD, ASSUMED_BAD, BOTH_BAD), SKIP [21], single-path QP [20], unanswered sends [15:8], passes since the last probe [7:0]."},
			{ID: 0x16000103, Control: ing, Name: "rx_state", Size: NICMaxQPs, Bits: 64,
				Doc: "Per QP: epoch [63:56], the highest PSN received beyond the expected one [47:24] (a hole is open while it is less than the window past it), the expected PSN [23:0] (everything before it arrived)."},
			{ID: 0x16000104, Control: ing, Name: "rx_bitmap", Size: NICMaxQPs * f.ReceiveWindow / NICRxWordBits, Bits: NICRxWordBits,
				Doc: "Per QP and word j of its receive window: bit b = PSN p with p modulo the window = 64 j + b arrived, for the PSNs past the expected one and within the window (every other bit is 0)."},
			{ID: 0x16000106, Control: ing, Name: "rx_bitmap_epoch", Size: NICMaxQPs * f.ReceiveWindow / NICRxWordBits, Bits: 8,
				Doc: "The epoch each rx_bitmap word was last written under: a word of another epoch reads as 0."},
			{ID: 0x16000105, Control: ing, Name: "sent_slot", Size: NICMaxQPs * f.ReceiveWindow, Bits: 64,
				Doc: "Per QP and PSN modulo the receive window, the last send of that PSN (a multipath QP's): epoch [63:56], on the backup EV [40], PSN [39:16], EV slot [15:0]. A resend flagged METH LOST finds there the slot that carried the lost copy."},
		},
	}
}

// CloneSession is a packet replication engine clone session a program
// needs: packets cloned to ID leave on Port.
type CloneSession struct {
	ID   uint32
	Port uint32
}

// NICCloneSessions are the clone sessions of the NIC program: the ACK of a
// delivered data packet is a clone of it sent back on the plane it came
// from, so session plane+1 leaves on the plane's port (plane+1).
func NICCloneSessions(f *fabric.Fabric) []CloneSession {
	out := make([]CloneSession, f.Planes)
	for p := range out {
		out[p] = CloneSession{ID: uint32(p + 1), Port: uint32(p + 1)}
	}
	return out
}
