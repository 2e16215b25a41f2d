package plots

import (
	"image/color"
	"math"

	stdfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// One font set: Liberation Sans regular and bold, bundled with gonum/plot, so every machine
// draws the same glyphs and an export is byte-for-byte reproducible. Each face used is
// embedded in SVG and PDF (about 0.4 MB each in SVG), so there are only two.
var (
	fontRegular = font.Font{Typeface: "Liberation", Variant: "Sans"}
	fontBold    = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: stdfont.WeightBold}
)

// Text sizes in points.
const (
	sizeTitle    = 12
	sizeSubtitle = 9
	sizeAxis     = 10
	sizeTick     = 9
	sizeLegend   = 9
	sizeNote     = 8.5
	sizeCell     = 9
)

func init() {
	// plot.New copies plot.DefaultFont into the title, axis and legend styles, so it must be
	// set before the first plot.New; newPlot also sets every style it uses explicitly.
	plot.DefaultFont = fontRegular
}

// Okabe & Ito (2008), "Color Universal Design": eight colours that readers with any common
// colour-vision deficiency can tell apart. Ordered so that the first series get the colours
// with the most contrast on white; yellow comes last.
var palette = []color.NRGBA{
	{0x00, 0x72, 0xB2, 0xFF}, // blue
	{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xFF}, // orange
	{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	{0x00, 0x00, 0x00, 0xFF}, // black
	{0xF0, 0xE4, 0x42, 0xFF}, // yellow
}

// Neutral colours for reference lines, grids, notes and cell fills.
var (
	colInk       = color.NRGBA{0x22, 0x22, 0x22, 0xFF}
	colMuted     = color.NRGBA{0x55, 0x55, 0x55, 0xFF}
	colGrid      = color.NRGBA{0xE2, 0xE2, 0xE2, 0xFF}
	colRef       = color.NRGBA{0x44, 0x44, 0x44, 0xFF}
	colNote      = color.NRGBA{0x8A, 0x3B, 0x00, 0xFF} // dark vermillion: warnings stay readable in grey
	colPassFill  = color.NRGBA{0xC9, 0xEA, 0xDF, 0xFF} // bluish green, light
	colFailFill  = color.NRGBA{0xF7, 0xD3, 0xBD, 0xFF} // vermillion, light
	colEmptyFill = color.NRGBA{0xEE, 0xEE, 0xEE, 0xFF}
	colFailHatch = color.NRGBA{0xE8, 0xAE, 0x8C, 0xFF}
)

// markerShapes: as many shapes as is coprime with the eight colours, so 56 series get 56
// distinct colour+shape pairs and no two neighbours share a shape.
var markerShapes = []shape{shapeCircle, shapeSquare, shapeTriangle, shapeDiamond, shapeTriangleDown, shapeCross, shapePlus}

// seriesStyle is the colour and marker of the i-th series.
func seriesStyle(i int) (color.Color, shape) {
	return palette[i%len(palette)], markerShapes[i%len(markerShapes)]
}

// tint mixes c with white; f = 0 is c, f = 1 is white. Used instead of alpha, which the PDF
// backend ignores.
func tint(c color.Color, f float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(math.Round(float64(v>>8)*(1-f) + 255*f)) }
	return color.NRGBA{mix(r), mix(g), mix(b), 0xFF}
}

func textStyle(f font.Font, size float64, c color.Color) text.Style {
	return text.Style{
		Color:   c,
		Font:    font.From(f, font.Length(size)),
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot returns a plot with the house style: fonts, sizes, grid-friendly axes.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(fontBold, sizeTitle)
	p.Title.TextStyle.Color = colInk
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(fontRegular, sizeAxis)
		ax.Label.TextStyle.Color = colInk
		ax.Label.Padding = vg.Points(4)
		ax.Tick.Label.Font = font.From(fontRegular, sizeTick)
		ax.Tick.Label.Color = colInk
		ax.Tick.Length = vg.Points(5)
		ax.LineStyle.Color = colMuted
		ax.Tick.LineStyle.Color = colMuted
		ax.Padding = vg.Points(2)
		ax.Tick.Marker = niceTicks{}
	}
	p.Legend.TextStyle.Font = font.From(fontRegular, sizeLegend) // unused: see header
	return p
}

// shape is a marker shape; open draws the outline only (a measurement that is flagged, or
// a value that cannot be trusted, is drawn open).
type shape int

const (
	shapeCircle shape = iota
	shapeSquare
	shapeTriangle
	shapeDiamond
	shapeTriangleDown
	shapeCross
	shapePlus
)

type marker struct {
	shape shape
	open  bool
}

