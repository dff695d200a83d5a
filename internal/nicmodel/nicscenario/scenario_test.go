package nicscenario

import (
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
)

// quick is the differential test's second fabric: every packet answered,
// the smallest K the rule allows (6), N = 2.
const quick = "base: tiny\nname: nicdiff-quick\nnic: {ack_every: 1, window_packets: 64}\nfailover: {unanswered_sends: 6, probe_passes: 2}\n"

func modelNIC(t *testing.T, f *fabric.Fabric, h plan.Host) *nicmodel.NIC {
	t.Helper()
	p := plan.New(f)
	g := tables.NewGenerator(p)
	n, err := nicmodel.New(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WriteAll(nicmodel.Insert, append(g.NICCommonEntries(), g.NICEntries(h, nil)...)...); err != nil {
		t.Fatal(err)
	}
	for _, cs := range schema.NICCloneSessions(f) {
		n.SetCloneSession(cs)
	}
	return n
}

// run feeds scenarios [first, first+count) to n, as the differential test
// does, and returns the frames fed.
func run(t *testing.T, n *nicmodel.NIC, p *plan.Plan, h plan.Host, first, count uint64) int {
	t.Helper()
	var epochs Epochs
	frames := 0
	for seed := first; seed < first+count; seed++ {
		sc := New(p, h, seed, 80+int(seed%60), int(seed*8)%(schema.NICMaxQPs-8), &epochs)
		for {
			st, ok := sc.Next()
			if !ok {
				break
			}
			if st.Write {
				for _, e := range st.Entries {
					if err := n.Write(st.Op, e); err != nil {
						t.Fatalf("seed %d: %s: %v", seed, st.What, err)
					}
				}
				continue
			}
			frames++
			var out []Emitted
			for _, f := range n.Process(st.Port, st.Data) {
				out = append(out, Emitted{Port: f.Port, Data: f.AppendTo(nil)})
			}
			sc.Observe(out)
		}
	}
	return frames
}

// TestScenariosReachEveryEvent: over the differential test's scenarios, the
// model counts every event the program has at least once (on the two
// fabrics together): the scenarios exercise every behaviour the program
// counts, and every write they make is accepted. It also checks the
// counters' sums agree with each other.
func TestScenariosReachEveryEvent(t *testing.T) {
	var sum [schema.NICEventCount]uint64
	frames := 0
	for _, tc := range []struct {
		name, yaml string
	}{{"tiny", ""}, {"quick", quick}} {
		var f *fabric.Fabric
		var err error
		if tc.yaml == "" {
			f, err = fabric.FromPreset(tc.name)
		} else {
			f, err = fabric.Parse(tc.name, strings.NewReader(tc.yaml))
		}
		if err != nil {
			t.Fatal(err)
		}
		h := plan.Host{Row: 0, Port: 0}
		n := modelNIC(t, f, h)
		frames += run(t, n, plan.New(f), h, 1, 60)
		c := n.Counters()
		for i, v := range c.Events {
			sum[i] += v
		}
		if err := c.Consistent(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for i, v := range sum {
		if v == 0 {
			t.Errorf("event %d never counted in %d frames", i, frames)
		}
	}
	t.Logf("%d frames; events: %v", frames, sum)
}
