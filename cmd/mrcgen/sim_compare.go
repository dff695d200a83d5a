package main

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/chart"
	"github.com/mrc-fabric/mrcgen/internal/sim"
)

// variant is one transport of a run: MRC or RoCE, with priority flow
// control or without.
type variant struct {
	tr  sim.Transport
	pfc bool
}

// String is the variant as --compare names it: "roce", "roce+pfc".
func (v variant) String() string {
	if v.pfc {
		return v.tr.String() + "+pfc"
	}
	return v.tr.String()
}

const variantNames = "mrc, mrc+pfc, roce or roce+pfc"

// resolveVariants is the run's transports: --transport's (with --pfc or
// not), then each --compare names. It returns the ones it could read with
// the error for the others, so that the other checks still see the run's
// transports.
func resolveVariants(o simOptions, tr sim.Transport) ([]variant, error) {
	vs := []variant{{tr, o.pfc}}
	if o.compare == "" {
		return vs, nil
	}
	var errs []string
	for _, name := range strings.Split(o.compare, ",") {
		name = strings.TrimSpace(name)
		base, pfc := strings.CutSuffix(name, "+pfc")
		t, err := sim.ParseTransport(base)
		if err != nil || name == "" {
			errs = append(errs, fmt.Sprintf("%q is not a transport: want %s", name, variantNames))
			continue
		}
		v := variant{t, pfc}
		if slices.Contains(vs, v) {
			why := "listed twice"
			if v == vs[0] {
				why = "--transport and --pfc already run it"
			}
			errs = append(errs, fmt.Sprintf("%s: %s", v, why))
			continue
		}
		vs = append(vs, v)
	}
	if len(errs) > 0 {
		return vs, fmt.Errorf("--compare %q: %s", o.compare, strings.Join(errs, "; "))
	}
	return vs, nil
}

func (st *simSetup) compare() bool { return len(st.variants) > 1 }

// hasMRC is whether a variant runs MRC, whose --qps and --delay-cc are.
func (st *simSetup) hasMRC() bool {
	for _, v := range st.variants {
		if v.tr == sim.MRC {
			return true
		}
	}
	return false
}

// hasRoCE is whether a variant runs RoCE, whose --roce-qps is.
func (st *simSetup) hasRoCE() bool {
	for _, v := range st.variants {
		if v.tr == sim.RoCE {
			return true
		}
	}
	return false
}

func (st *simSetup) anyPFC() bool {
	for _, v := range st.variants {
		if v.pfc {
			return true
		}
	}
	return false
}

// transports are the variants' transports, each once.
func (st *simSetup) transports() []sim.Transport {
	var trs []sim.Transport
	for _, v := range st.variants {
		if !slices.Contains(trs, v.tr) {
			trs = append(trs, v.tr)
		}
	}
	return trs
}

// options are a run's sim.Options for variant v and seed: MRC's flags go
// to the MRC runs only, the PFC thresholds to the runs with PFC.
func (st *simSetup) options(o simOptions, v variant, seed uint64) sim.Options {
	opt := sim.Options{Transport: v.tr, Flows: st.flows(o, seed), Collective: st.collective(o), Faults: st.faults, Seed: seed, Segment: o.segment,
		Window: o.window, Convergence: o.convergence, LocalRepair: o.localRepair, Limit: o.limit, Payload: o.payload, NoCongestionControl: o.noCC, ExactQueues: o.exactQueues}
	if v.tr == sim.MRC {
		opt.QPsPerPair, opt.DelayCC = o.qps, o.delayCC
	} else {
		opt.RoCEQPs = o.roceQPs
		opt.RoCEECN = st.roceECN
	}
	if v.pfc {
		opt.PFC = st.pfc
	} else {
		opt.SwitchBuffer, opt.BufferAlpha = st.switchBuf, st.bufferAlpha
	}
	return opt
}

