package transport

import "time"

// Retransmits counts data packets sent again, by the rule that sent them.
type Retransmits struct {
	TrimNACK int64 // MRC: a NACK TRIMMED or TRIMMED_LASTHOP, resent at once
	SACKGap  int64 // MRC: missing while ReorderThreshold later-sent higher PSNs are acked
	Timeout  int64 // both modes: the RTO expired (RoCE: every packet of the go-back-N)
	SeqError int64 // RoCE: go-back-N on a sequence error (a later PSN acked while cum_psn stalls)
	// TailProbe: MRC's tail-loss probe, the newest unacked packet resent
	// when nothing was acked for two SRTTs (RACK-TLP)
	TailProbe int64
}

// Add adds o's counts to r's.
func (r *Retransmits) Add(o Retransmits) {
	r.TrimNACK += o.TrimNACK
	r.SACKGap += o.SACKGap
	r.Timeout += o.Timeout
	r.SeqError += o.SeqError
	r.TailProbe += o.TailProbe
}

// Total is the sum of every cause.
func (r Retransmits) Total() int64 {
	return r.TrimNACK + r.SACKGap + r.Timeout + r.SeqError + r.TailProbe
}

// NICEvents are the EV events of the transfer's time, which the NIC's
// dataplane counts (P4Runtime counters): the engine cannot see them. The
// caller fills them in (Transfer.SetNICEvents) from counter deltas.
type NICEvents struct {
	EVsRetired int64 // slots found failed (K sends without echo)
	EVsRevived int64 // slots returned to GOOD by a probe answer
	BackupUsed int64 // packets sent on a backup EV
}

// Stats describe one write, from the sender's side.
type Stats struct {
	Mode        Mode
	Bytes       int64 // the buffer's length
	Packets     int64 // data packets of the write (segments)
	PacketsSent int64 // data packets sent, retransmissions included
	Retransmits Retransmits
	// Duplicates counts SACKs answering a PSN that an earlier SACK
	// answered too: a copy that reached the receiving NIC after another
	// one had.
	Duplicates int64
	// GoBackNs counts go-back-N rounds (RoCE): each resends every packet
	// from cum_psn + 1, counted in Retransmits.
	GoBackNs int64
	SACKs    int64 // SACKs received for this write
	NACKs    int64 // NACKs received for this write
	// SRTT, RTTVar and RTO at the end of the transfer.
	SRTT, RTTVar, RTO time.Duration
	Start, End        time.Time // End is zero until every PSN is acked
	Complete          bool
	NIC               NICEvents
	Congestion        Congestion
}

// Congestion is what the QP's congestion control did during a write. Its
// state is the QP's and carries over to the next write: Window, Alpha
// and Rate are as the write left them (so far, while it runs).
type Congestion struct {
	Algorithm CongestionControl
	// Marks counts SACKs with mark SKIP_ONCE: data packets that arrived
	// ECN CE.
	Marks int64
	// DCTCP: the congestion window (packets) and its lowest during the
	// write, alpha, and the cuts made on marks and on trim NACKs. With
	// CCOff the window stays at Window.
	Window, MinWindow float64
	Alpha             float64 // DCTCP's or DCQCN's
	ECNCuts, TrimCuts int64
	// Delay: cuts made on RTT samples above the target (its trim cuts
	// are TrimCuts).
	DelayCuts int64
	// DCQCN: CNPs taken (marked SACKs, at most one per 4 µs), the
	// current rate RC and its lowest during the write, bits/s.
	CNPs          int64
	Rate, MinRate float64
}

// Duration is the completion time: from the first packet to the last
// cumulative ack, or 0 while incomplete.
func (s Stats) Duration() time.Duration {
	if !s.Complete {
		return 0
	}
	return s.End.Sub(s.Start)
}

// GoodputBytes is the bytes per second of a completed write (0 otherwise).
func (s Stats) GoodputBytes() float64 {
	d := s.Duration()
	if d <= 0 {
		return 0
	}
	return float64(s.Bytes) / d.Seconds()
}

// GoodputPackets is the write's data packets per second (not counting
// retransmissions), 0 until complete.
func (s Stats) GoodputPackets() float64 {
	d := s.Duration()
	if d <= 0 {
		return 0
	}
	return float64(s.Packets) / d.Seconds()
}

// RecvCounters count what a QP's receive side saw.
type RecvCounters struct {
	Packets     int64 // data packets handed to the engine for this QP
	Bytes       int64 // payload bytes placed for the first time
	Duplicates  int64 // packets whose every byte had been placed already
	Overlaps    int64 // packets with some bytes placed already, some not
	BadRKey     int64 // rkey of no registered memory region: ignored
	OutOfBounds int64 // range outside the region, or DMA length != payload: ignored
	Messages    int64 // writes completed
}

// Received describes one completed incoming write.
type Received struct {
	VAddr      uint64 // its first byte
	Length     int64
	Packets    int64 // packets placed (new bytes)
	Duplicates int64 // duplicate and overlapping packets seen during it
	First      time.Time
	Done       time.Time // when the last byte was placed with the immediate seen
}
