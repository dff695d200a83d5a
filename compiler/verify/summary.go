package verify

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// HostShare is what one source host lost: Lost of its Paths (every plane,
// every T1, every destination) do not deliver.
type HostShare struct {
	Host        int
	Lost, Paths uint64
}

// Fraction is the share of the host's paths that is lost.
func (h HostShare) Fraction() float64 { return float64(h.Lost) / float64(h.Paths) }

// RowPairShare is what the host pairs from T0 row SrcRow to T0 row DstRow
// lost (the same row in every plane). Because a QP's EVs are spread evenly
// over the planes and T1s, the share of paths lost is the share of capacity
// lost between those hosts.
type RowPairShare struct {
	SrcRow, DstRow int
	// HostPairs is the number of (source, destination) host pairs.
	HostPairs uint64
	// Lost of Paths (over all those pairs) do not deliver.
	Lost, Paths uint64
}

// Fraction is the share of the pairs' paths (and capacity) that is lost.
func (r RowPairShare) Fraction() float64 { return float64(r.Lost) / float64(r.Paths) }

// PlaneT1Loss is one lost (plane, T1) path set: T1 is -1 when every path of
// the plane is lost for some source (its NIC link is down).
type PlaneT1Loss struct {
	Plane, T1 int
	Lost      uint64
}

// ShareGroup is the hosts (or row pairs) that lost the same share.
type ShareGroup struct {
	Lost, Paths uint64
	// Members are host indexes (HostGroups) or indexes into RowPairs
	// (RowPairGroups), ascending.
	Members []int
}

// Fraction is the group's share lost.
func (g ShareGroup) Fraction() float64 { return float64(g.Lost) / float64(g.Paths) }

// Summary condenses a report with lost paths (a --fail analysis) into the
// share of paths each affected host and row pair loses.
type Summary struct {
	// Hosts are the source hosts that lost any path, by host index.
	Hosts []HostShare
	// AllHosts is the fabric's host count.
	AllHosts int
	// RowPairs are the T0 row pairs whose host pairs lost any path.
	RowPairs []RowPairShare
	// PlaneT1 are the (plane, T1) path sets that lost any path.
	PlaneT1 []PlaneT1Loss
	// LostPaths and Paths sum the whole fabric.
	LostPaths, Paths uint64
}

// HostPaths is the number of paths one source host has: per plane, one per
// T1 to every host on another T0 and one to every other host on its T0.
func HostPaths(p *plan.Plan) uint64 {
	f := p.F
	return uint64(f.Planes) * (uint64(f.T1Count)*uint64(f.Hosts()-f.T0Down) + uint64(f.T0Down-1))
}

// Summarize computes the shares lost from a report of Run.
func Summarize(p *plan.Plan, rep *Report) *Summary {
	f := p.F
	s := &Summary{AllHosts: f.Hosts(), LostPaths: rep.Paths - rep.Delivered, Paths: rep.Paths}
	per := HostPaths(p)
	for h, lost := range rep.LostBySource {
		if lost > 0 {
			s.Hosts = append(s.Hosts, HostShare{Host: h, Lost: lost, Paths: per})
		}
	}
	sort.Slice(s.Hosts, func(i, j int) bool { return s.Hosts[i].Host < s.Hosts[j].Host })

	d, planes, t1s := uint64(f.T0Down), uint64(f.Planes), uint64(f.T1Count)
	rows := map[[2]int]uint64{}
	addRow := func(a, b int, n uint64) {
		if n > 0 {
			rows[[2]int{a, b}] += n
		}
	}
	pt := map[[2]int]uint64{}
	for _, l := range rep.Lost {
		pt[[2]int{l.Plane, l.T1}] += l.Pairs
		if l.DstRow >= 0 {
			addRow(l.SrcRow, l.DstRow, l.Pairs)
			continue
		}
		// Every path of the class's sources in the plane: spread them over
		// the destination rows as the paths are (T1 x D to another row,
		// D-1 on its own row), source host by source host.
		perHost := t1s*uint64(f.Hosts()-f.T0Down) + (d - 1)
		hosts := l.Pairs / perHost
		for b := 0; b < f.T0Count; b++ {
			if b == l.SrcRow {
				addRow(l.SrcRow, b, hosts*(d-1))
			} else {
				addRow(l.SrcRow, b, hosts*t1s*d)
			}
		}
	}
	for k, lost := range rows {
		r := RowPairShare{SrcRow: k[0], DstRow: k[1], Lost: lost}
		if k[0] == k[1] {
			r.HostPairs = d * (d - 1)
			r.Paths = r.HostPairs * planes
		} else {
			r.HostPairs = d * d
			r.Paths = r.HostPairs * planes * t1s
		}
		s.RowPairs = append(s.RowPairs, r)
	}
	sort.Slice(s.RowPairs, func(i, j int) bool {
		a, b := s.RowPairs[i], s.RowPairs[j]
		if a.SrcRow != b.SrcRow {
			return a.SrcRow < b.SrcRow
		}
		return a.DstRow < b.DstRow
	})
	for k, lost := range pt {
		s.PlaneT1 = append(s.PlaneT1, PlaneT1Loss{Plane: k[0], T1: k[1], Lost: lost})
	}
	sort.Slice(s.PlaneT1, func(i, j int) bool {
		a, b := s.PlaneT1[i], s.PlaneT1[j]
		if a.Plane != b.Plane {
			return a.Plane < b.Plane
		}
		return a.T1 < b.T1
	})
	return s
}