// printCompare is the table of a comparison's runs of one seed, one line
// a transport, after their blocks.
func printCompare(io streams, st *simSetup, rs []*sim.Result) {
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	coll := rs[0].Collective != nil
	head := "TRANSPORT\tFLOWS\tFCT P50\tFCT P99\tFCT MAX\tGOODPUT MIN\tGOODPUT P50"
	if coll {
		head += "\tSLOWDOWN P99\tSLOWDOWN MAX"
	}
	fmt.Fprintln(tw, head+"\tDROPPED\tRESENT")
	for i, r := range rs {
		d, x := r.Drops, r.Retransmits
		dropped := d.TailDrop + d.LinkDown + d.RandomLoss + d.ControlLost + d.NoRoute + d.NICNoEV
		resent := x.TrimNACK + x.SACKGap + x.TailProbe + x.Timeout + x.SeqError
		line := fmt.Sprintf("%s (%s)\t%d/%d\t%s\t%s\t%s\t%.1f%%\t%.1f%%", st.variants[i], r.CongestionControl, r.Completed, r.Flows,
			usText(r.FCT.P50), usText(r.FCT.P99), usText(r.FCT.Max), 100*r.Goodput.Min, 100*r.Goodput.P50)
		if coll {
			line += fmt.Sprintf("\t%.2f\t%.2f", r.Collective.Slowdown.P99, r.Collective.Slowdown.Max)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\n", line, dropped, resent)
	}
	tw.Flush()
}

// compareResults is a comparison's JSON: each transport's result under
// its name.
func compareResults(st *simSetup, rs []*sim.Result) map[string]*sim.Result {
	m := map[string]*sim.Result{}
	for i, r := range rs {
		m[st.variants[i].String()] = r
	}
	return m
}

// The comparison figure's panels (px): two side by side.
const (
	comparePanelW = 600.0
	comparePanelH = 380.0
	// goodputColumns is how many stretches the goodput panel averages a
	// linear time axis into, goodputPerDecade a logarithmic one's decade:
	// a little over one a pixel column of its plot, 488 px wide.
	goodputColumns   = 500
	goodputPerDecade = 100
	// logRatio is how much longer than the shortest the longest of the
	// lines may be before its axis goes logarithmic.
	logRatio = 10
	// maxSpells is how many of a flap's down spells are shaded one by one;
	// a flap of more is one span.
	maxSpells = 100
)

// writeCompareSVG writes compare.svg: the flow completion times' CDFs and
// goodput over time of every transport of the run (rs[run][variant]), one
// colour a transport, the faults shaded on the time axis.
func writeCompareSVG(dir string, st *simSetup, rs [][]*sim.Result) error {
	if err := replaceFiles(map[string][]byte{filepath.Join(dir, "compare.svg"): compareFigure(st, rs)}); err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	return nil
}

func compareFigure(st *simSetup, rs [][]*sim.Result) []byte {
	var cdf, good []chart.Series
	fctLo, fctHi := math.Inf(1), 0.0
	endLo, endHi := math.Inf(1), 0.0
	for _, run := range rs {
		for i, r := range run {
			name := fmt.Sprintf("%s (%s)", st.variants[i], r.CongestionControl)
			title := fmt.Sprintf("%s seed %d", name, r.Seed)
			s := chart.Series{Name: name, Style: i, Title: title}
			var fct []float64
			for _, fr := range r.FlowResults {
				if fr.FCTUS >= 0 {
					fct = append(fct, fr.FCTUS)
				}
			}
			slices.Sort(fct)
			for j, v := range fct {
				s.X = append(s.X, v)
				s.Y = append(s.Y, float64(j+1)/float64(r.Flows))
				fctHi = math.Max(fctHi, v)
				if v > 0 {
					fctLo = math.Min(fctLo, v)
				}
			}
			cdf = append(cdf, s)
			good = append(good, chart.Series{Name: name, Style: i, Title: title})
			if n := len(r.Series); n > 0 {
				endLo, endHi = math.Min(endLo, r.Series[n-1].EndUS), math.Max(endHi, r.Series[n-1].EndUS)
			}
		}
	}
	fctLog := fctHi > logRatio*fctLo
	timeLog := endHi > logRatio*endLo
	// The goodput panel's stretches: linear from 0, or logarithmic from
	// the decade of the bins.
	var edges []float64
	bin := rs[0][0].BinUS
	if timeLog {
		lo := math.Pow(10, math.Floor(math.Log10(bin)+1e-9))
		for k := 0; ; k++ {
			e := lo * math.Pow(10, float64(k)/goodputPerDecade)
			edges = append(edges, math.Min(e, endHi))
			if e >= endHi {
				break
			}
		}
	} else {
		top := chart.Nice(endHi)
		for k := 0; k <= goodputColumns; k++ {
			edges = append(edges, top*float64(k)/goodputColumns)
		}
	}
	k := 0
	for _, run := range rs {
		for _, r := range run {
			good[k].X, good[k].Y = averageShares(r.Series, edges)
			k++
		}
	}
	var names []string
	for _, v := range st.variants {
		names = append(names, v.String())
	}
	fctNote, timeNote := "share of flows complete by each time", "payload delivered, % of the sending NICs' speed, over each pixel's time"
	if fctLog {
		fctNote += "; log time axis"
	}
	if timeLog {
		timeNote += "; log time axis"
	}
	seeds := fmt.Sprintf("seed %d", rs[0][0].Seed)
	if len(rs) > 1 {
		seeds = fmt.Sprintf("seeds %d-%d", rs[0][0].Seed, rs[len(rs)-1][0].Seed)
	}
	who := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	title := fmt.Sprintf("%s on %s: %s, %s", who, st.f.Name, st.what, seeds)
	note := "the same fabric, workload, faults and seed; each transport with its congestion control"
	if len(st.faults) > 0 {
		note += "; shaded: the faults"
	}
	timeAxis := chart.LineChart{Title: "Goodput over time", Note: timeNote, XLabel: "simulated time", YLabel: "% of line rate",
		Series: good, Spans: faultSpans(st.faults, endHi), YMax: 100, XLog: timeLog, XTick: timeTick}
	if timeLog {
		timeAxis.XMin = edges[0]
	}
	return chart.Side(title, note, comparePanelW, comparePanelH,
		chart.LineChart{Title: "Flow completion times", Note: fctNote, XLabel: "flow completion time", YLabel: "share of flows",
			Series: cdf, YMax: 1, XLog: fctLog, XTick: timeTick},
		timeAxis)
}

// averageShares is a goodput series averaged over each stretch between
// edges, in time (a stretch the series ends in over its part before the
// end; none after it): two points a stretch, its start and end at its
// average, drawn as a level line.
func averageShares(runs []sim.GoodputRun, edges []float64) (xs, ys []float64) {
	if len(runs) == 0 {
		return nil, nil
	}
	end := runs[len(runs)-1].EndUS
	j := 0
	for k := 0; k+1 < len(edges); k++ {
		a, b := edges[k], math.Min(edges[k+1], end)
		if b <= a {
			break
		}
		sum := 0.0
		for j < len(runs) && runs[j].EndUS <= a {
			j++
		}
		for i := j; i < len(runs) && runs[i].StartUS < b; i++ {
			sum += runs[i].Share * (math.Min(b, runs[i].EndUS) - math.Max(a, runs[i].StartUS))
		}
		v := 100 * sum / (b - a)
		xs, ys = append(xs, a, b), append(ys, v, v)
	}
	return xs, ys
}

// faultSpans are the faults as shaded spans, each labelled on its first
// span: a cut or a switch down while it holds, a flap's down spells (one
// span for a flap of more than maxSpells of them before end), a loss or a
// slowed rate while it holds. end (µs) is where a fault that holds to the
// end of the run is shaded to.
func faultSpans(faults []sim.Fault, end float64) []chart.Span {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	var spans []chart.Span
	for _, f := range faults {
		from, to := us(f.At), end
		if f.Until > 0 {
			to = us(f.Until)
		}
		if f.Kind != sim.Flap {
			spans = append(spans, chart.Span{From: from, To: to, Label: f.String()})
			continue
		}
		down, _ := f.Spells()
		period := us(f.Period)
		if (to-from)/period > maxSpells {
			spans = append(spans, chart.Span{From: from, To: to, Label: f.String() + " (spells not drawn)"})
			continue
		}
		label := f.String()
		for t := from; t < to; t += period {
			spans = append(spans, chart.Span{From: t, To: math.Min(t+us(down), to), Label: label})
			label = ""
		}
	}
	return spans
}

// timeTick labels a time axis' tick (µs).
func timeTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6:
		return trimFloat(v/1e6) + " s"
	case v >= 1e3:
		return trimFloat(v/1e3) + " ms"
	}
	return trimFloat(v) + " µs"
}

func trimFloat(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.3g", v), ".0") }
