package sim

import (
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// TestConservation: under every kind of fault, MRC and RoCE, on both
// queue models (the default, and the explicit queue of PFC and
// --exact-queues), each data
// packet a NIC sends is accounted for exactly once by the end of the run:
// delivered to a NIC, trimmed, dropped (tail drop, link down, random
// loss, no route), or still on a link or in a queue; no packet of any
// kind is held by the simulator without being due somewhere; and every
// flow completes with its bytes, each placed once, as sent.
func TestConservation(t *testing.T) {
	f, p, src := genSource(t, "tiny")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	perm := Permutation(hosts, 512<<10, 0, 1)
	incast := IncastFlows(hosts, 1<<20, 0)
	// The faults take the plane-0 T1 that RoCE's ECMP hash gives the
	// first flow across the rows (each touches row 0's T0), so that
	// RoCE's flows meet them too; MRC's spray over every T1.
	var across Flow
	for _, fl := range perm {
		if fl.Src.Row != fl.Dst.Row && (fl.Src.Row == 0 || fl.Dst.Row == 0) {
			across = fl
			break
		}
	}
	probe := newSim(t, f, src, Options{Transport: RoCE, Flows: perm, Seed: 1})
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: probe.ecmp(probe.hostOf(across.Src), probe.hostOf(across.Dst), 0, 0)})
	link := "p0-t0-0:" + t1
	// The incast's receiver, host 0 (nic-0), loses its plane-0 link
	// while the queue towards it is full.
	lost := func(r *Result) bool { return r.Drops.LinkDown > 0 }
	for _, tc := range []struct {
		name   string
		flows  []Flow
		faults []faultSpec
		pfc    bool
		limit  time.Duration
		// buffer is Options.SwitchBuffer: the incast tail-drops on
		// BMv2's per-port queues, not in the shared buffer
		buffer int64
		// what shows the fault did something
		check func(r *Result) bool
	}{
		{"cut", perm, []faultSpec{{LinkDown, link + "@5us,until=40us"}}, false, 0, 0, lost},
		{"flap", perm, []faultSpec{{Flap, link + "@5us,period=10us,duty=30%,until=60us"}}, false, 0, 0, lost},
		{"loss", perm, []faultSpec{{Loss, link + ":5%"}, {Loss, "p1-t0-1:nic-3:5%"}}, false, 0, 0,
			func(r *Result) bool { return r.Drops.RandomLoss > 0 }},
		{"pfc incast and a cut", incast, []faultSpec{{LinkDown, "p0-t0-0:nic-0@30us,until=50us"}}, true, 0, 0,
			func(r *Result) bool { return r.Drops.LinkDown > 0 && (r.PFC.Pauses > 0 || r.Trims.LastHop > 0) }},
		{"incast", incast, nil, false, 0, SwitchBufferPerPort,
			func(r *Result) bool { return r.Drops.TailDrop > 0 || r.Trims.LastHop > 0 }},
		{"switch down", perm, []faultSpec{{SwitchDown, t1 + "@5us,until=40us"}}, false, 0, 0, lost},
		{"time limit", perm, nil, false, 10 * time.Microsecond, 0,
			func(r *Result) bool { return r.DataPackets.InFlight > 0 && r.Completed == 0 }},
	} {
		for _, run := range []struct {
			tr    Transport
			exact bool
		}{{MRC, false}, {RoCE, false}, {MRC, true}, {RoCE, true}} {
			if tc.pfc && run.exact {
				continue // PFC runs the explicit queue anyway
			}
			opt := Options{Transport: run.tr, Flows: tc.flows, Faults: faults(t, tc.faults...), Seed: 1, Payload: true,
				Convergence: 100 * time.Microsecond, Limit: tc.limit, ExactQueues: run.exact, SwitchBuffer: tc.buffer}
			if tc.pfc {
				opt.PFC = &PFCConfig{}
			}
			s := newSim(t, f, src, opt)
			r, err := s.Run()
			if err != nil {
				t.Fatal(err)
			}
			name := tc.name + ", " + run.tr.String()
			if run.exact {
				name += ", exact queues"
			}
			dp, d := r.DataPackets, r.Drops
			pauses := int64(-1)
			if r.PFC != nil {
				pauses = r.PFC.Pauses
			}
			t.Logf("%s: data packets %+v, trims %+v, drops %+v, pauses %d, simulated %.1f µs", name, dp, r.Trims, d, pauses, r.SimulatedUS)
			if tc.limit == 0 && r.Completed != len(tc.flows) || r.Corrupt != 0 {
				t.Errorf("%s: %d of %d flows complete, %d corrupt", name, r.Completed, len(tc.flows), r.Corrupt)
			}
			if !tc.check(r) {
				t.Errorf("%s: the fault did nothing: drops %+v, PFC %+v", name, d, r.PFC)
			}
			accounted := dp.Delivered + r.Trims.Fabric + r.Trims.LastHop + d.TailDrop + d.LinkDown + d.RandomLoss + d.NoRoute + dp.InFlight
			if dp.Sent == 0 || dp.Sent != accounted {
				t.Errorf("%s: %d data packets sent, %d accounted for (%d delivered, trims %+v, drops %+v, %d in flight)",
					name, dp.Sent, accounted, dp.Delivered, r.Trims, d, dp.InFlight)
			}
			if held, due := s.packetsHeld(); held != due {
				t.Errorf("%s: %d packets held at the end, %d of them on a link or in a queue", name, held, due)
			}
			for i, fl := range tc.flows {
				if tc.limit > 0 {
					break // the flows were stopped midway
				}
				if got := s.placed(fl); got != fl.Bytes {
					t.Errorf("%s: flow %d (%s -> %s) placed %d bytes, want %d", name, i, p.HostName(fl.Src), p.HostName(fl.Dst), got, fl.Bytes)
				}
			}
		}
	}
}

