package plots

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// KindPareto is a quantization ladder's speed against quality: one point per candidate.
const KindPareto Kind = "pareto"

// ParetoChart is the input of the ladder chart: each candidate's speed figure (Figure, e.g.
// tg@512) against its mean KL divergence from the reference, the marker's area scaled by the
// file's size, the frontier drawn through the candidates no other beats on both, the selected
// one ringed and the rejected ones drawn open.
type ParetoChart struct {
	Meta   Meta          `json:"meta"`
	Figure string        `json:"figure"`
	Points []ParetoPoint `json:"points"`
}

// ParetoPoint is one candidate.
type ParetoPoint struct {
	Label    string  `json:"label"`
	Speed    float64 `json:"speed"`    // t/s
	KLD      float64 `json:"kld_mean"` // mean KLD against the reference
	FileMiB  float64 `json:"file_mib"`
	Frontier bool    `json:"frontier,omitempty"`
	Selected bool    `json:"selected,omitempty"`
	Rejected bool    `json:"rejected,omitempty"`
}

func (c ParetoChart) Kind() Kind                { return KindPareto }
func (c ParetoChart) Plot() (*plot.Plot, error) { return Pareto(c) }
func (c ParetoChart) LimitPoints(int) Chart     { return c }

// Pareto draws the ladder: mean KLD on a log axis (lower is closer to the reference), speed
// up the page, the frontier as a line, every candidate labelled.
func Pareto(c ParetoChart) (*plot.Plot, error) {
	fig := strings.TrimSpace(c.Figure)
	if fig == "" {
		fig = "speed"
	}
	p, h := ladderChart(c.Meta, fmt.Sprintf("Quantization ladder: %s against mean KLD", fig),
		"mean KL divergence from the reference (log scale; lower is closer)", fig+" (t/s)")
	pts := drawable(h, c.Points, func(pt ParetoPoint) (string, float64, float64) { return pt.Label, pt.KLD, pt.Speed }, fig)
	if len(pts) == 0 {
		return nothingDrawn(p, h, "no candidate measured for both speed and KLD")
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	maxMiB := 0.0
	for _, pt := range pts {
		maxMiB = max(maxMiB, pt.FileMiB)
	}
	frontier := slices.DeleteFunc(slices.Clone(pts), func(pt ParetoPoint) bool { return !pt.Frontier })
	slices.SortFunc(frontier, func(a, b ParetoPoint) int { return cmp.Compare(a.KLD, b.KLD) })
	if len(frontier) > 1 {
		xy := make(plotter.XYs, len(frontier))
		for i, pt := range frontier {
			xy[i] = plotter.XY{X: pt.KLD, Y: pt.Speed}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.LineStyle = lineStyle(palette[0], 1.4, 4, 2)
		p.Add(l)
		h.add("Pareto frontier", thumb{line: &l.LineStyle})
	}
	for _, pt := range pts {
		xy := plotter.XYs{{X: pt.KLD, Y: pt.Speed}}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		r := vg.Points(4)
		if maxMiB > 0 && pt.FileMiB > 0 {
			r = vg.Points(3 + 6*math.Sqrt(pt.FileMiB/maxMiB)) // area follows the file size
		}
		col := palette[2]
		if pt.Rejected {
			col = palette[1]
		}
		s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: r, Shape: marker{shape: shapeCircle, open: pt.Rejected}}
		if pt.Selected { // the ring first: an open marker is filled white inside
			ring, _ := plotter.NewScatter(xy)
			ring.GlyphStyle = draw.GlyphStyle{Color: colInk, Radius: r + vg.Points(3), Shape: marker{shape: shapeCircle, open: true}}
			p.Add(ring)
		}
		p.Add(s)
	}
	labels, err := plotter.NewLabels(paretoLabels(pts))
	if err != nil {
		return nil, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i] = textStyle(fontRegular, sizeTick, colInk)
		labels.TextStyle[i].XAlign, labels.TextStyle[i].YAlign = draw.XLeft, draw.YBottom
	}
	labels.Offset = vg.Point{X: vg.Points(11), Y: vg.Points(5)}
	p.Add(labels)
	in := draw.GlyphStyle{Color: palette[2], Radius: vg.Points(4), Shape: marker{shape: shapeCircle}}
	out := draw.GlyphStyle{Color: palette[1], Radius: vg.Points(4), Shape: marker{shape: shapeCircle, open: true}}
	h.add("within the rule's limits", thumb{glyph: &in})
	if slices.ContainsFunc(pts, func(pt ParetoPoint) bool { return pt.Rejected }) {
		h.add("rejected by a limit", thumb{glyph: &out})
	}
	h.caption("marker area: file size; ringed: the candidate the pre-registered rule selected")
	pad := func(lo, hi float64) (float64, float64) { return lo / 1.6, hi * 1.6 }
	lo, hi := pts[0].KLD, pts[0].KLD
	ylo, yhi := pts[0].Speed, pts[0].Speed
	for _, pt := range pts {
		lo, hi, ylo, yhi = min(lo, pt.KLD), max(hi, pt.KLD), min(ylo, pt.Speed), max(yhi, pt.Speed)
	}
	p.X.Min, p.X.Max = pad(lo, hi)
	p.Y.Min, p.Y.Max = ylo*0.9, yhi*1.1
	h.attach(p)
	return p, nil
}

// ladderChart starts a quantization ladder chart: the plot with its title and axis labels, and
// its header with the meta's subtitle and notes.
func ladderChart(meta Meta, title, x, y string) (*plot.Plot, *header) {
	p := newPlot(title)
	h := &header{subtitle: meta.subtitle()}
	meta.notes(h)
	p.X.Label.Text, p.Y.Label.Text = x, y
	return p, h
}

// drawable keeps the candidates a ladder chart can place: a mean KLD above 0 (a log axis) and
// a positive, finite other figure (what names it); each one left out is noted in the header.
func drawable[T any](h *header, pts []T, get func(T) (label string, kld, other float64), what string) []T {
	var out []T
	for _, pt := range pts {
		label, kld, other := get(pt)
		switch {
		case kld <= 0 || !finite(kld):
			h.note("%s: mean KLD %g cannot be placed on a log axis; not drawn", label, kld)
		case other <= 0 || !finite(other):
			h.note("%s: no %s; not drawn", label, what)
		default:
			out = append(out, pt)
		}
	}
	return out
}

// nothingDrawn ends a chart with no point to place: the message in the middle, the header.
func nothingDrawn(p *plot.Plot, h *header, msg string) (*plot.Plot, error) {
	p.Add(message{msg})
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	h.attach(p)
	return p, nil
}

func paretoLabels(pts []ParetoPoint) plotter.XYLabels {
	var xyl plotter.XYLabels
	for _, pt := range pts {
		xyl.XYs = append(xyl.XYs, plotter.XY{X: pt.KLD, Y: pt.Speed})
		xyl.Labels = append(xyl.Labels, pt.Label)
	}
	return xyl
}
