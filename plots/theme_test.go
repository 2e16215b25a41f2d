package plots

import (
	"bytes"
	"image"
	"image/color"
	"testing"
)

var (
	testDark  = &Theme{Background: color.NRGBA{0x17, 0x17, 0x18, 0xFF}, Foreground: color.NRGBA{0xF3, 0xF3, 0xF3, 0xFF}, Dark: true}
	testLight = &Theme{Background: color.NRGBA{0xFF, 0xFF, 0xFF, 0xFF}, Foreground: color.NRGBA{0x1E, 0x1E, 0x1E, 0xFF}}
)

func nrgba(c color.Color) color.NRGBA { return color.NRGBAModel.Convert(c).(color.NRGBA) }

func luma(c color.Color) float64 {
	n := nrgba(c)
	return 0.2126*float64(n.R) + 0.7152*float64(n.G) + 0.0722*float64(n.B)
}

// The mapping: paper becomes the background, ink the foreground, the series colours stay
// (black becomes the foreground), and on a dark theme light cell fills become dark fills of
// the same hue and dark warning text becomes light.
func TestThemeMapsColours(t *testing.T) {
	if got := nrgba(testDark.Map(color.White)); got != nrgba(testDark.Background) {
		t.Errorf("white on dark = %v, want the background %v", got, testDark.Background)
	}
	if got := nrgba(testDark.Map(colInk)); got != nrgba(testDark.Foreground) {
		t.Errorf("ink on dark = %v, want the foreground %v", got, testDark.Foreground)
	}
	if got := nrgba(testDark.Map(palette[6])); got != nrgba(testDark.Foreground) {
		t.Errorf("black series on dark = %v, want the foreground", got)
	}
	for i, c := range palette {
		if i == 6 {
			continue
		}
		if got := nrgba(testDark.Map(c)); got != c && i != 7 {
			t.Errorf("palette %d on dark = %v, want it unchanged (%v)", i, got, c)
		}
	}
	grid := luma(testDark.Map(colGrid))
	if bg, fg := luma(testDark.Background), luma(testDark.Foreground); grid <= bg || grid >= (bg+fg)/2 {
		t.Errorf("grid on dark has luma %.0f; want it just above the background (%.0f), far from the ink (%.0f)", grid, bg, fg)
	}
	for _, fill := range []color.Color{colPassFill, colFailFill} {
		if l := luma(testDark.Map(fill)); l > 90 {
			t.Errorf("cell fill %v on dark has luma %.0f: still a light patch", fill, l)
		}
	}
	if l := luma(testDark.Map(colNote)); l < 140 {
		t.Errorf("note colour on dark has luma %.0f: unreadable", l)
	}
	var nilTheme *Theme
	if nilTheme.Map(colInk) != colInk {
		t.Error("a nil theme changes colours")
	}
	if got := nrgba(testLight.Map(colFailFill)); got != colFailFill {
		t.Errorf("a light theme changes a cell fill: %v", got)
	}
}

// A themed render has the theme's background where the chart had white, and the house
// render (Render, what exports use) is unchanged by the theme code: nil is byte-identical.
func TestRenderThemed(t *testing.T) {
	for _, k := range []Kind{KindDepth, KindSlots, KindEnvelope} {
		p, err := loadChart(t, k).Plot()
		if err != nil {
			t.Fatal(err)
		}
		house, err := Render(p, 640, 400, ScreenDPI)
		if err != nil {
			t.Fatal(err)
		}
		p2, _ := loadChart(t, k).Plot()
		plain, err := RenderThemed(p2, 640, 400, ScreenDPI, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(house.Pix, plain.Pix) {
			t.Errorf("%s: RenderThemed(nil) differs from Render", k)
		}
		p3, _ := loadChart(t, k).Plot()
		dark, err := RenderThemed(p3, 640, 400, ScreenDPI, testDark)
		if err != nil {
			t.Fatal(err)
		}
		if got := nrgba(dark.At(2, 2)); got != nrgba(testDark.Background) {
			t.Errorf("%s: dark corner %v, want the background %v", k, got, testDark.Background)
		}
		if got := nrgba(house.At(2, 2)); got != (color.NRGBA{0xFF, 0xFF, 0xFF, 0xFF}) {
			t.Errorf("%s: house corner %v, want white", k, got)
		}
		if n := countNear(dark, color.NRGBA{0xFF, 0xFF, 0xFF, 0xFF}); n > 0 {
			t.Errorf("%s: %d white pixels left on the dark chart", k, n)
		}
		if n := countNear(dark, nrgba(testDark.Foreground)); n < 200 {
			t.Errorf("%s: only %d pixels in the foreground colour: text and axes are not drawn in it", k, n)
		}
	}
}

func countNear(img *image.RGBA, c color.NRGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if nrgba(img.At(x, y)) == c {
				n++
			}
		}
	}
	return n
}

// SetTheme redraws the newest chart in the new colours.
func TestLiveRendererSetThemeRedraws(t *testing.T) {
	l := newFrameLog()
	r := NewLiveRenderer(LiveOptions{WidthPx: 500, HeightPx: 320, MinInterval: 1}, l.deliver)
	defer r.Close()
	seq := r.Submit(loadChart(t, KindDepth))
	f := l.waitSeq(t, seq)
	if f.Err != nil || nrgba(f.Image.At(1, 1)) != (color.NRGBA{0xFF, 0xFF, 0xFF, 0xFF}) {
		t.Fatalf("first frame: err %v, corner %v", f.Err, f.Image.At(1, 1))
	}
	r.SetTheme(testDark)
	f = l.waitSeq(t, seq)
	if f.Err != nil || nrgba(f.Image.At(1, 1)) != nrgba(testDark.Background) {
		t.Fatalf("after SetTheme(dark): err %v, corner %v", f.Err, f.Image.At(1, 1))
	}
	r.SetTheme(nil)
	f = l.waitSeq(t, seq)
	if nrgba(f.Image.At(1, 1)) != (color.NRGBA{0xFF, 0xFF, 0xFF, 0xFF}) {
		t.Fatalf("after SetTheme(nil): corner %v", f.Image.At(1, 1))
	}
}
