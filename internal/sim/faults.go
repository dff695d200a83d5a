package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// FaultKind is what a fault does.
type FaultKind uint8

const (
	// LinkDown takes a link down at At, and up again at Until (0: never).
	LinkDown FaultKind = iota
	// Flap takes a link down at At for Duty x Period, up for the rest of
	// the period, and again, until Until (0: the end of the run).
	Flap
	// SwitchDown takes a switch down at At (every packet in it and on its
	// links is lost), up again at Until (0: never).
	SwitchDown
	// Loss makes a link lose Percent % of its packets, each direction,
	// from At to Until.
	Loss
	// Rate slows a link to Percent % of its speed from At to Until.
	Rate
)

var faultNames = [...]string{"cut", "flap", "switch-down", "loss", "rate"}

func (k FaultKind) String() string { return faultNames[k] }

// Fault is one fault of a run. A and B name a link's ends (two neighbours:
// switches, or a T0 and a NIC: "p0-t0-1:nic-3"); A alone names a switch.
type Fault struct {
	Kind          FaultKind
	A, B          string
	At, Until     time.Duration
	Period        time.Duration
	Duty, Percent float64
}

// String is the fault in the syntax ParseFault reads.
func (f Fault) String() string { return f.Kind.String() + " " + f.spec() }

// spec is the fault as ParseFault reads it, without its kind.
func (f Fault) spec() string {
	var b strings.Builder
	b.WriteString(f.A)
	if f.B != "" {
		b.WriteString(":" + f.B)
	}
	switch f.Kind {
	case Loss, Rate:
		b.WriteString(":" + strconv.FormatFloat(f.Percent, 'f', -1, 64) + "%")
	}
	b.WriteString("@" + f.At.String())
	if f.Kind == Flap {
		fmt.Fprintf(&b, ",period=%v,duty=%s%%", f.Period, strconv.FormatFloat(f.Duty*100, 'f', -1, 64))
	}
	if f.Until > 0 {
		b.WriteString(",until=" + f.Until.String())
	}
	return b.String()
}

// FaultError is a fault a run cannot take: its kind (the command's flag,
// --cut and so on, names it), the fault as given, and why.
type FaultError struct {
	Kind FaultKind
	Spec string
	Err  error
}

func (e *FaultError) Error() string { return fmt.Sprintf("%s %q: %v", e.Kind, e.Spec, e.Err) }
func (e *FaultError) Unwrap() error { return e.Err }

// MaxTime is the latest simulated time a run takes (a time limit, a
// fault's, a flow's start, the convergence and local repair delays): the clock counts
// picoseconds in 63 bits, 106 days, and a day leaves room for every sum it
// forms, far beyond what a packet-level run gets through.
const MaxTime = 24 * time.Hour

// ParseFault reads a fault of kind k. The link syntax is the lab's (A:B),
// with simulated times instead of shares of a transfer:
//
//	cut         A:B@100us[,until=300us]
//	flap        A:B@100us,period=50us,duty=20%[,until=1ms]
//	switch-down SW@100us[,until=300us]
//	loss        A:B:1%[@100us][,until=...]
//	rate        A:B:25%[@100us][,until=...]
//
// An error is a *FaultError.
func ParseFault(k FaultKind, spec string) (Fault, error) {
	f := Fault{Kind: k}
	bad := func(why string, a ...any) (Fault, error) {
		return Fault{}, &FaultError{Kind: k, Spec: spec, Err: fmt.Errorf(why, a...)}
	}
	where, when, hasAt := strings.Cut(spec, "@")
	parts := strings.Split(where, ":")
	switch k {
	case SwitchDown:
		if len(parts) != 1 || parts[0] == "" {
			return bad("want SW@TIME")
		}
		f.A = parts[0]
	case Loss, Rate:
		if len(parts) != 3 {
			return bad("want A:B:PERCENT%%[@TIME]")
		}
		f.A, f.B = parts[0], parts[1]
		v, err := strconv.ParseFloat(strings.TrimSuffix(parts[2], "%"), 64)
		if err != nil || !(v >= 0 && v <= 100) { // NaN is neither
			return bad("%q is not a percentage: want %s", parts[2], percentRange(k))
		}
		if err := checkPercent(k, v); err != nil {
			return bad("%q: %w", parts[2], err)
		}
		f.Percent = v
	default:
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return bad("want A:B@TIME")
		}
		f.A, f.B = parts[0], parts[1]
	}
	if !hasAt {
		if k == Loss || k == Rate {
			return f, nil
		}
		return bad("no @TIME")
	}
	fields := strings.Split(when, ",")
	at, err := ParseTime(fields[0])
	if err != nil {
		return bad("%w", err)
	}
	f.At = at
	for _, kv := range fields[1:] {
		key, val, _ := strings.Cut(kv, "=")
		switch {
		case key == "until":
			u, err := ParseTime(val)
			if err != nil {
				return bad("until: %w", err)
			}
			f.Until = u
		case key == "period" && k == Flap:
			p, err := ParseTime(val)
			if err != nil {
				return bad("period: %w", err)
			}
			f.Period = p
		case key == "duty" && k == Flap:
			v, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
			if err != nil || !(v > 0 && v < 100) { // NaN is neither
				return bad("duty %q: want the share of each period the link is down, above 0%% and below 100%%", val)
			}
			f.Duty = v / 100
		default:
			return bad("unknown setting %q", kv)
		}
	}
	if k == Flap && (f.Period == 0 || f.Duty == 0) {
		return bad("a flap needs period= and duty=")
	}
	if err := f.check(); err != nil {
		return bad("%w", err)
	}
	return f, nil
}

