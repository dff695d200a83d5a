package bmv2tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// TestECN checks ECN end to end (RFC 3168, RFC 6040): the sending NIC puts
// ECT(0) in the outer header of data and Not-ECT in its answers; a switch
// marks a data packet CE on a queue past the ECN threshold only when it is
// ECN-capable; the receiving NIC carries CE into the inner header, answers
// it with a SACK marked SKIP_ONCE, and drops (and counts) a CE packet whose
// inner header is Not-ECT.
//
// By construction: the T1 port of one path sends 1 packet/s with an ECN
// threshold of 1 packet, and one rotation of the EV set puts 4 packets on
// it within milliseconds (PSNs 0, 4, 8, 12: slots 0, 4, 8, 12 are plane 0,
// T1 0). PSN 4 waits a second behind PSN 0 at the latest, so PSNs 8 and 12
// find a packet queued and are marked; PSN 12's inner header is Not-ECT.
// A packet put on the link with a Not-ECT outer header right after them
// also finds the queue busy, and must not be marked.
func TestECN(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x000707)
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)

	srcT0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: from.Row})
	t1 := p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: 0})
	dstT0 := p.Name(plan.Switch{Role: plan.RoleT0, Plane: 0, Index: to.Row})
	port, ok := l.Port(t1, dstT0)
	if !ok {
		t.Fatalf("%s has no port to %s", t1, dstT0)
	}
	inPort, ok := l.Port(t1, srcT0)
	if !ok {
		t.Fatalf("%s has no port to %s", t1, srcT0)
	}
	upPort, _ := l.Port(srcT0, t1)
	t1Ctl := control(t, l, t1)
	// ECN threshold 1; the trim threshold out of reach.
	setThresholds(t, l, t1Ctl, 0, 1<<19-1, 1)
	t.Cleanup(func() { restoreThresholds(t, l, t1Ctl, 0) })
	if err := l.SetQueueRate(ctxFor(t, 10*time.Second), t1, port, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.SetQueueRate(context.Background(), t1, port, 0); err != nil {
			t.Errorf("restore queue rate: %v", err)
		}
	})
	evBefore := nicEvents(t, dstCtl)

	n := uint32(f.EV.SetSize)
	const notECT, mustMark = 12, 8
	for psn := uint32(0); psn < n; psn++ {
		ecn := mrcpkt.ECNECT0
		if psn == notECT {
			ecn = mrcpkt.ECNNotECT
		}
		if err := l.SendFromHost(fl.src, fl.frameWith(psn, fl.dscp, ecn)); err != nil {
			t.Fatal(err)
		}
	}
	// Right behind them, on the same link: a data packet whose outer
	// header is Not-ECT, as srcT0 would pass it on (carrier shifted once).
	// Its PSN lies within the receive window above the hole PSN 12 leaves.
	const injected = 20
	ev := p.MakeEV(plan.EVFields{Plane: 0, T1: 0, Salt: 0})
	tracer, err := verify.NewTracer(p, l.Build)
	if err != nil {
		t.Fatal(err)
	}
	usids, err := tracer.Carrier(from, to, ev)
	if err != nil {
		t.Fatal(err)
	}
	var da [16]byte
	binary.BigEndian.PutUint32(da[0:4], f.Block)
	for i, u := range usids[1:] {
		binary.BigEndian.PutUint16(da[4+2*i:], u)
	}
	pkt, err := mrcpkt.NewData(mrcpkt.DataOptions{
		Src: p.HostAddr(from), Dst: p.HostAddr(to), DSCP: fl.dscp, ECN: mrcpkt.ECNECT0, SrcPort: uint16(uint32(ev) >> 16),
		BTH:  mrcpkt.BTH{Opcode: mrcpkt.OpWriteOnly, DstQP: fl.qp, PSN: injected, AckReq: true},
		RETH: mrcpkt.RETH{DMALen: 4}, Payload: []byte{1, 2, 3, 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	pkt.Outer = &mrcpkt.IPv6{Src: p.HostAddr(from), Dst: netip.AddrFrom16(da), DSCP: fl.dscp, ECN: mrcpkt.ECNNotECT,
		FlowLabel: uint32(ev) & 0xffff, HopLimit: mrcpkt.HopLimit - 1}
	if err := pkt.FixLengths(); err != nil {
		t.Fatal(err)
	}
	frame, err := mrcpkt.Serialize(pkt)
	if err != nil {
		t.Fatal(err)
	}
	// Once srcT0 has passed PSN 8 on, PSN 4 is in t1's queue (the link is
	// FIFO), where it waits a second: the injected packet finds it there.
	waitFor(t, 10*time.Second, srcT0+" did not pass PSN 8 on", func() bool {
		for _, fr := range l.Trace() {
			if fr.Device == srcT0 && fr.Port == upPort {
				if pk, err := mrcpkt.Parse(fr.Data); err == nil && pk.BTH.DstQP == fl.qp && pk.BTH.PSN == mustMark {
					return true
				}
			}
		}
		return false
	})
	if err := l.Inject(t1, inPort, frame); err != nil {
		t.Fatal(err)
	}

	// Everything but the Not-ECT packet (n-1) and the injected one arrive.
	var data []parsed
	waitFor(t, 30*time.Second, "not every packet was delivered", func() bool {
		data = only(parseAll(t, l.HostFrames(fl.dst)), mrcpkt.IsData)
		return len(data) == int(n)
	})
	waitFor(t, 10*time.Second, "the CE packet with a Not-ECT inner header was not counted", func() bool {
		return nicEvents(t, dstCtl)[schema.NICEventCENotECT]-evBefore[schema.NICEventCENotECT] == 1
	})
	sacks, err := waitOpcode(l, fl.src, isSACK, int(n))
	if err != nil {
		t.Fatal(err)
	}
	mark := map[uint32]uint8{}
	for _, s := range sacks {
		checkSACK(t, s)
		mark[s.pkt.BTH.PSN] = s.pkt.SETH.Mark
	}

	ce := 0
	for _, d := range data {
		psn := d.pkt.BTH.PSN
		if psn == notECT {
			t.Errorf("PSN %d (CE over a Not-ECT inner header) was delivered", psn)
			continue
		}
		ecn := d.pkt.Inner.ECN
		if psn == injected {
			if ecn != mrcpkt.ECNECT0 || mark[psn] != mrcpkt.MarkNone {
				t.Errorf("Not-ECT outer: delivered inner ECN %d, SACK mark %d; want ECT(0) (not marked), no mark", ecn, mark[psn])
			}
			continue
		}
		switch {
		case ecn == mrcpkt.ECNCE:
			ce++
			if mark[psn] != mrcpkt.MarkSkipOnce {
				t.Errorf("PSN %d arrived CE but its SACK's mark is %d, not SKIP_ONCE", psn, mark[psn])
			}
		case ecn == mrcpkt.ECNECT0:
			if mark[psn] != mrcpkt.MarkNone {
				t.Errorf("PSN %d arrived unmarked but its SACK's mark is %d", psn, mark[psn])
			}
		default:
			t.Errorf("PSN %d arrived with inner ECN %d", psn, ecn)
		}
		if psn == mustMark && ecn != mrcpkt.ECNCE {
			t.Errorf("PSN %d found the queue busy but arrived with inner ECN %d, not CE", psn, ecn)
		}
		// The rest of the inner packet is byte for byte what the host sent.
		inner, err := mrcpkt.InnerBytes(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		sent, _ := mrcpkt.InnerBytes(fl.frame(psn))
		binary.BigEndian.PutUint16(sent[40:42], d.pkt.UDP.SrcPort)
		sent[1] = sent[1]&^0x30 | ecn<<4
		if !bytes.Equal(inner, sent) {
			t.Errorf("PSN %d: inner packet differs from what was sent beyond its ECN bits:\n got %x\nwant %x", psn, inner, sent)
		}
	}

	// On the wire: the NICs' data leaves ECT(0), their answers Not-ECT; the
	// switch marked the injected Not-ECT packet nothing.
	for _, fr := range l.Trace() {
		d := l.Devices[fr.Device]
		pk, err := mrcpkt.Parse(fr.Data)
		if err != nil || pk.Outer == nil || pk.BTH.DstQP != fl.qp {
			continue
		}
		switch {
		case d.Role == plan.RoleNIC.String() && mrcpkt.IsData(pk.BTH.Opcode) && pk.Outer.ECN != mrcpkt.ECNECT0:
			t.Errorf("%s sent PSN %d with outer ECN %d, want ECT(0)", fr.Device, pk.BTH.PSN, pk.Outer.ECN)
		case d.Role == plan.RoleNIC.String() && !mrcpkt.IsData(pk.BTH.Opcode) && pk.Outer.ECN != mrcpkt.ECNNotECT:
			t.Errorf("%s sent an answer (opcode %#x) with outer ECN %d, want Not-ECT", fr.Device, pk.BTH.Opcode, pk.Outer.ECN)
		case fr.Device == t1 && pk.BTH.PSN == injected && pk.Outer.ECN != mrcpkt.ECNNotECT:
			t.Errorf("%s marked a Not-ECT packet: outer ECN %d", t1, pk.Outer.ECN)
		}
	}
	t.Logf("ecn: %d of %d ECT(0) packets arrived CE (SACK SKIP_ONCE), the Not-ECT-inner CE packet was dropped and counted, the Not-ECT-outer packet was not marked",
		ce, n-1)
}

// TestNoPathCounted sends data to a host that does not exist (a T0 row the
// fabric does not have): the NIC's egress finds no row template and drops
// it, and counts it as EV_NO_PATH, not as sent (DATA_SENT, plane_tx,
// slot_tx are counted once egress has routed a packet).
func TestNoPathCounted(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	from := plan.Host{Row: 0, Port: 1}
	fl := newFlow(l, from, plan.Host{Row: 1, Port: 0}, 0x000808)
	fl.to = plan.Host{Row: f.T0Count, Port: 0} // no such row
	srcCtl := control(t, l, fl.src)
	dstCtl := control(t, l, fl.dst)
	openQPs(t, srcCtl, dstCtl, fl, 0)
	read := func(name string) []int64 {
		t.Helper()
		c, err := srcCtl.Counters(ctxFor(t, 10*time.Second), name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	evBefore, planeBefore, slotBefore := read(schema.NICEventCounter), read(schema.NICPlaneTx), read(schema.NICSlotTx)
	if err := l.SendFromHost(fl.src, fl.frame(0)); err != nil {
		t.Fatal(err)
	}
	var ev []int64
	waitFor(t, 10*time.Second, "no EV_NO_PATH counted for data to a row with no template", func() bool {
		ev = read(schema.NICEventCounter)
		return ev[schema.NICEventNoPath]-evBefore[schema.NICEventNoPath] == 1
	})
	if d := ev[schema.NICEventDataSent] - evBefore[schema.NICEventDataSent]; d != 0 {
		t.Errorf("DATA_SENT counted %d for a packet egress dropped", d)
	}
	for i, v := range read(schema.NICPlaneTx) {
		if v != planeBefore[i] {
			t.Errorf("plane_tx[%d] counted %d for a packet egress dropped", i, v-planeBefore[i])
		}
	}
	for i, v := range read(schema.NICSlotTx) {
		if v != slotBefore[i] {
			t.Errorf("slot_tx[%d] counted %d for a packet egress dropped", i, v-slotBefore[i])
		}
	}
	for _, fr := range l.Trace() {
		if fr.Device == fl.src && fr.Port != plan.NICHostPort {
			if pk, err := mrcpkt.Parse(fr.Data); err == nil && pk.BTH.DstQP == fl.qp {
				t.Errorf("%s sent the packet on port %d", fl.src, fr.Port)
			}
		}
	}
	t.Logf("no path: 1 packet to row %d dropped in egress, counted EV_NO_PATH, not sent", f.T0Count)
}
