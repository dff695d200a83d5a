// Package sim is a packet-level discrete-event simulator of a built MRC
// fabric: the build's own static tables forward every packet (the uN shift
// and /48 lookup that verify walks), the NICs are the generated NIC
// program's model (internal/nicmodel, proven equal to the program on BMv2),
// the hosts run the transport engine (internal/transport) unchanged, on a
// virtual clock. Links have the fabric's speeds and delays; switch ports
// have the switch program's two strict priorities, trimming, ECN marking
// and tail drop, or, with PFC, per-priority pause instead of tail drop
// (pfc.go). Faults (links down, flapping, lossy or slow, switches down)
// happen at simulated times. The same fabric also runs the RoCEv2
// baseline: single-path QPs on every plane (a collective library's
// channels), each pinned to a T1 by its T0's resilient ECMP hash, which a
// T0 repairs locally when its own link fails and BGP elsewhere only after
// a convergence delay (roce.go); lossy, or lossless with PFC.
//
// A run is a function of its inputs and seed: events at the same time run
// in the order they were scheduled, and every random draw comes from the
// run's seeded generator.
package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// Transport is what the hosts run.
type Transport uint8

const (
	// MRC: one QP per host pair, sprayed by the NIC over the EV set.
	MRC Transport = iota
	// RoCE: the RoCEv2 baseline (see the package doc).
	RoCE
)

func (t Transport) String() string {
	if t == RoCE {
		return "roce"
	}
	return "mrc"
}

// ParseTransport reads "mrc" or "roce".
func ParseTransport(s string) (Transport, error) {
	switch s {
	case "mrc":
		return MRC, nil
	case "roce":
		return RoCE, nil
	}
	return 0, fmt.Errorf("transport %q: want mrc or roce", s)
}

// Flow is one transfer: Bytes from Src to Dst, starting at Start.
type Flow struct {
	Src, Dst plan.Host
	Bytes    int64
	Start    time.Duration
}

// Defaults.
const (
	DefaultSegment = 4096
	// DefaultConvergence is how long a RoCE fabric takes to move flows off
	// a failed path: BFD detection (three missed 50 ms hellos, 150 ms) and
	// then the BGP withdrawal reaching every switch and their FIBs being
	// rewritten; production BGP fabrics take from a few hundred
	// milliseconds to seconds (the profile: "seconds to tens of
	// seconds"). 500 ms is the low end, in RoCE's favour.
	DefaultConvergence = 500 * time.Millisecond
	// DefaultLimit bounds the simulated time of a run.
	DefaultLimit = 10 * time.Second
)

