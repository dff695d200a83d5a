// Package labtransfer moves data through a running lab: an RDMA Write from
// one host to another, each host a transport engine (package transport) on
// its NIC's host port, the NICs' QPs opened over P4Runtime as a host's RDMA
// stack would, and a scenario (a link cut or flap at a fraction of the
// write, a throttled port, random loss) applied while it runs. It reports
// what the issue of the MRC transport asks to see: completion, time,
// goodput, retransmissions by cause, duplicates, the NICs' EV events, the
// P4Runtime writes during the transfer (none: MRC reacts in the dataplane)
// and the sha256 of what was sent and what landed in the receiver's memory.
//
// `mrcgen lab transfer` runs it in the lab's process (through the control
// socket); the BMv2 tests call it directly.
package labtransfer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// Progress is a report while the transfer runs.
type Progress struct {
	Elapsed     float64 `json:"elapsed_seconds"`
	Sent        int64   `json:"sent"` // packets sent for the first time
	Packets     int64   `json:"packets"`
	Retransmits int64   `json:"retransmits"`
	Event       string  `json:"event,omitempty"` // a scenario event just applied
}

// Event is a scenario step as applied.
type Event struct {
	What    string  `json:"what"`
	At      float64 `json:"at"`   // the fraction it was due at (0: start)
	Sent    int64   `json:"sent"` // packets first sent when it was applied
	Elapsed float64 `json:"elapsed_seconds"`
}

// Run runs one transfer and returns its result. A transfer that does not
// complete within opt.Limit is a result with Complete false; the error is
// for what kept it from running (a NIC unknown, a P4Runtime failure, ctx).
func (r *Runner) Run(ctx context.Context, opt Options) (*Result, error) {
	res, err := r.RunMany(ctx, opt)
	if len(res) == 1 {
		return res[0], err
	}
	return nil, err
}

// xfer is one transfer of RunMany.
type xfer struct {
	opt            Options
	name           string
	index          int
	src, dst       *host
	srcCtl, dstCtl *lab.Control
	sqp, dqp       *transport.QP
	mr             *transport.MemoryRegion
	data           []byte
	rkey           uint32
	sim            *scenario
	tr             *transport.Transfer
	n              int64
	received       chan error
	srcEv0, dstEv0 []int64
	sent, recvDone bool
	gaveUp         bool
	start          time.Time
	lastReport     time.Time
	ended          time.Duration
	// undo gives back, in reverse, what prepare and RunMany took
	// (release).
	undo []func(ctx context.Context) error
}

