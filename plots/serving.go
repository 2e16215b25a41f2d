package plots

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
)

// Open-loop serving chart kinds (docs/serving.md). They are drawn for a capacity receipt
// whose plan has a serving block, and by the CLI's plot --kind from such a study or from data.
const (
	KindServingLatency Kind = "serving_latency"
	KindServingGoodput Kind = "serving_goodput"
	KindServingSearch  Kind = "serving_search"
)

// ServingSeries is one candidate's open-loop probes (sweep and search, any order) with its
// knee: the largest offered rate meeting every SLO (0: none).
type ServingSeries struct {
	Label  string         `json:"label"`
	Knee   float64        `json:"knee,omitempty"`
	Points []ServingPoint `json:"points"`
}

// ServingPoint is one probe: its offered rate, the SLO percentile of TTFT and TPOT (ms),
// throughput and goodput (per second of its window) and whether it met every SLO. A value of
// 0 or less is not drawn.
type ServingPoint struct {
	Rate       float64 `json:"rate"`
	TTFTMs     float64 `json:"ttft_ms,omitempty"`
	TPOTMs     float64 `json:"tpot_ms,omitempty"`
	Throughput float64 `json:"throughput,omitempty"`
	Goodput    float64 `json:"goodput,omitempty"`
	Pass       bool    `json:"pass"`
}

// ServingLatencyChart is TTFT (solid) and TPOT (dashed) at the SLO's percentile against
// offered rate, with the SLO lines and each series' knee.
type ServingLatencyChart struct {
	Meta       Meta            `json:"meta"`
	Unit       string          `json:"unit,omitempty"` // rate unit, default "req/s"
	Percentile int             `json:"percentile,omitempty"`
	TTFTSLOMs  float64         `json:"ttft_slo_ms,omitempty"`
	TPOTSLOMs  float64         `json:"tpot_slo_ms,omitempty"`
	Series     []ServingSeries `json:"series"`
	MaxPoints  int             `json:"max_points,omitempty"`
}

// ServingGoodputChart is throughput (solid) and goodput (dashed) against offered rate.
type ServingGoodputChart struct {
	Meta Meta   `json:"meta"`
	Unit string `json:"unit,omitempty"` // offered rate unit, default "req/s"
	// YUnit is throughput's and goodput's unit (default Unit): a multi-turn workload offers
	// conversations/s and completes turns/s.
	YUnit     string          `json:"y_unit,omitempty"`
	Series    []ServingSeries `json:"series"`
	MaxPoints int             `json:"max_points,omitempty"`
}

// ServingSearchChart is the max-rate search's trace: the rate of each search probe in the
// order probed, filled when it met every SLO, hollow when it failed.
type ServingSearchChart struct {
	Meta   Meta           `json:"meta"`
	Unit   string         `json:"unit,omitempty"`
	Series []SearchSeries `json:"series"`
}

// SearchSeries is one candidate's search: its probes in order and the rate found (0: none).
type SearchSeries struct {
	Label     string        `json:"label"`
	MaxRate   float64       `json:"max_rate,omitempty"`
	Converged bool          `json:"converged"`
	Probes    []SearchProbe `json:"probes"`
}

// SearchProbe is one probe of the search: its number (the order probed) and offered rate.
type SearchProbe struct {
	Probe int     `json:"probe"`
	Rate  float64 `json:"rate"`
	Pass  bool    `json:"pass"`
}

func (c ServingLatencyChart) Kind() Kind                { return KindServingLatency }
func (c ServingLatencyChart) Plot() (*plot.Plot, error) { return ServingLatency(c) }
func (c ServingLatencyChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }
func (c ServingGoodputChart) Kind() Kind                { return KindServingGoodput }
func (c ServingGoodputChart) Plot() (*plot.Plot, error) { return ServingGoodput(c) }
func (c ServingGoodputChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }
func (c ServingSearchChart) Kind() Kind                 { return KindServingSearch }
func (c ServingSearchChart) Plot() (*plot.Plot, error)  { return ServingSearch(c) }
func (c ServingSearchChart) LimitPoints(int) Chart      { return c }

func rateUnit(u string) string {
	if u = strings.TrimSpace(u); u != "" {
		return u
	}
	return "req/s"
}

// servingXY are the points of one measure (get) against offered rate, in rate order, each
// open (hollow) when its probe failed; dropped values are counted in bad.
func servingXY(points []ServingPoint, get func(ServingPoint) float64, tr func(float64) float64, bad *int) []xy {
	pts := append([]ServingPoint(nil), points...)
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].Rate < pts[b].Rate })
	var out []xy
	for _, q := range pts {
		v := get(q)
		if !finite(q.Rate) || q.Rate <= 0 || !finite(v) || v <= 0 {
			*bad++
			continue
		}
		out = append(out, xy{x: q.Rate, y: tr(v), open: !q.Pass, mark: true})
	}
	return out
}

