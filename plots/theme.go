package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
)

// Theme draws a chart for the window rather than for a document: the chart's paper (white)
// becomes the window's background and its ink the window's foreground, so a chart in a dark
// window is not a white rectangle. Receipts and exports never use a Theme: they stay the
// house style, byte for byte.
//
// The mapping is applied to every colour the chart sets, at draw time, so no chart builder
// knows about themes:
//   - greys (saturation under 0.12) move along the line from Background (white) to
//     Foreground (the house ink, #222, and darker);
//   - on a dark theme, a colour that is very light (the pass/fail cell fills) or very dark
//     (warning notes) has its lightness mirrored, so it keeps its hue and its contrast;
//   - the Okabe–Ito series colours are kept (they are chosen to be told apart on either
//     background), except black, which is a grey and becomes the foreground.
type Theme struct {
	Background color.Color
	Foreground color.Color
	Dark       bool
}

// Map returns the colour c is drawn in under the theme (nil theme: c itself).
func (t *Theme) Map(c color.Color) color.Color {
	if t == nil || c == nil {
		return c
	}
	r, g, b, a := c.RGBA()
	if a == 0 {
		return c
	}
	h, s, l := hsl(float64(r)/0xffff, float64(g)/0xffff, float64(b)/0xffff)
	if s < 0.12 {
		// 1 at white (paper), 0 at the house ink (#222 has l = 0.133) and below.
		f := math.Max(0, math.Min(1, (l-0.133)/(1-0.133)))
		return mix(t.Foreground, t.Background, f, a)
	}
	if t.Dark && (l > 0.72 || l < 0.3) {
		l = 1 - l
		rr, gg, bb := rgb(h, s, l)
		return color.NRGBA{uint8(math.Round(rr * 255)), uint8(math.Round(gg * 255)), uint8(math.Round(bb * 255)), uint8(a >> 8)}
	}
	return c
}

// mix is a·(1−f) + b·f per channel, opaque unless alpha says otherwise.
func mix(a, b color.Color, f float64, alpha uint32) color.Color {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	ch := func(x, y uint32) uint8 { return uint8(math.Round((float64(x)*(1-f) + float64(y)*f) / 257)) }
	return color.NRGBA{ch(ar, br), ch(ag, bg), ch(ab, bb), uint8(alpha >> 8)}
}

func hsl(r, g, b float64) (h, s, l float64) {
	mx, mn := math.Max(r, math.Max(g, b)), math.Min(r, math.Min(g, b))
	l = (mx + mn) / 2
	if mx == mn {
		return 0, 0, l
	}
	d := mx - mn
	if l > 0.5 {
		s = d / (2 - mx - mn)
	} else {
		s = d / (mx + mn)
	}
	switch mx {
	case r:
		h = (g - b) / d
		if g < b {
			h += 6
		}
	case g:
		h = (b-r)/d + 2
	default:
		h = (r-g)/d + 4
	}
	return h / 6, s, l
}

func rgb(h, s, l float64) (r, g, b float64) {
	if s == 0 {
		return l, l, l
	}
	q := l * (1 + s)
	if l >= 0.5 {
		q = l + s - l*s
	}
	p := 2*l - q
	hue := func(t float64) float64 {
		switch {
		case t < 0:
			t++
		case t > 1:
			t--
		}
		switch {
		case t < 1.0/6:
			return p + (q-p)*6*t
		case t < 0.5:
			return q
		case t < 2.0/3:
			return p + (q-p)*(2.0/3-t)*6
		}
		return p
	}
	return hue(h + 1.0/3), hue(h), hue(h - 1.0/3)
}

// themedCanvas maps every colour set on the canvas through the theme (text, lines, fills
// and the plot's own background all go through SetColor).
type themedCanvas struct {
	vg.CanvasSizer
	t *Theme
}

func (c themedCanvas) SetColor(col color.Color) { c.CanvasSizer.SetColor(c.t.Map(col)) }

// themed wraps c when a theme is given.
func themed(c vg.CanvasSizer, t *Theme) vg.CanvasSizer {
	if t == nil {
		return c
	}
	return themedCanvas{c, t}
}
