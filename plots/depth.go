package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
)

// DepthChart is the input of the depth chart: a llama-bench metric (tg or pp) against the
// number of tokens already in the KV cache, one series per model or configuration.
type DepthChart struct {
	Meta Meta `json:"meta"`
	// Metric names what was measured, e.g. "tg128" or "pp512"; it titles the chart and the
	// y axis.
	Metric string `json:"metric"`
	// Interval is what the error bars span: "ci95" (default) or "sd".
	Interval IntervalKind `json:"interval,omitempty"`
	// RefLine draws a horizontal line at this rate (e.g. 70 t/s) and marks where each
	// series first falls below it; 0 draws none.
	RefLine float64       `json:"ref_line,omitempty"`
	Series  []DepthSeries `json:"series"`
	// MaxPoints downsamples longer series (LTTB); 0 keeps every point.
	MaxPoints int `json:"max_points,omitempty"`
}

// DepthSeries is one model or configuration.
type DepthSeries struct {
	Label  string       `json:"label"`
	Points []DepthPoint `json:"points"`
}

// DepthPoint is llama-bench's result at one depth: mean and standard deviation of the
// repetitions (avg_ts, stddev_ts) and how many there were.
type DepthPoint struct {
	Depth int     `json:"depth"` // tokens in the KV cache (-d)
	Mean  float64 `json:"mean"`  // tokens/s
	SD    float64 `json:"sd"`    // tokens/s
	N     int     `json:"n"`     // repetitions
	// Missing marks a depth that was planned but yielded no data (a crashed leg): the line
	// breaks there and the chart says so.
	Missing bool `json:"missing,omitempty"`
}

