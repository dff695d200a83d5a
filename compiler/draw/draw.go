// Package draw draws a fabric as SVG: its planes side by side, in each the
// T1s over the T0s over the NIC ports, and with links taken down, the failed
// links, the (plane, T1) paths they cost, the host pairs affected and the
// share of their paths (and so of their capacity: a QP spreads its EVs evenly
// over the planes and T1s) that is lost, from compiler/verify's analysis.
//
// A fabric small enough to read device by device (tiny, small) is drawn in
// full: one box per switch and NIC port, one line per link. A larger one
// (mrc-131k: 6,144 switches, 2,097,152 links) is summarised per plane: one
// strip per tier with its count, link bundles with their counts, and marks at
// the positions of failed links and of T1s that lose paths, so the picture
// keeps a fixed size whatever the fabric.
package draw

import (
	"fmt"
	"io"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/internal/svg"
)

// Mode selects how much detail is drawn.
type Mode int

// Modes.
const (
	// Auto draws in full what fits (Full), and summarises the rest.
	Auto Mode = iota
	Full
	Summary
)

// FullLimit is the most switches Auto draws in full.
const FullLimit = 128

// Options say what to draw.
type Options struct {
	Mode Mode
	// Down are the links taken down, and Report the verification run with
	// them (nil when nothing is down).
	Down   []verify.Link
	Report *verify.Report
}

// Class names of the drawing's elements (the tests count them).
const (
	ClassPlane    = "plane"
	ClassT1       = "t1"
	ClassT0       = "t0"
	ClassNIC      = "nic"
	ClassLink     = "link"
	ClassFailed   = "failed"
	ClassLossy    = "lossy"
	ClassHit      = "hit"
	ClassBundle   = "bundle"
	ClassStrip    = "strip"
	ClassMark     = "mark"
	ClassLegend   = "legend"
	ClassKeyLabel = "key"
)

const style = `.bg{fill:#ffffff}
text{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;font-size:12px;fill:#222}
.title{font-size:16px;font-weight:bold}
.sub{font-size:12px;fill:#555}
.plane{fill:#f6f8fa;stroke:#8c959f;stroke-width:1}
.planelabel{font-size:13px;font-weight:bold;text-anchor:middle}
.t1{fill:#ddf4ff;stroke:#0969da;stroke-width:1.2}
.t0{fill:#dafbe1;stroke:#1a7f37;stroke-width:1.2}
.nic{fill:#fff8c5;stroke:#9a6700;stroke-width:1}
.nic.hit{fill:#ffcecb;stroke:#cf222e}
.t1.lossy{fill:#fff1e5;stroke:#bc4c00;stroke-width:2.5}
.dev{font-size:11px;text-anchor:middle}
.port{font-size:9px;text-anchor:middle}
.link{stroke:#8c959f;stroke-width:1}
.link.lossy{stroke:#fb8f44;stroke-width:2.5;stroke-dasharray:6 3}
.link.failed{stroke:#cf222e;stroke-width:3.5}
.x{fill:#cf222e;stroke:#ffffff;stroke-width:4;paint-order:stroke;font-size:22px;font-weight:bold;text-anchor:middle}
.lost{fill:#bc4c00;font-size:11px;text-anchor:middle}
.strip{fill:#ffffff;stroke:#57606a;stroke-width:1}
.strip.t1{fill:#ddf4ff}
.strip.t0{fill:#dafbe1}
.strip.nic{fill:#fff8c5}
.mark{fill:#cf222e}
.mark.lossy{fill:#fb8f44}
.bundle{fill:#d0d7de;fill-opacity:0.55;stroke:none}
.count{font-size:12px;text-anchor:middle;font-weight:bold}
.bundlelabel{font-size:11px;text-anchor:middle;fill:#424a53}
.legend{font-size:12px}
.head{font-size:13px;font-weight:bold}
.key{font-size:11px}
`

// Draw writes the SVG of p's fabric to w.
func Draw(w io.Writer, p *plan.Plan, opt Options) error {
	mode := opt.Mode
	if mode == Auto {
		mode = Full
		if p.F.Switches() > FullLimit || p.F.T0Down > 16 {
			mode = Summary
		}
	}
	d := &drawing{p: p, opt: opt, s: &svg.SVG{}, down: map[verify.Link]bool{}, lossyT1: map[[2]int]uint64{},
		lossyLink: map[verify.Link]bool{}, hostLoss: map[int]verify.HostShare{}}
	d.analyse()
	var legend []legendLine
	if mode == Full {
		d.full()
	} else {
		d.summary()
	}
	legend = d.legend()
	d.finish(legend)
	_, err := w.Write(d.s.Document(style))
	return err
}