// Options are one run's inputs beyond the fabric.
type Options struct {
	Transport Transport
	// Flows are independent transfers; Collective a job whose steps wait
	// for each other. Give either or both.
	Flows      []Flow
	Collective *Collective
	Faults     []Fault
	Seed       uint64
	// Segment is the payload bytes per data packet (default 4096).
	Segment int
	// Window is the transport's window in packets (default: the
	// fabric's SendWindow, twice the BDP over its unloaded round trip; at
	// most the NIC's receive window, nic.window_packets).
	Window int
	// QPsPerPair is how many MRC QPs each host pair opens, a flow's bytes
	// split evenly over them (default 1: one QP sprays over every plane).
	// A QP's window is at most the NIC's 64-PSN receive window, which at
	// 800 Gb/s and 4 KiB packets covers little more than an unloaded round
	// trip: more QPs carry more in flight, as a collective library's
	// channels do. RoCE opens one per plane and takes no other count.
	QPsPerPair int
	// NoCongestionControl runs the transports without their congestion
	// control (transport.CCOff): a fixed window, no pacing. By default MRC
	// runs DCTCP and RoCE DCQCN (docs/protocol.md 10).
	NoCongestionControl bool
	// DelayCC runs MRC with the delay-based congestion control
	// (transport.Delay) instead of DCTCP; RoCE keeps DCQCN.
	DelayCC bool
	// NoLossReport has MRC senders leave METH's LOST flag off their
	// SACK-gap resends (transport.QPConfig.NoLossReport): NICs then find a
	// failed path by K unanswered sends alone, as the BMv2 lab's failover
	// test, whose stream sets no flag, measures.
	NoLossReport bool
	// RoCEQPs is how many QPs a RoCE host pair opens on each plane, a
	// flow's bytes split evenly over all of them, each hashed on its own
	// (0: DefaultRoCEQPs, NCCL's channels to a network peer).
	RoCEQPs int
	// Convergence is the RoCE fabric's routing convergence delay: BGP's,
	// where a T0 cannot repair a failure itself (roce.go).
	Convergence time.Duration
	// LocalRepair is how long a T0 takes to take a T1 out of its ECMP
	// group after its own link to it fails (0: DefaultLocalRepair).
	LocalRepair time.Duration
	// Limit stops the run at this simulated time.
	Limit time.Duration
	// Payload carries real bytes and checks the receivers got exactly the
	// senders' (small fabrics); otherwise payloads are virtual: lengths
	// only, as the engine's VirtualPayload seam allows.
	Payload bool
	// PFC, if set, makes the data class lossless with priority flow
	// control (pfc.go); nil: data is tail-dropped when a queue is full.
	PFC *PFCConfig
	// ExactQueues runs every port on the explicit queue PFC needs (a FIFO
	// per priority, an event when a frame has left), without PFC: a
	// control packet then delays the data queued behind it exactly, where
	// the default queue computes each data packet's departure when it is
	// queued (docs/protocol.md 11). Data is tail-dropped as by default.
	// PFC implies it.
	ExactQueues bool
	// RoCEECN is the switches' ECN marking of RoCE data (NO_TRIM) at every
	// egress queue (red.go); nil: DefaultRED of the switch ports' speed.
	RoCEECN *RED
	// SwitchBuffer is each switch's shared packet buffer for data, bytes
	// (buffer.go): 0 takes a Tomahawk 5's bytes per Gb/s times the
	// switch's port capacity (DefaultSwitchBuffer); SwitchBufferPerPort
	// tail-drops at trim.queue_packets a port instead. Not with PFC,
	// whose data is lossless.
	SwitchBuffer int64
	// BufferAlpha is the shared buffer's dynamic threshold: a port's data
	// queue may hold BufferAlpha x the free buffer (0: DefaultBufferAlpha).
	BufferAlpha float64
	// Bin is the goodput series' sample width (default 1 µs).
	Bin time.Duration
	// Progress, if set, is called now and then with the simulated time and
	// the flows done so far.
	Progress func(simulated time.Duration, done, flows int)
	// Workers is how many goroutines run the fabric, each its own part
	// (parallel.go); the result is the same for every count. 0 and 1: one.
	Workers int
}

// Source gives the simulator the build's tables: each switch's lookups and
// the NICs' entries (an artifacts.Build through verify's sources, or a
// table generator).
type Source interface {
	verify.Source
	SwitchLookup(s plan.Switch) (verify.SwitchLookup, error)
}

