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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/transport"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// BMv2's RTTs are milliseconds (a packet crosses 5 simple_switch processes
// each way, at a few hundred packets/s with a window queued in front of
// them): the engine's defaults, made for hardware, would resend everything
// before its first answer. The RTO floor is above the RTT of a full window
// of 64 queued on one path at ~300 pkt/s (about 200 ms), which the first
// RTT samples, taken before the queue builds, do not foresee.
const (
	DefaultInitialRTO = time.Second
	DefaultMinRTO     = 500 * time.Millisecond
	DefaultMaxRTO     = 4 * time.Second
	DefaultLimit      = 60 * time.Second
	DefaultSegment    = 1024
)

// MaxSize is the largest write a lab transfer takes: 16 MiB. A transfer
// holds its buffer twice (the sender's and the receiver's memory) besides
// its per-packet state, and a failed allocation would end the lab's process
// and every BMv2 switch with it (they die with their parent), so a larger
// size is refused before anything is allocated. At the lab's few hundred
// packets/s, 16 MiB in 1 KiB packets (16,384 of them) already takes about
// a minute: DefaultLimit.
const MaxSize = 16 << 20

// Options describe one transfer.
type Options struct {
	From, To string // NIC names
	Size     int    // bytes
	Mode     transport.Mode
	// Segment is the payload per packet, Window the PSNs in flight past the
	// cumulative ack (0: DefaultSegment, transport.DefaultWindow).
	Segment, Window  int
	ReorderThreshold int
	// RTO bounds (0: the defaults above).
	InitialRTO, MinRTO, MaxRTO time.Duration
	// StartPSN is the write's first PSN (24 bits).
	StartPSN uint32
	// Limit is how long the write may take: past it the transfer ends as
	// not completed (a result, not an error). 0: DefaultLimit.
	Limit time.Duration
	// Seed makes the payload (0: 1).
	Seed uint64
	// T1Offset is the QP's T1 offset on the NICs.
	T1Offset int

	Links     []LinkEvents
	Throttles []Throttle
	Losses    []Loss

	// Progress, if set, is called about every ProgressEvery (0: 500ms) and
	// at each scenario event.
	Progress      func(Progress) `json:"-"`
	ProgressEvery time.Duration
}

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

// Retransmits by cause (transport.Retransmits).
type Retransmits struct {
	TrimNACK int64 `json:"trim_nack"`
	SACKGap  int64 `json:"sack_gap"`
	Timeout  int64 `json:"timeout"`
	SeqError int64 `json:"seq_error"`
	Total    int64 `json:"total"`
}

// NICEvents are counter deltas of the NICs' events counter over the
// transfer (the whole NIC: a transfer in the other direction at the same
// time counts too).
type NICEvents struct {
	// Source NIC.
	EVsRetired int64 `json:"evs_retired"` // NICEventPathFailed
	EVsRevived int64 `json:"evs_revived"` // NICEventRevived
	BackupSent int64 `json:"backup_sent"` // NICEventBackupTaken
	ProbesSent int64 `json:"probes_sent"`
	// Destination NIC.
	Trimmed    int64 `json:"trimmed"`    // NICEventTrimmedRx: trimmed packets received, NACKed
	Duplicates int64 `json:"duplicates"` // NICEventDuplicate: data already received, SACKed, not delivered
}

