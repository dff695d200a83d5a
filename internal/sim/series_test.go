package sim

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// TestGoodputSeriesStall: a RoCE flow whose path is cut beyond its
// sender's T0 (the T1's link down to the receiver's) stalls until routing
// converges, 9 s later. The goodput series holds the stall as one
// run where it held a float per µs (9 million: 64 MB of JSON, and as much
// again in memory while the run ended), and its runs tile the series from
// 0 to the last bin with a delivery, each with a share of its own.
func TestGoodputSeriesStall(t *testing.T) {
	f, p, src := genSource(t, "tiny")
	a, b := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	probe := newSim(t, f, src, Options{Transport: RoCE, Flows: []Flow{{Src: a, Dst: b, Bytes: 1}}})
	t1 := probe.ecmp(probe.hostOf(a), probe.hostOf(b), 0, 0)
	cut := Fault{Kind: LinkDown, A: "p0-t0-1", B: p.Name(plan.Switch{Role: plan.RoleT1, Plane: 0, Index: t1}), At: 5 * time.Microsecond}
	r := run(t, f, src, Options{Transport: RoCE, Convergence: 9 * time.Second, Faults: []Fault{cut},
		Flows: []Flow{{Src: a, Dst: b, Bytes: 1 << 20}}})
	if r.Completed != 1 || r.FCT.Max < 9e6 {
		t.Fatalf("completed %d in %.1f µs: want one, after the 9 s convergence", r.Completed, r.FCT.Max)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs in the series, %d bytes of JSON; FCT %.1f µs", len(r.Series), len(js), r.FCT.Max)
	if len(r.Series) > 200 || len(js) > 64<<10 {
		t.Errorf("%d runs in the goodput series, %d bytes of JSON: want the stall in one run", len(r.Series), len(js))
	}
	checkSeries(t, r)
}

// checkSeries: the runs of r's goodput series tile it from 0, in bins,
// no two neighbours with the same share.
func checkSeries(t *testing.T, r *Result) {
	t.Helper()
	end := 0.0
	for i, g := range r.Series {
		if g.StartUS != end || g.EndUS <= g.StartUS || i > 0 && g.Share == r.Series[i-1].Share || g.Share < 0 {
			t.Fatalf("run %d: %+v after %+v", i, g, r.Series[max(i-1, 0)])
		}
		end = g.EndUS
	}
	if n := len(r.Series); n > 0 && end > r.SimulatedUS+r.BinUS {
		t.Errorf("the series ends at %v µs, after the run's %v", end, r.SimulatedUS)
	}
}

// runsOf is a series of a share per bin as runs.
func runsOf(v []float64) []shareRun {
	var runs []shareRun
	for i, x := range v {
		if n := len(runs); n > 0 && runs[n-1].share == x {
			runs[n-1].to++
			continue
		}
		runs = append(runs, shareRun{int64(i), int64(i) + 1, x})
	}
	return runs
}

// denseRecovery is recovery as it was over a share per bin: the
// reference the runs must agree with to the last bit.
func denseRecovery(v []float64, at, binPS int64) float64 {
	const win = recoveryBins
	b0 := int(at / binPS)
	if b0 < win || b0 >= len(v) {
		return -1
	}
	before := 0.0
	for _, x := range v[b0-win : b0] {
		before += x
	}
	if before == 0 {
		return -1
	}
	sum := 0.0
	for i := b0; i < len(v); i++ {
		sum += v[i]
		if i-b0 >= win {
			sum -= v[i-win]
		}
		if i-b0+1 == win && sum >= 0.95*before {
			return 0
		}
		if i-b0+1 > win && sum >= 0.95*before {
			return us(int64(i-win+1)*binPS - at)
		}
	}
	return -1
}

// recovery: the time until the fabric's goodput is back to 95% of the
// 10 µs before the fault; 0 when it never fell below; -1 when it never came
// back within the run. Over runs it gives what it gave over a share per
// bin, to the bit, on series with stalls of every length.
func TestRecovery(t *testing.T) {
	flat := func(n int, v float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	cases := []struct {
		name   string
		shares []float64
		want   float64
	}{
		{"never fell", flat(40, 0.9), 0},
		{"down 5 µs", append(append(flat(20, 0.9), flat(5, 0)...), flat(30, 0.9)...), 5},
		{"down 1 s", append(append(flat(20, 0.9), flat(1_000_000, 0)...), flat(30, 0.9)...), 1_000_000},
		{"never back", append(flat(20, 0.9), flat(30, 0.1)...), -1},
	}
	for _, c := range cases {
		s := &Sim{shares: runsOf(c.shares), binPS: ps(time.Microsecond)}
		if got := s.recovery(ps(20 * time.Microsecond)); got != c.want {
			t.Errorf("%s: recovery %v µs, want %v", c.name, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 2000; k++ {
		var v []float64
		for len(v) < 400 {
			n := 1 + rng.IntN(30)
			x := 0.0
			switch rng.IntN(3) {
			case 0:
				x = rng.Float64()
			case 1:
				x = 0.9
			}
			for range n {
				if x != 0 && x != 0.9 {
					x = rng.Float64() // bins of traffic differ from each other
				}
				v = append(v, x)
			}
		}
		s := &Sim{shares: runsOf(v), binPS: ps(time.Microsecond)}
		for _, at := range []int64{5, 10, 11, 37, 100, 250, 399, 400} {
			at := ps(time.Duration(at) * time.Microsecond)
			if got, want := s.recovery(at), denseRecovery(v, at, s.binPS); got != want {
				t.Fatalf("series %d, at %d ps: recovery %v, over a share per bin %v", k, at, got, want)
			}
		}
	}
}
