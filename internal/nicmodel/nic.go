package nicmodel

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

const (
	hostPort = 0
	dropPort = 511
)

// Params are the constants the NIC program is generated with: the same
// fabric fields, read by the same names (p4/emit's constants).
type Params struct {
	SetSize         int // ev.set_size: EV_SET_SIZE
	T1Count         int // t1.count: T1_COUNT
	UnansweredSends int // failover.unanswered_sends: K
	ProbePasses     int // failover.probe_passes: N
	MaxTries        int // NICMaxTries
	AckEvery        int // nic.ack_every: ACK_EVERY
	// EV layout: the T1 field is bits [T1Shift+T1Bits-1 : T1Shift], the
	// plane field bits [31 : PlaneShift].
	PlaneShift, T1Shift, T1Bits int
	Block                       uint32 // USID_BLOCK
	DSCPControl, DSCPTrimmed    uint8
	DSCPTrimmedLastHop          uint8
	// ReceiveWindow is nic.window_packets: RX_WINDOW (a power of two, a
	// multiple of 64).
	ReceiveWindow int
}

// ParamsOf returns the parameters of f's NIC program.
func ParamsOf(f *fabric.Fabric) Params {
	return Params{
		SetSize: f.EV.SetSize, T1Count: f.T1Count,
		UnansweredSends: f.Failover.UnansweredSends, ProbePasses: f.Failover.ProbePasses,
		MaxTries: emit.NICMaxTries, AckEvery: f.AckEvery,
		PlaneShift: f.EV.T1Bits + f.EV.SaltBits, T1Shift: f.EV.SaltBits, T1Bits: f.EV.T1Bits,
		Block:       f.Block,
		DSCPControl: uint8(f.DSCP.Control), DSCPTrimmed: uint8(f.DSCP.Trimmed),
		DSCPTrimmedLastHop: uint8(f.DSCP.TrimmedLastHop),
		ReceiveWindow:      f.ReceiveWindow,
	}
}

// Counters are the NIC program's counters, under the program's names.
type Counters struct {
	// Events is the indirect counter events, indexed by schema.NICEvent*.
	Events [schema.NICEventCount]uint64
	// PlaneTx is NicEgress.plane_tx: data packets and bytes per plane.
	PlaneTx      [schema.NICMaxPlanes]uint64
	PlaneTxBytes [schema.NICMaxPlanes]uint64
	// SlotTx, SlotBackupTx and SlotFailed are per EV slot.
	SlotTx, SlotBackupTx, SlotFailed []uint64
}

// Consistent reports whether the counters agree with each other as the
// program counts them: every data packet sent once per plane and once per
// slot, the backup sends and the failed slots as their events.
func (c *Counters) Consistent() error {
	var planes, slots, backups, failed uint64
	for _, v := range c.PlaneTx {
		planes += v
	}
	for i := range c.SlotTx {
		slots += c.SlotTx[i]
		backups += c.SlotBackupTx[i]
		failed += c.SlotFailed[i]
	}
	e := &c.Events
	if planes != e[schema.NICEventDataSent] || slots != planes ||
		backups != e[schema.NICEventBackupTaken] || failed != e[schema.NICEventPathFailed] {
		return fmt.Errorf("counters disagree: data sent %d, per plane %d, per slot %d; on backup %d, per slot %d; failed %d, per slot %d",
			e[schema.NICEventDataSent], planes, slots, e[schema.NICEventBackupTaken], backups, e[schema.NICEventPathFailed], failed)
	}
	return nil
}

// qpRegs are the per-QP register words of one state index: tx_state,
// rx_state, the QP's rx_bitmap words (with rx_bitmap_epoch), its
// slot_state words and its sent_slot words (allocated at the QP's first
// multipath send: a QP that only receives needs none).
type qpRegs struct {
	tx      uint32
	rx      uint64
	bitmap  []uint64
	bmEpoch []uint8
	slots   []uint32
	sent    []uint64
}

// NIC is one NIC pipeline: its tables, registers and counters.
type NIC struct {
	// scratch is where Process works: the NIC's own (made at its first
	// Process), or one it shares. First, with the tables every packet
	// reads, so that they share the NIC's first cache lines.
	scratch *Scratch
	// Its own tables.
	rxPlane   smallTable[rxPort]
	planeSelf smallTable[self]
	// clones are the clone sessions' ports, by session (a plane's probes:
	// the plane + 1).
	clones smallTable[uint32]
	p      Params
	common *Common
	qpSend exactTable[sendQP]
	// sendHit is the qp_send entry of key sendHitKey last found (while
	// sendHitOK): a host sending to one peer finds it without hashing.
	// Any write to qp_send forgets it.
	sendHitKey uint64
	sendHit    sendQP
	sendHitOK  bool
	qpRecv     exactTable[recvQP]
	evState    []evStateEntry
	// Registers, by QP state index (up to schema.NICMaxQPs), grown to
	// the highest index used; nil, or beyond, reads as zero. A fixed array
	// of every index was 2 KiB a NIC, most hosts of a simulation using one
	// or two.
	regs []*qpRegs
	c    Counters
}

// Scratch is the memory a NIC works in during one Process call: the packet
// of the pass, its clone, and the output frames' headers. NICs that never
// run at the same time may share one (ShareScratch): a simulation of a
// thousand NICs then works in memory that stays in a core's caches rather
// than in a thousand pieces that are cold at every call.
type Scratch struct {
	work, clone pkt
	heads       [maxOutputs][hdrSpace]byte
	outs        [maxOutputs]Frame
}

