package plots

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot"
)

// SlotsChart is the input of the slots chart: generation throughput against llama-server
// slots (--parallel), aggregate and per stream, one series per candidate or arm.
type SlotsChart struct {
	Meta   Meta          `json:"meta"`
	Series []SlotsSeries `json:"series"`
	// Show is "both" (default), "aggregate" or "per_stream".
	Show string `json:"show,omitempty"`
	// RefLine draws a horizontal line at this rate (e.g. the 70 t/s instant-tier line that
	// the per-stream rate must hold); 0 draws none.
	RefLine float64 `json:"ref_line,omitempty"`
	// Knee marks, per series, the first slot count P whose doubling gains less than this
	// fraction of aggregate rate (docs/domain.md, "Knee": 0.20); 0 marks none.
	Knee      float64 `json:"knee,omitempty"`
	MaxPoints int     `json:"max_points,omitempty"`
}

// SlotsSeries is one candidate (model + server flags) or arm (e.g. KV cache type).
type SlotsSeries struct {
	Label  string       `json:"label"`
	Points []SlotsPoint `json:"points"`
}

// SlotsPoint is one slot count: aggregate rate (generated tokens / wall) and per-stream
// rate (mean of per-request generation rates), both in tokens/s.
type SlotsPoint struct {
	Slots     int     `json:"slots"`
	Aggregate float64 `json:"aggregate"`
	PerStream float64 `json:"per_stream"`
}