// Sim is one run.
type Sim struct {
	f   *fabric.Fabric
	p   *plan.Plan
	src Source
	opt Options
	q   *queue
	// global holds the events that act on the whole fabric (faults, RoCE's
	// routing), on the first worker: they run with every worker stopped at
	// their time (runWindow).
	global *queue
	now    int64
	devs   []*device
	// pool holds the packets in chunks (pkt): a pool grown by append
	// copied every packet in flight at each doubling and held both copies
	// meanwhile, hundreds of MB on a large fabric. poolLen packets have
	// been handed out.
	pool    []*poolChunk
	poolLen int32
	// payloads are the pool's packets' payloads, by pool index, once a
	// frame had one (Options.Payload); nil until then.
	payloads [][]byte
	free     []int32
	common   *nicmodel.Common
	hosts    []*host // by host index, nil until used
	flows    []flowState
	parts    []part
	faults   []faultState
	cost     []faultCost // what the faults cost, as this worker counted
	coll     *collectiveState
	links    map[linkKey]*linkState
	// linkList are the links faults touch, in the order they were set up:
	// a packet names its link by index (packet.link).
	linkList []*linkState
	res      Result
	// Goodput over time (series.go): the payload delivered in each bin of
	// binPS that had any, and the share of the sending NICs that makes,
	// as runs of bins with one share each.
	delivered []binBytes
	shares    []shareRun
	binPS     int64
	// Link propagation delays, ps; every port's speed, Gb/s, and its
	// serialization in whole ps a byte when it has one (wholePSPerByte).
	nicT0Delay, t0T1Delay int64
	gbps, psPerB          int64
	qpsPerPair            int      // QPs each host pair opens
	route                 *routing // RoCE's ECMP groups (roce.go)
	done                  int
	err                   error
	buf                   []byte
	// What every host works in, one at a time: the NICs' scratch (they
	// run one at a time, and each one's output is copied before the
	// next runs), the frames a transport hands its NIC (kick), and the
	// spare buffers of the frames NICs hand their hosts (takeBuf). One
	// each, not one per host: at a thousand hosts, per-host copies are
	// cold at every use.
	nicScratch *nicmodel.Scratch
	// clk is the engines' clock: one a worker, shared by the hosts it
	// made (a clock each was an allocation of its own, a cache miss at
	// every read of the time at scale).
	clk *clock
	// prefetching: the run loop asks for the next events' memory
	// (prefetchAhead), which pays where the hosts' state is beyond the
	// caches: from prefetchFrom hosts on (prefetchHosts; tests lower it).
	prefetching  bool
	prefetchFrom int
	out          [][]byte
	spareFrames  [][]byte
	// explicit: every port runs the explicit queue (PFC, or
	// Options.ExactQueues).
	explicit bool
	// pfc are the PFC thresholds (nil: no PFC); pausedPS the time ports
	// spent paused and since resumed.
	pfc      *PFCThresholds
	pausedPS int64
	// red is the marking of RoCE data (red.go).
	red RED
	// bufs are the switches' shared buffers (buffer.go).
	bufs SwitchBuffers
	// testTailDrop, if set, is told of each tail drop at a shared buffer:
	// the port's data bytes and the switch's then (tests).
	testTailDrop func(q, held, size int64)
	// testEvent, if set, is told of each event as it runs (tests).
	testEvent func(e event)

	// The parallel run (parallel.go). window is the lookahead; workers
	// the count, worker this one's number; shards every worker, on the
	// first (nil until the run starts); owner each device's worker (nil:
	// one worker). outbox holds, by window parity and worker, what this one
	// sent others in the window; parity is the window's. ran counts the
	// events it ran; stepDone are the collective's transfers that
	// completed here in the window.
	window          int64
	workers, worker int
	shards          []*Sim
	owner           []uint16
	outbox          [2][][]message
	parity          int
	ran             int64
	stepDone        []int32
}

type linkKey struct {
	dev  int32
	port int16
}

// ps converts a duration to the simulator's picoseconds.
func ps(d time.Duration) int64 { return int64(d) * 1000 }

// dur converts picoseconds to a duration (rounded down to a nanosecond).
func dur(p int64) time.Duration { return time.Duration(p / 1000) }

