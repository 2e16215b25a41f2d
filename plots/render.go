package plots

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	imgdraw "image/draw"
	"image/png"
	"io"
	"path/filepath"
	"strings"
	"time"

	"codeberg.org/go-pdf/fpdf"
	stdfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Format is an export format.
type Format string

const (
	PNG Format = "png"
	SVG Format = "svg"
	PDF Format = "pdf"
)

// ScreenDPI is the resolution of a CSS pixel: sizes given in pixels are converted to
// lengths at 96 pixels per inch, and PNG exports are drawn at this DPI unless told otherwise.
const ScreenDPI = 96

// PDFDate is the creation and modification date written into every PDF: a fixed value so
// that the same chart gives the same bytes (receipts are compared byte for byte).
var PDFDate = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func init() {
	// gonum's vgpdf gives no access to its fpdf document, so the document defaults are set
	// once here, before any PDF is made: without them fpdf stamps time.Now() into
	// /CreationDate and /ModDate and writes fonts in map order (two runs differ).
	fpdf.SetDefaultCreationDate(PDFDate)
	fpdf.SetDefaultModificationDate(PDFDate)
	fpdf.SetDefaultCatalogSort(true)
}

// Pixels converts a size in CSS pixels (1/96 inch) to a vg.Length.
func Pixels(px int) vg.Length { return vg.Length(px) * vg.Inch / ScreenDPI }

// FormatOf returns the export format named by a file's extension.
func FormatOf(path string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))); f {
	case PNG, SVG, PDF:
		return f, nil
	}
	return "", fmt.Errorf("%s: unknown image format %q: name the file .png, .svg or .pdf", path, filepath.Ext(path))
}

// Minimum canvas: below this the axes, header and data cannot all be drawn.
const (
	MinWidthPx  = 400
	MinHeightPx = 260
)

// Render draws p into a new RGBA image of exactly wPx × hPx pixels at the given DPI (96 for
// a 1:1 screen; the window passes its scale × 96). It is what the live view shows; call it
// from a worker, never from a canvas.Raster generator.
func Render(p *plot.Plot, wPx, hPx, dpi int) (*image.RGBA, error) {
	return RenderThemed(p, wPx, hPx, dpi, nil)
}

// RenderThemed is Render for the window: colours are mapped through t (nil: the house
// style, as Render and every export draw it).
func RenderThemed(p *plot.Plot, wPx, hPx, dpi int, t *Theme) (*image.RGBA, error) {
	if p == nil {
		return nil, errors.New("render: no plot")
	}
	if dpi <= 0 {
		dpi = ScreenDPI
	}
	if wPx*ScreenDPI < MinWidthPx*dpi || hPx*ScreenDPI < MinHeightPx*dpi {
		return nil, fmt.Errorf("render: %d×%d px at %d dpi is too small; at least %d×%d px at 96 dpi", wPx, hPx, dpi, MinWidthPx, MinHeightPx)
	}
	// UseImage sets the size in pixels exactly (UseWH rounds); vgimg copies the image, so
	// read it back from the canvas. The plot paints its own white background.
	c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, wPx, hPx))), vgimg.UseDPI(dpi))
	if t != nil { // vgimg paints the canvas white itself, not through SetColor
		imgdraw.Draw(c.Image(), c.Image().Bounds(), image.NewUniform(t.Background), image.Point{}, imgdraw.Src)
	}
	if err := drawPlot(p, themed(c, t)); err != nil {
		return nil, err
	}
	img, ok := c.Image().(*image.RGBA)
	if !ok { // not expected: vgimg draws into an *image.RGBA
		b := c.Image().Bounds()
		rgba := image.NewRGBA(b)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				rgba.Set(x, y, c.Image().At(x, y))
			}
		}
		img = rgba
	}
	return img, nil
}

// canvasMargin is the white border around every chart; minDataSize the smallest data area
// worth drawing.
const (
	canvasMargin = vg.Length(6)
	minDataSize  = vg.Length(24)
)

