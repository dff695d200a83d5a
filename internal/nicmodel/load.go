package nicmodel

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// CommonFromBuild returns the common NIC tables a build installs on every
// NIC (its nics "#common" part).
func CommonFromBuild(b *artifacts.Build) (*Common, error) {
	entries, err := b.NICCommonEntries()
	if err != nil {
		return nil, fmt.Errorf("nicmodel: %w", err)
	}
	c := NewCommon(b.Plan.F)
	for _, e := range entries {
		if err := c.Write(Insert, e); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// FromBuild returns host h's NIC as the build installs it: its own entries
// (its T0 row's and down port's parts) and the program's clone sessions,
// sharing common (nil: loaded from the build).
func FromBuild(b *artifacts.Build, h plan.Host, common *Common) (*NIC, error) {
	if common == nil {
		var err error
		if common, err = CommonFromBuild(b); err != nil {
			return nil, err
		}
	}
	n, err := New(b.Plan.F, common)
	if err != nil {
		return nil, err
	}
	own, err := b.NICEntries(h)
	if err != nil {
		return nil, fmt.Errorf("nicmodel: %s: %w", b.Plan.HostName(h), err)
	}
	if err := n.WriteAll(Insert, own...); err != nil {
		return nil, fmt.Errorf("nicmodel: %s: %w", b.Plan.HostName(h), err)
	}
	for _, cs := range schema.NICCloneSessions(b.Plan.F) {
		n.SetCloneSession(cs)
	}
	return n, nil
}

// WriteAll applies one update type to entries, in order.
func (n *NIC) WriteAll(op Op, entries ...entry.Entry) error {
	for _, e := range entries {
		if err := n.Write(op, e); err != nil {
			return err
		}
	}
	return nil
}

// OpenQP writes qp's qp_send and qp_recv entries, as the host's RDMA stack
// does on the program (qpentry.Entries: the lab's entries).
func (n *NIC) OpenQP(qp qpentry.QP) error {
	send, recv, err := qpentry.Entries(n.common.prog, n.p.T1Count, qp)
	if err != nil {
		return fmt.Errorf("nicmodel: %w", err)
	}
	return n.WriteAll(Insert, send, recv)
}

// CloseQP deletes qp's entries; its registers keep their words.
func (n *NIC) CloseQP(qp qpentry.QP) error {
	send, recv, err := qpentry.Entries(n.common.prog, n.p.T1Count, qp)
	if err != nil {
		return fmt.Errorf("nicmodel: %w", err)
	}
	return n.WriteAll(Delete, send, recv)
}

// Program is the NIC program's schema the model's tables follow.
func (n *NIC) Program() *schema.Program { return n.common.prog }
