package ui

import (
	"image"
	"strings"
	"sync"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/plots"
)

// ChartView shows a live chart: snapshots go to a plots.LiveRenderer (its own goroutine, at
// most 4 renders a second, latest wins, rendered at the displayed pixel size) and finished
// frames hop onto the UI goroutine here. Nothing is drawn inside a canvas.Raster generator.
type ChartView struct {
	Object fyne.CanvasObject
	Image  *canvas.Image
	Notes  *widget.Label
	// Frames receives the sequence number of each frame shown (tests wait on it).
	Frames chan uint64
	// ExportBtn, CSVBtn and JSONBtn are the chart's own buttons (chart_export.go).
	ExportBtn, CSVBtn, JSONBtn *widget.Button

	r      *plots.LiveRenderer
	closed atomic.Bool
	mu     sync.Mutex
	last   plots.Chart  // the chart last submitted (what the buttons export)
	w, h   int          // the render size in pixels
	theme  *plots.Theme // the window's colours (nil: the house style)
	hold   bool         // Hold: frames wait for ShowHeld (under mu, with held)
	held   *plots.Frame // the newest frame held
}

// NewChartView renders at w x h device pixels.
func NewChartView(w, h int) *ChartView {
	c := &ChartView{Notes: widget.NewLabel(""), Frames: make(chan uint64, 16), w: w, h: h}
	c.Notes.Wrapping = fyne.TextWrapWord
	c.Image = canvas.NewImageFromImage(image.NewRGBA(image.Rect(0, 0, 1, 1)))
	c.Image.FillMode = canvas.ImageFillContain
	c.Image.ScaleMode = canvas.ImageScaleFastest
	c.Image.SetMinSize(fyne.NewSize(float32(w), float32(h)))
	a := fyne.CurrentApp()
	watchTheme(a)
	c.theme = chartThemeOf(a)
	c.r = plots.NewLiveRenderer(plots.LiveOptions{WidthPx: w, HeightPx: h, MinInterval: chartInterval, Theme: c.theme}, func(f plots.Frame) {
		c.mu.Lock()
		if c.hold { // shown with the run view's next text update (ShowHeld)
			c.held = &f
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		onUI(func() {
			if !c.closed.Load() {
				c.show(f)
			}
		})
	})
	c.Object = container.NewBorder(c.exportBar(), c.Notes, nil, nil, c.Image)
	trackChart(c, true)
	return c
}

func (c *ChartView) show(f plots.Frame) {
	switch {
	case f.Err != nil:
		c.Notes.SetText("chart: " + f.Err.Error())
	default:
		c.Image.Image = f.Image
		c.Image.Refresh()
		c.Notes.SetText(strings.Join(f.Notes, "\n"))
	}
	select {
	case c.Frames <- f.Seq:
	default:
	}
}

// Show submits a new snapshot; it must not be changed afterwards.
func (c *ChartView) Show(ch plots.Chart) uint64 {
	c.mu.Lock()
	c.last = ch
	c.mu.Unlock()
	return c.r.Submit(ch)
}

// Resize renders at a new pixel size.
func (c *ChartView) Resize(w, h int) {
	c.mu.Lock()
	c.w, c.h = w, h
	c.mu.Unlock()
	c.r.Resize(w, h, 0)
}

// Hold makes finished frames wait for ShowHeld instead of being shown as they come: a run
// view shows its chart in the same repaint as its text updates (each repaint of the window
// costs CPU, under a software renderer most of the window's). Hold(false) shows the frame
// held, if any. UI goroutine.
func (c *ChartView) Hold(on bool) {
	c.mu.Lock()
	c.hold = on
	c.mu.Unlock()
	if !on {
		c.ShowHeld()
	}
}

// Clear shows nothing, with a note saying why (a comparison without charts).
func (c *ChartView) Clear(note string) {
	c.mu.Lock()
	c.last, c.held = nil, nil
	c.mu.Unlock()
	c.Image.Image = image.NewRGBA(image.Rect(0, 0, 1, 1))
	c.Image.Refresh()
	c.Notes.SetText(note)
}

// ShowHeld shows the newest frame held, if there is one. UI goroutine.
func (c *ChartView) ShowHeld() {
	c.mu.Lock()
	f := c.held
	c.held = nil
	c.mu.Unlock()
	if f != nil && !c.closed.Load() {
		c.show(*f)
	}
}

// SetTheme redraws the chart in a theme's colours (nil: the house style of receipts).
func (c *ChartView) SetTheme(t *plots.Theme) {
	c.mu.Lock()
	c.theme = t
	c.mu.Unlock()
	c.r.SetTheme(t)
}

// Theme is the colours the chart is drawn in.
func (c *ChartView) Theme() *plots.Theme {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.theme
}

// Close stops the renderer (idempotent); no frame is shown after it returns. It does not wait
// for the renderer to stop: Close runs on the UI goroutine (a window closing), and a frame
// being delivered at that moment waits for the UI goroutine — under Fyne's test driver, which
// runs fyne.Do inline, waiting here would deadlock.
func (c *ChartView) Close() {
	c.closed.Store(true)
	trackChart(c, false)
	go c.r.Close()
}
