package plots

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
)

// KindEnergy is energy per token against KV depth (docs/telemetry.md): what each token cost
// as the cache fills.
const KindEnergy Kind = "energy"

// EnergyChart is the input of the energy-per-token chart: one series per model (and
// configuration), one point per depth, for one metric (tg: Joules per generated token, pp:
// per prompt token, pg: per token of both); the two differ by orders of magnitude, so a chart
// holds one.
type EnergyChart struct {
	Meta   Meta           `json:"meta"`
	Metric string         `json:"metric"`
	Series []EnergySeries `json:"series"`
}

// EnergySeries is one model's (and configuration's) energy per token by depth.
type EnergySeries struct {
	Label  string        `json:"label"`
	Points []EnergyPoint `json:"points"`
}

// EnergyPoint is one cell: its depth, Joules per token and the mean power of its window.
type EnergyPoint struct {
	Depth     int     `json:"depth"`
	JPerToken float64 `json:"j_per_token"`
	MeanW     float64 `json:"mean_w,omitempty"`
}

func (c EnergyChart) Kind() Kind                { return KindEnergy }
func (c EnergyChart) Plot() (*plot.Plot, error) { return Energy(c) }
func (c EnergyChart) LimitPoints(int) Chart     { return c }

// energyUnit is what one token of metric is called on the axis and in the title.
func energyUnit(metric string) string {
	switch m := strings.TrimSpace(metric); {
	case strings.HasPrefix(m, "tg"):
		return "generated token"
	case strings.HasPrefix(m, "pp") && !strings.Contains(m, "+"):
		return "prompt token"
	}
	return "token"
}

// Energy draws Joules per token against KV depth: one line per series, the y axis from 0.
// Values that are not positive and finite are not drawn and are noted.
func Energy(c EnergyChart) (*plot.Plot, error) {
	unit := energyUnit(c.Metric)
	title := "Energy per " + unit + " vs KV depth"
	if m := strings.TrimSpace(c.Metric); m != "" {
		title = m + ": " + strings.ToLower(title[:1]) + title[1:]
	}
	p := newPlot(title)
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	p.X.Label.Text = "KV depth (tokens already in the cache)"
	p.Y.Label.Text = "J per " + unit
	p.Add(grid())
	if len(c.Series) == 0 {
		h.note("no series given")
	}
	ymax, dmax, plotted := 0.0, 0, 0
	var depths []float64
	for i, s := range c.Series {
		label := seriesLabel(s.Label, i)
		col, shp := seriesStyle(i)
		pts := slices.Clone(s.Points)
		slices.SortStableFunc(pts, func(a, b EnergyPoint) int { return cmp.Compare(a.Depth, b.Depth) })
		var xys []xy
		var bad []int
		for _, q := range pts {
			if q.Depth < 0 || !finite(q.JPerToken) || q.JPerToken <= 0 {
				bad = append(bad, q.Depth)
				continue
			}
			xys = append(xys, xy{x: float64(q.Depth), y: q.JPerToken})
			ymax, dmax = math.Max(ymax, q.JPerToken), max(dmax, q.Depth)
			depths = append(depths, float64(q.Depth))
		}
		if len(bad) > 0 {
			h.note("%s: no positive J per token at %s; not drawn", label, listInts(bad, depthLabel))
		}
		ls, gs := lineStyle(col, 1.6), glyphStyle(col, shp, false)
		legend := label
		switch len(xys) {
		case 0:
			h.note("%s: no measured point", label)
			legend += " (no data)"
		case 1:
			h.note("%s: one depth only, no curve", label)
		}
		h.add(legend, thumb{line: &ls, glyph: &gs})
		if len(xys) > 0 {
			plotted++
			p.Add(&seriesPlotter{pts: xys, line: &ls, glyph: &gs})
		}
	}
	noData(p, h, plotted, len(c.Series), "point")
	h.caption("J per token: the row's mean power × llama-bench's own test time / tokens; gross (no idle power subtracted)")
	if dmax == 0 {
		dmax = 1024
	}
	pad := 0.03 * float64(dmax)
	p.X.Min, p.X.Max = -pad, float64(dmax)+pad
	if len(depths) == 0 {
		depths = []float64{0, float64(dmax)}
	}
	slices.Sort(depths)
	p.X.Tick.Marker = valueTicks{values: thinValues(slices.Compact(depths), 0, float64(dmax), 0.045), label: func(v float64) string { return fmtTokens(v) }}
	if ymax <= 0 {
		ymax = 1
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	h.attach(p)
	return p, nil
}
