package sim

import (
	"unsafe"

	"github.com/mrc-fabric/mrcgen/internal/prefetch"
)

// prefetchQPs is how many of a host's QP ends prefetchAhead asks for (the
// first ones: a host of a permutation has two, one of RoCE's all-to-all
// 248, too many to ask for at every event).
const prefetchQPs = 4

// prefetchHosts is the fewest hosts a run makes for which its loop
// prefetches. Below it the run's state stays in the caches and the
// prefetches are overhead: small's 32 hosts (8 MiB each) ran 20-30%
// slower with them (3.3-3.4 M hops/s against 4.1-4.6 M, three alternating
// pairs). Measured on mrc-1k's hosts at 4 MiB each, one worker, two
// alternating rounds (hops/s with and without): 64 hosts 3.39/3.27 M
// against 2.62/3.41 M, 128 3.28/3.17 against 2.74/3.09, 256 2.95/2.81
// against 2.12/2.34, 512 2.29/2.45 against 1.63/1.84.
const prefetchHosts = 128

// choosePrefetching turns prefetchAhead on for every worker when the run
// has made at least prefetchFrom hosts (prefetchHosts: its flows' ends,
// made before its first window).
func (s *Sim) choosePrefetching() {
	n := 0
	for _, hs := range s.hosts {
		if hs != nil {
			n++
		}
	}
	for _, sh := range s.shards {
		sh.prefetching = n >= s.prefetchFrom
	}
}

// prefetchAhead asks for the memory of the events the bucket runs next
// (package prefetch), in stages that each read what the stage before
// brought in, the event being run last:
//  1. three events ahead: the packet, and the host or the switch;
//  2. two ahead: a host's device, NIC, engine and index of QP ends; a
//     switch's lookup cells for the packet's uSIDs;
//  3. one ahead: a host's QP ends, its NIC's register index and its
//     engine's timer heap; the switch port the packet's route takes
//     (knownRoute) and the switch's buffer;
//  4. the next event: a host's QPs, their writes and its NIC's registers;
//     the port's spilled queue;
//  5. the event being run (cur): its host's writes' windows.
//
// At the scale of mrc-131k each of these was a cache miss, and most a TLB
// miss, that the event waited for, one after the other along its chain of
// pointers; an event's own work takes long enough that a stage's lines
// are in by the time the next stage or the event reads them. The events
// of the bucket ahead are a guess (a newcomer may run before them), and a
// wrong guess costs only the lines it asked for. Nothing here changes any
// state.
func (s *Sim) prefetchAhead(cur *event) {
	q := s.q
	if e := q.ahead(3); e != nil {
		if hs := s.hostAt(e.dev); hs != nil {
			if e.kind == evArrive {
				// A NIC reads the whole header: the BTH is in its second line.
				prefetch.Lines(unsafe.Pointer(s.pkt(e.arg)), prefetch.LinesOf(unsafe.Sizeof(packet{}))-1)
			}
			prefetch.Lines(unsafe.Pointer(hs), prefetch.LinesOf(unsafe.Sizeof(*hs)))
		} else if d := s.devs[e.dev]; d != nil {
			if e.kind == evArrive {
				prefetch.Line(unsafe.Pointer(s.pkt(e.arg))) // a switch reads its first line
			}
			prefetch.Lines(unsafe.Pointer(d), prefetch.LinesOf(unsafe.Sizeof(*d)))
		}
	}
	if e := q.ahead(2); e != nil {
		if hs := s.hostAt(e.dev); hs != nil {
			prefetch.Line(unsafe.Pointer(hs.dev))
			hs.nic.Prefetch()
			hs.eng.Prefetch()
			prefetch.Line(unsafe.Pointer(&hs.byQPN[0]))
		} else if d := s.devs[e.dev]; d != nil && e.kind == evArrive {
			pk := s.pkt(e.arg)
			d.look.prefetch(pk.hdr[:pk.n])
		}
	}
	if e := q.ahead(1); e != nil {
		if hs := s.hostAt(e.dev); hs != nil {
			for _, qe := range hs.prefetchEnds() {
				if qe != nil {
					prefetch.Lines(unsafe.Pointer(qe), prefetch.LinesOf(unsafe.Sizeof(*qe)))
				}
			}
			hs.nic.PrefetchRegIndex()
			hs.eng.PrefetchTimers()
		} else if pt := s.knownPort(e); pt != nil {
			prefetch.Lines(unsafe.Pointer(pt), prefetch.LinesOf(unsafe.Sizeof(*pt)))
			if d := s.devs[e.dev]; d.buf != nil {
				prefetch.Line(unsafe.Pointer(d.buf))
			}
		}
	}
	if e := q.ahead(0); e != nil {
		if hs := s.hostAt(e.dev); hs != nil {
			for _, qe := range hs.prefetchEnds() {
				if qe == nil {
					continue
				}
				qe.qp.Prefetch()
				if qe.active != nil {
					qe.active.Prefetch()
				}
			}
			hs.nic.PrefetchRegs()
		} else if pt := s.knownPort(e); pt != nil {
			if sp := pt.q.spill; sp != nil && sp.head < len(sp.q) {
				prefetch.Line(unsafe.Pointer(&sp.q[sp.head]))
			}
		}
	}
	if hs := s.hostAt(cur.dev); hs != nil {
		for _, qe := range hs.prefetchEnds() {
			if qe != nil && qe.active != nil {
				qe.active.PrefetchWindow()
			}
		}
	}
}

// hostAt is the host whose NIC is device id, nil for a switch or a host
// not yet made.
func (s *Sim) hostAt(id int32) *host {
	if int(id) < len(s.hosts) {
		return s.hosts[id]
	}
	return nil
}

// prefetchEnds are the QP ends prefetchAhead asks for: the first
// prefetchQPs (byQPN's index 0 is unused).
func (hs *host) prefetchEnds() []*qpEnd {
	return hs.byQPN[1:min(len(hs.byQPN), 1+prefetchQPs)]
}

// knownPort is the egress port a switch arrival will take, when the
// switch's lookup cells already know it (knownRoute), or nil.
func (s *Sim) knownPort(e *event) *port {
	if e.kind != evArrive {
		return nil
	}
	d := s.devs[e.dev]
	if d == nil {
		return nil
	}
	pk := s.pkt(e.arg)
	if out, ok := d.look.knownRoute(pk.hdr[:pk.n]); ok && out < len(d.ports) {
		return &d.ports[out]
	}
	return nil
}
