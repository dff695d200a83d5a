package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/labtransfer"
)

// maxSizeText is labtransfer.MaxSize as the help and errors give it.
var maxSizeText = fmt.Sprintf("%d MiB", labtransfer.MaxSize>>20)

// parseSize reads a transfer's byte count: 4096, 256KiB, 4MiB (KB/MB:
// powers of ten), at most labtransfer.MaxSize.
func parseSize(s string) (int, error) {
	units := []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	mult := 1
	num := s
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	v, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes above 0, e.g. 4096, 256KiB, 4MiB", s)
	}
	if v > labtransfer.MaxSize/mult {
		return 0, fmt.Errorf("size %q: a lab transfer is at most %s (%d bytes)", s, maxSizeText, labtransfer.MaxSize)
	}
	return v * mult, nil
}

func newLabLossCommand(io streams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "loss A:B PERCENT",
		Short: "Make a link of the lab drop packets at random (0 clears)",
		Long: `loss makes the lab's wire between devices A and B drop PERCENT of the packets in
each direction, at random but deterministically: the lab draws from a seed, the
direction and the packet's number on it, so the same packets of a link's sequence are
lost in every run. The switches are not told: to them it is a lossy cable.

  mrcgen lab loss p0-t0-1:nic-3 1%
  mrcgen lab loss p0-t0-1:nic-3 0      # clear

With --output json: {"a", "b", "percent"}.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, b, ok := splitPair(args[0])
			if !ok {
				return fmt.Errorf("lab loss: %q is not A:B (two device names, e.g. p0-t0-1:nic-3)", args[0])
			}
			pct, err := labtransfer.ParsePercent(args[1])
			if err != nil {
				return fmt.Errorf("lab loss: %w", err)
			}
			var res lab.LossRequest
			if err := callLab(cmd, dir, "loss", lab.LossRequest{A: a, B: b, Percent: pct}, &res); err != nil {
				return err
			}
			if io.json() {
				return writeJSON(io.out, res)
			}
			tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "LINK\tLOSS")
			fmt.Fprintf(tw, "%s:%s\t%g%%\n", res.A, res.B, res.Percent)
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".lab", "the lab's directory")
	return cmd
}

func newLabTransferCommand(io streams) *cobra.Command {
	var (
		dir, size, mode   string
		req               labtransfer.Request
		cuts, flaps       []string
		throttles, losses []string
		timeout           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "transfer --from NIC --to NIC --size SIZE",
		Short: "RDMA Write between two hosts of the running lab, MRC or the RoCE baseline",
		Long: `transfer writes SIZE bytes from the host of one NIC into the memory of another's,
inside the lab running in --dir (through its control socket): a transport engine on
each NIC's host port, the QPs opened on both NICs, and a scenario applied while it runs.

  --cut SW:NEIGHBOUR@30%          cut a link once 30% of the packets were first sent
  --flap SW:NEIGHBOUR@30%,60%     down at 30%, up at 60% (more fractions: down, up, ...)
  --throttle SW/PORT:PPS          limit a switch port for the transfer (SW:NEIGHBOUR:PPS too)
  --loss A:B:1%                   lose 1% of the packets on a link for the transfer

SIZE is at most ` + maxSizeText + `: the lab holds the buffer twice, and at its few
hundred packets/s that already takes about a minute; the lab refuses more.
A link changes after exactly its fraction of the packets (rounded up) was first
sent: the sender holds its next new packet until the change is made. Links,
throttles and losses are restored when the transfer ends. --mode roce runs the
RoCEv2 baseline: one path (slot 0's EV), NO_TRIM, go-back-N. A transfer not complete
after --timeout is reported as not completed. For example:

  mrcgen lab transfer --from nic-0 --to nic-3 --size 256KiB --cut p0-t0-0:p0-t1-0@30%

It prints progress on stderr and a result table: completion, time, goodput, packets,
retransmissions by cause, duplicates, the source NIC's EVs retired and revived, the
P4Runtime writes during the transfer (MRC needs none) and the sha256 of the sent
buffer and of the receiver's memory. With --output json: the result object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.Size, err = parseSize(size); err != nil {
				return fmt.Errorf("lab transfer: %w", err)
			}
			if _, err := labtransfer.ParseMode(mode); err != nil {
				return fmt.Errorf("lab transfer: %w", err)
			}
			req.Mode = mode
			req.LimitSeconds = timeout.Seconds()
			for _, c := range cuts {
				ev, err := labtransfer.ParseCut(c)
				if err != nil {
					return fmt.Errorf("lab transfer: %w", err)
				}
				req.Links = append(req.Links, ev)
			}
			for _, f := range flaps {
				ev, err := labtransfer.ParseFlap(f)
				if err != nil {
					return fmt.Errorf("lab transfer: %w", err)
				}
				req.Links = append(req.Links, ev)
			}
			for _, t := range throttles {
				th, err := labtransfer.ParseThrottle(t)
				if err != nil {
					return fmt.Errorf("lab transfer: %w", err)
				}
				req.Throttles = append(req.Throttles, th)
			}
			for _, l := range losses {
				ls, err := labtransfer.ParseLoss(l)
				if err != nil {
					return fmt.Errorf("lab transfer: %w", err)
				}
				req.Losses = append(req.Losses, ls)
			}
			c, err := lab.Dial(dir)
			if err != nil {
				return err
			}
			defer c.Close()
			bar := newProgressBar(io.errOut, "transfer")
			var res labtransfer.Result
			err = c.Stream(cmd.Context(), "transfer", req, &res, func(raw json.RawMessage) {
				var p labtransfer.Progress
				if json.Unmarshal(raw, &p) != nil {
					return
				}
				if p.Event != "" {
					fmt.Fprintf(io.errOut, "transfer: %s (%d of %d packets sent, %.2fs)\n", p.Event, p.Sent, p.Packets, p.Elapsed)
				}
				bar.update(int(p.Sent), int(p.Packets))
			})
			if err != nil {
				return err
			}
			if io.json() {
				return writeJSON(io.out, res)
			}
			printTransfer(io, &res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", ".lab", "the lab's directory")
	f.StringVar(&req.From, "from", "nic-0", "the sending host's NIC")
	f.StringVar(&req.To, "to", "nic-3", "the receiving host's NIC")
	f.StringVar(&size, "size", "256KiB", "bytes to write (4096, 256KiB, 4MiB; at most "+maxSizeText+")")
	f.StringVar(&mode, "mode", "mrc", "mrc or roce (the RoCEv2 baseline)")
	f.IntVar(&req.Segment, "segment", 0, "payload bytes per packet (default 1024)")
	f.IntVar(&req.Window, "window", 0, "PSNs in flight past the cumulative ack, at most the fabric's nic.window_packets (default 64)")
	f.StringArrayVar(&cuts, "cut", nil, "SW:NEIGHBOUR@30%: cut a link at a fraction of the packets")
	f.StringArrayVar(&flaps, "flap", nil, "SW:NEIGHBOUR@30%,60%: down, up, ... at fractions of the packets")
	f.StringArrayVar(&throttles, "throttle", nil, "SW/PORT:PPS or SW:NEIGHBOUR:PPS: limit a port during the transfer")
	f.StringArrayVar(&losses, "loss", nil, "A:B:1%: random loss on a link during the transfer")
	f.DurationVar(&timeout, "timeout", labtransfer.DefaultLimit, "give up (not completed) after this long")
	return cmd
}

func printTransfer(io streams, r *labtransfer.Result) {
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	row("transfer", "%s -> %s, %s, %d bytes in %d-byte packets, window %d", r.From, r.To, r.Mode, r.Bytes, r.Segment, r.Window)
	for _, e := range r.Events {
		if e.At > 0 {
			row("scenario", "%s at %.0f%% (%d packets sent, %.2fs)", e.What, e.At*100, e.Sent, e.Elapsed)
		} else {
			row("scenario", "%s", e.What)
		}
	}
	if r.Complete {
		row("completed", "yes, in %.3fs", r.Seconds)
		row("goodput", "%.0f pkt/s, %.0f bytes/s", r.GoodputPPS, r.GoodputBps)
	} else {
		row("completed", "NO: not within %.0fs", r.Limit)
	}
	row("packets", "%d, %d sent", r.Packets, r.PacketsSent)
	row("retransmissions", "%d: trim NACK %d, SACK gap %d, tail probe %d, timeout %d, sequence error %d (go-back-N rounds %d)",
		r.Retransmits.Total, r.Retransmits.TrimNACK, r.Retransmits.SACKGap, r.Retransmits.TailProbe, r.Retransmits.Timeout, r.Retransmits.SeqError, r.GoBackNs)
	row("trims", "%d (NACKs %d)", r.NIC.Trimmed, r.NACKs)
	row("duplicates", "%d at %s's NIC, %d duplicate SACKs", r.NIC.Duplicates, r.To, r.DupSACKs)
	row("EVs", "%d retired (%d losses reported), %d revived at %s (%d sends on backups, %d probes)", r.NIC.EVsRetired, r.NIC.LossReported, r.NIC.EVsRevived, r.From, r.NIC.BackupSent, r.NIC.ProbesSent)
	row("wire drops", "%d on cut links, %d random loss (data: %d, %d)", r.CutDrops, r.LossDrops, r.CutData, r.LossData)
	row("P4Runtime writes", "%d", r.Writes)
	row("RTT", "SRTT %.1f ms, RTO %.1f ms", r.SRTTMillis, r.RTOMillis)
	row("sha256 sent", "%s", r.SentSHA256)
	match := "matches"
	if !r.Match {
		match = "DIFFERS"
	}
	row("sha256 received", "%s (%s)", r.RecvSHA256, match)
	tw.Flush()
}
