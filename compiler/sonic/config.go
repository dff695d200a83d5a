// Package sonic turns a fabric's plan into SONiC CONFIG_DB: one
// config_db.json fragment per switch, holding what a fixed-function ASIC
// needs to forward MRC traffic (its SRv6 uN SID, one static /48 route per
// neighbour uSID, the link addresses those routes point at) and to trim it
// (SWITCH_TRIMMING, a trimming buffer profile on the data queue, QoS maps
// that send control and trimmed packets to a strict-priority queue). It
// converts fragments into yanglint's form to check them against SONiC's
// YANG models, and reads them back into the switch model `verify` proves.
package sonic

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// Fragment is a CONFIG_DB fragment in SONiC's config_db.json form:
// table -> key -> field -> value. Keys with several parts join them with
// "|" ("Ethernet0|1"); QoS map tables hold the map's pairs as fields
// ({"DSCP_TO_TC_MAP": {"MRC": {"4": "1"}}}).
type Fragment map[string]map[string]map[string]string

func (fr Fragment) set(table, key string, fields map[string]string) {
	t, ok := fr[table]
	if !ok {
		t = map[string]map[string]string{}
		fr[table] = t
	}
	t[key] = fields
}

// The QoS plan. Traffic classes: each DSCP class has its own TC, so that a
// port's TC_TO_DSCP_MAP (which SONiC applies to every packet leaving it)
// gives each packet back its own DSCP; TCTrim is never assigned by
// classification, only by trimming (SWITCH_TRIMMING tc_value), and is the
// one TC whose DSCP differs per port: TRIMMED on fabric-facing ports,
// TRIMMED_LASTHOP on host-facing ones. A packet trimmed upstream keeps
// TRIMMED (its own TC) on the last hop.
const (
	TCNoTrim         = 0
	TCTrimmable      = 1
	TCTrimmedLastHop = 4
	TCTrimmed        = 5
	TCControl        = 6
	TCTrim           = 7
)

// Queues: NO_TRIM data in a queue that drops, TRIMMABLE data in a queue
// whose buffer profile trims, control and trimmed packets in a
// strict-priority queue that drops (it is never congested by data).
const (
	QueueNoTrim    = 0
	QueueTrimmable = 1
	QueueHigh      = 6
)

// Names of the objects every fragment defines.
const (
	Locator          = "mrc"
	MapName          = "MRC"        // DSCP_TO_TC_MAP, TC_TO_QUEUE_MAP
	MapFabric        = "MRC_FABRIC" // TC_TO_DSCP_MAP of fabric-facing ports
	MapHost          = "MRC_HOST"   // TC_TO_DSCP_MAP of host-facing ports
	Pool             = "egress_lossy_pool"
	ProfileTrim      = "mrc_trim_profile"
	ProfileDrop      = "mrc_drop_profile"
	ProfileHigh      = "mrc_high_profile"
	SchedulerStrict  = "mrc_strict"
	SchedulerData    = "mrc_data"
	VRF              = "default"
	MTU              = 9100
	DataPayloadBytes = 4096
)

// DataFrameBytes is one MRC data packet on the fabric: the encapsulated
// headers and a 4 KiB payload. The trimming queue's static threshold is
// trim.threshold_packets of them.
const DataFrameBytes = fabric.MinTrimBytes + DataPayloadBytes

// Exporter builds the fragments of one fabric.
type Exporter struct {
	Plan   *plan.Plan
	Target Target
	Ports  PortMap
	Links  *Addressing
}

// New prepares the export of p's fabric. It refuses a fabric that does not
// fit its target, naming every problem and what to do.
func New(p *plan.Plan) (*Exporter, error) {
	t, err := TargetByName(p.F.SONiC.Target)
	if err != nil {
		return nil, err
	}
	if fs := t.Check(p.F); len(fs) > 0 {
		return nil, &TargetError{Target: t.Name, Findings: fs}
	}
	return &Exporter{Plan: p, Target: t, Ports: NewPortMap(p.F, t), Links: NewAddressing(p)}, nil
}

// TargetError lists why a fabric does not fit its target.
type TargetError struct {
	Target   string
	Findings []Finding
}

