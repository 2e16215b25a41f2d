package plots

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
)

// LatencyChart is the input of the latency chart: observed p95 TTFT and E2E latency against
// client concurrency, one series per slot count, with the SLO limits.
type LatencyChart struct {
	Meta Meta `json:"meta"`
	// Candidate names the model + server flags the grid belongs to (in the title).
	Candidate string `json:"candidate,omitempty"`
	// Metric is "both" (default), "ttft" or "e2e".
	Metric string `json:"metric,omitempty"`
	// SLO limits in milliseconds; 0 draws none (and the chart says so).
	TTFTLimitMs float64         `json:"ttft_limit_ms,omitempty"`
	E2ELimitMs  float64         `json:"e2e_limit_ms,omitempty"`
	Series      []LatencySeries `json:"series"`
	MaxPoints   int             `json:"max_points,omitempty"`
}

// LatencySeries is one slot count (one server lifetime) swept over client levels.
type LatencySeries struct {
	Label  string         `json:"label,omitempty"` // default "P<slots>"
	Slots  int            `json:"slots"`
	Points []LatencyPoint `json:"points"`
}

// LatencyPoint is one client level: observed p95 of time to first token and of end-to-end
// latency, in milliseconds.
type LatencyPoint struct {
	Clients   int     `json:"clients"`
	TTFTP95Ms float64 `json:"ttft_p95_ms"`
	E2EP95Ms  float64 `json:"e2e_p95_ms"`
}

func (c LatencyChart) Kind() Kind                { return KindLatency }
func (c LatencyChart) Plot() (*plot.Plot, error) { return Latency(c) }
func (c LatencyChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// latencyLabel is series i's label: its own, else its slot count ("P4 (4 slots)").
func latencyLabel(s LatencySeries, i int) string {
	label := strings.TrimSpace(s.Label)
	if label == "" {
		if s.Slots > 0 {
			label = fmt.Sprintf("P%d (%d slots)", s.Slots, s.Slots)
			if s.Slots == 1 {
				label = "P1 (1 slot)"
			}
		} else {
			label = seriesLabel("", i)
		}
	}
	return label
}

// latencyPoints are one series' TTFT and E2E p95 points (log10 ms) on the log2 clients axis,
// each kept only when shown and positive, in client order; what is not drawn is noted on h,
// the client levels plotted are added to clientVals, ymin and ymax take in each value, and
// over counts the values above the TTFT and E2E limits.
func latencyPoints(points []LatencyPoint, c LatencyChart, showTTFT, showE2E bool, label string, h *header, clientVals map[int]bool, ymin, ymax *float64, over *[2]int) (ttft, e2e []xy) {
	pts := append([]LatencyPoint(nil), points...)
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].Clients < pts[b].Clients })
	var bad []string
	for _, q := range pts {
		if q.Clients <= 0 {
			bad = append(bad, fmt.Sprintf("clients %d", q.Clients))
			continue
		}
		x := math.Log2(float64(q.Clients))
		take := func(v, limit float64, name string, into *[]xy, k int) {
			if !finite(v) || v <= 0 {
				bad = append(bad, fmt.Sprintf("%s at C%d", name, q.Clients))
				return
			}
			*into = append(*into, xy{x: x, y: math.Log10(v)})
			*ymin, *ymax = math.Min(*ymin, v), math.Max(*ymax, v)
			clientVals[q.Clients] = true
			if limit > 0 && v > limit {
				over[k]++
			}
		}
		if showTTFT {
			take(q.TTFTP95Ms, c.TTFTLimitMs, "TTFT", &ttft, 0)
		}
		if showE2E {
			take(q.E2EP95Ms, c.E2ELimitMs, "E2E", &e2e, 1)
		}
	}
	if len(bad) > 0 {
		h.note("%s: not drawn (zero, negative, NaN or Inf): %s", label, strings.Join(bad, ", "))
	}
	return ttft, e2e
}