type drawing struct {
	p   *plan.Plan
	opt Options
	s   *svg.SVG
	sum *verify.Summary
	// down holds both ends of every failed link.
	down map[verify.Link]bool
	// failed lists each failed link once, named by a switch end.
	failed []verify.Link
	// lossyT1 counts lost paths per (plane, T1).
	lossyT1 map[[2]int]uint64
	// lossyLink holds both ends of the up links that carried lost paths.
	lossyLink map[verify.Link]bool
	hostLoss  map[int]verify.HostShare
	width     float64
	bottom    float64
}

func (d *drawing) analyse() {
	p := d.p
	for _, l := range d.opt.Down {
		if d.down[l] {
			continue
		}
		d.failed = append(d.failed, l)
		d.down[l] = true
		if nb, ok := p.Neighbor(l.Switch, l.Port); ok && nb.Role != plan.RoleNIC {
			d.down[verify.Link{Switch: nb.Switch(), Port: nb.Port}] = true
		}
	}
	if d.opt.Report == nil {
		return
	}
	d.sum = verify.Summarize(p, d.opt.Report)
	for _, h := range d.sum.Hosts {
		d.hostLoss[h.Host] = h
	}
	for _, l := range d.opt.Report.Lost {
		if l.T1 < 0 {
			continue
		}
		d.lossyT1[[2]int{l.Plane, l.T1}] += l.Pairs
		for _, row := range []int{l.SrcRow, l.DstRow} {
			if row < 0 {
				continue
			}
			t0 := plan.Switch{Role: plan.RoleT0, Plane: l.Plane, Index: row}
			t1 := plan.Switch{Role: plan.RoleT1, Plane: l.Plane, Index: l.T1}
			d.lossyLink[verify.Link{Switch: t0, Port: p.T0UpPort(l.T1)}] = true
			d.lossyLink[verify.Link{Switch: t1, Port: p.T1DownPort(row)}] = true
		}
	}
}

// linkClass is the class of the link at switch port l.
func (d *drawing) linkClass(l verify.Link) string {
	switch {
	case d.down[l]:
		return ClassLink + " " + ClassFailed
	case d.lossyLink[l]:
		return ClassLink + " " + ClassLossy
	}
	return ClassLink
}

// Layout of the full drawing.
const (
	margin   = 20.0
	planeGap = 20.0
	planePad = 14.0
	top      = 64.0
	yT1      = top + 40
	devH     = 28.0
	yT0      = top + 170
	yNIC     = top + 260
	portH    = 18.0
	planeBot = top + 296
)

