package chart

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/mrc-fabric/mrcgen/internal/svg"
)

// Series is one line of a line chart: points (X[i], Y[i]).
type Series struct {
	Name string
	// Style picks the line's colour (modulo 4). Series with one name and
	// style share a legend entry: several seeds of one transport, say.
	Style int
	// Title is the line's tooltip (default: Name).
	Title string
	X, Y  []float64
}

// Mark is a vertical line at X with a label (a fault, say).
type Mark struct {
	X     float64
	Label string
}

// Span is a shaded stretch of the x axis, From to To, with a label at its
// start when Label is set (a fault while it holds, say).
type Span struct {
	From, To float64
	Label    string
}

// LineChart is one panel of lines over a shared x axis.
type LineChart struct {
	Title, Note    string
	XLabel, YLabel string
	Series         []Series
	Marks          []Mark
	Spans          []Span
	// YMax fixes the y axis' top (0: from the data).
	YMax float64
	// XLog draws the x axis in decades, from the decade at or below the
	// smallest x above 0 (or XMin, if set) to the decade at or above the
	// largest; points at or below its low end are drawn on it. Without
	// it the axis runs from 0 to a round number at or above the largest x.
	XLog bool
	XMin float64
	// XTick formats the x axis' tick labels (default: the number).
	XTick func(float64) string
}

// Class names (the tests count them).
const (
	ClassLine  = "line"
	ClassMark  = "mark"
	ClassSpan  = "span"
	ClassTitle = "title"
	// ClassNote is a panel's subtitle, ClassYLabel its y axis' label
	// (above the axis, under the subtitle), ClassXLabel its x axis' label.
	ClassNote   = "note"
	ClassYLabel = "ylabel"
	ClassXLabel = "xlabel"
	ClassLegend = "legend"
)

const lineStyle = style + `.line{fill:none;stroke-width:1.5}
.s0{stroke:#0969da}.s1{stroke:#cf222e}.s2{stroke:#1a7f37;stroke-dasharray:6 3}.s3{stroke:#8250df;stroke-dasharray:2 2}
.mark{stroke:#9a6700;stroke-width:1;stroke-dasharray:4 3}
.marklabel{font-size:10px;fill:#9a6700;paint-order:stroke;stroke:#ffffff;stroke-width:3px;stroke-linejoin:round}
.legendbox{fill:#ffffff;fill-opacity:0.85;stroke:#d0d7de}
.span{fill:#bf8700;fill-opacity:0.18;stroke:none}
.legend{font-size:11px}
.ylabel{fill:#555}
.xlabel{font-size:10px;text-anchor:middle}
`

// The line charts' font sizes (px), as the style sheets set them: the
// layout below keeps the texts apart with them.
const (
	titleSize = 14.0
	noteSize  = 11.0
	tickSize  = 10.0
)

// panelLayout is where a line chart panel's parts go when the panel's
// box is (x, y, w, h): the baselines of its title, subtitle (note) and y
// axis label, one under the other with a text's height and a gap between
// them, then the plot, its x tick labels and its x axis label.
type panelLayout struct {
	titleY, noteY, yLabelY float64
	plotX, plotY           float64
	plotW, plotH           float64
	xTickY, xLabelY        float64
}

func layoutPanel(x, y, w, h float64) panelLayout {
	var l panelLayout
	l.titleY = y + margin + titleSize
	l.noteY = l.titleY + 3 + noteSize + 3 // the title's descent, a gap
	l.yLabelY = l.noteY + 8 + noteSize    // under the note's descent
	// The top tick's label is centred on the plot's top edge.
	l.plotY = l.yLabelY + 8 + tickSize/2 + 1
	l.plotX = x + margin + left
	l.plotW = w - (l.plotX - x) - 2*margin
	l.xLabelY = y + h - 18
	l.plotH = l.xLabelY - 38 - l.plotY
	// The x tick labels go under the y axis' lowest, whose baseline is 4
	// px under the plot's bottom edge and its descent 2.5 px more: 7 px
	// down, then their own height.
	l.xTickY = l.plotY + l.plotH + 7 + tickSize
	return l
}

// Lines draws a line chart.
func Lines(c LineChart) []byte {
	const w, h = 760.0, 360.0
	s := &svg.SVG{W: w, H: h}
	drawPanel(s, c, 0, 0, w, h)
	return s.Document(lineStyle)
}

// Side draws line charts side by side, each panelW by panelH, under a
// title and a note for the whole figure.
func Side(title, note string, panelW, panelH float64, cs ...LineChart) []byte {
	const head = margin + titleSize + 3 + noteSize + 3 + 3 // title, note, gap
	s := &svg.SVG{W: panelW * float64(max(len(cs), 1)), H: head + panelH}
	s.Text(margin, margin+titleSize, ClassTitle, title)
	s.Text(margin, margin+titleSize+3+noteSize+3, ClassNote, note)
	for i, c := range cs {
		drawPanel(s, c, float64(i)*panelW, head, panelW, panelH)
	}
	return s.Document(lineStyle)
}

// xAxis maps x values to a panel's plot.
type xAxis struct {
	log      bool
	min, max float64 // log: decades
	x0, w    float64
}

func (a xAxis) px(x float64) float64 {
	if a.log {
		x = math.Log10(math.Max(x, a.min))
		lo, hi := math.Log10(a.min), math.Log10(a.max)
		return a.x0 + (math.Min(x, hi)-lo)/(hi-lo)*a.w
	}
	return a.x0 + math.Min(x, a.max)/a.max*a.w
}