// Result is one transfer's outcome.
type Result struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Mode     string  `json:"mode"`
	Bytes    int64   `json:"bytes"`
	Segment  int     `json:"segment"`
	Window   int     `json:"window"`
	QPIndex  int     `json:"qp_index"`
	Limit    float64 `json:"limit_seconds"`
	Complete bool    `json:"completed"`
	// Seconds is the completion time (first packet to last ack), or the
	// time given up after when not completed.
	Seconds     float64     `json:"seconds"`
	GoodputPPS  float64     `json:"goodput_pps"`
	GoodputBps  float64     `json:"goodput_bytes_per_second"`
	Packets     int64       `json:"packets"`
	PacketsSent int64       `json:"packets_sent"`
	Retransmits Retransmits `json:"retransmits"`
	GoBackNs    int64       `json:"go_back_ns"`
	// DupSACKs are SACKs for a PSN already acked (a copy arrived twice);
	// RecvDuplicates the receiving engine's duplicate placements (the NIC
	// drops duplicates it can tell, so these are rare).
	DupSACKs       int64     `json:"dup_sacks"`
	RecvDuplicates int64     `json:"recv_duplicates"`
	SACKs          int64     `json:"sacks"`
	NACKs          int64     `json:"nacks"`
	SRTTMillis     float64   `json:"srtt_ms"`
	RTOMillis      float64   `json:"rto_ms"`
	NIC            NICEvents `json:"nic"`
	// WireDrops are the packets the lab's wires dropped during the
	// transfer (cut links and random loss; every flow of the lab).
	CutDrops  uint64 `json:"cut_drops"`
	LossDrops uint64 `json:"loss_drops"`
	// Writes is the P4Runtime Write RPCs the lab sent any device between
	// the QPs' opening and their closing.
	Writes     uint64  `json:"p4runtime_writes"`
	SentSHA256 string  `json:"sent_sha256"`
	RecvSHA256 string  `json:"received_sha256"`
	Match      bool    `json:"match"`
	Events     []Event `json:"events,omitempty"`
}

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
	undo           []func(ctx context.Context) error
}

const remoteBase = 0x7f0000000000

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
			for k := len(x.undo) - 1; k >= 0; k-- {
				if uerr := x.undo[k](cctx); uerr != nil && err == nil {
					err = fmt.Errorf("%s: %w", x.name, uerr)
				}
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
		x.tr, err = x.sqp.Write(transport.WriteRequest{Data: x.data, RemoteVAddr: remoteBase, RKey: x.rkey})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		x.n = x.tr.Stats().Packets
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
	wire1 := l.Stats()
	var writes uint64
	for dev, w := range writes1 {
		writes += w - writes0[dev]
	}
	for _, x := range xs {
		rx, err := r.result(ctx, x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.name, err)
		}
		rx.Writes = writes
		rx.CutDrops, rx.LossDrops = wire1.CutDrops-wire0.CutDrops, wire1.LossDrops-wire0.LossDrops
		res = append(res, rx)
	}
	return res, nil
}

