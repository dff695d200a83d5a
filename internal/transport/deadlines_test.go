package transport

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// TestDeadlineQueue: after any sequence of deadlines set, moved and
// removed, the queue's earliest deadline and its due QPs (in open order)
// are what a walk over every QP finds.
func TestDeadlineQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	base := 1_000_000 * time.Second // deadlines are durations since the engine's origin
	qps := make([]*QP, 40)
	for i := range qps {
		qps[i] = &QP{dls: deadlineState{order: i, index: -1}}
	}
	has := make([]bool, len(qps))
	var d deadlineQueue
	for step := 0; step < 20_000; step++ {
		i := rng.IntN(len(qps))
		if rng.IntN(4) == 0 {
			d.set(qps[i], 0, false)
			has[i] = false
		} else {
			// Few distinct times: ties are common.
			d.set(qps[i], base+time.Duration(rng.IntN(50))*time.Microsecond, true)
			has[i] = true
		}
		now := base + time.Duration(rng.IntN(50))*time.Microsecond
		var wantNext time.Duration
		wantOK := false
		var wantDue []int
		for j, q := range qps {
			if !has[j] {
				continue
			}
			if !wantOK || q.dls.at < wantNext {
				wantNext, wantOK = q.dls.at, true
			}
			if q.dls.at <= now {
				wantDue = append(wantDue, j)
			}
		}
		if next, ok := d.next(); ok != wantOK || next != wantNext {
			t.Fatalf("step %d: next %v %v, want %v %v", step, next, ok, wantNext, wantOK)
		}
		var due []int
		for _, q := range d.dueAt(now) {
			due = append(due, q.dls.order)
		}
		if !slices.Equal(due, wantDue) {
			t.Fatalf("step %d: due at %v: %v, want %v", step, now-base, due, wantDue)
		}
		for k, q := range d.heap {
			if q.dls.index != k {
				t.Fatalf("step %d: QP %d at heap index %d thinks it is at %d", step, q.dls.order, k, q.dls.index)
			}
		}
	}
}

// TestOldestInFlightIsTheWindowWalk: after any sequence of sends, SACKs,
// trims, losses, timeouts and go-back-N rounds, the send log's oldest
// packet in flight (what the RTO's deadline is taken from) has the
// earliest last send of the packets the RTO covers, as a walk over the
// window finds: sent, unacked, not pending a go-back-N resend, not out of
// the network.
func TestOldestInFlightIsTheWindowWalk(t *testing.T) {
	walk := func(tr *Transfer) (time.Duration, bool) {
		var at time.Duration
		ok := false
		for i := tr.una; i < tr.next; i++ {
			if tr.isAcked(i) || tr.pending(i) || tr.isOut(i) {
				continue
			}
			if !ok || tr.pkt(i).lastSent < at {
				at, ok = tr.pkt(i).lastSent, true
			}
		}
		return at, ok
	}
	for _, mode := range []Mode{MRC, RoCE} {
		rng := rand.New(rand.NewPCG(7, uint64(mode)))
		// A slow NIC (Config.NICRate) holds a go-back-N round's resends
		// back: its packets stay pending across the checks.
		clk := &testClock{t: time.Unix(1_000_000, 0)}
		e, err := New(Config{Addr: addrA, Clock: clk, NICRate: 1e8})
		if err != nil {
			t.Fatal(err)
		}
		q, err := e.OpenQP(QPConfig{Mode: mode, Segment: 16, Window: 16, LocalQPN: qpnA, PeerQPN: qpnB, Peer: addrB})
		if err != nil {
			t.Fatal(err)
		}
		var tr *Transfer
		var nic *refNIC
		var inNetwork []int // packets sent whose fate is not decided yet
		checks, pendingSeen, outSeen := 0, 0, 0
		for step := 0; step < 4000; step++ {
			if tr == nil || tr.isComplete {
				var err error
				if tr, err = q.Write(WriteRequest{Data: make([]byte, 16*200), RKey: 1}); err != nil {
					t.Fatal(err)
				}
				nic, inNetwork = newRefNIC(tr.StartPSN()), nil
			}
			pick := func() (int, bool) {
				if len(inNetwork) == 0 {
					return 0, false
				}
				k := rng.IntN(len(inNetwork))
				i := inNetwork[k]
				inNetwork = append(inNetwork[:k], inNetwork[k+1:]...)
				return i, true
			}
			switch a := rng.IntN(10); {
			case a < 5:
				if i, ok := pick(); ok {
					handle(t, e, nic.deliver(t, i))
				}
			case a < 7:
				if i, ok := pick(); ok {
					handle(t, e, nackFrame(t, PSNAdd(tr.StartPSN(), i), mrcpkt.NACKTrimmed))
				}
			case a < 8:
				pick() // lost
			default:
				clk.advance(time.Duration(rng.IntN(300)) * time.Microsecond)
				e.HandleTimers()
			}
			for _, s := range takeSent(t, e) {
				inNetwork = append(inNetwork, int(PSNDiff(s.psn, tr.StartPSN())))
			}
			e.mu.Lock()
			want, wantOK := walk(tr)
			i, ok := tr.oldestInFlight()
			if tr.rsNext < tr.rsEnd {
				pendingSeen++
			}
			if tr.nOut > 0 {
				outSeen++
			}
			e.mu.Unlock()
			if ok != wantOK || ok && tr.pkt(i).lastSent != want {
				t.Fatalf("%v, step %d: oldest in flight: packet %d (sent %v) %v, the window walk: %v %v", mode, step, i, tr.pkt(i).lastSent, ok, want, wantOK)
			}
			checks++
		}
		t.Logf("%v: %d checks, %d with a go-back-N round pending, %d with trimmed packets out", mode, checks, pendingSeen, outSeen)
		if mode == RoCE && pendingSeen == 0 || mode == MRC && outSeen == 0 {
			t.Errorf("%v: the walk never saw a pending or out packet: the test does not cover what it is for", mode)
		}
	}
}
