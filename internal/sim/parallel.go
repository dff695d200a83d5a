package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
)

// A run is conservative parallel discrete events. The fabric is split
// into parts, one per worker (a goroutine): a worker owns whole T0 rows
// (every plane's T0 of those rows and their hosts), and the T1s are spread
// over the workers, so that every link between two workers is a T0-T1
// link, whose delay (Links.T0T1Ns) is the lookahead: nothing a worker does
// at time t reaches another before t + lookahead. Simulated time runs in
// windows of one lookahead, [k x L, (k+1) x L); in a window every worker
// runs its own events, and what it sends to another worker's devices
// waits in an outbox until the window ends, when each worker takes what
// the others sent it (in the order of the senders, each sender's in its
// own order). Between windows the first worker alone does what touches
// several parts: a collective's step barrier (a message: the next step
// starts one lookahead after the last transfer completed), the next
// step's QPs and parts, and whether the run is over.
//
// The result is the same for every worker count: a device's events run
// in an order that depends only on the device's own history (queue.go:
// by time, kind and port), every random draw comes from the drawing
// device's own stream (red.go), the counters are sums, and a run ends at
// the end of the window in which its last transfer completed, whatever
// the count. One worker runs the same windows.

// MaxWorkers bounds Options.Workers.
const MaxWorkers = 256

// defaultWindow is the window of a fabric whose T0-T1 links take no time
// (one worker only): 1 ns.
const defaultWindow = 1000

// message is an event for another worker's device: with the packet it
// carries (an arrival), which moves to that worker's pool.
type message struct {
	e       event
	pk      packet
	payload []byte
}

// workerOf is the worker that owns device id.
func (s *Sim) workerOf(id int32) int { return s.partOf(id, s.workers) }

// partOf is the worker among n that owns device id: its T0 row's (a host
// and every plane's T0 of a row go together, the rows split in n even
// runs), or for a T1 its index's (split likewise, every plane's T1 of an
// index together).
func (s *Sim) partOf(id int32, n int) int {
	f := s.f
	if int(id) < f.Hosts() {
		return s.p.HostByIndex(int(id)).Row * n / f.T0Count
	}
	sw := s.switchOf(id)
	if sw.Role == plan.RoleT1 {
		return sw.Index * n / f.T1Count
	}
	return sw.Index * n / f.T0Count
}

// workersFor is how many workers a run of opt on the fabric gets: at most
// one per T0 row.
func workersFor(opt Options, t0Rows int) int {
	return max(1, min(opt.Workers, t0Rows))
}

// split makes the run's workers: s is the first; the others share its
// fabric, tables, options, devices, hosts and flows (each touching only
// its own devices and hosts, and the fields of a flow its own host
// writes), and have their own queue, clock, packet pool, scratch and
// counters.
func (s *Sim) split() {
	n := workersFor(s.opt, s.f.T0Count)
	s.workers = n
	s.shards = []*Sim{s}
	if n == 1 {
		return
	}
	s.owner = make([]uint16, len(s.devs))
	for id := range s.owner {
		s.owner[id] = uint16(s.workerOf(int32(id)))
	}
	for w := 1; w < n; w++ {
		sh := &Sim{
			f: s.f, p: s.p, src: s.src, opt: s.opt, q: newQueue(), devs: s.devs, hosts: s.hosts,
			common: s.common, flows: s.flows, parts: s.parts, res: Result{},
			binPS: s.binPS, nicT0Delay: s.nicT0Delay, t0T1Delay: s.t0T1Delay, gbps: s.gbps, psPerB: s.psPerB,
			qpsPerPair: s.qpsPerPair, route: s.route, nicScratch: nicmodel.NewScratch(), pfc: s.pfc, explicit: s.explicit,
			red: s.red, bufs: s.bufs, window: s.window, worker: w, workers: n, owner: s.owner,
			faults: s.faults, cost: newCosts(s.faults), links: s.links, linkList: s.linkList,
		}
		if s.res.PFC != nil {
			sh.res.PFC = &PFCResult{PFCThresholds: s.res.PFC.PFCThresholds}
		}
		s.shards = append(s.shards, sh)
	}
	for _, sh := range s.shards {
		sh.shards = s.shards
		sh.outbox = [2][][]message{make([][]message, n), make([][]message, n)}
	}
}

