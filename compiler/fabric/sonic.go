package fabric

import (
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
)

// SONiCTargets lists the switch ASICs `sonic.target` may name; their limits
// are data in compiler/sonic (targets.go), which checks that it knows each.
var SONiCTargets = []string{"generic", "spectrum-4", "spectrum-5", "tomahawk-5"}

// DefaultLinkPrefix is where link addresses come from unless
// sonic.link_prefix says otherwise.
const DefaultLinkPrefix = "fd00:6d72:6c00::/64"

// MaxLanesPerPort is the widest port: an 8-lane (OSFP / QSFP-DD) cage.
const MaxLanesPerPort = 8

// LinkCount is the number of point-to-point links of the fabric: every T0
// to every T1 and to each of its hosts, in every plane. (Links is the
// field with their delays.)
func (f *Fabric) LinkCount() int { return f.Planes * f.T0Count * (f.T1Count + f.T0Down) }

// checkSONiC checks the sonic section; block and hosts are the resolved uSID
// block and host prefix (zero when they were invalid).
func checkSONiC(d Description, block uint32, hosts netip.Prefix) []error {
	var errs []error
	bad := func(field string, value any, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)})
	}
	s := d.SONiC
	if s.Target != "" && !slices.Contains(SONiCTargets, s.Target) {
		bad("sonic.target", fmt.Sprintf("%q", s.Target), "unknown switch target (known: %v)", SONiCTargets)
	}
	if s.LanesPerPort < 0 || s.LanesPerPort > MaxLanesPerPort {
		bad("sonic.lanes_per_port", s.LanesPerPort, "a port has 1 to %d lanes (0: port speed / 100G)", MaxLanesPerPort)
	}
	if s.FirstLane < 0 {
		bad("sonic.first_lane", s.FirstLane, "lane numbers start at 0")
	}
	if s.LinkPrefix == "" {
		return errs
	}
	p, err := netip.ParsePrefix(s.LinkPrefix)
	switch {
	case err != nil:
		bad("sonic.link_prefix", fmt.Sprintf("%q", s.LinkPrefix), "not an IPv6 prefix: %v", err)
	case !p.Addr().Is6() || p.Addr().Is4In6():
		bad("sonic.link_prefix", s.LinkPrefix, "must be an IPv6 prefix")
	case p.Masked() != p:
		bad("sonic.link_prefix", s.LinkPrefix, "has bits set beyond /%d (did you mean %s?)", p.Bits(), p.Masked())
	case p.Bits() > 126:
		bad("sonic.link_prefix", s.LinkPrefix, "must be /126 or shorter: it holds a /127 per link")
	default:
		if hosts.IsValid() && p.Overlaps(hosts) {
			bad("sonic.link_prefix", s.LinkPrefix, "overlaps the host prefix %s", hosts)
		}
		if block != 0 {
			b := netip.PrefixFrom(netip.AddrFrom16([16]byte{byte(block >> 24), byte(block >> 16), byte(block >> 8), byte(block)}), 32)
			if p.Overlaps(b) {
				bad("sonic.link_prefix", s.LinkPrefix, "overlaps the uSID block %s", b)
			}
		}
		links := uint64(max(d.Planes, 0)) * uint64(max(d.T0.Count, 0)) * uint64(max(d.T1.Count, 0)+max(d.T0.DownPorts, 0))
		if links > 0 {
			need := bits.Len64(links-1) + 1 // one /127 (two addresses) per link
			if need > 128-p.Bits() {
				bad("sonic.link_prefix", s.LinkPrefix, "%d links need a /127 each: a /%d holds %d, use a /%d or shorter", links, p.Bits(), uint64(1)<<(127-p.Bits()), 128-need)
			}
		}
	}
	return errs
}
