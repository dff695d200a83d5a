package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
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
