package nicmodel

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// tinyNICs returns the NICs of tiny's hosts h (sharing their common
// tables), loaded from the table generator the build writes from.
func tinyNICs(t testing.TB, hosts ...plan.Host) (*plan.Plan, []*NIC) {
	t.Helper()
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return nicsOf(t, f, hosts...)
}

// nicsOf returns the NICs of f's hosts h, as tinyNICs does.
func nicsOf(t testing.TB, f *fabric.Fabric, hosts ...plan.Host) (*plan.Plan, []*NIC) {
	t.Helper()
	p := plan.New(f)
	g := tables.NewGenerator(p)
	common := NewCommon(f)
	for _, e := range g.NICCommonEntries() {
		if err := common.Write(Insert, e); err != nil {
			t.Fatal(err)
		}
	}
	var nics []*NIC
	for _, h := range hosts {
		n, err := New(f, common)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.WriteAll(Insert, g.NICEntries(h, nil)...); err != nil {
			t.Fatal(err)
		}
		for _, cs := range schema.NICCloneSessions(f) {
			n.SetCloneSession(cs)
		}
		nics = append(nics, n)
	}
	return p, nics
}

// openPair opens QP aQP on a (peer b's bQP) and bQP on b, index 1, epoch 1.
func openPair(t testing.TB, p *plan.Plan, a, b *NIC, ha, hb plan.Host, aQP, bQP uint32, start uint32, single bool) {
	t.Helper()
	if err := a.OpenQP(qpentry.QP{Local: aQP, Peer: p.HostAddr(hb), PeerQP: bQP, Index: 1, Epoch: 1, StartPSN: start, SinglePath: single}); err != nil {
		t.Fatal(err)
	}
	if err := b.OpenQP(qpentry.QP{Local: bQP, Peer: p.HostAddr(ha), PeerQP: aQP, Index: 1, Epoch: 1, StartPSN: start, SinglePath: single}); err != nil {
		t.Fatal(err)
	}
}