// drawPlot lays the header out for c's size and draws p on c, turning a panic inside
// gonum/plot into an error: a chart that cannot be drawn must not take the window down. A
// plot is drawn by one goroutine at a time (gonum's Draw writes to the plot too).
func drawPlot(p *plot.Plot, c vg.CanvasSizer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("draw chart: %v", r)
		}
	}()
	cw, ch := c.Size()
	if h := headerOf(p); h != nil {
		h.fit(p, cw, ch) // legend columns and rows for this size
	}
	dc := draw.Crop(draw.New(c), canvasMargin, -canvasMargin, canvasMargin, -canvasMargin)
	// A header (legend, notes) taller than the canvas leaves a data area of negative or NaN
	// size, and the rasteriser can spin forever on NaN coordinates: refuse instead.
	da := p.DataCanvas(dc)
	w, h := da.Max.X-da.Min.X, da.Max.Y-da.Min.Y
	if !finite(float64(w)) || !finite(float64(h)) || w < minDataSize || h < minDataSize {
		return fmt.Errorf("chart does not fit %.0f×%.0f pt: title, legend and notes leave no room for the data; make it larger", float64(cw), float64(ch))
	}
	p.Draw(dc)
	return nil
}

// Export writes p in the given format at w × h. PNG is drawn at ScreenDPI. The output is
// deterministic: the same chart gives the same bytes (fixed fonts, embedded in SVG and PDF;
// fixed PDF dates and object order).
func Export(p *plot.Plot, f Format, w, h vg.Length, out io.Writer) error {
	return ExportDPI(p, f, w, h, ScreenDPI, out)
}

// ExportDPI is Export with the PNG resolution given (SVG and PDF are vector formats and
// ignore dpi).
func ExportDPI(p *plot.Plot, f Format, w, h vg.Length, dpi int, out io.Writer) error {
	if p == nil {
		return errors.New("export: no plot")
	}
	if w < Pixels(MinWidthPx) || h < Pixels(MinHeightPx) {
		return fmt.Errorf("export: %v × %v is too small; at least %d×%d px (%v × %v)", w, h, MinWidthPx, MinHeightPx, Pixels(MinWidthPx), Pixels(MinHeightPx))
	}
	var c vg.CanvasWriterTo
	switch f {
	case PNG:
		if dpi <= 0 {
			dpi = ScreenDPI
		}
		wPx := int(w/vg.Inch*vg.Length(dpi) + 0.5)
		hPx := int(h/vg.Inch*vg.Length(dpi) + 0.5)
		img, err := Render(p, wPx, hPx, dpi)
		if err != nil {
			return err
		}
		// Encode to memory first so a failed chart writes nothing.
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return fmt.Errorf("encode PNG: %w", err)
		}
		_, err = out.Write(buf.Bytes())
		return err
	case SVG:
		c = vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	case PDF:
		pc := vgpdf.New(w, h)
		pc.EmbedFonts(true)
		c = pdfCanvas{pc}
	default:
		return fmt.Errorf("export: unknown format %q: use png, svg or pdf", string(f))
	}
	if err := drawPlot(p, c); err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("write %s: %w", f, err)
	}
	_, err := out.Write(buf.Bytes())
	return err
}

// pdfCanvas works around a vgpdf bug (gonum/plot v0.17.0): it registers every font with
// fpdf under the style "" but selects bold and italic faces with the style "B" or "I", so
// the first bold title fails with "undefined font: liberationsans-bold B". Bold and italic
// faces are handed to vgpdf as distinct regular-style fonts (same glyphs and metrics, a
// name of their own), which it registers and selects consistently.
type pdfCanvas struct{ *vgpdf.Canvas }

func (c pdfCanvas) FillString(f font.Face, pt vg.Point, str string) {
	if f.Font.Weight != stdfont.WeightNormal || f.Font.Style != stdfont.StyleNormal {
		name := f.Font.Name() // e.g. "LiberationSans-Bold": unique per weight and style
		f.Font.Variant = font.Variant(strings.ReplaceAll(strings.TrimPrefix(name, string(f.Font.Typeface)), "-", ""))
		f.Font.Weight, f.Font.Style = stdfont.WeightNormal, stdfont.StyleNormal
	}
	c.Canvas.FillString(f, pt, str)
}
