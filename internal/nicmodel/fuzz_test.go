package nicmodel_test

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel"
	"github.com/mrc-fabric/mrcgen/internal/nicmodel/nicscenario"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables"
)

// FuzzProcess feeds arbitrary frames, on any port, to a NIC with QPs open
// (the seeds: a scenario's frames): the model must not panic, must emit at
// most one frame per pass plus the packet, only on its ports, and keep its
// counters consistent with each other.
func FuzzProcess(f *testing.F) {
	fab, err := fabric.FromPreset("tiny")
	if err != nil {
		f.Fatal(err)
	}
	p := plan.New(fab)
	h := plan.Host{Row: 0, Port: 0}
	var epochs nicscenario.Epochs
	sc := nicscenario.New(p, h, 7, 200, 0, &epochs)
	var opens []nicscenario.Step
	for {
		st, ok := sc.Next()
		if !ok {
			break
		}
		switch {
		case st.Write && st.Op == nicmodel.Insert:
			opens = append(opens, st)
		case !st.Write:
			f.Add(uint8(st.Port), st.Data)
		}
	}
	g := tables.NewGenerator(p)
	newNIC := func(t *testing.T) *nicmodel.NIC {
		n, err := nicmodel.New(fab, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.WriteAll(nicmodel.Insert, append(g.NICCommonEntries(), g.NICEntries(h, nil)...)...); err != nil {
			t.Fatal(err)
		}
		for _, st := range opens {
			_ = n.WriteAll(st.Op, st.Entries...) // a reopened QP's second insert is refused: fine
		}
		for _, cs := range schema.NICCloneSessions(fab) {
			n.SetCloneSession(cs)
		}
		return n
	}
	f.Fuzz(func(t *testing.T, port uint8, frame []byte) {
		n := newNIC(t)
		for i := 0; i < 3; i++ { // the same frame thrice: state moves
			out := n.Process(uint32(port), frame)
			if len(out) > n.Params().MaxTries+2 {
				t.Fatalf("%d frames out", len(out))
			}
			for _, o := range out {
				if int(o.Port) > fab.Planes {
					t.Fatalf("frame out on port %d: the NIC has %d", o.Port, fab.Planes+1)
				}
			}
		}
		if c := n.Counters(); c.Consistent() != nil {
			t.Fatalf("%v: %+v", c.Consistent(), c)
		}
	})
}
