package labtransfer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// Runner runs transfers in one lab. Transfers may run at once: the hosts
// (one engine per NIC host port) and the P4Runtime sessions are shared.
type Runner struct {
	lab   *lab.Lab
	mu    sync.Mutex
	hosts map[string]*host
	ctls  map[string]*ctlRef
}

// NewRunner returns a runner for l.
func NewRunner(l *lab.Lab) *Runner {
	return &Runner{lab: l, hosts: map[string]*host{}, ctls: map[string]*ctlRef{}}
}

// host is a transport engine on a NIC's host port.
type host struct {
	nic    string
	addr   netip.Addr
	eng    *transport.Engine
	port   *lab.HostPort
	cancel context.CancelFunc
	done   chan error
	refs   int
}

// port adapts a lab host port to the engine's.
type port struct{ h *lab.HostPort }

func (p port) Send(_ context.Context, f []byte) error { return p.h.Send(f) }
func (p port) Recv(ctx context.Context) ([]byte, error) {
	f, err := p.h.Recv(ctx)
	return f.Data, err
}

func (r *Runner) nicHost(nic string) (plan.Host, error) { return hostOf(r.lab.Build.Plan, nic) }

func (r *Runner) acquireHost(nic string) (*host, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.hosts[nic]; h != nil {
		h.refs++
		return h, nil
	}
	ph, err := r.nicHost(nic)
	if err != nil {
		return nil, err
	}
	addr := r.lab.Build.Plan.HostAddr(ph)
	eng, err := transport.New(transport.Config{Addr: addr})
	if err != nil {
		return nil, err
	}
	hp, err := r.lab.AttachHost(nic)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &host{nic: nic, addr: addr, eng: eng, port: hp, cancel: cancel, done: make(chan error, 1), refs: 1}
	go func() { h.done <- eng.Run(ctx, port{hp}) }()
	r.hosts[nic] = h
	return h, nil
}

func (r *Runner) releaseHost(h *host) {
	r.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last {
		delete(r.hosts, h.nic)
	}
	r.mu.Unlock()
	if last {
		h.cancel()
		<-h.done
		h.port.Close()
	}
}

type ctlRef struct {
	c    *lab.Control
	refs int
}

func (r *Runner) acquireControl(ctx context.Context, dev string) (*lab.Control, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.ctls[dev]; c != nil {
		c.refs++
		return c.c, nil
	}
	c, err := r.lab.Control(ctx, dev)
	if err != nil {
		return nil, fmt.Errorf("P4Runtime session with %s: %w", dev, err)
	}
	r.ctls[dev] = &ctlRef{c: c, refs: 1}
	return c, nil
}

func (r *Runner) releaseControl(dev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ctls[dev]
	if c == nil {
		return
	}
	if c.refs--; c.refs == 0 {
		delete(r.ctls, dev)
		c.c.Close()
	}
}

// Payload is the buffer a transfer sends: size pseudo-random bytes from
// seed.
func Payload(seed uint64, size int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x6d7263))
	b := make([]byte, size)
	for i := 0; i+8 <= len(b); i += 8 {
		v := rng.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// remoteBase is the receiver's virtual address of a transfer's memory.
const remoteBase = 0x7f0000000000

// prepare checks x's options, and opens its hosts, sessions and QPs.
func (r *Runner) prepare(ctx context.Context, x *xfer) error {
	opt := &x.opt
	if err := r.fill(opt); err != nil {
		return err
	}
	from, err := r.nicHost(opt.From)
	if err != nil {
		return err
	}
	to, err := r.nicHost(opt.To)
	if err != nil {
		return err
	}
	l := r.lab
	p := l.Build.Plan
	index, epoch, err := l.AcquireQP()
	if err != nil {
		return err
	}
	x.index = index
	x.undo = append(x.undo, func(context.Context) error { l.ReleaseQP(index); return nil })
	// QPNs and the rkey from the index and its epoch: unique among the
	// QPs an engine may still hold.
	dstQPN := 0x100000 | uint32(epoch)<<8 | uint32(index)
	srcQPN := dstQPN | 0x800000
	x.rkey = 0x5a000000 | uint32(epoch)<<8 | uint32(index)

	if x.src, err = r.acquireHost(opt.From); err != nil {
		return err
	}
	x.undo = append(x.undo, func(context.Context) error { r.releaseHost(x.src); return nil })
	if x.dst, err = r.acquireHost(opt.To); err != nil {
		return err
	}
	x.undo = append(x.undo, func(context.Context) error { r.releaseHost(x.dst); return nil })
	if x.srcCtl, err = r.acquireControl(ctx, opt.From); err != nil {
		return err
	}
	x.undo = append(x.undo, func(context.Context) error { r.releaseControl(opt.From); return nil })
	if x.dstCtl, err = r.acquireControl(ctx, opt.To); err != nil {
		return err
	}
	x.undo = append(x.undo, func(context.Context) error { r.releaseControl(opt.To); return nil })

	// The NICs' QPs, as the hosts' RDMA stacks open them.
	single := opt.Mode.SinglePath()
	nicQPs := []struct {
		c  *lab.Control
		qp lab.QP
	}{
		{x.srcCtl, lab.QP{Local: srcQPN, Peer: p.HostAddr(to), PeerQP: dstQPN, Index: index, Epoch: epoch, T1Offset: opt.T1Offset, StartPSN: opt.StartPSN, SinglePath: single}},
		{x.dstCtl, lab.QP{Local: dstQPN, Peer: p.HostAddr(from), PeerQP: srcQPN, Index: index, Epoch: epoch, T1Offset: opt.T1Offset, StartPSN: opt.StartPSN, SinglePath: single}},
	}
	for _, q := range nicQPs {
		if err := q.c.OpenQP(ctx, q.qp); err != nil {
			return err
		}
		x.undo = append(x.undo, func(ctx context.Context) error { return q.c.CloseQP(ctx, q.qp) })
	}

	qcfg := transport.QPConfig{Mode: opt.Mode, StartPSN: opt.StartPSN, Segment: opt.Segment, Window: opt.Window,
		ReorderThreshold: opt.ReorderThreshold, InitialRTO: opt.InitialRTO, MinRTO: opt.MinRTO, MaxRTO: opt.MaxRTO,
		AckEvery: r.lab.Build.Plan.F.AckEvery, ReceiveWindow: r.lab.Build.Plan.F.ReceiveWindow}
	sc, dc := qcfg, qcfg
	sc.LocalQPN, sc.PeerQPN, sc.Peer = srcQPN, dstQPN, x.dst.addr
	dc.LocalQPN, dc.PeerQPN, dc.Peer = dstQPN, srcQPN, x.src.addr
	if x.sqp, err = x.src.eng.OpenQP(sc); err != nil {
		return err
	}
	if x.dqp, err = x.dst.eng.OpenQP(dc); err != nil {
		return err
	}
	if x.mr, err = x.dst.eng.RegisterMR(remoteBase, x.rkey, make([]byte, opt.Size)); err != nil {
		return err
	}
	x.data = Payload(opt.Seed, opt.Size)
	return nil
}

// release runs x's undos in reverse (scenario, QPs, sessions, hosts,
// index), every one of them, and returns the first error.
func (x *xfer) release(ctx context.Context) error {
	var first error
	for k := len(x.undo) - 1; k >= 0; k-- {
		if err := x.undo[k](ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}
