package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/transport"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// flowState is a flow in a run.
type flowState struct {
	Flow
	parts, partsDone, sentParts int
	doneAt                      int64 // when its receiver had every byte (0: not yet)
	retx                        transport.Retransmits
	corrupt                     bool
	step                        int // the collective step it belongs to (1 and up), 0 for none
	// firstPart and lastPart bound its parts in Sim.parts.
	firstPart, lastPart int32
}

// Result is what a run measured. Everything but Run is a function of the
// inputs and seed.
type Result struct {
	Transport string `json:"transport"`
	Seed      uint64 `json:"seed"`
	Hosts     int    `json:"hosts"` // hosts that sent or received
	// QPsPerPair is how many QPs each host pair opened: MRC's
	// Options.QPsPerPair or its default, RoCE's Options.RoCEQPs (or its
	// default) on every plane.
	QPsPerPair int `json:"qps_per_pair"`
	// CongestionControl is what the QPs ran: dctcp or delay (MRC), dcqcn
	// (RoCE), or off.
	CongestionControl string `json:"congestion_control"`
	Flows             int    `json:"flows"`
	Completed         int    `json:"completed"`
	// Simulated is the simulated time the run took (µs).
	SimulatedUS float64 `json:"simulated_us"`
	// FCT are the completion times of the flows that completed, from
	// their start to the moment their receiver had every byte.
	FCT Percentiles `json:"fct_us"`
	// Goodput is each sending host's payload rate as a share of its NIC's
	// speed (its flows' bytes over the time from their start to their
	// completion): min, median, max over hosts.
	Goodput     Percentiles   `json:"goodput_share"`
	HostGoodput []HostGoodput `json:"host_goodput"`
	// ReceiveGoodput is the same seen from the receivers: each receiving
	// host's payload rate as a share of its NIC's speed, its flows' bytes
	// over the time from the first one's start to the last one's
	// completion. An incast's figure is its receiver's.
	ReceiveGoodput Percentiles        `json:"receive_goodput_share"`
	Retransmits    RetransmitsByCause `json:"retransmissions"`
	Trims          Trims              `json:"trims"`
	ECNMarks       int64              `json:"ecn_marks"`
	Drops          Drops              `json:"drops"`
	DataPackets    DataPackets        `json:"data_packets"`
	NIC            NICEvents          `json:"nic"`
	Faults         []FaultResult      `json:"faults,omitempty"`
	// Convergences, LocalRepairs and Rehashed: RoCE's routing changes
	// (BGP's convergences, and T0s taking a T1 out of their ECMP group
	// after their own link failed) and the QP paths they moved, each
	// direction of a QP pair counted on its own (its T0 moves it).
	Convergences int `json:"convergences,omitempty"`
	LocalRepairs int `json:"local_repairs,omitempty"`
	Rehashed     int `json:"rehashed,omitempty"`
	// RoCEPaths, in RoCE runs: the best any congestion control could do
	// on the paths the ECMP hashes picked, and the links they load most.
	RoCEPaths *RoCEPaths `json:"roce_paths,omitempty"`
	// PFC is what priority flow control did, in runs with it.
	PFC *PFCResult `json:"pfc,omitempty"`
	// RoCEECN is the switches' marking of RoCE data (RoCE runs only).
	RoCEECN *RED `json:"roce_ecn,omitempty"`
	// SwitchBuffer is the switches' shared data buffers (runs without
	// PFC; buffer.go).
	SwitchBuffer *SwitchBuffers `json:"switch_buffer,omitempty"`
	PacketHops   int64          `json:"packet_hops"`
	Events       int64          `json:"events"`
	Corrupt      int            `json:"corrupt_flows,omitempty"`
	// Series is goodput over time: the payload delivered to all hosts in
	// each bin of BinUS µs, as a share of the NICs of the hosts sending
	// then, in runs of bins with one share each, from 0 to the last bin
	// with a delivery (series.go). A stall is one run.
	BinUS  float64      `json:"bin_us"`
	Series []GoodputRun `json:"goodput_series"`
	// FlowResults lists every flow (a collective's transfers included).
	FlowResults []FlowResult `json:"flow_results"`
	// Collective sums up the collective, if the run had one.
	Collective *CollectiveResult `json:"collective,omitempty"`
	// Run holds the run's own wall-clock figures, the only part of a
	// result that differs between two runs of the same inputs and seed.
	Run RunFigures `json:"run"`
}

