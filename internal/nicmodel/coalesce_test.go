package nicmodel

import (
	"math/rand/v2"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// middleFrame is a data packet in the middle of a write (no RETH, no ack
// request): the kind a receiver may answer later, coalesced.
func middleFrame(t testing.TB, p *plan.Plan, from, to plan.Host, dstQP, psn uint32) []byte {
	t.Helper()
	f, err := mrcpkt.DataPacket(mrcpkt.DataOptions{
		Src: p.HostAddr(from), Dst: p.HostAddr(to), DSCP: uint8(p.F.DSCP.Trimmable), ECN: mrcpkt.ECNECT0,
		SrcPort: 0xbeef,
		BTH:     mrcpkt.BTH{Opcode: mrcpkt.OpWriteMiddle, DstQP: dstQP, PSN: psn},
		Payload: make([]byte, 64),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCoalescingEchoesEverySlot: with SACKs coalesced (tiny: ack_every
// A = 3, 16 slots), an ordinary packet (in order, or new beyond a hole
// already there) is answered when its PSN modulo A is A - 1, whatever
// order the packets arrive in; so among any A consecutive sends on one slot (PSNs a set
// size apart, coprime with A) one is answered at once, and its SACK
// echoes the slot's EV. Path-failure detection counts on it (K's rule,
// protocol.md 4): an arrival-counting rule echoes slots at random once
// the paths reorder packets, and retires healthy ones. In order, exactly
// one packet in A is answered.
func TestCoalescingEchoesEverySlot(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	for _, order := range []string{"in order", "one path late", "shuffled"} {
		t.Run(order, func(t *testing.T) {
			p, nics := tinyNICs(t, a, b)
			src, dst := nics[0], nics[1]
			ack := p.F.AckEvery
			set := p.F.EV.SetSize
			if ack < 2 || set%ack == 0 {
				t.Fatalf("tiny's ack_every %d and set size %d: the test needs coalescing, coprime", ack, set)
			}
			const start = 1000
			// ack + 1 passes: fewer than K sends on every slot (no echo
			// goes back to src, so none may be retired).
			passes := ack + 1
			if passes >= p.F.Failover.UnansweredSends {
				t.Fatalf("K %d leaves no room for %d passes", p.F.Failover.UnansweredSends, passes)
			}
			openPair(t, p, src, dst, a, b, 0x11, 0x22, start, false)
			type sent struct {
				psn   uint32
				frame []byte
			}
			var out []sent
			evOf := map[uint32]uint32{} // PSN -> EV
			for i := range passes * set {
				psn := uint32(start + i)
				fs := src.Process(0, middleFrame(t, p, a, b, 0x22, psn))
				if len(fs) != 1 {
					t.Fatalf("PSN %d: %d frames out", psn, len(fs))
				}
				f := fs[0].AppendTo(nil)
				pk, err := mrcpkt.Parse(f)
				if err != nil {
					t.Fatal(err)
				}
				ev, _ := mrcpkt.EV(pk)
				evOf[psn] = ev
				out = append(out, sent{psn, through(f)})
			}
			switch order {
			case "one path late":
				// The second-last slot's path is a little slower: its
				// packet arrives after the next one, every pass. Each
				// pass then answers those two at once and starts the
				// in-order run afresh at slot 0: counting arrivals would
				// echo the same slots every pass and never the others.
				for lo := 0; lo+set <= len(out); lo += set {
					out[lo+set-2], out[lo+set-1] = out[lo+set-1], out[lo+set-2]
				}
			case "shuffled":
				// Within each window of 64 (the receive window), any order.
				rng := rand.New(rand.NewPCG(7, uint64(set)))
				for lo := 0; lo < len(out); lo += 64 {
					w := out[lo:min(lo+64, len(out))]
					rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
				}
			}
			answered := map[uint32]bool{} // PSN -> its SACK went at once
			for _, s := range out {
				pk, _ := mrcpkt.Parse(s.frame)
				for _, o := range dst.Process(uint32(p.SplitEV(plan.EV(evOf[s.psn])).Plane+1), s.frame) {
					r, err := mrcpkt.Parse(o.AppendTo(nil))
					if err != nil || r.SETH == nil {
						continue
					}
					if r.BTH.PSN != pk.BTH.PSN || r.SETH.EV != evOf[s.psn] {
						t.Fatalf("SACK for PSN %d echoes PSN %d EV %#x, want EV %#x", s.psn, r.BTH.PSN, r.SETH.EV, evOf[s.psn])
					}
					answered[s.psn] = true
				}
			}
			// Slot j's sends are PSNs start+j, start+j+set, ...: any A in a
			// row must hold one answered.
			for j := range set {
				for k := 0; k+ack <= passes; k++ {
					hit := false
					for m := k; m < k+ack; m++ {
						psn := uint32(start + j + m*set)
						if evOf[psn] != evOf[uint32(start+j)] {
							t.Fatalf("PSN %d took EV %#x, slot %d's first took %#x: the rotation moved", psn, evOf[psn], j, evOf[uint32(start+j)])
						}
						hit = hit || answered[psn]
					}
					if !hit {
						t.Errorf("slot %d: sends %d..%d (of %d) all answered late: its EV was not echoed in %d passes", j, k, k+ack-1, passes, ack)
					}
				}
			}
			total := passes * set
			t.Logf("%s: %d of %d packets answered at once", order, len(answered), total)
			if order == "shuffled" && len(answered) >= total*3/4 {
				// Beyond a hole already reported, a packet is coalesced as an
				// in-order one is: spraying reorders most packets. With a
				// window wider than one bitmap (tiny's 256), one whose
				// answering PSN came first is answered at once too: 43 of
				// 64 here, against 3 in 4 were every packet beyond a hole
				// answered.
				t.Errorf("shuffled: %d of %d packets answered at once, want coalescing to answer under three quarters", len(answered), total)
			}
			if order == "in order" {
				// Last packet of the run aside, exactly the PSNs = A-1 mod A.
				want := 0
				for i := range total {
					if (start+i)%ack == ack-1 {
						want++
					}
				}
				if len(answered) != want || dst.Event(schema.NICEventAckCoalesced) != uint64(total-want) {
					t.Errorf("in order: %d of %d answered at once, %d coalesced; want %d and %d", len(answered), total, dst.Event(schema.NICEventAckCoalesced), want, total-want)
				}
			}
		})
	}
}
