// Package transporttest simulates two MRC NICs joined by a multipath fabric,
// so that the transport engine can be tested end to end: deterministic
// (seeded), on a virtual clock, with no goroutines and no sleeps. The NICs
// are the generated NIC program itself, as internal/nicmodel models it (and
// bmv2-tests proves equal to it, frame by frame): real frames, the
// fabric's own EV set and backups, K and N (docs/protocol.md sections 4-6).
//
// The model, per direction of every path:
//
//   - Host to NIC: the engine's frames are serialised at HostPPS (the NIC's
//     port rate), then the sending NIC (the model) picks the EV and sends
//     the packet on that EV's path.
//   - A path is one plane and one T1 (Planes x T1s paths). Each direction
//     has a data queue served at PathPPS: data reaching it while TrimAt
//     packets wait is trimmed (TRIMMABLE) or, at QueueCap, dropped; data
//     queued behind ECNAt packets is marked CE. Control and trimmed packets
//     take the high-priority lane (propagation delay only). A path may lose
//     packets at random (every kind, both directions), be throttled, cut
//     (everything on it, in flight included, is lost) and restored.
//   - The receiving NIC's last hop (T0 to NIC) is a queue at HostPPS where
//     data is trimmed TRIMMED_LASTHOP.
//   - The NICs do what the NIC program does (docs/protocol.md sections
//     4-6): the receiving NIC SACKs every untrimmed data packet, NACKs every
//     trimmed one, delivers only new packets within the window; the sending
//     NIC rotates over the EV slots, skips, retires a slot after K
//     unanswered sends to its same-plane backup, probes it every N passes,
//     and revives it on a probe answer. Answers go back on the path the
//     data took. The two hosts sit on different T0 rows of a fabric with
//     the config's planes, T1s, EV set, K and N.
package transporttest

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/internal/transport"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// Config describes the simulated fabric. Zero fields take the defaults.
type Config struct {
	Seed           uint64
	Planes, T1s    int           // paths: Planes x T1s (2 x 4)
	Slots          int           // EV slots per QP (2 x Planes x T1s): ev.set_size
	HostPPS        float64       // NIC port rate, packets/s (100k)
	PathPPS        float64       // each path's data rate (100k)
	PathDelay      time.Duration // one way, per path (10µs)
	QueueCap       int           // data queue capacity (32)
	TrimAt         int           // trim threshold, packets queued (16)
	ECNAt          int           // ECN threshold (8)
	FailAfterSends int           // K (6, the least the fabric's rule allows for 16 slots): failover.unanswered_sends
	ProbeEvery     int           // N passes (4): failover.probe_passes
	// AckEvery is the NICs' nic.ack_every (1: a SACK for every packet).
	AckEvery int
	// ReceiveWindow is the NICs' nic.window_packets (64: one SACK bitmap,
	// which K = 6 fits over 16 slots).
	ReceiveWindow int
	// VirtualPayload runs the engines with transport.Config.VirtualPayload:
	// writes may carry no content and memory regions be virtual.
	VirtualPayload bool
}

func (c *Config) fill() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Planes, 2)
	def(&c.T1s, 4)
	def(&c.Slots, 2*c.Planes*c.T1s)
	def(&c.QueueCap, 32)
	def(&c.TrimAt, 16)
	def(&c.ECNAt, 8)
	def(&c.FailAfterSends, 6)
	def(&c.AckEvery, 1)
	def(&c.ReceiveWindow, 64)
	def(&c.ProbeEvery, 4)
	if c.HostPPS == 0 {
		c.HostPPS = 100_000
	}
	if c.PathPPS == 0 {
		c.PathPPS = 100_000
	}
	if c.PathDelay == 0 {
		c.PathDelay = 10 * time.Microsecond
	}
}

// Counters are the fabric's and the NICs' events, summed over both NICs
// (the NIC program's counters, read from the models).
type Counters struct {
	DataSent         int64 // data packets the sending NICs put on a path
	Trimmed          int64 // trimmed on a path (NACK TRIMMED)
	TrimmedLastHop   int64 // trimmed on the last hop (NACK TRIMMED_LASTHOP)
	ECNMarked        int64
	LostCut          int64 // data lost on a cut path
	LostRandom       int64 // data lost to random loss
	LostOverflow     int64 // data dropped at a full queue (NO_TRIM)
	LostNoSlot       int64 // data the sending NIC dropped: no usable slot
	ControlLost      int64 // SACKs, NACKs, probes and answers lost
	Delivered        int64 // data handed to a host
	Duplicates       int64 // at the receiving NIC: SACKed, not delivered
	BeyondWindow     int64 // at the receiving NIC: SACKed, not delivered
	SACKs, NACKs     int64
	PathFailed       int64 // slots that went to their backup EV
	BackupFailed     int64 // slots whose backup failed too
	BackupTaken      int64 // data packets sent on a backup EV
	ProbesSent       int64
	ProbesAnswered   int64 // answers sent by the receiving NIC
	Revived          int64 // slots made GOOD by a probe answer
	StaleEchoes      int64 // answers for an EV the slot no longer uses
	UnknownQP        int64
	DataLostInFlight int64 // part of LostCut: on the path when it was cut
}