// share gives every worker the first's flows and parts after it added
// some (between windows).
func (s *Sim) share() {
	for _, sh := range s.shards[1:] {
		sh.flows, sh.parts = s.flows, s.parts
	}
}

// shard is the worker that owns device id.
func (s *Sim) shard(id int32) *Sim {
	if s.owner == nil {
		return s
	}
	return s.shards[s.owner[id]]
}

// schedule queues e at its device's worker: at once if that is this one,
// else in the outbox, with the packet an arrival carries, which leaves
// this worker's pool.
func (s *Sim) schedule(e event) {
	if e.kind == evArrive {
		e.gen = uint32(min(e.at-s.now, math.MaxUint32))
	}
	if s.owner == nil || int(s.owner[e.dev]) == s.worker {
		s.q.push(e)
		return
	}
	m := message{e: e}
	if e.kind == evArrive {
		m.pk = *s.pkt(e.arg)
		if s.payloads != nil {
			m.payload = s.payloads[e.arg]
		}
		s.release(e.arg)
	}
	box := &s.outbox[s.parity][s.owner[e.dev]]
	*box = append(*box, m)
}

// takeInbox queues what the other workers sent this one in the window
// that ended (parity p), in the order of the senders.
func (s *Sim) takeInbox(p int) {
	for _, src := range s.shards {
		box := src.outbox[p][s.worker]
		for i := range box {
			m := &box[i]
			if m.e.kind == evArrive {
				pi := s.alloc()
				*s.pkt(pi) = m.pk
				if m.payload != nil {
					s.setPayload(pi, m.payload)
				}
				m.e.arg = pi
			}
			s.q.push(m.e)
			m.payload = nil
		}
		src.outbox[p][s.worker] = box[:0]
	}
}

// prepareFlows prepares flows first on (prepareFlow) in the order they
// start, each with the clocks at its start, and schedules their starts at
// their senders' workers.
func (s *Sim) prepareFlows(first int) {
	order := make([]int, 0, len(s.flows)-first)
	for i := first; i < len(s.flows); i++ {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.flows[a].Start, s.flows[b].Start) })
	clocks := make([]int64, len(s.shards))
	for w, sh := range s.shards {
		clocks[w] = sh.now
	}
	for _, i := range order {
		fl := &s.flows[i]
		at := ps(fl.Start)
		for _, sh := range s.shards {
			sh.now = at
		}
		// A host is made by the worker that owns it: its engine reads that
		// worker's clock, its NIC shares that worker's scratch.
		for _, h := range []int32{s.nicID(fl.Src), s.nicID(fl.Dst)} {
			s.shard(h).device(h)
		}
		s.prepareFlow(i)
		sender := s.nicID(fl.Src)
		s.shard(sender).q.push(event{at: at, kind: evFlow, dev: sender, arg: int32(i)})
	}
	for w, sh := range s.shards {
		sh.now = clocks[w]
	}
	s.share()
}