// RunMany runs transfers at once (for example both directions between two
// NICs, or a transfer and the one competing with it for a port) and returns
// their results in order. All their QPs are open before the first write
// starts and closed after the last ends, so each result's Writes counts the
// P4Runtime writes of the time they all ran.
func (r *Runner) RunMany(ctx context.Context, opts ...Options) (res []*Result, err error) {
	if len(opts) == 0 {
		return nil, errors.New("transfer: nothing to run")
	}
	xs := make([]*xfer, len(opts))
	defer func() {
		// Undo in reverse: scenarios, QPs, sessions, hosts, indexes.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for i := len(xs) - 1; i >= 0; i-- {
			x := xs[i]
			if x == nil {
				continue
			}
			if uerr := x.release(cctx); uerr != nil && err == nil {
				err = fmt.Errorf("%s: %w", x.name, uerr)
			}
		}
	}()
	for i, opt := range opts {
		x := &xfer{opt: opt, name: fmt.Sprintf("transfer %s -> %s", opt.From, opt.To)}
		xs[i] = x
		if err := r.prepare(ctx, x); err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
	}
	l := r.lab
	for _, x := range xs {
		if x.srcEv0, err = r.events(ctx, x.srcCtl); err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		if x.dstEv0, err = r.events(ctx, x.dstCtl); err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
	}
	wire0 := l.Stats()
	writes0 := l.Writes()
	for _, x := range xs {
		x.sim = &scenario{r: r, opt: &x.opt}
		sim := x.sim
		x.undo = append(x.undo, sim.restore)
		if err := sim.begin(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
	}
	for _, x := range xs {
		x.start = time.Now()
		x.lastReport = x.start
		x.n = int64((len(x.data) + x.opt.Segment - 1) / x.opt.Segment)
		// Steps at 0% go before the first send; every later one holds the
		// sender at its packet (sendLimit) until step applies it.
		for _, st := range x.sim.due(0, x.n) {
			if err := x.sim.apply(ctx, st, 0, 0); err != nil {
				return nil, fmt.Errorf("%s: %w", x.name, err)
			}
		}
		x.tr, err = x.sqp.Write(transport.WriteRequest{Data: x.data, RemoteVAddr: remoteBase, RKey: x.rkey, SendLimit: x.sim.sendLimit(x.n)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		if p := x.tr.Stats().Packets; p != x.n {
			return nil, fmt.Errorf("%s: the write is %d packets, the scenario counted %d", x.name, p, x.n)
		}
		x.received = make(chan error, 1)
		rctx, cancel := context.WithCancel(ctx)
		x.undo = append(x.undo, func(context.Context) error { cancel(); return nil })
		go func(q *transport.QP) {
			_, err := q.WaitReceived(rctx, 1)
			x.received <- err
		}(x.dqp)
	}

	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	for {
		running := 0
		for _, x := range xs {
			if x.ended != 0 {
				continue
			}
			if err := r.step(ctx, x); err != nil {
				return nil, err
			}
			if x.ended == 0 {
				running++
			}
		}
		if running == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("transfer: %w", ctx.Err())
		case <-poll.C:
		}
	}
	writes1 := l.Writes()
	var writes uint64
	for dev, w := range writes1 {
		writes += w - writes0[dev]
	}
	wireDrops := func() uint64 {
		w := l.Stats()
		return w.DataDrops() - wire0.DataDrops()
	}
	for _, x := range xs {
		rx, err := r.result(ctx, x, wireDrops)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		rx.Writes = writes
		res = append(res, rx)
	}
	// The wires' drops once every transfer's packets have settled: a copy
	// still in flight at the end may yet be dropped on a cut link.
	wire1 := l.Stats()
	for _, rx := range res {
		rx.CutDrops, rx.LossDrops = wire1.CutDrops-wire0.CutDrops, wire1.LossDrops-wire0.LossDrops
		rx.CutData, rx.LossData = wire1.CutData-wire0.CutData, wire1.LossData-wire0.LossData
	}
	return res, nil
}

// step looks at one running transfer: done, given up, a scenario step due,
// progress due.
func (r *Runner) step(ctx context.Context, x *xfer) error {
	select {
	case err := <-x.src.done:
		x.src.done <- err
		return fmt.Errorf("%s: %s's engine stopped: %w", x.name, x.opt.From, err)
	case err := <-x.received:
		if err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
		x.recvDone = true
	default:
	}
	select {
	case <-x.tr.Done():
		x.sent = true
	default:
	}
	now := time.Now()
	if x.sent && x.recvDone {
		x.ended = now.Sub(x.start)
		return nil
	}
	if now.Sub(x.start) >= x.opt.Limit {
		x.gaveUp = true
		x.ended = now.Sub(x.start)
		return nil
	}
	s := x.tr.Stats()
	first := s.PacketsSent - s.Retransmits.Total()
	if due := x.sim.due(first, x.n); len(due) > 0 {
		for _, st := range due {
			if err := x.sim.apply(ctx, st, first, now.Sub(x.start)); err != nil {
				return fmt.Errorf("%s: %w", x.name, err)
			}
			x.report(st.String())
		}
		x.tr.SetSendLimit(x.sim.sendLimit(x.n))
	}
	if now.Sub(x.lastReport) >= x.opt.ProgressEvery {
		x.report("")
	}
	return nil
}

func (x *xfer) report(event string) {
	if x.opt.Progress == nil {
		return
	}
	s := x.tr.Stats()
	x.opt.Progress(Progress{Elapsed: time.Since(x.start).Seconds(), Sent: s.PacketsSent - s.Retransmits.Total(),
		Packets: s.Packets, Retransmits: s.Retransmits.Total(), Event: event})
	x.lastReport = time.Now()
}
