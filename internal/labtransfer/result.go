package labtransfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/transport"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// Retransmits by cause (transport.Retransmits).
type Retransmits struct {
	TrimNACK  int64 `json:"trim_nack"`
	SACKGap   int64 `json:"sack_gap"`
	Timeout   int64 `json:"timeout"`
	SeqError  int64 `json:"seq_error"`
	TailProbe int64 `json:"tail_probe"`
	Total     int64 `json:"total"`
}

// NICEvents are counter deltas of the NICs' events counter over the
// transfer (the whole NIC: a transfer in the other direction at the same
// time counts too).
type NICEvents struct {
	// Source NIC.
	EVsRetired int64 `json:"evs_retired"` // NICEventPathFailed
	EVsRevived int64 `json:"evs_revived"` // NICEventRevived
	BackupSent int64 `json:"backup_sent"` // NICEventBackupTaken
	ProbesSent int64 `json:"probes_sent"`
	// LossReported: resends flagged LOST that named the slot of their
	// lost copy, which fails at its next turn (NICEventLossReported).
	LossReported int64 `json:"loss_reported"`
	// Destination NIC.
	Trimmed    int64 `json:"trimmed"`    // NICEventTrimmedRx: trimmed packets received, NACKed
	Duplicates int64 `json:"duplicates"` // NICEventDuplicate: data already received, SACKed, not delivered
}

// Result is one transfer's outcome.
type Result struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Mode     string  `json:"mode"`
	Bytes    int64   `json:"bytes"`
	Segment  int     `json:"segment"`
	Window   int     `json:"window"`
	QPIndex  int     `json:"qp_index"`
	Limit    float64 `json:"limit_seconds"`
	Complete bool    `json:"completed"`
	// Seconds is the completion time (first packet to last ack), or the
	// time given up after when not completed.
	Seconds     float64     `json:"seconds"`
	GoodputPPS  float64     `json:"goodput_pps"`
	GoodputBps  float64     `json:"goodput_bytes_per_second"`
	Packets     int64       `json:"packets"`
	PacketsSent int64       `json:"packets_sent"`
	Retransmits Retransmits `json:"retransmits"`
	GoBackNs    int64       `json:"go_back_ns"`
	// DupSACKs are SACKs for a PSN already acked (a copy arrived twice);
	// RecvDuplicates the receiving engine's duplicate placements (the NIC
	// drops duplicates it can tell, so these are rare).
	DupSACKs       int64     `json:"dup_sacks"`
	RecvDuplicates int64     `json:"recv_duplicates"`
	SACKs          int64     `json:"sacks"`
	NACKs          int64     `json:"nacks"`
	SRTTMillis     float64   `json:"srtt_ms"`
	RTOMillis      float64   `json:"rto_ms"`
	NIC            NICEvents `json:"nic"`
	// CutDrops and LossDrops are the packets the lab's wires dropped
	// during the transfer (cut links and random loss; every flow of the
	// lab), CutData and LossData the data packets among them (whole or
	// trimmed RDMA Writes; the rest are answers and probes).
	CutDrops  uint64 `json:"cut_drops"`
	LossDrops uint64 `json:"loss_drops"`
	CutData   uint64 `json:"cut_data_drops"`
	LossData  uint64 `json:"loss_data_drops"`
	// Writes is the P4Runtime Write RPCs the lab sent any device between
	// the QPs' opening and their closing.
	Writes     uint64  `json:"p4runtime_writes"`
	SentSHA256 string  `json:"sent_sha256"`
	RecvSHA256 string  `json:"received_sha256"`
	Match      bool    `json:"match"`
	Events     []Event `json:"events,omitempty"`
}

// events reads a NIC's event counters (before and after a transfer).
func (r *Runner) events(ctx context.Context, c *lab.Control) ([]int64, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return c.Counters(rctx, schema.NICEventCounter)
}

// dataArrived is what a NIC's event counters say of the data packets that
// reached it: delivered, duplicate, beyond the window or trimmed (each is
// counted once, as exactly one of these).
func dataArrived(ev []int64) int64 {
	return ev[schema.NICEventDataDelivered] + ev[schema.NICEventDuplicate] + ev[schema.NICEventBeyondWindow] + ev[schema.NICEventTrimmedRx]
}

// settleQuiet and settleLimit bound the wait for a transfer's last packets:
// a write is complete when every packet is acked, but copies of packets
// (needless resends, or originals a resend overtook) can still be queued
// in the fabric, at a throttled port for a second or more, and the
// receiving NIC's counters would miss them.
const (
	settleQuiet = 500 * time.Millisecond
	settleLimit = 10 * time.Second
)

