package labtransfer

import (
	"reflect"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

func TestParse(t *testing.T) {
	if ev, err := ParseCut("p0-t0-0:p0-t1-0@30%"); err != nil || !reflect.DeepEqual(ev, LinkEvents{A: "p0-t0-0", B: "p0-t1-0", At: []float64{0.3}}) {
		t.Errorf("cut: %+v %v", ev, err)
	}
	if ev, err := ParseFlap("a:b@30%,60%"); err != nil || !reflect.DeepEqual(ev.At, []float64{0.3, 0.6}) {
		t.Errorf("flap: %+v %v", ev, err)
	}
	if th, err := ParseThrottle("p0-t1-0:p0-t0-1:25"); err != nil || th != (Throttle{Device: "p0-t1-0", Neighbour: "p0-t0-1", PPS: 25}) {
		t.Errorf("throttle: %+v %v", th, err)
	}
	if ls, err := ParseLoss("a:b:0.5%"); err != nil || ls != (Loss{A: "a", B: "b", Percent: 0.5}) {
		t.Errorf("loss: %+v %v", ls, err)
	}
	for _, bad := range []string{"a:b", "a:b@", "a@30%", "a:b@100%", "a:b@30%,60%", "a:b@-1%"} {
		if _, err := ParseCut(bad); err == nil {
			t.Errorf("cut %q accepted", bad)
		}
	}
	for _, bad := range []string{"a:b@30%", "a:b@60%,30%"} {
		if _, err := ParseFlap(bad); err == nil {
			t.Errorf("flap %q accepted", bad)
		}
	}
	for _, bad := range []string{"a/1", "a/x:5", "a:0", "a/1:-3"} {
		if _, err := ParseThrottle(bad); err == nil {
			t.Errorf("throttle %q accepted", bad)
		}
	}
	for _, bad := range []string{"a:1%", "a:b:101%", "a:b:x"} {
		if _, err := ParseLoss(bad); err == nil {
			t.Errorf("loss %q accepted", bad)
		}
	}
	if a, b := Payload(1, 100), Payload(1, 100); string(a) != string(b) || string(a) == string(Payload(2, 100)) {
		t.Error("Payload is not a function of its seed")
	}
}

// TestSinglePathOffsetRange: the path a single-path QP takes is predicted
// only for the T1 offsets a QP entry may have (lab.QPEntries refuses the
// rest), so that the prediction never disagrees with the NIC.
func TestSinglePathOffsetRange(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(f)
	for off := 0; off < f.T1Count; off++ {
		path, err := SinglePath(p, "nic-0", "nic-3", off)
		if err != nil || path.T1 != (p.SplitEV(p.EVSet()[0]).T1+off)%f.T1Count {
			t.Errorf("offset %d: %+v %v", off, path, err)
		}
	}
	for _, off := range []int{-1, f.T1Count, 2 * f.T1Count} {
		if _, err := SinglePath(p, "nic-0", "nic-3", off); err == nil {
			t.Errorf("offset %d accepted", off)
		}
	}
}
