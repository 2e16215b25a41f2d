package plots

import (
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"sparkbench/plots/lttb"
)

// xy is one point of a drawn series. lo/hi are the error bar (hasErr), gap breaks the line
// before this point, open draws the marker hollow.
type xy struct {
	x, y, lo, hi float64
	hasErr       bool
	open, gap    bool
	mark         bool // always draw a marker here, whatever the stride
}

// strokeChunk is how many segments of a series line are stroked at a time (a variable so
// that the benchmark can show the cost of one long path).
var strokeChunk = 32

// seriesPlotter draws a polyline with optional error bars and markers. Unlike gonum's
// LinePoints it breaks at gaps, draws hollow markers for flagged points and thins markers
// on dense series.
type seriesPlotter struct {
	pts    []xy
	line   *draw.LineStyle
	glyph  *draw.GlyphStyle
	errCol color.Color
}

// errBarChunk is how many error bars are stroked as one path.
const errBarChunk = 64

func (s *seriesPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	if s.errCol != nil {
		ls := draw.LineStyle{Color: s.errCol, Width: vg.Points(1)}
		capW := vg.Points(3)
		// The bars are stroked errBarChunk at a time as one path of many pieces: a stroke per
		// piece cost a rasteriser pass each (three per point; 5 x 1,000 points: most of a
		// depth chart's frame), while one path for every bar would slow the rasteriser down
		// the way one long line does.
		var path vg.Path
		bars := 0
		flushBars := func() {
			if bars > 0 {
				c.SetLineStyle(ls)
				c.Stroke(path)
			}
			path, bars = nil, 0
		}
		add := func(a, b vg.Point) {
			for _, l := range c.ClipLinesY([]vg.Point{a, b}) {
				if len(l) < 2 {
					continue
				}
				path.Move(l[0])
				for _, pt := range l[1:] {
					path.Line(pt)
				}
			}
		}
		for _, q := range s.pts {
			if !q.hasErr || q.hi <= q.lo {
				continue
			}
			x, ylo, yhi := trX(q.x), trY(q.lo), trY(q.hi)
			add(vg.Point{X: x, Y: ylo}, vg.Point{X: x, Y: yhi})
			add(vg.Point{X: x - capW, Y: ylo}, vg.Point{X: x + capW, Y: ylo})
			add(vg.Point{X: x - capW, Y: yhi}, vg.Point{X: x + capW, Y: yhi})
			if bars++; bars == errBarChunk {
				flushBars()
			}
		}
		flushBars()
	}
	if s.line != nil {
		var run []vg.Point
		flush := func() {
			// Stroke long lines in pieces: freetype's rasteriser keeps a list of cells per
			// row and gets quadratically slower as one path covers more of them (10k
			// points: 296 ms in one piece).
			for start := 0; start+1 < len(run); start += strokeChunk {
				end := min(start+strokeChunk+1, len(run))
				c.StrokeLines(*s.line, c.ClipLinesXY(run[start:end])...)
			}
			run = run[:0]
		}
		for _, q := range s.pts {
			if q.gap {
				flush()
			}
			run = append(run, vg.Point{X: trX(q.x), Y: trY(q.y)})
		}
		flush()
	}
	if s.glyph != nil {
		stride := markerStride(len(s.pts))
		for i, q := range s.pts {
			if i%stride != 0 && !q.mark && !q.open && i != len(s.pts)-1 {
				continue
			}
			g := *s.glyph
			if m, ok := g.Shape.(marker); ok && q.open {
				m.open = true
				g.Shape = m
			}
			pt := vg.Point{X: trX(q.x), Y: trY(q.y)}
			if c.Contains(pt) {
				c.DrawGlyph(g, pt)
			}
		}
	}
}

// DataRange implements plot.DataRanger.
func (s *seriesPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, q := range s.pts {
		xmin, xmax = math.Min(xmin, q.x), math.Max(xmax, q.x)
		ymin, ymax = math.Min(ymin, q.y), math.Max(ymax, q.y)
		if q.hasErr {
			ymin, ymax = math.Min(ymin, q.lo), math.Max(ymax, q.hi)
		}
	}
	return
}

// downsample keeps at most n points (LTTB on x, y); points flagged open or mark survive.
func downsample(pts []xy, n int) []xy {
	if n <= 0 || len(pts) <= n {
		return pts
	}
	return lttb.Downsample(pts, n, func(q xy) (float64, float64) { return q.x, q.y })
}