// Percentiles summarise a distribution.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	Min float64 `json:"min"`
}

// HostGoodput is one sending host's goodput.
type HostGoodput struct {
	Host  string  `json:"host"`
	Share float64 `json:"share"`
}

// RetransmitsByCause sums the transport's resends.
type RetransmitsByCause struct {
	TrimNACK  int64 `json:"trim_nack"`
	SACKGap   int64 `json:"sack_gap"`
	Timeout   int64 `json:"timeout"`
	SeqError  int64 `json:"seq_error"`
	TailProbe int64 `json:"tail_probe"`
}

// Trims are the switches' trims: on fabric ports, and on ports facing a
// NIC (TRIMMED_LASTHOP).
type Trims struct {
	Fabric  int64 `json:"fabric"`
	LastHop int64 `json:"last_hop"`
}

// Drops are the packets the fabric lost, by cause.
type Drops struct {
	TailDrop    int64 `json:"tail_drop"`
	LinkDown    int64 `json:"link_down"`
	RandomLoss  int64 `json:"random_loss"`
	ControlLost int64 `json:"control_lost"`
	NoRoute     int64 `json:"no_route"`
	NICNoEV     int64 `json:"nic_no_ev"`
}

// DataPackets count the whole data packets (not trimmed) NICs sent onto
// the fabric, first sends and resends alike, those that reached a NIC, and
// those still on a link or in a queue when the run ended. Each one sent is
// delivered, trimmed (Trims: once, whatever becomes of its header),
// dropped (Drops: tail_drop, link_down, random_loss, no_route), or still
// in flight.
type DataPackets struct {
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	InFlight  int64 `json:"in_flight"`
}

// NICEvents sum the NICs' path events (their counters).
type NICEvents struct {
	PathFailed int64 `json:"paths_failed"`
	// LossReported counts resends flagged METH LOST that named a slot
	// still on the EV its lost copy took: each fails that slot at its
	// next turn (a part of PathFailed and BackupFailed).
	LossReported int64 `json:"losses_reported"`
	BackupFailed int64 `json:"backups_failed"`
	BackupSends  int64 `json:"backup_sends"`
	Probes       int64 `json:"probes"`
	Revived      int64 `json:"revived"`
	SkipSet      int64 `json:"skip_set"`
}

// PFCResult is a run's priority flow control: its thresholds, the PAUSE
// and RESUME frames the switches sent, and how long ports were paused.
type PFCResult struct {
	PFCThresholds
	Pauses  int64 `json:"pause_frames"`
	Resumes int64 `json:"resume_frames"`
	// PausedPortUS is the time ports spent paused, summed over ports (a
	// port still paused at the end counts until then); PausedPorts the
	// ports paused at least once.
	PausedPortUS float64 `json:"paused_port_us"`
	PausedPorts  int     `json:"paused_ports"`
	// MaxHeldBytes is the most one ingress port held: never above Buffer
	// (a data packet that would overflow it is dropped, which the headroom
	// makes impossible, and counted in Drops.TailDrop).
	MaxHeldBytes int64 `json:"max_held_bytes"`
}

// FaultResult is what one fault cost.
type FaultResult struct {
	Fault string  `json:"fault"`
	AtUS  float64 `json:"at_us"`
	// Lost is the data packets lost on the fault's links.
	Lost int64 `json:"packets_lost"`
	// RetiredUS is the time from the fault to the last path a NIC retired
	// while it was the latest fault (-1: none retired), and RetiredPackets
	// the most data packets a NIC sent from the fault to its last
	// retirement (docs/protocol.md 5: within K passes of the rotation).
	RetiredUS      float64 `json:"retired_after_us"`
	RetiredPackets uint64  `json:"retired_after_packets"`
	// RecoveredUS is the time from the fault until the fabric's goodput is
	// back to 95% of what it was before (-1: never within the run; 0: it
	// never fell below, which is what a fault that touches few of the
	// flows shows in the fabric's total, whatever it costs those flows).
	RecoveredUS float64 `json:"full_goodput_after_us"`
	// StalledQPs (RoCE) is the QP pairs whose path, either way, crossed
	// one of the fault's links while it held that link down: when it went
	// down, or when routing or a new QP put them on it.
	StalledQPs *int `json:"qp_pairs_stalled,omitempty"`
}

