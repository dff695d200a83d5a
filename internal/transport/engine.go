package transport

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// Port is a NIC's host port as the engine sees it: frames to the NIC, frames
// from it (decapsulated data for this host's QPs, SACKs and NACKs for them).
type Port interface {
	// Send hands one frame to the NIC. The port owns frame afterwards.
	Send(ctx context.Context, frame []byte) error
	// Recv blocks until the NIC hands the host a frame, or ctx ends.
	Recv(ctx context.Context) ([]byte, error)
}

// Counters are the engine's own, over all QPs.
type Counters struct {
	Frames       int64 // frames handed to HandleFrame
	Malformed    int64 // not a data packet, SACK or NACK the engine can read
	UnknownQP    int64 // BTH destination QP of no open QP
	StaleAnswers int64 // a SACK or NACK for a QP with no write in progress
	BadReason    int64 // a NACK with a reason other than TRIMMED and TRIMMED_LASTHOP
}

// Engine is the transport of one NIC host port: the QPs opened on it and the
// memory regions registered on it. It is a state machine: HandleFrame,
// HandleTimers and Write queue frames for the NIC, TakeOutput collects them
// and NextDeadline says when HandleTimers is due. Run drives it on a Port;
// a simulator drives it directly. Every method is safe for concurrent use.
type Engine struct {
	mu    sync.Mutex
	cfg   Config
	clock Clock
	// ec is clock when it is an ElapsedClock (nil otherwise); origin is
	// the time the engine's durations count from (ec's origin, or the
	// clock's time when the engine was made). Every time the engine keeps
	// is a duration since origin: time.Time only at its API.
	ec     ElapsedClock
	origin time.Time
	// unlocked: Config.SingleGoroutine, no lock taken.
	unlocked bool
	qps      map[uint32]*QP
	// qpByN are the QPs of QPNs below denseQPNs by QPN, nil where none
	// is open: a frame's QP is found without hashing (a simulator numbers
	// its QPs from 1).
	qpByN []*QP
	order []*QP // open order: timers fire in a deterministic order
	mrs   map[uint32]*MemoryRegion
	// lastMR is the region the last data packet was placed in (regions
	// are never removed, so it stays valid): a write's packets find it
	// without a map look-up.
	lastMR   *MemoryRegion
	lastRKey uint32
	out      [][]byte
	// dls orders the QPs' write deadlines (deadlines.go).
	dls deadlineQueue
	// spareHeaders are header-only data frames given back by Recycle, for
	// later frames to reuse.
	spareHeaders [][]byte
	wake         chan struct{} // Run waits on it for frames queued outside it
	counters     Counters
	// The transmit scheduler (Config.NICRate): txFree is when the NIC can
	// take the next packet, waiting the writes held back until then, in
	// turn.
	txFree   time.Duration
	txRem    float64 // nanoseconds of the NIC's time booked beyond txFree
	waiting  []*Transfer
	waitHead int // waiting[waitHead:] wait; the slice is reused, not reallocated
}

