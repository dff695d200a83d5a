package verify

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// Failure is one problem Run found, named by where it is: the device, the
// file it was read from, the table and the key of the entry that is missing
// or wrong. Paths lists the path classes that need that entry.
type Failure struct {
	// Device is the switch or NIC ("p0-t1-0", "nic-003"), or "every NIC"
	// for the tables all NICs share.
	Device string `json:"device"`
	// File is the build file that holds the device's entries, when Run read
	// a build (the Source implements Locator).
	File string `json:"file,omitempty"`
	// Table is the P4 table (full name) whose entry is missing or wrong;
	// empty when the problem is not an entry (a link taken down).
	Table string `json:"table,omitempty"`
	// Key names the entry: "fcbb:bb00:401::/48 (uN of p0-t0-1)", "slots 3-5",
	// "plane 1".
	Key string `json:"key,omitempty"`
	// Problem is the whole message (it repeats the table and key).
	Problem string `json:"problem"`
	// Paths are the lost path classes this failure explains ("p0-t0-0 ->
	// p0-t0-1 via p0-t1-0"), the first MaxPathsPerFailure of them.
	Paths []string `json:"paths,omitempty"`
	// MorePaths counts the classes left out of Paths.
	MorePaths int `json:"more_paths,omitempty"`
}

// MaxPathsPerFailure bounds Failure.Paths.
const MaxPathsPerFailure = 8

// where is "device (file)".
func (f *Failure) where() string {
	if f.File != "" {
		return f.Device + " (" + f.File + ")"
	}
	return f.Device
}

// Cause is the failure without the paths that need it.
func (f *Failure) Cause() string { return f.where() + ": " + f.Problem }

// String is the cause and, when known, the paths it breaks.
func (f Failure) String() string {
	s := f.Cause()
	if len(f.Paths) > 0 {
		s += ", needed by paths " + strings.Join(f.Paths, "; ")
		if f.MorePaths > 0 {
			s += fmt.Sprintf(" and %d more", f.MorePaths)
		}
	}
	return s
}

// Locator is implemented by a Source that reads files (a build directory):
// it names the file each device's entries come from, for failure messages.
type Locator interface {
	// SwitchFile is the file of switch s's entries.
	SwitchFile(s plan.Switch) string
	// NICFile is the file that holds host h's own entries of a table.
	NICFile(h plan.Host, table string) string
	// NICCommonFile is the file of the entries every NIC shares.
	NICCommonFile() string
}

// EveryNIC is the Device of failures in the tables all NICs share.
const EveryNIC = "every NIC"

// failureSet collects a Run's failures, once each, up to a bound (none
// when max is 0), and the distinct path classes each breaks.
type failureSet struct {
	rep   *Report
	max   int
	index map[string]int
	// byPtr remembers where a *Failure went: a walk meets the same cause
	// once per host.
	byPtr map[*Failure]int
}

func newFailureSet(rep *Report, max int) *failureSet {
	return &failureSet{rep: rep, max: max, index: map[string]int{}, byPtr: map[*Failure]int{}}
}

// add records f (once) and returns its index in the report, or -1 when
// the report is full.
func (s *failureSet) add(f *Failure) int {
	if i, ok := s.byPtr[f]; ok {
		return i
	}
	key := f.Cause()
	i, ok := s.index[key]
	switch {
	case ok:
	case s.max > 0 && len(s.rep.Failures) >= s.max:
		i = -1
	default:
		i = len(s.rep.Failures)
		s.index[key] = i
		g := *f
		g.Paths, g.MorePaths = nil, 0
		s.rep.Failures = append(s.rep.Failures, g)
	}
	s.byPtr[f] = i
	return i
}

// addPath notes that failure i breaks the paths of a class it was not
// given before (the caller makes sure), named by class() when it is listed.
func (s *failureSet) addPath(i int, class func() string) {
	if i < 0 {
		return
	}
	f := &s.rep.Failures[i]
	if len(f.Paths) < MaxPathsPerFailure {
		f.Paths = append(f.Paths, class())
	} else {
		f.MorePaths++
	}
}

// merge adds the failures one plane's walk found (in its own unbounded
// set), in the order it found them: the result is the one a single walk of
// the planes in order gives (a class names its plane: no two planes give
// a failure the same class).
func (s *failureSet) merge(from []Failure) {
	for j := range from {
		f := &from[j]
		i := s.add(f)
		if i < 0 {
			continue
		}
		for _, c := range f.Paths {
			s.addPath(i, func() string { return c })
		}
		s.rep.Failures[i].MorePaths += f.MorePaths
	}
}

// KeyText is a switch table key (block | uSID) as an IPv6 /48 prefix.
func KeyText(p *plan.Plan, usid uint16) string {
	return netip.PrefixFrom(netip.AddrFrom16(p.Carrier(usid)), 48).String()
}

// usidOwner decodes a uSID by the fabric's layout: the switch whose uN it
// is (kind KindT0 or KindT1), or the T0 down port whose uDL it is (KindDown,
// index = port). ok is false for a value no device of the plan owns.
func usidOwner(p *plan.Plan, v uint16) (plane, kind, index int, ok bool) {
	l := p.F.USID
	index = int(v) & (1<<l.IndexBits - 1)
	kind = int(v) >> l.IndexBits & (1<<l.KindBits - 1)
	plane = int(v) >> (l.IndexBits + l.KindBits)
	if plane >= p.F.Planes {
		return 0, 0, 0, false
	}
	switch kind {
	case plan.KindT0:
		ok = index < p.F.T0Count
	case plan.KindT1:
		ok = index < p.F.T1Count
	case plan.KindDown:
		ok = index < p.F.T0Down
	}
	return plane, kind, index, ok
}

// usidText names what a uSID is in the address plan: "uN of p0-t0-1",
// "uDL of down port 1 in plane 0", or "no device's uSID".
func usidText(p *plan.Plan, v uint16) string {
	plane, kind, index, ok := usidOwner(p, v)
	switch {
	case !ok:
		return fmt.Sprintf("%#04x, no device's uSID", v)
	case kind == plan.KindT0:
		return "uN of " + p.Name(plan.Switch{Role: plan.RoleT0, Plane: plane, Index: index})
	case kind == plan.KindT1:
		return "uN of " + p.Name(plan.Switch{Role: plan.RoleT1, Plane: plane, Index: index})
	}
	return fmt.Sprintf("uDL of down port %d in plane %d", index, plane)
}

// keyText is a switch key with what it names.
func keyText(p *plan.Plan, v uint16) string {
	return KeyText(p, v) + " (" + usidText(p, v) + ")"
}
