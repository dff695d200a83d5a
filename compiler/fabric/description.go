package fabric

// Description is the fabric file as a user writes it (YAML). It is raw input:
// nothing in it is trusted until Resolve has checked it and produced a Fabric.
//
// Every field has a default (the "tiny" preset's value, see Default), so a
// fabric file only names what differs. Field names are the YAML keys; the
// JSON Schema in schema.json describes the same shape.
type Description struct {
	// Base names the preset the file starts from (default "tiny"); the file
	// overrides only the fields it names.
	Base string `yaml:"base,omitempty" json:"base,omitempty"`
	// Name identifies the fabric in artifacts and output.
	Name string `yaml:"name" json:"name"`
	// Planes is the number of independent network planes; every host NIC has
	// one port per plane.
	Planes int `yaml:"planes" json:"planes"`
	// NIC describes the host NIC and how it is split into plane ports.
	NIC NICSpec `yaml:"nic" json:"nic"`
	// Switch describes the switch ASIC every T0 and T1 is built from.
	Switch SwitchSpec `yaml:"switch" json:"switch"`
	// T0 describes the leaf tier of every plane.
	T0 T0Spec `yaml:"t0" json:"t0"`
	// T1 describes the spine tier of every plane.
	T1 T1Spec `yaml:"t1" json:"t1"`
	// Links gives the one-way propagation delay of each kind of link, for
	// the packet-level simulator; the tables and programs do not use it.
	Links LinkSpec `yaml:"links" json:"links"`
	// USID is the SRv6 uSID address plan (F3216).
	USID USIDSpec `yaml:"usid" json:"usid"`
	// EV is the entropy value layout and the per-QP EV set.
	EV EVSpec `yaml:"ev" json:"ev"`
	// DSCP names the code points of each traffic class.
	DSCP DSCPSpec `yaml:"dscp" json:"dscp"`
	// Trim configures packet trimming on congested switch ports.
	Trim TrimSpec `yaml:"trim" json:"trim"`
	// Failover configures how a sending NIC retires a failed path (EV) and
	// brings it back, in the dataplane alone.
	Failover FailoverSpec `yaml:"failover" json:"failover"`
	// Hosts configures host (inner) addressing.
	Hosts HostSpec `yaml:"hosts" json:"hosts"`
	// SONiC configures the CONFIG_DB export for fixed-function switches
	// (`mrcgen export sonic`). Every field is optional: left out (zero), it
	// takes the default its comment names.
	SONiC SONiCSpec `yaml:"sonic,omitempty" json:"sonic,omitzero"`
}

// NICSpec is the host NIC: its total speed is split evenly into one port per
// plane.
type NICSpec struct {
	SpeedGbps int `yaml:"speed_gbps" json:"speed_gbps"`
	// AckEvery is how many ordinary data packets of a QP (in order moving
	// its cumulative PSN on by one, or new beyond a hole already reported)
	// the receiving NIC answers with one SACK: the one whose PSN modulo
	// AckEvery is AckEvery - 1 (docs/protocol.md 5); 1 answers every
	// packet. Anything else (a new or filled hole, a duplicate, CE, a
	// write's last packet, an ack request) is answered at once. It must be
	// coprime with ev.set_size, so that the coalesced SACKs' echoes reach
	// every slot.
	AckEvery int `yaml:"ack_every" json:"ack_every"`
	// WindowPackets is the receive window W: how many PSNs from the first
	// missing one the NIC's receive state covers, so how many a QP can
	// keep in flight (docs/protocol.md 5). A power of two from 64 to 4096,
	// at least one bandwidth-delay product; left out (0), it is derived:
	// twice the NIC's speed times the longest round trip plus the
	// queueing trimming allows, in 4 KiB packets, rounded up
	// (fabric.DeriveWindow).
	WindowPackets int `yaml:"window_packets,omitempty" json:"window_packets,omitempty"`
}

// SwitchSpec is the switch radix: how many ports of which speed.
type SwitchSpec struct {
	Ports         int `yaml:"ports" json:"ports"`
	PortSpeedGbps int `yaml:"port_speed_gbps" json:"port_speed_gbps"`
}

// T0Spec is the leaf tier of one plane.
type T0Spec struct {
	Count     int `yaml:"count" json:"count"`
	DownPorts int `yaml:"down_ports" json:"down_ports"`
	UpPorts   int `yaml:"up_ports" json:"up_ports"`
}

// T1Spec is the spine tier of one plane.
type T1Spec struct {
	Count int `yaml:"count" json:"count"`
}

// LinkSpec is the one-way propagation delay of each kind of link, in
// nanoseconds (0 to MaxLinkDelayNs). It is pure propagation, the time a bit
// takes along the cable: the simulator adds each packet's serialization at
// every hop itself (store and forward, at the port speed) and models no
// switch pipeline latency, so these are the only fixed delays of a path.
// The defaults (every preset's) are DefaultNICT0Ns and DefaultT0T1Ns.
type LinkSpec struct {
	// NICT0Ns is the delay of a link between a NIC port and its T0
	// (default 10 ns: about 2 m of copper, at some 5 ns per metre).
	NICT0Ns int `yaml:"nic_t0_ns" json:"nic_t0_ns"`
	// T0T1Ns is the delay of a link between a T0 and a T1 (default 150
	// ns: about 30 m of fibre, at some 5 ns per metre).
	T0T1Ns int `yaml:"t0_t1_ns" json:"t0_t1_ns"`
}