// New prepares a run of opt on fabric f, whose tables src serves.
func New(f *fabric.Fabric, src Source, opt Options) (*Sim, error) {
	if opt.Segment == 0 {
		opt.Segment = DefaultSegment
	}
	if opt.Convergence == 0 {
		opt.Convergence = DefaultConvergence
	}
	if opt.LocalRepair == 0 {
		opt.LocalRepair = DefaultLocalRepair
	}
	if opt.Limit == 0 {
		opt.Limit = DefaultLimit
	}
	if opt.Bin == 0 {
		opt.Bin = time.Microsecond
	}
	if opt.Window == 0 {
		opt.Window = f.SendWindow()
	}
	var errs []error
	if opt.Window < 1 || opt.Window > f.ReceiveWindow {
		// Refused here rather than by the first QP opened, mid-run.
		errs = append(errs, fmt.Errorf("window %d packets: want 1 to the NIC's receive window, nic.window_packets %d (0: the fabric's send window)", opt.Window, f.ReceiveWindow))
	}
	// A negative time would run the clock backwards; one beyond MaxTime
	// overflows it.
	for _, d := range []struct {
		what string
		v    time.Duration
	}{{"limit", opt.Limit}, {"convergence", opt.Convergence}, {"local repair", opt.LocalRepair}, {"goodput bin", opt.Bin}} {
		if d.v <= 0 || d.v > MaxTime {
			errs = append(errs, fmt.Errorf("%s %v: want a simulated time above 0 and at most %v", d.what, d.v, MaxTime))
		}
	}
	if opt.Segment < 1 || opt.Segment > 9000 {
		errs = append(errs, fmt.Errorf("segment %d bytes: want 1 to 9000", opt.Segment))
	}
	switch {
	case opt.QPsPerPair < 0:
		errs = append(errs, fmt.Errorf("%d QPs per host pair: want 1 or more (0: the default)", opt.QPsPerPair))
	case opt.QPsPerPair > 0 && opt.Transport == RoCE:
		errs = append(errs, fmt.Errorf("%d QPs per host pair: RoCE opens RoCEQPs on each plane (%d), a count MRC's QPs alone take", opt.QPsPerPair, f.Planes))
	}
	switch {
	case opt.RoCEQPs < 0 || opt.RoCEQPs > schema.NICMaxQPs/f.Planes:
		errs = append(errs, fmt.Errorf("%d RoCE QPs per plane and host pair: want 1 to %d, what a NIC holds over %d planes (0: the default, %d)", opt.RoCEQPs, schema.NICMaxQPs/f.Planes, f.Planes, DefaultRoCEQPs(f)))
	case opt.RoCEQPs > 0 && opt.Transport != RoCE:
		errs = append(errs, fmt.Errorf("%d RoCE QPs per plane and host pair: a count RoCE's QPs alone take (MRC's is QPsPerPair)", opt.RoCEQPs))
	}
	switch {
	case opt.DelayCC && opt.Transport == RoCE:
		errs = append(errs, errors.New("delay-based congestion control is MRC's: RoCE runs DCQCN"))
	case opt.DelayCC && opt.NoCongestionControl:
		errs = append(errs, errors.New("delay-based congestion control and no congestion control at once"))
	}
	red := DefaultRED(int64(f.PortSpeedGbps))
	if opt.RoCEECN != nil {
		red = *opt.RoCEECN
	}
	if err := red.Check(); err != nil {
		errs = append(errs, fmt.Errorf("RoCE ECN marking: %w", err))
	}
	bufs, err := ResolveSwitchBuffers(f, opt)
	if err != nil {
		errs = append(errs, err)
	}
	var pfc *PFCThresholds
	if opt.PFC != nil && opt.Segment >= 1 {
		t, err := opt.PFC.Resolve(f, opt.Segment)
		if err != nil {
			errs = append(errs, err)
		}
		pfc = &t
	}
	switch {
	case opt.Workers < 0 || opt.Workers > MaxWorkers:
		errs = append(errs, fmt.Errorf("%d workers: want 1 to %d (0: one)", opt.Workers, MaxWorkers))
	case opt.Workers > 1 && f.Links.T0T1Ns <= 0:
		errs = append(errs, fmt.Errorf("%d workers: the T0-T1 links' delay is the workers' lookahead, and it is %d ns", opt.Workers, f.Links.T0T1Ns))
	}
	if len(opt.Flows) == 0 && opt.Collective == nil {
		errs = append(errs, errors.New("no flows: give a workload"))
	}
	if c := opt.Collective; c != nil {
		if err := c.check(func(h plan.Host) bool { return validHost(f, h) }); err != nil {
			errs = append(errs, err)
		}
	}
	p := plan.New(f)
	for i, fl := range opt.Flows {
		if !validHost(f, fl.Src) || !validHost(f, fl.Dst) || fl.Src == fl.Dst {
			errs = append(errs, fmt.Errorf("flow %d: %s -> %s is not two hosts of the fabric", i, p.HostName(fl.Src), p.HostName(fl.Dst)))
		}
		if fl.Bytes <= 0 || fl.Start < 0 || fl.Start > MaxTime {
			errs = append(errs, fmt.Errorf("flow %d: %d bytes at %v", i, fl.Bytes, fl.Start))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if err := CheckPeers(p, opt.Flows, opt.Collective, QPsPerPeer(f, opt.Transport, opt.qps())); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s := &Sim{
		f: f, p: p, src: src, opt: opt,
		q:            newQueue(),
		global:       newQueue(),
		devs:         make([]*device, f.Hosts()+f.Switches()),
		hosts:        make([]*host, f.Hosts()),
		links:        map[linkKey]*linkState{},
		binPS:        ps(opt.Bin),
		nicScratch:   nicmodel.NewScratch(),
		prefetchFrom: prefetchHosts,
		pfc:          pfc,
		explicit:     pfc != nil || opt.ExactQueues,
		red:          red,
		bufs:         bufs,
	}
	if pfc != nil {
		s.res.PFC = &PFCResult{PFCThresholds: *pfc}
	}
	s.nicT0Delay, s.t0T1Delay = linkDelays(f)
	s.qpsPerPair = QPsPerPeer(f, opt.Transport, opt.qps())
	if opt.Transport == RoCE {
		s.route = newRouting(f)
	}
	s.gbps = int64(f.PortSpeedGbps)
	s.psPerB = wholePSPerByte(s.gbps)
	common, err := commonTables(f, src)
	if err != nil {
		return nil, err
	}
	s.common = common
	if err := s.setFaults(opt.Faults); err != nil {
		return nil, err
	}
	s.window = s.t0T1Delay
	if s.window <= 0 {
		s.window = defaultWindow
	}
	s.flows = make([]flowState, len(opt.Flows))
	for i, fl := range opt.Flows {
		s.flows[i] = flowState{Flow: fl}
	}
	if opt.Collective != nil {
		s.coll = &collectiveState{c: opt.Collective}
	}
	return s, nil
}

// qps is the QP count the options give for their transport: MRC's per
// host pair, RoCE's per plane (0: the default).
func (o *Options) qps() int {
	if o.Transport == RoCE {
		return o.RoCEQPs
	}
	return o.QPsPerPair
}

func validHost(f *fabric.Fabric, h plan.Host) bool {
	return h.Row >= 0 && h.Row < f.T0Count && h.Port >= 0 && h.Port < f.T0Down
}

func commonTables(f *fabric.Fabric, src Source) (*nicmodel.Common, error) {
	entries, err := src.NICCommonEntries()
	if err != nil {
		return nil, fmt.Errorf("sim: NIC tables: %w", err)
	}
	c := nicmodel.NewCommon(f)
	if err := c.WriteAll(nicmodel.Insert, entries...); err != nil {
		return nil, fmt.Errorf("sim: NIC tables: %w", err)
	}
	return c, nil
}

// Run runs the simulation to its end: every flow complete, nothing left to
// happen, or the time limit.
func (s *Sim) Run() (*Result, error) { return s.RunContext(context.Background()) }

// device returns device id, allocating it on first use.
func (s *Sim) device(id int32) *device {
	if d := s.devs[id]; d != nil {
		return d
	}
	d, err := s.newDevice(id)
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return nil
	}
	s.devs[id] = d
	return d
}

// Device ids: hosts' NICs first (by host index), then the switches plane
// by plane, each plane's T0s then T1s.
func (s *Sim) nicID(h plan.Host) int32 { return int32(s.p.Index(h)) }

func (s *Sim) switchID(sw plan.Switch) int32 {
	per := s.f.T0Count + s.f.T1Count
	i := sw.Index
	if sw.Role == plan.RoleT1 {
		i += s.f.T0Count
	}
	return int32(s.f.Hosts() + sw.Plane*per + i)
}

func (s *Sim) switchOf(id int32) plan.Switch {
	i := int(id) - s.f.Hosts()
	per := s.f.T0Count + s.f.T1Count
	sw := plan.Switch{Role: plan.RoleT0, Plane: i / per, Index: i % per}
	if sw.Index >= s.f.T0Count {
		sw.Role, sw.Index = plan.RoleT1, sw.Index-s.f.T0Count
	}
	return sw
}

func (s *Sim) newDevice(id int32) (*device, error) {
	f, p := s.f, s.p
	if int(id) < f.Hosts() {
		h := p.HostByIndex(int(id))
		d := &device{id: id, kind: kindNIC, ports: make([]port, f.Planes+1), rng: deviceStream(s.opt.Seed, id)}
		d.ports[0].peer = -1
		for pl := 0; pl < f.Planes; pl++ {
			t0 := s.switchID(plan.Switch{Role: plan.RoleT0, Plane: pl, Index: h.Row})
			d.ports[pl+1] = port{peer: t0, peerPort: int16(p.T0DownPort(h.Port))}
		}
		hs, err := s.newHost(h, d)
		if err != nil {
			return nil, err
		}
		d.host = hs
		s.attachLinks(id, d)
		return d, nil
	}
	sw := s.switchOf(id)
	look, err := s.src.SwitchLookup(sw)
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", p.Name(sw), err)
	}
	d := &device{id: id, kind: kindT0, sw: sw, look: newCachedLookup(f, sw.Plane, look), ports: make([]port, p.Ports(sw)), rng: deviceStream(s.opt.Seed, id)}
	if sw.Role == plan.RoleT1 {
		d.kind = kindT1
	}
	if b := s.bufs; b.T0Bytes > 0 {
		d.buf = &sharedBuffer{size: b.T0Bytes, alpha: b.Alpha}
		if d.kind == kindT1 {
			d.buf.size = b.T1Bytes
		}
	}
	for n := range d.ports {
		pt := &d.ports[n]
		pt.peer = -1
		nb, ok := p.Neighbor(sw, n)
		if !ok {
			continue
		}
		switch nb.Role {
		case plan.RoleNIC:
			pt.peer, pt.peerPort, pt.toHost = int32(nb.Index), int16(plan.NICPlanePort(sw.Plane)), true
		default:
			pt.peer, pt.peerPort = s.switchID(nb.Switch()), int16(nb.Port)
		}
	}
	s.attachLinks(id, d)
	return d, nil
}

