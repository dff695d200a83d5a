package sim

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// TestAllToAllFlowsStaggered: every host sends to every other once, and
// the k-th flows of the hosts go to k-th peers that are all distinct: when
// the hosts' QPs first take turns, no receiver gets two senders' first
// packets (in the order of the list all would send to the same peer).
func TestAllToAllFlowsStaggered(t *testing.T) {
	_, p, _ := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := AllToAllFlows(hosts, 1<<20, 0)
	n := len(hosts)
	if len(flows) != n*(n-1) {
		t.Fatalf("%d flows, want %d", len(flows), n*(n-1))
	}
	seen := map[[2]plan.Host]bool{}
	for k := 0; k < n-1; k++ {
		dsts := map[plan.Host]bool{}
		for i := 0; i < n; i++ {
			fl := flows[i*(n-1)+k]
			if fl.Src != hosts[i] || fl.Src == fl.Dst || seen[[2]plan.Host{fl.Src, fl.Dst}] {
				t.Fatalf("flow %d of host %d: %s -> %s, want one of its own to a new peer", k, i, p.HostName(fl.Src), p.HostName(fl.Dst))
			}
			seen[[2]plan.Host{fl.Src, fl.Dst}] = true
			if dsts[fl.Dst] {
				t.Errorf("flow %d of each host: %s receives two", k, p.HostName(fl.Dst))
			}
			dsts[fl.Dst] = true
		}
	}
}