// DrawGlyph implements draw.GlyphDrawer.
func (m marker) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var poly []vg.Point
	switch m.shape {
	case shapeCircle:
		var p vg.Path
		p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		p.Arc(pt, r, 0, 2*math.Pi)
		p.Close()
		m.finish(c, sty, p)
		return
	case shapeSquare:
		s := r * 0.9
		poly = []vg.Point{{X: pt.X - s, Y: pt.Y - s}, {X: pt.X + s, Y: pt.Y - s}, {X: pt.X + s, Y: pt.Y + s}, {X: pt.X - s, Y: pt.Y + s}}
	case shapeTriangle, shapeTriangleDown:
		d := vg.Length(1)
		if m.shape == shapeTriangleDown {
			d = -1
		}
		k := r * 1.2
		poly = []vg.Point{{X: pt.X, Y: pt.Y + d*k}, {X: pt.X + k*0.866, Y: pt.Y - d*k*0.5}, {X: pt.X - k*0.866, Y: pt.Y - d*k*0.5}}
	case shapeDiamond:
		k := r * 1.25
		poly = []vg.Point{{X: pt.X, Y: pt.Y + k}, {X: pt.X + k, Y: pt.Y}, {X: pt.X, Y: pt.Y - k}, {X: pt.X - k, Y: pt.Y}}
	case shapeCross, shapePlus:
		ls := draw.LineStyle{Color: sty.Color, Width: vg.Points(1.6)}
		k := r * 1.1
		if m.shape == shapeCross {
			k *= 0.85
			c.StrokeLine2(ls, pt.X-k, pt.Y-k, pt.X+k, pt.Y+k)
			c.StrokeLine2(ls, pt.X-k, pt.Y+k, pt.X+k, pt.Y-k)
		} else {
			c.StrokeLine2(ls, pt.X-k, pt.Y, pt.X+k, pt.Y)
			c.StrokeLine2(ls, pt.X, pt.Y-k, pt.X, pt.Y+k)
		}
		return
	}
	var p vg.Path
	p.Move(poly[0])
	for _, q := range poly[1:] {
		p.Line(q)
	}
	p.Close()
	m.finish(c, sty, p)
}

func (m marker) finish(c *draw.Canvas, sty draw.GlyphStyle, p vg.Path) {
	if m.open {
		c.SetColor(color.White)
		c.Fill(p)
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.3)})
		c.Stroke(p)
		return
	}
	c.SetColor(sty.Color)
	c.Fill(p)
}

// thumb is a legend thumbnail: an optional line and an optional marker or swatch.
type thumb struct {
	line   *draw.LineStyle
	glyph  *draw.GlyphStyle
	fill   color.Color     // swatch fill (envelope cells)
	border *draw.LineStyle // swatch border
	hatch  color.Color     // swatch hatching
}

// Thumbnail implements plot.Thumbnailer.
func (t thumb) Thumbnail(c *draw.Canvas) {
	if t.fill != nil || t.border != nil {
		in := vg.Points(1.5)
		r := vg.Rectangle{Min: vg.Point{X: c.Min.X + in, Y: c.Min.Y + in}, Max: vg.Point{X: c.Max.X - in, Y: c.Max.Y - in}}
		pts := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
		if t.fill != nil {
			c.FillPolygon(t.fill, pts)
		}
		if t.hatch != nil {
			hatch(c, r, t.hatch, vg.Points(4))
		}
		if t.border != nil {
			c.StrokeLines(*t.border, append(pts, pts[0]))
		}
	}
	y := (c.Min.Y + c.Max.Y) / 2
	if t.line != nil {
		c.StrokeLine2(*t.line, c.Min.X, y, c.Max.X, y)
	}
	if t.glyph != nil {
		c.DrawGlyphNoClip(*t.glyph, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: y})
	}
}

// hatch draws diagonal lines across r, clipped to r (a second cue, besides colour and the
// PASS/FAIL word, for failing cells; it survives greyscale printing).
func hatch(c *draw.Canvas, r vg.Rectangle, col color.Color, step vg.Length) {
	ls := draw.LineStyle{Color: col, Width: vg.Points(0.6)}
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	for off := -h; off < w; off += step {
		x0, y0 := r.Min.X+off, r.Min.Y
		x1, y1 := x0+h, r.Max.Y
		if x0 < r.Min.X { // clip the start to the left edge
			y0 += r.Min.X - x0
			x0 = r.Min.X
		}
		if x1 > r.Max.X { // clip the end to the right edge
			y1 -= x1 - r.Max.X
			x1 = r.Max.X
		}
		if x1 > x0 {
			c.StrokeLine2(ls, x0, y0, x1, y1)
		}
	}
}

func lineStyle(col color.Color, width float64, dashes ...float64) draw.LineStyle {
	ls := draw.LineStyle{Color: col, Width: vg.Points(width)}
	for _, d := range dashes {
		ls.Dashes = append(ls.Dashes, vg.Points(d))
	}
	return ls
}

func glyphStyle(col color.Color, s shape, open bool) draw.GlyphStyle {
	return draw.GlyphStyle{Color: col, Radius: vg.Points(3.2), Shape: marker{shape: s, open: open}}
}

// Dash patterns with a meaning, used the same way on every chart.
var (
	dashSecondary = []float64{5, 3}       // per-stream rate, E2E latency
	dashRef       = []float64{6, 3}       // reference line (e.g. 70 t/s)
	dashLimit     = []float64{2, 2}       // SLO limit for TTFT
	dashLimit2    = []float64{8, 3, 2, 3} // SLO limit for E2E
)