// attachLinks gives a new device's ports the state of their links that
// faults have touched.
func (s *Sim) attachLinks(id int32, d *device) {
	for n := range d.ports {
		if ls := s.links[linkKey{id, int16(n)}]; ls != nil {
			d.ports[n].link = ls
		}
	}
}

// packet pool.
func (s *Sim) alloc() int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	if int(s.poolLen) == len(s.pool)<<poolShift {
		s.pool = append(s.pool, new(poolChunk))
	}
	s.poolLen++
	if s.payloads != nil {
		s.payloads = append(s.payloads, nil)
	}
	return s.poolLen - 1
}

// poolShift: a chunk of the packet pool holds 1<<poolShift packets (768
// KiB: the allocator gives it whole pages, so that a packet's first 64
// bytes stay one cache line).
const poolShift = 12

type poolChunk [1 << poolShift]packet

// pkt is packet i of the pool.
func (s *Sim) pkt(i int32) *packet { return &s.pool[i>>poolShift][i&(1<<poolShift-1)] }

func (s *Sim) release(i int32) {
	if s.payloads != nil {
		s.payloads[i] = nil
	}
	s.free = append(s.free, i)
}

// setPayload gives packet pi the payload b.
func (s *Sim) setPayload(pi int32, b []byte) {
	if s.payloads == nil {
		s.payloads = make([][]byte, s.poolLen)
	}
	s.payloads[pi] = b
}

// packetLink is the state of the link packet pk was last sent on, or nil.
func (s *Sim) packetLink(pk *packet) *linkState {
	if pk.link == 0 {
		return nil
	}
	return s.linkList[pk.link-1]
}
