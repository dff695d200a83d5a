package draw_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/draw"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/compiler/verify"
	"github.com/mrc-fabric/mrcgen/tables"
)

func newPlan(t testing.TB, preset string) *plan.Plan {
	t.Helper()
	f, err := fabric.FromPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	return plan.New(f)
}

// render draws p with links down (verified first) and returns the SVG.
func render(t *testing.T, p *plan.Plan, mode draw.Mode, down ...verify.Link) []byte {
	t.Helper()
	opt := draw.Options{Mode: mode, Down: down}
	if len(down) > 0 {
		rep, err := verify.Run(context.Background(), p, verify.GeneratorSource{G: tables.NewGenerator(p)}, verify.Options{Down: down})
		if err != nil {
			t.Fatal(err)
		}
		opt.Report = rep
	}
	var b bytes.Buffer
	if err := draw.Draw(&b, p, opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// census decodes an SVG with encoding/xml (so it must be well-formed) and
// counts its elements by element name and class ("rect.t1", "line.link
// failed"), and collects its texts.
func census(t *testing.T, doc []byte) (map[string]int, []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	counts := map[string]int{}
	var texts []string
	inText := false
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				if el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", el.Name.Space)
				}
			}
			class := ""
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			counts[el.Name.Local+"."+class]++
			inText = el.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(el))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	return counts, texts
}

func link(role plan.Role, pl, index, port int) verify.Link {
	return verify.Link{Switch: plan.Switch{Role: role, Plane: pl, Index: index}, Port: port}
}

func TestDrawFullCounts(t *testing.T) {
	for _, tc := range []struct {
		preset             string
		t1, t0, nic, links int
	}{
		// tiny: 2 planes x 2 T1, 2 T0, 4 NIC ports; links 2 x (2x2 + 4).
		{"tiny", 4, 4, 8, 16},
		// small: 4 planes x 4 T1, 8 T0, 32 NIC ports; links 4 x (8x4 + 32).
		{"small", 16, 32, 128, 256},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			p := newPlan(t, tc.preset)
			c, texts := census(t, render(t, p, draw.Auto))
			want := map[string]int{"rect.t1": tc.t1, "rect.t0": tc.t0, "rect.nic": tc.nic, "line.link": tc.links,
				"rect.plane": p.F.Planes, "line.link failed": 0, "rect.t1 lossy": 0, "rect.nic hit": 0}
			for k, n := range want {
				if c[k] != n {
					t.Errorf("%s: %d, want %d (all: %v)", k, c[k], n, c)
				}
			}
			// Every switch is named on the picture.
			all := strings.Join(texts, "\n")
			for _, s := range p.Switches() {
				if !strings.Contains(all, p.Name(s)+"\n") {
					t.Errorf("switch %s not named", p.Name(s))
				}
			}
		})
	}
}

// TestDrawTinyFail: p0-t0-0 -- p0-t1-1 down. One failed link; the other
// link of p0-t1-1 (to p0-t0-1) carries the lost paths; p0-t1-1 loses 8
// paths; all 4 hosts lose 20% (2 of their 10 paths), shown on the 8 NIC
// ports; the 4 + 4 host pairs between the rows lose 25%.
func TestDrawTinyFail(t *testing.T) {
	p := newPlan(t, "tiny")
	c, texts := census(t, render(t, p, draw.Auto, link(plan.RoleT0, 0, 0, 3)))
	want := map[string]int{"line.link failed": 1, "line.link lossy": 1, "line.link": 14,
		"rect.t1 lossy": 1, "rect.t1": 3, "rect.nic hit": 8, "rect.nic": 0, "text.x": 1}
	for k, n := range want {
		if c[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, c[k], n, c)
		}
	}
	all := strings.Join(texts, "\n")
	for _, s := range []string{
		"p0-t0-0 (port 3) ↔ p0-t1-1 (port 0)",
		"plane 0, T1 p0-t1-1: 8 paths",
		"25.0% of the paths of 8 host pairs: nic-0..1 → nic-2..3; nic-2..3 → nic-0..1",
		"20.0%: 4 hosts (nic-0, nic-1, nic-2, nic-3)",
		"8 paths lost",
	} {
		if !strings.Contains(all, s) {
			t.Errorf("missing %q in the texts:\n%s", s, all)
		}
	}
}

// TestDrawSummary: mrc-131k is summarised (no per-device element: 6,144
// switches would be a hairball), and so is small on request, with the
// failed links marked at their positions.
func TestDrawSummary(t *testing.T) {
	p := newPlan(t, "mrc-131k")
	doc := render(t, p, draw.Auto)
	c, texts := census(t, doc)
	want := map[string]int{"rect.plane": 8, "rect.strip t1": 8, "rect.strip t0": 8, "rect.strip nic": 8, "polygon.bundle": 16,
		"rect.t1": 0, "rect.t0": 0, "line.link": 0, "rect.t1 sample": 1, "line.link failed sample": 1}
	for k, n := range want {
		if c[k] != n {
			t.Errorf("mrc-131k %s: %d, want %d (all: %v)", k, c[k], n, c)
		}
	}
	if len(doc) > 64<<10 {
		t.Errorf("mrc-131k drawing is %d bytes: not summarised", len(doc))
	}
	all := strings.Join(texts, "\n")
	for _, s := range []string{"256 T1", "512 T0", "131,072 NIC ports", "6,144 switches"} {
		if !strings.Contains(all, s) {
			t.Errorf("missing %q", s)
		}
	}

	ps := newPlan(t, "small")
	c, texts = census(t, render(t, ps, draw.Summary, link(plan.RoleT0, 1, 2, 4+3), link(plan.RoleT0, 2, 5, 1)))
	want = map[string]int{"rect.plane": 4, "rect.strip t1": 4, "line.link failed": 2, "rect.mark": 4, "rect.mark lossy": 1 + 4}
	for k, n := range want {
		if c[k] != n {
			t.Errorf("small summary %s: %d, want %d (all: %v)", k, c[k], n, c)
		}
	}
	if all := strings.Join(texts, "\n"); !strings.Contains(all, "down: p2-t0-5/1 ↔ nic-21/3") {
		t.Errorf("NIC link not named:\n%s", all)
	}
}

// TestDrawPNG renders the tiny failure picture with rsvg-convert (librsvg),
// the renderer GitHub-like viewers resemble most, and checks it is a PNG of
// the SVG's size.
func TestDrawPNG(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert not found (Debian: apt-get install librsvg2-bin)")
	}
	p := newPlan(t, "tiny")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "tiny.svg"), filepath.Join(dir, "tiny.png")
	if err := os.WriteFile(in, render(t, p, draw.Auto, link(plan.RoleT0, 0, 0, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(rsvg, "-o", out, in).CombinedOutput(); err != nil || len(msg) > 0 {
		t.Fatalf("rsvg-convert: %v: %s", err, msg)
	}
	png, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 24 {
		t.Fatalf("not a PNG: % x", png[:min(len(png), 16)])
	}
	w := int(png[16])<<24 | int(png[17])<<16 | int(png[18])<<8 | int(png[19])
	h := int(png[20])<<24 | int(png[21])<<16 | int(png[22])<<8 | int(png[23])
	if w < 600 || h < 400 || len(png) < 10000 {
		t.Errorf("PNG %dx%d, %d bytes: too small to hold the picture", w, h, len(png))
	}
}
