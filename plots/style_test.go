package plots

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The legend sits in the header band between the title and the data area, at every size:
// it never covers data.
func TestLegendNeverCoversData(t *testing.T) {
	for _, k := range Kinds() {
		for _, size := range [][2]int{{800, 500}, {MinWidthPx, MinHeightPx}, {1920, 1080}, {1200, 340}} {
			p, err := loadChart(t, k).Plot()
			if err != nil {
				t.Fatal(err)
			}
			c := vgimg.NewWith(vgimg.UseWH(Pixels(size[0]), Pixels(size[1])), vgimg.UseDPI(ScreenDPI))
			err = drawPlot(p, c)
			if err != nil && k == KindServingGoodput && size == [2]int{MinWidthPx, MinHeightPx} && strings.Contains(err.Error(), "make it larger") {
				// Its example's header (two candidates, three key entries, the knee caption) is
				// too busy for the smallest size: the designed refusal, never overlap.
				continue
			}
			if err != nil {
				t.Fatalf("%s %v: %v", k, size, err)
			}
			h := headerOf(p)
			da := p.DataCanvas(draw.Crop(draw.New(c), canvasMargin, -canvasMargin, canvasMargin, -canvasMargin))
			if bottom := h.drawnTop - h.lay.height; bottom < da.Max.Y-vg.Points(0.5) {
				t.Errorf("%s at %v: header bottom %.1f pt is below the data area's top %.1f pt", k, size, bottom, da.Max.Y)
			}
			_, fullH := c.Size()
			if titleBottom := fullH - canvasMargin - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y; h.drawnTop > titleBottom+vg.Points(0.5) {
				t.Errorf("%s at %v: header top %.1f pt overlaps the title (bottom %.1f pt)", k, size, h.drawnTop, titleBottom)
			}
		}
	}
}

// Colour and marker together tell 56 series apart, and neighbours never share a colour or
// a shape.
func TestSeriesStylesDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := range 56 {
		c, s := seriesStyle(i)
		key := fmt.Sprint(c, s)
		if j, dup := seen[key]; dup {
			t.Fatalf("series %d and %d share colour and marker", j, i)
		}
		seen[key] = i
		if i > 0 {
			pc, ps := seriesStyle(i - 1)
			if pc == c || ps == s {
				t.Errorf("series %d and %d share a colour or a shape", i-1, i)
			}
		}
	}
}
