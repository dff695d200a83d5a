package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/chart"
	"github.com/mrc-fabric/mrcgen/internal/sim"
)

// svgElement is one element of a drawing: its name, attributes and text.
type svgElement struct {
	name string
	attr map[string]string
	text string
}

// readSVGElements parses an SVG, failing the test if it is not
// well-formed XML.
func readSVGElements(t *testing.T, doc []byte) []svgElement {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var els []svgElement
	cur := -1
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return els
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: el.Name.Local, attr: map[string]string{}}
			for _, a := range el.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			els = append(els, e)
			cur = len(els) - 1
		case xml.CharData:
			if cur >= 0 && els[cur].name == "text" {
				els[cur].text += string(el)
			}
		case xml.EndElement:
			cur = -1
		}
	}
}

func attrFloat(t *testing.T, e svgElement, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attr[k], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", e.name, k, e.attr[k], err)
	}
	return v
}

// TestSimCompare runs tiny under MRC, lossy and lossless RoCE with one
// cut: each transport's result is the one its own run gives, the table has
// a block and a line for each, and compare.svg has one line per transport
// in each panel, a legend naming each, and the cut shaded from its start
// to its end.
func TestSimCompare(t *testing.T) {
	// The cut holds from 5 to 50 µs; MRC is done at 16 µs, both RoCE runs
	// at 113 µs, 10 times or less later: a linear time axis, to the round
	// 200 µs. The goodput panel's plot starts 600 (the first panel) + 16 +
	// 64 px in and is 600 - 80 - 32 = 488 px wide.
	for _, tc := range []struct {
		name   string
		faults []string
		// The span's left and right edge, px (0: not checked, the run's
		// end), and the goodput panel's tick labels.
		x1, x2 float64
		ticks  []string
	}{
		{"linear", []string{"--cut", "p0-t0-0:p0-t1-0@5us,until=50us"}, 680 + 5.0/200*488, 680 + 50.0/200*488,
			[]string{"0", "50 µs", "100 µs", "150 µs", "200 µs"}},
		// Cut for good, RoCE waits out a 1 ms convergence: done at 1.5 ms,
		// 100 times MRC's, so a log axis, from the 1 µs bins' decade to
		// the 10 ms one, 4 decades of 122 px: 5 µs at log10(5) x 122 px.
		{"log", []string{"--cut", "p0-t0-0:p0-t1-0@5us", "--convergence", "1ms"}, 765.2743405289943, 0,
			[]string{"1 µs", "10 µs", "100 µs", "1 ms", "10 ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"sim", "-p", "tiny", "--bytes", "256KiB"}, tc.faults...)
			cmp := append(args, "--compare", "roce,roce+pfc")
			code, out, errOut := mrcgen(t, append(cmp, "--svg", dir)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range []string{"sim tiny: mrc (dctcp), permutation of 4 hosts", "sim tiny: roce (dcqcn), permutation",
				"sim tiny: roce+pfc (dcqcn), permutation", "\nTRANSPORT ", "\nmrc (dctcp)  ", "\nroce (dcqcn)  ", "\nroce+pfc (dcqcn)  "} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q in:\n%s", want, out)
				}
			}
			// -o json: each transport's result, equal to its own run's but
			// for the wall clock.
			code, out, errOut = mrcgen(t, append(cmp, "-o", "json")...)
			var got map[string]map[string]any
			if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("-o json: exit %d: %s %s", code, out, errOut)
			}
			if len(got) != 3 {
				t.Errorf("-o json: %d results, want mrc, roce and roce+pfc", len(got))
			}
			for name, flags := range map[string][]string{"mrc": nil, "roce": {"--transport", "roce"}, "roce+pfc": {"--transport", "roce", "--pfc"}} {
				code, out, errOut := mrcgen(t, append(append(args, flags...), "-o", "json")...)
				var want map[string]any
				if code != 0 || json.Unmarshal([]byte(out), &want) != nil {
					t.Fatalf("%v: exit %d: %s", flags, code, errOut)
				}
				delete(want, "run")
				delete(got[name], "run")
				if !reflect.DeepEqual(got[name], want) {
					t.Errorf("--compare's %s differs from sim %s", name, strings.Join(flags, " "))
				}
			}
			if _, ok := got["roce+pfc"]["pfc"]; !ok {
				t.Errorf("roce+pfc ran without PFC")
			}
			if _, ok := got["roce"]["pfc"]; ok {
				t.Errorf("roce ran with PFC")
			}

			doc, err := os.ReadFile(filepath.Join(dir, "compare.svg"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "goodput.svg")); !os.IsNotExist(err) {
				t.Errorf("--compare wrote goodput.svg too")
			}
			lines := map[string]int{} // "panel class" -> lines
			legends := map[string]int{}
			var spans, ticks []svgElement
			for _, e := range readSVGElements(t, doc) {
				switch {
				case e.name == "polyline":
					x, _, _ := strings.Cut(e.attr["points"], ",")
					panel := "fct"
					if v, _ := strconv.ParseFloat(x, 64); v >= 600 {
						panel = "goodput"
					}
					lines[panel+" "+e.attr["class"]]++
				case e.name == "text" && e.attr["class"] == "legend":
					legends[e.text]++
				case e.name == "rect" && e.attr["class"] == "span":
					spans = append(spans, e)
				case e.name == "text" && e.attr["class"] == "label" && attrFloat(t, e, "x") >= 600:
					ticks = append(ticks, e)
				}
			}
			want := map[string]int{"fct line s0": 1, "fct line s1": 1, "fct line s2": 1, "goodput line s0": 1, "goodput line s1": 1, "goodput line s2": 1}
			if !reflect.DeepEqual(lines, want) {
				t.Errorf("lines per panel and transport %v, want %v", lines, want)
			}
			if want := map[string]int{"mrc (dctcp)": 2, "roce (dcqcn)": 2, "roce+pfc (dcqcn)": 2}; !reflect.DeepEqual(legends, want) {
				t.Errorf("legend entries %v, want %v", legends, want)
			}
			if len(spans) != 1 {
				t.Fatalf("%d fault spans, want 1", len(spans))
			}
			x, w := attrFloat(t, spans[0], "x"), attrFloat(t, spans[0], "width")
			if math.Abs(x-tc.x1) > 1e-6 || tc.x2 != 0 && math.Abs(x+w-tc.x2) > 1e-6 {
				t.Errorf("the cut is shaded from %v to %v px, want %v to %v", x, x+w, tc.x1, tc.x2)
			}
			var labels []string
			for _, e := range ticks {
				labels = append(labels, e.text)
			}
			if !reflect.DeepEqual(labels, tc.ticks) {
				t.Errorf("time axis %q, want %q", labels, tc.ticks)
			}
		})
	}
}

