package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
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
	host := func(name string) (plan.Host, bool) {
		for i := 0; i < p.F.Hosts(); i++ {
			if h := p.HostByIndex(i); p.HostName(h) == name {
				return h, true
			}
		}
		return plan.Host{}, false
	}
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