func (d *drawing) full() {
	p, f, s := d.p, d.p.F, d.s
	t0W := max(float64(f.T0Down)*24-4, 72)
	if f.T0Down <= 2 {
		t0W = 96 // room to name the NIC ports
	}
	portW := min(44, t0W/float64(f.T0Down)-4)
	t0Slot := t0W + 16
	inner := float64(f.T0Count) * t0Slot
	t1Slot := inner / float64(f.T1Count)
	t1W := max(min(t1Slot-12, 96), 40)
	planeW := inner + 2*planePad
	d.width = 2*margin + float64(f.Planes)*planeW + float64(f.Planes-1)*planeGap

	for pl := 0; pl < f.Planes; pl++ {
		x0 := margin + float64(pl)*(planeW+planeGap)
		s.Rect(x0, top, planeW, planeBot-top, ClassPlane, fmt.Sprintf("plane %d", pl))
		s.Text(x0+planeW/2, top+18, "planelabel", fmt.Sprintf("plane %d", pl))
		t1X := func(i int) float64 { return x0 + planePad + (float64(i)+0.5)*t1Slot - t1W/2 }
		t0X := func(r int) float64 { return x0 + planePad + (float64(r)+0.5)*t0Slot - t0W/2 }
		// Links first, so that boxes cover their ends.
		for r := 0; r < f.T0Count; r++ {
			t0 := plan.Switch{Role: plan.RoleT0, Plane: pl, Index: r}
			for t := 0; t < f.T1Count; t++ {
				t1 := plan.Switch{Role: plan.RoleT1, Plane: pl, Index: t}
				x1 := t0X(r) + (float64(t)+0.5)*t0W/float64(f.T1Count)
				x2 := t1X(t) + (float64(r)+0.5)*t1W/float64(f.T0Count)
				l := verify.Link{Switch: t0, Port: p.T0UpPort(t)}
				s.Line(x1, yT0, x2, yT1+devH, d.linkClass(l),
					fmt.Sprintf("%s port %d - %s port %d", p.Name(t0), p.T0UpPort(t), p.Name(t1), p.T1DownPort(r)))
				if d.down[l] {
					s.Text((x1+x2)/2, (yT0+yT1+devH)/2+6, "x", "×")
				}
			}
			for k := 0; k < f.T0Down; k++ {
				cx := t0X(r) + (float64(k)+0.5)*t0W/float64(f.T0Down)
				l := verify.Link{Switch: t0, Port: p.T0DownPort(k)}
				h := plan.Host{Row: r, Port: k}
				s.Line(cx, yT0+devH, cx, yNIC, d.linkClass(l),
					fmt.Sprintf("%s port %d - %s port %d", p.Name(t0), p.T0DownPort(k), p.HostName(h), plan.NICPlanePort(pl)))
				if d.down[l] {
					s.Text(cx, (yT0+devH+yNIC)/2+6, "x", "×")
				}
			}
		}
		for t := 0; t < f.T1Count; t++ {
			sw := plan.Switch{Role: plan.RoleT1, Plane: pl, Index: t}
			class, title := ClassT1, fmt.Sprintf("%s uSID %#04x", p.Name(sw), p.SwitchUSID(sw))
			if n := d.lossyT1[[2]int{pl, t}]; n > 0 {
				class += " " + ClassLossy
				title += fmt.Sprintf(": %s paths through it lost", verify.Thousands(n))
				s.Text(t1X(t)+t1W/2, yT1-6, "lost", fmt.Sprintf("%s paths lost", verify.Thousands(n)))
			}
			s.Rect(t1X(t), yT1, t1W, devH, class, title, svg.A("rx", 4))
			s.Text(t1X(t)+t1W/2, yT1+18, "dev", p.Name(sw))
		}
		for r := 0; r < f.T0Count; r++ {
			sw := plan.Switch{Role: plan.RoleT0, Plane: pl, Index: r}
			s.Rect(t0X(r), yT0, t0W, devH, ClassT0, fmt.Sprintf("%s uSID %#04x", p.Name(sw), p.SwitchUSID(sw)), svg.A("rx", 4))
			s.Text(t0X(r)+t0W/2, yT0+18, "dev", p.Name(sw))
			for k := 0; k < f.T0Down; k++ {
				cx := t0X(r) + (float64(k)+0.5)*t0W/float64(f.T0Down)
				h := plan.Host{Row: r, Port: k}
				idx := p.Index(h)
				class := ClassNIC
				title := fmt.Sprintf("%s port %d (plane %d), host %s", p.HostName(h), plan.NICPlanePort(pl), pl, p.HostAddr(h))
				if hs, ok := d.hostLoss[idx]; ok {
					class += " " + ClassHit
					title += fmt.Sprintf(": loses %s of its paths", verify.Percent(hs.Fraction()))
				}
				s.Rect(cx-portW/2, yNIC, portW, portH, class, title, svg.A("rx", 3))
				label := fmt.Sprint(idx)
				if portW >= 40 {
					label = p.HostName(h)
				}
				s.Text(cx, yNIC+13, "port", label)
			}
		}
	}
	s.Text(margin, planeBot+18, "sub", "NIC ports are named by host (nic-N); hover an element for its name, ports and uSID")
	d.bottom = planeBot + 18
}

