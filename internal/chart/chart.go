// Package chart draws histograms as SVG: one panel per histogram, stacked,
// a bar per value with its count on it. mrcgen uses it for the counters of
// a running lab (spray per plane, per (plane, T1), per EV slot; trims, NACKs
// and drops per port). It writes through internal/svg, whose package comment
// says why no charting library is used.
package chart

import (
	"fmt"
	"strconv"

	"github.com/mrc-fabric/mrcgen/internal/svg"
)

// Bar is one bar.
type Bar struct {
	Label string
	Value int64
	// Title is the bar's tooltip (default: label and value).
	Title string
}

// Histogram is one panel.
type Histogram struct {
	Title string
	// Note is printed under the title (what is counted, or why it is
	// empty).
	Note string
	Bars []Bar
}

// Class names (the tests count them).
const (
	ClassPanel = "panel"
	ClassBar   = "bar"
)

const style = `.bg{fill:#ffffff}
text{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;font-size:11px;fill:#222}
.title{font-size:14px;font-weight:bold}
.note{fill:#555}
.panel{fill:#f6f8fa;stroke:#d0d7de}
.bar{fill:#0969da}
.axis{stroke:#57606a;stroke-width:1}
.grid{stroke:#d0d7de;stroke-width:1;stroke-dasharray:3 3}
.value{font-size:10px;text-anchor:middle}
.label{font-size:10px;text-anchor:middle}
.rlabel{font-size:10px;text-anchor:end}
.tick{font-size:10px;text-anchor:end;fill:#555}
`

const (
	margin  = 16.0
	left    = 64.0
	plotH   = 150.0
	minSlot = 14.0
)

// Render draws the histograms, one under the other.
func Render(hs []Histogram) []byte {
	s := &svg.SVG{}
	width := 720.0
	for _, h := range hs {
		width = max(width, left+float64(len(h.Bars))*minSlot+2*margin)
	}
	y := margin
	for _, h := range hs {
		y = panel(s, h, y, width)
	}
	s.W, s.H = width, y
	return s.Document(style)
}

func panel(s *svg.SVG, h Histogram, y, width float64) float64 {
	slot := 0.0
	if len(h.Bars) > 0 {
		slot = min((width-left-2*margin)/float64(len(h.Bars)), 80)
	}
	rotate := slot < 44
	labelH := 18.0
	if rotate {
		longest := 0
		for _, b := range h.Bars {
			longest = max(longest, len(b.Label))
		}
		labelH = min(float64(longest)*6+8, 120)
	}
	top := y + 40
	height := 40 + plotH + labelH + 16
	s.Rect(margin/2, y, width-margin, height, ClassPanel, "")
	s.Text(margin, y+18, "title", h.Title)
	s.Text(margin, y+33, "note", h.Note)
	x0 := margin + left
	maxV := int64(0)
	for _, b := range h.Bars {
		maxV = max(maxV, b.Value)
	}
	scale := niceMax(maxV)
	for i := 0; i <= 4; i++ {
		v := scale * int64(i) / 4
		gy := top + 8 + plotH - float64(v)/float64(scale)*plotH
		if i > 0 {
			s.Line(x0, gy, x0+slot*float64(len(h.Bars)), gy, "grid", "")
		}
		s.Text(x0-6, gy+4, "tick", strconv.FormatInt(v, 10))
	}
	base := top + 8 + plotH
	s.Line(x0, base, x0+max(slot*float64(len(h.Bars)), 40), base, "axis", "")
	for i, b := range h.Bars {
		bh := float64(b.Value) / float64(scale) * plotH
		bx := x0 + float64(i)*slot
		title := b.Title
		if title == "" {
			title = fmt.Sprintf("%s: %d", b.Label, b.Value)
		}
		s.Rect(bx+slot*0.12, base-bh, slot*0.76, bh, ClassBar, title)
		if slot >= 22 || b.Value > 0 && len(h.Bars) <= 64 {
			s.Text(bx+slot/2, base-bh-3, "value", compact(b.Value))
		}
		if rotate {
			s.Text(bx+slot/2+3, base+8, "rlabel", b.Label, svg.A("transform", fmt.Sprintf("rotate(-90 %s %s)", num(bx+slot/2+3), num(base+8))))
		} else {
			s.Text(bx+slot/2, base+14, "label", b.Label)
		}
	}
	return y + height + margin/2
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// niceMax is the axis maximum: four grid steps of 1, 2, 2.5 or 5 times a
// power of ten, at least v.
func niceMax(v int64) int64 {
	if v <= 0 {
		return 4
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{10, 20, 25, 50} {
			if step := m * p / 10; step > 0 && m*p%10 == 0 && 4*step >= v {
				return 4 * step
			}
		}
	}
}

func compact(v int64) string {
	switch {
	case v >= 10_000_000:
		return fmt.Sprintf("%dM", v/1_000_000)
	case v >= 10_000:
		return fmt.Sprintf("%dk", v/1000)
	}
	return strconv.FormatInt(v, 10)
}