// HostGroups groups the affected hosts by the share they lost, the largest
// share first.
func (s *Summary) HostGroups() []ShareGroup {
	var out []ShareGroup
	idx := map[[2]uint64]int{}
	for _, h := range s.Hosts {
		out = addToGroup(out, idx, h.Lost, h.Paths, h.Host)
	}
	sortGroups(out)
	return out
}

// RowPairGroups groups the affected row pairs by the share they lost, the
// largest share first; members index RowPairs.
func (s *Summary) RowPairGroups() []ShareGroup {
	var out []ShareGroup
	idx := map[[2]uint64]int{}
	for i, r := range s.RowPairs {
		// Reduce so that pairs with equal shares but different sizes
		// (same row, other row) group together.
		g := gcd(r.Lost, r.Paths)
		out = addToGroup(out, idx, r.Lost/g, r.Paths/g, i)
	}
	sortGroups(out)
	return out
}

func addToGroup(out []ShareGroup, idx map[[2]uint64]int, lost, paths uint64, member int) []ShareGroup {
	k := [2]uint64{lost, paths}
	i, ok := idx[k]
	if !ok {
		i = len(out)
		idx[k] = i
		out = append(out, ShareGroup{Lost: lost, Paths: paths})
	}
	out[i].Members = append(out[i].Members, member)
	return out
}

func sortGroups(g []ShareGroup) {
	sort.SliceStable(g, func(i, j int) bool {
		fi, fj := g[i].Fraction(), g[j].Fraction()
		if fi != fj {
			return fi > fj
		}
		return g[i].Members[0] < g[j].Members[0]
	})
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	if a == 0 {
		return 1
	}
	return a
}

// Percent prints a share as a percentage with enough digits to tell small
// shares from zero.
func Percent(f float64) string {
	switch {
	case f == 0:
		return "0%"
	case f >= 0.1:
		return fmt.Sprintf("%.1f%%", 100*f)
	case f >= 0.001:
		return fmt.Sprintf("%.2f%%", 100*f)
	}
	// Two significant digits, without an exponent.
	digits := 1 + int(math.Ceil(-math.Log10(100*f)))
	return strconv.FormatFloat(100*f, 'f', digits, 64) + "%"
}

// Line is the one-line summary `verify --fail` prints: how many hosts lose
// paths, and which share, grouped.
func (s *Summary) Line(p *plan.Plan) string {
	if len(s.Hosts) == 0 {
		return fmt.Sprintf("summary: no host loses a path (%s hosts)", Thousands(uint64(s.AllHosts)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "summary: %s of %s hosts lose paths (%s of the fabric's):", Thousands(uint64(len(s.Hosts))), Thousands(uint64(s.AllHosts)),
		Percent(float64(s.LostPaths)/float64(s.Paths)))
	groups := s.HostGroups()
	for i, g := range groups {
		if i == 4 {
			fmt.Fprintf(&b, "; %d more groups", len(groups)-i)
			break
		}
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %s %s %s of their paths", Thousands(uint64(len(g.Members))), HostList(p, g.Members, 3), Percent(g.Fraction()))
	}
	return b.String()
}

// HostList names hosts compactly: up to max names, then a count.
func HostList(p *plan.Plan, hosts []int, max int) string {
	if len(hosts) == 1 {
		return "host (" + p.HostName(p.HostByIndex(hosts[0])) + ") loses"
	}
	names := make([]string, 0, max)
	for _, h := range hosts {
		if len(names) == max && len(hosts) > max+1 {
			names = append(names, "...")
			break
		}
		names = append(names, p.HostName(p.HostByIndex(h)))
	}
	return "hosts (" + strings.Join(names, ", ") + ") lose"
}

// Thousands prints n with thousands separators.
func Thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