func (d *drawing) summary() {
	p, f, s := d.p, d.p.F, d.s
	const planeW, stripW, stripH = 240.0, 210.0, 26.0
	const y1, y0, yn = top + 52, top + 170, top + 270
	d.width = 2*margin + float64(f.Planes)*planeW + float64(f.Planes-1)*planeGap
	failedIn := map[int][]verify.Link{}
	for _, l := range d.failed {
		failedIn[l.Switch.Plane] = append(failedIn[l.Switch.Plane], l)
	}
	for pl := 0; pl < f.Planes; pl++ {
		x0 := margin + float64(pl)*(planeW+planeGap)
		xs := x0 + (planeW-stripW)/2
		s.Rect(x0, top, planeW, planeBot-top+44, ClassPlane, fmt.Sprintf("plane %d", pl))
		s.Text(x0+planeW/2, top+18, "planelabel", fmt.Sprintf("plane %d", pl))
		// Bundles.
		s.Polygon(ClassBundle, fmt.Sprintf("%s T0-T1 links", verify.Thousands(uint64(f.T0Count*f.T1Count))),
			xs, y1+stripH, xs+stripW, y1+stripH, xs+stripW, y0, xs, y0)
		s.Text(x0+planeW/2, (y1+stripH+y0)/2+4, "bundlelabel", fmt.Sprintf("%s links (every T0 to every T1)", verify.Thousands(uint64(f.T0Count*f.T1Count))))
		s.Polygon(ClassBundle, fmt.Sprintf("%s NIC links", verify.Thousands(uint64(f.Hosts()))),
			xs, y0+stripH, xs+stripW, y0+stripH, xs+stripW, yn, xs, yn)
		s.Text(x0+planeW/2, (y0+stripH+yn)/2+4, "bundlelabel", fmt.Sprintf("%s links (%d per T0)", verify.Thousands(uint64(f.Hosts())), f.T0Down))
		// Strips.
		strip := func(y float64, class string, n int, label, first, last string) {
			s.Rect(xs, y, stripW, stripH, ClassStrip+" "+class, fmt.Sprintf("%s: %s ... %s", label, first, last))
			s.Text(x0+planeW/2, y+17, "count", label)
		}
		strip(y1, ClassT1, f.T1Count, fmt.Sprintf("%s T1", verify.Thousands(uint64(f.T1Count))),
			p.Name(plan.Switch{Role: plan.RoleT1, Plane: pl}), p.Name(plan.Switch{Role: plan.RoleT1, Plane: pl, Index: f.T1Count - 1}))
		strip(y0, ClassT0, f.T0Count, fmt.Sprintf("%s T0", verify.Thousands(uint64(f.T0Count))),
			p.Name(plan.Switch{Role: plan.RoleT0, Plane: pl}), p.Name(plan.Switch{Role: plan.RoleT0, Plane: pl, Index: f.T0Count - 1}))
		strip(yn, ClassNIC, f.Hosts(), fmt.Sprintf("%s NIC ports", verify.Thousands(uint64(f.Hosts()))),
			p.HostName(p.HostByIndex(0)), p.HostName(p.HostByIndex(f.Hosts()-1)))
		pos := func(i, n int) float64 { return xs + (float64(i)+0.5)*stripW/float64(n) }
		markW := func(n int) float64 { return max(stripW/float64(n), 3) }
		// T1s that lose paths.
		for t := 0; t < f.T1Count; t++ {
			if n := d.lossyT1[[2]int{pl, t}]; n > 0 {
				sw := plan.Switch{Role: plan.RoleT1, Plane: pl, Index: t}
				s.Rect(pos(t, f.T1Count)-markW(f.T1Count)/2, y1-8, markW(f.T1Count), 8, ClassMark+" "+ClassLossy,
					fmt.Sprintf("%s: %s paths through it lost", p.Name(sw), verify.Thousands(n)))
			}
		}
		// Failed links: a line between the marks of their ends.
		for i, l := range failedIn[pl] {
			nb, _ := p.Neighbor(l.Switch, l.Port)
			a, b := plan.Endpoint{Role: l.Switch.Role, Plane: pl, Index: l.Switch.Index, Port: l.Port}, nb
			if a.Role != plan.RoleT0 && b.Role == plan.RoleT0 || a.Role == plan.RoleNIC {
				a, b = b, a
			}
			// a is the T0 end now.
			xa := pos(a.Index, f.T0Count)
			title := linkName(p, l)
			s.Rect(xa-markW(f.T0Count)/2, y0-4, markW(f.T0Count), stripH+8, ClassMark, title)
			var xb, yb float64
			if b.Role == plan.RoleT1 {
				xb, yb = pos(b.Index, f.T1Count), y1+stripH
				s.Rect(xb-markW(f.T1Count)/2, y1-4, markW(f.T1Count), stripH+8, ClassMark, title)
				s.Line(xa, y0, xb, yb, ClassLink+" "+ClassFailed, title)
			} else {
				xb, yb = pos(b.Index, f.Hosts()), yn
				s.Rect(xb-markW(f.Hosts())/2, yn-4, markW(f.Hosts()), stripH+8, ClassMark, title)
				s.Line(xa, y0+stripH, xb, yb, ClassLink+" "+ClassFailed, title)
			}
			if i < 3 {
				s.Text(x0+planeW/2, yn+stripH+18+float64(i)*14, "lost", "down: "+shortLinkName(p, l))
			} else if i == 3 {
				s.Text(x0+planeW/2, yn+stripH+18+3*14, "lost", fmt.Sprintf("and %d more", len(failedIn[pl])-3))
			}
		}
	}
	d.bottom = planeBot + 44
}

