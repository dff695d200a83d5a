package lab

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// QP is one queue pair as a NIC's tables hold it (docs/protocol.md section
// 4): what the host's RDMA stack writes when it opens a QP.
type QP = qpentry.QP

// QPEntries returns the qp_send and qp_recv entries of qp on this NIC.
func (c *Control) QPEntries(qp QP) (send, recv entry.Entry, err error) {
	return qpentry.Entries(c.Prog, c.t1Count, qp)
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

// AcquireQP reserves a free QP state index (0 to schema.NICMaxQPs-1) and the
// epoch to open it with: a new one at every use of the index, since the
// NIC's per-QP registers, which P4Runtime cannot reset, are tagged with it.
// ReleaseQP frees the index once the QP is closed.
func (l *Lab) AcquireQP() (index int, epoch uint8, err error) {
	l.qpMu.Lock()
	defer l.qpMu.Unlock()
	if l.qpUses == nil {
		l.qpUses, l.qpBusy = map[int]int{}, map[int]bool{}
	}
	for i := 0; i < schema.NICMaxQPs; i++ {
		if l.qpBusy[i] {
			continue
		}
		l.qpBusy[i] = true
		l.qpUses[i]++
		// Epoch 0 is what a register holds before any QP: never used.
		return i, uint8(l.qpUses[i]%255 + 1), nil
	}
	return 0, 0, fmt.Errorf("lab: every QP index from 0 to %d is in use", schema.NICMaxQPs-1)
}

// ReleaseQP frees an index AcquireQP reserved.
func (l *Lab) ReleaseQP(index int) {
	l.qpMu.Lock()
	defer l.qpMu.Unlock()
	delete(l.qpBusy, index)
}
