package lab

import (
	"context"
	"fmt"
	"net/netip"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// QP is one queue pair as a NIC's tables hold it (docs/protocol.md section
// 5): what the host's RDMA stack writes when it opens a QP. The NIC keys
// the data its host sends by (peer host, peer QPN) in qp_send, and what
// arrives for the QP by its local QPN in qp_recv; both name the same state
// index and epoch.
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
	// (below schema.NICMaxQPs), Epoch its generation: a QP opened on an
	// index again with another epoch starts from fresh state.
	Index int
	Epoch uint8
	// T1Offset is added to the T1 of every EV the QP sends on, modulo the
	// T1 count: 0 to T1s - 1 (QPEntries refuses the rest, and the NIC
	// program drops the packets of an entry that has one).
	T1Offset int
	// StartPSN is the first PSN the QP expects from its peer.
	StartPSN uint32
	// SinglePath sends every packet on one EV (slot 0 of the set, plus the
	// T1 offset), with no EV states: the RoCEv2 baseline.
	SinglePath bool
}

// QPEntries returns the qp_send and qp_recv entries of qp on this NIC.
func (c *Control) QPEntries(qp QP) (send, recv entry.Entry, err error) {
	if qp.Index < 0 || qp.Index >= schema.NICMaxQPs {
		return send, recv, fmt.Errorf("QP %d: state index %d is outside 0-%d", qp.Local, qp.Index, schema.NICMaxQPs-1)
	}
	if qp.T1Offset < 0 || qp.T1Offset >= c.t1Count {
		return send, recv, fmt.Errorf("QP %d: T1 offset %d is outside 0-%d (the fabric has %d T1s per plane)", qp.Local, qp.T1Offset, c.t1Count-1, c.t1Count)
	}
	if qp.Epoch == 0 {
		return send, recv, fmt.Errorf("QP %d: epoch 0 is what the NIC's registers hold before any QP: use 1-255", qp.Local)
	}
	if !qp.Peer.Is6() {
		return send, recv, fmt.Errorf("QP %d: peer %v is not an IPv6 host address", qp.Local, qp.Peer)
	}
	a := qp.Peer.As16()
	host := uint64(a[12])<<24 | uint64(a[13])<<16 | uint64(a[14])<<8 | uint64(a[15])
	single := uint64(0)
	if qp.SinglePath {
		single = 1
	}
	send, err = c.Entry(schema.NICQPSend, schema.NICSetSendQPAction,
		[]entry.Match{{Value: host}, {Value: uint64(qp.PeerQP)}},
		uint64(qp.Index), uint64(qp.T1Offset), uint64(qp.Epoch), single)
	if err != nil {
		return send, recv, fmt.Errorf("QP %d: %w", qp.Local, err)
	}
	recv, err = c.Entry(schema.NICQPRecv, schema.NICSetRecvQPAction,
		[]entry.Match{{Value: uint64(qp.Local)}},
		uint64(qp.Index), uint64(qp.PeerQP), uint64(qp.Epoch), uint64(qp.StartPSN))
	if err != nil {
		return send, recv, fmt.Errorf("QP %d: %w", qp.Local, err)
	}
	return send, recv, nil
}

// OpenQP installs qp on this NIC, as the host's RDMA stack would.
func (c *Control) OpenQP(ctx context.Context, qp QP) error {
	send, recv, err := c.QPEntries(qp)
	if err != nil {
		return err
	}
	if err := c.Write(ctx, p4v1.Update_INSERT, send, recv); err != nil {
		return fmt.Errorf("open QP %d on %s: %w", qp.Local, c.Device, err)
	}
	return nil
}

// CloseQP removes qp from this NIC. Its registers keep their words, which a
// later QP on the same index ignores as long as it has another epoch.
func (c *Control) CloseQP(ctx context.Context, qp QP) error {
	send, recv, err := c.QPEntries(qp)
	if err != nil {
		return err
	}
	if err := c.Write(ctx, p4v1.Update_DELETE, send, recv); err != nil {
		return fmt.Errorf("close QP %d on %s: %w", qp.Local, c.Device, err)
	}
	return nil
}

// FirstLabQP is the first NIC state index AcquireQP hands out: the indexes
// below it are left to callers that open QPs by hand (the BMv2 tests).
const FirstLabQP = 128

// AcquireQP reserves a free QP state index (FirstLabQP and up) and the
// epoch to open it with: a new one at every use of the index, since the
// NIC's per-QP registers, which P4Runtime cannot reset, are tagged with it.
// ReleaseQP frees the index once the QP is closed.
func (l *Lab) AcquireQP() (index int, epoch uint8, err error) {
	l.qpMu.Lock()
	defer l.qpMu.Unlock()
	if l.qpUses == nil {
		l.qpUses, l.qpBusy = map[int]int{}, map[int]bool{}
	}
	for i := FirstLabQP; i < schema.NICMaxQPs; i++ {
		if l.qpBusy[i] {
			continue
		}
		l.qpBusy[i] = true
		l.qpUses[i]++
		// Epoch 0 is what a register holds before any QP: never used.
		return i, uint8(l.qpUses[i]%255 + 1), nil
	}
	return 0, 0, fmt.Errorf("lab: every QP index from %d to %d is in use", FirstLabQP, schema.NICMaxQPs-1)
}

// ReleaseQP frees an index AcquireQP reserved.
func (l *Lab) ReleaseQP(index int) {
	l.qpMu.Lock()
	defer l.qpMu.Unlock()
	delete(l.qpBusy, index)
}
