package quant

import (
	"slices"

	"sparkbench/plots"
)

// ChartNames are a ladder bundle's plots (under plots/, .png), in the receipt's order.
const (
	ChartPareto  = "pareto"
	ChartKLDBits = "kld-bits"
	ChartDepthTG = "candidates-tg"
	ChartDepthPP = "candidates-pp"
)

// Charts are every chart of a ladder: the speed-against-KLD Pareto chart, KLD against bits
// per weight, and each test's depth curves of all candidates on one chart (a test nobody
// measured is left out), by name.
func Charts(res *Result, meta plots.Meta) (names []string, charts []plots.Chart) {
	names = append(names, ChartPareto, ChartKLDBits)
	charts = append(charts, Chart(res, meta), KLDBits(res, meta))
	for _, test := range []string{"tg", "pp"} {
		if c := DepthCurves(res, meta, test); len(c.Series) > 0 {
			names = append(names, "candidates-"+test)
			charts = append(charts, c)
		}
	}
	return names, charts
}

// KLDBits is the ladder's KLD-against-bits chart: every candidate with a KLD and a size.
func KLDBits(res *Result, meta plots.Meta) plots.KLDBitsChart {
	c := plots.KLDBitsChart{Meta: meta, Points: []plots.KLDBitsPoint{}}
	sel := res.Selection
	for _, cand := range res.Candidates {
		if cand.KLD == nil || cand.BitsPerWeight <= 0 {
			continue
		}
		c.Points = append(c.Points, plots.KLDBitsPoint{Label: cand.Type, Bits: cand.BitsPerWeight, KLD: cand.KLD.Mean, KLDP99: cand.KLD.P99,
			Selected: cand.Type == sel.Selected, Rejected: slices.ContainsFunc(sel.Rejected, func(r Rejection) bool { return r.Type == cand.Type })})
	}
	return c
}

// DepthCurves is one test's (tg or pp) speed against depth, a series per candidate measured,
// in plan order, the selected one's label marked.
func DepthCurves(res *Result, meta plots.Meta, test string) plots.DepthChart {
	c := plots.DepthChart{Meta: meta, Metric: test, Interval: plots.IntervalSD, Series: []plots.DepthSeries{}}
	for _, r := range res.Records {
		s := plots.DepthSeries{Label: r.Type}
		if r.Type == res.Selection.Selected {
			s.Label += " (selected)"
		}
		for _, b := range r.Bench {
			if b.Test == test {
				s.Points = append(s.Points, plots.DepthPoint{Depth: b.Depth, Mean: b.Mean, SD: b.SD, N: b.N})
			}
		}
		if len(s.Points) > 0 {
			slices.SortFunc(s.Points, func(a, b plots.DepthPoint) int { return a.Depth - b.Depth })
			c.Series = append(c.Series, s)
		}
	}
	return c
}
