package transport

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// testClock is a manual clock for unit tests.
type testClock struct{ t time.Time }

func (c *testClock) Now() time.Time                       { return c.t }
func (c *testClock) After(time.Duration) <-chan time.Time { return nil }
func (c *testClock) advance(d time.Duration)              { c.t = c.t.Add(d) }

var (
	addrA = netip.MustParseAddr("fd00:6d72:6300::1")
	addrB = netip.MustParseAddr("fd00:6d72:6300::2")
)

const (
	qpnA = 0x000101
	qpnB = 0x000202
)

// newSender returns an engine on A with one QP to B.
func newSender(t testing.TB, cfg QPConfig) (*Engine, *QP, *testClock) {
	t.Helper()
	return newSenderOn(t, Config{}, cfg)
}

// newSenderOn is newSender with an engine configured as ecfg (its address
// and clock set here).
func newSenderOn(t testing.TB, ecfg Config, cfg QPConfig) (*Engine, *QP, *testClock) {
	t.Helper()
	clk := &testClock{t: time.Unix(1_000_000, 0)}
	ecfg.Addr, ecfg.Clock = addrA, clk
	e, err := New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LocalQPN, cfg.PeerQPN, cfg.Peer = qpnA, qpnB, addrB
	q, err := e.OpenQP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e, q, clk
}

// sent is one data packet the engine queued, as mrcpkt reads it.
type sent struct {
	psn    uint32
	op     uint8
	retx   bool
	ackReq bool
	vaddr  uint64
	dmaLen uint32
}

func takeSent(t testing.TB, e *Engine) []sent {
	t.Helper()
	var out []sent
	for _, f := range e.TakeOutput(nil) {
		p, err := mrcpkt.Parse(f)
		if err != nil {
			t.Fatalf("engine sent a frame mrcpkt cannot parse: %v", err)
		}
		out = append(out, sent{
			psn: p.BTH.PSN, op: p.BTH.Opcode,
			retx:   p.METH.Flags&mrcpkt.METHRetransmission != 0,
			ackReq: p.BTH.AckReq,
			vaddr:  p.RETH.VAddr, dmaLen: p.RETH.DMALen,
		})
	}
	return out
}

// startWrite starts a write of n bytes on q, drops what it sent at once,
// and returns it with a reference NIC for its PSNs.
func startWrite(t testing.TB, e *Engine, q *QP, n int) (*Transfer, *refNIC) {
	t.Helper()
	tr, err := q.Write(WriteRequest{Data: make([]byte, n), RKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	takeSent(t, e)
	return tr, newRefNIC(tr.StartPSN())
}

func psns(s []sent) []uint32 {
	var r []uint32
	for _, x := range s {
		r = append(r, x.psn)
	}
	return r
}

func answer(op uint8, dstQP, psn uint32) *mrcpkt.Packet {
	return &mrcpkt.Packet{
		Inner: mrcpkt.IPv6{Src: addrB, Dst: addrA, DSCP: 46, HopLimit: mrcpkt.HopLimit},
		UDP:   mrcpkt.UDP{SrcPort: 0x1234, DstPort: mrcpkt.PortRoCEv2},
		BTH:   mrcpkt.BTH{Opcode: op, DstQP: dstQP, PSN: psn},
	}
}

func serialize(t testing.TB, p *mrcpkt.Packet) []byte {
	t.Helper()
	if err := p.FixLengths(); err != nil {
		t.Fatal(err)
	}
	f, err := mrcpkt.Serialize(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sackFrame is the SACK a NIC sends for data PSN psn, built by mrcpkt.
func sackFrame(t testing.TB, psn, cum uint32, bitmap uint64) []byte {
	p := answer(mrcpkt.OpSACK, qpnA, psn)
	p.SETH = &mrcpkt.SETH{CumPSN: cum, BasePSN: PSNAdd(cum, 1), Bitmap: bitmap, EV: 0x10000001}
	return serialize(t, p)
}

func nackFrame(t testing.TB, psn uint32, reason uint8) []byte {
	p := answer(mrcpkt.OpNACK, qpnA, psn)
	p.NETH = &mrcpkt.NETH{EV: 0x10000001, PSN: psn, Reason: reason}
	return serialize(t, p)
}

func handle(t testing.TB, e *Engine, f []byte) {
	t.Helper()
	if err := e.HandleFrame(f); err != nil {
		t.Fatal(err)
	}
}

// recvState is a reference receiving NIC for unit tests: expected PSN and
// the arrived set, to build true SACKs.
type refNIC struct {
	start    uint32
	arrived  map[int]bool
	expected int // index of the first missing packet
}

func newRefNIC(start uint32) *refNIC { return &refNIC{start: start, arrived: map[int]bool{}} }

// deliver records packet index i and returns the SACK for it.
func (n *refNIC) deliver(t testing.TB, i int) []byte {
	n.arrived[i] = true
	for n.arrived[n.expected] {
		n.expected++
	}
	var bm uint64
	for b := 1; b < 64; b++ {
		if n.arrived[n.expected+b] {
			bm |= 1 << b
		}
	}
	return sackFrame(t, PSNAdd(n.start, i), PSNAdd(n.start, n.expected-1), bm)
}
