package sim

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestReadFlowsNames: a workload file names hosts exactly as the fabric
// does (small's are nic-00 to nic-31); anything else is reported, with
// every other problem, flow by flow.
func TestReadFlowsNames(t *testing.T) {
	_, p, _ := genSource(t, "small")
	in := `[{"src": "nic-00", "dst": "nic-31", "bytes": 4096, "start": "10us"},
		{"src": "nic-0", "dst": "nic-01", "bytes": 1},
		{"src": "nic-+1", "dst": "nic-32", "bytes": 1},
		{"src": "nic-001", "dst": "nic-02", "bytes": 1},
		{"src": "h1", "dst": "nic-99999999999999999999", "bytes": 1},
		{"src": "nic-05", "dst": "nic-05", "bytes": 1},
		{"src": "nic-05", "dst": "nic-06", "bytes": 0},
		{"src": "nic-07", "dst": "nic-06", "bytes": 5, "start": "-1us"}]`
	_, err := ReadFlows(strings.NewReader(in), p)
	for _, want := range []string{
		`flow 1: "nic-0" -> "nic-01": not hosts of fabric small`,
		`flow 2: "nic-+1" -> "nic-32"`,
		`flow 3: "nic-001" -> "nic-02"`,
		`flow 4: "h1" -> "nic-99999999999999999999"`,
		"flow 5: nic-05 sends to itself",
		"flow 6: bytes 0",
		"flow 7: start:",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "flow 0") {
		t.Errorf("flow 0 is good: %v", err)
	}
	flows, err := ReadFlows(strings.NewReader(`[{"src": "nic-00", "dst": "nic-31", "bytes": 4096, "start": "10us"}]`), p)
	if err != nil || len(flows) != 1 || flows[0] != (Flow{Src: plan.Host{Row: 0, Port: 0}, Dst: plan.Host{Row: 7, Port: 3}, Bytes: 4096, Start: 10 * time.Microsecond}) {
		t.Errorf("%+v, %v", flows, err)
	}
}

// BenchmarkReadFlows131k reads a workload file of 131,072 flows on
// mrc-131k, every host sending to the next: it must take under a second
// (a host name was looked up by scanning every host's, about half an hour
// for the file). flows=2048 is 2,048 of those hosts, spread over the
// fabric: a size the scan got through in seconds.
func BenchmarkReadFlows131k(b *testing.B) {
	_, p, _ := genSource(b, "mrc-131k")
	for _, n := range []int{2048, 131072} {
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			var buf bytes.Buffer
			buf.WriteString("[")
			hosts := p.F.Hosts()
			for i := range n {
				if i > 0 {
					buf.WriteString(",\n")
				}
				j := i * (hosts / n) // spread over the fabric
				src, dst := p.HostByIndex(j), p.HostByIndex((j+1)%hosts)
				fmt.Fprintf(&buf, `{"src": %q, "dst": %q, "bytes": 1048576, "start": "1us"}`, p.HostName(src), p.HostName(dst))
			}
			buf.WriteString("]")
			b.SetBytes(int64(buf.Len()))
			b.ResetTimer()
			for range b.N {
				flows, err := ReadFlows(bytes.NewReader(buf.Bytes()), p)
				if err != nil || len(flows) != n {
					b.Fatalf("%d flows, %v", len(flows), err)
				}
			}
		})
	}
}
