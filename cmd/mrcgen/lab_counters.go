package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/chart"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// labCounters is what `lab status --counters` reports: the spray (data
// packets per plane, per (plane, T1), per EV slot) and what went wrong
// (trims and NACKs per port, drops per reason).
type labCounters struct {
	Planes  []planeCount   `json:"planes"`
	PlaneT1 []planeT1Count `json:"plane_t1"`
	Slots   []slotCount    `json:"slots"`
	Trims   []portCount    `json:"trims"`
	NACKs   []nicCount     `json:"nacks"`
	Paths   []nicPathCount `json:"paths"`
	Drops   []dropCount    `json:"drops"`
}

// nicPathCount is what one NIC's dataplane did about paths and receive
// state (docs/protocol.md section 5), from its events counter.
type nicPathCount struct {
	Device         string `json:"device"`
	Failed         int64  `json:"paths_failed"`
	LossReported   int64  `json:"losses_reported"`
	BackupFailed   int64  `json:"backups_failed"`
	BackupSends    int64  `json:"backup_sends"`
	ProbesSent     int64  `json:"probes_sent"`
	ProbesAnswered int64  `json:"probes_answered"`
	AnswersRx      int64  `json:"probe_answers_received"`
	Revived        int64  `json:"revived"`
	Duplicates     int64  `json:"duplicates"`
	BeyondWindow   int64  `json:"beyond_window"`
	StaleEchoes    int64  `json:"stale_echoes"`
}

type planeCount struct {
	Plane   int   `json:"plane"`
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
}

type planeT1Count struct {
	Plane   int   `json:"plane"`
	T1      int   `json:"t1"`
	Packets int64 `json:"packets"`
}

type slotCount struct {
	Slot    int   `json:"slot"`
	Plane   int   `json:"plane"`
	T1      int   `json:"t1"`
	Packets int64 `json:"packets"`
	// OnBackup of Packets went on the slot's backup EV; Failed counts how
	// often NICs retired the slot's base EV.
	OnBackup int64 `json:"on_backup"`
	Failed   int64 `json:"failed"`
}

type portCount struct {
	Device  string `json:"device"`
	Port    int    `json:"port"`
	Trimmed int64  `json:"trimmed"`
}

type nicCount struct {
	Device string `json:"device"`
	// Sent are the NACKs this NIC sent (trimmed packets it received), of
	// which LastHop for TRIMMED_LASTHOP; Received the NACKs it got back.
	Sent     int64 `json:"nacks_sent"`
	LastHop  int64 `json:"nacks_sent_lasthop"`
	Received int64 `json:"nacks_received"`
	SkipSet  int64 `json:"ev_skips_set"`
}

type dropCount struct {
	Device  string `json:"device"`
	Reason  string `json:"reason"`
	Packets int64  `json:"packets"`
}

var dropReasons = map[int]string{
	schema.DropUnknownPacket: "unknown packet",
	schema.DropRouteMiss:     "route miss",
	schema.DropHopLimit:      "hop limit",
	schema.DropEndOfCarrier:  "end of carrier",
}