// RunContext is Run, stopped with ctx's error (wrapped, naming the
// simulated time reached) once ctx is done: an interrupted run of the
// whole fabric ends within a window instead of running on for its hour.
func (s *Sim) RunContext(ctx context.Context) (*Result, error) {
	if s.shards != nil {
		return nil, fmt.Errorf("sim: a run runs once")
	}
	wall := time.Now()
	s.split()
	s.prepareFlows(0)
	if s.coll != nil {
		s.startStep(0)
	}
	if err := s.firstErr(); err != nil {
		return nil, err
	}
	s.choosePrefetching()
	limit := ps(s.opt.Limit)
	nextProgress := int64(0)
	parity := 0
	for !s.over() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sim: stopped at %v simulated, %d events in: %w", dur(s.latest()), s.events(), err)
		}
		at, ok := s.nextEvent(parity)
		if !ok || at > limit {
			break
		}
		end := min((at/s.window+1)*s.window, limit+1)
		s.runWindow(parity, end)
		if err := s.firstErr(); err != nil {
			return nil, err
		}
		parity ^= 1
		if s.coll != nil {
			var done []int32
			for _, sh := range s.shards {
				done = append(done, sh.stepDone...)
				sh.stepDone = sh.stepDone[:0]
			}
			s.stepBarrier(done)
			if err := s.firstErr(); err != nil {
				return nil, err
			}
		}
		if ev := s.events(); s.opt.Progress != nil && ev >= nextProgress {
			nextProgress = ev + 1<<20
			s.opt.Progress(dur(s.latest()), s.doneFlows(), len(s.flows))
		}
	}
	if len(s.shards) > 1 {
		// What the last window sent: in flight at the end.
		for _, sh := range s.shards {
			sh.takeInbox(parity ^ 1)
		}
	}
	if s.opt.Progress != nil {
		s.opt.Progress(dur(s.latest()), s.doneFlows(), len(s.flows))
	}
	s.merge()
	return s.result(time.Since(wall))
}

// over: every flow and every step of the collective is complete.
func (s *Sim) over() bool {
	return s.doneFlows() == len(s.flows) && (s.coll == nil || len(s.coll.results) == s.coll.c.steps()*s.coll.c.Iterations)
}

func (s *Sim) doneFlows() int {
	n := 0
	for _, sh := range s.shards {
		n += sh.done
	}
	return n
}

func (s *Sim) events() int64 {
	n := int64(0)
	for _, sh := range s.shards {
		n += sh.ran
	}
	return n
}

// latest is the time of the last event any worker ran.
func (s *Sim) latest() int64 {
	t := int64(0)
	for _, sh := range s.shards {
		t = max(t, sh.now)
	}
	return t
}

func (s *Sim) firstErr() error {
	for _, sh := range s.shards {
		if sh.err != nil {
			return sh.err
		}
	}
	return nil
}

// nextEvent is the time of the earliest event left: in a queue, or sent
// in the window that ended (parity p ^ 1) and not yet taken.
func (s *Sim) nextEvent(p int) (int64, bool) {
	at, found := s.global.nextAt()
	for _, sh := range s.shards {
		if t, ok := sh.q.nextAt(); ok && (!found || t < at) {
			at, found = t, true
		}
		for _, box := range sh.outbox[p^1] {
			for i := range box {
				if t := box[i].e.at; !found || t < at {
					at, found = t, true
				}
			}
		}
	}
	return at, found
}

// runWindow has every worker take what was sent it in the window that
// ended (parity p ^ 1), then run its events before end, sending into its
// outboxes of parity p. A global event (a fault's, RoCE routing's) due
// in the window splits it: the workers run to its time, stop, and it runs
// alone on the first, reading and writing whatever part of the fabric it
// acts on; then they go on. It runs before every other event at its time,
// as its kind does on one queue (queue.go), and what it sends a device
// is sent by that device's worker (Sim.shard), so that no count of
// workers changes its effect.
func (s *Sim) runWindow(p int, end int64) {
	take := true
	for {
		stop := end
		if at, ok := s.global.nextAt(); ok && at < end {
			stop = at
		}
		s.runParts(p, stop, take)
		take = false
		if stop == end || s.firstErr() != nil {
			return
		}
		s.runGlobal(stop)
		if s.err != nil {
			return
		}
	}
}

// runParts has every worker run its events before end (after taking its
// inbox, when take is set).
func (s *Sim) runParts(p int, end int64, take bool) {
	if len(s.shards) == 1 {
		s.runTo(end)
		return
	}
	var wg sync.WaitGroup
	for _, sh := range s.shards[1:] {
		wg.Go(func() {
			sh.parity = p
			if take {
				sh.takeInbox(p ^ 1)
			}
			sh.runTo(end)
		})
	}
	s.parity = p
	if take {
		s.takeInbox(p ^ 1)
	}
	s.runTo(end)
	wg.Wait()
}

