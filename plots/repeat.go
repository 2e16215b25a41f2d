package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
)

// RepeatChart is the input of the repeatability strip: the same leg run again and again over
// a window, with the noise band around its mean.
type RepeatChart struct {
	Meta   Meta   `json:"meta"`
	Metric string `json:"metric,omitempty"` // e.g. "tg128"
	Unit   string `json:"unit,omitempty"`   // default "tokens/s"
	// NoiseFloor is the half-width of the band around each series' mean, as a fraction of
	// the mean; 0 means the house single-run noise floor, 1.5% (docs/domain.md, "Noise floor").
	NoiseFloor float64        `json:"noise_floor,omitempty"`
	Interval   IntervalKind   `json:"interval,omitempty"`
	Series     []RepeatSeries `json:"series"`
	MaxPoints  int            `json:"max_points,omitempty"`
}

// DefaultNoiseFloor is the single-run noise the bench log measured (±1.5% CV).
const DefaultNoiseFloor = 0.015

// RepeatSeries is one leg repeated.
type RepeatSeries struct {
	Label  string        `json:"label"`
	Points []RepeatPoint `json:"points"`
}

// RepeatPoint is one run of the leg. At places it in time (UTC on the axis); when any point
// of the chart lacks At, the x axis is the run number instead. SD and N, when given, draw an
// error bar. Condition is a declared condition ("download running"): the point is drawn
// hollow and, on short series, labelled.
type RepeatPoint struct {
	At        time.Time `json:"at,omitzero"`
	Value     float64   `json:"value"`
	SD        float64   `json:"sd,omitempty"`
	N         int       `json:"n,omitempty"`
	Condition string    `json:"condition,omitempty"`
}