// New returns an engine for the host cfg.Addr.
func New(cfg Config) (*Engine, error) {
	if !cfg.Addr.Is6() {
		return nil, fmt.Errorf("transport engine: host address %v is not IPv6", cfg.Addr)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	if cfg.DSCPTrimmable == 0 {
		cfg.DSCPTrimmable = 4
	}
	if cfg.DSCPNoTrim == 0 {
		cfg.DSCPNoTrim = 5
	}
	if cfg.DSCPTrimmable > 63 || cfg.DSCPNoTrim > 63 {
		return nil, fmt.Errorf("transport engine %v: DSCP %d/%d does not fit in 6 bits", cfg.Addr, cfg.DSCPTrimmable, cfg.DSCPNoTrim)
	}
	if cfg.PKey == 0 {
		cfg.PKey = 0xFFFF
	}
	e := &Engine{
		cfg:      cfg,
		clock:    cfg.Clock,
		unlocked: cfg.SingleGoroutine,
		qps:      map[uint32]*QP{},
		mrs:      map[uint32]*MemoryRegion{},
		wake:     make(chan struct{}, 1),
		// Before any frame the NIC has always been free (it was the zero
		// time.Time, year 1).
		txFree: noTime,
	}
	if ec, ok := cfg.Clock.(ElapsedClock); ok {
		e.ec, e.origin = ec, ec.Origin()
	} else {
		e.origin = cfg.Clock.Now()
	}
	return e, nil
}

// now is the clock's time as a duration since the engine's origin.
func (e *Engine) now() time.Duration {
	if e.ec != nil {
		return e.ec.Elapsed()
	}
	return e.clock.Now().Sub(e.origin)
}

// at is the time of d since the engine's origin.
func (e *Engine) at(d time.Duration) time.Time { return e.origin.Add(d) }

// lock takes the engine's lock unless the engine has none
// (Config.SingleGoroutine).
func (e *Engine) lock() {
	if !e.unlocked {
		e.mu.Lock()
	}
}

func (e *Engine) unlock() {
	if !e.unlocked {
		e.mu.Unlock()
	}
}

// QP is one open queue pair.
type QP struct {
	e       *Engine
	cfg     QPConfig
	tmpl    []byte // data frame header
	nextPSN uint32 // of the next write
	active  *Transfer
	recv    recvState
	cc      congestion
	epoch   time.Duration // when opened: congestion control's clock starts here
	txSeq   uint64        // sends so far, of every write: each send's transmission number
	rtt     rttEstimator
	dls     deadlineState
}

// OpenQP opens a QP on the engine. The NIC must have the same QP open
// (docs/protocol.md section 4: qp_send keyed on the peer QPN, qp_recv on
// the local QPN, the same start PSN, single_path = cfg.Mode.SinglePath()).
func (e *Engine) OpenQP(cfg QPConfig) (*QP, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("open QP %#x on %v: %w", cfg.LocalQPN, e.cfg.Addr, err)
	}
	e.lock()
	defer e.unlock()
	if _, ok := e.qps[cfg.LocalQPN]; ok {
		return nil, fmt.Errorf("open QP %#x on %v: already open", cfg.LocalQPN, e.cfg.Addr)
	}
	dscp := e.cfg.DSCPTrimmable
	if cfg.Mode == RoCE {
		dscp = e.cfg.DSCPNoTrim
	}
	mac := Ethernet{Src: e.cfg.MAC.Src, Dst: cfg.PeerMAC}
	q := &QP{
		e:       e,
		cfg:     cfg,
		tmpl:    dataTemplate(e.cfg.Addr, cfg.Peer, mac, dscp, e.cfg.PKey, cfg.PeerQPN),
		nextPSN: cfg.StartPSN,
		cc:      newCongestion(&cfg),
		rtt:     newRTTEstimator(cfg.InitialRTO, cfg.MinRTO, cfg.MaxRTO),
		epoch:   e.now(),
		dls:     deadlineState{order: len(e.order), index: -1},
	}
	q.recv.notify = make(chan struct{})
	e.qps[cfg.LocalQPN] = q
	if n := cfg.LocalQPN; n < denseQPNs {
		for uint32(len(e.qpByN)) <= n {
			e.qpByN = append(e.qpByN, nil)
		}
		e.qpByN[n] = q
	}
	e.order = append(e.order, q)
	return q, nil
}

// denseQPNs bounds the QPNs Engine.qpByN holds.
const denseQPNs = 1 << 12

// qp is the open QP of QPN n, or nil.
func (e *Engine) qp(n uint32) *QP {
	if n < uint32(len(e.qpByN)) {
		return e.qpByN[n]
	}
	if n < denseQPNs {
		return nil
	}
	return e.qps[n]
}

// mr is the memory region of rkey, or nil.
func (e *Engine) mr(rkey uint32) *MemoryRegion {
	if mr := e.lastMR; mr != nil && e.lastRKey == rkey {
		return mr
	}
	mr := e.mrs[rkey]
	if mr != nil {
		e.lastMR, e.lastRKey = mr, rkey
	}
	return mr
}

// Config returns the QP's configuration, defaults filled in.
func (q *QP) Config() QPConfig { return q.cfg }

// RegisterMR registers buf as the memory region [base, base+len(buf)) with
// remote key rkey: data packets carrying rkey are placed into buf.
func (e *Engine) RegisterMR(base uint64, rkey uint32, buf []byte) (*MemoryRegion, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("register MR rkey %#x on %v: empty buffer", rkey, e.cfg.Addr)
	}
	if base+uint64(len(buf)) < base {
		return nil, fmt.Errorf("register MR rkey %#x on %v: base %#x + %d bytes overflows", rkey, e.cfg.Addr, base, len(buf))
	}
	e.lock()
	defer e.unlock()
	if _, ok := e.mrs[rkey]; ok {
		return nil, fmt.Errorf("register MR rkey %#x on %v: rkey in use", rkey, e.cfg.Addr)
	}
	mr := &MemoryRegion{Base: base, RKey: rkey, buf: buf, size: uint64(len(buf)), placed: make([]uint64, (len(buf)+63)/64)}
	e.mrs[rkey] = mr
	return mr, nil
}

