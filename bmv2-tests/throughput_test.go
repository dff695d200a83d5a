package bmv2tests

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
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
	openQPs(b, control(b, l, fl.src), control(b, l, fl.dst), fl, 15, 0)
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
	bm0, self0 := labCPUTicks(l)
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
	bm1, self1 := labCPUTicks(l)
	b.ReportMetric(float64(b.N)/took.Seconds(), "pkt/s")
	b.ReportMetric(float64(bm1-bm0)*1e6/clockTicks/float64(b.N), "bmv2-cpu-µs/pkt")
	b.ReportMetric(float64(self1-self0)*1e6/clockTicks/float64(b.N), "go-cpu-µs/pkt")
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on every
// Linux this runs on).
const clockTicks = 100

// labCPUTicks returns the CPU time (user+system, clock ticks) of every BMv2
// process of the lab and of this process.
func labCPUTicks(l *lab.Lab) (bmv2, self int64) {
	for _, d := range l.Devices {
		bmv2 += procTicks(d.Switch.PID)
	}
	return bmv2, procTicks(os.Getpid())
}

func procTicks(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return user + sys
}