// ticks are the x axis' tick values: its decades, or five steps.
func (a xAxis) ticks() []float64 {
	var t []float64
	if a.log {
		for v := a.min; v <= a.max*1.0001; v *= 10 {
			t = append(t, v)
		}
		return t
	}
	for i := 0; i <= 4; i++ {
		t = append(t, a.max*float64(i)/4)
	}
	return t
}

func newXAxis(c LineChart, x0, w float64) xAxis {
	a := xAxis{log: c.XLog, x0: x0, w: w}
	lo, hi := math.Inf(1), 0.0
	for _, s := range c.Series {
		for _, x := range s.X {
			hi = math.Max(hi, x)
			if x > 0 {
				lo = math.Min(lo, x)
			}
		}
	}
	for _, m := range c.Marks {
		hi = math.Max(hi, m.X)
	}
	if !a.log {
		a.max = Nice(hi)
		return a
	}
	if c.XMin > 0 {
		lo = c.XMin
	}
	if math.IsInf(lo, 1) {
		lo = 1
	}
	a.min = decade(lo)
	a.max = math.Max(decadeUp(hi), 10*a.min)
	return a
}

// decade is the power of ten at or below v (v above 0).
func decade(v float64) float64 { return math.Pow(10, math.Floor(math.Log10(v)+1e-9)) }

// decadeUp is the power of ten at or above v (v above 0).
func decadeUp(v float64) float64 {
	if v <= 0 {
		return 1
	}
	return math.Pow(10, math.Ceil(math.Log10(v)-1e-9))
}

// drawPanel draws chart c in the box (x, y, w, h).
func drawPanel(s *svg.SVG, c LineChart, x, y, w, h float64) {
	l := layoutPanel(x, y, w, h)
	ymax := c.YMax
	if ymax == 0 {
		for _, ser := range c.Series {
			for _, v := range ser.Y {
				ymax = math.Max(ymax, v)
			}
		}
	}
	ymax = Nice(ymax)
	ax := newXAxis(c, l.plotX, l.plotW)
	py := func(v float64) float64 { return l.plotY + l.plotH - math.Min(v, ymax)/ymax*l.plotH }
	xtick := c.XTick
	if xtick == nil {
		xtick = fmtNum
	}
	s.Rect(x+margin/2, y+margin/2, w-margin, h-margin, ClassPanel, "")
	s.Text(x+margin, l.titleY, ClassTitle, c.Title)
	s.Text(x+margin, l.noteY, ClassNote, c.Note)
	for _, sp := range c.Spans {
		x1, x2 := ax.px(sp.From), ax.px(sp.To)
		if x2 <= x1 {
			continue
		}
		s.Rect(x1, l.plotY, x2-x1, l.plotH, ClassSpan, sp.Label)
	}
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		s.Line(l.plotX, py(v), l.plotX+l.plotW, py(v), "grid", "")
		s.Text(l.plotX-6, py(v)+4, "tick", fmtNum(v))
	}
	for _, t := range ax.ticks() {
		if ax.log && t > ax.min {
			s.Line(ax.px(t), l.plotY, ax.px(t), l.plotY+l.plotH, "grid", "")
		}
		s.Text(ax.px(t), l.xTickY, "label", xtick(t))
	}
	s.Line(l.plotX, l.plotY+l.plotH, l.plotX+l.plotW, l.plotY+l.plotH, "axis", "")
	s.Line(l.plotX, l.plotY, l.plotX, l.plotY+l.plotH, "axis", "")
	s.Text(l.plotX+l.plotW/2, l.xLabelY, ClassXLabel, c.XLabel)
	s.Text(x+margin, l.yLabelY, ClassYLabel, c.YLabel)
	for _, m := range c.Marks {
		s.Line(ax.px(m.X), l.plotY, ax.px(m.X), l.plotY+l.plotH, ClassMark, m.Label)
		s.Text(ax.px(m.X)+3, l.plotY+10, "marklabel", m.Label)
	}
	// Span labels under each other, in the order given.
	n := 0
	for _, sp := range c.Spans {
		if sp.Label != "" && ax.px(sp.To) > ax.px(sp.From) {
			s.Text(ax.px(sp.From)+3, l.plotY+l.plotH-6-12*float64(n), "marklabel", sp.Label)
			n++
		}
	}
	for _, ser := range c.Series {
		pts := make([]float64, 0, 2*len(ser.X))
		for j := range ser.X {
			pts = append(pts, ax.px(ser.X[j]), py(ser.Y[j]))
		}
		title := ser.Title
		if title == "" {
			title = ser.Name
		}
		s.Polyline(lineClass(ser.Style), title, pts...)
	}
	// The legend, over the lines: one entry per name and style, on a box
	// that keeps the lines from crossing its names.
	type entry struct {
		name  string
		style int
	}
	var legend []entry
	for _, ser := range c.Series {
		if e := (entry{ser.Name, ser.Style}); !slices.Contains(legend, e) {
			legend = append(legend, e)
		}
	}
	if len(legend) > 0 {
		s.Rect(l.plotX+l.plotW-156, l.plotY+4, 150, 14*float64(len(legend))+6, "legendbox", "")
	}
	for i, e := range legend {
		ly := l.plotY + 18 + float64(i)*14
		s.Line(l.plotX+l.plotW-150, ly-4, l.plotX+l.plotW-130, ly-4, lineClass(e.style), "")
		s.Text(l.plotX+l.plotW-125, ly, ClassLegend, e.name)
	}
}

func lineClass(style int) string { return fmt.Sprintf("%s s%d", ClassLine, style%4) }

// Nice rounds an axis maximum up to 1, 2, 2.5 or 5 times a power of ten,
// as a linear axis does.
func Nice(v float64) float64 {
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