func (e *TargetError) Error() string {
	s := fmt.Sprintf("fabric does not fit SONiC target %s:", e.Target)
	for _, f := range e.Findings {
		s += "\n  " + f.String()
	}
	return s
}

// sid is the /48 of a uSID: block | uSID.
func (x *Exporter) sid(usid uint16) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom16(x.Plan.Carrier(usid)), 48)
}

// SID is the /48 of switch s's own uN.
func (x *Exporter) SID(s plan.Switch) netip.Prefix { return x.sid(x.Plan.SwitchUSID(s)) }

// neighbourUSID is the uSID routed out of port of s, and whether the port
// faces a host.
func (x *Exporter) neighbourUSID(s plan.Switch, port int) (uint16, bool, bool) {
	nb, ok := x.Plan.Neighbor(s, port)
	if !ok {
		return 0, false, false
	}
	switch nb.Role {
	case plan.RoleNIC:
		return x.Plan.DownUSID(s.Plane, port), true, true
	default:
		return x.Plan.SwitchUSID(nb.Switch()), false, true
	}
}

// Switch builds switch s's fragment.
func (x *Exporter) Switch(s plan.Switch) Fragment {
	p, f := x.Plan, x.Plan.F
	fr := Fragment{}
	itoa := strconv.Itoa

	// SRv6: the locator (F3216: block 32, node 16, no function) and the
	// switch's uN SID.
	sid := x.SID(s)
	fr.set("SRV6_MY_LOCATORS", Locator, map[string]string{
		"prefix": sid.Addr().String(), "block_len": "32", "node_len": "16", "func_len": "0", "arg_len": "0",
	})
	fr.set("SRV6_MY_SIDS", Locator+"|"+sid.String(), map[string]string{"action": "uN"})

	// Trimming: cut to trim.size_bytes, TC TCTrim (its DSCP comes from the
	// egress port's TC_TO_DSCP_MAP), the high queue.
	fr.set("SWITCH_TRIMMING", "GLOBAL", map[string]string{
		"size": itoa(f.Trim.SizeBytes), "dscp_value": "from-tc", "tc_value": itoa(TCTrim), "queue_index": itoa(QueueHigh),
	})

	// QoS maps.
	d := f.DSCP
	fr.set("DSCP_TO_TC_MAP", MapName, map[string]string{
		itoa(d.NoTrim): itoa(TCNoTrim), itoa(d.Trimmable): itoa(TCTrimmable), itoa(d.Trimmed): itoa(TCTrimmed),
		itoa(d.TrimmedLastHop): itoa(TCTrimmedLastHop), itoa(d.Control): itoa(TCControl),
	})
	fr.set("TC_TO_QUEUE_MAP", MapName, map[string]string{
		itoa(TCNoTrim): itoa(QueueNoTrim), itoa(TCTrimmable): itoa(QueueTrimmable), itoa(TCTrimmedLastHop): itoa(QueueHigh),
		itoa(TCTrimmed): itoa(QueueHigh), itoa(TCControl): itoa(QueueHigh), itoa(TCTrim): itoa(QueueHigh),
	})
	tcToDSCP := func(trim int) map[string]string {
		return map[string]string{
			itoa(TCNoTrim): itoa(d.NoTrim), itoa(TCTrimmable): itoa(d.Trimmable), itoa(TCTrimmedLastHop): itoa(d.TrimmedLastHop),
			itoa(TCTrimmed): itoa(d.Trimmed), itoa(TCControl): itoa(d.Control), itoa(TCTrim): itoa(trim),
		}
	}
	fr.set("TC_TO_DSCP_MAP", MapFabric, tcToDSCP(d.Trimmed))
	if s.Role == plan.RoleT0 {
		fr.set("TC_TO_DSCP_MAP", MapHost, tcToDSCP(d.TrimmedLastHop))
	}

	// Buffers: the platform's egress lossy pool (its size stays the
	// platform's: CONFIG_DB merges fields), a trimming profile whose static
	// threshold is trim.threshold_packets data packets, and dropping ones.
	fr.set("BUFFER_POOL", Pool, map[string]string{"type": "egress", "mode": "dynamic"})
	fr.set("BUFFER_PROFILE", ProfileTrim, map[string]string{
		"pool": Pool, "size": "0", "static_th": itoa(f.Trim.ThresholdPackets * DataFrameBytes), "packet_discard_action": "trim",
	})
	fr.set("BUFFER_PROFILE", ProfileDrop, map[string]string{"pool": Pool, "size": "0", "dynamic_th": "3", "packet_discard_action": "drop"})
	fr.set("BUFFER_PROFILE", ProfileHigh, map[string]string{"pool": Pool, "size": "0", "dynamic_th": "3", "packet_discard_action": "drop"})
	fr.set("SCHEDULER", SchedulerStrict, map[string]string{"type": "STRICT"})
	fr.set("SCHEDULER", SchedulerData, map[string]string{"type": "DWRR", "weight": "50"})

	// Ports, their addresses, QoS bindings and routes: the per-port tables
	// are sized for every port at once (a T0 of mrc-131k has 512).
	n := p.Ports(s)
	perPort := map[string]int{"PORT": 1, "INTERFACE": 2, "PORT_QOS_MAP": 1, "BUFFER_QUEUE": 3, "QUEUE": 3, "STATIC_ROUTE": 1}
	for table, k := range perPort {
		fr[table] = make(map[string]map[string]string, n*k)
	}
	defer func() {
		for table := range perPort {
			if len(fr[table]) == 0 {
				delete(fr, table) // a switch with no port wired has none of these tables
			}
		}
	}()
	for port := 0; port < n; port++ {
		usid, toHost, ok := x.neighbourUSID(s, port)
		if !ok {
			continue
		}
		name := x.Ports.Name(port)
		link, _ := x.Links.Switch(s, port)
		nb, _ := p.Neighbor(s, port)
		fr.set("PORT", name, map[string]string{
			"alias": x.Ports.Alias(port), "lanes": x.Ports.Lanes(port), "speed": itoa(f.PortSpeedGbps * 1000),
			"mtu": itoa(MTU), "admin_status": "up", "index": itoa(port*x.Ports.LanesPerPort/LanesPerCage + 1),
			"description": x.describe(nb),
		})
		fr.set("INTERFACE", name, map[string]string{})
		fr.set("INTERFACE", name+"|"+netip.PrefixFrom(link.Local, 127).String(), map[string]string{})
		dscpMap := MapFabric
		if toHost {
			dscpMap = MapHost
		}
		fr.set("PORT_QOS_MAP", name, map[string]string{"dscp_to_tc_map": MapName, "tc_to_queue_map": MapName, "tc_to_dscp_map": dscpMap})
		fr.set("BUFFER_QUEUE", name+"|"+itoa(QueueNoTrim), map[string]string{"profile": ProfileDrop})
		fr.set("BUFFER_QUEUE", name+"|"+itoa(QueueTrimmable), map[string]string{"profile": ProfileTrim})
		fr.set("BUFFER_QUEUE", name+"|"+itoa(QueueHigh), map[string]string{"profile": ProfileHigh})
		fr.set("QUEUE", name+"|"+itoa(QueueNoTrim), map[string]string{"scheduler": SchedulerData})
		fr.set("QUEUE", name+"|"+itoa(QueueTrimmable), map[string]string{"scheduler": SchedulerData})
		fr.set("QUEUE", name+"|"+itoa(QueueHigh), map[string]string{"scheduler": SchedulerStrict})
		fr.set("STATIC_ROUTE", VRF+"|"+x.sid(usid).String(), map[string]string{"nexthop": link.Peer.String(), "ifname": name})
	}
	return fr
}

// describe is a port's description: what it is wired to.
func (x *Exporter) describe(nb plan.Endpoint) string {
	p := x.Plan
	if nb.Role == plan.RoleNIC {
		return fmt.Sprintf("%s port %d", p.HostName(p.HostByIndex(nb.Index)), nb.Port)
	}
	return fmt.Sprintf("%s %s", p.Name(nb.Switch()), x.Ports.Name(nb.Port))
}