// packetsHeld is how many packets of the pool are not free, and how many
// are due somewhere: an arrival scheduled, or in a PFC port's queue.
func (s *Sim) packetsHeld() (held, due int) {
	held = int(s.poolLen) - len(s.free)
	s.q.each(func(e event) {
		if e.kind == evArrive {
			due++
		}
	})
	for _, d := range s.devs {
		if d == nil {
			continue
		}
		for i := range d.ports {
			if x := d.ports[i].q.pfc; x != nil {
				due += x.high.len() + x.low.len()
			}
		}
	}
	return held, due
}

// placed is the payload bytes fl's receiver placed for the first time
// from fl's sender, over all the QPs of the pair (one flow per pair).
func (s *Sim) placed(fl Flow) int64 {
	a, b := s.hostOf(fl.Src), s.hostOf(fl.Dst)
	var n int64
	for k, q := range b.qps {
		if k.peer == a.id {
			n += q.qp.RecvCounters().Bytes
		}
	}
	return n
}

// TestInFlightAtLimit: a run its time limit stops counts the data packets
// still on their way, the one whose arrival is the first event beyond the
// limit included. lineFlow's sender (lineFabric, 340.32 ns a frame on
// every link) hands its NIC frame k at floor(k x 340.32) ns; frame k is
// wholly in p0-t0-0 at (k+1) x 340.32 + 10 ns, in p0-t1-0 340.32 + 150
// ns later, in p0-t0-1 as much later again. At a limit of 1.025 µs frame
// 0 is due at p0-t0-1 at 1330.96 ns, frame 1 at p0-t1-0 at 1180.96,
// frame 2 at p0-t0-0 at 1030.96 (the next event), and frame 3, handed
// over at 1020 ns, is on the NIC's port: 4 sent, none delivered, 4 in
// flight.
func TestInFlightAtLimit(t *testing.T) {
	f, src := lineFabric(t)
	s := newSim(t, f, src, Options{NoCongestionControl: true, Window: 64, Limit: 1025 * time.Nanosecond,
		Flows: []Flow{{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 1, Port: 1}, Bytes: 16 * 4096}}})
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if want := (DataPackets{Sent: 4, InFlight: 4}); r.DataPackets != want {
		t.Errorf("data packets %+v at the limit, want %+v", r.DataPackets, want)
	}
	if held, due := s.packetsHeld(); held != 4 || due != 4 {
		t.Errorf("%d packets held at the end, %d of them due somewhere: want 4 and 4", held, due)
	}
}