// Latency draws observed p95 TTFT (solid) and E2E (dashed) against clients on log-log axes,
// one colour and marker per slot count, with each SLO limit as a labelled line.
func Latency(c LatencyChart) (*plot.Plot, error) {
	showTTFT, showE2E := true, true
	switch c.Metric {
	case "", "both":
	case "ttft":
		showE2E = false
	case "e2e":
		showTTFT = false
	default:
		return nil, fmt.Errorf("unknown metric %q: use both, ttft or e2e", c.Metric)
	}
	if c.TTFTLimitMs < 0 || c.E2ELimitMs < 0 || !finite(c.TTFTLimitMs) || !finite(c.E2ELimitMs) {
		return nil, fmt.Errorf("SLO limits %v / %v ms must be positive, or 0 for none", c.TTFTLimitMs, c.E2ELimitMs)
	}
	what := "TTFT and E2E"
	switch {
	case !showE2E:
		what = "TTFT"
	case !showTTFT:
		what = "E2E"
	}
	title := "Observed p95 " + what + " latency vs clients"
	if s := strings.TrimSpace(c.Candidate); s != "" {
		title += " — " + s
	}
	p := newPlot(title)
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "concurrent clients C (log2 scale)"
	p.Y.Label.Text = "p95 latency (ms, log)"
	p.Add(grid())

	var (
		clientVals = map[int]bool{}
		ymin, ymax = math.Inf(1), math.Inf(-1)
		plotted    int
		plotters   []plot.Plotter
		over       [2]int // points above the TTFT, E2E limit
	)
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	series := append([]LatencySeries(nil), c.Series...)
	sort.SliceStable(series, func(i, j int) bool { return series[i].Slots < series[j].Slots })
	for i, s := range series {
		label := latencyLabel(s, i)
		col, shp := seriesStyle(i)
		ttft, e2e := latencyPoints(s.Points, c, showTTFT, showE2E, label, h, clientVals, &ymin, &ymax, &over)
		if n := max(len(ttft), len(e2e)); c.MaxPoints > 0 && n > c.MaxPoints {
			ttft, e2e = downsample(ttft, c.MaxPoints), downsample(e2e, c.MaxPoints)
			h.caption("%s: downsampled to %d points (LTTB)", label, c.MaxPoints)
		}
		ls := lineStyle(col, 1.6)
		gs := glyphStyle(col, shp, false)
		legend := label
		if len(ttft)+len(e2e) == 0 {
			h.note("%s: no measured point", label)
			legend += " (no data)"
		} else if max(len(ttft), len(e2e)) == 1 {
			h.note("%s: one client level only, no curve", label)
		}
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if len(ttft)+len(e2e) == 0 {
			continue
		}
		plotted++
		plotters = append(plotters, pairPlotters(ttft, e2e, col, shp, &ls, &gs)...)
	}
	if showTTFT && showE2E && len(c.Series) > 0 {
		pairKey(h, "TTFT p95", "E2E p95")
	}
	limit := func(show bool, v float64, name string, dashes []float64) {
		if !show {
			return
		}
		if v <= 0 {
			h.note("no %s limit given: SLO not drawn", name)
			return
		}
		ls := lineStyle(colRef, 1.2, dashes...)
		p.Add(&refLine{value: math.Log10(v), style: ls, label: fmt.Sprintf("%s limit %s ms", name, fmtAxis(v)), labelCol: colRef, labelLeft: true})
		h.addKey(fmt.Sprintf("%s SLO %s ms", name, fmtAxis(v)), thumb{line: &ls})
		ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
	}
	limit(showTTFT, c.TTFTLimitMs, "TTFT", dashLimit)
	limit(showE2E, c.E2ELimitMs, "E2E", dashLimit2)
	p.Add(plotters...)
	noData(p, h, plotted, len(c.Series), "point")
	var parts []string
	if showTTFT && c.TTFTLimitMs > 0 {
		parts = append(parts, fmt.Sprintf("%d TTFT", over[0]))
	}
	if showE2E && c.E2ELimitMs > 0 {
		parts = append(parts, fmt.Sprintf("%d E2E", over[1]))
	}
	if len(parts) > 0 {
		h.caption("observed p95 from few requests per level (coarse); above the limit: %s values", strings.Join(parts, ", "))
	}

	vals, xmin, xmax := log2Range(clientVals, []float64{1, 2}, 0.05)
	p.X.Min, p.X.Max = xmin, xmax
	p.X.Tick.Marker = log2Ticks(vals)
	if !(ymin > 0) || !finite(ymax) {
		ymin, ymax = 100, 1000
	}
	if ymax/ymin < 10 { // at least one decade so the 1-2-5 ticks have something to label
		mid := math.Sqrt(ymin * ymax)
		ymin, ymax = mid/math.Sqrt(10), mid*math.Sqrt(10)
	}
	p.Y.Min, p.Y.Max = math.Log10(ymin/1.15), math.Log10(ymax*1.15)
	p.Y.Tick.Marker = log10Ticks125{}
	h.attach(p)
	return p, nil
}
