package labtransfer

import (
	"context"
	"testing"
)

// The sender waits at each step's packet in turn, whichever link it is on,
// and at none once every step is applied; a step at 0% holds nothing (it
// goes before the write's first send).
func TestSendLimitFollowsTheSteps(t *testing.T) {
	opt := &Options{Links: []LinkEvents{
		{A: "a", B: "b", At: []float64{0.25, 0.6}},
		{A: "c", B: "d", At: []float64{0, 0.4}},
	}}
	s := &scenario{opt: opt, r: &Runner{}}
	if err := s.begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 1024
	if got := len(s.due(0, n)); got != 1 {
		t.Fatalf("%d steps due before the first send, want the one at 0%%", got)
	}
	for _, want := range []struct {
		limit int
		due   int
	}{{256, 1}, {410, 1}, {615, 1}, {0, 0}} { // ceil(0.4 x 1024) = 410, ceil(0.6 x 1024) = 615
		got := s.sendLimit(n)
		if got != want.limit {
			t.Fatalf("send limit %d, want %d", got, want.limit)
		}
		if want.limit == 0 {
			break
		}
		if d := s.due(int64(got-1), n); len(d) != 0 {
			t.Fatalf("at %d first sends %v due, want none before %d", got-1, d, got)
		}
		if d := s.due(int64(got), n); len(d) != want.due {
			t.Fatalf("at %d first sends %d steps due, want %d", got, len(d), want.due)
		}
	}
}