func (c SlotsChart) Kind() Kind                { return KindSlots }
func (c SlotsChart) Plot() (*plot.Plot, error) { return Slots(c) }
func (c SlotsChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// Slots draws aggregate (solid) and per-stream (dashed) throughput against server slots on
// a log2 axis.
func Slots(c SlotsChart) (*plot.Plot, error) {
	showAgg, showPer := true, true
	switch c.Show {
	case "", "both":
	case "aggregate":
		showPer = false
	case "per_stream":
		showAgg = false
	default:
		return nil, fmt.Errorf("unknown show %q: use both, aggregate or per_stream", c.Show)
	}
	if c.RefLine < 0 || !finite(c.RefLine) || c.Knee < 0 || !finite(c.Knee) {
		return nil, fmt.Errorf("reference line %v and knee %v must be positive, or 0 for none", c.RefLine, c.Knee)
	}
	p := newPlot("Generation throughput vs server slots")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "server slots P (--parallel, log2 scale)"
	p.Y.Label.Text = "generation rate (tokens/s)"
	p.Add(grid())

	var (
		slotVals = map[int]bool{}
		ymax     float64
		plotted  int
		calls    callouts
		plotters []plot.Plotter
	)
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	for i, s := range c.Series {
		label := seriesLabel(s.Label, i)
		col, shp := seriesStyle(i)
		agg, per := slotsPoints(s.Points, showAgg, showPer, label, h, slotVals, &ymax)
		for _, set := range [][]xy{agg, per} {
			for _, q := range set {
				if q.y == 0 {
					h.note("%s: 0 t/s at P%s; check the server lifetime", label, formatInt(math.Exp2(q.x)))
					break
				}
			}
		}
		if n := max(len(agg), len(per)); c.MaxPoints > 0 && n > c.MaxPoints {
			agg, per = downsample(agg, c.MaxPoints), downsample(per, c.MaxPoints)
			h.caption("%s: downsampled to %d points (LTTB)", label, c.MaxPoints)
		}

		legend := label
		if c.Knee > 0 && len(agg) >= 2 {
			if kp, gain, ok := knee(agg, c.Knee); ok {
				kP := formatInt(math.Round(math.Exp2(kp.x)))
				legend += " — knee at P" + kP
				calls.items = append(calls.items, callout{x: kp.x, y: kp.y, col: col, label: fmt.Sprintf("knee P%s: %+.0f%% next doubling", kP, gain*100)})
			} else {
				legend += " — no knee"
			}
		}
		ls := lineStyle(col, 1.6)
		gs := glyphStyle(col, shp, false)
		if len(agg)+len(per) == 0 {
			h.note("%s: no measured point", label)
			legend += " (no data)"
		} else if max(len(agg), len(per)) == 1 {
			h.note("%s: one slot count only, no curve", label)
		}
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if len(agg)+len(per) == 0 {
			continue
		}
		plotted++
		plotters = append(plotters, pairPlotters(agg, per, col, shp, &ls, &gs)...)
	}
	if showAgg && showPer && len(c.Series) > 0 {
		pairKey(h, "aggregate (all streams)", "per stream")
	}
	if c.RefLine > 0 {
		p.Add(&refLine{value: c.RefLine, style: lineStyle(colRef, 1, dashRef...), label: fmtRef(c.RefLine) + " t/s", labelCol: colRef})
		ymax = math.Max(ymax, c.RefLine)
	}
	p.Add(plotters...)
	addCallouts(p, h, &calls, "knees")
	noData(p, h, plotted, len(c.Series), "point")

	vals, xmin, xmax := log2Range(slotVals, []float64{1, 2}, 0.04)
	p.X.Min, p.X.Max = xmin, xmax
	p.X.Tick.Marker = log2Ticks(vals)
	if ymax <= 0 {
		ymax = 1
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	h.attach(p)
	return p, nil
}

// slotsPoints are one series' aggregate and per-stream points on the log2 slots axis (each
// kept only when shown and valid), in slot order; what is dropped is noted on h, the slot
// counts plotted are added to slotVals and ymax grows to the largest rate.
func slotsPoints(points []SlotsPoint, showAgg, showPer bool, label string, h *header, slotVals map[int]bool, ymax *float64) (agg, per []xy) {
	pts := append([]SlotsPoint(nil), points...)
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].Slots < pts[b].Slots })
	var badSlots, badAgg, badPer []int
	for _, q := range pts {
		if q.Slots <= 0 {
			badSlots = append(badSlots, q.Slots)
			continue
		}
		x := math.Log2(float64(q.Slots))
		if showAgg {
			if finite(q.Aggregate) && q.Aggregate >= 0 {
				agg = append(agg, xy{x: x, y: q.Aggregate})
				*ymax = math.Max(*ymax, q.Aggregate)
				slotVals[q.Slots] = true
			} else {
				badAgg = append(badAgg, q.Slots)
			}
		}
		if showPer {
			if finite(q.PerStream) && q.PerStream >= 0 {
				per = append(per, xy{x: x, y: q.PerStream})
				*ymax = math.Max(*ymax, q.PerStream)
				slotVals[q.Slots] = true
			} else {
				badPer = append(badPer, q.Slots)
			}
		}
	}
	pLabel := func(v int) string { return fmt.Sprintf("P%d", v) }
	if len(badSlots) > 0 {
		h.note("%s: slot count %s is not positive; dropped", label, listInts(badSlots, func(v int) string { return fmt.Sprint(v) }))
	}
	if len(badAgg) > 0 {
		h.note("%s: no valid aggregate rate at %s (NaN, Inf or negative)", label, listInts(badAgg, pLabel))
	}
	if len(badPer) > 0 {
		h.note("%s: no valid per-stream rate at %s (NaN, Inf or negative)", label, listInts(badPer, pLabel))
	}
	return agg, per
}

// knee returns the first point whose next doubling gains less than threshold (gain per
// doubling, normalised when consecutive slot counts are not exactly 2× apart). x is log2 P.
func knee(agg []xy, threshold float64) (xy, float64, bool) {
	for i := 0; i+1 < len(agg); i++ {
		a, b := agg[i], agg[i+1]
		if a.y <= 0 || b.x <= a.x {
			continue
		}
		gain := math.Pow(b.y/a.y, 1/(b.x-a.x)) - 1
		if gain < threshold {
			return a, gain, true
		}
	}
	return xy{}, 0, false
}