// percentRange is the percentages a fault of kind k takes.
func percentRange(k FaultKind) string {
	if k == Rate {
		return "0.0001% to 100%"
	}
	return "0% to 100%"
}

// checkPercent refuses a loss or rate percentage v that is not one (NaN,
// infinite, outside 0-100%), or a rate the simulator cannot keep: it keeps
// a rate as millionths of the link's speed (rateOf), so 0.0001% and up in
// steps of 0.0001%, where it used to drop the fraction (0.5% became 1%).
func checkPercent(k FaultKind, v float64) error {
	if !(v >= 0 && v <= 100) { // NaN is neither
		return fmt.Errorf("%v%% is not a percentage: want %s", v, percentRange(k))
	}
	if k == Rate {
		if v == 0 {
			return fmt.Errorf("a link at 0%% of its speed sends nothing: want %s (--cut takes a link down)", percentRange(k))
		}
		if ppm := math.Round(v * fullRate / 100); ppm < 1 || math.Abs(v*fullRate/100-ppm) > 1e-6 {
			return fmt.Errorf("a rate is kept to 0.0001%% of the link's speed: want %s, in steps of 0.0001%%", percentRange(k))
		}
	}
	return nil
}

// rateOf is a rate fault's share of the link's speed in millionths
// (linkState.rate), exactly as given: check refuses any finer.
func rateOf(percent float64) int64 { return int64(math.Round(percent * fullRate / 100)) }

// check refuses a fault whose values no run can take, saying why: times
// outside 0 to MaxTime or an until not after the start, a loss or rate
// that is not a percentage (checkPercent), a flap without a period and
// duty or with a spell shorter than MinFlapSpell. Its names are the
// fabric's to check (CheckFault).
func (f Fault) check() error {
	if f.Kind > Rate {
		return fmt.Errorf("fault kind %d: want cut, flap, switch-down, loss or rate", f.Kind)
	}
	if f.At < 0 || f.At > MaxTime {
		return fmt.Errorf("at %v: want a simulated time from 0 to %v", f.At, MaxTime)
	}
	if f.Until != 0 && (f.Until <= f.At || f.Until > MaxTime) {
		return fmt.Errorf("until %v: want a time after %v, at most %v", f.Until, f.At, MaxTime)
	}
	switch f.Kind {
	case Loss, Rate:
		return checkPercent(f.Kind, f.Percent)
	case Flap:
		if !(f.Duty > 0 && f.Duty < 1) || f.Period <= 0 || f.Period > MaxTime {
			return fmt.Errorf("period %v, duty %v%%: a flap needs a period above 0 (at most %v) and a duty above 0%% and below 100%%", f.Period, 100*f.Duty, MaxTime)
		}
		return f.checkSpells()
	}
	return nil
}

// MinFlapSpell is the shortest down or up spell a flap may have. No link
// fails and comes back that fast (its receiver must lock onto the signal
// again: a 100GBASE-R lane's alignment markers alone come 42 µs apart),
// and a shorter spell only multiplies events: a flap every 10 ns is 200
// million edges a simulated second.
const MinFlapSpell = time.Microsecond

// spells are a flap's down and up spells: Duty of each period down, the
// rest up.
func (f Fault) spells() (down, up time.Duration) {
	down = time.Duration(float64(f.Period) * f.Duty)
	return down, f.Period - down
}

