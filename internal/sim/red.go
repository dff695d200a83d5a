package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// RED is the ECN marking a RoCE fabric's switches apply to RoCE data (DSCP
// NO_TRIM, ECN-capable) at every egress queue, host-facing ports too:
// DCQCN's switch side (Zhu et al., SIGCOMM 2015, section 3.1). A packet
// that finds fewer than KminBytes in the queue is not marked; one that
// finds KmaxBytes or more is; in between it is marked with probability
// Pmax × (q − KminBytes) / (KmaxBytes − KminBytes). The queue q is the
// data bytes queued or being sent on the port when the packet arrives
// (frames without their preamble, FCS and gap), as switches count their
// ECN thresholds in buffer bytes (NVIDIA Spectrum in cells), so that a
// threshold means the same for any segment size. MRC's TRIMMABLE data
// keeps its own rule: marked at trim.ecn_packets on fabric-facing ports
// (docs/protocol.md 8).
type RED struct {
	KminBytes int64   `json:"kmin_bytes"`
	KmaxBytes int64   `json:"kmax_bytes"`
	Pmax      float64 `json:"pmax"` // in (0, 1]
}

// NVIDIA's RoCE profile for its Spectrum switches (Cumulus Linux `nv set
// qos roce`, lossy and lossless alike: "congestion-control ... ECN,
// min-threshold 150000 bytes, max-threshold 1500000 bytes, probability
// 100" on the RoCE traffic class;
// https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-514/Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE/).
// The profile is one set of absolute thresholds for every port speed of
// the switch (Spectrum-2 to Spectrum-5: 100 to 800 Gb/s ports).
const (
	nvidiaKmin = 150_000
	nvidiaKmax = 1_500_000
	nvidiaPmax = 1.0
)

// DefaultRED is the marking of a port of gbps Gb/s: NVIDIA's RoCE
// profile, the same at every speed (see the constants). A queue's
// thresholds in bytes are a time at the port's rate: 150,000 bytes are
// 12 µs at 100 Gb/s, 6 µs at 200, 1.5 µs at 800. The DCQCN paper's
// values (Kmin 5 KB, Kmax 200 KB, Pmax 1% at 40 Gb/s) scale with the
// speed to keep that time (12.5 KB and 500 KB at 100 Gb/s); NVIDIA's
// profile does not, and it is what a Spectrum fabric runs unless its
// operator changes it (--roce-ecn does).
func DefaultRED(gbps int64) RED {
	return RED{KminBytes: nvidiaKmin, KmaxBytes: nvidiaKmax, Pmax: nvidiaPmax}
}

// Check refuses thresholds that are not a RED curve.
func (r RED) Check() error {
	var errs []error
	if r.KminBytes < 0 {
		errs = append(errs, fmt.Errorf("kmin %d bytes: want 0 or more", r.KminBytes))
	}
	if r.KmaxBytes <= r.KminBytes {
		errs = append(errs, fmt.Errorf("kmax %d bytes: want above kmin (%d bytes)", r.KmaxBytes, r.KminBytes))
	}
	if !(r.Pmax > 0 && r.Pmax <= 1) || math.IsNaN(r.Pmax) {
		errs = append(errs, fmt.Errorf("pmax %g: want above 0 and at most 1 (100%%)", r.Pmax))
	}
	return errors.Join(errs...)
}

// Prob is the marking probability of a packet that finds q bytes queued.
func (r RED) Prob(q int64) float64 {
	switch {
	case q < r.KminBytes:
		return 0
	case q >= r.KmaxBytes:
		return 1
	}
	return r.Pmax * float64(q-r.KminBytes) / float64(r.KmaxBytes-r.KminBytes)
}

// stream is one device's random draws (RED's marks at a switch's egress,
// random loss on the links it sends on): its own stream of the seed and
// the device's id, so that what a device draws depends on nothing another
// device does, nor on which worker of a parallel run runs it.
type stream struct{ pcg rand.PCG }

func deviceStream(seed uint64, dev int32) stream {
	return stream{*rand.NewPCG(seed, 0x646576<<32|uint64(uint32(dev)))}
}

// float64 is a draw in [0, 1), as math/rand/v2's Rand.Float64 makes it.
func (st *stream) float64() float64 { return float64(st.pcg.Uint64()<<11>>11) / (1 << 53) }

// mark decides whether a packet that finds q bytes queued is marked. It
// draws only between Kmin and Kmax, where the outcome is in doubt.
func (r RED) mark(q int64, rng *stream) bool {
	p := r.Prob(q)
	if p <= 0 || p >= 1 {
		return p >= 1
	}
	return rng.float64() < p
}

// ParseRED reads "kmin=BYTES,kmax=BYTES,pmax=P%" (any of the three, in
// any order; sizes as ParseBytes reads them, kmin also 0; pmax a percent
// or a fraction), starting from base.
func ParseRED(s string, base RED) (RED, error) {
	r := base
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return RED{}, fmt.Errorf("%q: want key=value, the keys kmin, kmax and pmax", kv)
		}
		if seen[k] {
			return RED{}, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		switch k {
		case "kmin", "kmax":
			n, err := int64(0), error(nil)
			if v != "0" {
				n, err = ParseBytes(v)
			}
			if err != nil {
				return RED{}, fmt.Errorf("%s: %w", k, err)
			}
			if k == "kmin" {
				r.KminBytes = n
			} else {
				r.KmaxBytes = n
			}
		case "pmax":
			num, pct := strings.CutSuffix(v, "%")
			p, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil {
				return RED{}, fmt.Errorf("pmax %q: want a probability, e.g. 1%% or 0.01", v)
			}
			if pct {
				p /= 100
			}
			r.Pmax = p
		default:
			return RED{}, fmt.Errorf("unknown key %q: want kmin, kmax or pmax", k)
		}
	}
	if err := r.Check(); err != nil {
		return RED{}, err
	}
	return r, nil
}
