package verify_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// entriesOnly hides a source's lookups and NIC parts: Run then decodes every
// device's entries, as it does for a source it cannot ask for lookups.
type entriesOnly struct{ src verify.Source }

func (e entriesOnly) SwitchEntries(s plan.Switch) ([]entry.Entry, error) {
	return e.src.SwitchEntries(s)
}
func (e entriesOnly) NICEntries(h plan.Host) ([]entry.Entry, error) { return e.src.NICEntries(h) }
func (e entriesOnly) NICCommonEntries() ([]entry.Entry, error)      { return e.src.NICCommonEntries() }

// TestLazySourceAgrees checks that the generator walked lazily (switch
// lookups answered key by key, NIC parts decoded once) gives the very
// report the same generator's materialised entries give, and the brute
// force's counts, on tiny and small with links down (none, one, several).
func TestLazySourceAgrees(t *testing.T) {
	if _, ok := generated(newPlan(t, "tiny")).(verify.LookupSource); !ok {
		t.Fatal("GeneratorSource is not a LookupSource: Run would materialise its entries")
	}
	if _, ok := generated(newPlan(t, "tiny")).(verify.NICPartSource); !ok {
		t.Fatal("GeneratorSource is not a NICPartSource")
	}
	rng := rand.New(rand.NewPCG(13, 1))
	for _, preset := range []string{"tiny", "small"} {
		p := newPlan(t, preset)
		lazy := generated(p)
		for round := 0; round < 40; round++ {
			down := randomLinks(p, rng, round%4)
			want, err := verify.Run(context.Background(), p, entriesOnly{lazy}, verify.Options{Down: down, MaxFailures: 1000})
			if err != nil {
				t.Fatal(err)
			}
			got := checkAgainstBrute(t, p, lazy, down, preset)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, down %v:\nlazy         %+v\nmaterialised %+v", preset, down, got, want)
			}
		}
	}
}
