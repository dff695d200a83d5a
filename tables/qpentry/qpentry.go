// Package qpentry makes the NIC program's runtime QP entries (qp_send and
// qp_recv, docs/protocol.md section 4) for a QP: what a host's RDMA stack
// writes when it opens one. The lab writes them to BMv2 over P4Runtime, the
// NIC model and the simulator to internal/nicmodel: one definition for both.
package qpentry

import (
	"fmt"
	"net/netip"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// QP is one queue pair as a NIC's tables hold it. The NIC keys the data its
// host sends by (peer host, peer QPN) in qp_send, and what arrives for the
// QP by its local QPN in qp_recv; both name the same state index and epoch.
type QP struct {
	// Local is the QP's number on this NIC: the BTH destination QP of what
	// arrives for it.
	Local uint32
	// Peer is the peer host's address and PeerQP its QP number: the BTH
	// destination QP of the data this QP sends, and of every answer the
	// NIC sends for it.
	Peer   netip.Addr
	PeerQP uint32
	// Index is the QP's state index in the NIC's per-QP registers
	// (below schema.NICMaxQPs), Epoch its generation (1-255): a QP opened
	// on an index again with another epoch starts from fresh state.
	Index int
	Epoch uint8
	// T1Offset is added to the T1 of every EV the QP sends on, modulo the
	// T1 count: 0 to T1s - 1 (Entries refuses the rest, and the NIC
	// program drops the packets of an entry that has one).
	T1Offset int
	// StartPSN is the first PSN the QP expects from its peer.
	StartPSN uint32
	// SinglePath sends every packet on one EV (slot FirstSlot of the set,
	// plus the T1 offset), with no EV states: the RoCEv2 baseline.
	SinglePath bool
	// FirstSlot is the EV slot the QP's rotation starts at (0 to the set
	// size - 1): the one slot of a single-path QP, and so its plane.
	FirstSlot int
}

// Entries returns the qp_send and qp_recv entries of qp in prog (the NIC
// program of a fabric with t1Count T1s per plane), refusing values the
// program cannot hold.
func Entries(prog *schema.Program, t1Count int, qp QP) (send, recv entry.Entry, err error) {
	set := 0
	if t := prog.Table(schema.NICEVSet); t != nil {
		set = t.Size
	}
	switch {
	case qp.FirstSlot < 0 || qp.FirstSlot >= set:
		return send, recv, fmt.Errorf("QP %d: first slot %d is outside the EV set's 0-%d", qp.Local, qp.FirstSlot, set-1)
	case qp.Index < 0 || qp.Index >= schema.NICMaxQPs:
		return send, recv, fmt.Errorf("QP %d: state index %d is outside 0-%d", qp.Local, qp.Index, schema.NICMaxQPs-1)
	case qp.T1Offset < 0 || qp.T1Offset >= t1Count:
		return send, recv, fmt.Errorf("QP %d: T1 offset %d is outside 0-%d (the fabric has %d T1s per plane)", qp.Local, qp.T1Offset, t1Count-1, t1Count)
	case qp.Epoch == 0:
		return send, recv, fmt.Errorf("QP %d: epoch 0 is what the NIC's registers hold before any QP: use 1-255", qp.Local)
	case !qp.Peer.Is6():
		return send, recv, fmt.Errorf("QP %d: peer %v is not an IPv6 host address", qp.Local, qp.Peer)
	}
	a := qp.Peer.As16()
	host := uint64(a[12])<<24 | uint64(a[13])<<16 | uint64(a[14])<<8 | uint64(a[15])
	single := uint64(0)
	if qp.SinglePath {
		single = 1
	}
	send, err = Make(prog, schema.NICQPSend, schema.NICSetSendQPAction,
		[]entry.Match{{Value: host}, {Value: uint64(qp.PeerQP)}},
		uint64(qp.Index), uint64(qp.T1Offset), uint64(qp.Epoch), single, uint64(qp.FirstSlot))
	if err != nil {
		return send, recv, fmt.Errorf("QP %d: %w", qp.Local, err)
	}
	recv, err = Make(prog, schema.NICQPRecv, schema.NICSetRecvQPAction,
		[]entry.Match{{Value: uint64(qp.Local)}},
		uint64(qp.Index), uint64(qp.PeerQP), uint64(qp.Epoch), uint64(qp.StartPSN))
	if err != nil {
		return send, recv, fmt.Errorf("QP %d: %w", qp.Local, err)
	}
	return send, recv, nil
}

// Make builds an entry of prog by table and action name, checked against
// the schema (a ternary table's entry gets priority 1).
func Make(prog *schema.Program, table, action string, match []entry.Match, params ...uint64) (entry.Entry, error) {
	t := prog.Table(table)
	if t == nil {
		return entry.Entry{}, fmt.Errorf("no table %s", table)
	}
	for _, r := range t.Actions {
		if r.Action.Name == action {
			e := entry.Entry{Table: t, Action: r.Action, Match: match, Params: params}
			if t.NeedsPriority() {
				e.Priority = 1
			}
			return e, e.Validate()
		}
	}
	return entry.Entry{}, fmt.Errorf("table %s has no action %s", table, action)
}
