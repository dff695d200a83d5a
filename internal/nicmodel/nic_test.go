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