// servingPairs draws each series' two measures (solid a, dashed b) against offered rate and
// its knee as a vertical line, y transformed by tr; it returns the (transformed) y range, the
// largest rate and the number of series drawn.
func servingPairs(p *plot.Plot, h *header, series []ServingSeries, unit string, a, b func(ServingPoint) float64, tr func(float64) float64, maxPoints int) (ymin, ymax, xmax float64, plotted int) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	var plotters []plot.Plotter
	for i, s := range series {
		label := seriesLabel(s.Label, i)
		col, shp := seriesStyle(i)
		bad := 0
		sa, sb := servingXY(s.Points, a, tr, &bad), servingXY(s.Points, b, tr, &bad)
		if bad > 0 {
			h.note("%s: %d value(s) not drawn (zero, negative, NaN or Inf)", label, bad)
		}
		if n := max(len(sa), len(sb)); maxPoints > 0 && n > maxPoints {
			sa, sb = downsample(sa, maxPoints), downsample(sb, maxPoints)
			h.caption("%s: downsampled to %d points (LTTB)", label, maxPoints)
		}
		for _, set := range [][]xy{sa, sb} {
			for _, q := range set {
				ymin, ymax, xmax = math.Min(ymin, q.y), math.Max(ymax, q.y), math.Max(xmax, q.x)
			}
		}
		legend := label
		if s.Knee > 0 && finite(s.Knee) {
			legend += fmt.Sprintf(" — knee %s %s", fmtAxis(s.Knee), unit)
			kl := lineStyle(col, 1, dashLimit2...)
			p.Add(&refLine{value: s.Knee, vertical: true, style: kl, label: "knee " + fmtAxis(s.Knee), labelCol: col})
			xmax = math.Max(xmax, s.Knee)
		} else {
			legend += " — no rate meets every SLO"
		}
		ls := lineStyle(col, 1.6)
		gs := glyphStyle(col, shp, false)
		if len(sa)+len(sb) == 0 {
			h.note("%s: no measured probe", label)
			legend += " (no data)"
		}
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if len(sa)+len(sb) == 0 {
			continue
		}
		plotted++
		dl := lineStyle(col, 1.4, dashSecondary...)
		// Both measures keep filled markers: hollow means a failed probe here.
		for _, sp := range []*seriesPlotter{{pts: sa, line: &ls, glyph: &gs}, {pts: sb, line: &dl, glyph: &gs}} {
			if len(sp.pts) > 0 {
				plotters = append(plotters, sp)
			}
		}
	}
	p.Add(plotters...)
	return ymin, ymax, xmax, plotted
}

// servingKey is the key of a serving chart: the solid and dashed measure, and the hollow
// marker of a probe that failed.
func servingKey(h *header, solid, dashed string) {
	al := lineStyle(colMuted, 1.6)
	g := glyphStyle(colMuted, shapeCircle, false)
	dl := lineStyle(colMuted, 1.4, dashSecondary...)
	og := glyphStyle(colMuted, shapeCircle, true)
	h.addKey(solid, thumb{line: &al, glyph: &g})
	h.addKey(dashed, thumb{line: &dl, glyph: &g})
	h.addKey("probe failed an SLO gate", thumb{glyph: &og})
}

// ServingLatency draws TTFT (solid) and TPOT (dashed) at the SLO's percentile against offered
// rate, log y, hollow markers for failing probes, the SLO limits and each series' knee.
func ServingLatency(c ServingLatencyChart) (*plot.Plot, error) {
	if c.TTFTSLOMs < 0 || c.TPOTSLOMs < 0 || !finite(c.TTFTSLOMs) || !finite(c.TPOTSLOMs) {
		return nil, fmt.Errorf("SLO limits %v / %v ms must be positive, or 0 for none", c.TTFTSLOMs, c.TPOTSLOMs)
	}
	pct := c.Percentile
	if pct == 0 {
		pct = 95
	}
	if pct != 95 && pct != 99 {
		return nil, fmt.Errorf("percentile %d: use 95 or 99", c.Percentile)
	}
	unit := rateUnit(c.Unit)
	p := newPlot(fmt.Sprintf("p%d TTFT and TPOT vs offered rate (open loop)", pct))
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "offered rate (" + unit + ")"
	p.Y.Label.Text = fmt.Sprintf("p%d latency (ms, log)", pct)
	p.Add(grid())
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	ymin, ymax, _, plotted := servingPairs(p, h, c.Series, unit,
		func(q ServingPoint) float64 { return q.TTFTMs }, func(q ServingPoint) float64 { return q.TPOTMs }, math.Log10, c.MaxPoints)
	ymin, ymax = math.Pow(10, ymin), math.Pow(10, ymax)
	if len(c.Series) > 0 {
		servingKey(h, fmt.Sprintf("TTFT p%d", pct), fmt.Sprintf("TPOT p%d", pct))
	}
	for _, l := range []struct {
		v      float64
		name   string
		dashes []float64
	}{{c.TTFTSLOMs, "TTFT", dashLimit}, {c.TPOTSLOMs, "TPOT", dashLimit}} {
		if l.v <= 0 {
			h.note("no %s SLO given: not drawn", l.name)
			continue
		}
		ls := lineStyle(colRef, 1.2, l.dashes...)
		p.Add(&refLine{value: math.Log10(l.v), style: ls, label: fmt.Sprintf("%s SLO %s ms", l.name, fmtAxis(l.v)), labelCol: colRef, labelLeft: true})
		ymin, ymax = math.Min(ymin, l.v), math.Max(ymax, l.v)
	}
	noData(p, h, plotted, len(c.Series), "probe")
	h.caption("knee: the largest offered rate meeting every SLO (the search's, else the sweep's)")
	p.X.Min = 0
	if !(ymin > 0) || !finite(ymax) {
		ymin, ymax = 10, 1000
	}
	if ymax/ymin < 10 {
		mid := math.Sqrt(ymin * ymax)
		ymin, ymax = mid/math.Sqrt(10), mid*math.Sqrt(10)
	}
	p.Y.Min, p.Y.Max = math.Log10(ymin/1.15), math.Log10(ymax*1.15)
	p.Y.Tick.Marker = log10Ticks125{}
	h.attach(p)
	return p, nil
}

