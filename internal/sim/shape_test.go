package sim

import (
	"fmt"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// shape measures what a conservative parallel simulation would see (issue
// 30) if each of a number of workers owned whole T0 rows (every plane's T0
// of those rows, and their hosts) and the T1s were spread over the
// workers: every link between workers is then a T0-T1 link, whose
// propagation delay is the lookahead. It counts the events of each window
// of one lookahead, per worker, and the events a worker receives from
// another (a packet arriving over a link whose other end another worker
// owns, a PAUSE likewise; a collective's next step and faults count as
// crossing too).
type shape struct {
	f       *fabric.Fabric
	p       *plan.Plan
	window  int64 // ps
	workers []int
	total   int64
	// per worker count: crossing events, and for each window the events
	// of each worker (flushed into work at each new window).
	cross   []int64
	cur     int64
	counts  [][]int64
	work    []int64 // sum over windows of the busiest worker's events
	windows int64   // windows with at least one event
}

func newShape(f *fabric.Fabric, p *plan.Plan, workers []int) *shape {
	sh := &shape{f: f, p: p, window: int64(f.Links.T0T1Ns) * 1000, workers: workers, cur: -1}
	sh.cross = make([]int64, len(workers))
	sh.work = make([]int64, len(workers))
	for _, w := range workers {
		sh.counts = append(sh.counts, make([]int64, w))
	}
	return sh
}

// owner is the worker of device id among w: the run's own partition
// (Sim.partOf).
func (sh *shape) owner(s *Sim, id int32, w int) int { return s.partOf(id, w) }

// source is the device at the other end of device id's port, or -1.
func (sh *shape) source(s *Sim, id int32, port int16) int32 {
	f := sh.f
	if int(id) < f.Hosts() {
		h := sh.p.HostByIndex(int(id))
		return s.switchID(plan.Switch{Role: plan.RoleT0, Plane: int(port) - 1, Index: h.Row})
	}
	nb, ok := sh.p.Neighbor(s.switchOf(id), int(port))
	if !ok {
		return -1
	}
	if nb.Role == plan.RoleNIC {
		return int32(nb.Index)
	}
	return s.switchID(nb.Switch())
}

func (sh *shape) flush() {
	for i, c := range sh.counts {
		var m int64
		for j, n := range c {
			m = max(m, n)
			c[j] = 0
		}
		sh.work[i] += m
	}
}

func (sh *shape) event(s *Sim, e *event) {
	sh.total++
	if w := e.at / sh.window; w != sh.cur {
		if sh.cur >= 0 {
			sh.flush()
		}
		sh.cur = w
		sh.windows++
	}
	for i, w := range sh.workers {
		var to, from int
		switch e.kind {
		case evArrive, evPause:
			to = sh.owner(s, e.dev, w)
			from = to
			if src := sh.source(s, e.dev, e.port); src >= 0 {
				from = sh.owner(s, src, w)
			}
		case evTimer, evPortFree:
			to = sh.owner(s, e.dev, w)
			from = to
		case evFlow:
			fl := s.flows[e.arg].Flow
			to = sh.owner(s, s.nicID(fl.Src), w)
			from = to
		default: // a collective's step, faults, routing: global
			to, from = 0, -1
		}
		sh.counts[i][to]++
		if from != to {
			sh.cross[i]++
		}
	}
}

// BenchmarkParallelShape reports, for a permutation of every host of
// mrc-1k (2 MiB each, BenchmarkPermutation1k's run) and for 8,192 hosts of
// mrc-131k (256 KiB each), the events per lookahead window, and for 2 to
// 64 workers the share of events that cross workers and the speed-up the
// windows allow: all events over the sum, over windows, of the busiest
// worker's events (no cost for synchronisation or messages).
func BenchmarkParallelShape(b *testing.B) {
	for _, c := range []struct {
		preset string
		hosts  int
		bytes  int64
	}{{"mrc-1k", 0, 2 << 20}, {"mrc-131k", 8192, 256 << 10}} {
		b.Run(fmt.Sprintf("%s/hosts=%d", c.preset, c.hosts), func(b *testing.B) {
			f, p, src := genSource(b, c.preset)
			hosts, err := SpreadHosts(p, c.hosts)
			if err != nil {
				b.Fatal(err)
			}
			workers := []int{2, 8, 16, 64}
			for range b.N {
				sh := newShape(f, p, workers)
				s := newSim(b, f, src, Options{Flows: Permutation(hosts, c.bytes, 0, 1), Seed: 1})
				s.testEvent = func(e event) { sh.event(s, &e) }
				if _, err := s.Run(); err != nil {
					b.Fatal(err)
				}
				sh.flush()
				b.ReportMetric(float64(sh.total)/float64(sh.windows), "events/window")
				b.ReportMetric(float64(sh.total)/(float64(s.now)/float64(sh.window)), "events/lookahead")
				for i, w := range workers {
					b.ReportMetric(float64(sh.cross[i])/float64(sh.total), fmt.Sprintf("cross@%d", w))
					b.ReportMetric(float64(sh.total)/float64(sh.work[i]), fmt.Sprintf("speedup@%d", w))
				}
			}
		})
	}
}