// RegisterVirtualMR registers [base, base+size) under rkey with no memory
// behind it, on an engine with Config.VirtualPayload: data packets are
// placed (tracked as ranges, for completion and duplicates) and not
// stored. A simulator of thousands of hosts uses it.
func (e *Engine) RegisterVirtualMR(base uint64, rkey uint32, size uint64) (*MemoryRegion, error) {
	switch {
	case !e.cfg.VirtualPayload:
		return nil, fmt.Errorf("register virtual MR rkey %#x on %v: the engine has no VirtualPayload", rkey, e.cfg.Addr)
	case size == 0:
		return nil, fmt.Errorf("register virtual MR rkey %#x on %v: empty region", rkey, e.cfg.Addr)
	case base+size < base:
		return nil, fmt.Errorf("register virtual MR rkey %#x on %v: base %#x + %d bytes overflows", rkey, e.cfg.Addr, base, size)
	}
	e.lock()
	defer e.unlock()
	if _, ok := e.mrs[rkey]; ok {
		return nil, fmt.Errorf("register virtual MR rkey %#x on %v: rkey in use", rkey, e.cfg.Addr)
	}
	mr := &MemoryRegion{Base: base, RKey: rkey, size: size}
	e.mrs[rkey] = mr
	return mr, nil
}

// Counters returns the engine's counters.
func (e *Engine) Counters() Counters {
	e.lock()
	defer e.unlock()
	return e.counters
}

// HandleFrame takes one frame from the NIC. The engine does not keep frame.
// The error says why a frame was ignored (also counted); it is never fatal.
func (e *Engine) HandleFrame(frame []byte) error {
	var r rxFrame
	err := parseFrame(frame, &r, e.cfg.VirtualPayload)
	e.lock()
	defer e.unlock()
	e.counters.Frames++
	if err != nil {
		e.counters.Malformed++
		return fmt.Errorf("transport engine %v: %w", e.cfg.Addr, err)
	}
	q := e.qp(r.dstQP)
	if q == nil {
		e.counters.UnknownQP++
		return fmt.Errorf("transport engine %v: frame for QP %#x, which is not open", e.cfg.Addr, r.dstQP)
	}
	now := e.now()
	if mrcpkt.IsData(r.op) {
		q.onData(&r, now)
		return nil
	}
	t := q.active
	if t == nil {
		e.counters.StaleAnswers++
		return nil
	}
	d := now - t.t0
	if r.op == mrcpkt.OpSACK {
		t.onSACK(&r, d)
	} else {
		if r.reason != mrcpkt.NACKTrimmed && r.reason != mrcpkt.NACKTrimmedLastHop {
			e.counters.BadReason++
			return fmt.Errorf("transport engine %v: QP %#x: NACK reason %#x", e.cfg.Addr, r.dstQP, r.reason)
		}
		t.onNACK(&r, d)
	}
	t.finishIfDone(now)
	return nil
}

// HandleTimers fires every retransmission deadline that has passed, and
// sends what DCQCN's pacer held back until now.
func (e *Engine) HandleTimers() {
	e.lock()
	defer e.unlock()
	now := e.now()
	e.refreshDeadlines()
	for _, q := range e.dls.dueAt(now) {
		if t := q.active; t != nil {
			d := now - t.t0
			if at, ok := t.cachedDeadline(); !ok || at > d {
				continue // nothing of this write is due
			}
			t.onTimer(d)
			if q.cc.paced() {
				t.pump(d) // what the pacer held back until now
			}
		}
	}
	e.serveWaiting(now)
}

// nicFree reports whether the NIC can take a packet at now.
func (e *Engine) nicFree(now time.Duration) bool { return e.cfg.NICRate == 0 || now >= e.txFree }

// nicTake books the NIC for a frame of size bytes handed to it at now.
func (e *Engine) nicTake(now time.Duration, size int) {
	if e.cfg.NICRate == 0 {
		return
	}
	if e.txFree < now {
		e.txFree, e.txRem = now, 0
	}
	// Whole nanoseconds on the clock, the fraction carried to the next
	// frame: at 800 Gb/s a 4 KiB frame takes 42.5 ns, and rounding each
	// would run the NIC 1% slow.
	d := float64(8*(size+e.cfg.NICFrameOverhead))/e.cfg.NICRate*1e9 + e.txRem
	whole := math.Floor(d + 1e-6) // 960 bits at 8 Gb/s are 120 ns, not 119.999...
	e.txRem = d - whole
	e.txFree += time.Duration(whole)
}

