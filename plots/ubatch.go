package plots

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
)

// UbatchChart is the input of the ubatch sweep: prompt-processing throughput against the
// physical micro-batch size (-ub), one series per prompt length or model.
type UbatchChart struct {
	Meta      Meta           `json:"meta"`
	Metric    string         `json:"metric,omitempty"` // e.g. "pp" (default) or "pp2048"
	Interval  IntervalKind   `json:"interval,omitempty"`
	Series    []UbatchSeries `json:"series"`
	MaxPoints int            `json:"max_points,omitempty"`
}

// UbatchSeries is one sweep at a fixed prompt length. A ubatch larger than the prompt never
// fills (the prompt caps the batch), so those points cannot show an effect: the chart draws
// them hollow and says so.
type UbatchSeries struct {
	Label        string        `json:"label"`
	PromptTokens int           `json:"prompt_tokens"`
	Points       []UbatchPoint `json:"points"`
}

// ubatchPoints are one series' points on the log2 ubatch axis in ubatch order, with their
// intervals (counted in tally); a point past the series' prompt length is hollow (anyOpen). What
// is dropped or cannot show an effect is noted on h; the ubatch values plotted are added to
// ubVals and ymax grows to the highest interval.
func ubatchPoints(s UbatchSeries, kind IntervalKind, tally *intervalTally, label string, h *header, ubVals map[int]bool, ymax *float64) (xys []xy, anyOpen bool) {
	pts := append([]UbatchPoint(nil), s.Points...)
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].Ubatch < pts[b].Ubatch })
	var missing, bad, unfilled []int
	gap := false
	for _, q := range pts {
		switch {
		case q.Ubatch <= 0:
			bad = append(bad, q.Ubatch)
			continue
		case q.Missing || !finite(q.Mean) || q.Mean < 0:
			missing = append(missing, q.Ubatch)
			gap = true
			continue
		}
		half := tally.add(kind, q.SD, q.N)
		open := s.PromptTokens > 0 && q.Ubatch > s.PromptTokens
		if open {
			unfilled = append(unfilled, q.Ubatch)
			anyOpen = true
		}
		xys = append(xys, xy{x: math.Log2(float64(q.Ubatch)), y: q.Mean, lo: q.Mean - half, hi: q.Mean + half, hasErr: half > 0, open: open, gap: gap})
		gap = false
		ubVals[q.Ubatch] = true
		*ymax = math.Max(*ymax, q.Mean+half)
		if q.Mean == 0 {
			h.note("%s: 0 t/s at ub %d; check the leg", label, q.Ubatch)
		}
	}
	ub := func(v int) string { return fmt.Sprint(v) }
	if len(bad) > 0 {
		h.note("%s: ubatch %s is not positive; dropped", label, listInts(bad, ub))
	}
	if len(missing) > 0 {
		h.note("%s: no valid value at ub %s (missing, NaN, Inf or negative)", label, listInts(missing, ub))
	}
	if len(unfilled) > 0 {
		h.note("%s: ub %s exceed the %d-token prompt and never fill: no effect can show (untestable)", label, listInts(unfilled, ub), s.PromptTokens)
	}
	return xys, anyOpen
}

// UbatchPoint is one -ub value: mean and standard deviation of the repetitions (tokens/s).
type UbatchPoint struct {
	Ubatch  int     `json:"ubatch"`
	Mean    float64 `json:"mean"`
	SD      float64 `json:"sd"`
	N       int     `json:"n"`
	Missing bool    `json:"missing,omitempty"`
}

func (c UbatchChart) Kind() Kind                { return KindUbatch }
func (c UbatchChart) Plot() (*plot.Plot, error) { return Ubatch(c) }
func (c UbatchChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// Ubatch draws throughput against ubatch on a log2 axis with error bars, the prompt length
// of each series as a vertical line, and points beyond it hollow.
func Ubatch(c UbatchChart) (*plot.Plot, error) {
	kind, err := c.Interval.orDefault()
	if err != nil {
		return nil, err
	}
	metric := strings.TrimSpace(c.Metric)
	if metric == "" {
		metric = "pp"
	}
	p := newPlot(metric + " throughput vs micro-batch size (-ub)")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "physical micro-batch -ub (tokens, log2 scale)"
	p.Y.Label.Text = metric + " (tokens/s)"
	p.Add(grid())

	var (
		tally    intervalTally
		ubVals   = map[int]bool{}
		prompts  = map[int]int{} // prompt length -> first series index
		ymax     float64
		plotted  int
		plotters []plot.Plotter
		anyOpen  bool
	)
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	for i, s := range c.Series {
		label := strings.TrimSpace(s.Label)
		if label == "" && s.PromptTokens > 0 {
			label = fmt.Sprintf("pp%d", s.PromptTokens)
		}
		label = seriesLabel(label, i)
		col, shp := seriesStyle(i)
		xys, open := ubatchPoints(s, kind, &tally, label, h, ubVals, &ymax)
		anyOpen = anyOpen || open
		if s.PromptTokens <= 0 {
			h.note("%s: prompt length not given; cannot tell which ubatch values fill", label)
		} else if _, ok := prompts[s.PromptTokens]; !ok {
			prompts[s.PromptTokens] = i
		}
		n := len(xys)
		if c.MaxPoints > 0 && n > c.MaxPoints {
			xys = downsample(xys, c.MaxPoints)
			h.caption("%s: %d of %d points drawn (LTTB downsampling)", label, len(xys), n)
		}
		ls := lineStyle(col, 1.6)
		gs := glyphStyle(col, shp, false)
		legend := label
		if s.PromptTokens > 0 && !strings.Contains(label, fmt.Sprint(s.PromptTokens)) {
			legend += fmt.Sprintf(" (%d-token prompt)", s.PromptTokens)
		}
		switch n {
		case 0:
			h.note("%s: no measured point", label)
			legend += " (no data)"
		case 1:
			h.note("%s: one ubatch value only, no curve", label)
		}
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if n == 0 {
			continue
		}
		plotted++
		plotters = append(plotters, &seriesPlotter{pts: xys, line: &ls, glyph: &gs, errCol: col})
	}

	vals, xmin, xmax := log2Range(ubVals, []float64{128, 2048}, 0.05)
	// Prompt lengths inside the swept range: a vertical line in the series' colour.
	promptList := make([]int, 0, len(prompts))
	for pt := range prompts {
		promptList = append(promptList, pt)
	}
	sort.Ints(promptList)
	for _, pt := range promptList {
		lp := math.Log2(float64(pt))
		if lp <= xmin || lp >= xmax {
			continue
		}
		col, _ := seriesStyle(prompts[pt])
		p.Add(&refLine{value: lp, vertical: true, style: lineStyle(col, 1, dashRef...), label: fmt.Sprintf("prompt %d", pt), labelCol: col})
	}
	p.Add(plotters...)
	noData(p, h, plotted, len(c.Series), "point")
	if tally.ci95N != nil {
		cap := tally.caption()
		if anyOpen {
			cap += "; hollow: ubatch > prompt (never fills)"
		}
		h.caption("%s", cap)
	}
	p.X.Min, p.X.Max = xmin, xmax
	p.X.Tick.Marker = log2Ticks(vals)
	if ymax <= 0 {
		ymax = 1
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	h.attach(p)
	return p, nil
}