// aggregate sums the devices' counters into the lab's pictures.
func aggregate(p *plan.Plan, devs []lab.DeviceCounters) *labCounters {
	f := p.F
	c := &labCounters{Planes: []planeCount{}, PlaneT1: []planeT1Count{}, Slots: []slotCount{}, Trims: []portCount{}, NACKs: []nicCount{}, Paths: []nicPathCount{}, Drops: []dropCount{}}
	for pl := 0; pl < f.Planes; pl++ {
		c.Planes = append(c.Planes, planeCount{Plane: pl})
		for t := 0; t < f.T1Count; t++ {
			c.PlaneT1 = append(c.PlaneT1, planeT1Count{Plane: pl, T1: t})
		}
	}
	for i, ev := range p.EVSet() {
		fl := p.SplitEV(ev)
		c.Slots = append(c.Slots, slotCount{Slot: i, Plane: fl.Plane, T1: fl.T1})
	}
	for _, d := range devs {
		if d.Device.Role == plan.RoleNIC.String() {
			for pl, cell := range d.Counters[schema.NICPlaneTx] {
				if pl < f.Planes {
					c.Planes[pl].Packets += cell.Packets
					c.Planes[pl].Bytes += cell.Bytes
				}
			}
			for i, cell := range d.Counters[schema.NICSlotTx] {
				if i < len(c.Slots) {
					c.Slots[i].Packets += cell.Packets
				}
			}
			for i, cell := range d.Counters[schema.NICSlotBackupTx] {
				if i < len(c.Slots) {
					c.Slots[i].OnBackup += cell.Packets
				}
			}
			for i, cell := range d.Counters[schema.NICSlotFailed] {
				if i < len(c.Slots) {
					c.Slots[i].Failed += cell.Packets
				}
			}
			ev := d.Counters[schema.NICEventCounter]
			at := func(i int) int64 {
				if i < len(ev) {
					return ev[i].Packets
				}
				return 0
			}
			if n := (nicCount{Device: d.Name, Sent: at(schema.NICEventTrimmedRx), LastHop: at(schema.NICEventTrimmedLastHop),
				Received: at(schema.NICEventNackRx), SkipSet: at(schema.NICEventSkipSet)}); n.Sent+n.Received+n.SkipSet > 0 {
				c.NACKs = append(c.NACKs, n)
			}
			pc := nicPathCount{Device: d.Name, Failed: at(schema.NICEventPathFailed), LossReported: at(schema.NICEventLossReported), BackupFailed: at(schema.NICEventBackupFailed),
				BackupSends: at(schema.NICEventBackupTaken), ProbesSent: at(schema.NICEventProbeSent), ProbesAnswered: at(schema.NICEventProbeAnswered),
				AnswersRx: at(schema.NICEventProbeAnswerRx), Revived: at(schema.NICEventRevived), Duplicates: at(schema.NICEventDuplicate),
				BeyondWindow: at(schema.NICEventBeyondWindow), StaleEchoes: at(schema.NICEventStaleEcho)}
			if pc != (nicPathCount{Device: d.Name}) {
				c.Paths = append(c.Paths, pc)
			}
			continue
		}
		s, ok := p.SwitchByName(d.Name)
		if !ok {
			continue
		}
		tx := d.Counters[schema.SwitchTxCounter]
		cell := func(port, class int) int64 {
			if i := port*schema.PortClasses + class; i < len(tx) {
				return tx[i].Packets
			}
			return 0
		}
		if s.Role == plan.RoleT0 {
			// Data sent up a T0's port to T1 t crosses (plane, t).
			for t := 0; t < f.T1Count; t++ {
				c.PlaneT1[s.Plane*f.T1Count+t].Packets += cell(p.T0UpPort(t), schema.ClassData)
			}
		}
		for port := 0; port < p.Ports(s); port++ {
			if n := cell(port, schema.ClassTrimmed); n > 0 {
				c.Trims = append(c.Trims, portCount{Device: d.Name, Port: port, Trimmed: n})
			}
		}
		for i, cell := range d.Counters[schema.SwitchDropCounter] {
			if cell.Packets > 0 {
				reason, ok := dropReasons[i]
				if !ok {
					reason = "reason " + strconv.Itoa(i)
				}
				c.Drops = append(c.Drops, dropCount{Device: d.Name, Reason: reason, Packets: cell.Packets})
			}
		}
	}
	sort.SliceStable(c.Trims, func(i, j int) bool { return c.Trims[i].Trimmed > c.Trims[j].Trimmed })
	return c
}

