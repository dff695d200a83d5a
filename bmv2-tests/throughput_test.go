package bmv2tests

import (
	"os"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// benchWindow bounds the packets in flight: below the tiny fabric's trim
// threshold (trim.threshold_packets 16) and queue depth, so that no queue
// of the path can trim or drop one and every packet sent is delivered by
// construction.
const benchWindow = 8

// BenchmarkLabHostToHost measures the raw packet rate the lab carries host
// to host: data packets of one QP from nic-0 (T0 row 0) to a NIC on row 1,
// across T0-T1-T0 (5 BMv2 passes each, and 5 more for its SACK), with
// benchWindow in flight. The receiver is an attached host port, so the
// loop waits on deliveries, never on a timer. Besides pkt/s it reports the
// CPU every BMv2 process and this test process spent per packet (from
// /proc: coarse, 10 ms ticks), which a loaded machine disturbs less than
// the rate.
//
//	PATH=/opt/p4/bin:$PATH go test ./bmv2-tests -run '^$' -bench LabHostToHost -benchtime 2000x
func BenchmarkLabHostToHost(b *testing.B) {
	l := needLab(b)
	from, to := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 0}
	fl := newFlow(l, from, to, 0x00010f)
	openQPs(b, control(b, l, fl.src), control(b, l, fl.dst), fl, 0)
	dst, err := l.AttachHost(fl.dst)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	frames := make([][]byte, b.N)
	for i := range frames {
		frames[i] = fl.frame(uint32(i))
	}
	ctx := ctxFor(b, 10*time.Minute)
	seen := make([]bool, b.N)
	received := 0
	recv := func() {
		f, err := dst.Recv(ctx)
		if err != nil {
			b.Fatalf("%d of %d delivered: %v", received, b.N, err)
		}
		p, err := mrcpkt.Parse(f.Data)
		if err != nil || !mrcpkt.IsData(p.BTH.Opcode) || p.BTH.DstQP != fl.qp || int(p.BTH.PSN) >= b.N || seen[p.BTH.PSN] {
			b.Fatalf("unexpected frame at %s: %x (%v)", fl.dst, f.Data, err)
		}
		seen[p.BTH.PSN] = true
		received++
	}
	bm0, self0 := labCPU(l)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		for i-received >= benchWindow {
			recv()
		}
		if err := l.SendFromHost(fl.src, frames[i]); err != nil {
			b.Fatal(err)
		}
	}
	for received < b.N {
		recv()
	}
	took := time.Since(start)
	b.StopTimer()
	bm1, self1 := labCPU(l)
	b.ReportMetric(float64(b.N)/took.Seconds(), "pkt/s")
	b.ReportMetric(float64((bm1-bm0).Microseconds())/float64(b.N), "bmv2-cpu-µs/pkt")
	b.ReportMetric(float64((self1-self0).Microseconds())/float64(b.N), "go-cpu-µs/pkt")
}

// labCPU returns the CPU time of every BMv2 process of the lab and of this
// process.
func labCPU(l *lab.Lab) (switches, self time.Duration) {
	for _, d := range l.Devices {
		t, _ := d.Switch.CPU() // a switch gone is caught by the test itself
		switches += t
	}
	self, _ = bmv2.ProcessCPU(os.Getpid())
	return switches, self
}
