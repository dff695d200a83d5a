package sim

import (
	"errors"
	"strings"
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

// TestCheckPeers: New refuses a run in which a host would have QPs with
// more peers than its NIC holds QPs for, naming the host, before it
// allocates anything for the run (the QPs used to fail only once opened,
// mid-run); a run just within the limit is taken.
func TestCheckPeers(t *testing.T) {
	f, p, src := genSource(t, "mrc-1k")
	hosts, err := SpreadHosts(p, 258)
	if err != nil {
		t.Fatal(err)
	}
	star := func(n int) []Flow { // hosts[0] to n others, and one back
		var flows []Flow
		for _, h := range hosts[1 : n+1] {
			flows = append(flows, Flow{Src: hosts[0], Dst: h, Bytes: 1})
		}
		return append(flows, Flow{Src: hosts[1], Dst: hosts[0], Bytes: 1})
	}
	for _, tc := range []struct {
		name string
		opt  Options
		want string // "" for none
	}{
		{"256 peers", Options{Flows: star(256)}, ""},
		{"257 peers", Options{Flows: star(257)}, "nic-0000 has QPs with 257 other hosts, 1 per host pair: 257 QPs, and a NIC holds 256 (at most 256 peers)"},
		{"2 QPs a pair", Options{Flows: star(129), QPsPerPair: 2}, "129 other hosts, 2 per host pair: 258 QPs"},
		{"RoCE", Options{Flows: star(33), Transport: RoCE}, "33 other hosts, 8 per host pair: 264 QPs"},
		{"all-to-all of 257", Options{Collective: &Collective{Kind: AllToAll, Hosts: hosts[:257], Bytes: 1 << 20, Iterations: 1}}, ""},
		{"all-to-all of 258", Options{Collective: &Collective{Kind: AllToAll, Hosts: hosts, Bytes: 1 << 20, Iterations: 1}}, "257 other hosts"},
		{"ring of 258", Options{Collective: &Collective{Kind: RingAllReduce, Hosts: hosts, Bytes: 1 << 20, Iterations: 1}}, ""},
	} {
		_, err := New(f, src, tc.opt)
		var pe *PeersError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want a PeersError saying %q", tc.name, err, tc.want)
		}
	}
}