// shortLinkName names a link by its ends, with ports: "p0-t0-0/3↔p0-t1-1/0".
func shortLinkName(p *plan.Plan, l verify.Link) string {
	nb, ok := p.Neighbor(l.Switch, l.Port)
	if !ok {
		return fmt.Sprintf("%s/%d", p.Name(l.Switch), l.Port)
	}
	other := p.HostName(p.HostByIndex(nb.Index))
	if nb.Role != plan.RoleNIC {
		other = p.Name(nb.Switch())
	}
	return fmt.Sprintf("%s/%d ↔ %s/%d", p.Name(l.Switch), l.Port, other, nb.Port)
}

// linkName names a link by both ends.
func linkName(p *plan.Plan, l verify.Link) string {
	nb, ok := p.Neighbor(l.Switch, l.Port)
	if !ok {
		return fmt.Sprintf("%s port %d", p.Name(l.Switch), l.Port)
	}
	other := p.HostName(p.HostByIndex(nb.Index))
	if nb.Role != plan.RoleNIC {
		other = p.Name(nb.Switch())
	}
	return fmt.Sprintf("%s (port %d) ↔ %s (port %d)", p.Name(l.Switch), l.Port, other, nb.Port)
}

type legendLine struct {
	class, text string
}

// legend is the text under the drawing: the failures and what they cost.
func (d *drawing) legend() []legendLine {
	p, f := d.p, d.p.F
	var out []legendLine
	add := func(class, format string, a ...any) { out = append(out, legendLine{class, fmt.Sprintf(format, a...)}) }
	if len(d.failed) == 0 {
		add("legend", "No link down. Draw with --fail A:B (repeatable) to see what a failure costs.")
		return out
	}
	add("head", "Links down (%d)", len(d.failed))
	for i, l := range d.failed {
		if i == 8 {
			add("legend", "  ... and %d more", len(d.failed)-i)
			break
		}
		add("legend", "  %s", linkName(p, l))
	}
	if d.sum == nil {
		return out
	}
	add("head", "(plane, T1) paths lost")
	// Runs of consecutive T1s of a plane that lose as many paths are one
	// line (a NIC link down costs every T1 of its plane alike).
	pts := d.sum.PlaneT1
	lines := 0
	for i := 0; i < len(pts); {
		j := i + 1
		for pts[i].T1 >= 0 && j < len(pts) && pts[j].Plane == pts[i].Plane && pts[j].T1 == pts[j-1].T1+1 && pts[j].Lost == pts[i].Lost {
			j++
		}
		if lines == 8 {
			add("legend", "  ... and more")
			break
		}
		lines++
		pt := pts[i]
		t1 := func(i int) string { return p.Name(plan.Switch{Role: plan.RoleT1, Plane: pt.Plane, Index: i}) }
		switch {
		case pt.T1 < 0:
			add("legend", "  plane %d, paths of a source whose NIC link is down: %s", pt.Plane, verify.Thousands(pt.Lost))
		case j-i == 1:
			add("legend", "  plane %d, T1 %s: %s paths", pt.Plane, t1(pt.T1), verify.Thousands(pt.Lost))
		default:
			add("legend", "  plane %d, %d T1s %s..%s: %s paths each", pt.Plane, j-i, t1(pt.T1), t1(pts[j-1].T1), verify.Thousands(pt.Lost))
		}
		i = j
	}
	add("head", "Host pairs affected, by T0 pair: the share of their paths (= of their capacity) lost")
	groups := d.sum.RowPairGroups()
	for i, g := range groups {
		if i == 6 {
			add("legend", "  ... and %d more groups", len(groups)-i)
			break
		}
		var pairs uint64
		var names []string
		for j, m := range g.Members {
			r := d.sum.RowPairs[m]
			pairs += r.HostPairs
			if j < 3 {
				names = append(names, rowHosts(p, r.SrcRow)+" → "+rowHosts(p, r.DstRow))
			}
		}
		if len(g.Members) > 3 {
			names = append(names, fmt.Sprintf("%s more T0 pairs", verify.Thousands(uint64(len(g.Members)-3))))
		}
		add("legend", "  %s of the paths of %s host pairs: %s", verify.Percent(g.Fraction()), verify.Thousands(pairs), strings.Join(names, "; "))
	}
	add("head", "Hosts: share of each affected host's own paths lost (%s of %s hosts affected)",
		verify.Thousands(uint64(len(d.sum.Hosts))), verify.Thousands(uint64(f.Hosts())))
	for i, g := range d.sum.HostGroups() {
		if i == 6 {
			add("legend", "  ... and more groups")
			break
		}
		add("legend", "  %s: %s %s", verify.Percent(g.Fraction()), verify.Thousands(uint64(len(g.Members))), strings.TrimSuffix(strings.TrimSuffix(verify.HostList(p, g.Members, 4), " lose"), " loses"))
	}
	return out
}