// FlowResult is one flow.
type FlowResult struct {
	Src         string  `json:"src"`
	Dst         string  `json:"dst"`
	Bytes       int64   `json:"bytes"`
	StartUS     float64 `json:"start_us"`
	FCTUS       float64 `json:"fct_us"` // -1: not completed
	Retransmits int64   `json:"retransmissions"`
}

// RunFigures are the run's wall-clock figures.
type RunFigures struct {
	WallSeconds   float64 `json:"wall_seconds"`
	HopsPerSecond float64 `json:"packet_hops_per_second"`
}

func us(p int64) float64 { return float64(p) / 1e6 }

func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(v)))) - 1
		return v[max(0, min(i, len(v)-1))]
	}
	return Percentiles{P50: at(0.5), P99: at(0.99), Max: v[len(v)-1], Min: v[0]}
}

func (s *Sim) result(wall time.Duration) (*Result, error) {
	r := &s.res
	r.Transport = s.opt.Transport.String()
	r.Seed = s.opt.Seed
	r.QPsPerPair = s.qpsPerPair
	r.CongestionControl = s.congestionControl().String()
	if s.opt.Transport == RoCE {
		red := s.red
		r.RoCEECN = &red
	}
	if b := s.bufs; b.PerPort || b.T0Bytes > 0 {
		r.SwitchBuffer = &b
	}
	r.Flows = len(s.flows)
	r.SimulatedUS = us(s.now)
	nicBps := float64(s.f.NICSpeedGbps) * 1e9 / 8
	// Writes still unacked at the end (the run stops once every receiver
	// has its bytes): their resends so far.
	for _, hs := range s.hosts {
		if hs == nil {
			continue
		}
		for _, q := range hs.byQPN {
			if q != nil && q.active != nil {
				s.account(q)
				q.active = nil
			}
		}
	}
	var fct []float64
	type hostSum struct {
		bytes      int64
		start, end int64
		done       bool
	}
	sums, rsums := map[int]*hostSum{}, map[int]*hostSum{}
	var retx transport.Retransmits
	for _, fl := range s.flows {
		fr := FlowResult{Src: s.p.HostName(fl.Src), Dst: s.p.HostName(fl.Dst), Bytes: fl.Bytes, StartUS: us(ps(fl.Start)), FCTUS: -1,
			Retransmits: fl.retx.Total()}
		retx.Add(fl.retx)
		if fl.corrupt {
			r.Corrupt++
		}
		sum := func(m map[int]*hostSum, i int) *hostSum {
			hs := m[i]
			if hs == nil {
				hs = &hostSum{start: math.MaxInt64, done: true}
				m[i] = hs
			}
			hs.bytes += fl.Bytes
			hs.start = min(hs.start, ps(fl.Start))
			if fl.doneAt > 0 {
				hs.end = max(hs.end, fl.doneAt)
			} else {
				hs.done = false
			}
			return hs
		}
		sum(sums, s.p.Index(fl.Src))
		sum(rsums, s.p.Index(fl.Dst))
		if fl.doneAt > 0 {
			r.Completed++
			fr.FCTUS = us(fl.doneAt - ps(fl.Start))
			fct = append(fct, fr.FCTUS)
		}
		r.FlowResults = append(r.FlowResults, fr)
	}
	r.Retransmits = RetransmitsByCause(retx) // the same fields, with JSON names
	r.FCT = percentiles(fct)
	var shares []float64
	idx := make([]int, 0, len(sums))
	for i := range sums {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		hs := sums[i]
		share := 0.0
		if hs.done && hs.end > hs.start {
			share = float64(hs.bytes) / (float64(hs.end-hs.start) / 1e12) / nicBps
		}
		shares = append(shares, share)
		r.HostGoodput = append(r.HostGoodput, HostGoodput{Host: s.p.HostName(s.p.HostByIndex(i)), Share: share})
	}
	r.Goodput = percentiles(shares)
	if s.opt.Transport == RoCE {
		r.RoCEPaths = s.rocePaths()
	}
	var rshares []float64
	for _, hs := range rsums {
		share := 0.0
		if hs.done && hs.end > hs.start {
			share = float64(hs.bytes) / (float64(hs.end-hs.start) / 1e12) / nicBps
		}
		rshares = append(rshares, share)
	}
	r.ReceiveGoodput = percentiles(rshares)
	for _, hs := range s.hosts {
		if hs == nil {
			continue
		}
		r.Hosts++
		// Its events alone: Counters copies every per-slot counter too,
		// 6 KiB a host at 256 slots, all hosts' at once at the end.
		var c [schema.NICEventCount]uint64
		for i := range c {
			c[i] = hs.nic.Event(i)
		}
		r.NIC.PathFailed += int64(c[schema.NICEventPathFailed])
		r.NIC.LossReported += int64(c[schema.NICEventLossReported])
		r.NIC.BackupFailed += int64(c[schema.NICEventBackupFailed])
		r.NIC.BackupSends += int64(c[schema.NICEventBackupTaken])
		r.NIC.Probes += int64(c[schema.NICEventProbeSent])
		r.NIC.Revived += int64(c[schema.NICEventRevived])
		r.NIC.SkipSet += int64(c[schema.NICEventSkipSet])
		r.Drops.NICNoEV += int64(c[schema.NICEventNoEV])
	}
	// Goodput over time, as a share of the NICs of the hosts sending then
	// (from their first flow's start to their last flow's completion).
	r.BinUS = us(s.binPS)
	var spans [][2]int64
	for _, hs := range sums {
		spans = append(spans, [2]int64{hs.start, hs.end})
		if !hs.done {
			spans[len(spans)-1][1] = -1
		}
	}
	s.shares = s.goodputRuns(spans, nicBps)
	r.Series = make([]GoodputRun, len(s.shares))
	for i, g := range s.shares {
		r.Series[i] = GoodputRun{StartUS: us(g.from * s.binPS), EndUS: us(g.to * s.binPS), Share: g.share}
	}
	for i, fs := range s.faults {
		c := &s.cost[i]
		fr := FaultResult{Fault: fs.Fault.String(), AtUS: us(ps(fs.At)), Lost: c.lost, RetiredUS: -1, RecoveredUS: -1, RetiredPackets: c.retirePackets}
		if c.lastRetire >= 0 {
			fr.RetiredUS = us(c.lastRetire - ps(fs.At))
		}
		fr.RecoveredUS = s.recovery(ps(fs.At))
		if s.opt.Transport == RoCE {
			n := len(c.stalled)
			fr.StalledQPs = &n
		}
		r.Faults = append(r.Faults, fr)
	}
	if s.coll != nil {
		r.Collective = s.collectiveResult()
	}
	if s.pfc != nil {
		s.pfcResult()
	}
	r.DataPackets.InFlight = s.inFlightData()
	r.Run.WallSeconds = wall.Seconds()
	if wall > 0 {
		r.Run.HopsPerSecond = float64(r.PacketHops) / wall.Seconds()
	}
	return r, nil
}

// inFlightData counts the whole data packets still on a link or in a
// queue: those whose arrival is due, and with PFC those a port holds.
func (s *Sim) inFlightData() int64 {
	var n int64
	for _, sh := range s.shards {
		sh.q.each(func(e event) {
			if e.kind == evArrive && sh.wholeData(sh.pkt(e.arg)) {
				n++
			}
		})
	}
	for _, d := range s.devs {
		if d == nil {
			continue
		}
		sh := s.shard(d.id) // its packets are in its worker's pool
		for i := range d.ports {
			if x := d.ports[i].q.pfc; x != nil {
				for _, f := range []*fifo{&x.high, &x.low} {
					for _, pi := range f.q[f.head:] {
						if sh.wholeData(sh.pkt(pi)) {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

// recoveryBins is the averaging window of the recovery figure.
const recoveryBins = 10

// payloadOf is the content of part j of flow i (Options.Payload).
func payloadOf(seed uint64, i, j, n int) []byte {
	rng := rand.New(rand.NewPCG(seed^uint64(i)<<20^uint64(j), 0x706179))
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(rng.Uint32())
	}
	return b
}