// TestSimCompareFlags: MRC's flags go to the MRC runs of a comparison, and
// --pfc-xoff to its +pfc ones, which are accepted when a +pfc run needs
// them; a comparison's JSON of several seeds is an array, and its figure
// has a line per seed and transport, a legend entry per transport.
func TestSimCompareFlags(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := mrcgen(t, "sim", "-p", "tiny", "--bytes", "64KiB", "--transport", "roce", "--compare", "mrc,mrc+pfc",
		"--qps", "3", "--pfc-xoff", "200000", "--runs", "2", "-o", "json", "--svg", dir)
	var got []map[string]struct {
		Transport string `json:"transport"`
		QPs       int    `json:"qps_per_pair"`
		Seed      int    `json:"seed"`
		PFC       *struct {
			XOFF int64 `json:"xoff_bytes"`
		} `json:"pfc"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	for i, run := range got {
		r, m, mp := run["roce"], run["mrc"], run["mrc+pfc"]
		if r.Transport != "roce" || r.QPs != 2 || r.PFC != nil || r.Seed != i+1 {
			t.Errorf("seed %d: roce ran %+v, want RoCE, one QP per plane (2), no PFC", i+1, r)
		}
		if m.Transport != "mrc" || m.QPs != 3 || m.PFC != nil {
			t.Errorf("seed %d: mrc ran %+v, want MRC with --qps 3, no PFC", i+1, m)
		}
		if mp.Transport != "mrc" || mp.QPs != 3 || mp.PFC == nil || mp.PFC.XOFF != 200000 {
			t.Errorf("seed %d: mrc+pfc ran %+v, want MRC with --qps 3 and XOFF 200000", i+1, mp)
		}
	}
	doc, err := os.ReadFile(filepath.Join(dir, "compare.svg"))
	if err != nil {
		t.Fatal(err)
	}
	lines, legends := map[string]int{}, map[string]int{}
	for _, e := range readSVGElements(t, doc) {
		switch {
		case e.name == "polyline":
			lines[e.attr["class"]]++
		case e.name == "text" && e.attr["class"] == "legend":
			legends[e.text]++
		}
	}
	// Two panels, two seeds: four lines a transport, two legend entries.
	if want := map[string]int{"line s0": 4, "line s1": 4, "line s2": 4}; !reflect.DeepEqual(lines, want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
	if want := map[string]int{"roce (dcqcn)": 2, "mrc (dctcp)": 2, "mrc+pfc (dctcp)": 2}; !reflect.DeepEqual(legends, want) {
		t.Errorf("legend entries %v, want %v", legends, want)
	}
}

// readmeCompareCommand is the command the README shows next to its
// comparison figure, docs/img/compare.svg.
const readmeCompareCommand = "mrcgen sim -p small --hosts 8 -w ring-allreduce --bytes 64MiB --switch-down p0-t1-0@500us --compare roce,roce+pfc --exact-queues --svg docs/img"

// TestGoldenREADMECompare regenerates the README's comparison figure with
// the command printed beside it and compares it with the committed file
// (-update rewrites it: after a change to the simulator's physics, go
// test ./cmd/mrcgen -run Golden -update), so that the figure cannot drift
// from the code.
func TestGoldenREADMECompare(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), readmeCompareCommand) || !strings.Contains(string(readme), "(docs/img/compare.svg)") {
		t.Fatalf("README does not show docs/img/compare.svg next to %q", readmeCompareCommand)
	}
	dir := t.TempDir()
	args := strings.Fields(readmeCompareCommand)[1:]
	args[len(args)-1] = dir
	if code, _, errOut := mrcgen(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, err := os.ReadFile(filepath.Join(dir, "compare.svg"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(root, "docs", "img", "compare.svg")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/mrcgen -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what `%s` draws now: run go test ./cmd/mrcgen -run Golden -update and look at it", golden, readmeCompareCommand)
	}
}

// TestFaultSpans: a flap is shaded spell by spell, labelled on its first,
// up to its until or the run's end; a flap of more than 100 spells is one
// span; a cut from its start to its until, or to the end.
func TestFaultSpans(t *testing.T) {
	flap := sim.Fault{Kind: sim.Flap, A: "p0-t0-0", B: "p0-t1-0", At: 50 * time.Microsecond, Period: 200 * time.Microsecond, Duty: 0.5}
	until := flap
	until.Until = 500 * time.Microsecond
	cut := sim.Fault{Kind: sim.LinkDown, A: "p0-t0-0", B: "p0-t1-0", At: 5 * time.Microsecond}
	cutUntil := cut
	cutUntil.Until = 20 * time.Microsecond
	sp := func(from, to float64, label string) chart.Span { return chart.Span{From: from, To: to, Label: label} }
	const flapLabel = "flap p0-t0-0:p0-t1-0@50µs,period=200µs,duty=50%"
	for _, tc := range []struct {
		f    sim.Fault
		end  float64
		want []chart.Span
	}{
		{until, 1000, []chart.Span{sp(50, 150, flapLabel+",until=500µs"), sp(250, 350, ""), sp(450, 500, "")}},
		{flap, 460, []chart.Span{sp(50, 150, flapLabel), sp(250, 350, ""), sp(450, 460, "")}},
		{flap, 50 + 200*101, []chart.Span{sp(50, 50+200*101, flapLabel+" (spells not drawn)")}},
		{cut, 70, []chart.Span{sp(5, 70, "cut p0-t0-0:p0-t1-0@5µs")}},
		{cutUntil, 70, []chart.Span{sp(5, 20, "cut p0-t0-0:p0-t1-0@5µs,until=20µs")}},
	} {
		if got := faultSpans([]sim.Fault{tc.f}, tc.end); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s to %v µs: spans %v, want %v", tc.f, tc.end, got, tc.want)
		}
	}
}

// TestAverageShares: the goodput series averaged over each stretch, in
// time: 50% for 2 µs then 100% for 3 µs, over stretches of 0-1, 1-3 and
// 3-6 µs, is 50%, 75% and, over the 2 µs before the series ends, 100%.
func TestAverageShares(t *testing.T) {
	xs, ys := averageShares([]sim.GoodputRun{{StartUS: 0, EndUS: 2, Share: 0.5}, {StartUS: 2, EndUS: 5, Share: 1}}, []float64{0, 1, 3, 6})
	if want := []float64{0, 1, 1, 3, 3, 5}; !reflect.DeepEqual(xs, want) {
		t.Errorf("x %v, want %v", xs, want)
	}
	if want := []float64{50, 50, 75, 75, 100, 100}; !reflect.DeepEqual(ys, want) {
		t.Errorf("y %v, want %v", ys, want)
	}
}