// rowHosts names the hosts of T0 row r.
func rowHosts(p *plan.Plan, r int) string {
	first := p.HostName(plan.Host{Row: r, Port: 0})
	if p.F.T0Down == 1 {
		return first
	}
	return first + ".." + strings.TrimPrefix(p.HostName(plan.Host{Row: r, Port: p.F.T0Down - 1}), "nic-")
}

// finish writes the title, the key and the legend, and sizes the canvas.
func (d *drawing) finish(legend []legendLine) {
	p, f, s := d.p, d.p.F, d.s
	s.Text(margin, 26, "title", fmt.Sprintf("MRC fabric %s", f.Name))
	sub := fmt.Sprintf("%d planes × (%s T1 + %s T0), %s hosts with %d NIC ports each: %s switches, %s links",
		f.Planes, verify.Thousands(uint64(f.T1Count)), verify.Thousands(uint64(f.T0Count)), verify.Thousands(uint64(f.Hosts())), f.Planes,
		verify.Thousands(uint64(f.Switches())), verify.Thousands(uint64(f.Planes)*uint64(f.T0Count*f.T1Count+f.Hosts())))
	s.Text(margin, 46, "sub", sub)
	longest := float64(len([]rune(sub))) * 6.6
	y := d.bottom + 34
	// Key.
	x := margin
	key := func(class, label string, line bool) {
		// The samples carry the class "sample" too, so that counting a
		// class counts the fabric's elements only.
		if line {
			s.Line(x, y-4, x+26, y-4, class+" sample", "")
		} else {
			s.Rect(x, y-12, 26, 14, class+" sample", "", svg.A("rx", 3))
		}
		s.Text(x+32, y, ClassKeyLabel, label)
		x += 40 + float64(len(label))*6.2
	}
	key(ClassT1, "T1", false)
	key(ClassT0, "T0", false)
	key(ClassNIC, "NIC port", false)
	key(ClassLink, "link", true)
	key(ClassLink+" "+ClassFailed, "link down", true)
	key(ClassLink+" "+ClassLossy, "link carrying lost paths", true)
	key(ClassT1+" "+ClassLossy, "T1 losing paths", false)
	key(ClassNIC+" "+ClassHit, "host losing paths", false)
	longest = max(longest, x-margin)
	y += 28
	for _, l := range legend {
		if l.class == "head" {
			y += 6
		}
		s.Text(margin, y, l.class, l.text)
		longest = max(longest, float64(len([]rune(l.text)))*6.8)
		y += 18
	}
	_ = p
	d.s.W = max(d.width, longest+2*margin)
	d.s.H = y + 8
}
