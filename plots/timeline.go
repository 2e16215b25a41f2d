package plots

import (
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// KindTimeline is one telemetry metric (power, clock or temperature) against time while a
// study runs: the window's timeline under the live throughput chart (docs/telemetry.md).
const KindTimeline Kind = "telemetry"

// maxLegLabels is how many leg starts are labelled; beyond it the lines stand alone.
const maxLegLabels = 6

// TimelineChart is the input of the telemetry timeline: one series per device (GPU0,
// package-0, k10temp/Tctl …) of one metric, each point a reading at seconds since the run's
// first reading; Legs marks where each leg started.
type TimelineChart struct {
	Meta Meta `json:"meta"`
	// Metric says what is drawn ("power", "SM clock", "temperature"), Unit its unit ("W",
	// "MHz", "°C").
	Metric    string           `json:"metric"`
	Unit      string           `json:"unit"`
	Series    []TimelineSeries `json:"series"`
	Legs      []TimelineMark   `json:"legs,omitempty"`
	MaxPoints int              `json:"max_points,omitempty"`
}

// TimelineSeries is one device's readings in time order.
type TimelineSeries struct {
	Label  string      `json:"label"`
	Points []TimePoint `json:"points"`
}

// TimePoint is one reading: seconds since the first reading, and the value in the chart's unit.
type TimePoint struct {
	T     float64 `json:"t_s"`
	Value float64 `json:"value"`
}

// TimelineMark is a leg's start on the time axis.
type TimelineMark struct {
	T     float64 `json:"t_s"`
	Label string  `json:"label"`
}

func (c TimelineChart) Kind() Kind                { return KindTimeline }
func (c TimelineChart) Plot() (*plot.Plot, error) { return Timeline(c) }
func (c TimelineChart) LimitPoints(n int) Chart   { c.MaxPoints = n; return c }

// Timeline draws each device's readings of one metric against time, from 0 on both axes,
// each leg's start a dotted vertical line; readings that are not finite are left out and noted.
func Timeline(c TimelineChart) (*plot.Plot, error) {
	metric := strings.TrimSpace(c.Metric)
	if metric == "" {
		metric = "reading"
	}
	unit := strings.TrimSpace(c.Unit)
	p := newPlot("Telemetry: " + metric + " over time")
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "time since the first reading (s)"
	p.Y.Label.Text = metric
	if unit != "" {
		p.Y.Label.Text += " (" + unit + ")"
	}
	p.Add(grid())
	if len(c.Series) == 0 {
		h.note("no %s readings", metric)
	}
	ymax, tmax, plotted := 0.0, 0.0, 0
	for i, s := range c.Series {
		label := seriesLabel(s.Label, i)
		col, _ := seriesStyle(i)
		pts := slices.Clone(s.Points)
		slices.SortStableFunc(pts, func(a, b TimePoint) int {
			switch {
			case a.T < b.T:
				return -1
			case a.T > b.T:
				return 1
			}
			return 0
		})
		var xys []xy
		dropped := 0
		for _, q := range pts {
			if !finite(q.T) || !finite(q.Value) || q.T < 0 {
				dropped++
				continue
			}
			xys = append(xys, xy{x: q.T, y: q.Value})
			ymax, tmax = math.Max(ymax, q.Value), math.Max(tmax, q.T)
		}
		if dropped > 0 {
			h.note("%s: %d reading(s) not finite; not drawn", label, dropped)
		}
		if n := len(xys); c.MaxPoints > 0 && n > c.MaxPoints {
			xys = downsample(xys, c.MaxPoints)
			h.caption("%s: %d of %d readings drawn (LTTB downsampling)", label, len(xys), n)
		}
		ls := lineStyle(col, 1.4)
		legend := label
		if len(xys) == 0 {
			legend += " (no data)"
		}
		h.add(legend, thumb{line: &ls})
		if len(xys) > 0 {
			plotted++
			var gs *draw.GlyphStyle
			if len(xys) == 1 { // a single reading has no line: mark it
				g := glyphStyle(col, markerShapes[0], false)
				gs = &g
			}
			p.Add(&seriesPlotter{pts: xys, line: &ls, glyph: gs})
		}
	}
	noData(p, h, plotted, len(c.Series), "reading")
	for _, m := range c.Legs { // the axis covers every leg's start, readings or not
		if finite(m.T) {
			tmax = math.Max(tmax, m.T)
		}
	}
	if tmax <= 0 {
		tmax = 1
	}
	if len(c.Legs) > maxLegLabels {
		h.caption("dotted lines: the %d legs' starts", len(c.Legs))
	}
	for _, m := range c.Legs {
		label := m.Label
		if len(c.Legs) > maxLegLabels { // too many to read: the lines alone
			label = ""
		}
		if finite(m.T) && m.T >= 0 && m.T <= tmax {
			p.Add(&refLine{value: m.T, vertical: true, style: lineStyle(colRef, 0.8, 1, 3), label: label, labelCol: colRef})
		}
	}
	p.X.Min, p.X.Max = 0, tmax*1.02
	if ymax <= 0 {
		ymax = 1
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.1
	h.attach(p)
	return p, nil
}