// checkSpells refuses a flap with a spell shorter than MinFlapSpell.
func (f Fault) checkSpells() error {
	if f.Kind != Flap {
		return nil
	}
	down, up := f.spells()
	for _, x := range []struct {
		what  string
		spell time.Duration
		share float64
	}{{"a down", down, f.Duty}, {"an up", up, 1 - f.Duty}} {
		if x.spell < MinFlapSpell {
			return fmt.Errorf("%s spell of %v (%.4g%% of the %v period): want each spell %v or more: no link fails and comes back that fast (docs/protocol.md 11.2)",
				x.what, x.spell, 100*x.share, f.Period, MinFlapSpell)
		}
	}
	return nil
}

// ParseTime reads a simulated time: a number and a unit (ns, us or µs, ms,
// s, m, h), from 0 to MaxTime.
func ParseTime(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.Replace(s, "µs", "us", 1))
	switch {
	case err != nil || d < 0:
		return 0, fmt.Errorf("%q is not a time (a number and ns, us, ms or s)", s)
	case d > MaxTime:
		return 0, fmt.Errorf("%q is beyond %v, the longest run the simulator takes", s, MaxTime)
	}
	return d, nil
}

// faultState is a fault in a run: its links and what it cost.
type faultState struct {
	Fault
	links []*linkState
	sw    int32 // SwitchDown: the switch
	began bool
	on    bool // down, lossy or slow now: its latest event began it
	// converging: a RoCE flap's chains of local repairs and convergences
	// have begun (Sim.flapRepaired, Sim.flapConverged).
	converging bool
	// sentAt is each NIC's data packets sent when the fault began.
	sentAt map[int32]uint64
}

// faultCost is what a fault cost, as one worker counted it (Sim.cost):
// the workers' counts add up at the end of the run (add). Only the
// faults' own events write faultState, while every worker waits, so the
// workers read it and write only this.
type faultCost struct {
	// lost counts the data packets lost to it, bySlot what it cost each
	// EV slot (LostBySlot).
	lost   int64
	bySlot map[SlotKey]int
	// lastRetire is when a NIC last retired a path while it was the latest
	// fault begun (-1: never); retirePackets the most any NIC sent from
	// the fault's start to its last retirement.
	lastRetire    int64
	retirePackets uint64
	// stalled are the RoCE QP pairs (by the end at the lower host) whose
	// path it cut while they were on it (Sim.stalls).
	stalled map[*qpEnd]bool
}

// add adds another worker's counts of the same fault.
func (c *faultCost) add(o *faultCost) {
	c.lost += o.lost
	for k, n := range o.bySlot {
		if c.bySlot == nil {
			c.bySlot = map[SlotKey]int{}
		}
		c.bySlot[k] += n
	}
	c.lastRetire = max(c.lastRetire, o.lastRetire)
	c.retirePackets = max(c.retirePackets, o.retirePackets)
	for q := range o.stalled {
		if c.stalled == nil {
			c.stalled = map[*qpEnd]bool{}
		}
		c.stalled[q] = true
	}
}

// newCosts is a worker's counts for faults.
func newCosts(faults []faultState) []faultCost {
	c := make([]faultCost, len(faults))
	for i := range c {
		c[i].lastRetire = -1
	}
	return c
}

// setFaults resolves every fault's links and schedules its first event.
func (s *Sim) setFaults(faults []Fault) error {
	for i, f := range faults {
		sw, ends, err := s.faultEnds(f)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		fs := faultState{Fault: f, sw: sw}
		for _, e := range ends {
			fs.links = append(fs.links, s.link(e[0].dev, e[0].port, e[1].dev, e[1].port, i))
		}
		s.faults = append(s.faults, fs)
		s.global.push(event{at: ps(f.At), kind: evFault, arg: int32(i), gen: 1})
	}
	s.cost = newCosts(s.faults)
	return nil
}

// faultEnds checks fault f and finds what it acts on: the switch it takes
// down (-1: none) and the ends of every link it touches. It changes
// nothing of the run, and reads only its fabric and plan (CheckFault).
// An error is a *FaultError.
func (s *Sim) faultEnds(f Fault) (int32, [][2]linkKey, error) {
	bad := func(err error) (int32, [][2]linkKey, error) {
		return -1, nil, &FaultError{Kind: f.Kind, Spec: f.spec(), Err: err}
	}
	if err := f.check(); err != nil {
		return bad(err)
	}
	if f.Kind != SwitchDown {
		a, pa, b, pb, err := s.resolveLink(f.A, f.B)
		if err != nil {
			return bad(err)
		}
		return -1, [][2]linkKey{{{a, pa}, {b, pb}}}, nil
	}
	sw, ok := s.p.SwitchByName(f.A)
	if !ok || sw.Plane >= s.f.Planes || (sw.Role == plan.RoleT0 && sw.Index >= s.f.T0Count) || (sw.Role == plan.RoleT1 && sw.Index >= s.f.T1Count) {
		return bad(fmt.Errorf("no switch %q in the fabric", f.A))
	}
	var ends [][2]linkKey
	for n := 0; n < s.p.Ports(sw); n++ {
		if nb, ok := s.p.Neighbor(sw, n); ok {
			ends = append(ends, [2]linkKey{{s.switchID(sw), int16(n)}, {s.endpointID(nb), int16(nb.Port)}})
		}
	}
	return s.switchID(sw), ends, nil
}

