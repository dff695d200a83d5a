package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/sim"
)

// The README's "What MRC buys" table is this test's output. Each row is a
// claim of the MRC paper, measured by `mrcgen sim` runs of MRC, of the
// RoCE baseline and of RoCE with PFC, on the same fabric, workload and
// seed. The test fails when a row's claim does not hold, and when the
// README's table is not what the runs give: go test ./cmd/mrcgen -run WhatMRCBuys -update rewrites it. Rows
// marked slow (the 1,024-host fabric) run only with MRCGEN_CLAIMS=all
// (make claims); otherwise the README's rows for them are kept as they
// are.

const (
	claimsBegin = "<!-- what-mrc-buys:begin (go test ./cmd/mrcgen -run WhatMRCBuys -update) -->"
	claimsEnd   = "<!-- what-mrc-buys:end -->"
)

// The transports a row compares, and the flags that select them.
var claimTransports = []struct {
	name  string
	flags []string
}{
	{"mrc", nil},
	{"roce", []string{"--transport", "roce"}},
	{"pfc", []string{"--transport", "roce", "--pfc"}},
}

// claim is one row of the table.
type claim struct {
	name string
	slow bool
	// args is the workload; fault, if any, is added to it, and the same
	// run without it is the fault-free reference.
	args, fault []string
	// cell describes one transport's run (clean: the fault-free one, or
	// nil); check says whether the claim holds, and why not.
	cell  func(r, clean *sim.Result) string
	check func(r, clean map[string]*sim.Result) (holds bool, why string)
}

func (c claim) command(transport []string) string {
	return "mrcgen sim " + strings.Join(append(append(append([]string(nil), c.args...), c.fault...), transport...), " ")
}

// simRuns caches runs by their arguments: the fault rows share their
// fault-free references.
type simRuns map[string]*sim.Result

func (s simRuns) run(t *testing.T, args []string) *sim.Result {
	t.Helper()
	key := strings.Join(args, " ")
	if r, ok := s[key]; ok {
		return r
	}
	code, out, errOut := mrcgen(t, append(append([]string{"sim"}, args...), "-o", "json")...)
	if code != 0 {
		t.Fatalf("mrcgen sim %s: exit %d: %s", key, code, errOut)
	}
	var r sim.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("mrcgen sim %s: %v", key, err)
	}
	if r.Completed != r.Flows {
		t.Fatalf("mrcgen sim %s: %d of %d flows complete", key, r.Completed, r.Flows)
	}
	s[key] = &r
	return &r
}

