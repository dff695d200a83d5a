// Package lab runs a whole fabric of a build directory on BMv2: one
// simple_switch_grpc per switch and per NIC, wired as the address plan says,
// pushed with mrcgen's own controller, with the hosts' ports driven by the
// caller.
//
// Wiring. Every switch serves BMv2's dataplane gRPC service
// (--dp-grpc-server-addr) and the lab carries each packet a switch transmits
// to the port at the other end of the link. This was chosen over veth pairs
// in network namespaces because it needs no root and no kernel interfaces
// (no IPv6 neighbour discovery noise to filter), the lab sees every packet on
// every link in order (the differential check reads the hops from it), and a
// link goes down by cutting the lab's wire, exactly and at once. The cost is
// one gRPC hop per link, which is far below what BMv2 itself costs per
// packet.
package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4runtime/deploy"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
	"github.com/mrc-fabric/mrcgen/p4runtime/targets"
)

// Options configure a lab.
type Options struct {
	// Dir holds the switches' logs, the targets file and the lab state.
	Dir   string
	Tools bmv2.Tools
	// Progress reports start-up stages.
	Progress func(stage string, done, total int)
	Logger   *slog.Logger
	// Verbose turns BMv2's per-packet logs on.
	Verbose bool
	// KeepTrace records every packet every switch transmits (Trace), with
	// no bound but ResetCaptures: for tests.
	KeepTrace bool
	// CaptureHostFrames keeps the frames every NIC hands its host, for
	// HostFrames and WaitHostFrames (the BMv2 tests read them): the first
	// HostFramesLimit of each NIC since ResetCaptures; later ones are
	// counted (HostFramesDropped), not kept. Off (the default, and `mrcgen
	// lab up`) the lab keeps none: a host attached with AttachHost receives
	// them, and HostDeliveries counts them either way.
	CaptureHostFrames bool
	// HostFramesLimit is the most frames kept per NIC with
	// CaptureHostFrames (0: DefaultHostFramesLimit).
	HostFramesLimit int
	// LossSeed seeds the random loss of links (SetLoss): the same seed
	// drops the same packets of a link's sequence (counted from each
	// SetLoss). 0 means 1.
	LossSeed uint64
	// ID names the lab instance; it is the value of the environment marker
	// (bmv2.EnvMarker) of every process the lab starts, so that Down and
	// Leftovers tell this lab's processes from any other lab's. Default: a
	// random id.
	ID string
}

// DefaultHostFramesLimit is the most frames the lab keeps per NIC with
// Options.CaptureHostFrames: 16,384, several times what a BMv2 test hands
// one NIC between two ResetCaptures (the spray test 1,024 data packets, the
// failover tests a few thousand), about 18 MiB per NIC for frames of the
// lab's default 1 KiB segments.
const DefaultHostFramesLimit = 1 << 14

// Device is one BMv2 process of the lab.
type Device struct {
	artifacts.Device
	Switch *bmv2.Switch
	dp     *bmv2.Dataplane
}

// port names one port of one device.
type port struct {
	dev  string
	port uint32
}

// wire is one direction of a link: what leaves a port goes to peer unless
// the link is cut or the packet is lost. The carry goroutines read down and
// loss without a lock.
type wire struct {
	peer port
	down atomic.Bool
	// id numbers the wire for its loss sequence (fixed once wired).
	id uint64
	// loss is the drop probability scaled to 2^32 (0: none); n counts the
	// packets the wire carried or lost since SetLoss last set it: packet n
	// is lost when lossDraw(seed, id, n) < loss, the same packets for the
	// same seed.
	loss atomic.Uint64
	n    atomic.Uint64
}

// lossDraw is a deterministic 32-bit draw for packet n of wire id
// (splitmix64 of the three).
func lossDraw(seed, id, n uint64) uint64 {
	z := seed ^ id*0x9E3779B97F4A7C15 ^ n*0xBF58476D1CE4E5B9
	z += 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	z ^= z >> 31
	return z >> 32
}