func (r *Runner) events(ctx context.Context, c *lab.Control) ([]int64, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return c.Counters(rctx, schema.NICEventCounter)
}

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
		ReorderThreshold: opt.ReorderThreshold, InitialRTO: opt.InitialRTO, MinRTO: opt.MinRTO, MaxRTO: opt.MaxRTO}
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
	for _, st := range x.sim.due(first, x.n) {
		if err := x.sim.apply(ctx, st, first, now.Sub(x.start)); err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
		x.report(st.String())
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

// result reads x's statistics and the NICs' counters after it.
func (r *Runner) result(ctx context.Context, x *xfer) (*Result, error) {
	stats := x.tr.Stats()
	srcEv1, err := r.events(ctx, x.srcCtl)
	if err != nil {
		return nil, err
	}
	dstEv1, err := r.events(ctx, x.dstCtl)
	if err != nil {
		return nil, err
	}
	d := func(a, b []int64, i int) int64 { return b[i] - a[i] }
	nic := NICEvents{
		EVsRetired: d(x.srcEv0, srcEv1, schema.NICEventPathFailed),
		EVsRevived: d(x.srcEv0, srcEv1, schema.NICEventRevived),
		BackupSent: d(x.srcEv0, srcEv1, schema.NICEventBackupTaken),
		ProbesSent: d(x.srcEv0, srcEv1, schema.NICEventProbeSent),
		Trimmed:    d(x.dstEv0, dstEv1, schema.NICEventTrimmedRx),
		Duplicates: d(x.dstEv0, dstEv1, schema.NICEventDuplicate),
	}
	x.tr.SetNICEvents(transport.NICEvents{EVsRetired: nic.EVsRetired, EVsRevived: nic.EVsRevived, BackupUsed: nic.BackupSent})
	sentSum := sha256.Sum256(x.data)
	recvSum := sha256.Sum256(x.mr.Bytes())
	res := &Result{
		From: x.opt.From, To: x.opt.To, Mode: x.opt.Mode.String(), Bytes: int64(x.opt.Size),
		Segment: x.sqp.Config().Segment, Window: x.sqp.Config().Window, QPIndex: x.index, Limit: x.opt.Limit.Seconds(),
		Complete: x.sent && x.recvDone, Seconds: x.ended.Seconds(),
		Packets: stats.Packets, PacketsSent: stats.PacketsSent,
		Retransmits: Retransmits{TrimNACK: stats.Retransmits.TrimNACK, SACKGap: stats.Retransmits.SACKGap,
			Timeout: stats.Retransmits.Timeout, SeqError: stats.Retransmits.SeqError, Total: stats.Retransmits.Total()},
		GoBackNs: stats.GoBackNs, DupSACKs: stats.Duplicates, RecvDuplicates: x.dqp.RecvCounters().Duplicates,
		SACKs: stats.SACKs, NACKs: stats.NACKs,
		SRTTMillis: float64(stats.SRTT) / 1e6, RTOMillis: float64(stats.RTO) / 1e6,
		NIC:        nic,
		SentSHA256: hex.EncodeToString(sentSum[:]), RecvSHA256: hex.EncodeToString(recvSum[:]),
		Match:  sentSum == recvSum,
		Events: x.sim.events,
	}
	if res.Complete {
		res.Seconds = stats.Duration().Seconds()
		res.GoodputPPS = stats.GoodputPackets()
		res.GoodputBps = stats.GoodputBytes()
	}
	return res, nil
}

// check reports what is wrong with o by itself, before the transfer takes
// anything of the lab or allocates its buffers (the control API's transfer
// command calls it first).
func (o *Options) check() error {
	var errs []error
	if o.From == o.To {
		errs = append(errs, fmt.Errorf("from and to are the same NIC %q", o.From))
	}
	switch {
	case o.Size <= 0:
		errs = append(errs, fmt.Errorf("size %d is not a number of bytes above 0", o.Size))
	case o.Size > MaxSize:
		errs = append(errs, fmt.Errorf("size %d bytes: a lab transfer is at most %d MiB (%d bytes)", o.Size, MaxSize>>20, MaxSize))
	}
	seg := o.Segment
	if seg == 0 {
		seg = DefaultSegment
	}
	switch {
	case seg < 0:
		errs = append(errs, fmt.Errorf("segment %d bytes is negative", seg))
	case o.Size > 0 && o.Size <= MaxSize && (o.Size+seg-1)/seg > transport.MaxPackets:
		errs = append(errs, fmt.Errorf("size %d bytes in %d-byte segments is %d packets, more than a write takes (%d)",
			o.Size, seg, (o.Size+seg-1)/seg, transport.MaxPackets))
	}
	for _, le := range o.Links {
		if len(le.At) == 0 {
			errs = append(errs, fmt.Errorf("link %s:%s: no fraction to change it at", le.A, le.B))
		}
		for i, f := range le.At {
			if !(f >= 0 && f < 1) || (i > 0 && f <= le.At[i-1]) {
				errs = append(errs, fmt.Errorf("link %s:%s: fractions %v are not increasing in [0, 1)", le.A, le.B, le.At))
				break
			}
		}
	}
	for _, t := range o.Throttles {
		if t.PPS <= 0 {
			errs = append(errs, fmt.Errorf("throttle %s: rate %d pkt/s", t.Device, t.PPS))
		}
	}
	for _, ls := range o.Losses {
		if !(ls.Percent >= 0 && ls.Percent <= 100) {
			errs = append(errs, fmt.Errorf("loss %s:%s: %v%%", ls.A, ls.B, ls.Percent))
		}
	}
	return errors.Join(errs...)
}

// fill checks o, against the lab too, and sets its defaults.
func (r *Runner) fill(o *Options) error {
	errs := []error{o.check()}
	if o.Segment == 0 {
		o.Segment = DefaultSegment
	}
	if o.Window == 0 {
		o.Window = transport.DefaultWindow
	}
	if o.InitialRTO == 0 {
		o.InitialRTO = DefaultInitialRTO
	}
	if o.MinRTO == 0 {
		o.MinRTO = DefaultMinRTO
	}
	if o.MaxRTO == 0 {
		o.MaxRTO = DefaultMaxRTO
	}
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 500 * time.Millisecond
	}
	for _, le := range o.Links {
		if _, ok := r.lab.Port(le.A, le.B); !ok {
			errs = append(errs, fmt.Errorf("%s and %s are not linked", le.A, le.B))
		}
	}
	return errors.Join(errs...)
}