// settle waits until the receiving NIC has seen every data packet the
// sending NIC sent but those the lab's wires dropped (wireDrops reports
// the data packets they dropped since the transfer began, every flow's:
// an upper bound for this transfer's), or until its count has not moved for settleQuiet (a switch
// dropped the rest: RoCE's tail drops), and returns both NICs' counters
// then.
func (r *Runner) settle(ctx context.Context, x *xfer, wireDrops func() uint64) (src, dst []int64, err error) {
	deadline := time.Now().Add(settleLimit)
	var last int64 = -1
	lastChange := time.Now()
	for {
		if src, err = r.events(ctx, x.srcCtl); err != nil {
			return nil, nil, err
		}
		if dst, err = r.events(ctx, x.dstCtl); err != nil {
			return nil, nil, err
		}
		sent := src[schema.NICEventDataSent] - x.srcEv0[schema.NICEventDataSent]
		arrived := dataArrived(dst) - dataArrived(x.dstEv0)
		if arrived+int64(wireDrops()) >= sent {
			return src, dst, nil
		}
		if arrived != last {
			last, lastChange = arrived, time.Now()
		}
		if time.Since(lastChange) >= settleQuiet || time.Now().After(deadline) {
			return src, dst, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// result reads x's statistics and the NICs' counters after it, once its
// packets have settled (see settle).
func (r *Runner) result(ctx context.Context, x *xfer, wireDrops func() uint64) (*Result, error) {
	stats := x.tr.Stats()
	srcEv1, dstEv1, err := r.settle(ctx, x, wireDrops)
	if err != nil {
		return nil, err
	}
	d := func(a, b []int64, i int) int64 { return b[i] - a[i] }
	nic := NICEvents{
		EVsRetired:   d(x.srcEv0, srcEv1, schema.NICEventPathFailed),
		EVsRevived:   d(x.srcEv0, srcEv1, schema.NICEventRevived),
		BackupSent:   d(x.srcEv0, srcEv1, schema.NICEventBackupTaken),
		ProbesSent:   d(x.srcEv0, srcEv1, schema.NICEventProbeSent),
		LossReported: d(x.srcEv0, srcEv1, schema.NICEventLossReported),
		Trimmed:      d(x.dstEv0, dstEv1, schema.NICEventTrimmedRx),
		Duplicates:   d(x.dstEv0, dstEv1, schema.NICEventDuplicate),
	}
	x.tr.SetNICEvents(transport.NICEvents{EVsRetired: nic.EVsRetired, EVsRevived: nic.EVsRevived, BackupUsed: nic.BackupSent})
	sentSum := sha256.Sum256(x.data)
	recvSum := sha256.Sum256(x.mr.Bytes())
	res := &Result{
		From: x.opt.From, To: x.opt.To, Mode: x.opt.Mode.String(), Bytes: int64(x.opt.Size),
		Segment: x.sqp.Config().Segment, Window: x.sqp.Config().Window, QPIndex: x.index, Limit: x.opt.Limit.Seconds(),
		Complete: x.sent && x.recvDone, Seconds: x.ended.Seconds(),
		Packets: stats.Packets, PacketsSent: stats.PacketsSent,
		Retransmits: Retransmits{TrimNACK: stats.Retransmits.TrimNACK, SACKGap: stats.Retransmits.SACKGap,
			Timeout: stats.Retransmits.Timeout, SeqError: stats.Retransmits.SeqError, TailProbe: stats.Retransmits.TailProbe, Total: stats.Retransmits.Total()},
		GoBackNs: stats.GoBackNs, DupSACKs: stats.Duplicates, RecvDuplicates: x.dqp.RecvCounters().Duplicates,
		SACKs: stats.SACKs, NACKs: stats.NACKs,
		SRTTMillis: float64(stats.SRTT) / 1e6, RTOMillis: float64(stats.RTO) / 1e6,
		NIC:        nic,
		SentSHA256: hex.EncodeToString(sentSum[:]), RecvSHA256: hex.EncodeToString(recvSum[:]),
		Match:  sentSum == recvSum,
		Events: x.sim.events,
	}
	if res.Complete {
		res.Seconds = stats.Duration().Seconds()
		res.GoodputPPS = stats.GoodputPackets()
		res.GoodputBps = stats.GoodputBytes()
	}
	return res, nil
}