func share(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// worstStep is a collective's slowest step over the slowest step of the
// same run without the fault.
func worstStep(r, clean *sim.Result) float64 {
	return r.Collective.StepTime.Max / clean.Collective.StepTime.Max
}

func whatMRCBuys() []claim {
	allreduce := []string{"-p", "small", "--hosts", "8", "-w", "ring-allreduce", "--bytes", "256MiB"}
	faultCell := func(r, clean *sim.Result) string {
		return fmt.Sprintf("worst step %.3fx fault-free; %d packets lost", worstStep(r, clean), r.Faults[0].Lost)
	}
	within := func(limit float64) func(r, clean map[string]*sim.Result) (bool, string) {
		return func(r, clean map[string]*sim.Result) (bool, string) {
			m := worstStep(r["mrc"], clean["mrc"])
			if m > limit {
				return false, fmt.Sprintf("MRC's worst step is %.3fx a fault-free one, want at most %.2fx", m, limit)
			}
			// What the fault cost is the step's time beyond a
			// fault-free one: RoCE's must be several times MRC's.
			for _, tr := range []string{"roce", "pfc"} {
				if x := worstStep(r[tr], clean[tr]); x-1 < 3*(m-1) {
					return false, fmt.Sprintf("%s's worst step %.3fx does not lose 3 times the time MRC's %.3fx does", tr, x, m)
				}
			}
			return true, ""
		}
	}
	permCell := func(r, _ *sim.Result) string {
		return fmt.Sprintf("hosts at %s (worst), %s (median) of line rate", share(r.Goodput.Min), share(r.Goodput.P50))
	}
	permCheck := func(r, _ map[string]*sim.Result) (bool, string) {
		if r["mrc"].Goodput.Min <= max(r["roce"].Goodput.Min, r["pfc"].Goodput.Min) {
			return false, "MRC's worst host does not beat both RoCE baselines' worst"
		}
		return true, ""
	}
	a2aCell := func(r, _ *sim.Result) string {
		return fmt.Sprintf("step slowdown p50 %.2f, p99 %.2f", r.Collective.Slowdown.P50, r.Collective.Slowdown.P99)
	}
	a2aBeatsRoCE := func(r, _ map[string]*sim.Result) (bool, string) {
		m := r["mrc"].Collective.Slowdown.P99
		if m >= min(r["roce"].Collective.Slowdown.P99, r["pfc"].Collective.Slowdown.P99) {
			return false, fmt.Sprintf("MRC's p99 step slowdown %.2f is not under both RoCE baselines'", m)
		}
		return true, ""
	}
	a2aUnderBound := func(r map[string]*sim.Result) (bool, string) {
		if m := r["mrc"].Collective.Slowdown.P99; m >= 1.1 {
			return false, fmt.Sprintf("MRC's p99 step slowdown %.2f, want under 1.1", m)
		}
		return true, ""
	}
	// a2aCheck is the whole claim: under both RoCE baselines, and under
	// 1.1.
	a2aCheck := func(r, clean map[string]*sim.Result) (bool, string) {
		if ok, why := a2aBeatsRoCE(r, clean); !ok {
			return false, why
		}
		return a2aUnderBound(r)
	}
	return []claim{
		{name: "Flow collisions: permutation, `small`", args: []string{"-p", "small", "-w", "permutation", "--bytes", "16MiB"},
			cell: permCell, check: permCheck},
		// At 8 MiB a host (81 µs steps) the frames' headers and the first
		// and last round trips leave no room under 1.1: seed 1's steps, with
		// no mark, no trim and no cut, take 1.100 (docs/protocol.md 8). That
		// row claims the collisions; the 32 MiB row the bound too.
		{name: "Flow collisions: all-to-all, `small`", args: []string{"-p", "small", "-w", "alltoall-collective", "--bytes", "8MiB", "--iterations", "3"},
			cell: a2aCell, check: a2aBeatsRoCE},
		{name: "Flow collisions: all-to-all, `small`, 4x the bytes",
			args: []string{"-p", "small", "-w", "alltoall-collective", "--bytes", "32MiB", "--iterations", "3"},
			cell: a2aCell, check: a2aCheck},
		{name: "Flow collisions: permutation, `mrc-1k` (256 hosts)", slow: true,
			args: []string{"-p", "mrc-1k", "--hosts", "256", "-w", "permutation", "--bytes", "16MiB"}, cell: permCell, check: permCheck},
		// One host per T0, behind 32 uplinks a plane: nothing collides,
		// and RoCE's single paths are as fast as MRC's spray. The row
		// claims the bound only.
		{name: "All-to-all, `mrc-1k` (32 hosts, one per T0: nothing to collide)", slow: true,
			args: []string{"-p", "mrc-1k", "--hosts", "32", "-w", "alltoall-collective", "--bytes", "16MiB", "--iterations", "3"},
			cell: a2aCell, check: func(r, _ map[string]*sim.Result) (bool, string) { return a2aUnderBound(r) }},
		{name: "A T0-T1 link flapping (down 1 ms in every 2) under a ring all-reduce", args: allreduce,
			fault: []string{"--flap", "p0-t0-0:p0-t1-0@50us,period=2ms,duty=50%"}, cell: faultCell, check: within(1.05)},
		{name: "A T1 switch failing mid-step", args: allreduce,
			fault: []string{"--switch-down", "p0-t1-0@1ms"}, cell: faultCell, check: within(1.05)},
		{name: "1% random loss on one link (a grey failure)", args: allreduce,
			fault: []string{"--loss", "p0-t0-0:p0-t1-0:1%"}, cell: faultCell, check: within(1.10)},
		{name: "Incast: 31 hosts of `small` into one", args: []string{"-p", "small", "-w", "incast", "--bytes", "1MiB"},
			cell: func(r, _ *sim.Result) string {
				x := r.Retransmits
				return fmt.Sprintf("receiver at %s of line rate; %d trims, %d tail drops, %d resends, %d timeouts", share(r.ReceiveGoodput.Max),
					r.Trims.Fabric+r.Trims.LastHop, r.Drops.TailDrop, x.TrimNACK+x.SACKGap+x.TailProbe+x.Timeout+x.SeqError, x.Timeout)
			},
			check: func(r, _ map[string]*sim.Result) (bool, string) {
				m := r["mrc"]
				if m.ReceiveGoodput.Max < 0.9 || m.Retransmits.Timeout != 0 {
					return false, fmt.Sprintf("MRC's receiver at %s with %d timeouts, want 90%% and none", share(m.ReceiveGoodput.Max), m.Retransmits.Timeout)
				}
				if m.ReceiveGoodput.Max <= r["roce"].ReceiveGoodput.Max {
					return false, "MRC's receiver does not beat lossy RoCE's"
				}
				return true, ""
			}},
	}
}

// TestWhatMRCBuys measures the README's table and checks every claim.
func TestWhatMRCBuys(t *testing.T) {
	if testing.Short() {
		t.Skip("the claims' simulations take minutes; -short skips them")
	}
	all := os.Getenv("MRCGEN_CLAIMS") == "all"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(readme, []byte(claimsBegin)), bytes.Index(readme, []byte(claimsEnd))
	if begin < 0 || end < begin {
		t.Fatalf("README.md: no %q ... %q block", claimsBegin, claimsEnd)
	}
	current := string(readme[begin+len(claimsBegin)+1 : end])
	old := map[string]string{}
	for _, line := range strings.Split(current, "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | "); ok {
			old[name] = line
		}
	}
	runs := simRuns{}
	var rows []string
	for _, c := range whatMRCBuys() {
		if c.slow && !all {
			row, ok := old[c.name]
			if !ok {
				t.Errorf("%s: not in the README's table; MRCGEN_CLAIMS=all measures it", c.name)
			}
			rows = append(rows, row)
			continue
		}
		res, clean := map[string]*sim.Result{}, map[string]*sim.Result{}
		cells := []string{c.name}
		for _, tr := range claimTransports {
			res[tr.name] = runs.run(t, append(append(append([]string(nil), c.args...), c.fault...), tr.flags...))
			if c.fault != nil {
				clean[tr.name] = runs.run(t, append(append([]string(nil), c.args...), tr.flags...))
			}
			cells = append(cells, c.cell(res[tr.name], clean[tr.name]))
		}
		if holds, why := c.check(res, clean); holds {
			cells = append(cells, "yes")
		} else {
			t.Errorf("%s: the claim no longer holds: %s", c.name, why)
			cells = append(cells, "NO: "+why)
		}
		cells = append(cells, "`"+c.command(nil)+"`")
		rows = append(rows, "| "+strings.Join(cells, " | ")+" |")
		t.Log(rows[len(rows)-1])
	}
	table := "| Claim | MRC | RoCE (lossy) | RoCE with PFC | Holds | Reproduce (RoCE: add `--transport roce`, and `--pfc`) |\n" +
		"|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	if table == current {
		return
	}
	if !*updateGolden {
		t.Fatalf("README.md's \"What MRC buys\" table is not what the runs give; review it and run go test ./cmd/mrcgen -run WhatMRCBuys -update. Measured:\n%s", table)
	}
	out := append(append(append([]byte(nil), readme[:begin+len(claimsBegin)+1]...), table...), readme[end:]...)
	if err := os.WriteFile("../../README.md", out, 0o644); err != nil {
		t.Fatal(err)
	}
}
