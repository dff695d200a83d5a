// Package transport is the transport engine of an MRC NIC: the part that is
// not a match-action pipeline. It sits on the NIC's host port, sends RDMA
// Writes as inner data packets (docs/protocol.md 6.1) and takes back what the
// NIC hands its host: new data packets for its QPs (the NIC has already
// dropped duplicates), and every SACK and NACK for them. Spraying, EV
// states, trimming, path-failure detection and probes are the NIC's and the
// fabric's (docs/protocol.md sections 4 and 5); this package keeps the
// window, retransmits, places data and tells when a write is complete, as
// docs/protocol.md section 10 describes.
//
// # Shape
//
// An Engine is one host port. It is a state machine with no goroutine of
// its own and no global state: HandleFrame takes a frame from the NIC,
// HandleTimers fires due retransmission timers and sends what the pacer
// has released, QP.Write starts a write, and all three queue frames that
// TakeOutput collects; NextDeadline says when HandleTimers is next due.
// Time comes from an injected Clock. Run drives the engine on a Port
// (Send, Recv with a context) with the clock's timers; a simulator
// (package transporttest) drives the same methods from a virtual clock,
// so its runs are deterministic.
//
//	eng, _ := transport.New(transport.Config{Addr: me})
//	qp, _ := eng.OpenQP(transport.QPConfig{LocalQPN: 0x11, PeerQPN: 0x22, Peer: peer, StartPSN: psn})
//	mr, _ := eng.RegisterMR(base, rkey, buf)   // to be written into
//	go eng.Run(ctx, port)
//	t, _ := qp.Write(transport.WriteRequest{Data: data, RemoteVAddr: vaddr, RKey: peerRKey})
//	stats, err := t.Wait(ctx)
//
// # Sender
//
// A write is cut into Segment-byte packets with consecutive PSNs from the
// QP's start PSN (24-bit, wrapping): opcodes first, middle..., and last with
// immediate (0xC6, 0xC7, 0xC9), or only-with-immediate (0xCB) for a
// one-packet write. Profile v1 carries METH+RETH in every data packet; the
// engine makes each packet self-describing: RETH holds the address of that
// packet's own payload, the rkey, and that packet's payload length as the
// DMA length, so a receiver can place any packet alone, in any order. There
// is no immediate-data header in profile v1: the immediate opcode itself
// marks the end of the write.
//
// The window is Window PSNs (at most 64) past the last cumulative ack: the
// receiving NIC keeps a 64-PSN window above its cum_psn and does not deliver
// a PSN beyond cum_psn + 64.
//
// The receiving NIC may coalesce the SACKs of in-order packets
// (QPConfig.AckEvery); the engine sets BTH's ack request bit, which the NIC
// answers at once, on every resend, on a write's last packet and where its
// window is too small for coalesced answers to keep it moving, and sends
// one asking packet past a shut window when nothing in flight is sure to
// be answered (docs/protocol.md 10, Ack requests).
//
// The SACK state (cum_psn, and in MRC mode the 64-bit bitmap above it) only
// grows, so SACKs are applied in any order and a lost SACK costs nothing
// that a later one does not repair. Nothing it covers is ever resent. MRC
// resends a packet for three causes, in order of how early they know:
//
//  1. Trim NACK: a switch trimmed the packet and the receiving NIC NACKed
//     it (TRIMMED or TRIMMED_LASTHOP): resent at once, within one RTT of
//     the original send. The NIC decides separately whether to skip the EV.
//  2. SACK gap (RACK-like): a packet still missing while ReorderThreshold
//     (D) higher packets that were sent after it are acked, and older than
//     the reorder window, is taken as lost. Spraying reorders by as much as
//     the slowest path's queue: the window is 5/4 of the largest RTT of the
//     last 64 to 128 samples plus SRTT/4, and a duplicate SACK for a resent
//     packet (a late copy: a DSACK) feeds its delay into that window, since
//     Karn's rule keeps it out of the RTT samples; the delay runs from the
//     send before the packet's last, the copy whose resend proved needless. A deadline re-runs
//     the check when a packet comes of age, without waiting for a SACK. At
//     most once per RTT per packet by this rule.
//  3. Timeout: the last resort for what nothing else reveals, such as the
//     tail of a write lost on a dead path. The RTO comes from SRTT and RTTVAR
//     (RFC 6298, samples from SACKs of packets sent once, Karn's rule),
//     with a floor (MinRTO), doubled at each expiry, and never below the
//     reorder window. Each unacked packet's timer runs from its own last
//     send. MaxRTO caps every timer: the RTO, the reorder window and the
//     RTT that spaces SACK-gap resends, so no unacked packet waits longer
//     than MaxRTO after its last send.
//
// Every resent packet carries the METH retransmission flag.
//
// # RoCE mode
//
// The RoCEv2 baseline in the same engine: data goes with DSCP NO_TRIM (so
// switches drop instead of trimming), the caller opens the QP single-path on
// the NIC (Mode.SinglePath), and the sender does what an RC NIC does:
// it trusts the cumulative ack only, and goes back N, resending every packet
// from cum_psn + 1, on a sequence error (a SACK shows that a later PSN
// arrived while cum_psn stays behind: RoCE's NAK-sequence-error; at most
// once per RTT, and for the same cum_psn not again before an RTO) or on a
// timeout.
//
// # Congestion control
//
// Per QP, its state outliving writes (QPConfig.CongestionControl;
// docs/protocol.md section 10 gives every parameter). By default MRC runs
// DCTCP: a congestion window in packets, at most Window, bounding the
// unacked packets; SACKs marked SKIP_ONCE (the data arrived CE) feed
// alpha and cut the window by alpha/2 once per round; a TRIMMED NACK cuts
// as a mark does (one path of the spray, which the NIC skips), a
// TRIMMED_LASTHOP NACK halves it (incast at the receiver, whose port every
// path crosses and which marks nothing). Delay, an MRC option, is DCTCP
// with its cuts on SACKs moved from marks to delay: an RTT sample (only a
// packet answered at once gives one) above the QP's smallest plus
// DelayTarget cuts by Swift's rule. RoCE runs DCQCN with NVIDIA
// ConnectX's firmware defaults: a rate, cut on CNPs (SACKs marked
// SKIP_ONCE, at most one per 4 µs), recovered by its timer and byte
// counter, that paces every send of the QP through NextDeadline and
// HandleTimers. CCOff keeps the fixed window and paces nothing.
//
// # Receiver
//
// RegisterMR registers memory under an rkey. A data packet is placed at its
// RETH address after checking the rkey and the bounds (a bad packet is
// counted and ignored); placement keeps a bit per byte, so a duplicate is
// harmless and counted. An incoming write is complete when its first packet
// (start address) and its immediate packet (end) have arrived and every
// byte between them is placed.
//
// # Statistics
//
// Transfer.Stats gives per write bytes, packets, packets sent,
// retransmissions by cause, duplicates, SACKs and NACKs, RTT state,
// completion time and goodput, and what congestion control did (marks,
// cuts, CNPs, the window or rate). NICEvents (EVs retired and revived) is
// filled in by the caller from the NIC's counters.
package transport
