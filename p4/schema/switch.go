package schema

import "github.com/mrc-fabric/mrcgen/compiler/fabric"

// Widths shared by the programs and the table generator.
const (
	PortBits  = 9  // v1model port numbers
	USIDBits  = 16 // one uSID
	Key48Bits = 48 // block (32) + active uSID (16)
	// PortClasses is the number of per-port counter classes; a port's
	// counter index is port*PortClasses + class.
	PortClasses = 4
	// CounterPorts is the number of ports the per-port counters cover.
	CounterPorts = fabric.MaxPorts
)

// Per-port counter classes of the switch program.
const (
	ClassData    = 0
	ClassTrimmed = 1
	ClassControl = 2
	ClassDropped = 3
)

// Drop reasons of the switch program (index of its drop_reason counter).
const (
	DropUnknownPacket = 0 // not Ethernet/IPv6/IPv6-in-IPv6
	DropRouteMiss     = 1 // no route for the active uSID
	DropHopLimit      = 2 // hop limit exhausted
	DropEndOfCarrier  = 3 // own uSID was the last one: nothing to forward to
	DropReasons       = 8
)

// Names of the switch program's control-plane objects (full names).
const (
	SwitchMyUSID          = "SwitchIngress.my_usid"
	SwitchRoute           = "SwitchIngress.usid_route"
	SwitchQueueThresholds = "SwitchIngress.queue_thresholds"
	SwitchRxCounter       = "SwitchIngress.rx_port_class"
	SwitchTxCounter       = "SwitchEgress.tx_port_class"
	SwitchDropCounter     = "SwitchIngress.drop_reason"
)

// Switch is the interface of the switch plane program, sized for f: the
// same program runs on every T0 and T1 of every plane.
func Switch(f *fabric.Fabric) *Program {
	const ing, eg = "SwitchIngress", "SwitchEgress"
	shift := &Action{ID: 0x01000001, Control: ing, Name: "usid_shift"}
	transit := &Action{ID: 0x01000002, Control: ing, Name: "usid_transit"}
	forward := &Action{ID: 0x01000003, Control: ing, Name: "forward", Params: []Param{{ID: 1, Name: "port", Bits: PortBits}}}
	toHost := &Action{ID: 0x01000004, Control: ing, Name: "forward_to_host", Params: []Param{{ID: 1, Name: "port", Bits: PortBits}}}
	miss := &Action{ID: 0x01000005, Control: ing, Name: "route_miss"}
	thresholds := &Action{ID: 0x01000006, Control: ing, Name: "set_queue_thresholds", Params: []Param{
		{ID: 1, Name: "trim_packets", Bits: 19},
		{ID: 2, Name: "ecn_packets", Bits: 19},
		{ID: 3, Name: "trim_bytes", Bits: 16},
	}}
	noTrim := &Action{ID: 0x01000007, Control: ing, Name: "queue_thresholds_unset"}
	internal := []*Action{
		{ID: 0x01000010, Control: ing, Name: "drop_for", Params: []Param{{ID: 1, Name: "reason", Bits: 32}}, Internal: true},
		{ID: 0x01000011, Control: ing, Name: "read_occupancy", Internal: true},
		{ID: 0x01000012, Control: ing, Name: "enqueue_data", Internal: true},
		{ID: 0x01000013, Control: ing, Name: "trim", Params: []Param{{ID: 1, Name: "dscp", Bits: 6}}, Internal: true},
		{ID: 0x01000014, Control: eg, Name: "dequeue_data", Internal: true},
	}

	dstUSID := Field{ID: 1, Name: "dst_usid", Bits: Key48Bits, Match: Exact, Expr: "hdr.outer_ipv6.dst_addr[127:80]"}
	routes := f.T0Up + f.T0Down
	if f.T0Count > routes {
		routes = f.T0Count
	}
	return &Program{
		Name: "mrc_switch",
		Tables: []*Table{
			{ID: 0x02000001, Control: ing, Name: "my_usid", Keys: []Field{dstUSID},
				Actions: []ActionRef{{shift, TableOnly}, {transit, DefaultOnly}}, Default: transit, Size: 4,
				Doc: "uN: the switch's own uSID (block | uN, a /48). A hit shifts the carrier by one uSID."},
			{ID: 0x02000002, Control: ing, Name: "usid_route", Keys: []Field{dstUSID},
				Actions: []ActionRef{{forward, TableOnly}, {toHost, TableOnly}, {miss, DefaultOnly}}, Default: miss, Size: routes,
				Doc: "Static /48 routes: block | neighbour uSID -> egress port. Installed once, never changed by failures."},
			{ID: 0x02000003, Control: ing, Name: "queue_thresholds",
				Keys:    []Field{{ID: 1, Name: "to_host", Bits: 1, Match: Exact, Expr: "meta.to_host"}},
				Actions: []ActionRef{{thresholds, TableOnly}, {noTrim, DefaultOnly}}, Default: noTrim, Size: 2,
				Doc: "Trim and ECN thresholds per port class (fabric-facing 0, host-facing 1), set at run time."},
		},
		Actions: append([]*Action{shift, transit, forward, toHost, miss, thresholds, noTrim}, internal...),
		Counters: []*Counter{
			{ID: 0x12000001, Control: ing, Name: "rx_port_class", Size: CounterPorts * PortClasses, Unit: PacketsAndBytes,
				Doc: "Received packets per ingress port and class (data, trimmed, control, dropped): index port*4+class."},
			{ID: 0x12000002, Control: eg, Name: "tx_port_class", Size: CounterPorts * PortClasses, Unit: PacketsAndBytes,
				Doc: "Sent packets per egress port and class (data, trimmed, control): index port*4+class."},
			{ID: 0x12000003, Control: ing, Name: "drop_reason", Size: DropReasons, Unit: Packets,
				Doc: "Packets dropped by the program, per reason."},
		},
		Registers: []*Register{
			{ID: 0x16000001, Name: "queue_occupancy", Size: CounterPorts, Bits: 19,
				Doc: "Estimate of the packets in each port's data queue: ingress adds one per data packet it queues; egress sets it to the true depth (deq_qdepth) on every dequeue, so tail drops do not leak."},
		},
	}
}
