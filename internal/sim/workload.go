package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// SpreadHosts returns n of the fabric's hosts spread evenly over it (every
// T0 row gets its share), or every host when n is 0 or the fabric's count.
func SpreadHosts(p *plan.Plan, n int) ([]plan.Host, error) {
	total := p.F.Hosts()
	if n == 0 {
		n = total
	}
	if n < 2 || n > total {
		return nil, fmt.Errorf("%d hosts: the fabric has %d (want 2 or more)", n, total)
	}
	out := make([]plan.Host, n)
	for i := range out {
		out[i] = p.HostByIndex(int(int64(i) * int64(total) / int64(n)))
	}
	return out, nil
}

// Permutation is every host sending bytes to one other, each receiving
// from one: a random derangement drawn from seed.
func Permutation(hosts []plan.Host, bytes int64, start time.Duration, seed uint64) []Flow {
	rng := rand.New(rand.NewPCG(seed, 0x7065726d))
	n := len(hosts)
	dst := make([]int, n)
	for i := range dst {
		dst[i] = i
	}
	// Sattolo's algorithm: a uniformly random cyclic permutation, so that
	// no host sends to itself.
	for i := n - 1; i > 0; i-- {
		j := rng.IntN(i)
		dst[i], dst[j] = dst[j], dst[i]
	}
	flows := make([]Flow, n)
	for i := range flows {
		flows[i] = Flow{Src: hosts[i], Dst: hosts[dst[i]], Bytes: bytes, Start: start}
	}
	return flows
}

// IncastFlows is every host but the first sending bytes to the first, all
// at once: the receiver's NIC is the bottleneck.
func IncastFlows(hosts []plan.Host, bytes int64, start time.Duration) []Flow {
	var flows []Flow
	for _, a := range hosts[1:] {
		flows = append(flows, Flow{Src: a, Dst: hosts[0], Bytes: bytes, Start: start})
	}
	return flows
}

// AllToAllFlows is every host sending bytes to every other, all at once.
// Host i's flows go to hosts i+1, i+2, ... (modulo their count), in that
// order, which is the order its QPs first take turns in: a collective
// library schedules its peers so (NCCL pairs rank r with r+d at its step
// d). Listed by destination, every host would send to the same peer
// first.
func AllToAllFlows(hosts []plan.Host, bytes int64, start time.Duration) []Flow {
	n := len(hosts)
	flows := make([]Flow, 0, n*(n-1))
	for i, a := range hosts {
		for d := 1; d < n; d++ {
			flows = append(flows, Flow{Src: a, Dst: hosts[(i+d)%n], Bytes: bytes, Start: start})
		}
	}
	return flows
}

// fileFlow is one flow of a workload file.
type fileFlow struct {
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Bytes int64  `json:"bytes"`
	Start string `json:"start,omitempty"`
}