// ServingGoodput draws throughput (solid) and goodput (dashed) against offered rate, y from 0,
// hollow markers for failing probes and each series' knee.
func ServingGoodput(c ServingGoodputChart) (*plot.Plot, error) {
	unit := rateUnit(c.Unit)
	p := newPlot("Throughput and goodput vs offered rate (open loop)")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "offered rate (" + unit + ")"
	yunit := unit
	if u := strings.TrimSpace(c.YUnit); u != "" {
		yunit = u
	}
	p.Y.Label.Text = "completed per second (" + yunit + ")"
	p.Add(grid())
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	_, ymax, _, plotted := servingPairs(p, h, c.Series, unit,
		func(q ServingPoint) float64 { return q.Throughput }, func(q ServingPoint) float64 { return q.Goodput }, func(v float64) float64 { return v }, c.MaxPoints)
	if len(c.Series) > 0 {
		servingKey(h, "throughput", "goodput (meeting the SLO)")
	}
	noData(p, h, plotted, len(c.Series), "probe")
	h.caption("knee: the largest offered rate meeting every SLO (the search's, else the sweep's)")
	if !(ymax > 0) || !finite(ymax) {
		ymax = 1
	}
	p.X.Min = 0
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	h.attach(p)
	return p, nil
}

// ServingSearch draws each series' search probes in order (probe 1, 2, … of the search),
// filled when the probe met every SLO and hollow when it failed, with the rate found.
func ServingSearch(c ServingSearchChart) (*plot.Plot, error) {
	unit := rateUnit(c.Unit)
	p := newPlot("Max-rate search trace (open loop)")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "search probe (in the order probed)"
	p.Y.Label.Text = "offered rate (" + unit + ")"
	p.Add(grid())
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	var (
		plotters []plot.Plotter
		plotted  int
		ymax     float64
		nmax     int
	)
	for i, s := range c.Series {
		label := seriesLabel(s.Label, i)
		col, shp := seriesStyle(i)
		probes := append([]SearchProbe(nil), s.Probes...)
		sort.SliceStable(probes, func(a, b int) bool { return probes[a].Probe < probes[b].Probe })
		var pts []xy
		bad := 0
		for _, q := range probes {
			if !finite(q.Rate) || q.Rate <= 0 {
				bad++
				continue
			}
			pts = append(pts, xy{x: float64(len(pts) + 1), y: q.Rate, open: !q.Pass, mark: true})
			ymax = math.Max(ymax, q.Rate)
		}
		if bad > 0 {
			h.note("%s: %d probe(s) without a valid rate", label, bad)
		}
		nmax = max(nmax, len(pts))
		legend := label
		switch {
		case s.MaxRate > 0 && finite(s.MaxRate):
			legend += fmt.Sprintf(" — max %s %s", fmtAxis(s.MaxRate), unit)
			if !s.Converged {
				legend += " (not converged)"
			}
		default:
			legend += " — no rate found"
		}
		ls := lineStyle(col, 1.4)
		gs := glyphStyle(col, shp, false)
		if len(pts) == 0 {
			h.note("%s: no search probe", label)
			legend += " (no data)"
		}
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if len(pts) == 0 {
			continue
		}
		plotted++
		plotters = append(plotters, &seriesPlotter{pts: pts, line: &ls, glyph: &gs})
	}
	pg := glyphStyle(colMuted, shapeCircle, false)
	fg := glyphStyle(colMuted, shapeCircle, true)
	if len(c.Series) > 0 {
		h.addKey("met every SLO", thumb{glyph: &pg})
		h.addKey("failed", thumb{glyph: &fg})
	}
	p.Add(plotters...)
	noData(p, h, plotted, len(c.Series), "probe")
	if nmax < 2 {
		nmax = 2
	}
	ticks := make([]float64, nmax)
	for i := range ticks {
		ticks[i] = float64(i + 1)
	}
	p.X.Min, p.X.Max = 0.7, float64(nmax)+0.3
	p.X.Tick.Marker = valueTicks{values: ticks, label: formatInt}
	if ymax <= 0 {
		ymax = 1
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	h.attach(p)
	return p, nil
}
