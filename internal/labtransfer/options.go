package labtransfer

import (
	"errors"
	"fmt"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// BMv2's RTTs are milliseconds (a packet crosses 5 simple_switch processes
// each way, at a few hundred packets/s with a window queued in front of
// them): the engine's defaults, made for hardware, would resend everything
// before its first answer. The RTO floor is above the RTT of a full window
// of 64 queued on one path at ~300 pkt/s (about 200 ms), which the first
// RTT samples, taken before the queue builds, do not foresee.
const (
	DefaultInitialRTO = time.Second
	DefaultMinRTO     = 500 * time.Millisecond
	DefaultMaxRTO     = 4 * time.Second
	DefaultLimit      = 60 * time.Second
	DefaultSegment    = 1024
)

// MaxSize is the largest write a lab transfer takes: 16 MiB. A transfer
// holds its buffer twice (the sender's and the receiver's memory) besides
// its per-packet state, and a failed allocation would end the lab's process
// and every BMv2 switch with it (they die with their parent), so a larger
// size is refused before anything is allocated. At the lab's few hundred
// packets/s, 16 MiB in 1 KiB packets (16,384 of them) already takes about
// a minute: DefaultLimit.
const MaxSize = 16 << 20

// Options describe one transfer.
type Options struct {
	From, To string // NIC names
	Size     int    // bytes
	Mode     transport.Mode
	// Segment is the payload per packet, Window the PSNs in flight past the
	// cumulative ack (0: DefaultSegment, transport.DefaultWindow).
	Segment, Window  int
	ReorderThreshold int
	// RTO bounds (0: the defaults above).
	InitialRTO, MinRTO, MaxRTO time.Duration
	// StartPSN is the write's first PSN (24 bits).
	StartPSN uint32
	// Limit is how long the write may take: past it the transfer ends as
	// not completed (a result, not an error). 0: DefaultLimit.
	Limit time.Duration
	// Seed makes the payload (0: 1).
	Seed uint64
	// T1Offset is the QP's T1 offset on the NICs.
	T1Offset int

	Links     []LinkEvents
	Throttles []Throttle
	Losses    []Loss

	// Progress, if set, is called about every ProgressEvery (0: 500ms) and
	// at each scenario event.
	Progress      func(Progress) `json:"-"`
	ProgressEvery time.Duration
}

// check reports what is wrong with o by itself, before the transfer takes
// anything of the lab or allocates its buffers (the control API's transfer
// command calls it first).
func (o *Options) check() error {
	var errs []error
	if o.From == o.To {
		errs = append(errs, fmt.Errorf("from and to are the same NIC %q", o.From))
	}
	switch {
	case o.Size <= 0:
		errs = append(errs, fmt.Errorf("size %d is not a number of bytes above 0", o.Size))
	case o.Size > MaxSize:
		errs = append(errs, fmt.Errorf("size %d bytes: a lab transfer is at most %d MiB (%d bytes)", o.Size, MaxSize>>20, MaxSize))
	}
	seg := o.Segment
	if seg == 0 {
		seg = DefaultSegment
	}
	switch {
	case seg < 0:
		errs = append(errs, fmt.Errorf("segment %d bytes is negative", seg))
	case o.Size > 0 && o.Size <= MaxSize && (o.Size+seg-1)/seg > transport.MaxPackets:
		errs = append(errs, fmt.Errorf("size %d bytes in %d-byte segments is %d packets, more than a write takes (%d)",
			o.Size, seg, (o.Size+seg-1)/seg, transport.MaxPackets))
	}
	for _, le := range o.Links {
		if len(le.At) == 0 {
			errs = append(errs, fmt.Errorf("link %s:%s: no fraction to change it at", le.A, le.B))
		}
		for i, f := range le.At {
			if !(f >= 0 && f < 1) || (i > 0 && f <= le.At[i-1]) {
				errs = append(errs, fmt.Errorf("link %s:%s: fractions %v are not increasing in [0, 1)", le.A, le.B, le.At))
				break
			}
		}
	}
	for _, t := range o.Throttles {
		if t.PPS <= 0 {
			errs = append(errs, fmt.Errorf("throttle %s: rate %d pkt/s", t.Device, t.PPS))
		}
	}
	for _, ls := range o.Losses {
		if !(ls.Percent >= 0 && ls.Percent <= 100) {
			errs = append(errs, fmt.Errorf("loss %s:%s: %v%%", ls.A, ls.B, ls.Percent))
		}
	}
	return errors.Join(errs...)
}

// fill checks o, against the lab too, and sets its defaults.
func (r *Runner) fill(o *Options) error {
	errs := []error{o.check()}
	if o.Segment == 0 {
		o.Segment = DefaultSegment
	}
	if o.Window == 0 {
		o.Window = transport.DefaultWindow
	}
	if w := r.lab.Build.Plan.F.ReceiveWindow; o.Window > w {
		errs = append(errs, fmt.Errorf("window %d: beyond the NICs' receive window, nic.window_packets %d", o.Window, w))
	}
	if o.InitialRTO == 0 {
		o.InitialRTO = DefaultInitialRTO
	}
	if o.MinRTO == 0 {
		o.MinRTO = DefaultMinRTO
	}
	if o.MaxRTO == 0 {
		o.MaxRTO = DefaultMaxRTO
	}
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 500 * time.Millisecond
	}
	for _, le := range o.Links {
		if _, ok := r.lab.Port(le.A, le.B); !ok {
			errs = append(errs, fmt.Errorf("%s and %s are not linked", le.A, le.B))
		}
	}
	return errors.Join(errs...)
}