func (c DepthChart) Kind() Kind                { return KindDepth }
func (c DepthChart) Plot() (*plot.Plot, error) { return Depth(c) }
func (c DepthChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// CrossingStatus says where a series stands against a reference line.
type CrossingStatus int

const (
	// NoData: the series has no measured point.
	NoData CrossingStatus = iota
	// Crosses: the series falls below the line between two measured depths.
	Crosses
	// BelowAtStart: already below the line at the first measured depth.
	BelowAtStart
	// NeverBelow: at or above the line at every measured depth ("not within the measured
	// range").
	NeverBelow
)

// Crossing is the depth where a series first falls below a reference line.
type Crossing struct {
	Status CrossingStatus
	// Depth is the interpolated depth (Crosses) or the first measured depth (BelowAtStart).
	Depth float64
}

// CrossingDepth returns where the mean first falls below line, by linear interpolation
// between the bracketing measured depths (docs/domain.md, "Crossing depth"); missing and
// non-finite points are skipped. Seed check: 75.34 t/s at 4096 and 67.98 at 8192 cross 70
// at 7068.
func CrossingDepth(points []DepthPoint, line float64) Crossing {
	pts := make([]DepthPoint, 0, len(points))
	for _, p := range points {
		if !p.Missing && finite(p.Mean) && p.Depth >= 0 {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return Crossing{Status: NoData}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Depth < pts[j].Depth })
	if pts[0].Mean < line {
		return Crossing{Status: BelowAtStart, Depth: float64(pts[0].Depth)}
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if b.Mean < line {
			f := (a.Mean - line) / (a.Mean - b.Mean)
			return Crossing{Status: Crosses, Depth: float64(a.Depth) + f*float64(b.Depth-a.Depth)}
		}
	}
	return Crossing{Status: NeverBelow}
}

// depthPoints are one series' points in depth order with their intervals (counted in tally);
// what is missing, not finite, negative, zero or not measured at a depth another series has
// (allDepths) is noted on h; ymax and dmax grow to the highest interval and depth drawn.
func depthPoints(pts []DepthPoint, kind IntervalKind, tally *intervalTally, label string, h *header, allDepths map[int]bool, ymax *float64, dmax *int) []xy {
	var (
		xys                            []xy
		missing, nonFinite, neg, zeros []int
		have                           = map[int]bool{}
		gap                            bool
	)
	for _, q := range pts {
		switch {
		case q.Depth < 0:
			h.note("%s: depth %d is negative; dropped", label, q.Depth)
			continue
		case q.Missing:
			missing = append(missing, q.Depth)
			have[q.Depth] = true
			gap = true
			continue
		case !finite(q.Mean):
			nonFinite = append(nonFinite, q.Depth)
			have[q.Depth] = true
			gap = true
			continue
		case q.Mean < 0:
			neg = append(neg, q.Depth)
			have[q.Depth] = true
			gap = true
			continue
		case q.Mean == 0:
			zeros = append(zeros, q.Depth)
		}
		have[q.Depth] = true
		half := tally.add(kind, q.SD, q.N)
		xys = append(xys, xy{x: float64(q.Depth), y: q.Mean, lo: q.Mean - half, hi: q.Mean + half, hasErr: half > 0, gap: gap})
		gap = false
		*ymax = math.Max(*ymax, q.Mean+half)
		*dmax = max(*dmax, q.Depth)
	}
	var absent []int
	for d := range allDepths {
		if !have[d] {
			absent = append(absent, d)
		}
	}
	if len(missing) > 0 {
		h.note("%s: no data at %s (leg yielded none)", label, listInts(missing, depthLabel))
	}
	if len(nonFinite) > 0 {
		h.note("%s: NaN/Inf value at %s; not drawn", label, listInts(nonFinite, depthLabel))
	}
	if len(neg) > 0 {
		h.note("%s: negative rate at %s; not drawn", label, listInts(neg, depthLabel))
	}
	if len(zeros) > 0 {
		h.note("%s: 0 t/s at %s; check the leg", label, listInts(zeros, depthLabel))
	}
	if len(absent) > 0 && len(xys) > 0 {
		h.note("%s: not measured at %s", label, listInts(absent, depthLabel))
	}
	return xys
}

// crossingLegend is what a series' legend says of the reference line (where it falls below
// it, or that it does not), with a callout at a crossing.
func crossingLegend(pts []DepthPoint, line float64, col color.Color, calls *callouts) string {
	legend := ""
	ref := fmtRef(line)
	switch cr := CrossingDepth(pts, line); cr.Status {
	case Crosses:
		legend = fmt.Sprintf(" — below %s from ~%s", ref, fmtThousands(cr.Depth))
		calls.items = append(calls.items, callout{x: cr.Depth, y: line, col: col, label: "~" + fmtThousands(cr.Depth), drop: true})
	case BelowAtStart:
		legend = fmt.Sprintf(" — below %s at %s", ref, depthLabel(int(cr.Depth)))
	case NeverBelow:
		legend = fmt.Sprintf(" — above %s to %s", ref, depthLabel(dmaxOf(pts)))
	}
	return legend
}

// Depth draws throughput against KV depth: one line per series, mean with error bars, and
// an optional reference line with each series' interpolated crossing marked.
func Depth(c DepthChart) (*plot.Plot, error) {
	kind, err := c.Interval.orDefault()
	if err != nil {
		return nil, err
	}
	if c.RefLine < 0 || !finite(c.RefLine) {
		return nil, fmt.Errorf("reference line %v t/s: give a positive rate, or 0 for none", c.RefLine)
	}
	metric := strings.TrimSpace(c.Metric)
	if metric == "" {
		metric = "throughput"
	}
	p := newPlot(metric + " throughput vs KV depth")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "KV depth (tokens already in the cache)"
	p.Y.Label.Text = metric + " (tokens/s)"
	p.Add(grid())

	var (
		tally     intervalTally
		allDepths = map[int]bool{}
		plotted   int
		ymax      = 0.0
		dmax      = 0
		calls     callouts
		plotters  []plot.Plotter
	)
	for _, s := range c.Series {
		for _, q := range s.Points {
			if q.Depth >= 0 {
				allDepths[q.Depth] = true
			}
		}
	}
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	for i, s := range c.Series {
		label := seriesLabel(s.Label, i)
		col, shp := seriesStyle(i)
		pts := append([]DepthPoint(nil), s.Points...)
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].Depth < pts[b].Depth })

		xys := depthPoints(pts, kind, &tally, label, h, allDepths, &ymax, &dmax)

		n := len(xys)
		if c.MaxPoints > 0 && n > c.MaxPoints {
			xys = downsample(xys, c.MaxPoints)
			h.caption("%s: %d of %d points drawn (LTTB downsampling)", label, len(xys), n)
		}

		legend := label
		switch {
		case n == 0:
			h.note("%s: no measured point", label)
			legend += " (no data)"
		case n == 1:
			h.note("%s: one depth only, no curve", label)
		}
		if c.RefLine > 0 && n > 0 {
			legend += crossingLegend(pts, c.RefLine, col, &calls)
		}
		ls := lineStyle(col, 1.6)
		gs := glyphStyle(col, shp, false)
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if n == 0 {
			continue
		}
		plotted++
		plotters = append(plotters, &seriesPlotter{pts: xys, line: &ls, glyph: &gs, errCol: col})
	}
	if plotted == 0 && len(c.Series) > 0 {
		h.note("no series has a measured point")
	}

	if c.RefLine > 0 {
		rl := lineStyle(colRef, 1, dashRef...)
		p.Add(&refLine{value: c.RefLine, style: rl, label: fmtRef(c.RefLine) + " t/s", labelCol: colRef})
		ymax = math.Max(ymax, c.RefLine)
	}
	p.Add(plotters...)
	addCallouts(p, h, &calls, "crossings")
	if plotted == 0 {
		p.Add(message{"no data to plot"})
	}
	if tally.ci95N != nil {
		h.caption("%s", tally.caption())
	}

	// Axes: depth from 0, rate from 0 (slopes compare honestly across models).
	depths := make([]float64, 0, len(allDepths))
	for d := range allDepths {
		depths = append(depths, float64(d))
	}
	if dmax == 0 {
		dmax = 1024
		for _, d := range depths {
			dmax = max(dmax, int(d))
		}
	}
	p.X.Min, p.X.Max = 0, float64(dmax)
	pad := 0.03 * p.X.Max
	p.X.Min, p.X.Max = -pad, p.X.Max+pad
	if len(depths) == 0 {
		depths = []float64{0, float64(dmax)}
	}
	p.X.Tick.Marker = valueTicks{values: thinValues(depths, 0, float64(dmax), 0.045), label: func(v float64) string { return fmtTokens(v) }}
	if ymax <= 0 {
		ymax = 1
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	h.attach(p)
	return p, nil
}

func depthLabel(d int) string { return "d" + fmtTokens(float64(d)) }

func dmaxOf(pts []DepthPoint) int {
	m := 0
	for _, q := range pts {
		if !q.Missing && finite(q.Mean) {
			m = max(m, q.Depth)
		}
	}
	return m
}
