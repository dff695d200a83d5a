package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/internal/chart"
	"github.com/mrc-fabric/mrcgen/internal/sim"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

type simOptions struct {
	fabric      fabricOptions
	build       string
	workload    string
	iterations  int
	bytes       string
	start       string
	hosts       int
	transport   string
	seed        uint64
	runs        int
	workers     int
	segment     int
	window      int
	qps         int
	roceQPs     int
	convergence time.Duration
	localRepair time.Duration
	limit       time.Duration
	payload     bool
	noCC        bool
	delayCC     bool
	pfc         bool
	exactQueues bool
	pfcXOFF     string
	pfcXON      string
	roceECN     string
	switchBuf   string
	bufferAlpha float64
	svg         string
	cpuProfile  string
	hugePages   bool
	compare     string
	faults      map[sim.FaultKind]*[]string
}

func newSimCommand(io streams) *cobra.Command {
	o := simOptions{faults: map[sim.FaultKind]*[]string{}}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate the fabric packet by packet: flows, faults, MRC against RoCE",
		Long: `sim runs a packet-level simulation of the fabric: every packet is forwarded by the
build's own static tables (the uN shift and /48 lookup verify walks), every NIC is the
generated NIC program (its Go model, which the BMv2 tests prove equal to the program),
every host runs mrcgen's transport engine on a virtual clock. Links have the fabric's
speeds and delays (links.nic_t0_ns, links.t0_t1_ns); switch ports have the switch
program's two strict priorities, trimming at trim.threshold_packets, ECN marking at
trim.ecn_packets and, without --pfc, tail drop where the switch's shared buffer admits
no more (below). See docs/protocol.md, "The simulator", for what is modelled and how.

Workloads (--workload): permutation (every host sends --bytes to one other, a random
derangement), all-to-all (every host sends --bytes to every other), incast (every host
but the first sends --bytes to the first: its NIC is the bottleneck), or file:PATH (a
JSON array of {"src": "nic-0", "dst": "nic-5", "bytes": 1048576, "start": "10us"}).
Collectives, whose steps wait for each other (a step is complete when its slowest
transfer is), repeated --iterations times: ring-allreduce (2(N-1) steps, each host
sends --bytes/N to its ring successor) and alltoall-collective (one step, each host
sends --bytes/N to every other). The table gives each step's time and slowdown
against its ideal (a host's bytes in the step over its NIC's speed).
--hosts N takes N hosts spread evenly over the fabric (every T0 its share).

--transport roce runs the RoCEv2 baseline on the same fabric: per host pair --roce-qps
single-path QPs on every plane (so that a host uses its whole NIC; the default is NCCL's
channels to a network peer, one per 14 GB/s of the NIC, spread over the planes: 2 a
plane on small), each pinned to a T1 by its T0's ECMP hash, go-back-N, DSCP NO_TRIM.
The hash is resilient: when a T1 leaves or rejoins a T0's group, only the QPs on it
(or ranking it first) move. A T0 whose own link to a T1 goes down (a cut T0-T1 link, or
a T1 that powers off, which every T0 sees) takes that T1 out of its group --local-repair
later (default 5ms: link-down detection and the switch's next-hop group update, before
BGP). Traffic it cannot repair, towards a T0 whose link up to a T1 is cut, moves only
when BGP converges, --convergence after the change (default 500ms: BFD's three missed
50 ms hellos plus BGP withdrawal and FIB updates, the low end of what production BGP
fabrics take), which also takes a link back once it has been up that long. Without
--pfc it is lossy RoCE (DCQCN, tail drop, which go-back-N resends); with --pfc it is
lossless RoCE, what most RoCE deployments run.

--compare roce,roce+pfc runs the same fabric, workload, faults and seed under each
transport it lists (mrc, mrc+pfc, roce, roce+pfc: a +pfc one with --pfc) as well as under
--transport (with --pfc or not), each with its congestion control; --qps and --delay-cc
go to the MRC runs, --roce-qps to the RoCE ones, --pfc-xoff and --pfc-xon to the +pfc
ones, --exact-queues to all
(the +pfc runs use the explicit queue anyway: with it, every run does). The table gives
each run's block, then a line per transport; --svg DIR writes compare.svg (below).

RoCE's congestion control is DCQCN with NVIDIA ConnectX's firmware defaults (mlx5:
rpg_time_reset 300 us, rpg_byte_reset 32767 bytes, rpg_threshold 1, rpg_ai_rate 5 Mb/s,
rpg_hai_rate 50 Mb/s, rpg_gd 11 (cut alpha/2), rpg_min_dec_fac 50%, rpg_min_rate 1 Mb/s,
dce_tcp_g 1019/1024, dce_tcp_rtt 1 us, initial_alpha_value 1023/1024, at most one cut per
4 us, the target rate clamped only after a timer increase), its line rate the NIC port's
(nic.speed_gbps / planes); a CNP is a SACK marked because its data arrived CE. The
switches mark RoCE's data (NO_TRIM, ECN-capable) by RED on every egress, host-facing
ports too: a packet finding q bytes of data queued on its port is marked with
probability 0 below kmin, pmax (q - kmin) / (kmax - kmin) up to kmax, 1 from kmax on,
drawn from the run's seeded stream. Default: NVIDIA's RoCE profile for Spectrum switches
(Cumulus Linux "nv set qos roce": kmin 150000, kmax 1500000 bytes, pmax 100%), the same
at every port speed; the DCQCN paper's 40 Gb/s values (5 KB, 200 KB, 1%) scale with the
speed instead (25 KB, 1 MB at 200 Gb/s). --roce-ecn kmin=BYTES,kmax=BYTES,pmax=P% sets
others. Both profiles were made for shared buffers that let a port queue megabytes, as
the switches here do (below); with --switch-buffer queue a port holds 64 packets
(270720 bytes) and NVIDIA's marks at most 9% before it tail-drops. MRC's TRIMMABLE data keeps the switch program's rule (trim.ecn_packets, fabric-facing
ports only). Sources and figures: docs/protocol.md sections 10 and 11.

Switch buffer (without --pfc, both transports): each switch shares one data buffer among
its ports with a dynamic threshold, as a 51.2 Tb/s switch does (Broadcom's dynamic_th,
alpha = 2^dynamic_th): a data packet for a port holding q bytes is tail-dropped when
q + its bytes > alpha x (the buffer - the bytes the whole switch holds), so one congested
port may take half of it at alpha 1, two a third each. Default: a Tomahawk 5's 165.2 MB
per 51.2 Tb/s times the switch's own ports at switch.port_speed_gbps (small: 5162500
bytes a T0 and a T1; mrc-1k: 20650000 and 10325000; mrc-131k: 165200000), alpha 1
(SONiC's default dynamic_th 0). --switch-buffer BYTES and --buffer-alpha A change them;
--switch-buffer queue tail-drops at trim.queue_packets a port instead (BMv2's 64
packets, the simulator's rule before). MRC trims long before either limit. With --pfc
the data is lossless and bounded by the ingress buffers (below), and both flags are
refused unless a run is lossy (--compare gives them to the lossy runs).

--pfc turns on priority flow control for the data class (either transport): a switch
that holds --pfc-xoff bytes of the data an ingress port brought in pauses the device
upstream of that port (a switch port or a NIC port), which stops starting data
packets on the link until the switch is down to --pfc-xon and resumes it. Control and
trimmed packets are never paused, NICs never pause their fabric, and data is never
tail-dropped: ECN marking (DCQCN) and MRC's trimming still apply. Each ingress port's
buffer is trim.queue_packets of the run's largest frames; the default XOFF leaves
below it the headroom of the fabric's longer link (what still arrives after PAUSE is
sent: two link delays at its rate, three largest frames and the PAUSE frame), and a
larger --pfc-xoff is refused; the default XON is two largest frames below XOFF. On
small: buffer 273408, headroom 20472, XOFF 252936, XON 244392 bytes.

Queues: with --pfc or --exact-queues every port runs an explicit queue (a FIFO per
priority, an event when a frame has left), in which a control packet delays the data
queued behind it exactly. By default a data packet's departure is computed when it is
queued, and one overtaken by control packets leaves early by their serialization
(134-byte SACKs: 11 ns each at 100 Gb/s; the port's capacity is still counted). The
README's "What MRC buys" table runs every transport with --exact-queues, so that
its figures all come from one queue model.

Faults, at simulated times (the lab's link syntax, times instead of shares):
  --cut p0-t0-0:p0-t1-1@100us[,until=300us]
  --flap p0-t0-0:p0-t1-1@100us,period=50us,duty=20%[,until=1ms]   (spells of 1µs or more)
  --switch-down p0-t1-1@100us[,until=...]
  --loss p0-t0-0:p0-t1-1:1%[@100us]     --rate p0-t1-0:p0-t0-1:25%[@100us]
Times run from 0 to 24h; a loss is 0-100%, a rate 0.0001-100% of the link's speed.
Faults on one link add up: it is down while any of them holds it down (a
--switch-down of either end too), loses a packet if any of its losses does, each
drawn independently (1% and 1% lose 1.99%), and runs at the slowest of its rates; a
switch is down while any of its --switch-down faults holds it.

The table gives flow completion times, each sending host's goodput as a share of its
NIC's speed and each receiving host's (an incast's receiver), resends by cause, trims,
drops, the NICs' path events, with --pfc the PAUSE and RESUME frames and the time
ports spent paused, and, per fault, the data packets lost, the time to the last path a
NIC retired (RoCE: the QP pairs it stalled, those with a write to send whose path it
cut), and the time until the fabric's goodput is back to 95% of what it was. RoCE's
routing line counts the local repairs, the convergences and the QP ends they moved.
--svg DIR writes fct-cdf.svg and goodput.svg (goodput over time, faults marked); with
--compare, compare.svg: the transports' flow completion time CDFs and goodput over time
side by side, a colour per transport, the faults shaded while they hold, each time axis
logarithmic when its longest line is over 10 times its shortest (RoCE waiting 500 ms
for BGP, MRC done in a millisecond). --runs R runs seeds --seed..--seed+R-1 on
every core. The same inputs and seed give the same result, byte for byte, apart from the
"run" figures (wall-clock time).

With --output json: the result, or an array of them with --runs; with --compare, an
object with each transport's result under its name ("mrc", "roce+pfc"), or an array of
those with --runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSim(cmd.Context(), io, o)
		},
	}
	o.fabric.addFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.build, "build", "", "build directory whose tables forward the packets (default: the tables generated for -p/-f)")
	fs.StringVarP(&o.workload, "workload", "w", "permutation", "permutation, all-to-all, incast, file:PATH, ring-allreduce or alltoall-collective")
	fs.IntVar(&o.iterations, "iterations", 1, "iterations of a collective")
	fs.StringVar(&o.bytes, "bytes", "1MiB", "bytes of each flow (permutation, all-to-all, incast)")
	fs.StringVar(&o.start, "start", "0us", "when the flows start (permutation, all-to-all, incast)")
	fs.IntVar(&o.hosts, "hosts", 0, "take N hosts spread over the fabric (default: all)")
	fs.StringVar(&o.transport, "transport", "mrc", "mrc or roce")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the run (the workload's draw, random loss)")
	fs.IntVar(&o.runs, "runs", 1, "independent runs, seeds seed to seed+runs-1, on every core")
	fs.IntVar(&o.workers, "workers", 0, "goroutines each run splits the fabric over, the same result for every count (0: the cores over the runs)")
	fs.IntVar(&o.segment, "segment", sim.DefaultSegment, "payload bytes per data packet")
	fs.IntVar(&o.window, "window", 0, "transport window in packets (default: twice the fabric's BDP over its unloaded round trip, 64 on small, 128 on mrc-1k; at most its nic.window_packets)")
	fs.IntVar(&o.qps, "qps", 0, "MRC: QPs per host pair, each flow split evenly over them (default 1; RoCE's is --roce-qps)")
	fs.IntVar(&o.roceQPs, "roce-qps", 0, "RoCE: QPs per plane and host pair, each hashed on its own, each flow split evenly over them (default: NCCL's channels per network peer over the planes, 2 on small)")
	fs.DurationVar(&o.convergence, "convergence", sim.DefaultConvergence, "RoCE: BGP convergence delay after a change a T0 cannot repair itself (above 0, at most 24h)")
	fs.DurationVar(&o.localRepair, "local-repair", sim.DefaultLocalRepair, "RoCE: how long a T0 takes to drop a T1 from its ECMP group after its own link to it fails (above 0, at most 24h)")
	fs.DurationVar(&o.limit, "limit", sim.DefaultLimit, "stop at this simulated time (above 0, at most 24h)")
	fs.BoolVar(&o.payload, "payload", false, "carry real bytes and check every receiver got exactly the sender's (small fabrics)")
	fs.BoolVar(&o.noCC, "no-cc", false, "run the transports without congestion control (MRC: DCTCP, RoCE: DCQCN by default)")
	fs.BoolVar(&o.delayCC, "delay-cc", false, "MRC: cut the window on RTT above the QP's smallest plus 4 µs (Swift's rule) instead of on ECN marks")
	fs.BoolVar(&o.exactQueues, "exact-queues", false, "every port runs the explicit queue --pfc uses, without PFC: control packets delay the data queued behind them exactly (slower; see above)")
	fs.BoolVar(&o.pfc, "pfc", false, "priority flow control: the data class is lossless, paused instead of tail-dropped (see above)")
	fs.StringVar(&o.pfcXOFF, "pfc-xoff", "", "with --pfc: bytes an ingress port holds when its upstream is paused (default: its buffer less the headroom)")
	fs.StringVar(&o.pfcXON, "pfc-xon", "", "with --pfc: bytes an ingress port holds when its upstream is resumed (default: two largest frames below XOFF)")
	fs.StringVar(&o.roceECN, "roce-ecn", "", "RoCE data's ECN marking (RED) at every switch egress: kmin=BYTES,kmax=BYTES,pmax=P% (default: NVIDIA's RoCE profile, kmin=150KB,kmax=1500KB,pmax=100%; see above)")
	fs.StringVar(&o.switchBuf, "switch-buffer", "default", "lossy runs: each switch's shared data buffer, BYTES, default (a Tomahawk 5's bytes per Gb/s times the switch's ports: see above) or queue (trim.queue_packets a port, as BMv2)")
	fs.Float64Var(&o.bufferAlpha, "buffer-alpha", sim.DefaultBufferAlpha, "lossy runs: the shared buffer's dynamic threshold, a port's data may take alpha x the free buffer (SONiC's dynamic_th 0: 1)")
	fs.StringVar(&o.svg, "svg", "", "write fct-cdf.svg and goodput.svg into this directory (with --compare: compare.svg)")
	fs.BoolVar(&o.hugePages, "huge-pages", true, "Linux: ask for transparent huge pages for the simulator's memory (MADV_HUGEPAGE, MADV_COLLAPSE): at mrc-131k's size they save about a quarter of a run's time")
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the runs to this file (go tool pprof reads it): where the simulator spends its time, for a report of a slow run")
	fs.StringVar(&o.compare, "compare", "", "also run these transports, comma-separated: mrc, mrc+pfc, roce, roce+pfc (see above)")
	for _, k := range []sim.FaultKind{sim.LinkDown, sim.Flap, sim.SwitchDown, sim.Loss, sim.Rate} {
		v := new([]string)
		o.faults[k] = v
		fs.StringArrayVar(v, k.String(), nil, "fault: "+k.String()+" (see above)")
	}
	return cmd
}

// simSetup is a run's inputs, resolved once for every seed.
type simSetup struct {
	f     *fabric.Fabric
	p     *plan.Plan
	src   sim.Source
	hosts []plan.Host
	file  []sim.Flow
	bytes int64
	start time.Duration
	tr    sim.Transport
	// variants are the transports the run runs: --transport (with --pfc
	// or not), then those --compare adds.
	variants []variant
	faults   []sim.Fault
	pfc      *sim.PFCConfig
	roceECN  *sim.RED
	// switchBuf and bufferAlpha are the lossy runs' Options.SwitchBuffer
	// and BufferAlpha.
	switchBuf   int64
	bufferAlpha float64
	what        string
}

func resolveSim(o simOptions) (*simSetup, error) {
	st := &simSetup{}
	if o.build != "" {
		if o.fabric.file != "" || o.fabric.preset != "" {
			return nil, errors.New("give --build or --fabric/--preset, not both")
		}
		b, err := artifacts.Open(o.build)
		if err != nil {
			return nil, err
		}
		st.f, st.p, st.src = b.Plan.F, b.Plan, sim.FromBuild(b)
	} else {
		f, err := o.fabric.load()
		if err != nil {
			return nil, err
		}
		st.f, st.p = f, plan.New(f)
		st.src = sim.FromGenerator(st.p)
	}
	var errs []error
	tr, err := sim.ParseTransport(o.transport)
	if err != nil {
		errs = append(errs, fmt.Errorf("--transport %q: want mrc or roce", o.transport))
	}
	st.tr = tr
	if err == nil {
		st.variants, err = resolveVariants(o, tr)
		errs = append(errs, err)
	}
	if o.runs < 1 || o.runs > 10_000 {
		errs = append(errs, fmt.Errorf("--runs %d: want 1 to 10000", o.runs))
	}
	if o.workers < 0 || o.workers > sim.MaxWorkers {
		errs = append(errs, fmt.Errorf("--workers %d: want 1 to %d (0: the cores)", o.workers, sim.MaxWorkers))
	}
	if st.start, err = sim.ParseTime(o.start); err != nil {
		errs = append(errs, fmt.Errorf("--start: %w", err))
	}
	if st.bytes, err = sim.ParseBytes(o.bytes); err != nil {
		errs = append(errs, fmt.Errorf("--bytes: %w", err))
	}
	if st.roceECN, err = resolveRoCEECN(o, st.f); err != nil {
		return nil, err
	}
	if st.pfc, err = resolvePFC(o, st.f, st.anyPFC()); err != nil {
		errs = append(errs, err)
	}
	if err := resolveSwitchBuffer(o, st); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkSimFlags(o, st.hasMRC(), st.hasRoCE(), st.f)...)
	// A time limit or routing delay at or below 0 would run the clock
	// backwards (0 would be taken as the default), one beyond MaxTime
	// past what its picoseconds hold.
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--limit", o.limit}, {"--convergence", o.convergence}, {"--local-repair", o.localRepair}} {
		if d.v <= 0 || d.v > sim.MaxTime {
			errs = append(errs, fmt.Errorf("%s %v: want a simulated time above 0 and at most %v", d.flag, d.v, sim.MaxTime))
		}
	}
	for _, k := range []sim.FaultKind{sim.LinkDown, sim.Flap, sim.SwitchDown, sim.Loss, sim.Rate} {
		for _, spec := range *o.faults[k] {
			f, err := sim.ParseFault(k, spec)
			if err == nil {
				err = sim.CheckFault(st.p, f)
			}
			if err != nil {
				// The flag and the fault as the user wrote it, then why.
				if fe := (*sim.FaultError)(nil); errors.As(err, &fe) {
					err = fe.Err
				}
				errs = append(errs, fmt.Errorf("--%s %q: %w", k, spec, err))
				continue
			}
			st.faults = append(st.faults, f)
		}
	}
	switch w := o.workload; {
	case w == "permutation" || w == "all-to-all" || w == "incast":
		if st.hosts, err = sim.SpreadHosts(st.p, o.hosts); err != nil {
			errs = append(errs, fmt.Errorf("--hosts: %w", err))
		}
		st.what = fmt.Sprintf("%s of %d hosts, %s each", w, len(st.hosts), o.bytes)
		if w == "incast" && err == nil {
			if len(st.hosts) < 2 {
				errs = append(errs, fmt.Errorf("--workload incast needs 2 hosts or more, --hosts gives %d", len(st.hosts)))
			} else {
				st.what = fmt.Sprintf("incast of %d hosts into %s, %s each", len(st.hosts)-1, st.p.HostName(st.hosts[0]), o.bytes)
			}
		}
	case w == "ring-allreduce" || w == "alltoall-collective":
		if st.hosts, err = sim.SpreadHosts(st.p, o.hosts); err != nil {
			errs = append(errs, fmt.Errorf("--hosts: %w", err))
		}
		if o.iterations < 1 {
			errs = append(errs, fmt.Errorf("--iterations %d: want 1 or more", o.iterations))
		}
		st.what = fmt.Sprintf("%s of %d hosts, %s, %d iterations", w, len(st.hosts), o.bytes, o.iterations)
	case strings.HasPrefix(w, "file:"):
		fh, err := os.Open(strings.TrimPrefix(w, "file:"))
		if err != nil {
			errs = append(errs, fmt.Errorf("--workload: %w", err))
			break
		}
		st.file, err = sim.ReadFlows(fh, st.p)
		fh.Close()
		errs = append(errs, err)
		if err == nil {
			for _, tr := range st.transports() {
				if err := sim.CheckPeers(st.p, st.file, nil, sim.QPsPerPeer(st.f, tr, o.transportQPs(tr))); err != nil {
					errs = append(errs, fmt.Errorf("--workload %s: %s: %w", w, tr, err))
					break
				}
			}
		}
		st.what = fmt.Sprintf("%d flows from %s", len(st.file), strings.TrimPrefix(w, "file:"))
	default:
		errs = append(errs, fmt.Errorf("--workload %q: want permutation, all-to-all, incast, file:PATH, ring-allreduce or alltoall-collective", w))
	}
	for _, tr := range st.transports() {
		if err := checkPeerCount(o, st, tr); err != nil {
			errs = append(errs, err)
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return st, nil
}

// checkSimFlags refuses what sim.New or the transport would, naming the
// flag: their errors name an option (a segment, a window) or come from a
// QP once the run has started.
func checkSimFlags(o simOptions, hasMRC, hasRoCE bool, f *fabric.Fabric) []error {
	var errs []error
	if o.segment < 1 || o.segment > 9000 {
		errs = append(errs, fmt.Errorf("--segment %d: want 1 to 9000 payload bytes a packet", o.segment))
	}
	if o.window < 0 || o.window > f.ReceiveWindow {
		errs = append(errs, fmt.Errorf("--window %d: want 1 to %d packets (the NIC's receive window, nic.window_packets; 0: the fabric's send window, %d)", o.window, f.ReceiveWindow, f.SendWindow()))
	}
	switch {
	case o.qps < 0 || o.qps > schema.NICMaxQPs:
		errs = append(errs, fmt.Errorf("--qps %d: want 1 to %d QPs per host pair, what a NIC holds (0: the default, 1)", o.qps, schema.NICMaxQPs))
	case o.qps > 0 && !hasMRC:
		errs = append(errs, fmt.Errorf("--qps %d: RoCE opens --roce-qps QPs per plane and host pair: --qps is MRC's", o.qps))
	}
	switch most := schema.NICMaxQPs / f.Planes; {
	case o.roceQPs < 0 || o.roceQPs > most:
		errs = append(errs, fmt.Errorf("--roce-qps %d: want 1 to %d QPs per plane and host pair, what a NIC holds over %d planes (0: the default, %d)", o.roceQPs, most, f.Planes, sim.DefaultRoCEQPs(f)))
	case o.roceQPs > 0 && !hasRoCE:
		errs = append(errs, fmt.Errorf("--roce-qps %d: RoCE's (--transport roce); MRC's is --qps", o.roceQPs))
	}
	switch {
	case o.delayCC && !hasMRC:
		errs = append(errs, errors.New("--delay-cc is MRC's: RoCE runs DCQCN"))
	case o.delayCC && o.noCC:
		errs = append(errs, errors.New("--delay-cc and --no-cc: give one or the other"))
	}
	return errs
}

// transportQPs is the QP count the flags give for transport tr: --qps
// (MRC, per host pair) or --roce-qps (RoCE, per plane and host pair).
func (o simOptions) transportQPs(tr sim.Transport) int {
	if tr == sim.RoCE {
		return o.roceQPs
	}
	return o.qps
}

// checkPeerCount refuses a workload whose hosts would have QPs with more
// peers than a NIC holds QPs for, naming the flags that change it. It runs
// before the flows are drawn: an all-to-all of mrc-131k's hosts is 17
// billion flows, 824 GB, which the run would only refuse once it had them.
func checkPeerCount(o simOptions, st *simSetup, tr sim.Transport) error {
	w := o.workload
	if len(st.hosts) < 2 || w != "all-to-all" && w != "alltoall-collective" && w != "incast" {
		return nil
	}
	per := sim.QPsPerPeer(st.f, tr, o.transportQPs(tr))
	peers, limit := len(st.hosts)-1, sim.MaxPeers(per)
	if peers <= limit || limit < 1 { // no peer at all: checkSimFlags names --qps
		return nil
	}
	who := fmt.Sprintf("each of the %d hosts has a QP with each of the %d others", len(st.hosts), peers)
	if w == "incast" {
		who = fmt.Sprintf("the receiver has a QP with each of the %d others", peers)
	}
	how := fmt.Sprintf("%d per host pair, --qps", per)
	if tr == sim.RoCE {
		how = fmt.Sprintf("%d per host pair: --roce-qps %d on each of %d planes", per, per/st.f.Planes, st.f.Planes)
	}
	fix := fmt.Sprintf("take --hosts %d or fewer", limit+1)
	switch {
	case tr == sim.MRC && per > 1:
		fix += ", or fewer --qps"
	case tr == sim.RoCE && per > st.f.Planes:
		fix += ", or fewer --roce-qps"
	}
	return fmt.Errorf("--workload %s: %s (%s), %d QPs, and a NIC holds %d: %s", w, who, how, peers*per, schema.NICMaxQPs, fix)
}

// resolveRoCEECN reads --roce-ecn (nil: the default marking).
func resolveRoCEECN(o simOptions, f *fabric.Fabric) (*sim.RED, error) {
	if o.roceECN == "" {
		return nil, nil
	}
	r, err := sim.ParseRED(o.roceECN, sim.DefaultRED(int64(f.PortSpeedGbps)))
	if err != nil {
		return nil, fmt.Errorf("--roce-ecn %s: %w", o.roceECN, err)
	}
	return &r, nil
}

// resolveSwitchBuffer reads --switch-buffer and --buffer-alpha into st,
// refusing them when no run is lossy (with PFC the data class is
// lossless: the shared buffer does not drop it).
func resolveSwitchBuffer(o simOptions, st *simSetup) error {
	lossy := false
	for _, v := range st.variants {
		lossy = lossy || !v.pfc
	}
	given := o.switchBuf != "default" || o.bufferAlpha != sim.DefaultBufferAlpha
	if !lossy {
		if given && len(st.variants) > 0 {
			return errors.New("--switch-buffer and --buffer-alpha bound the lossy runs' data: with --pfc the data class is lossless (its bound is each ingress port's PFC buffer); drop them or compare with a lossy transport")
		}
		return nil
	}
	switch o.switchBuf {
	case "default":
	case "queue":
		st.switchBuf = sim.SwitchBufferPerPort
		if o.bufferAlpha != sim.DefaultBufferAlpha {
			return fmt.Errorf("--buffer-alpha %g: --switch-buffer queue has no dynamic threshold (a port holds trim.queue_packets)", o.bufferAlpha)
		}
		return nil
	default:
		n, err := sim.ParseBytes(o.switchBuf)
		if err != nil {
			return fmt.Errorf("--switch-buffer %s: want BYTES, default or queue: %w", o.switchBuf, err)
		}
		st.switchBuf = n
	}
	if err := sim.CheckBufferAlpha(o.bufferAlpha); err != nil {
		return fmt.Errorf("--buffer-alpha: %w", err)
	}
	st.bufferAlpha = o.bufferAlpha
	if _, err := sim.ResolveSwitchBuffers(st.f, sim.Options{SwitchBuffer: st.switchBuf, BufferAlpha: st.bufferAlpha, Segment: o.segment}); err != nil {
		return fmt.Errorf("--switch-buffer %s: %w", o.switchBuf, err)
	}
	return nil
}

// resolvePFC reads --pfc and its thresholds, refusing thresholds that
// would not be lossless on fabric f: the error names the flag. want is
// whether a run has PFC (--pfc, or a +pfc transport in --compare).
func resolvePFC(o simOptions, f *fabric.Fabric, want bool) (*sim.PFCConfig, error) {
	if !want {
		if o.pfcXOFF != "" || o.pfcXON != "" {
			return nil, errors.New("--pfc-xoff and --pfc-xon set PFC's thresholds: give --pfc too (or compare with a +pfc transport)")
		}
		return nil, nil
	}
	cfg := &sim.PFCConfig{}
	var errs []error
	for _, t := range []struct {
		flag, val string
		to        *int64
	}{{"--pfc-xoff", o.pfcXOFF, &cfg.XOFFBytes}, {"--pfc-xon", o.pfcXON, &cfg.XONBytes}} {
		if t.val == "" {
			continue
		}
		v, err := sim.ParseBytes(t.val)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.flag, err))
		}
		*t.to = v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	segment := o.segment
	if segment < 1 || segment > 9000 {
		return cfg, nil // checkSimFlags reports --segment's own error
	}
	if _, err := cfg.Resolve(f, segment); err != nil {
		var te *sim.PFCThresholdError
		if errors.As(err, &te) {
			flag := "--pfc"
			switch te.Threshold {
			case "xoff":
				flag = "--pfc-xoff " + o.pfcXOFF
			case "xon":
				flag = "--pfc-xon " + o.pfcXON
			}
			if te.Threshold != "" && strconv.FormatInt(te.Bytes, 10) != strings.TrimPrefix(flag, "--pfc-"+te.Threshold+" ") {
				flag += fmt.Sprintf(" (%d bytes)", te.Bytes)
			}
			return nil, fmt.Errorf("%s: %s", flag, te.Reason)
		}
		return nil, err
	}
	return cfg, nil
}

// collective is the run's collective, if its workload is one.
func (st *simSetup) collective(o simOptions) *sim.Collective {
	switch o.workload {
	case "ring-allreduce":
		return &sim.Collective{Kind: sim.RingAllReduce, Hosts: st.hosts, Bytes: st.bytes, Iterations: o.iterations}
	case "alltoall-collective":
		return &sim.Collective{Kind: sim.AllToAll, Hosts: st.hosts, Bytes: st.bytes, Iterations: o.iterations}
	}
	return nil
}

func (st *simSetup) flows(o simOptions, seed uint64) []sim.Flow {
	switch o.workload {
	case "ring-allreduce", "alltoall-collective":
		return nil
	case "permutation":
		return sim.Permutation(st.hosts, st.bytes, st.start, seed)
	case "all-to-all":
		return sim.AllToAllFlows(st.hosts, st.bytes, st.start)
	case "incast":
		return sim.IncastFlows(st.hosts, st.bytes, st.start)
	}
	return st.file
}

// hugeAdviceEvery is how often a simulation asks for huge pages for the
// memory its heap mapped since (adviseHugePages): soon enough that most of
// a growing heap is collapsed while the run has long to go.
const hugeAdviceEvery = 200 * time.Millisecond

func runSim(ctx context.Context, io streams, o simOptions) error {
	st, err := resolveSim(o)
	if err != nil {
		return err
	}
	defer limitHeap()()
	if o.hugePages {
		defer adviseHugePages(hugeAdviceEvery)()
	}
	// Every seed under every transport: results[run][variant].
	nv := len(st.variants)
	jobs := o.runs * nv
	results := make([][]*sim.Result, o.runs)
	for i := range results {
		results[i] = make([]*sim.Result, nv)
	}
	errs := make([]error, jobs)
	what := st.variants[0].tr.String()
	if st.compare() {
		var names []string
		for _, v := range st.variants {
			names = append(names, v.String())
		}
		what = strings.Join(names, ", ")
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	bar := newProgressBar(io.errOut, fmt.Sprintf("sim %s %s", st.f.Name, what))
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	work := make(chan int)
	workers := min(jobs, runtime.GOMAXPROCS(0))
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for j := range work {
				i, v := j/nv, st.variants[j%nv]
				opt := st.options(o, v, o.seed+uint64(i))
				opt.Workers = runWorkers(o.workers, jobs)
				if jobs == 1 {
					opt.Progress = func(_ time.Duration, d, n int) { bar.update(d, n) }
				}
				s, err := sim.New(st.f, st.src, opt)
				if err == nil {
					results[i][j%nv], err = s.RunContext(ctx)
				}
				if err != nil && st.compare() {
					err = fmt.Errorf("%s: %w", v, err)
				}
				errs[j] = err
				mu.Lock()
				done++
				if jobs > 1 {
					bar.update(done, jobs)
				}
				mu.Unlock()
			}
		})
	}
	for j := 0; j < jobs && ctx.Err() == nil; j++ {
		work <- j
	}
	close(work)
	wg.Wait()
	err = runsError(ctx, errs)
	if err := stopProfile(err == nil); err != nil {
		return err
	}
	if err != nil {
		return err
	}
	if o.svg != "" {
		var err error
		if st.compare() {
			err = writeCompareSVG(o.svg, st, results)
		} else {
			var rs []*sim.Result
			for _, run := range results {
				rs = append(rs, run[0])
			}
			err = writeSimSVG(o.svg, st, rs)
		}
		if err != nil {
			return err
		}
	}
	if io.json() {
		var out []any
		for _, run := range results {
			if st.compare() {
				out = append(out, compareResults(st, run))
			} else {
				out = append(out, run[0])
			}
		}
		if o.runs == 1 {
			return writeJSON(io.out, out[0])
		}
		return writeJSON(io.out, out)
	}
	for i, run := range results {
		for k, r := range run {
			if i > 0 || k > 0 {
				fmt.Fprintln(io.out)
			}
			label := ""
			if st.compare() {
				label = st.variants[k].String()
			}
			printSimResult(io, st, r, label)
		}
		if st.compare() {
			fmt.Fprintln(io.out)
			printCompare(io, st, run)
		}
	}
	return nil
}

// printSimResult prints one run's block; label names its transport in a
// comparison ("roce+pfc"; "": the result's transport).
func printSimResult(io streams, st *simSetup, r *sim.Result, label string) {
	w := io.out
	transport := r.Transport
	if label != "" {
		transport = label
	}
	switch {
	case r.Transport == sim.MRC.String() && r.QPsPerPair > 1:
		transport = fmt.Sprintf("%s (%d QPs per host pair)", transport, r.QPsPerPair)
	case r.Transport == sim.RoCE.String() && r.QPsPerPair > st.f.Planes:
		transport = fmt.Sprintf("%s (%d QPs per host pair, %d a plane)", transport, r.QPsPerPair, r.QPsPerPair/st.f.Planes)
	}
	fmt.Fprintf(w, "sim %s: %s (%s), %s, seed %d\n", st.f.Name, transport, r.CongestionControl, st.what, r.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "flows\t%d of %d complete\n", r.Completed, r.Flows)
	fmt.Fprintf(tw, "completion\tp50 %s\tp99 %s\tmax %s\n", usText(r.FCT.P50), usText(r.FCT.P99), usText(r.FCT.Max))
	fmt.Fprintf(tw, "goodput\tmin %.1f%%\tp50 %.1f%%\tmax %.1f%%\tof each NIC's %d Gb/s\n", 100*r.Goodput.Min, 100*r.Goodput.P50, 100*r.Goodput.Max, st.f.NICSpeedGbps)
	fmt.Fprintf(tw, "received\tmin %.1f%%\tp50 %.1f%%\tmax %.1f%%\tof each receiving NIC's\n", 100*r.ReceiveGoodput.Min, 100*r.ReceiveGoodput.P50, 100*r.ReceiveGoodput.Max)
	fmt.Fprintf(tw, "resends\ttrim NACK %d\tSACK gap %d\ttail probe %d\ttimeout %d\tgo-back-N %d\n", r.Retransmits.TrimNACK, r.Retransmits.SACKGap, r.Retransmits.TailProbe, r.Retransmits.Timeout, r.Retransmits.SeqError)
	fmt.Fprintf(tw, "trims\tfabric %d\tlast hop %d\tECN marks %d\n", r.Trims.Fabric, r.Trims.LastHop, r.ECNMarks)
	if e := r.RoCEECN; e != nil {
		fmt.Fprintf(tw, "RoCE ECN\tkmin %d B\tkmax %d B\tpmax %g%%\tRED at every switch egress\n", e.KminBytes, e.KmaxBytes, 100*e.Pmax)
	}
	if b := r.SwitchBuffer; b != nil {
		if b.PerPort {
			fmt.Fprintf(tw, "switch buffer\tper port\t%d data packets a port (trim.queue_packets)\n", st.f.Trim.QueuePackets)
		} else {
			fmt.Fprintf(tw, "switch buffer\tT0 %d B\tT1 %d B\talpha %g\tshared by each switch's ports, dynamic threshold\n", b.T0Bytes, b.T1Bytes, b.Alpha)
		}
	}
	d := r.Drops
	fmt.Fprintf(tw, "drops\ttail %d\tlink down %d\trandom %d\tcontrol %d\tno route %d\tNIC no EV %d\n", d.TailDrop, d.LinkDown, d.RandomLoss, d.ControlLost, d.NoRoute, d.NICNoEV)
	fmt.Fprintf(tw, "NIC paths\tfailed %d\tbackups failed %d\tprobes %d\trevived %d\tlosses reported %d\n", r.NIC.PathFailed, r.NIC.BackupFailed, r.NIC.Probes, r.NIC.Revived, r.NIC.LossReported)
	if c := r.Collective; c != nil {
		fmt.Fprintf(tw, "%s\t%d of %d steps\tstep p50 %s\tp99 %s\tmax %s\n", c.Kind, c.Completed, c.Steps, usText(c.StepTime.P50), usText(c.StepTime.P99), usText(c.StepTime.Max))
		fmt.Fprintf(tw, "slowdown\tp50 %.2f\tp99 %.2f\tmax %.2f\tagainst a step's bytes at line rate\n", c.Slowdown.P50, c.Slowdown.P99, c.Slowdown.Max)
	}
	if r.Convergences > 0 || r.LocalRepairs > 0 {
		fmt.Fprintf(tw, "routing\t%d local repairs\t%d convergences\t%d QP paths moved\n", r.LocalRepairs, r.Convergences, r.Rehashed)
	}
	if rp := r.RoCEPaths; rp != nil {
		if fs := rp.FairShare; fs != nil {
			fmt.Fprintf(tw, "fair share\tmin %.1f%%\tp50 %.1f%%\tmax %.1f%%\tmax-min fair rates on the hashed paths (no congestion control does better)\n", 100*fs.Min, 100*fs.P50, 100*fs.Max)
		}
		if rp.BusiestLink != "" {
			fmt.Fprintf(tw, "RoCE paths\tbusiest link %s (%.1f%% of the bytes), busiest T1 %s (%.1f%%)\n", rp.BusiestLink, 100*rp.BusiestLinkShare, rp.BusiestT1, 100*rp.BusiestT1Share)
		}
	}
	if p := r.PFC; p != nil {
		// The last cell is free text, so that it does not widen the
		// table's columns.
		fmt.Fprintf(tw, "PFC\tpause %d\tresume %d\t%d ports paused %s in all; most held %d of %d bytes (XOFF %d, XON %d)\n",
			p.Pauses, p.Resumes, p.PausedPorts, usText(p.PausedPortUS), p.MaxHeldBytes, p.Buffer, p.XOFF, p.XON)
	}
	tw.Flush()
	if len(r.Faults) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		roce := r.Transport == sim.RoCE.String()
		head := "FAULT\tAT\tPACKETS LOST\tLAST PATH RETIRED AFTER\tFULL GOODPUT AFTER"
		if roce {
			head = "FAULT\tAT\tPACKETS LOST\tQP PAIRS STALLED\tFULL GOODPUT AFTER"
		}
		fmt.Fprintln(tw, head)
		for _, f := range r.Faults {
			recovered := usText(f.RecoveredUS)
			if f.RecoveredUS == 0 {
				recovered = "never fell below 95%"
			}
			mid := usText(f.RetiredUS)
			if roce && f.StalledQPs != nil {
				mid = fmt.Sprint(*f.StalledQPs) // RoCE's NICs retire no path
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", f.Fault, usText(f.AtUS), f.Lost, mid, recovered)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "simulated %s; %s packet hops in %.2f s (%.1f M hops/s)\n", usText(r.SimulatedUS),
		verify.Thousands(uint64(r.PacketHops)), r.Run.WallSeconds, r.Run.HopsPerSecond/1e6)
}

func usText(v float64) string {
	switch {
	case v < 0:
		return "-"
	case v >= 10_000:
		return fmt.Sprintf("%.2f ms", v/1000)
	}
	return fmt.Sprintf("%.1f µs", v)
}

// writeSimSVG writes the pictures: the flow completion times' CDF (one
// line per run) and goodput over time with the faults marked.
func writeSimSVG(dir string, st *simSetup, results []*sim.Result) error {
	var cdf, good []chart.Series
	for _, r := range results {
		var fct []float64
		for _, fr := range r.FlowResults {
			if fr.FCTUS >= 0 {
				fct = append(fct, fr.FCTUS)
			}
		}
		sortFloats(fct)
		s := chart.Series{Name: fmt.Sprintf("%s seed %d", r.Transport, r.Seed), Style: len(cdf)}
		for i, v := range fct {
			s.X = append(s.X, v)
			s.Y = append(s.Y, float64(i+1)/float64(r.Flows))
		}
		cdf = append(cdf, s)
		// A run of bins with one share is a level line from its first
		// bin to its last.
		g := chart.Series{Name: s.Name, Style: s.Style}
		for _, run := range r.Series {
			g.X = append(g.X, run.StartUS)
			g.Y = append(g.Y, 100*run.Share)
			if last := run.EndUS - r.BinUS; last > run.StartUS {
				g.X = append(g.X, last)
				g.Y = append(g.Y, 100*run.Share)
			}
		}
		good = append(good, g)
	}
	var marks []chart.Mark
	for _, f := range results[0].Faults {
		marks = append(marks, chart.Mark{X: f.AtUS, Label: f.Fault})
	}
	files := map[string][]byte{
		filepath.Join(dir, "fct-cdf.svg"): chart.Lines(chart.LineChart{Title: "Flow completion time, " + st.f.Name + ", " + st.what,
			Note: "share of flows complete by each time", XLabel: "µs", YLabel: "share of flows", Series: cdf, YMax: 1}),
		filepath.Join(dir, "goodput.svg"): chart.Lines(chart.LineChart{Title: "Goodput over time, " + st.f.Name + ", " + st.what,
			Note: "payload delivered per bin, % of the sending NICs' speed", XLabel: "µs", YLabel: "% of line rate", Series: good, Marks: marks}),
	}
	if err := replaceFiles(files); err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	return nil
}

func sortFloats(v []float64) { slices.Sort(v) }

// runsError is what the runs' errors and ctx make of the command: the
// runs' own errors first, so that an interrupted run says how far it got
// (sim: stopped at ... simulated) rather than only that it was stopped;
// ctx's error when no run failed (it stopped before any started).
func runsError(ctx context.Context, errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// runWorkers is the workers each run gets: --workers, or by default the
// cores shared over the runs at once.
func runWorkers(flag int, jobs int) int {
	if flag > 0 {
		return flag
	}
	return max(1, runtime.GOMAXPROCS(0)/jobs)
}