// wait queues t for the NIC (once).
func (e *Engine) wait(t *Transfer) {
	if !t.waitingNIC {
		t.waitingNIC = true
		e.waiting = append(e.waiting, t)
	}
}

// serveWaiting lets the writes waiting for the NIC send, in turn, while
// the NIC is free: a write that sends one packet and has more waits again,
// behind the others.
func (e *Engine) serveWaiting(now time.Duration) {
	for e.waitHead < len(e.waiting) && e.nicFree(now) {
		t := e.waiting[e.waitHead]
		e.waiting[e.waitHead] = nil
		e.waitHead++
		if e.waitHead == len(e.waiting) {
			e.waiting, e.waitHead = e.waiting[:0], 0
		}
		t.waitingNIC = false
		if !t.isComplete {
			t.pump(now - t.t0)
		}
	}
}

// NextDeadline returns when HandleTimers is next due: a retransmission
// timer, or the pacer's next release; ok is false when no write is in
// progress.
func (e *Engine) NextDeadline() (at time.Time, ok bool) {
	d, ok := e.NextDeadlineElapsed()
	if !ok {
		return time.Time{}, false
	}
	return e.at(d), true
}

// NextDeadlineElapsed is NextDeadline as a duration since the engine's
// origin: an ElapsedClock's Origin, or the clock's time when the engine
// was made.
func (e *Engine) NextDeadlineElapsed() (at time.Duration, ok bool) {
	e.lock()
	defer e.unlock()
	e.refreshDeadlines()
	at, ok = e.dls.next()
	if e.waitHead < len(e.waiting) && (!ok || e.txFree < at) {
		at, ok = e.txFree, true
	}
	return at, ok
}

// TakeOutput appends the frames queued for the NIC to dst, in order, and
// forgets them.
func (e *Engine) TakeOutput(dst [][]byte) [][]byte {
	e.lock()
	defer e.unlock()
	dst = append(dst, e.out...)
	clear(e.out)
	e.out = e.out[:0]
	return dst
}

// Recycle gives the engine back frames TakeOutput handed out, once the
// caller is done with every byte of them: later header-only data frames
// (the virtual payloads of a simulation) reuse their memory instead of
// allocating their own. Frames of any other size are left to the garbage
// collector. Calling it is optional.
func (e *Engine) Recycle(frames [][]byte) {
	e.lock()
	defer e.unlock()
	for _, f := range frames {
		if cap(f) == dataHdrLen {
			e.spareHeaders = append(e.spareHeaders, f[:0])
		}
	}
}

// headerFrame returns an empty frame with room for a data header alone.
func (e *Engine) headerFrame() []byte {
	if n := len(e.spareHeaders); n > 0 {
		f := e.spareHeaders[n-1]
		e.spareHeaders = e.spareHeaders[:n-1]
		return f
	}
	return make([]byte, 0, dataHdrLen)
}

func (e *Engine) queued() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run drives the engine on port until ctx ends or the port fails: frames
// from the port go to HandleFrame, deadlines to HandleTimers, and queued
// frames to the port. It returns ctx's error or the port's, wrapped.
func (e *Engine) Run(ctx context.Context, port Port) error {
	if e.unlocked {
		return fmt.Errorf("transport engine %v: Run shares the engine between goroutines, and it was made SingleGoroutine", e.cfg.Addr)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan []byte, 256)
	recvErr := make(chan error, 1)
	go func() {
		for {
			f, err := port.Recv(ctx)
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case in <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	var out [][]byte
	for {
		out = e.TakeOutput(out[:0])
		for i, f := range out {
			if err := port.Send(ctx, f); err != nil {
				return fmt.Errorf("transport engine %v: send to NIC: %w", e.cfg.Addr, err)
			}
			out[i] = nil
		}
		var timer <-chan time.Time
		if at, ok := e.NextDeadline(); ok {
			timer = e.clock.After(max(at.Sub(e.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("transport engine %v: %w", e.cfg.Addr, ctx.Err())
		case err := <-recvErr:
			if ctx.Err() != nil {
				return fmt.Errorf("transport engine %v: %w", e.cfg.Addr, ctx.Err())
			}
			return fmt.Errorf("transport engine %v: receive from NIC: %w", e.cfg.Addr, err)
		case f := <-in:
			_ = e.HandleFrame(f) // an ignored frame is counted
		case <-timer:
			e.HandleTimers()
		case <-e.wake:
		}
	}
}

// errBusy: a QP runs one write at a time.
var errBusy = errors.New("a write is in progress on this QP")