// DataLost is every data packet lost untrimmed.
func (c Counters) DataLost() int64 {
	return c.LostCut + c.LostRandom + c.LostOverflow + c.LostNoSlot
}

// Trims is every trimmed data packet.
func (c Counters) Trims() int64 { return c.Trimmed + c.TrimmedLastHop }

// Sim is one simulation: two hosts, each an engine on a NIC, and the paths.
type Sim struct {
	cfg    Config
	fab    *fabric.Fabric
	plan   *plan.Plan
	clock  *Clock
	rng    *rand.Rand
	events eventQueue
	seq    uint64
	paths  []*path // index plane*T1s + t1
	hosts  [2]*Host
	c      Counters
	err    error  // the first internal failure: a bug of the simulator
	trace  uint64 // FNV-1a over every loss and trim: when, where, which PSN
	hooks  []sentHook
}

// Host is one end: an engine and the NIC it sits on.
type Host struct {
	Engine   *transport.Engine
	Addr     netip.Addr
	sim      *Sim
	nic      *nic
	timerGen uint64
	timerAt  time.Duration
	armed    bool
	peer     *Host
}

type sentHook struct {
	h     *Host
	count int64
	fn    func()
}

// New returns a simulation of cfg with two hosts.
func New(cfg Config) (*Sim, error) {
	cfg.fill()
	if cfg.Slots%cfg.Planes != 0 || cfg.Slots > 256 {
		return nil, fmt.Errorf("transporttest: %d slots is not a multiple of %d planes up to 256", cfg.Slots, cfg.Planes)
	}
	if cfg.TrimAt >= cfg.QueueCap {
		return nil, fmt.Errorf("transporttest: trim threshold %d is not below queue capacity %d", cfg.TrimAt, cfg.QueueCap)
	}
	f, err := fabricFor(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sim{
		cfg:   cfg,
		fab:   f,
		plan:  plan.New(f),
		clock: &Clock{base: time.Unix(1_700_000_000, 0)},
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x6d7263)),
	}
	common := nicmodel.NewCommon(f)
	if err := common.WriteAll(nicmodel.Insert, tables.NewGenerator(s.plan).NICCommonEntries()...); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Planes*cfg.T1s; i++ {
		s.paths = append(s.paths, &path{id: i, up: true, pps: [2]float64{cfg.PathPPS, cfg.PathPPS}})
	}
	for i := range s.hosts {
		at := plan.Host{Row: i, Port: 0}
		addr := s.plan.HostAddr(at)
		e, err := transport.New(transport.Config{Addr: addr, Clock: s.clock,
			DSCPTrimmable: uint8(f.DSCP.Trimmable), DSCPNoTrim: uint8(f.DSCP.NoTrim), VirtualPayload: cfg.VirtualPayload})
		if err != nil {
			return nil, err
		}
		h := &Host{Engine: e, Addr: addr, sim: s}
		if h.nic, err = newNIC(s, i, at, common); err != nil {
			return nil, err
		}
		h.nic.host = h
		s.hosts[i] = h
	}
	s.hosts[0].peer, s.hosts[1].peer = s.hosts[1], s.hosts[0]
	return s, nil
}

// Hosts returns the two hosts.
func (s *Sim) Hosts() (a, b *Host) { return s.hosts[0], s.hosts[1] }

// Clock returns the virtual clock.
func (s *Sim) Clock() *Clock { return s.clock }

// Trace is a hash of every data loss and trim (time, path, PSN, kind): two
// runs with equal traces lost the same packets at the same times.
func (s *Sim) Trace() uint64 { return s.trace }

func (s *Sim) note(what byte, pk *pkt) {
	h := s.trace
	if h == 0 {
		h = 14695981039346656037
	}
	for _, v := range []uint64{uint64(s.clock.now), uint64(pk.path), uint64(pk.psn), uint64(what), uint64(pk.frame[offBTH])} {
		for i := 0; i < 8; i++ {
			h ^= v >> (8 * i) & 0xff
			h *= 1099511628211
		}
	}
	s.trace = h
}

// Err returns the simulator's first internal failure, if any (a frame it
// could not build): a test should check it is nil.
func (s *Sim) Err() error { return s.err }

// Counters returns the fabric's and the NICs' counters so far.
func (s *Sim) Counters() Counters {
	c := s.c
	for _, h := range s.hosts {
		e := h.nic.model.Counters().Events
		c.DataSent += int64(e[schema.NICEventDataSent])
		c.LostNoSlot += int64(e[schema.NICEventNoEV])
		c.Delivered += int64(e[schema.NICEventDataDelivered])
		c.Duplicates += int64(e[schema.NICEventDuplicate])
		c.BeyondWindow += int64(e[schema.NICEventBeyondWindow])
		c.SACKs += int64(e[schema.NICEventAckSent])
		c.NACKs += int64(e[schema.NICEventTrimmedRx])
		c.PathFailed += int64(e[schema.NICEventPathFailed])
		c.BackupFailed += int64(e[schema.NICEventBackupFailed])
		c.BackupTaken += int64(e[schema.NICEventBackupTaken])
		c.ProbesSent += int64(e[schema.NICEventProbeSent])
		c.ProbesAnswered += int64(e[schema.NICEventProbeAnswered])
		c.Revived += int64(e[schema.NICEventRevived])
		c.StaleEchoes += int64(e[schema.NICEventStaleEcho])
		c.UnknownQP += int64(e[schema.NICEventUnknownQP])
	}
	return c
}