func (c RepeatChart) Kind() Kind                { return KindRepeatability }
func (c RepeatChart) Plot() (*plot.Plot, error) { return Repeat(c) }
func (c RepeatChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// Repeat draws each run as a point over time (or run number), the series' mean as a thin
// line and the noise band around it, and says each series' CV and how many runs fall
// outside the band.
func Repeat(c RepeatChart) (*plot.Plot, error) {
	kind, err := c.Interval.orDefault()
	if err != nil {
		return nil, err
	}
	floor := c.NoiseFloor
	if floor == 0 {
		floor = DefaultNoiseFloor
	}
	if !(floor > 0) || floor >= 1 || !finite(floor) {
		return nil, fmt.Errorf("noise floor %v: give a fraction of the mean such as 0.015", c.NoiseFloor)
	}
	metric := strings.TrimSpace(c.Metric)
	if metric == "" {
		metric = "throughput"
	}
	unit := strings.TrimSpace(c.Unit)
	if unit == "" {
		unit = "tokens/s"
	}
	p := newPlot("Repeatability of " + metric + " over time")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.Y.Label.Text = metric + " (" + unit + ")"

	useTime, xOf := repeatX(c)
	if useTime {
		p.X.Label.Text = "time of run (UTC)"
	} else {
		p.X.Label.Text = "run number"
	}

	var (
		tally              intervalTally
		xmin, xmax         = math.Inf(1), math.Inf(-1)
		ymin, ymax         = math.Inf(1), math.Inf(-1)
		plotted            int
		bands, plotters    []plot.Plotter
		labels             pointLabels
		anyCond, anyErrBar bool
	)
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	for i, s := range c.Series {
		label := seriesLabel(s.Label, i)
		col, shp := seriesStyle(i)
		pts := append([]RepeatPoint(nil), s.Points...)
		if useTime {
			sort.SliceStable(pts, func(a, b int) bool { return pts[a].At.Before(pts[b].At) })
		}
		xys, bad, zero, sum, sumSq, errBar, cond := repeatPoints(pts, xOf, kind, &tally)
		anyErrBar, anyCond = anyErrBar || errBar, anyCond || cond
		if bad > 0 {
			h.note("%s: %d runs with NaN, Inf or negative values not drawn", label, bad)
		}
		if zero > 0 {
			h.note("%s: %d runs at 0 %s; check those legs", label, zero, unit)
		}
		n := len(xys)
		legend, mean := repeatLegend(label, n, sum, sumSq)
		outside := 0
		for _, q := range xys {
			if math.Abs(q.y-mean) > floor*mean {
				outside++
			}
			xmin, xmax = math.Min(xmin, q.x), math.Max(xmax, q.x)
			ymin, ymax = math.Min(ymin, q.lo), math.Max(ymax, q.hi)
			ymin, ymax = math.Min(ymin, q.y), math.Max(ymax, q.y)
		}
		switch {
		case n == 0:
			h.note("%s: no measured run", label)
			legend += " (no data)"
		case n == 1:
			h.note("%s: one run only: no spread to judge", label)
		}
		if outside > 0 {
			h.caption("%s: %d of %d runs outside the ±%.1f%% band", label, outside, n, floor*100)
		}
		if n <= 20 {
			labels.items = append(labels.items, conditionLabels(xys, pts, xOf, col)...)
		}
		if c.MaxPoints > 0 && n > c.MaxPoints {
			xys = downsample(xys, c.MaxPoints)
			h.caption("%s: %d of %d runs drawn (LTTB downsampling)", label, len(xys), n)
		}
		ls := lineStyle(col, 1.2)
		gs := glyphStyle(col, shp, false)
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if n == 0 {
			continue
		}
		plotted++
		lo, hi := mean*(1-floor), mean*(1+floor)
		ymin, ymax = math.Min(ymin, lo), math.Max(ymax, hi)
		edge := lineStyle(tint(col, 0.45), 0.6)
		bands = append(bands, &band{x0: xys[0].x, x1: xys[len(xys)-1].x, lo: lo, hi: hi, fill: tint(col, 0.86), edge: &edge})
		ml := lineStyle(tint(col, 0.3), 0.8, 2, 2)
		bands = append(bands, &refLine{value: mean, style: ml})
		plotters = append(plotters, &seriesPlotter{pts: xys, line: &ls, glyph: &gs, errCol: col})
	}
	p.Add(grid())
	p.Add(bands...)
	p.Add(plotters...)
	if len(labels.items) > 0 {
		p.Add(&labels)
	}
	noData(p, h, plotted, len(c.Series), "run")
	h.caption("%s", repeatCaption(floor, anyCond, anyErrBar, &tally))

	repeatAxes(p, xmin, xmax, ymin, ymax, useTime)
	h.attach(p)
	return p, nil
}

// repeatX is the runs' x axis: their times when every run has one, else their numbers.
func repeatX(c RepeatChart) (useTime bool, xOf func(RepeatPoint, int) float64) {
	useTime = true
	total := 0
	for _, s := range c.Series {
		for _, q := range s.Points {
			total++
			if q.At.IsZero() {
				useTime = false
			}
		}
	}
	if total == 0 {
		useTime = false
	}
	xOf = func(q RepeatPoint, k int) float64 {
		if useTime {
			return float64(q.At.UnixNano()) / 1e9
		}
		return float64(k + 1)
	}
	return useTime, xOf
}

// repeatCaption explains the chart's bands, and its hollow marks and error bars when it has any.
func repeatCaption(floor float64, anyCond, anyErrBar bool, tally *intervalTally) string {
	cap := fmt.Sprintf("band: series mean ± %.1f%% noise floor; dotted: mean", floor*100)
	if anyCond {
		cap += "; hollow: run under a declared condition"
	}
	if anyErrBar {
		cap += "; " + tally.caption()
	}
	return cap
}

// repeatLegend is a series' legend (its mean and CV over n runs, or its one run) and its mean.
func repeatLegend(label string, n int, sum, sumSq float64) (string, float64) {
	legend := label
	var mean, cv float64
	if n > 0 {
		mean = sum / float64(n)
		if n > 1 && mean > 0 {
			variance := math.Max(0, (sumSq-float64(n)*mean*mean)/float64(n-1))
			cv = math.Sqrt(variance) / mean
			legend += fmt.Sprintf(" — mean %s, CV %.2f%% (n = %d)", fmtNum(mean), cv*100, n)
		} else {
			legend += fmt.Sprintf(" — %s (one run)", fmtNum(mean))
		}
	}
	return legend, mean
}

// repeatPoints are a series' runs with their intervals (counted in tally), hollow when run
// under a declared condition (cond: any), and what their mean and CV need; bad and zero count
// the runs not drawn (NaN, Inf or negative) and those at 0.
func repeatPoints(pts []RepeatPoint, xOf func(RepeatPoint, int) float64, kind IntervalKind, tally *intervalTally) (xys []xy, bad, zero int, sum, sumSq float64, errBar, cond bool) {
	for k, q := range pts {
		if !finite(q.Value) || q.Value < 0 {
			bad++
			continue
		}
		if q.Value == 0 {
			zero++
		}
		half := 0.0
		if q.SD != 0 || q.N != 0 {
			half = tally.add(kind, q.SD, q.N)
		}
		errBar = errBar || half > 0
		x := xOf(q, k)
		open := strings.TrimSpace(q.Condition) != ""
		cond = cond || open
		xys = append(xys, xy{x: x, y: q.Value, lo: q.Value - half, hi: q.Value + half, hasErr: half > 0, open: open})
		sum += q.Value
		sumSq += q.Value * q.Value
	}
	return xys, bad, zero, sum, sumSq, errBar, cond
}

// conditionLabels name the condition of each hollow run (a run under a declared condition).
func conditionLabels(xys []xy, pts []RepeatPoint, xOf func(RepeatPoint, int) float64, col color.Color) []pointLabel {
	var out []pointLabel
	for _, q := range xys {
		if q.open {
			for k, rp := range pts {
				if xOf(rp, k) == q.x && rp.Value == q.y {
					out = append(out, pointLabel{x: q.x, y: q.hi, text: rp.Condition, col: col})
					break
				}
			}
		}
	}
	return out
}

// repeatAxes fits the axes around the runs drawn: time or run number, an hour around one
// timed run, the rate axis padded and never below 0.
func repeatAxes(p *plot.Plot, xmin, xmax, ymin, ymax float64, useTime bool) {
	if !finite(xmin) {
		xmin, xmax = 0, 1
	}
	if xmin == xmax {
		xmin, xmax = xmin-1, xmax+1
		if useTime {
			xmin, xmax = xmin-1799, xmax+1799 // one run: an hour around it
		}
	}
	pad := 0.04 * (xmax - xmin)
	p.X.Min, p.X.Max = xmin-pad, xmax+pad
	if useTime {
		p.X.Tick.Marker = timeTicks{}
	} else {
		p.X.Tick.Marker = runTicks{}
	}
	if !finite(ymin) {
		ymin, ymax = 0, 1
	}
	if ymax-ymin < 1e-9 {
		ymin, ymax = ymin-1, ymax+1
	}
	ypad := 0.12 * (ymax - ymin)
	p.Y.Min, p.Y.Max = math.Max(0, ymin-ypad), ymax+ypad
}

// timeTicks labels a UTC time axis with a format fitted to the span.
type timeTicks struct{}

func (timeTicks) Ticks(min, max float64) []plot.Tick {
	span := max - min
	steps := []float64{60, 300, 600, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	layout := "15:04"
	if span > 86400 || time.Unix(int64(min), 0).UTC().YearDay() != time.Unix(int64(max), 0).UTC().YearDay() {
		layout = "Jan 2 15:04"
	}
	if step >= 86400 {
		layout = "Jan 2"
	}
	var out []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max; v += step {
		out = append(out, plot.Tick{Value: v, Label: time.Unix(int64(v), 0).UTC().Format(layout)})
	}
	return out
}

// runTicks labels whole run numbers.
type runTicks struct{}

func (runTicks) Ticks(min, max float64) []plot.Tick {
	step := 1.0
	for k := 0; (max-min)/step > 10; k++ {
		step = []float64{1, 2, 5}[(k+1)%3] * math.Pow(10, float64((k+1)/3))
	}
	var out []plot.Tick
	for v := math.Max(1, math.Ceil(min/step)*step); v <= max; v += step {
		out = append(out, plot.Tick{Value: v, Label: formatInt(v)})
	}
	return out
}
