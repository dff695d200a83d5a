package sim

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// CollectiveKind is the collective a training job runs.
type CollectiveKind uint8

const (
	// RingAllReduce: N hosts in a ring reduce a buffer of Bytes: 2(N-1)
	// steps, in each every host sends Bytes/N to its successor (N-1
	// reduce-scatter steps, then N-1 all-gather steps).
	RingAllReduce CollectiveKind = iota
	// AllToAll: one step in which every host sends Bytes/N to every other
	// (each holds Bytes and keeps its own share).
	AllToAll
)

func (k CollectiveKind) String() string {
	if k == AllToAll {
		return "all-to-all"
	}
	return "ring all-reduce"
}

// Collective is a job: a collective over Hosts, repeated Iterations times.
// A step starts when the previous one is complete: when the slowest of its
// transfers is. Faults happen whenever they were set to, steps or not.
type Collective struct {
	Kind       CollectiveKind
	Hosts      []plan.Host
	Bytes      int64
	Iterations int
}

// steps is the collective's step count per iteration.
func (c *Collective) steps() int {
	if c.Kind == AllToAll {
		return 1
	}
	return 2 * (len(c.Hosts) - 1)
}

// stepFlows are the transfers of one step, and the bytes each host sends
// in it.
func (c *Collective) stepFlows() ([]Flow, int64) {
	n := len(c.Hosts)
	share := c.Bytes / int64(n)
	if c.Kind == AllToAll {
		return AllToAllFlows(c.Hosts, share, 0), share * int64(n-1)
	}
	flows := make([]Flow, 0, n)
	for i, a := range c.Hosts {
		flows = append(flows, Flow{Src: a, Dst: c.Hosts[(i+1)%n], Bytes: share})
	}
	return flows, share
}

func (c *Collective) check(f func(plan.Host) bool) error {
	switch {
	case len(c.Hosts) < 2:
		return fmt.Errorf("collective: %d hosts, want 2 or more", len(c.Hosts))
	case c.Iterations < 1:
		return fmt.Errorf("collective: %d iterations, want 1 or more", c.Iterations)
	case c.Bytes < int64(len(c.Hosts)):
		return fmt.Errorf("collective: %d bytes over %d hosts: want at least a byte each", c.Bytes, len(c.Hosts))
	}
	seen := map[plan.Host]bool{}
	for _, h := range c.Hosts {
		if !f(h) || seen[h] {
			return fmt.Errorf("collective: host %+v is not a distinct host of the fabric", h)
		}
		seen[h] = true
	}
	return nil
}

// StepResult is one step of a collective.
type StepResult struct {
	Iteration int     `json:"iteration"`
	Step      int     `json:"step"`
	StartUS   float64 `json:"start_us"`
	TimeUS    float64 `json:"time_us"` // -1: not completed
	// IdealUS is the step's bytes per host over the NIC's speed; Slowdown
	// the step's time over it.
	IdealUS  float64 `json:"ideal_us"`
	Slowdown float64 `json:"slowdown"`
}

// CollectiveResult sums a collective up.
type CollectiveResult struct {
	Kind       string       `json:"kind"`
	Hosts      int          `json:"hosts"`
	Bytes      int64        `json:"bytes"`
	Iterations int          `json:"iterations"`
	Steps      int          `json:"steps"`
	Completed  int          `json:"steps_completed"`
	StepTime   Percentiles  `json:"step_time_us"`
	Slowdown   Percentiles  `json:"slowdown"`
	PerStep    []StepResult `json:"per_step"`
}

// collectiveState runs a collective in a Sim.
type collectiveState struct {
	c       *Collective
	step    int // steps started, over all iterations
	pending int // transfers of the current step not complete
	start   int64
	perHost int64
	results []StepResult
}

// startStep starts the collective's next step at time at, if any is left:
// its flows are prepared and their starts scheduled at their senders. It
// runs between windows (parallel.go), on the run's first worker.
func (s *Sim) startStep(at int64) {
	cs := s.coll
	if cs.step == cs.c.steps()*cs.c.Iterations {
		return
	}
	flows, perHost := cs.c.stepFlows()
	cs.start, cs.perHost, cs.pending = at, perHost, len(flows)
	cs.step++
	first := len(s.flows)
	for _, fl := range flows {
		fl.Start = dur(at)
		s.flows = append(s.flows, flowState{Flow: fl, step: cs.step})
	}
	s.prepareFlows(first)
}

// stepBarrier hears of the transfers of the current step that completed
// in the window just run (done, each at its flowState.doneAt). When the
// last one has, the step is over at its completion, and the next step
// starts a window later: the barrier is a message, which takes at least
// the lookahead to reach the hosts (parallel.go).
func (s *Sim) stepBarrier(done []int32) {
	cs := s.coll
	if len(done) == 0 {
		return
	}
	last := int64(0)
	for _, i := range done {
		last = max(last, s.flows[i].doneAt)
	}
	cs.pending -= len(done)
	if cs.pending > 0 {
		return
	}
	nicBps := float64(s.f.NICSpeedGbps) * 1e9 / 8
	ideal := float64(cs.perHost) / nicBps * 1e6
	t := us(last - cs.start)
	per := cs.c.steps()
	cs.results = append(cs.results, StepResult{Iteration: (cs.step - 1) / per, Step: (cs.step - 1) % per,
		StartUS: us(cs.start), TimeUS: t, IdealUS: ideal, Slowdown: t / ideal})
	s.startStep(last + s.window)
}

func (s *Sim) collectiveResult() *CollectiveResult {
	cs := s.coll
	c := cs.c
	r := &CollectiveResult{Kind: c.Kind.String(), Hosts: len(c.Hosts), Bytes: c.Bytes, Iterations: c.Iterations,
		Steps: c.steps() * c.Iterations, Completed: len(cs.results), PerStep: cs.results}
	if cs.pending > 0 && cs.step > len(cs.results) {
		flows, perHost := c.stepFlows()
		_ = flows
		per := c.steps()
		r.PerStep = append(r.PerStep, StepResult{Iteration: (cs.step - 1) / per, Step: (cs.step - 1) % per, StartUS: us(cs.start), TimeUS: -1,
			IdealUS: float64(perHost) / (float64(s.f.NICSpeedGbps) * 1e9 / 8) * 1e6, Slowdown: -1})
	}
	var times, slows []float64
	for _, st := range cs.results {
		times = append(times, st.TimeUS)
		slows = append(slows, st.Slowdown)
	}
	r.StepTime, r.Slowdown = percentiles(times), percentiles(slows)
	return r
}