// CheckFault reports whether a run on plan p's fabric takes fault f: its
// values (times, percentage, spells) and its names (a link between two
// neighbours, a switch of the fabric). An error is a *FaultError, naming
// the fault as the command's flags do.
func CheckFault(p *plan.Plan, f Fault) error {
	s := &Sim{f: p.F, p: p} // faultEnds reads only these
	_, _, err := s.faultEnds(f)
	return err
}

func (s *Sim) endpointID(e plan.Endpoint) int32 {
	if e.Role == plan.RoleNIC {
		return int32(e.Index)
	}
	return s.switchID(e.Switch())
}

// link returns the state of the link between (a, pa) and (b, pb), shared
// by both ends.
func (s *Sim) link(a int32, pa int16, b int32, pb int16, fault int) *linkState {
	ls := s.links[linkKey{a, pa}]
	if ls == nil {
		ls = &linkState{rate: fullRate, downBy: fault, lossBy: fault, ends: [2]linkKey{{a, pa}, {b, pb}}, upSince: math.MinInt64 / 2}
		s.linkList = append(s.linkList, ls)
		ls.idx = int32(len(s.linkList))
		s.links[linkKey{a, pa}], s.links[linkKey{b, pb}] = ls, ls
		for _, k := range []linkKey{{a, pa}, {b, pb}} {
			if d := s.devs[k.dev]; d != nil {
				d.ports[k.port].link = ls
			}
		}
	}
	ls.faults = append(ls.faults, fault)
	return ls
}

// resolveLink finds the ports of the link between two neighbours.
func (s *Sim) resolveLink(a, b string) (int32, int16, int32, int16, error) {
	sa, okA := s.p.SwitchByName(a)
	sb, okB := s.p.SwitchByName(b)
	switch {
	case okA && okB:
	case okA || okB:
		sw, nic := sa, b
		if okB {
			sw, nic = sb, a
		}
		h, ok := s.hostByName(nic)
		if !ok || sw.Role != plan.RoleT0 || sw.Index != h.Row || sw.Plane >= s.f.Planes {
			return 0, 0, 0, 0, fmt.Errorf("%s and %s are not neighbours", a, b)
		}
		return s.switchID(sw), int16(s.p.T0DownPort(h.Port)), s.nicID(h), int16(plan.NICPlanePort(sw.Plane)), nil
	default:
		return 0, 0, 0, 0, fmt.Errorf("%s and %s: name switches (p0-t0-1) or a T0 and a NIC (nic-3)", a, b)
	}
	if sa.Plane < s.f.Planes {
		for n := 0; n < s.p.Ports(sa); n++ {
			if nb, ok := s.p.Neighbor(sa, n); ok && nb.Role != plan.RoleNIC && nb.Switch() == sb {
				return s.switchID(sa), int16(n), s.switchID(sb), int16(nb.Port), nil
			}
		}
	}
	return 0, 0, 0, 0, fmt.Errorf("%s and %s are not neighbours", a, b)
}

func (s *Sim) hostByName(name string) (plan.Host, bool) { return hostByName(s.p, name) }

// fault runs fault i's event gen: 1 begins it (or a flap's down), 0 ends it
// (or a flap's up).
func (s *Sim) fault(i int, gen uint32) {
	fs := &s.faults[i]
	on := gen == 1
	if on && !fs.began {
		fs.began = true
		fs.sentAt = map[int32]uint64{}
		for _, hs := range s.hosts {
			if hs != nil {
				fs.sentAt[hs.id] = hs.nic.Event(schema.NICEventDataSent)
			}
		}
	}
	fs.on = on
	for _, ls := range fs.links {
		failed, revived := s.combine(ls)
		switch {
		case failed && s.explicit:
			s.linkDownLossless(ls)
		case revived && s.explicit:
			s.linkUpLossless(ls)
		}
	}
	switch fs.Kind {
	case LinkDown, Flap, SwitchDown:
		if fs.sw >= 0 {
			if d := s.shard(fs.sw).device(fs.sw); d != nil {
				d.down = s.switchDown(fs.sw)
			}
		}
		if s.opt.Transport == RoCE {
			if on {
				s.stallsAll(i)
			}
			s.scheduleRouting(i, on, gen) // roce.go
		}
	}
	// The next change.
	next, nextGen := int64(-1), uint32(0)
	switch {
	case fs.Kind == Flap:
		next, nextGen = fs.nextEdge(s.now, on)
	case on && fs.Until > 0:
		next, nextGen = ps(fs.Until), 0
	}
	if next >= 0 {
		s.global.push(event{at: next, kind: evFault, arg: int32(i), gen: nextGen})
	}
}