// ReadFlows reads a workload file: a JSON array of {"src": "nic-0", "dst":
// "nic-5", "bytes": 1048576, "start": "10us"}. Unknown fields are refused;
// every bad flow is reported.
func ReadFlows(r io.Reader, p *plan.Plan) ([]Flow, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var in []fileFlow
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("workload file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("workload file: data after the JSON array")
	}
	host := func(name string) (plan.Host, bool) { return hostByName(p, name) }
	var flows []Flow
	var errs []error
	for i, f := range in {
		src, okS := host(f.Src)
		dst, okD := host(f.Dst)
		var start time.Duration
		var err error
		if f.Start != "" {
			start, err = ParseTime(f.Start)
		}
		switch {
		case !okS || !okD:
			errs = append(errs, fmt.Errorf("flow %d: %q -> %q: not hosts of fabric %s", i, f.Src, f.Dst, p.F.Name))
		case src == dst:
			errs = append(errs, fmt.Errorf("flow %d: %s sends to itself", i, f.Src))
		case f.Bytes <= 0:
			errs = append(errs, fmt.Errorf("flow %d: bytes %d: want a positive size", i, f.Bytes))
		case err != nil:
			errs = append(errs, fmt.Errorf("flow %d: start: %w", i, err))
		default:
			flows = append(flows, Flow{Src: src, Dst: dst, Bytes: f.Bytes, Start: start})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("workload file: %w", err)
	}
	if len(flows) == 0 {
		return nil, errors.New("workload file: no flows")
	}
	return flows, nil
}

// QPsPerPeer is how many QPs a host of a run opens with each of its peers:
// RoCE qps on every plane (0: DefaultRoCEQPs), MRC qps (0: the default,
// 1).
func QPsPerPeer(f *fabric.Fabric, tr Transport, qps int) int {
	switch {
	case tr == RoCE && qps > 0:
		return f.Planes * qps
	case tr == RoCE:
		return f.Planes * DefaultRoCEQPs(f)
	case qps > 0:
		return qps
	}
	return 1
}

// MaxPeers is how many peers a host can have QPs with: its NIC holds the
// state of schema.NICMaxQPs QPs, and each peer takes qpsPerPeer.
func MaxPeers(qpsPerPeer int) int { return schema.NICMaxQPs / max(qpsPerPeer, 1) }

// PeersError is a run in which a host would open more QPs than its NIC
// holds: Host has QPs with Peers others, QPsPerPeer each.
type PeersError struct {
	Host              string
	Peers, QPsPerPeer int
}

func (e *PeersError) Error() string {
	return fmt.Sprintf("%s has QPs with %d other hosts, %d per host pair: %d QPs, and a NIC holds %d (at most %d peers)",
		e.Host, e.Peers, e.QPsPerPeer, e.Peers*e.QPsPerPeer, schema.NICMaxQPs, MaxPeers(e.QPsPerPeer))
}

// CheckPeers refuses flows and a collective that would have a host open
// more QPs than its NIC holds (a *PeersError), before a run allocates
// anything for them:
// a host opens qpsPerPeer QPs with every host it sends to or receives
// from (both directions share them). It stops at the first host found
// over, so that its memory stays within what maxPeers allows per host.
func CheckPeers(p *plan.Plan, flows []Flow, c *Collective, qpsPerPeer int) error {
	limit := MaxPeers(qpsPerPeer)
	if c != nil && c.Kind == AllToAll && len(c.Hosts)-1 > limit {
		return &PeersError{Host: p.HostName(c.Hosts[0]), Peers: len(c.Hosts) - 1, QPsPerPeer: qpsPerPeer}
	}
	pairs := map[[2]int]bool{}
	peers := map[int]int{}
	add := func(a, b plan.Host) error {
		x, y := p.Index(a), p.Index(b)
		if x > y {
			x, y = y, x
		}
		if x == y || pairs[[2]int{x, y}] {
			return nil
		}
		pairs[[2]int{x, y}] = true
		for _, h := range [2]int{x, y} {
			peers[h]++
			if peers[h] > limit {
				return &PeersError{Host: p.HostName(p.HostByIndex(h)), Peers: peers[h], QPsPerPeer: qpsPerPeer}
			}
		}
		return nil
	}
	for _, fl := range flows {
		if err := add(fl.Src, fl.Dst); err != nil {
			return err
		}
	}
	if c != nil {
		n := len(c.Hosts)
		for i, a := range c.Hosts {
			for d := 1; d < n; d++ {
				if c.Kind == RingAllReduce && d > 1 {
					break // a ring's host has its successor and its predecessor
				}
				if err := add(a, c.Hosts[(i+d)%n]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hostByName is the host of plan p named name. A host's name is "nic-"
// and its index, zero-padded to the fabric's widest (nic-007 of 1,000
// hosts): the number read from it gives the only host that can have the
// name, whose own name must then be exactly it. Looking a name up by
// comparing it with every host's took half an hour for a file of
// mrc-131k's 131,072 flows.
func hostByName(p *plan.Plan, name string) (plan.Host, bool) {
	digits, ok := strings.CutPrefix(name, "nic-")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 0 || n >= p.F.Hosts() {
		return plan.Host{}, false
	}
	h := p.HostByIndex(n)
	var buf [32]byte
	return h, string(p.AppendHostName(buf[:0], h)) == name
}
