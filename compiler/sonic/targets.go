package sonic

import (
	"fmt"
	"slices"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// Target is what a switch ASIC's SONiC image accepts for trimming and QoS:
// the figures a fabric must fit before its CONFIG_DB fragments can be
// loaded. They mirror the switch's own trimming capabilities, which SONiC
// publishes in STATE_DB (SWITCH_CAPABILITY|switch: SWITCH_TRIMMING_CAPABLE,
// PACKET_TRIMMING_DSCP_RESOLUTION_MODE, PACKET_TRIMMING_QUEUE_RESOLUTION_MODE,
// NUMBER_OF_TRAFFIC_CLASSES, NUMBER_OF_UNICAST_QUEUES); compare them with a
// device's before trusting a new target.
type Target struct {
	Name string
	// ASIC says what the target is.
	ASIC string
	// Source says where the figures come from.
	Source string
	// TrimMin and TrimMax bound SWITCH_TRIMMING size (0: no bound beyond
	// the headers mrcgen needs); TrimMultiple is the granularity.
	TrimMin, TrimMax, TrimMultiple int
	// DSCPModes are the trimmed-packet DSCP modes: "DSCP_VALUE" (one DSCP
	// for every trimmed packet) and "FROM_TC" (per egress port, through
	// its TC_TO_DSCP_MAP).
	DSCPModes []string
	// QueueModes are the trimmed-packet queue modes: "STATIC" (one queue
	// index) and "DYNAMIC" (from the DSCP).
	QueueModes []string
	// TrafficClasses and UnicastQueues count what a port has.
	TrafficClasses, UnicastQueues int
	// Lanes is the number of SerDes lanes (0: not bounded) and
	// LaneSpeedGbps the speed of one.
	Lanes, LaneSpeedGbps int
}

// DSCP and queue resolution modes, as SONiC's capability fields name them.
const (
	ModeDSCPValue = "DSCP_VALUE"
	ModeFromTC    = "FROM_TC"
	ModeStatic    = "STATIC"
	ModeDynamic   = "DYNAMIC"
)

// targets holds every target fabric.SONiCTargets names (a test checks both
// lists agree).
var targets = []Target{
	{
		Name: "generic", ASIC: "any trimming-capable SONiC switch",
		Source:    "SONiC's sonic-trimming YANG model (size: uint32) and the 8 traffic classes and queues every SONiC platform has",
		DSCPModes: []string{ModeDSCPValue, ModeFromTC}, QueueModes: []string{ModeStatic, ModeDynamic},
		TrafficClasses: 8, UnicastQueues: 8, LaneSpeedGbps: 100,
	},
	{
		Name: "spectrum-4", ASIC: "NVIDIA Spectrum-4 (51.2T, 512 x 100G lanes; e.g. SN5600)",
		Source:  "NVIDIA Cumulus Linux 5.14 packet trimming: size 256-1024 bytes in multiples of 4, traffic class and switch priority 0-7, per-port DSCP remarking",
		TrimMin: 256, TrimMax: 1024, TrimMultiple: 4,
		DSCPModes: []string{ModeDSCPValue, ModeFromTC}, QueueModes: []string{ModeStatic, ModeDynamic},
		TrafficClasses: 8, UnicastQueues: 8, Lanes: 512, LaneSpeedGbps: 100,
	},
	{
		Name: "spectrum-5", ASIC: "NVIDIA Spectrum-5 (102.4T, 512 x 200G lanes)",
		Source:  "assumed equal to Spectrum-4's trimming limits (NVIDIA documents Spectrum-4 only)",
		TrimMin: 256, TrimMax: 1024, TrimMultiple: 4,
		DSCPModes: []string{ModeDSCPValue, ModeFromTC}, QueueModes: []string{ModeStatic, ModeDynamic},
		TrafficClasses: 8, UnicastQueues: 8, Lanes: 512, LaneSpeedGbps: 200,
	},
	{
		Name: "tomahawk-5", ASIC: "Broadcom Tomahawk 5 (51.2T, 512 x 100G lanes)",
		Source:    "Broadcom publishes no trim-size range: SAI's (any size), per-port DSCP as SONiC's HLD describes, 8 traffic classes and queues; check SWITCH_CAPABILITY|switch on the device",
		DSCPModes: []string{ModeDSCPValue, ModeFromTC}, QueueModes: []string{ModeStatic, ModeDynamic},
		TrafficClasses: 8, UnicastQueues: 8, Lanes: 512, LaneSpeedGbps: 100,
	},
}

// DefaultTarget is the target of a fabric whose sonic.target is not set.
const DefaultTarget = "generic"

// Targets lists every known target.
func Targets() []Target { return slices.Clone(targets) }

// TargetByName returns a known target.
func TargetByName(name string) (Target, error) {
	if name == "" {
		name = DefaultTarget
	}
	for _, t := range targets {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("unknown SONiC target %q (known: %v)", name, fabric.SONiCTargets)
}

// Finding is one way a fabric does not fit its target: the fabric-file
// field, its value, why, and what to do.
type Finding struct {
	Field  string `json:"field"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
	Fix    string `json:"fix"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s (%s)", f.Field, f.Value, f.Reason, f.Fix)
}

// Check lists every way f does not fit its SONiC target. `validate` and
// `build` show them as warnings (the P4 build does not depend on them);
// `export sonic` refuses to write fragments the switch would reject.
func Check(f *fabric.Fabric) []Finding {
	t, err := TargetByName(f.SONiC.Target)
	if err != nil {
		return []Finding{{Field: "sonic.target", Value: f.SONiC.Target, Reason: err.Error(), Fix: fmt.Sprintf("name one of %v", fabric.SONiCTargets)}}
	}
	return t.Check(f)
}

// Check lists every way f does not fit t.
func (t Target) Check(f *fabric.Fabric) []Finding {
	var out []Finding
	add := func(field string, value any, fix, format string, args ...any) {
		out = append(out, Finding{Field: field, Value: fmt.Sprint(value), Reason: fmt.Sprintf(format, args...), Fix: fix})
	}
	size := f.Trim.SizeBytes
	switch {
	case t.TrimMin > 0 && size < t.TrimMin:
		add("trim.size_bytes", size, fmt.Sprintf("raise trim.size_bytes to %d: the payload kept beyond the %d bytes of headers is harmless, the receiver reads only the headers", t.TrimMin, fabric.MinTrimBytes),
			"%s trims to %d-%d bytes, not less", t.Name, t.TrimMin, t.TrimMax)
	case t.TrimMax > 0 && size > t.TrimMax:
		add("trim.size_bytes", size, fmt.Sprintf("lower trim.size_bytes to %d: a trimmed packet only needs its %d bytes of headers", t.TrimMax, fabric.MinTrimBytes),
			"%s trims to %d-%d bytes, not more", t.Name, t.TrimMin, t.TrimMax)
	case t.TrimMultiple > 1 && size%t.TrimMultiple != 0:
		up := (size/t.TrimMultiple + 1) * t.TrimMultiple
		add("trim.size_bytes", size, fmt.Sprintf("set trim.size_bytes to %d", up),
			"%s trims to a multiple of %d bytes", t.Name, t.TrimMultiple)
	}
	if !slices.Contains(t.DSCPModes, ModeFromTC) {
		add("sonic.target", t.Name, "choose a target with per-port trim DSCP, or accept that receivers penalise EVs for last-hop congestion",
			"%s marks every trimmed packet with one DSCP: host-facing ports cannot mark TRIMMED_LASTHOP (%d)", t.Name, f.DSCP.TrimmedLastHop)
	}
	if !slices.Contains(t.QueueModes, ModeStatic) {
		add("sonic.target", t.Name, "choose a target with a static trim queue", "%s cannot send trimmed packets to one queue (queue_index)", t.Name)
	}
	if hi := max(TCTrim, TCControl, TCTrimmed, TCTrimmedLastHop, TCTrimmable, TCNoTrim); hi >= t.TrafficClasses {
		add("sonic.target", t.Name, "choose a target with 8 traffic classes", "%s has %d traffic classes; mrcgen's QoS plan uses TCs 0-%d", t.Name, t.TrafficClasses, hi)
	}
	if hi := max(QueueHigh, QueueTrimmable, QueueNoTrim); hi >= t.UnicastQueues {
		add("sonic.target", t.Name, "choose a target with 8 unicast queues", "%s has %d unicast queues; mrcgen's QoS plan uses queues 0-%d", t.Name, t.UnicastQueues, hi)
	}
	lanes := lanesPerPort(f, t)
	if t.LaneSpeedGbps > 0 && lanes*t.LaneSpeedGbps < f.PortSpeedGbps {
		add("sonic.lanes_per_port", lanes, fmt.Sprintf("set sonic.lanes_per_port to %d", (f.PortSpeedGbps+t.LaneSpeedGbps-1)/t.LaneSpeedGbps),
			"%d lanes of %dG cannot carry a %dG port", lanes, t.LaneSpeedGbps, f.PortSpeedGbps)
	}
	if t.Lanes > 0 && f.SwitchPorts*lanes > t.Lanes {
		add("switch.ports", f.SwitchPorts, fmt.Sprintf("use at most %d ports of %d lanes", t.Lanes/lanes, lanes),
			"%d ports x %d lanes = %d lanes, %s has %d", f.SwitchPorts, lanes, f.SwitchPorts*lanes, t.Name, t.Lanes)
	}
	return out
}
