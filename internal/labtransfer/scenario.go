package labtransfer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// LinkEvents changes the link between A and B (two neighbouring devices)
// while a transfer runs: down when the sender has sent the fraction At[0]
// of the write's packets, up again at At[1], down at At[2], and so on. A
// link left down is restored when the transfer ends.
type LinkEvents struct {
	A  string    `json:"a"`
	B  string    `json:"b"`
	At []float64 `json:"at"` // fractions of the write's packets, increasing, in [0, 1)
}

// Throttle limits a switch port to PPS packets/s for the whole transfer
// (restored at the end). The port is Port, or the one facing Neighbour
// when that is set.
type Throttle struct {
	Device    string `json:"device"`
	Port      uint32 `json:"port"`
	Neighbour string `json:"neighbour,omitempty"`
	PPS       int    `json:"pps"`
}

// Loss makes the link between A and B lose Percent % of its packets, each
// direction, for the whole transfer (the lab's seeded loss; cleared at the
// end).
type Loss struct {
	A       string  `json:"a"`
	B       string  `json:"b"`
	Percent float64 `json:"percent"`
}

// ParseCut reads "SW:NEIGHBOUR@30%": the link goes down at 30% of the
// write's packets and stays down until the transfer ends.
func ParseCut(s string) (LinkEvents, error) {
	ev, err := parseLink(s)
	if err == nil && len(ev.At) != 1 {
		err = fmt.Errorf("cut %q: one fraction (SW:NEIGHBOUR@30%%), got %d", s, len(ev.At))
	}
	return ev, err
}

// ParseFlap reads "SW:NEIGHBOUR@30%,60%[,...]": down at the first
// fraction, up at the second, and so on.
func ParseFlap(s string) (LinkEvents, error) {
	ev, err := parseLink(s)
	if err == nil && len(ev.At) < 2 {
		err = fmt.Errorf("flap %q: at least two fractions (SW:NEIGHBOUR@30%%,60%%)", s)
	}
	return ev, err
}

func parseLink(s string) (LinkEvents, error) {
	link, at, ok := strings.Cut(s, "@")
	if !ok {
		return LinkEvents{}, fmt.Errorf("link event %q: want SW:NEIGHBOUR@30%%[,60%%...]", s)
	}
	a, b, ok := pair(link)
	if !ok {
		return LinkEvents{}, fmt.Errorf("link event %q: %q is not SW:NEIGHBOUR", s, link)
	}
	ev := LinkEvents{A: a, B: b}
	for _, f := range strings.Split(at, ",") {
		v, err := percent(f)
		if err != nil || v >= 100 {
			return LinkEvents{}, fmt.Errorf("link event %q: %q is not a percentage below 100%%", s, f)
		}
		frac := v / 100
		if n := len(ev.At); n > 0 && frac <= ev.At[n-1] {
			return LinkEvents{}, fmt.Errorf("link event %q: fractions must increase", s)
		}
		ev.At = append(ev.At, frac)
	}
	return ev, nil
}

// ParseThrottle reads "SW/PORT:PPS" or "SW:NEIGHBOUR:PPS".
func ParseThrottle(s string) (Throttle, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Throttle{}, fmt.Errorf("throttle %q: want SW/PORT:PPS or SW:NEIGHBOUR:PPS", s)
	}
	pps, err := strconv.Atoi(s[i+1:])
	if err != nil || pps <= 0 {
		return Throttle{}, fmt.Errorf("throttle %q: %q is not a rate in packets/s above 0", s, s[i+1:])
	}
	t := Throttle{PPS: pps}
	where := s[:i]
	if sw, p, ok := strings.Cut(where, "/"); ok && sw != "" {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return Throttle{}, fmt.Errorf("throttle %q: port %q is not a number", s, p)
		}
		t.Device, t.Port = sw, uint32(n)
		return t, nil
	}
	a, b, ok := pair(where)
	if !ok {
		return Throttle{}, fmt.Errorf("throttle %q: %q is neither SW/PORT nor SW:NEIGHBOUR", s, where)
	}
	t.Device, t.Neighbour = a, b
	return t, nil
}

// ParseLoss reads "A:B:1%" (the % is optional).
func ParseLoss(s string) (Loss, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Loss{}, fmt.Errorf("loss %q: want A:B:1%%", s)
	}
	a, b, ok := pair(s[:i])
	if !ok {
		return Loss{}, fmt.Errorf("loss %q: %q is not A:B", s, s[:i])
	}
	v, err := percent(s[i+1:])
	if err != nil || v > 100 {
		return Loss{}, fmt.Errorf("loss %q: %q is not a percentage", s, s[i+1:])
	}
	return Loss{A: a, B: b, Percent: v}, nil
}

// ParsePercent reads "1%", "0.5%" or "1" as a percentage in [0, 100].
func ParsePercent(s string) (float64, error) {
	v, err := percent(s)
	if err != nil || v > 100 {
		return 0, fmt.Errorf("%q is not a percentage in 0-100", s)
	}
	return v, nil
}

func percent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !(v >= 0) {
		return 0, fmt.Errorf("%q is not a percentage", s)
	}
	return v, nil
}

func pair(s string) (a, b string, ok bool) {
	a, b, ok = strings.Cut(s, ":")
	return a, b, ok && a != "" && b != "" && !strings.Contains(b, ":")
}

// Path names the switches of one path between two hosts: a plane and a T1.
type Path struct {
	Plane, T1 int
	// SrcT0 and DstT0 are the hosts' T0s in the plane, T1 the T1 between
	// them.
	SrcT0, T1Name, DstT0 string
}

// SinglePath is the path a single-path QP (the RoCE baseline) from NIC
// from to NIC to takes: the base EV of slot 0 of the EV set, its T1 moved
// by the QP's T1 offset (the NIC's with_offset). A cut of SrcT0:T1Name
// leaves that QP no path; MRC loses the slots on it only.
func SinglePath(p *plan.Plan, from, to string, t1Offset int) (Path, error) {
	src, err := hostOf(p, from)
	if err != nil {
		return Path{}, err
	}
	dst, err := hostOf(p, to)
	if err != nil {
		return Path{}, err
	}
	if t1Offset < 0 || t1Offset >= p.F.T1Count {
		return Path{}, fmt.Errorf("T1 offset %d is outside 0-%d (the fabric has %d T1s per plane)", t1Offset, p.F.T1Count-1, p.F.T1Count)
	}
	ev := p.SplitEV(p.EVSet()[0])
	t1 := (ev.T1 + t1Offset) % p.F.T1Count
	return Path{
		Plane: ev.Plane, T1: t1,
		SrcT0:  p.Name(plan.Switch{Role: plan.RoleT0, Plane: ev.Plane, Index: src.Row}),
		T1Name: p.Name(plan.Switch{Role: plan.RoleT1, Plane: ev.Plane, Index: t1}),
		DstT0:  p.Name(plan.Switch{Role: plan.RoleT0, Plane: ev.Plane, Index: dst.Row}),
	}, nil
}

func hostOf(p *plan.Plan, nic string) (plan.Host, error) {
	for i := 0; i < p.F.Hosts(); i++ {
		if h := p.HostByIndex(i); p.HostName(h) == nic {
			return h, nil
		}
	}
	return plan.Host{}, fmt.Errorf("no NIC %q in the fabric", nic)
}