// USIDSpec is the uSID block and the bit layout of one 16-bit uSID.
type USIDSpec struct {
	Block     string `yaml:"block" json:"block"`
	PlaneBits int    `yaml:"plane_bits" json:"plane_bits"`
	KindBits  int    `yaml:"kind_bits" json:"kind_bits"`
	IndexBits int    `yaml:"index_bits" json:"index_bits"`
}

// EVSpec is the 32-bit entropy value layout and the size of a QP's EV set.
type EVSpec struct {
	SetSize   int `yaml:"set_size" json:"set_size"`
	PlaneBits int `yaml:"plane_bits" json:"plane_bits"`
	T1Bits    int `yaml:"t1_bits" json:"t1_bits"`
	SaltBits  int `yaml:"salt_bits" json:"salt_bits"`
}

// DSCPSpec names the DSCP code point of each MRC traffic class.
type DSCPSpec struct {
	Control        int `yaml:"control" json:"control"`
	Trimmable      int `yaml:"trimmable" json:"trimmable"`
	Trimmed        int `yaml:"trimmed" json:"trimmed"`
	TrimmedLastHop int `yaml:"trimmed_lasthop" json:"trimmed_lasthop"`
	NoTrim         int `yaml:"no_trim" json:"no_trim"`
}

// TrimSpec configures trimming: the size a trimmed packet is cut to, the
// default queue thresholds the controller installs (they can be changed at
// run time over P4Runtime), and the capacity of a port's data queue, which
// the thresholds must stay below.
type TrimSpec struct {
	SizeBytes        int `yaml:"size_bytes" json:"size_bytes"`
	ThresholdPackets int `yaml:"threshold_packets" json:"threshold_packets"`
	ECNPackets       int `yaml:"ecn_packets" json:"ecn_packets"`
	// QueuePackets is how many packets a port's data queue holds before it
	// tail-drops (BMv2's default is 64, DefaultQueuePackets; the lab sets
	// its switches' queues to this value).
	QueuePackets int `yaml:"queue_packets" json:"queue_packets"`
}

// FailoverSpec configures the sending NIC's path-failure detection and
// probing (docs/protocol.md section 5). Both are counted in packets, not
// time: BMv2 has no timers, and a packet clock scales with the rate.
type FailoverSpec struct {
	// UnansweredSends is K: a slot's EV that carried K data packets in a
	// row with no SACK or NACK echoing it in between is declared
	// ASSUMED_BAD. It must be at least nic.ack_every + the sends a full
	// window leaves unanswered on one slot (InFlightPerSlot: window - 1
	// PSNs over the EV set size) + 1 (UnansweredSendsFloor); left out (0),
	// it is that floor, and at least DefaultUnansweredSends.
	UnansweredSends int `yaml:"unanswered_sends,omitempty" json:"unanswered_sends,omitempty"`
	// ProbePasses is N: while a slot is ASSUMED_BAD, every N-th time the
	// QP's rotation reaches it the NIC sends a probe on its EV.
	ProbePasses int `yaml:"probe_passes" json:"probe_passes"`
}

// HostSpec configures host addressing. A host's address is the prefix with
// its T0 row in bits 31..16 and its T0 down port + 1 in bits 15..0, so that a
// NIC derives the destination's row and port from the inner destination
// address alone, without any per-destination table.
type HostSpec struct {
	Prefix string `yaml:"prefix" json:"prefix"`
}

// SONiCSpec configures `mrcgen export sonic`: which switch ASIC the CONFIG_DB
// fragments are for, how point-to-point links are addressed and how ports are
// named. Zero values mean "the default".
type SONiCSpec struct {
	// Target names the switch ASIC whose limits the fabric must fit (trim
	// size, traffic classes, queues): generic (default), spectrum-4,
	// spectrum-5 or tomahawk-5 (see SONiCTargets).
	Target string `yaml:"target,omitempty" json:"target,omitempty"`
	// LinkPrefix is the IPv6 prefix every link's /127 comes from (default
	// fd00:6d72:6c00::/64); link i is prefix + 2i, its T0 side the even
	// address.
	LinkPrefix string `yaml:"link_prefix,omitempty" json:"link_prefix,omitempty"`
	// LanesPerPort is the number of SerDes lanes of one switch port (default
	// switch.port_speed_gbps over the target's lane speed: 100G on 51.2T
	// ASICs). Port i is named Ethernet<i x lanes_per_port>, SONiC's
	// first-lane convention.
	LanesPerPort int `yaml:"lanes_per_port,omitempty" json:"lanes_per_port,omitempty"`
	// FirstLane is the hardware number of the switch's first lane (default
	// 0), as the platform's port_config.ini counts them.
	FirstLane int `yaml:"first_lane,omitempty" json:"first_lane,omitempty"`
}