// histograms are the pictures of --svg.
func (c *labCounters) histograms(p *plan.Plan) []chart.Histogram {
	var planes, pt, slots, trims, nacks, drops []chart.Bar
	for _, x := range c.Planes {
		planes = append(planes, chart.Bar{Label: fmt.Sprintf("plane %d", x.Plane), Value: x.Packets,
			Title: fmt.Sprintf("plane %d: %d data packets, %d bytes", x.Plane, x.Packets, x.Bytes)})
	}
	for _, x := range c.PlaneT1 {
		pt = append(pt, chart.Bar{Label: p.Name(plan.Switch{Role: plan.RoleT1, Plane: x.Plane, Index: x.T1}), Value: x.Packets})
	}
	for _, x := range c.Slots {
		slots = append(slots, chart.Bar{Label: strconv.Itoa(x.Slot), Value: x.Packets,
			Title: fmt.Sprintf("slot %d (plane %d, T1 %d): %d data packets, %d on its backup EV; retired %d times", x.Slot, x.Plane, x.T1, x.Packets, x.OnBackup, x.Failed)})
	}
	for _, x := range c.Trims {
		trims = append(trims, chart.Bar{Label: fmt.Sprintf("%s/%d", x.Device, x.Port), Value: x.Trimmed})
	}
	for _, x := range c.NACKs {
		nacks = append(nacks, chart.Bar{Label: x.Device, Value: x.Sent,
			Title: fmt.Sprintf("%s: %d NACKs sent (%d TRIMMED_LASTHOP), %d received, %d EV skips set", x.Device, x.Sent, x.LastHop, x.Received, x.SkipSet)})
	}
	for _, x := range c.Drops {
		drops = append(drops, chart.Bar{Label: x.Device + " " + x.Reason, Value: x.Packets})
	}
	empty := func(bars []chart.Bar, what string) string {
		if len(bars) == 0 {
			return "none: no " + what
		}
		return ""
	}
	return []chart.Histogram{
		{Title: "Spray per plane", Note: "data packets the NICs sent per plane (NicIngress.plane_tx)", Bars: planes},
		{Title: "Spray per (plane, T1)", Note: "data packets the T0s sent up to each T1 (SwitchEgress.tx_port_class, data)", Bars: pt},
		{Title: "Spray per EV slot", Note: "data packets the NICs sent per slot of the EV set (NicIngress.slot_tx)", Bars: slots},
		{Title: "Trims per switch port", Note: or(empty(trims, "port trimmed a packet"), "trimmed packets sent, per switch/port (tx_port_class, trimmed)"), Bars: trims},
		{Title: "NACKs per NIC", Note: or(empty(nacks, "NIC sent or received a NACK"), "NACKs sent for trimmed packets (NicIngress.events); hover for received and skips"), Bars: nacks},
		{Title: "Drops per switch and reason", Note: or(empty(drops, "switch dropped a packet"), "SwitchIngress.drop_reason"), Bars: drops},
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (c *labCounters) print(io streams) {
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPLANE\tDATA PACKETS\tBYTES")
	for _, x := range c.Planes {
		fmt.Fprintf(tw, "%d\t%d\t%d\n", x.Plane, x.Packets, x.Bytes)
	}
	fmt.Fprintln(tw, "\nPLANE\tT1\tDATA PACKETS UP")
	for _, x := range c.PlaneT1 {
		fmt.Fprintf(tw, "%d\t%d\t%d\n", x.Plane, x.T1, x.Packets)
	}
	fmt.Fprintln(tw, "\nSLOT\tPLANE\tT1\tDATA PACKETS\tON BACKUP\tRETIRED")
	for _, x := range c.Slots {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\n", x.Slot, x.Plane, x.T1, x.Packets, x.OnBackup, x.Failed)
	}
	tw.Flush()
	fmt.Fprintf(io.out, "\ntrims: %d ports, NACKs: %d NICs, path events: %d NICs, drops: %d (device, reason)\n", len(c.Trims), len(c.NACKs), len(c.Paths), len(c.Drops))
	tw = tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	for _, x := range c.Trims {
		fmt.Fprintf(tw, "  trimmed\t%s port %d\t%d\n", x.Device, x.Port, x.Trimmed)
	}
	for _, x := range c.NACKs {
		fmt.Fprintf(tw, "  NACKs\t%s\tsent %d (last hop %d), received %d, EV skips set %d\n", x.Device, x.Sent, x.LastHop, x.Received, x.SkipSet)
	}
	for _, x := range c.Paths {
		fmt.Fprintf(tw, "  paths\t%s\tretired %d (backup too %d; %d losses reported), backup sends %d, probes sent %d answered %d, answers %d, revived %d; duplicates %d, beyond window %d, stale echoes %d\n",
			x.Device, x.Failed, x.BackupFailed, x.LossReported, x.BackupSends, x.ProbesSent, x.ProbesAnswered, x.AnswersRx, x.Revived, x.Duplicates, x.BeyondWindow, x.StaleEchoes)
	}
	for _, x := range c.Drops {
		fmt.Fprintf(tw, "  dropped\t%s %s\t%d\n", x.Device, x.Reason, x.Packets)
	}
	tw.Flush()
}

// readLabCounters reads the counters of the lab in dir, of build (default:
// the lab's own build).
func readLabCounters(ctx context.Context, dir, build string) (*labCounters, *plan.Plan, error) {
	st, err := lab.ReadState(dir)
	if err != nil {
		return nil, nil, err
	}
	if build == "" {
		build = st.Build
	}
	b, err := artifacts.Open(build)
	if err != nil {
		return nil, nil, err
	}
	devs, err := lab.ReadCounters(ctx, st, b)
	if err != nil {
		return nil, nil, fmt.Errorf("lab counters: %w", err)
	}
	return aggregate(b.Plan, devs), b.Plan, nil
}
