package verify

import (
	"context"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/tables"
)

func TestQuick(t *testing.T) {
	for _, name := range fabric.PresetNames() {
		f, err := fabric.FromPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		p := plan.New(f)
		rep, err := Run(context.Background(), p, GeneratorSource{tables.NewGenerator(p)}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", name, rep)
	}
}