func dataFrame(t testing.TB, p *plan.Plan, from, to plan.Host, dstQP, psn uint32, payload int) []byte {
	t.Helper()
	pl := make([]byte, payload)
	for i := range pl {
		pl[i] = byte(psn) + byte(i)
	}
	f, err := mrcpkt.DataPacket(mrcpkt.DataOptions{
		Src: p.HostAddr(from), Dst: p.HostAddr(to), DSCP: uint8(p.F.DSCP.Trimmable), ECN: mrcpkt.ECNECT0,
		SrcPort: 0xbeef,
		BTH:     mrcpkt.BTH{Opcode: mrcpkt.OpWriteOnly, DstQP: dstQP, PSN: psn, AckReq: true},
		RETH:    mrcpkt.RETH{VAddr: uint64(psn) * uint64(payload), RKey: 0x1234, DMALen: uint32(payload)},
		Payload: pl,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// through carries an encapsulated frame over the fabric as the switches
// would: each uN consumed (hop limit decremented) until the carrier holds
// only the destination's uDL.
func through(frame []byte) []byte {
	f := append([]byte(nil), frame...)
	dst := f[14+24 : 14+40]
	for dst[6] != 0 || dst[7] != 0 { // more than one uSID left
		copy(dst[4:], dst[6:])
		dst[14], dst[15] = 0, 0
		f[14+7]--
	}
	return f
}

func one(t *testing.T, out []Frame, port uint32) []byte {
	t.Helper()
	for _, o := range out {
		if o.Port == port {
			return o.AppendTo(nil)
		}
	}
	t.Fatalf("no frame on port %d among %d", port, len(out))
	return nil
}

// TestWorkedExample follows docs/protocol.md's worked example through two
// model NICs: nic-0's third packet to nic-3 takes slot 2 (EV 0x00040002,
// plane 0, T1 1) with the carrier fcbb:bb00:400:801:401:c01::; nic-3 hands
// its host the inner packet and answers with a SACK, which nic-0 hands its
// host.
func TestWorkedExample(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	p, nics := tinyNICs(t, a, b)
	src, dst := nics[0], nics[1]
	openPair(t, p, src, dst, a, b, 0x11, 0x22, 100, false)

	var sent []byte
	for psn := uint32(100); psn < 103; psn++ {
		out := src.Process(0, dataFrame(t, p, a, b, 0x22, psn, 64))
		if len(out) != 1 {
			t.Fatalf("PSN %d: %d frames out", psn, len(out))
		}
		sent = out[0].AppendTo(nil)
		if psn == 102 && out[0].Port != 1 {
			t.Errorf("slot 2 left on port %d, want 1 (plane 0)", out[0].Port)
		}
	}
	pk, err := mrcpkt.Parse(sent)
	if err != nil {
		t.Fatal(err)
	}
	if want := netip.MustParseAddr("fcbb:bb00:400:801:401:c01::"); pk.Outer.Dst != want {
		t.Errorf("carrier %v, want %v", pk.Outer.Dst, want)
	}
	if ev, _ := mrcpkt.EV(pk); ev != 0x00040002 || pk.Outer.ECN != mrcpkt.ECNECT0 || pk.Outer.HopLimit != 64 {
		t.Errorf("EV %#x, outer ECN %d, hop limit %d", ev, pk.Outer.ECN, pk.Outer.HopLimit)
	}

	arriving := through(sent)
	if arriving[14+7] != 61 {
		t.Errorf("hop limit on arrival %d, want 61", arriving[14+7])
	}
	out := dst.Process(1, arriving)
	if len(out) != 2 {
		t.Fatalf("destination emitted %d frames, want the host's and the SACK", len(out))
	}
	host := one(t, out, 0)
	want := dataFrame(t, p, a, b, 0x22, 102, 64)
	binary.BigEndian.PutUint16(want[54:], 0x0004) // UDP source port: EV[31:16]
	if !bytes.Equal(host, want) {
		t.Errorf("host got\n%x\nwant\n%x", host, want)
	}
	sack, err := mrcpkt.Parse(one(t, out, 1))
	if err != nil {
		t.Fatal(err)
	}
	// PSNs 100 and 101 never reached nic-3: cum 99, bit 2 (102) set.
	if s := sack.SETH; s == nil || s.CumPSN != 99 || s.BasePSN != 100 || s.Bitmap != 1<<2 || s.EV != 0x00040002 ||
		sack.BTH.DstQP != 0x11 || sack.BTH.PSN != 102 || sack.Outer.Dst != netip.MustParseAddr("fcbb:bb00:401:801:400:c00::") {
		t.Errorf("SACK %+v %+v to %v", sack.BTH, sack.SETH, sack.Outer.Dst)
	}
	back := src.Process(1, through(one(t, out, 1)))
	if len(back) != 1 || back[0].Port != 0 {
		t.Fatalf("source emitted %+v for the SACK, want one frame to its host", back)
	}
	if src.Event(schema.NICEventAckRx) != 1 || dst.Event(schema.NICEventAckSent) != 1 || dst.Event(schema.NICEventDataDelivered) != 1 ||
		src.Event(schema.NICEventDataSent) != 3 {
		t.Errorf("counters: src %v dst %v", src.Counters().Events, dst.Counters().Events)
	}
}

// sack builds the SACK b sends back to a for the data frame d (as it comes
// out of a's rotation), with mark, arriving at a on the data's plane.
func sackFor(t *testing.T, p *plan.Plan, d []byte, mark uint8) (uint32, []byte) {
	t.Helper()
	pk, err := mrcpkt.Parse(d)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := mrcpkt.EV(pk)
	f := p.SplitEV(plan.EV(ev))
	src, _ := p.HostOfAddr(pk.Inner.Src)
	s := &mrcpkt.Packet{
		Outer: &mrcpkt.IPv6{Src: pk.Inner.Dst, Dst: p.NICPortSID(f.Plane, src), DSCP: uint8(p.F.DSCP.Control), FlowLabel: ev & 0xffff, HopLimit: 61},
		Inner: mrcpkt.IPv6{Src: pk.Inner.Dst, Dst: pk.Inner.Src, DSCP: uint8(p.F.DSCP.Control), HopLimit: 64},
		UDP:   mrcpkt.UDP{SrcPort: uint16(ev >> 16), DstPort: mrcpkt.PortRoCEv2},
		BTH:   mrcpkt.BTH{Opcode: mrcpkt.OpSACK, DstQP: 0x11, PSN: pk.BTH.PSN},
		SETH:  &mrcpkt.SETH{CumPSN: pk.BTH.PSN, Mark: mark, BasePSN: pk.BTH.PSN + 1, EV: ev},
	}
	if err := s.FixLengths(); err != nil {
		t.Fatal(err)
	}
	b, err := mrcpkt.Serialize(s)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(f.Plane + 1), b
}

// TestSinglePathIgnoresEVState: a single-path QP (the RoCE baseline) has
// no EV state (docs/protocol.md 4): a SKIP_ONCE SACK does not mark its
// slot (nothing counted, the next packet takes the same EV), and the
// controller draining its EV does not move it either: it keeps sending on
// it, as a RoCE flow does until routing moves it (by a new T1 offset).
func TestSinglePathIgnoresEVState(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	p, nics := tinyNICs(t, a, b)
	src := nics[0]
	openPair(t, p, src, nics[1], a, b, 0x11, 0x22, 0, true)
	first := src.Process(0, dataFrame(t, p, a, b, 0x22, 0, 64))
	if len(first) != 1 {
		t.Fatalf("%d frames", len(first))
	}
	d0 := first[0].AppendTo(nil)
	port, s := sackFor(t, p, d0, mrcpkt.MarkSkipOnce)
	if out := src.Process(port, s); len(out) != 1 || out[0].Port != 0 {
		t.Fatalf("the SACK: %+v", out)
	}
	// Drain its EV: every EV of its (plane, T1).
	pk, _ := mrcpkt.Parse(d0)
	ev, _ := mrcpkt.EV(pk)
	mask := uint32(p.MakeEV(plan.EVFields{Plane: 15, T1: 1023}))
	drain, err := qpentry.Make(src.Program(), schema.NICEVState, "ev_denied", []entry.Match{{Value: uint64(ev & mask), Mask: uint64(mask)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Write(Insert, drain); err != nil {
		t.Fatal(err)
	}
	for psn := uint32(1); psn < 20; psn++ {
		out := src.Process(0, dataFrame(t, p, a, b, 0x22, psn, 64))
		if len(out) != 1 || out[0].Port != first[0].Port {
			t.Fatalf("PSN %d: %+v", psn, out)
		}
		q, _ := mrcpkt.Parse(out[0].AppendTo(nil))
		if e, _ := mrcpkt.EV(q); e != ev {
			t.Fatalf("PSN %d took EV %#x, the QP's one EV is %#x", psn, e, ev)
		}
	}
	for _, e := range []int{schema.NICEventSkipSet, schema.NICEventSkipTaken, schema.NICEventBadTaken, schema.NICEventNoEV} {
		if n := src.Event(e); n != 0 {
			t.Errorf("event %d counted %d times for a single-path QP", e, n)
		}
	}
	if n := src.Event(schema.NICEventDataSent); n != 20 {
		t.Errorf("%d data packets sent, want 20", n)
	}
}

// TestBadQPEntries: entries out of range, written past qpentry's checks,
// make their packets a counted drop before any register is touched.
func TestBadQPEntries(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	p, nics := tinyNICs(t, a, b)
	n := nics[0]
	host := uint64(binary.BigEndian.Uint32(p.HostAddr(b).AsSlice()[12:]))
	for i, params := range [][]uint64{
		{schema.NICMaxQPs, 0, 1, 0, 0},                           // state index past the registers
		{3, uint64(p.F.T1Count), 1, 0, 0},                        // T1 offset = the T1 count
		{3, 0, 1, 1, uint64(p.F.EV.SetSize)},                     // first slot past the set
		{schema.NICMaxQPs + 7, uint64(2 * p.F.T1Count), 1, 1, 0}, // all at once
	} {
		qpn := uint64(0x40 + i)
		e, err := qpentry.Make(n.Program(), schema.NICQPSend, schema.NICSetSendQPAction, []entry.Match{{Value: host}, {Value: qpn}}, params...)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Write(Insert, e); err != nil {
			t.Fatal(err)
		}
		if out := n.Process(0, dataFrame(t, p, a, b, uint32(qpn), 1, 64)); len(out) != 0 {
			t.Errorf("entry %v: %d frames out", params, len(out))
		}
	}
	if got := n.Event(schema.NICEventBadQPEntry); got != 4 {
		t.Errorf("%d bad-entry drops, want 4", got)
	}
	for i, r := range n.regs {
		if r != nil {
			t.Errorf("register words of QP %d written", i)
		}
	}
}

// Consistent catches each kind of disagreement between the counters.
func TestCountersConsistent(t *testing.T) {
	good := func() *Counters {
		c := &Counters{SlotTx: []uint64{2, 1}, SlotBackupTx: []uint64{1, 0}, SlotFailed: []uint64{0, 1}}
		c.PlaneTx[0], c.PlaneTx[1] = 1, 2
		c.Events[schema.NICEventDataSent] = 3
		c.Events[schema.NICEventBackupTaken] = 1
		c.Events[schema.NICEventPathFailed] = 1
		return c
	}
	if err := good().Consistent(); err != nil {
		t.Fatalf("consistent counters: %v", err)
	}
	for name, spoil := range map[string]func(*Counters){
		"plane":  func(c *Counters) { c.PlaneTx[1]++ },
		"slot":   func(c *Counters) { c.SlotTx[0]++ },
		"backup": func(c *Counters) { c.SlotBackupTx[1]++ },
		"failed": func(c *Counters) { c.SlotFailed[0]++ },
		"event":  func(c *Counters) { c.Events[schema.NICEventDataSent]++ },
	} {
		c := good()
		spoil(c)
		if c.Consistent() == nil {
			t.Errorf("%s count off by one: no error", name)
		}
	}
}

// A resend flagged METH LOST fails the slot that carried the lost copy at
// that slot's next turn, without its K passes: tiny's 16 slots carry PSNs
// 100-115, the resend of 103 (slot 3's) goes on slot 0, and the next packet
// on slot 3 already takes its backup EV. A LOST resend of a PSN the NIC has
// no record of, a resend without LOST and a single-path QP change nothing.
func TestLossReportFailsTheSlot(t *testing.T) {
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	send := func(t *testing.T, n *NIC, p *plan.Plan, psn uint32, meth uint8) uint32 {
		t.Helper()
		f := dataFrame(t, p, a, b, 0x22, psn, 64)
		f[mrcpkt.EthernetLen+mrcpkt.IPv6Len+mrcpkt.UDPLen+mrcpkt.BTHLen] = meth
		out := n.Process(0, f)
		if len(out) != 1 || out[0].Port == 0 {
			t.Fatalf("PSN %d: %d frames out, want one on a plane port", psn, len(out))
		}
		pk, err := mrcpkt.Parse(out[0].AppendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := mrcpkt.EV(pk)
		return ev
	}
	events := func(n *NIC) (reported, failed, backup uint64) {
		e := n.Counters().Events
		return e[schema.NICEventLossReported], e[schema.NICEventPathFailed], e[schema.NICEventBackupTaken]
	}

	t.Run("multipath", func(t *testing.T) {
		p, nics := tinyNICs(t, a, b)
		src := nics[0]
		openPair(t, p, src, nics[1], a, b, 0x11, 0x22, 100, false)
		evs := map[uint32]uint32{}
		for psn := uint32(100); psn < 116; psn++ {
			evs[psn] = send(t, src, p, psn, 0)
		}
		send(t, src, p, 50, mrcpkt.METHRetransmission|mrcpkt.METHLost)  // never sent: slot 0
		send(t, src, p, 101, mrcpkt.METHRetransmission)                 // not LOST: slot 1
		send(t, src, p, 103, mrcpkt.METHRetransmission|mrcpkt.METHLost) // slot 2; names slot 3
		if r, f, _ := events(src); r != 1 || f != 0 {
			t.Fatalf("after the LOST resend: %d losses reported, %d paths failed; want 1 and 0 (slot 3 fails at its turn)", r, f)
		}
		ev := send(t, src, p, 116, 0) // slot 3
		if r, f, bk := events(src); r != 1 || f != 1 || bk != 1 || ev == evs[103] {
			t.Errorf("slot 3's next packet: reported %d, failed %d, backup sends %d, EV %#x (the lost copy's %#x); want 1, 1, 1 and another EV",
				r, f, bk, ev, evs[103])
		}
	})
	t.Run("single path", func(t *testing.T) {
		p, nics := tinyNICs(t, a, b)
		src := nics[0]
		openPair(t, p, src, nics[1], a, b, 0x11, 0x22, 100, true)
		for psn := uint32(100); psn < 104; psn++ {
			send(t, src, p, psn, 0)
		}
		send(t, src, p, 102, mrcpkt.METHRetransmission|mrcpkt.METHLost)
		send(t, src, p, 104, 0)
		if r, f, _ := events(src); r != 0 || f != 0 {
			t.Errorf("single-path QP: %d losses reported, %d paths failed; want none", r, f)
		}
	})
}

// TestSharedScratch: two NICs working in one Scratch emit, frame by frame,
// what two NICs with their own emit, as long as each call's frames are
// read before the next call (of either NIC).
func TestSharedScratch(t *testing.T) {
	a, d := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	run := func(share bool) [][]byte {
		p, nics := tinyNICs(t, a, d)
		if share {
			s := NewScratch()
			nics[0].ShareScratch(s)
			nics[1].ShareScratch(s)
		}
		openPair(t, p, nics[0], nics[1], a, d, 0x11, 0x22, 0, false)
		var got [][]byte
		keep := func(out []Frame) {
			for _, o := range out {
				got = append(got, append([]byte{byte(o.Port)}, o.AppendTo(nil)...))
			}
		}
		for psn := uint32(0); psn < 2*uint32(p.F.EV.SetSize); psn++ {
			out := nics[0].Process(0, dataFrame(t, p, a, d, 0x22, psn, 512))
			keep(out)
			if len(out) == 0 {
				continue
			}
			in := nics[1].Process(out[0].Port, through(out[0].AppendTo(nil)))
			keep(in)
			for _, o := range in {
				if o.Port != 0 {
					keep(nics[0].Process(o.Port, through(o.AppendTo(nil))))
				}
			}
		}
		return got
	}
	own, shared := run(false), run(true)
	if len(own) == 0 || len(own) != len(shared) {
		t.Fatalf("own scratch: %d frames, shared: %d", len(own), len(shared))
	}
	for i := range own {
		if !bytes.Equal(own[i], shared[i]) {
			t.Fatalf("frame %d differs with a shared scratch", i)
		}
	}
}