// NewScratch returns a Scratch for NICs to share.
func NewScratch() *Scratch { return &Scratch{} }

// SetMaxTries bounds the slots the NIC passes over for one packet to k
// (the program's MAX_TRIES), from 1 to emit.NICMaxTries, the BMv2
// program's and the default. The PNA program passes over at most
// emit.PNAMaxTries (docs/protocol.md 8.2): a comparison with it sets that.
func (n *NIC) SetMaxTries(k int) error {
	if k < 1 || k > emit.NICMaxTries {
		return fmt.Errorf("nicmodel: %d tries: want 1 to %d", k, emit.NICMaxTries)
	}
	n.p.MaxTries = k
	return nil
}

// ShareScratch has the NIC work in s. The frames a Process call returns
// are then valid until the next Process call of any NIC working in s, and
// no two of them may run at once.
func (n *NIC) ShareScratch(s *Scratch) { n.scratch = s }

// maxOutputs bounds the frames one input makes: every pass of a host's data
// packet may clone a probe (MaxTries resubmissions, so MaxTries + 1
// passes), and the last pass sends the packet itself.
const maxOutputs = emit.NICMaxTries + 2

// Frame is a frame the NIC emits: Head followed by Tail. Head is the NIC's
// (valid until its next Process call); Tail is part of the frame given to
// Process (its payload), unchanged.
type Frame struct {
	Port       uint32
	Head, Tail []byte
	// Pass is the pipeline pass that made it: 0 the first, k after k
	// slots passed over (a probe cloned on a later pass of its packet).
	Pass uint8
	// High is the v1model priority the program gave it (1: the
	// high-priority queue of its port).
	High bool
}

// Len is the frame's length in bytes.
func (f Frame) Len() int { return len(f.Head) + len(f.Tail) }

// AppendTo appends the frame's bytes to dst.
func (f Frame) AppendTo(dst []byte) []byte { return append(append(dst, f.Head...), f.Tail...) }

// New returns a NIC of fabric f with no entries of its own, sharing common
// (nil: a new, empty Common of its own).
func New(f *fabric.Fabric, common *Common) (*NIC, error) {
	if common == nil {
		common = NewCommon(f)
	}
	if p := ParamsOf(f); p.MaxTries+2 > maxOutputs {
		return nil, fmt.Errorf("nicmodel: %d tries make more frames than the model's %d", p.MaxTries, maxOutputs)
	}
	if common.dims.setSize != f.EV.SetSize || common.dims.planes != f.Planes {
		return nil, fmt.Errorf("nicmodel: common tables of another fabric (%d planes, %d slots; this one %d, %d)",
			common.dims.planes, common.dims.setSize, f.Planes, f.EV.SetSize)
	}
	n := &NIC{p: ParamsOf(f), common: common,
		qpSend: newExact[sendQP](0), qpRecv: newGrowingExact[recvQP](1 << 12)}
	// The per-slot counters are allocated at their first count
	// (countSlot): at 256 slots they were 6 KiB a NIC, and a NIC that
	// never fails over never counts a backup send or a failed slot.
	return n, nil
}

// Params returns the program constants the NIC runs with.
func (n *NIC) Params() Params { return n.p }

// Counters returns a copy of the NIC's counters.
func (n *NIC) Counters() Counters {
	c := n.c
	c.SlotTx = n.slotCopy(n.c.SlotTx)
	c.SlotBackupTx = n.slotCopy(n.c.SlotBackupTx)
	c.SlotFailed = n.slotCopy(n.c.SlotFailed)
	return c
}

// Event returns one cell of the events counter.
func (n *NIC) Event(i int) uint64 { return n.c.Events[i] }

func (n *NIC) count(ev int) { n.c.Events[ev]++ }

// slotCopy is a copy of a per-slot counter, zeros where it was never
// counted.
func (n *NIC) slotCopy(c []uint64) []uint64 {
	out := make([]uint64, n.p.SetSize)
	copy(out, c)
	return out
}

// countSlot counts on a per-slot counter, allocating it at its first
// count, and ignores indexes out of range as BMv2 does in its checked
// builds (the program never makes one).
func (n *NIC) countSlot(c *[]uint64, i int) {
	if i < 0 || i >= n.p.SetSize {
		return
	}
	if *c == nil {
		*c = make([]uint64, n.p.SetSize)
	}
	(*c)[i]++
}

func (n *NIC) qp(i uint16) *qpRegs {
	for int(i) >= len(n.regs) {
		n.regs = append(n.regs, nil)
	}
	r := n.regs[i]
	if r == nil {
		words := n.p.ReceiveWindow / schema.NICRxWordBits
		r = &qpRegs{slots: make([]uint32, n.p.SetSize), bitmap: make([]uint64, words), bmEpoch: make([]uint8, words)}
		n.regs[i] = r
	}
	return r
}

// reg is index i's registers, nil if never written.
func (n *NIC) reg(i uint16) *qpRegs {
	if int(i) < len(n.regs) {
		return n.regs[i]
	}
	return nil
}

// Register reads: zero for an index never written.
func (n *NIC) readTx(i uint16) uint32 {
	if r := n.reg(i); r != nil {
		return r.tx
	}
	return 0
}

func (n *NIC) readRx(i uint16) uint64 {
	if r := n.reg(i); r != nil {
		return r.rx
	}
	return 0
}

func (n *NIC) readSlot(i, slot uint16) uint32 {
	if r := n.reg(i); r != nil {
		return r.slots[slot]
	}
	return 0
}
