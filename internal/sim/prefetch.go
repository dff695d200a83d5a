package sim

import "unsafe"

// linesOf is how many cache lines a value of size bytes may touch (one
// more than it fills: the allocator does not align them to lines).
func linesOf(size uintptr) uintptr { return (size+63)/64 + 1 }

// prefetchAhead asks for the memory of the events the bucket runs next,
// in stages that each read what the stage before brought in: three events
// ahead the packet, and the host or the device; two ahead the NIC, the
// engine and the host's QP ends; one ahead their QPs and the writes in
// progress. At the scale of mrc-131k each of these was a cache miss (and
// most a TLB miss) that the event waited for, one after the other along
// its chain of pointers; an event's own work is a microsecond or so, so
// a stage's lines are in by the time the next stage or the event reads
// them. The events of the bucket after the next are a guess (a newcomer
// may run before them), and a wrong guess costs only the lines asked for.
func (s *Sim) prefetchAhead() {
	q := s.q
	if e := q.ahead(2); e != nil {
		if e.kind == evArrive {
			prefetch(unsafe.Pointer(s.pkt(e.arg)))
		}
		if int(e.dev) < len(s.hosts) {
			if hs := s.hosts[e.dev]; hs != nil {
				prefetchLines(unsafe.Pointer(hs), linesOf(unsafe.Sizeof(*hs)))
			}
		} else if d := s.devs[e.dev]; d != nil {
			prefetchLines(unsafe.Pointer(d), linesOf(unsafe.Sizeof(*d)))
		}
	}
	if e := q.ahead(1); e != nil {
		if int(e.dev) < len(s.hosts) {
			if hs := s.hosts[e.dev]; hs != nil {
				prefetch(unsafe.Pointer(hs.dev))
				prefetchLines(unsafe.Pointer(hs.nic), 8)
				prefetchLines(unsafe.Pointer(hs.eng), linesOf(unsafe.Sizeof(*hs.eng)))
				for _, qe := range hs.byQPN {
					if qe != nil {
						prefetchLines(unsafe.Pointer(qe), linesOf(unsafe.Sizeof(*qe)))
					}
				}
			}
		} else if e.kind == evArrive {
			if d := s.devs[e.dev]; d != nil {
				pk := s.pkt(e.arg)
				d.look.prefetch(pk.hdr[:pk.n])
			}
		}
	}
	if e := q.ahead(0); e != nil && int(e.dev) >= len(s.hosts) {
		if d := s.devs[e.dev]; d != nil && e.kind == evArrive {
			pk := s.pkt(e.arg)
			if out, ok := d.look.knownRoute(pk.hdr[:pk.n]); ok && out < len(d.ports) {
				prefetchLines(unsafe.Pointer(&d.ports[out]), linesOf(unsafe.Sizeof(d.ports[out])))
				if d.buf != nil {
					prefetch(unsafe.Pointer(d.buf))
				}
			}
		}
	} else if e != nil {
		if hs := s.hosts[e.dev]; hs != nil {
			for _, qe := range hs.byQPN {
				if qe == nil {
					continue
				}
				prefetchLines(unsafe.Pointer(qe.qp), linesOf(unsafe.Sizeof(*qe.qp)))
				if qe.active != nil {
					prefetchLines(unsafe.Pointer(qe.active), linesOf(unsafe.Sizeof(*qe.active)))
				}
			}
		}
	}
}