// refLine is a horizontal (or vertical) reference line across the data area with a label.
type refLine struct {
	value     float64
	vertical  bool
	labelLeft bool // label at the left (horizontal) or left of the line (vertical)
	style     draw.LineStyle
	label     string
	labelCol  color.Color
}

func (r *refLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ts := textStyle(fontRegular, sizeNote, r.labelCol)
	if r.vertical {
		x := trX(r.value)
		if x < c.Min.X-0.5 || x > c.Max.X+0.5 {
			return
		}
		c.StrokeLine2(r.style, x, c.Min.Y, x, c.Max.Y)
		if r.label != "" {
			ts.XAlign, ts.YAlign = draw.XLeft, draw.YTop
			lx := x + vg.Points(3)
			if r.labelLeft || lx+ts.Width(r.label) > c.Max.X {
				ts.XAlign, lx = draw.XRight, x-vg.Points(3)
			}
			c.FillText(ts, vg.Point{X: lx, Y: c.Max.Y - vg.Points(2)}, r.label)
		}
		return
	}
	y := trY(r.value)
	if y < c.Min.Y-0.5 || y > c.Max.Y+0.5 {
		return
	}
	c.StrokeLine2(r.style, c.Min.X, y, c.Max.X, y)
	if r.label != "" {
		ts.XAlign, ts.YAlign = draw.XRight, draw.YBottom
		lx := c.Max.X - vg.Points(2)
		if r.labelLeft {
			ts.XAlign, lx = draw.XLeft, c.Min.X+vg.Points(2)
		}
		c.FillText(ts, vg.Point{X: lx, Y: y + vg.Points(2)}, r.label)
	}
}

func (r *refLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	if r.vertical {
		return r.value, r.value, math.Inf(1), math.Inf(-1)
	}
	return math.Inf(1), math.Inf(-1), r.value, r.value
}

// maxCallouts is the most callouts a chart labels; more would bury the data.
const maxCallouts = 8

// callout marks a point of interest (a crossing, a knee) with a marker, an optional drop
// line to the x axis and a label. Labels of nearby callouts are stacked so they do not
// overprint each other.
type callouts struct {
	items []callout
}

type callout struct {
	x, y  float64
	col   color.Color
	label string
	drop  bool
}

func (cs *callouts) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	items := append([]callout(nil), cs.items...)
	sort.SliceStable(items, func(i, j int) bool { return items[i].x < items[j].x })
	ts := textStyle(fontBold, sizeNote, colInk)
	ts.XAlign, ts.YAlign = draw.XLeft, draw.YTop
	lineH := ts.FontExtents().Height + 1
	type placed struct{ minX, maxX, y vg.Length }
	var done []placed
	for _, it := range items {
		x, y := trX(it.x), trY(it.y)
		ls := draw.LineStyle{Color: it.col, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1.5), vg.Points(1.5)}}
		if it.drop {
			c.StrokeLine2(ls, x, c.Min.Y, x, y)
		}
		c.DrawGlyphNoClip(draw.GlyphStyle{Color: it.col, Radius: vg.Points(4.5), Shape: marker{shape: shapeDiamond, open: true}}, vg.Point{X: x, Y: y})
		if it.label == "" {
			continue
		}
		ts.Color = it.col
		w := ts.Width(it.label)
		lx := x + vg.Points(5)
		if lx+w > c.Max.X {
			lx = x - vg.Points(5) - w
		}
		ly := y - vg.Points(5)
		for again := true; again; {
			again = false
			for _, d := range done {
				if lx < d.maxX+vg.Points(4) && lx+w+vg.Points(4) > d.minX && math.Abs(float64(ly-d.y)) < float64(lineH) {
					ly = d.y - lineH
					again = true
				}
			}
		}
		// A white backing keeps the label readable where it crosses a line.
		bg := []vg.Point{{X: lx - 1, Y: ly + 1}, {X: lx + w + 1, Y: ly + 1}, {X: lx + w + 1, Y: ly - lineH + 1}, {X: lx - 1, Y: ly - lineH + 1}}
		c.FillPolygon(color.White, bg)
		c.FillText(ts, vg.Point{X: lx, Y: ly}, it.label)
		done = append(done, placed{lx, lx + w, ly})
	}
}

// band is a filled horizontal band [lo, hi] over [x0, x1] (a noise floor).
type band struct {
	x0, x1, lo, hi float64
	fill           color.Color
	edge           *draw.LineStyle
}

