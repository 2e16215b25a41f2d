package ui

import (
	"context"
	"image/color"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"sparkbench/app"
	"sparkbench/plots"
)

func nrgbaOf(c color.Color) color.NRGBA { return color.NRGBAModel.Convert(c).(color.NRGBA) }

// waitCorner waits until the chart shows a frame whose corner pixel is want.
func waitCorner(t *testing.T, c *ChartView, want color.Color, what string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var got color.NRGBA
	for {
		Locked(func() {
			if img := c.Image.Image; img != nil && img.Bounds().Dx() > 2 {
				got = nrgbaOf(img.At(1, 1))
			}
		})
		if got == nrgbaOf(want) {
			return
		}
		select {
		case <-c.Frames:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: the chart's corner is %v, want %v", what, got, nrgbaOf(want))
		}
	}
}

// The theme picker in the Display card (Preferences) switches the window between dark and
// light, remembers the choice, and every open chart redraws in the new background and
// foreground; the chart's exports stay the house style (white paper).
func TestThemeSwitchRedrawsCharts(t *testing.T) {
	a := newTestApp(t)
	var wb *Workbench
	Locked(func() {
		wb = NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }})
	})
	waitChecked(t, wb.Bench)
	chart := wb.Studies.Chart
	Locked(func() {
		chart.Show(&plots.DepthChart{Metric: "tg32", RefLine: 5000, Series: []plots.DepthSeries{{Label: "tiny",
			Points: []plots.DepthPoint{{Depth: 0, Mean: 9000, N: 1}, {Depth: 256, Mean: 6000, N: 1}}}}})
	})
	for _, choice := range []string{"Light", "Dark", "Light"} {
		Locked(func() { wb.Bench.ThemePick.SetSelected(choice) })
		v := theme.VariantLight
		if choice == "Dark" {
			v = theme.VariantDark
		}
		bg := theme.DefaultTheme().Color(theme.ColorNameBackground, v)
		waitCorner(t, chart, bg, choice)
		th := chart.Theme()
		if th == nil || th.Dark != (choice == "Dark") || nrgbaOf(th.Foreground) != nrgbaOf(theme.DefaultTheme().Color(theme.ColorNameForeground, v)) {
			t.Fatalf("%s: chart theme %+v", choice, th)
		}
		if got := a.Preferences().String(prefTheme); got != choice {
			t.Errorf("preference = %q, want %q", got, choice)
		}
		if got := nrgbaOf(a.Settings().Theme().Color(theme.ColorNameBackground, theme.VariantLight)); got != nrgbaOf(bg) {
			t.Errorf("%s: the window's background is %v, want %v", choice, got, nrgbaOf(bg))
		}
	}
	// A new window on the same preferences starts in the saved theme.
	Locked(func() { wb.Bench.ThemePick.SetSelected("Dark") })
	Locked(func() { test.NewApp() })
	b := newTestApp(t)
	b.Preferences().SetString(prefTheme, "Dark")
	var wb2 *Workbench
	Locked(func() {
		wb2 = NewWorkbench(b, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }})
	})
	waitChecked(t, wb2.Bench)
	if th := wb2.Studies.Chart.Theme(); th == nil || !th.Dark {
		t.Errorf("a window opened with the Dark preference draws charts in %+v", th)
	}
	if wb2.Bench.ThemePick.Selected != "Dark" {
		t.Errorf("the picker shows %q", wb2.Bench.ThemePick.Selected)
	}
}
