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
// before its first answer.
const (
	DefaultInitialRTO = time.Second
	DefaultMinRTO     = 100 * time.Millisecond
	DefaultMaxRTO     = 4 * time.Second
	DefaultLimit      = 60 * time.Second
	DefaultSegment    = 1024
)

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
	Progress      func(Progress)
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

func (r *Runner) nicHost(nic string) (plan.Host, error) {
	p := r.lab.Build.Plan
	for i := 0; i < p.F.Hosts(); i++ {
		if h := p.HostByIndex(i); p.HostName(h) == nic {
			return h, nil
		}
	}
	return plan.Host{}, fmt.Errorf("no NIC %q in the lab", nic)
}

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
func (r *Runner) Run(ctx context.Context, opt Options) (res *Result, err error) {
	l := r.lab
	name := fmt.Sprintf("transfer %s -> %s", opt.From, opt.To)
	if err := r.fill(&opt); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	from, err := r.nicHost(opt.From)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	to, err := r.nicHost(opt.To)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := l.Build.Plan
	index, epoch, err := l.AcquireQP()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer l.ReleaseQP(index)
	// QPNs and the rkey from the index and its epoch: unique among the
	// QPs an engine may still hold.
	dstQPN := 0x100000 | uint32(epoch)<<8 | uint32(index)
	srcQPN := dstQPN | 0x800000
	rkey := 0x5a000000 | uint32(epoch)<<8 | uint32(index)
	const base = 0x7f0000000000

	src, err := r.acquireHost(opt.From)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer r.releaseHost(src)
	dst, err := r.acquireHost(opt.To)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer r.releaseHost(dst)
	srcCtl, err := r.acquireControl(ctx, opt.From)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer r.releaseControl(opt.From)
	dstCtl, err := r.acquireControl(ctx, opt.To)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer r.releaseControl(opt.To)

	// The NICs' QPs, as the hosts' RDMA stacks open them.
	single := opt.Mode.SinglePath()
	nicQPs := []struct {
		c  *lab.Control
		qp lab.QP
	}{
		{srcCtl, lab.QP{Local: srcQPN, Peer: p.HostAddr(to), PeerQP: dstQPN, Index: index, Epoch: epoch, T1Offset: opt.T1Offset, StartPSN: opt.StartPSN, SinglePath: single}},
		{dstCtl, lab.QP{Local: dstQPN, Peer: p.HostAddr(from), PeerQP: srcQPN, Index: index, Epoch: epoch, T1Offset: opt.T1Offset, StartPSN: opt.StartPSN, SinglePath: single}},
	}
	for i, q := range nicQPs {
		if err := q.c.OpenQP(ctx, q.qp); err != nil {
			for _, o := range nicQPs[:i] {
				_ = o.c.CloseQP(context.WithoutCancel(ctx), o.qp)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, q := range nicQPs {
			if cerr := q.c.CloseQP(cctx, q.qp); cerr != nil && err == nil {
				err = fmt.Errorf("%s: %w", name, cerr)
			}
		}
	}()

	qcfg := transport.QPConfig{Mode: opt.Mode, StartPSN: opt.StartPSN, Segment: opt.Segment, Window: opt.Window,
		ReorderThreshold: opt.ReorderThreshold, InitialRTO: opt.InitialRTO, MinRTO: opt.MinRTO, MaxRTO: opt.MaxRTO}
	sc, dc := qcfg, qcfg
	sc.LocalQPN, sc.PeerQPN, sc.Peer = srcQPN, dstQPN, dst.addr
	dc.LocalQPN, dc.PeerQPN, dc.Peer = dstQPN, srcQPN, src.addr
	sqp, err := src.eng.OpenQP(sc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dqp, err := dst.eng.OpenQP(dc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	mem := make([]byte, opt.Size)
	mr, err := dst.eng.RegisterMR(base, rkey, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	data := Payload(opt.Seed, opt.Size)

	// Before: counters, wires, writes.
	events := func(c *lab.Control) ([]int64, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return c.Counters(rctx, schema.NICEventCounter)
	}
	srcEv0, err := events(srcCtl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dstEv0, err := events(dstCtl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	wire0 := l.Stats()
	writes0 := l.Writes()

	sim := &scenario{r: r, opt: &opt}
	defer func() {
		if rerr := sim.restore(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("%s: restore the lab after it: %w", name, rerr)
		}
	}()
	start := time.Now()
	if err := sim.begin(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tr, err := sqp.Write(transport.WriteRequest{Data: data, RemoteVAddr: base, RKey: rkey})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n := tr.Stats().Packets
	received := make(chan error, 1)
	rctx, cancelRecv := context.WithCancel(ctx)
	defer cancelRecv()
	go func() {
		_, err := dqp.WaitReceived(rctx, 1)
		received <- err
	}()

	limit := time.NewTimer(opt.Limit)
	defer limit.Stop()
	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	lastReport := start
	report := func(event string) {
		if opt.Progress == nil {
			return
		}
		s := tr.Stats()
		opt.Progress(Progress{Elapsed: time.Since(start).Seconds(), Sent: s.PacketsSent - s.Retransmits.Total(),
			Packets: s.Packets, Retransmits: s.Retransmits.Total(), Event: event})
		lastReport = time.Now()
	}
	sent, recvDone, complete := false, false, false
	for !complete {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", name, ctx.Err())
		case <-limit.C:
			complete = true // given up: not completed
		case err := <-src.done:
			src.done <- err
			return nil, fmt.Errorf("%s: %s's engine stopped: %w", name, opt.From, err)
		case err := <-received:
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			recvDone = true
		case <-tr.Done():
			sent = true
		case <-poll.C:
			s := tr.Stats()
			first := s.PacketsSent - s.Retransmits.Total()
			for _, what := range sim.due(first, n) {
				if err := sim.apply(ctx, what, first, time.Since(start)); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				report(what.String())
			}
			if time.Since(lastReport) >= opt.ProgressEvery {
				report("")
			}
		}
		if sent && recvDone {
			break
		}
		if sent && !recvDone {
			// Every PSN is acked; the last placement is a hand-off away.
			select {
			case err := <-received:
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				recvDone = true
			case <-limit.C:
				complete = true
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: %w", name, ctx.Err())
			}
		}
		if sent && recvDone {
			break
		}
	}
	elapsed := time.Since(start)
	writes1 := l.Writes()
	wire1 := l.Stats()
	stats := tr.Stats()
	srcEv1, err := events(srcCtl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dstEv1, err := events(dstCtl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := func(a, b []int64, i int) int64 { return b[i] - a[i] }
	nic := NICEvents{
		EVsRetired: d(srcEv0, srcEv1, schema.NICEventPathFailed),
		EVsRevived: d(srcEv0, srcEv1, schema.NICEventRevived),
		BackupSent: d(srcEv0, srcEv1, schema.NICEventBackupTaken),
		ProbesSent: d(srcEv0, srcEv1, schema.NICEventProbeSent),
		Trimmed:    d(dstEv0, dstEv1, schema.NICEventTrimmedRx),
		Duplicates: d(dstEv0, dstEv1, schema.NICEventDuplicate),
	}
	tr.SetNICEvents(transport.NICEvents{EVsRetired: nic.EVsRetired, EVsRevived: nic.EVsRevived, BackupUsed: nic.BackupSent})
	var writes uint64
	for dev, w := range writes1 {
		writes += w - writes0[dev]
	}
	sentSum := sha256.Sum256(data)
	recvSum := sha256.Sum256(mr.Bytes())
	res = &Result{
		From: opt.From, To: opt.To, Mode: opt.Mode.String(), Bytes: int64(opt.Size),
		Segment: sqp.Config().Segment, Window: sqp.Config().Window, QPIndex: index, Limit: opt.Limit.Seconds(),
		Complete: sent && recvDone, Seconds: elapsed.Seconds(),
		Packets: stats.Packets, PacketsSent: stats.PacketsSent,
		Retransmits: Retransmits{TrimNACK: stats.Retransmits.TrimNACK, SACKGap: stats.Retransmits.SACKGap,
			Timeout: stats.Retransmits.Timeout, SeqError: stats.Retransmits.SeqError, Total: stats.Retransmits.Total()},
		GoBackNs: stats.GoBackNs, DupSACKs: stats.Duplicates, RecvDuplicates: dqp.RecvCounters().Duplicates,
		SACKs: stats.SACKs, NACKs: stats.NACKs,
		SRTTMillis: float64(stats.SRTT) / 1e6, RTOMillis: float64(stats.RTO) / 1e6,
		NIC:      nic,
		CutDrops: wire1.CutDrops - wire0.CutDrops, LossDrops: wire1.LossDrops - wire0.LossDrops,
		Writes:     writes,
		SentSHA256: hex.EncodeToString(sentSum[:]), RecvSHA256: hex.EncodeToString(recvSum[:]),
		Match:  sentSum == recvSum,
		Events: sim.events,
	}
	if res.Complete {
		res.Seconds = stats.Duration().Seconds()
		res.GoodputPPS = stats.GoodputPackets()
		res.GoodputBps = stats.GoodputBytes()
	}
	return res, nil
}

func (r *Runner) fill(o *Options) error {
	var errs []error
	if o.From == o.To {
		errs = append(errs, fmt.Errorf("from and to are the same NIC %q", o.From))
	}
	if o.Size <= 0 {
		errs = append(errs, fmt.Errorf("size %d is not a number of bytes above 0", o.Size))
	}
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
		if len(le.At) == 0 {
			errs = append(errs, fmt.Errorf("link %s:%s: no fraction to change it at", le.A, le.B))
		}
		for i, f := range le.At {
			if !(f >= 0 && f < 1) || (i > 0 && f <= le.At[i-1]) {
				errs = append(errs, fmt.Errorf("link %s:%s: fractions %v are not increasing in [0, 1)", le.A, le.B, le.At))
				break
			}
		}
		if _, ok := r.lab.Port(le.A, le.B); !ok {
			errs = append(errs, fmt.Errorf("%s and %s are not linked", le.A, le.B))
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