// runGlobal runs the global events due at at, every worker's clock there.
func (s *Sim) runGlobal(at int64) {
	for _, sh := range s.shards {
		sh.now = at
	}
	for {
		e, ok := s.global.pop()
		if !ok {
			return
		}
		if e.at != at {
			s.global.unpop(e)
			return
		}
		s.ran++
		if s.testEvent != nil {
			s.testEvent(e)
		}
		switch e.kind {
		case evFault:
			s.fault(int(e.arg), e.gen)
		case evConverge:
			s.converge()
			if e.arg > 0 {
				s.flapConverged(int(e.arg)-1, e.gen)
			}
		case evRepair:
			s.localRepair(int(e.arg))
			if e.gen == 1 {
				s.flapRepaired(int(e.arg))
			}
		default:
			s.fail(fmt.Errorf("sim: event kind %d on the global queue", e.kind))
		}
		if s.err != nil {
			return
		}
	}
}

// runTo runs the worker's events before end.
func (s *Sim) runTo(end int64) {
	for {
		e, ok := s.q.pop()
		if !ok {
			return
		}
		if e.at >= end {
			s.q.unpop(e)
			return
		}
		s.now = e.at
		s.ran++
		if s.prefetching {
			s.prefetchAhead(&e)
		}
		if s.testEvent != nil {
			s.testEvent(e)
		}
		switch e.kind {
		case evArrive:
			s.arrive(e.dev, e.port, e.arg)
		case evTimer:
			s.hosts[e.dev].timer(s, e.gen)
		case evFlow:
			s.startFlow(int(e.arg))
		case evPortFree:
			s.portFree(e.dev, e.port)
		case evPause:
			s.pauseArrive(e.dev, e.port, e.arg == 1, e.gen)
		}
		if s.err != nil {
			return
		}
	}
}

// merge gathers the workers' counters, goodput and clocks into the first,
// which then reads as a run on one.
func (s *Sim) merge() {
	s.res.Events = s.events()
	s.now = s.latest()
	if len(s.shards) == 1 {
		return
	}
	var bins []binBytes
	for _, sh := range s.shards {
		bins = append(bins, sh.delivered...)
		if sh == s {
			continue
		}
		s.done += sh.done
		s.pausedPS += sh.pausedPS
		s.res.add(&sh.res)
		for i := range s.cost {
			s.cost[i].add(&sh.cost[i])
		}
	}
	slices.SortStableFunc(bins, func(a, b binBytes) int { return cmp.Compare(a.bin, b.bin) })
	s.delivered = s.delivered[:0]
	for _, b := range bins {
		s.addDelivered(b.bin, b.bytes)
	}
}

// add adds the counts a worker made to r's.
func (r *Result) add(o *Result) {
	r.PacketHops += o.PacketHops
	r.ECNMarks += o.ECNMarks
	r.Trims.LastHop += o.Trims.LastHop
	r.Trims.Fabric += o.Trims.Fabric
	r.Drops.TailDrop += o.Drops.TailDrop
	r.Drops.NoRoute += o.Drops.NoRoute
	r.Drops.ControlLost += o.Drops.ControlLost
	r.Drops.RandomLoss += o.Drops.RandomLoss
	r.Drops.LinkDown += o.Drops.LinkDown
	r.DataPackets.Sent += o.DataPackets.Sent
	r.DataPackets.Delivered += o.DataPackets.Delivered
	r.LocalRepairs += o.LocalRepairs
	r.Convergences += o.Convergences
	r.Rehashed += o.Rehashed
	if r.PFC != nil && o.PFC != nil {
		r.PFC.MaxHeldBytes = max(r.PFC.MaxHeldBytes, o.PFC.MaxHeldBytes)
		r.PFC.Pauses += o.PFC.Pauses
		r.PFC.Resumes += o.PFC.Resumes
	}
}