// nextEdge is when a flap that went down (on) or up at at changes next,
// and its event's gen (1: down); -1 when it does not: it comes up a down
// spell after going down, and goes down again an up spell later, unless
// that is at or after Until.
func (fs *faultState) nextEdge(at int64, on bool) (int64, uint32) {
	down, _ := fs.spells()
	if on {
		return at + ps(down), 0
	}
	next := at + ps(fs.Period) - ps(down)
	if fs.Until > 0 && next >= ps(fs.Until) {
		return -1, 0
	}
	return next, 1
}

// flapConverged: routing converged after flap i's edge (down when gen is
// 1) --convergence ago; the next edge's convergence is due --convergence
// after it. A flap's edges are known in advance, so one event at a time
// carries its convergences where an event per edge waited in the queue.
func (s *Sim) flapConverged(i int, gen uint32) {
	fs := &s.faults[i]
	c := ps(s.opt.Convergence)
	if next, g := fs.nextEdge(s.now-c, gen == 1); next >= 0 {
		s.global.push(event{at: next + c, kind: evConverge, arg: int32(i) + 1, gen: g})
	}
}

// combine sets link ls from every fault on it that is on, so that faults
// that overlap on one link add up rather than each setting the link as if
// it were alone (a flap coming up reopened a link a cut held down; a
// second loss replaced the first): the link is down while any of them
// takes it down, and fails (a new epoch, what was on it lost) when the
// first does; it loses a packet with the chance that any of its losses
// does, each drawn independently (1 - the product of the chances each
// lets it through); it runs at the slowest of its rates. It reports
// whether the link failed or came back. The link's losses are charged to
// the first fault holding it down when it failed, its random losses to the
// first loss on.
func (s *Sim) combine(ls *linkState) (failed, revived bool) {
	down, downBy := false, -1
	loss, lossBy := 0.0, -1
	rate := int64(fullRate)
	for _, i := range ls.faults {
		fs := &s.faults[i]
		if !fs.on {
			continue
		}
		switch fs.Kind {
		case LinkDown, Flap, SwitchDown:
			if !down {
				down, downBy = true, i
			}
		case Loss:
			p := fs.Percent / 100
			if lossBy < 0 {
				loss, lossBy = p, i // alone, exactly its own chance
			} else {
				loss = 1 - (1-loss)*(1-p)
			}
		case Rate:
			rate = min(rate, rateOf(fs.Percent))
		}
	}
	failed, revived = down && !ls.down, !down && ls.down
	if failed {
		ls.epoch++
		ls.downBy = downBy
	}
	if revived {
		ls.upSince = s.now
	}
	ls.down, ls.loss, ls.rate = down, loss, rate
	if lossBy >= 0 {
		ls.lossBy = lossBy
	}
	return failed, revived
}

// switchDown: a switch-down fault on switch sw is on.
func (s *Sim) switchDown(sw int32) bool {
	for i := range s.faults {
		if fs := &s.faults[i]; fs.on && fs.Kind == SwitchDown && fs.sw == sw {
			return true
		}
	}
	return false
}

// retired: host hs's NIC retired a path now; the latest fault begun owns
// it.
func (s *Sim) retired(hs *host) {
	for i := len(s.faults) - 1; i >= 0; i-- {
		fs := &s.faults[i]
		if fs.began && ps(fs.At) <= s.now {
			c := &s.cost[i]
			c.lastRetire = s.now
			c.retirePackets = max(c.retirePackets, hs.nic.Event(schema.NICEventDataSent)-fs.sentAt[hs.id])
			return
		}
	}
}

// rehash rewrites a QP's qp_send entry with its new T1 offset, as a
// routing change moves a RoCE flow.
func rehash(n *nicmodel.NIC, qp qpentry.QP) error {
	send, _, err := qpentry.Entries(n.Program(), n.Params().T1Count, qp)
	if err != nil {
		return err
	}
	return n.Write(nicmodel.Modify, send)
}