// Fabric is the fabric the two NICs sit on.
func (s *Sim) Fabric() *fabric.Fabric { return s.fab }

// Paths is the number of paths; path p is plane p / T1s, T1 p % T1s.
func (s *Sim) Paths() int { return len(s.paths) }

func (s *Sim) at(d time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.events, event{at: s.clock.now + max(d, 0), seq: s.seq, fn: fn})
}

// At runs fn at virtual time t (from the start of the simulation).
func (s *Sim) At(t time.Duration, fn func()) { s.at(t-s.clock.now, fn) }

// AfterSent runs fn once h's NIC has put count new (not retransmitted) data
// packets on the fabric: "cut at 30%" of a write of n packets is
// AfterSent(h, 0.3*n, cut).
func (s *Sim) AfterSent(h *Host, count int64, fn func()) {
	s.hooks = append(s.hooks, sentHook{h: h, count: count, fn: fn})
}

// SetLink cuts (up false) or restores path p, both directions. Cutting it
// loses everything on it.
func (s *Sim) SetLink(p int, up bool) {
	pa := s.paths[p]
	if pa.up && !up {
		pa.epoch++
	}
	pa.up = up
}

// SetLoss makes path p lose each packet, either direction, with probability
// prob.
func (s *Sim) SetLoss(p int, prob float64) { s.paths[p].loss = prob }

// Throttle sets path p's data rate (both directions) to pps.
func (s *Sim) Throttle(p int, pps float64) { s.paths[p].pps = [2]float64{pps, pps} }

// Run runs events until done returns true (checked after every event), no
// event is left, or the virtual time passes limit. It reports whether done
// returned true.
func (s *Sim) Run(limit time.Duration, done func() bool) bool {
	for s.events.Len() > 0 {
		if done() {
			return true
		}
		ev := heap.Pop(&s.events).(event)
		if ev.at > limit {
			s.clock.now = limit
			return done()
		}
		s.clock.now = ev.at
		ev.fn()
	}
	return done()
}

// QPPair are two QPs, one on each host, opened on the engines and the NICs.
type QPPair struct {
	A, B *transport.QP
}

// Open opens QP qpnA on host a and qpnB on its peer, connected to each
// other, with cfg's mode and parameters (the QPNs, peer and start PSN are
// set here; both directions start at startPSN).
func (s *Sim) Open(a *Host, qpnA, qpnB uint32, startPSN uint32, cfg transport.QPConfig) (QPPair, error) {
	b := a.peer
	if cfg.AckEvery == 0 {
		cfg.AckEvery = s.fab.AckEvery // the NICs' coalescing
	}
	ca, cb := cfg, cfg
	ca.LocalQPN, ca.PeerQPN, ca.Peer, ca.StartPSN = qpnA, qpnB, b.Addr, startPSN
	cb.LocalQPN, cb.PeerQPN, cb.Peer, cb.StartPSN = qpnB, qpnA, a.Addr, startPSN
	qa, err := a.Engine.OpenQP(ca)
	if err != nil {
		return QPPair{}, err
	}
	qb, err := b.Engine.OpenQP(cb)
	if err != nil {
		return QPPair{}, err
	}
	single := cfg.Mode.SinglePath()
	if err := a.nic.open(qpentry.QP{Local: qpnA, Peer: b.Addr, PeerQP: qpnB, StartPSN: startPSN, SinglePath: single}); err != nil {
		return QPPair{}, err
	}
	if err := b.nic.open(qpentry.QP{Local: qpnB, Peer: a.Addr, PeerQP: qpnA, StartPSN: startPSN, SinglePath: single}); err != nil {
		return QPPair{}, err
	}
	return QPPair{A: qa, B: qb}, nil
}

// Kick hands the engine's queued frames to its NIC and re-arms its timer:
// call it after QP.Write.
func (h *Host) Kick() {
	s := h.sim
	for _, f := range h.Engine.TakeOutput(nil) {
		h.nic.fromHost(f)
	}
	at, ok := h.Engine.NextDeadline()
	if !ok {
		h.armed = false
		return
	}
	d := at.Sub(s.clock.base)
	if h.armed && h.timerAt == d {
		return
	}
	h.timerGen++
	gen := h.timerGen
	h.armed, h.timerAt = true, d
	s.at(d-s.clock.now, func() {
		if gen != h.timerGen {
			return
		}
		h.armed = false
		h.Engine.HandleTimers()
		h.Kick()
	})
}

func (h *Host) deliver(frame []byte) {
	_ = h.Engine.HandleFrame(frame) // refusals are the engine's counters
	h.Kick()
}
