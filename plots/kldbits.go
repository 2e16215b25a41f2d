package plots

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// KindKLDBits is a quantization ladder's quality against size: each candidate's KL divergence
// from the reference against its bits per weight.
const KindKLDBits Kind = "kldbits"

// KLDBitsChart is the input of the KLD-against-bits chart: one point per candidate at its
// bits per weight, its mean KLD as a marker and its 99th percentile as a whisker above it, the
// selected one ringed, the rejected ones drawn open. Fewer bits cost more KLD: the chart shows
// how much each step down the ladder costs.
type KLDBitsChart struct {
	Meta   Meta           `json:"meta"`
	Points []KLDBitsPoint `json:"points"`
}

// KLDBitsPoint is one candidate.
type KLDBitsPoint struct {
	Label    string  `json:"label"`
	Bits     float64 `json:"bits_per_weight"`
	KLD      float64 `json:"kld_mean"`
	KLDP99   float64 `json:"kld_p99,omitempty"` // 0: not drawn
	Selected bool    `json:"selected,omitempty"`
	Rejected bool    `json:"rejected,omitempty"`
}

func (c KLDBitsChart) Kind() Kind                { return KindKLDBits }
func (c KLDBitsChart) Plot() (*plot.Plot, error) { return KLDBits(c) }
func (c KLDBitsChart) LimitPoints(int) Chart     { return c }

// KLDBits draws mean KLD (log scale) against bits per weight, the candidates joined in order
// of bits, each p99 a whisker, every candidate labelled.
func KLDBits(c KLDBitsChart) (*plot.Plot, error) {
	p, h := ladderChart(c.Meta, "Quantization ladder: KLD against bits per weight", "bits per weight (from the file's tensor table)", "KLD (log scale)")
	pts := drawable(h, c.Points, func(pt KLDBitsPoint) (string, float64, float64) { return pt.Label, pt.KLD, pt.Bits }, "bits per weight")
	if len(pts) == 0 {
		return nothingDrawn(p, h, "no candidate measured for both KLD and size")
	}
	slices.SortStableFunc(pts, func(a, b KLDBitsPoint) int { return cmp.Compare(a.Bits, b.Bits) })
	// log10 of the KLD on a linear axis, ticked in decades: gonum places a log axis's label
	// box at the arithmetic middle of the range, which pushes the data area down the page
	p.Y.Tick.Marker = decadeTicks{}
	lg := math.Log10
	if len(pts) > 1 {
		xy := make(plotter.XYs, len(pts))
		for i, pt := range pts {
			xy[i] = plotter.XY{X: pt.Bits, Y: lg(pt.KLD)}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.LineStyle = lineStyle(palette[0], 1.2)
		p.Add(l)
		h.add("mean KLD", thumb{line: &l.LineStyle})
	}
	ylo, yhi := pts[0].KLD, pts[0].KLD
	whiskers := false
	for _, pt := range pts {
		ylo, yhi = min(ylo, pt.KLD), max(yhi, pt.KLD)
		if pt.KLDP99 > pt.KLD && finite(pt.KLDP99) {
			w, err := plotter.NewLine(plotter.XYs{{X: pt.Bits, Y: lg(pt.KLD)}, {X: pt.Bits, Y: lg(pt.KLDP99)}})
			if err != nil {
				return nil, err
			}
			w.LineStyle = lineStyle(palette[3], 1, 2, 2)
			p.Add(w)
			p99, _ := plotter.NewScatter(plotter.XYs{{X: pt.Bits, Y: lg(pt.KLDP99)}})
			p99.GlyphStyle = draw.GlyphStyle{Color: palette[3], Radius: vg.Points(3), Shape: marker{shape: shapeCircle, open: true}}
			p.Add(p99)
			yhi, whiskers = max(yhi, pt.KLDP99), true
		}
		xy := plotter.XYs{{X: pt.Bits, Y: lg(pt.KLD)}}
		col := palette[2]
		if pt.Rejected {
			col = palette[1]
		}
		if pt.Selected {
			ring, _ := plotter.NewScatter(xy)
			ring.GlyphStyle = draw.GlyphStyle{Color: colInk, Radius: vg.Points(8), Shape: marker{shape: shapeCircle, open: true}}
			p.Add(ring)
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(5), Shape: marker{shape: shapeCircle, open: pt.Rejected}}
		p.Add(s)
	}
	if whiskers {
		g := draw.GlyphStyle{Color: palette[3], Radius: vg.Points(3), Shape: marker{shape: shapeCircle, open: true}}
		h.add("99th percentile KLD", thumb{glyph: &g})
	}
	if slices.ContainsFunc(pts, func(pt KLDBitsPoint) bool { return pt.Rejected }) {
		out := draw.GlyphStyle{Color: palette[1], Radius: vg.Points(4), Shape: marker{shape: shapeCircle, open: true}}
		h.add("rejected by a limit", thumb{glyph: &out})
	}
	var xyl plotter.XYLabels
	for _, pt := range pts {
		xyl.XYs = append(xyl.XYs, plotter.XY{X: pt.Bits, Y: lg(pt.KLD)})
		xyl.Labels = append(xyl.Labels, fmt.Sprintf("%s %.2f", pt.Label, pt.Bits))
	}
	labels, err := plotter.NewLabels(xyl)
	if err != nil {
		return nil, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i] = textStyle(fontRegular, sizeTick, colInk)
		labels.TextStyle[i].XAlign, labels.TextStyle[i].YAlign = draw.XLeft, draw.YBottom
	}
	labels.Offset = vg.Point{X: vg.Points(9), Y: vg.Points(4)}
	p.Add(labels)
	h.caption("ringed: the candidate the pre-registered rule selected")
	xlo, xhi := pts[0].Bits, pts[len(pts)-1].Bits
	span := math.Max(xhi-xlo, 1)
	p.X.Min, p.X.Max = xlo-0.15*span, xhi+0.3*span
	p.Y.Min, p.Y.Max = lg(ylo/2), lg(yhi*2)
	h.attach(p)
	return p, nil
}

// decadeTicks ticks an axis of log10 values: a labelled major tick at each power of ten, minor
// ticks at 2..9 times it.
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		if e >= lo && e <= hi {
			ts = append(ts, plot.Tick{Value: e, Label: strconv.FormatFloat(math.Pow(10, e), 'g', -1, 64)})
		}
		for k := 2.0; k <= 9; k++ {
			if v := e + math.Log10(k); v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}
