package chart

import (
	"fmt"
	"math"
	"strconv"

	"github.com/mrc-fabric/mrcgen/internal/svg"
)

// Series is one line of a line chart: points (X[i], Y[i]).
type Series struct {
	Name string
	X, Y []float64
}

// Mark is a vertical line at X with a label (a fault, say).
type Mark struct {
	X     float64
	Label string
}

// LineChart is one panel of lines over a shared x axis.
type LineChart struct {
	Title, Note    string
	XLabel, YLabel string
	Series         []Series
	Marks          []Mark
	// YMax fixes the y axis' top (0: from the data).
	YMax float64
}

// Class names (the tests count them).
const (
	ClassLine = "line"
	ClassMark = "mark"
)

const lineStyle = style + `.line{fill:none;stroke-width:1.5}
.s0{stroke:#0969da}.s1{stroke:#cf222e}.s2{stroke:#1a7f37}.s3{stroke:#8250df}
.mark{stroke:#9a6700;stroke-width:1;stroke-dasharray:4 3}
.marklabel{font-size:10px;fill:#9a6700}
.legend{font-size:11px}
`

// Lines draws a line chart.
func Lines(c LineChart) []byte {
	const w, h, x0, top = 760.0, 360.0, margin + left, 64.0
	plotW, plotHt := w-x0-2*margin, h-top-56
	xmax, ymax := 0.0, c.YMax
	for _, s := range c.Series {
		for i := range s.X {
			xmax = math.Max(xmax, s.X[i])
			if c.YMax == 0 {
				ymax = math.Max(ymax, s.Y[i])
			}
		}
	}
	for _, m := range c.Marks {
		xmax = math.Max(xmax, m.X)
	}
	xmax, ymax = nice(xmax), nice(ymax)
	px := func(x float64) float64 { return x0 + x/xmax*plotW }
	py := func(y float64) float64 { return top + plotHt - math.Min(y, ymax)/ymax*plotHt }
	s := &svg.SVG{W: w, H: h}
	s.Rect(margin/2, margin/2, w-margin, h-margin, ClassPanel, "")
	s.Text(margin, margin+14, "title", c.Title)
	s.Text(margin, margin+30, "note", c.Note)
	for i := 0; i <= 4; i++ {
		y := ymax * float64(i) / 4
		s.Line(x0, py(y), x0+plotW, py(y), "grid", "")
		s.Text(x0-6, py(y)+4, "tick", fmtNum(y))
		x := xmax * float64(i) / 4
		s.Text(px(x), top+plotHt+14, "label", fmtNum(x))
	}
	s.Line(x0, top+plotHt, x0+plotW, top+plotHt, "axis", "")
	s.Line(x0, top, x0, top+plotHt, "axis", "")
	s.Text(x0+plotW/2, h-18, "label", c.XLabel)
	s.Text(margin, top-8, "note", c.YLabel)
	for _, m := range c.Marks {
		s.Line(px(m.X), top, px(m.X), top+plotHt, ClassMark, m.Label)
		s.Text(px(m.X)+3, top+10, "marklabel", m.Label)
	}
	for i, ser := range c.Series {
		pts := make([]float64, 0, 2*len(ser.X))
		for j := range ser.X {
			pts = append(pts, px(ser.X[j]), py(ser.Y[j]))
		}
		cls := fmt.Sprintf("%s s%d", ClassLine, i%4)
		s.Polyline(cls, ser.Name, pts...)
		ly := top + 14 + float64(i)*14
		s.Line(x0+plotW-150, ly-4, x0+plotW-130, ly-4, cls, "")
		s.Text(x0+plotW-125, ly, "legend", ser.Name)
	}
	return s.Document(lineStyle)
}

// nice rounds an axis maximum up to 1, 2, 2.5 or 5 times a power of ten.
func nice(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