func (b *band) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x0, x1 := trX(b.x0), trX(b.x1)
	if x1-x0 < vg.Points(6) { // a single point: give the band some width
		x0, x1 = x0-vg.Points(8), x1+vg.Points(8)
	}
	pts := []vg.Point{{X: x0, Y: trY(b.lo)}, {X: x1, Y: trY(b.lo)}, {X: x1, Y: trY(b.hi)}, {X: x0, Y: trY(b.hi)}}
	c.FillPolygon(b.fill, c.ClipPolygonXY(pts))
	if b.edge != nil {
		c.StrokeLines(*b.edge, c.ClipLinesXY([]vg.Point{pts[0], pts[1]})...)
		c.StrokeLines(*b.edge, c.ClipLinesXY([]vg.Point{pts[3], pts[2]})...)
	}
}

func (b *band) DataRange() (xmin, xmax, ymin, ymax float64) { return b.x0, b.x1, b.lo, b.hi }

// pointLabels writes short texts next to points (declared conditions on a repeatability
// strip).
type pointLabels struct {
	items []pointLabel
}

type pointLabel struct {
	x, y float64
	text string
	col  color.Color
}

func (pl *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ts := textStyle(fontRegular, sizeNote, colMuted)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YBottom
	for _, it := range pl.items {
		ts.Color = it.col
		pt := vg.Point{X: trX(it.x), Y: trY(it.y) + vg.Points(6)}
		w := ts.Width(it.text)
		if pt.X-w/2 < c.Min.X {
			pt.X = c.Min.X + w/2
		}
		if pt.X+w/2 > c.Max.X {
			pt.X = c.Max.X - w/2
		}
		c.FillText(ts, pt, it.text)
	}
}

// message writes a line of text in the middle of the data area ("no data to plot").
type message struct{ text string }

func (m message) Plot(c draw.Canvas, _ *plot.Plot) {
	ts := textStyle(fontRegular, sizeAxis, colMuted)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YCenter
	c.FillText(ts, c.Center(), fit(ts, m.text, c.Max.X-c.Min.X))
}

// grid draws light lines at the major ticks, behind the data.
func grid() *gridLines { return &gridLines{} }

type gridLines struct{}

func (g *gridLines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: colGrid, Width: vg.Points(0.6)}
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if t.IsMinor() {
			continue
		}
		if y := trY(t.Value); y >= c.Min.Y-0.5 && y <= c.Max.Y+0.5 {
			c.StrokeLine2(ls, c.Min.X, y, c.Max.X, y)
		}
	}
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.IsMinor() {
			continue
		}
		if x := trX(t.Value); x >= c.Min.X-0.5 && x <= c.Max.X+0.5 {
			c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
		}
	}
}

// Ticks.

// valueTicks puts a labelled tick at each value (depths, slot counts, ubatch sizes).
type valueTicks struct {
	values []float64
	label  func(float64) string
}

func (t valueTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, v := range t.values {
		if v >= min-1e-9 && v <= max+1e-9 {
			out = append(out, plot.Tick{Value: v, Label: t.label(v)})
		}
	}
	return out
}

// thinValues drops values closer than minFrac of the axis span to the last one kept, so
// that tick labels do not overprint (depth axes: 0, 512 and 1K crowd at 32K scale).
func thinValues(vals []float64, lo, hi float64, minFrac float64) []float64 {
	sort.Float64s(vals)
	var out []float64
	last := math.Inf(-1)
	for _, v := range vals {
		if (v-last)/(hi-lo) >= minFrac || len(out) == 0 {
			out = append(out, v)
			last = v
		}
	}
	return out
}

// Log axes. gonum's LogScale places a centred axis label's glyph box at the data midpoint
// (normalised on the log scale, not the middle of the axis), so the layout shrinks the data
// area to make room for a label that is not there. Log charts therefore plot log2 or log10
// of their values on a linear axis and label the ticks with the original values.

// log2Ticks labels the given original values (slot counts, ubatch sizes) on a log2 axis.
func log2Ticks(vals []float64) valueTicks {
	logs := make([]float64, len(vals))
	for i, v := range vals {
		logs[i] = math.Log2(v)
	}
	return valueTicks{values: logs, label: func(l float64) string { return formatInt(math.Round(math.Exp2(l))) }}
}

// log10Ticks125 labels 1-2-5 steps of the original values on a log10 axis (latency in ms),
// with unlabelled minor ticks at the other integers of each decade.
type log10Ticks125 struct{}

