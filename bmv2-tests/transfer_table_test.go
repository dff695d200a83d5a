package bmv2tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/labtransfer"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// EnvTransportTable turns TestTransportTable on (make bench-transport): it
// takes about a minute, too long for every CI run.
const EnvTransportTable = "MRCGEN_TRANSPORT_TABLE"

// TestTransportTable prints the comparison of MRC and the RoCE baseline,
// each scenario of xferScenarios in both modes in the same lab, and the
// throughput of a large-window MRC transfer against the raw packet rate the
// lab carries host to host, measured in the same run the way
// BenchmarkLabHostToHost does. It asserts what the table claims: MRC
// completes everything with the memory intact, RoCE does not complete the
// cut, and MRC reaches 0.8 of the raw rate.
//
//	make bench-transport
func TestTransportTable(t *testing.T) {
	if os.Getenv(EnvTransportTable) != "1" {
		t.Skipf("set %s=1 (make bench-transport) to run every scenario in both modes", EnvTransportTable)
	}
	l := needLab(t)
	r := labtransfer.NewRunner(l)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsize\tMRC time\tMRC retx\tMRC done\tRoCE time\tRoCE retx\tRoCE done\t")
	for _, sc := range xferScenarios {
		var cells []string
		for _, mode := range []transport.Mode{transport.MRC, transport.RoCE} {
			res := runTransfers(t, r, xferOptions(t, l, sc, mode))
			done := "yes"
			tm := fmt.Sprintf("%.2fs", res.Seconds)
			if !res.Complete {
				done = fmt.Sprintf("no (%.0fs limit)", res.Limit)
				tm = "-"
			} else if !res.Match {
				done = "CORRUPT"
			}
			cells = append(cells, tm, fmt.Sprint(res.Retransmits.Total), done)
			if mode == transport.MRC && (!res.Complete || !res.Match) {
				t.Errorf("MRC %s: completed %v, memory matches %v", sc.name, res.Complete, res.Match)
			}
			if mode == transport.RoCE && sc.name == "cut at 30%" && res.Complete {
				t.Errorf("RoCE completed with its only path cut")
			}
		}
		fmt.Fprintf(tw, "%s\t%dKiB\t%s\t\n", sc.name, sc.size>>10, strings.Join(cells, "\t"))
	}
	tw.Flush()

	// Throughput: the raw rate first, then MRC with the largest window.
	// In a subtest: its P4Runtime sessions close before the transfer opens
	// its own with the same election id.
	var raw float64
	t.Run("raw", func(t *testing.T) { raw = rawHostToHostRate(t, 2000) })
	if raw == 0 {
		t.Fatal("no raw rate")
	}
	res, err := r.Run(ctxFor(t, 3*time.Minute), labtransfer.Options{From: xferFrom, To: xferTo, Size: 1 << 20, Mode: transport.MRC, Window: transport.ReceiveWindow})
	if err != nil {
		t.Fatal(err)
	}
	ratio := res.GoodputPPS / raw
	fmt.Fprintf(&b, "\nthroughput: raw host to host %.0f pkt/s (window %d, %s packets); MRC 1 MiB, window 64: %.0f pkt/s goodput, %.0f KiB/s, %d retransmissions: %.2f of raw\n",
		raw, benchWindow, "2000", res.GoodputPPS, res.GoodputBps/1024, res.Retransmits.Total, ratio)
	t.Log("\n" + b.String())
	if !res.Complete || !res.Match {
		t.Errorf("the 1 MiB MRC transfer: completed %v, memory matches %v", res.Complete, res.Match)
	}
	if ratio < 0.8 {
		t.Errorf("MRC goodput %.0f pkt/s is %.2f of the raw %.0f pkt/s, below the 0.8 target", res.GoodputPPS, ratio, raw)
	}
}

// rawHostToHostRate is BenchmarkLabHostToHost's measure for n packets: raw
// data packets of one QP from nic-0 to a host attached on row 1, benchWindow
// in flight, paced by deliveries.
func rawHostToHostRate(t *testing.T, n int) float64 {
	l := needLab(t)
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x00011f)
	openQPs(t, control(t, l, fl.src), control(t, l, fl.dst), fl, 0)
	dst, err := l.AttachHost(fl.dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ctx := ctxFor(t, 5*time.Minute)
	received := 0
	recv := func() {
		f, err := dst.Recv(ctx)
		if err != nil {
			t.Fatalf("%d of %d delivered: %v", received, n, err)
		}
		if p, err := mrcpkt.Parse(f.Data); err == nil && mrcpkt.IsData(p.BTH.Opcode) && p.BTH.DstQP == fl.qp {
			received++
		}
	}
	start := time.Now()
	for i := range n {
		for i-received >= benchWindow {
			recv()
		}
		if err := l.SendFromHost(fl.src, fl.frame(uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	for received < n {
		recv()
	}
	return float64(n) / time.Since(start).Seconds()
}
