package ui

import (
	"image/color"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sparkbench/plots"
)

// The window's theme: the user's choice in Preferences (the Bench section's Display card),
// "System" (the desktop's light or dark setting), "Dark" or "Light". Charts follow it: every
// ChartView draws in the theme's background and foreground (plots.Theme) and redraws when
// it changes. Exports and receipts keep the house style.

const prefTheme = "theme"

// ThemeChoices are the values of the theme preference, in the order the picker shows them.
var ThemeChoices = []string{"System", "Dark", "Light"}

// variantTheme is Fyne's default theme held to one variant.
type variantTheme struct {
	fyne.Theme
	v fyne.ThemeVariant
}

func (t variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, t.v)
}

// ApplyTheme sets the app's theme to a choice of ThemeChoices (anything else: System) and
// remembers it; charts redraw through the settings listener (watchTheme).
func ApplyTheme(a fyne.App, choice string) {
	switch choice {
	case "Dark":
		a.Settings().SetTheme(variantTheme{theme.DefaultTheme(), theme.VariantDark})
	case "Light":
		a.Settings().SetTheme(variantTheme{theme.DefaultTheme(), theme.VariantLight})
	default:
		choice = "System"
		a.Settings().SetTheme(theme.DefaultTheme())
	}
	a.Preferences().SetString(prefTheme, choice)
}

// newThemePicker is the Display card's theme choice, showing the saved one.
func newThemePicker(a fyne.App) *widget.Select {
	s := widget.NewSelect(ThemeChoices, nil)
	if a == nil {
		return s
	}
	s.SetSelected(a.Preferences().StringWithFallback(prefTheme, "System"))
	s.OnChanged = func(c string) { ApplyTheme(a, c) }
	return s
}

// chartThemeOf is the chart colours of the app's current theme: its background and
// foreground colours, dark when the background is.
func chartThemeOf(a fyne.App) *plots.Theme {
	if a == nil {
		return nil
	}
	s := a.Settings()
	th, v := s.Theme(), s.ThemeVariant()
	bg := th.Color(theme.ColorNameBackground, v)
	fg := th.Color(theme.ColorNameForeground, v)
	r, g, b, _ := bg.RGBA()
	dark := 0.2126*float64(r)+0.7152*float64(g)+0.0722*float64(b) < 0x7fff
	return &plots.Theme{Background: bg, Foreground: fg, Dark: dark}
}

// liveCharts are the open ChartViews, redrawn when the theme changes.
var liveCharts = struct {
	sync.Mutex
	set     map[*ChartView]struct{}
	watched map[fyne.App]bool
}{set: map[*ChartView]struct{}{}, watched: map[fyne.App]bool{}}

// watchTheme makes every open chart follow a's theme (once per app).
func watchTheme(a fyne.App) {
	if a == nil {
		return
	}
	liveCharts.Lock()
	defer liveCharts.Unlock()
	if liveCharts.watched[a] {
		return
	}
	liveCharts.watched[a] = true
	a.Settings().AddListener(func(fyne.Settings) {
		t := chartThemeOf(a)
		liveCharts.Lock()
		views := make([]*ChartView, 0, len(liveCharts.set))
		for c := range liveCharts.set {
			views = append(views, c)
		}
		liveCharts.Unlock()
		for _, c := range views {
			c.SetTheme(t)
		}
	})
}

func trackChart(c *ChartView, on bool) {
	liveCharts.Lock()
	defer liveCharts.Unlock()
	if on {
		liveCharts.set[c] = struct{}{}
	} else {
		delete(liveCharts.set, c)
	}
}