func (log10Ticks125) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return out
	}
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			l := math.Log10(v)
			if l < lo-1e-9 || l > hi+1e-9 {
				continue
			}
			t := plot.Tick{Value: l}
			if m == 1 || m == 2 || m == 5 {
				t.Label = fmtAxis(v)
			}
			out = append(out, t)
		}
	}
	return out
}

func fmtAxis(v float64) string {
	if v >= 1 && v == math.Round(v) {
		return formatInt(v)
	}
	return fmtNum(v)
}

func formatInt(v float64) string { return strconv.FormatInt(int64(v), 10) }

// niceTicks labels a linear axis at 1, 2, 2.5 or 5 × 10^k steps, about six labels, with an
// unlabelled minor tick between them.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return []plot.Tick{{Value: lo, Label: fmtAxis(lo)}}
	}
	raw := span / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	step, _ = strconv.ParseFloat(strconv.FormatFloat(step, 'g', 3, 64), 64) // drop float noise
	decimals := 0
	if s := strconv.FormatFloat(step, 'f', -1, 64); strings.Contains(s, ".") {
		decimals = len(s) - strings.IndexByte(s, '.') - 1
	}
	var out []plot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for k := 0; ; k++ {
		v := first + float64(k)*step
		if v > hi+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		if half := v + step/2; half < hi {
			out = append(out, plot.Tick{Value: half})
		}
	}
	if first-step/2 > lo {
		out = append(out, plot.Tick{Value: first - step/2})
	}
	return out
}

// fmtRef formats a reference value without trailing zeros: 70, 72.5.
func fmtRef(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// noData marks a chart with nothing plotted: a note when series were given but none has a
// measured point (what: "point", "run"), and the "no data to plot" message.
func noData(p *plot.Plot, h *header, plotted, series int, what string) {
	if plotted > 0 {
		return
	}
	if series > 0 {
		h.note("no series has a measured %s", what)
	}
	p.Add(message{"no data to plot"})
}

// addCallouts labels the chart's callouts, or says in a caption that there are too many to
// label (what: "knees", "crossings").
func addCallouts(p *plot.Plot, h *header, calls *callouts, what string) {
	if len(calls.items) > maxCallouts {
		h.caption("%d %s not marked on the chart: too many to label", len(calls.items), what)
	} else if len(calls.items) > 0 {
		p.Add(calls)
	}
}

// log2Range is a log2 axis over the values present (sorted; fallback when none), padded by
// padFrac of its span (at least a quarter doubling) on each side.
func log2Range(present map[int]bool, fallback []float64, padFrac float64) (vals []float64, lo, hi float64) {
	vals = make([]float64, 0, len(present))
	for v := range present {
		vals = append(vals, float64(v))
	}
	sort.Float64s(vals)
	if len(vals) == 0 {
		vals = fallback
	}
	lo, hi = math.Log2(vals[0]), math.Log2(vals[len(vals)-1])
	pad := math.Max(0.25, padFrac*(hi-lo))
	return vals, lo - pad, hi + pad
}

// pairKey explains a chart that draws two measures per series: solid lines with filled marks
// (solid), dashed lines with hollow marks (dashed).
func pairKey(h *header, solid, dashed string) {
	al := lineStyle(colMuted, 1.6)
	ag := glyphStyle(colMuted, shapeCircle, false)
	pl := lineStyle(colMuted, 1.4, dashSecondary...)
	pg := glyphStyle(colMuted, shapeCircle, true)
	h.addKey(solid, thumb{line: &al, glyph: &ag})
	h.addKey(dashed, thumb{line: &pl, glyph: &pg})
}

// pairPlotters draw a series' two measures: a solid line with filled marks (style ls, gs) and a
// dashed one with hollow marks, in its colour and shape; an empty measure draws nothing.
func pairPlotters(solid, dashed []xy, col color.Color, shp shape, ls *draw.LineStyle, gs *draw.GlyphStyle) []plot.Plotter {
	var out []plot.Plotter
	if len(solid) > 0 {
		out = append(out, &seriesPlotter{pts: solid, line: ls, glyph: gs})
	}
	if len(dashed) > 0 {
		dl := lineStyle(col, 1.4, dashSecondary...)
		og := glyphStyle(col, shp, true)
		out = append(out, &seriesPlotter{pts: dashed, line: &dl, glyph: &og})
	}
	return out
}
