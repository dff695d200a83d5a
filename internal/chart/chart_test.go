package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	hs := []Histogram{
		{Title: "a <b> & c", Note: "n", Bars: []Bar{{Label: "x<y", Value: 3}, {Label: "z&", Value: 0}}},
		{Title: "many", Bars: func() []Bar {
			var b []Bar
			for i := 0; i < 64; i++ {
				b = append(b, Bar{Label: strings.Repeat("L", i%9+1), Value: int64(i * 17)})
			}
			return b
		}()},
		{Title: "empty", Note: "none: nothing"},
	}
	doc := Render(hs)
	dec := xml.NewDecoder(bytes.NewReader(doc))
	counts := map[string]int{}
	var texts []string
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					counts[el.Name.Local+"."+a.Value]++
				}
			}
			inText = el.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(el))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if counts["rect."+ClassBar] != 66 || counts["rect."+ClassPanel] != 3 {
		t.Errorf("bars %d, panels %d: %v", counts["rect.bar"], counts["rect.panel"], counts)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"a <b> & c", "x<y", "z&", "none: nothing"} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q lost (escaping?)", want)
		}
	}
}

func TestNiceMax(t *testing.T) {
	for v, want := range map[int64]int64{0: 4, 1: 4, 3: 4, 5: 8, 64: 80, 100: 100, 1024: 2000, 1025: 2000, 2001: 4000} {
		if got := niceMax(v); got != want {
			t.Errorf("niceMax(%d) = %d, want %d", v, got, want)
		}
	}
}

// svgText is one text element of a drawing.
type svgText struct {
	x, y        float64
	class, text string
}

// readSVG parses doc, failing the test if it is not well-formed XML, and
// returns its text elements and the elements of each class
// ("polyline.line s0": the element, then its class attribute).
func readSVG(t *testing.T, doc []byte) ([]svgText, map[string][]xml.StartElement) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var texts []svgText
	byClass := map[string][]xml.StartElement{}
	var cur *svgText
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			if c, ok := attr["class"]; ok {
				byClass[el.Name.Local+"."+c] = append(byClass[el.Name.Local+"."+c], el.Copy())
			}
			if el.Name.Local == "text" {
				x, _ := strconv.ParseFloat(attr["x"], 64)
				y, _ := strconv.ParseFloat(attr["y"], 64)
				texts = append(texts, svgText{x: x, y: y, class: attr["class"]})
				cur = &texts[len(texts)-1]
			}
		case xml.CharData:
			if cur != nil {
				cur.text += string(el)
			}
		case xml.EndElement:
			cur = nil
		}
	}
	return texts, byClass
}

// box is a text's bounding box, from its position, its class's font size
// and anchor as the style sheet sets them (literal here), a glyph taken
// 0.62 of the size wide (DejaVu Sans' widest digits and capitals are
// 0.64-0.7; its lower case 0.5-0.6), the ascent the whole size above the
// baseline and the descent a quarter of it below.
func box(t *testing.T, tx svgText) (x0, y0, x1, y1 float64) {
	t.Helper()
	size := map[string]float64{"title": 14, "note": 11, "ylabel": 11, "xlabel": 10, "label": 10, "tick": 10}[tx.class]
	if size == 0 {
		t.Fatalf("text %q of class %q: no font size known to the test", tx.text, tx.class)
	}
	w := 0.62 * size * float64(len([]rune(tx.text)))
	switch tx.class {
	case "label", "xlabel": // text-anchor:middle
		x0 = tx.x - w/2
	case "tick": // text-anchor:end
		x0 = tx.x - w
	default:
		x0 = tx.x
	}
	return x0, tx.y - size, x0 + w, tx.y + size/4
}

// checkNoOverlap fails if two of the drawing's texts outside its plots
// (titles, subtitles, axis labels and tick labels) overlap.
func checkNoOverlap(t *testing.T, texts []svgText) {
	t.Helper()
	var outside []svgText
	for _, tx := range texts {
		if tx.class != "legend" && tx.class != "marklabel" {
			outside = append(outside, tx)
		}
	}
	for i, a := range outside {
		ax0, ay0, ax1, ay1 := box(t, a)
		for _, b := range outside[i+1:] {
			bx0, by0, bx1, by1 := box(t, b)
			if ax0 < bx1 && bx0 < ax1 && ay0 < by1 && by0 < ay1 {
				t.Errorf("%s %q at (%v, %v) overlaps %s %q at (%v, %v)", a.class, a.text, a.x, a.y, b.class, b.text, b.x, b.y)
			}
		}
	}
}

// TestLinesTextsApart: the subtitle and the y axis label, which used to
// sit on each other, and every other text outside the plot are apart; in
// a single chart and in a figure of two side by side.
func TestLinesTextsApart(t *testing.T) {
	c := LineChart{Title: "Goodput over time, small, ring-allreduce of 8 hosts, 16MiB, 1 iterations",
		Note: "payload delivered per bin, % of the sending NICs' speed", XLabel: "µs", YLabel: "% of line rate",
		Series: []Series{{Name: "mrc", X: []float64{0, 500, 1000}, Y: []float64{90, 100, 80}}}}
	texts, _ := readSVG(t, Lines(c))
	var note, ylabel *svgText
	for i := range texts {
		switch texts[i].class {
		case ClassNote:
			note = &texts[i]
		case ClassYLabel:
			ylabel = &texts[i]
		}
	}
	if note == nil || ylabel == nil || note.text != c.Note || ylabel.text != c.YLabel {
		t.Fatalf("no subtitle or no y label: %+v", texts)
	}
	checkNoOverlap(t, texts)
	// Log axes have wide labels at their left end, under the y axis' 0.
	c.XLog, c.XMin, c.Title = true, 1, "Goodput over time"
	c.XTick = func(v float64) string { return fmtNum(v) + " µs" }
	texts, _ = readSVG(t, Side("MRC against RoCE", "same fabric, workload, faults and seed", 600, 380, c, c))
	checkNoOverlap(t, texts)
}

// TestLinesLogSpans: on a log axis of three decades (1 to 1000) over the
// 648 px plot of a 760 px chart, which starts 80 px in, a span from 10 to
// 100 is the middle third, 296 to 512 px, and one from 0 starts at the
// axis' left end; points at 0 are drawn there too.
func TestLinesLogSpans(t *testing.T) {
	c := LineChart{XLog: true, XMin: 1, Series: []Series{{Name: "a", X: []float64{0, 1000}, Y: []float64{1, 1}}},
		Spans: []Span{{From: 10, To: 100, Label: "cut"}, {From: 0, To: 10}}}
	_, els := readSVG(t, Lines(c))
	spans := els["rect."+ClassSpan]
	var got [][2]string
	for _, e := range spans {
		var x, w string
		for _, a := range e.Attr {
			switch a.Name.Local {
			case "x":
				x = a.Value
			case "width":
				w = a.Value
			}
		}
		got = append(got, [2]string{x, w})
	}
	if want := [][2]string{{"296", "216"}, {"80", "216"}}; !slices.Equal(got, want) {
		t.Errorf("spans (x, width) %v, want %v", got, want)
	}
	line := els["polyline."+ClassLine+" s0"]
	if len(line) != 1 || line[0].Attr[0].Value != "80,80 728,80" {
		t.Errorf("line %v, want points 80,80 728,80", line)
	}
}