// Frame is a packet seen on a host port or a link.
type Frame struct {
	// Seq orders every frame the lab saw.
	Seq uint64
	At  time.Time
	// Device and Port say where it was transmitted.
	Device string
	Port   uint32
	Data   []byte
}

// Lab is a running fabric.
type Lab struct {
	ID      string
	Build   *artifacts.Build
	Dir     string
	Tools   bmv2.Tools
	Devices map[string]*Device
	// Targets is where each device's P4Runtime service listens.
	Targets     *targets.File
	TargetsPath string
	// StartUp is how long Up took (processes, push, wires), its last
	// attempt only.
	StartUp time.Duration
	// Crashes describes each start-up attempt that a dying switch process
	// ended (see startAttempts): empty when the first attempt succeeded.
	Crashes []string
	Push    []push.Result

	log *slog.Logger
	// links maps each wired port to its wire; fixed once Up has wired.
	links    map[port]*wire
	lossSeed uint64

	mu   sync.Mutex
	cond *sync.Cond
	// capture is what the lab keeps of the frames NICs hand their hosts.
	capture hostCapture
	// writes counts the P4Runtime Write RPCs sent to each device.
	writes writeCounters
	// hostDelivered counts the frames every NIC ever handed its host.
	hostDelivered uint64
	hosts         map[string]*HostPort // attached hosts by NIC
	trace         []Frame
	keep          bool
	seq           atomic.Uint64
	carried       atomic.Uint64
	cutDrops      atomic.Uint64
	lossDrops     atomic.Uint64
	cutData       atomic.Uint64 // the data packets among cutDrops (isData)
	lossData      atomic.Uint64
	unwired       atomic.Uint64
	wg            sync.WaitGroup
	closed        atomic.Bool

	// QP indexes of AcquireQP: uses per index (its epochs), and in use.
	qpMu   sync.Mutex
	qpUses map[int]int
	qpBusy map[int]bool
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Up starts every device of the build, pushes the build to them and wires
// them. The build is compiled first if it is not. On error everything
// started is stopped again; when the error came with a switch process
// dying, Up starts the whole lab once more (startAttempts) and records the
// crash in Lab.Crashes.
func Up(ctx context.Context, b *artifacts.Build, opt Options) (*Lab, error) {
	var crashes []string
	for attempt := 1; ; attempt++ {
		l, err := up(ctx, b, opt)
		var crash *SwitchCrashError
		if err == nil {
			l.Crashes = crashes
			return l, nil
		}
		if !errors.As(err, &crash) || attempt == startAttempts || ctx.Err() != nil {
			return nil, err
		}
		crashes = append(crashes, crash.Error())
		if opt.Logger != nil {
			opt.Logger.Warn("a switch process died during start-up; starting the lab again", "attempt", attempt, "error", crash)
		}
	}
}

// startAttempts is how many times Up starts the whole lab when a switch
// process dies during start-up. BMv2's P4Runtime server (PI) now and then
// dies inside SetForwardingPipelineConfig: a segfault in libpip4info, about
// one lab start in twenty on a loaded two-core machine, never on the
// same start twice so far. Only a dead switch process is retried; any other
// failure (a refused pipeline, a table the switch rejects) is returned at
// once.
const startAttempts = 2

// SwitchCrashError reports the switch processes that exited while the lab
// was starting, and the error the start-up met because of it.
type SwitchCrashError struct {
	// Crashed is each dead switch's name, exit and last log lines.
	Crashed []string
	Err     error
}

func (e *SwitchCrashError) Error() string {
	return fmt.Sprintf("%v (switch process died: %s)", e.Err, strings.Join(e.Crashed, "; "))
}

func (e *SwitchCrashError) Unwrap() error { return e.Err }

// untilASwitchExits returns a context that is cancelled, with the switch
// named as the cause, as soon as any of the lab's switch processes exits.
func (l *Lab) untilASwitchExits(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	for name, d := range l.Devices {
		go func() {
			select {
			case <-d.Switch.Exit():
				cancel(fmt.Errorf("switch %s exited", name))
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(context.Canceled) }
}

// crashed lists the devices whose switch process is no longer running, and
// keeps each one's log under a new name, so that a second start does not
// overwrite it. It is called on a failed start only, and gives a process
// whose connection just closed a moment to be seen exiting.
func (l *Lab) crashed() []string {
	var dead []string
	grace := time.Now().Add(500 * time.Millisecond)
	for name, d := range l.Devices {
		if !d.Switch.Exited(time.Until(grace)) {
			continue
		}
		kept := d.Switch.LogPath + ".crashed"
		tail := d.Switch.LogTail(5)
		if err := os.Rename(d.Switch.LogPath, kept); err != nil {
			kept = d.Switch.LogPath
		}
		dead = append(dead, fmt.Sprintf("%s (%v; log %s: %s)", name, d.Switch.ExitError(), kept, tail))
	}
	sort.Strings(dead)
	return dead
}

func up(ctx context.Context, b *artifacts.Build, opt Options) (l *Lab, err error) {
	start := time.Now()
	if opt.Tools.SimpleSwitchGRPC == "" {
		return nil, fmt.Errorf("lab: %s not found", bmv2.SimpleSwitchGRPC)
	}
	if opt.Dir == "" {
		return nil, errors.New("lab: no directory for logs")
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	logger := opt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	progress := opt.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	if b.Manifest.Programs[artifacts.ProgramSwitch].BMv2JSON == "" || b.Manifest.Programs[artifacts.ProgramNIC].BMv2JSON == "" {
		if opt.Tools.P4C == "" {
			return nil, fmt.Errorf("lab: build %s is not compiled and %s is not found", b.Dir, bmv2.P4C)
		}
		progress("compile", 0, 1)
		m, err := artifacts.Compile(ctx, b.Dir, opt.Tools.P4C)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		b.Manifest = m
		progress("compile", 1, 1)
	}

	id := opt.ID
	if id == "" {
		id = newID()
	}
	l = &Lab{
		ID: id, Build: b, Dir: opt.Dir, Tools: opt.Tools, Devices: map[string]*Device{},
		log: logger, links: map[port]*wire{}, keep: opt.KeepTrace,
		lossSeed: opt.LossSeed,
	}
	if l.capture, err = newHostCapture(opt); err != nil {
		return nil, err
	}
	if l.lossSeed == 0 {
		l.lossSeed = 1
	}
	l.cond = sync.NewCond(&l.mu)
	defer func() {
		if err != nil {
			if dead := l.crashed(); len(dead) > 0 {
				err = &SwitchCrashError{Crashed: dead, Err: err}
			}
			l.Close()
			l = nil
		}
	}()

	// Processes, a few at a time: each start costs BMv2 a second of CPU.
	devs := b.Manifest.Devices
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	var started atomic.Int64
	for i := range devs {
		d := devs[i]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sw, err := bmv2.Start(ctx, opt.Tools, bmv2.Options{
				Name: d.Name, DeviceID: 1, PriorityQueues: 2, LogDir: opt.Dir, LabID: l.ID, Verbose: opt.Verbose,
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			l.Devices[d.Name] = &Device{Device: d, Switch: sw}
			progress("start switches", int(started.Add(1)), len(devs))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return l, fmt.Errorf("lab: %w", err)
	}
	// From here on, a switch that dies ends the start-up at once: the push
	// would otherwise dial it until ctx's deadline.
	ctx, stopWatching := l.untilASwitchExits(ctx)
	defer stopWatching()
	l.writes = writeCounters{}
	for name := range l.Devices {
		l.writes[name] = new(atomic.Uint64)
	}
	if err := l.writeState(); err != nil {
		return l, err
	}
	if err := l.setQueueDepth(ctx); err != nil {
		return l, err
	}

	// Push with mrcgen's own controller.
	insecure := true
	l.Targets = &targets.File{Defaults: targets.Endpoint{Insecure: &insecure, ElectionID: 1}, Devices: map[string]targets.Endpoint{}}
	for name, d := range l.Devices {
		l.Targets.Devices[name] = targets.Endpoint{Address: d.Switch.GRPCAddr, DeviceID: d.Switch.DeviceID, ThriftPort: d.Switch.ThriftPort}
	}
	l.TargetsPath = filepath.Join(opt.Dir, "targets.yaml")
	tf, err := os.Create(l.TargetsPath)
	if err != nil {
		return l, fmt.Errorf("lab: %w", err)
	}
	if err := l.Targets.Write(tf); err != nil {
		tf.Close()
		return l, fmt.Errorf("lab: targets: %w", err)
	}
	tf.Close()
	// Progress per device: PushAll reports each device's batches; a device
	// is done when its count reaches its total.
	var progressMu sync.Mutex
	pushedDevices := map[string]bool{}
	l.Push, err = deploy.Run(ctx, b, l.Targets, deploy.Options{Parallelism: 4, Logger: logger, DialOptions: l.writes.dialOptions,
		Progress: func(device string, done, total int) {
			progressMu.Lock()
			defer progressMu.Unlock()
			if done == total && !pushedDevices[device] {
				pushedDevices[device] = true
				progress("push", len(pushedDevices), len(devs))
			}
		}})
	if err != nil {
		return l, fmt.Errorf("lab: %w", err)
	}

	// Wires.
	l.wire()
	for name, d := range l.Devices {
		dp, err := bmv2.OpenDataplane(context.Background(), d.Switch.DataplaneConn(), d.Switch.DeviceID)
		if err != nil {
			return l, fmt.Errorf("lab: %s: %w", name, err)
		}
		d.dp = dp
	}
	for _, d := range l.Devices {
		l.wg.Add(1)
		go l.carry(d)
	}
	l.StartUp = time.Since(start)
	return l, nil
}

// setQueueDepth gives every port queue of every device the capacity the
// fabric's thresholds were checked against (trim.queue_packets). BMv2's
// default is fabric.DefaultQueuePackets; any other value needs the thrift
// CLI, as only it can change a queue's depth.
func (l *Lab) setQueueDepth(ctx context.Context) error {
	depth := l.Build.Fabric.Trim.QueuePackets
	if depth == fabric.DefaultQueuePackets {
		return nil
	}
	for name, d := range l.Devices {
		if _, err := d.Switch.CLI(ctx, l.Tools, "set_queue_depth "+strconv.Itoa(depth)); err != nil {
			return fmt.Errorf("lab: %s: trim.queue_packets %d: %w", name, depth, err)
		}
	}
	return nil
}

// wire computes which port of which device each port faces.
func (l *Lab) wire() {
	p := l.Build.Plan
	for _, s := range p.Switches() {
		for n := 0; n < p.Ports(s); n++ {
			nb, ok := p.Neighbor(s, n)
			if !ok {
				continue
			}
			var peer port
			if nb.Role == plan.RoleNIC {
				peer = port{p.HostName(p.HostByIndex(nb.Index)), uint32(nb.Port)}
			} else {
				peer = port{p.Name(nb.Switch()), uint32(nb.Port)}
			}
			a := port{p.Name(s), uint32(n)}
			l.links[a] = &wire{peer: peer}
			l.links[peer] = &wire{peer: a}
		}
	}
	// Wire ids in a stable order (device, port): the loss sequence of a
	// link is the same in every lab of the build.
	ends := make([]port, 0, len(l.links))
	for e := range l.links {
		ends = append(ends, e)
	}
	sort.Slice(ends, func(i, j int) bool {
		if ends[i].dev != ends[j].dev {
			return ends[i].dev < ends[j].dev
		}
		return ends[i].port < ends[j].port
	})
	for i, e := range ends {
		l.links[e].id = uint64(i + 1)
	}
}

// carry moves what device d transmits to the other end of each link, and
// what it sends to a host port into that host's capture.
func (l *Lab) carry(d *Device) {
	defer l.wg.Done()
	isNIC := d.Role == plan.RoleNIC.String()
	for {
		pkt, err := d.dp.Recv()
		if err != nil {
			if !l.closed.Load() {
				l.log.Warn("dataplane stream ended", "device", d.Name, "err", err)
			}
			return
		}
		f := Frame{At: time.Now(), Device: d.Name, Port: pkt.Port, Data: pkt.Data}
		if l.keep {
			// Numbered under the trace's lock: the trace is in Seq order.
			l.mu.Lock()
			f.Seq = l.seq.Add(1)
			l.trace = append(l.trace, f)
			l.mu.Unlock()
		} else {
			f.Seq = l.seq.Add(1)
		}
		if isNIC && pkt.Port == plan.NICHostPort {
			l.deliverHost(d.Name, f)
			continue
		}
		w, ok := l.links[port{d.Name, pkt.Port}]
		if !ok {
			l.unwired.Add(1)
			continue
		}
		if w.down.Load() {
			l.cutDrops.Add(1)
			if isData(pkt.Data) {
				l.cutData.Add(1)
			}
			continue
		}
		if p := w.loss.Load(); p != 0 && lossDraw(l.lossSeed, w.id, w.n.Add(1)) < p {
			l.lossDrops.Add(1)
			if isData(pkt.Data) {
				l.lossData.Add(1)
			}
			continue
		}
		pd := l.Devices[w.peer.dev]
		if err := pd.dp.Send(bmv2.Packet{Port: w.peer.port, Data: pkt.Data}); err != nil {
			if !l.closed.Load() {
				l.log.Warn("carry", "to", w.peer.dev, "err", err)
			}
			continue
		}
		l.carried.Add(1)
	}
}

// isData reports whether a frame on a wire is an MRC or RoCE data packet
// (an RDMA Write, whole or trimmed), not an answer, a probe or a frame
// that is not MRC's: a transfer resends exactly its data packets the
// wires dropped.
func isData(frame []byte) bool {
	p, err := mrcpkt.Parse(frame)
	return err == nil && mrcpkt.IsData(p.BTH.Opcode)
}

// SendFromHost hands a frame to a host's NIC, as the host would.
func (l *Lab) SendFromHost(nic string, frame []byte) error {
	d, ok := l.Devices[nic]
	if !ok || d.Role != plan.RoleNIC.String() {
		return fmt.Errorf("lab: no NIC %q", nic)
	}
	return d.dp.Send(bmv2.Packet{Port: plan.NICHostPort, Data: frame})
}

// Inject hands a frame to a port of any device, as if the device at the
// other end of the link had sent it (tests use it to put packets on a link
// that no NIC would build).
func (l *Lab) Inject(device string, port uint32, frame []byte) error {
	d, ok := l.Devices[device]
	if !ok {
		return fmt.Errorf("lab: no device %q", device)
	}
	return d.dp.Send(bmv2.Packet{Port: port, Data: frame})
}

// Trace returns every frame every device transmitted (with KeepTrace).
func (l *Lab) Trace() []Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Frame(nil), l.trace...)
}

// TraceFrom returns the frames of Trace from index i on: a caller that
// follows the trace reads only what is new.
func (l *Lab) TraceFrom(i int) []Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i >= len(l.trace) {
		return nil
	}
	return append([]Frame(nil), l.trace[max(i, 0):]...)
}

// ResetCaptures forgets the frames captured so far.
func (l *Lab) ResetCaptures() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.capture.reset()
	l.trace = nil
}

// Stats are the lab's wire counters.
type Stats struct {
	Carried  uint64
	CutDrops uint64 // packets sent onto a cut link
	// LossDrops are packets the random loss of a link dropped (SetLoss).
	LossDrops uint64
	// CutData and LossData are the data packets (RDMA Writes, whole or
	// trimmed) among CutDrops and LossDrops; the rest are SACKs, NACKs,
	// probes and their answers.
	CutData, LossData uint64
	Unwired           uint64
}

// DataDrops is every data packet a wire dropped: cut or lost.
func (s Stats) DataDrops() uint64 { return s.CutData + s.LossData }

// Stats returns what the wires did.
func (l *Lab) Stats() Stats {
	return Stats{Carried: l.carried.Load(), CutDrops: l.cutDrops.Load(), LossDrops: l.lossDrops.Load(),
		CutData: l.cutData.Load(), LossData: l.lossData.Load(), Unwired: l.unwired.Load()}
}

// SetLoss makes the link between a and its neighbour b drop each packet,
// in either direction, with probability p (0 clears, 1 drops all). The
// drops are deterministic: packet n of a direction since this call is
// dropped by a draw from the lab's LossSeed, the direction and n, so every
// run that puts the same number of packets on the link loses the same ones
// of them, whatever the lab did before (a test's count of losses holds by
// construction, and two transfers given the same loss in turn see the same
// sequence). The switches are not told: to them it is a lossy cable.
func (l *Lab) SetLoss(a, b string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("lab: loss %v on %s:%s is not a probability in [0, 1]", p, a, b)
	}
	for _, n := range []string{a, b} {
		if _, ok := l.Devices[n]; !ok {
			return fmt.Errorf("lab: no device %q", n)
		}
	}
	var ws []*wire
	for from, w := range l.links {
		if from.dev == a && w.peer.dev == b {
			ws = append(ws, w, l.links[w.peer])
		}
	}
	if len(ws) == 0 {
		return fmt.Errorf("lab: %s and %s are not linked", a, b)
	}
	scaled := uint64(p * (1 << 32))
	if p > 0 && scaled == 0 {
		scaled = 1
	}
	for _, w := range ws {
		w.n.Store(0)
		w.loss.Store(scaled)
	}
	return nil
}

// SetLink cuts (up=false) or restores the link between switch a and its
// neighbour b, in both directions, and tells both switches' port monitors.
func (l *Lab) SetLink(ctx context.Context, a, b string, up bool) error {
	for _, n := range []string{a, b} {
		if _, ok := l.Devices[n]; !ok {
			return fmt.Errorf("lab: no device %q", n)
		}
	}
	var ends []port
	for from, w := range l.links {
		if from.dev == a && w.peer.dev == b {
			ends = append(ends, from, w.peer)
		}
	}
	if len(ends) == 0 {
		return fmt.Errorf("lab: %s and %s are not linked", a, b)
	}
	for _, e := range ends {
		l.links[e].down.Store(!up)
	}
	for _, e := range ends {
		d := l.Devices[e.dev]
		if err := bmv2.SetPortStatus(ctx, d.Switch.DataplaneConn(), d.Switch.DeviceID, e.port, up); err != nil {
			return fmt.Errorf("lab: %s: %w", e.dev, err)
		}
	}
	return nil
}

// Port returns the port of device a that faces device b.
func (l *Lab) Port(a, b string) (uint32, bool) {
	for from, w := range l.links {
		if from.dev == a && w.peer.dev == b {
			return from.port, true
		}
	}
	return 0, false
}

// Close stops every device and the wires. It is safe to call twice.
func (l *Lab) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.detachAll()
	var errs []error
	for _, d := range l.Devices {
		if d.dp != nil {
			_ = d.dp.CloseSend()
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, d := range l.Devices {
		wg.Go(func() {
			if err := d.Switch.Stop(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	l.wg.Wait()
	_ = os.Remove(filepath.Join(l.Dir, stateFile))
	return errors.Join(errs...)
}
