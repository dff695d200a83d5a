// Package svg writes the small SVG pictures of mrcgen (the fabric drawing,
// the lab counter histograms): rectangles, lines and text, every attribute and
// text escaped with encoding/xml, classes styled by one style sheet. It is
// written by hand rather than taken from a library: the pictures are boxes,
// lines, bars and labels laid out by the fabric's own arithmetic, which no
// chart type of a charting library (go-chart, gonum/plot: the latter with a
// font and raster stack) expresses, and ajstarks/svgo takes attributes and
// styles as strings it writes verbatim, so the escaping would still be ours.
package svg

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
)

// SVG is a document being written: every attribute value and every text is
// escaped, so names from a fabric file cannot break it.
type SVG struct {
	b    bytes.Buffer
	W, H float64
}

// Attr is one attribute.
type Attr struct{ K, V string }

// A builds an attribute.
func A(k string, v any) Attr {
	switch x := v.(type) {
	case float64:
		return Attr{k, num(x)}
	case int:
		return Attr{k, strconv.Itoa(x)}
	case string:
		return Attr{k, x}
	}
	return Attr{k, fmt.Sprint(v)}
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (s *SVG) esc(v string) {
	_ = xml.EscapeText(&s.b, []byte(v))
}

// Open starts an element; closed selects <x .../>.
func (s *SVG) Open(name string, closed bool, attrs ...Attr) {
	s.b.WriteByte('<')
	s.b.WriteString(name)
	for _, a := range attrs {
		s.b.WriteByte(' ')
		s.b.WriteString(a.K)
		s.b.WriteString(`="`)
		s.esc(a.V)
		s.b.WriteByte('"')
	}
	if closed {
		s.b.WriteString("/>\n")
	} else {
		s.b.WriteString(">")
	}
}

// Close ends an element.
func (s *SVG) Close(name string) {
	s.b.WriteString("</")
	s.b.WriteString(name)
	s.b.WriteString(">\n")
}

// Rect draws a rectangle with a tooltip (title) when title is not empty.
func (s *SVG) Rect(x, y, w, h float64, class, title string, extra ...Attr) {
	attrs := append([]Attr{A("x", x), A("y", y), A("width", w), A("height", h), A("class", class)}, extra...)
	if title == "" {
		s.Open("rect", true, attrs...)
		return
	}
	s.Open("rect", false, attrs...)
	s.Title(title)
	s.Close("rect")
}

// Line draws a line.
func (s *SVG) Line(x1, y1, x2, y2 float64, class, title string) {
	attrs := []Attr{A("x1", x1), A("y1", y1), A("x2", x2), A("y2", y2), A("class", class)}
	if title == "" {
		s.Open("line", true, attrs...)
		return
	}
	s.Open("line", false, attrs...)
	s.Title(title)
	s.Close("line")
}

// Text writes a text element.
func (s *SVG) Text(x, y float64, class, text string, extra ...Attr) {
	s.Open("text", false, append([]Attr{A("x", x), A("y", y), A("class", class)}, extra...)...)
	s.esc(text)
	s.Close("text")
}

// Title writes a tooltip for the enclosing element.
func (s *SVG) Title(t string) {
	s.b.WriteString("<title>")
	s.esc(t)
	s.b.WriteString("</title>")
}

// Raw writes trusted markup (the style sheet).
func (s *SVG) Raw(v string) { s.b.WriteString(v) }

// Document wraps the body in the svg element and returns it.
func (s *SVG) Document(style string) []byte {
	var out bytes.Buffer
	fmt.Fprintf(&out, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s">`+"\n",
		num(s.W), num(s.H), num(s.W), num(s.H))
	out.WriteString("<style>\n")
	out.WriteString(style)
	out.WriteString("</style>\n")
	fmt.Fprintf(&out, `<rect x="0" y="0" width="%s" height="%s" class="bg"/>`+"\n", num(s.W), num(s.H))
	out.Write(s.b.Bytes())
	out.WriteString("</svg>\n")
	return out.Bytes()
}

// Polygon draws a polygon through the points (x0, y0, x1, y1, ...).
func (s *SVG) Polygon(class, title string, pts ...float64) {
	s.pointsElement("polygon", class, title, pts)
}

// Polyline draws an open line through the points (x0, y0, x1, y1, ...).
func (s *SVG) Polyline(class, title string, pts ...float64) {
	s.pointsElement("polyline", class, title, pts)
}

// pointsElement draws an element with a points attribute (polygon,
// polyline) and, if title is set, a title inside it.
func (s *SVG) pointsElement(elem, class, title string, pts []float64) {
	var b bytes.Buffer
	for i := 0; i+1 < len(pts); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(pts[i]) + "," + num(pts[i+1]))
	}
	attrs := []Attr{A("points", b.String()), A("class", class)}
	if title == "" {
		s.Open(elem, true, attrs...)
		return
	}
	s.Open(elem, false, attrs...)
	s.Title(title)
	s.Close(elem)
}
