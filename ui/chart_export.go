package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/plots"
)

// A chart's own buttons (docs/window.md, "Charts"): Export… writes the chart shown as PNG, SVG
// or PDF (the format from the file name, at the view's size, drawn as receipts draw it), Copy
// CSV puts its points on the clipboard (plots.CSV: one row per point, from the same input the
// chart drew), Copy JSON its input as `sparkbench plot --kind K --data` reads it.

func (c *ChartView) exportBar() fyne.CanvasObject {
	c.ExportBtn = widget.NewButton("Export…", c.exportDialog)
	c.CSVBtn = widget.NewButton("Copy CSV", func() { c.report(c.CopyCSV()) })
	c.JSONBtn = widget.NewButton("Copy JSON", func() { c.report(c.CopyJSON()) })
	return container.NewHBox(c.ExportBtn, c.CSVBtn, c.JSONBtn)
}

// Chart is the chart last shown (nil before one).
func (c *ChartView) Chart() plots.Chart {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// ExportTo writes the chart shown to path, in the format its extension names.
func (c *ChartView) ExportTo(path string) error {
	ch := c.Chart()
	if ch == nil {
		return fmt.Errorf("no chart yet: export once it is drawn")
	}
	f, err := plots.FormatOf(path)
	if err != nil {
		return err
	}
	p, err := ch.Plot()
	if err != nil {
		return err
	}
	c.mu.Lock()
	w, h := max(c.w, plots.MinWidthPx), max(c.h, plots.MinHeightPx)
	c.mu.Unlock()
	var b bytes.Buffer
	if err := plots.Export(p, f, plots.Pixels(w), plots.Pixels(h), &b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// CopyCSV puts the chart's points on the clipboard as CSV.
func (c *ChartView) CopyCSV() error {
	ch := c.Chart()
	if ch == nil {
		return fmt.Errorf("no chart yet")
	}
	b, err := plots.CSV(ch)
	if err != nil {
		return err
	}
	fyne.CurrentApp().Clipboard().SetContent(string(b))
	return nil
}

// CopyJSON puts the chart's input on the clipboard, as `sparkbench plot --data` reads it.
func (c *ChartView) CopyJSON() error {
	ch := c.Chart()
	if ch == nil {
		return fmt.Errorf("no chart yet")
	}
	b, err := json.MarshalIndent(ch, "", "  ")
	if err != nil {
		return err
	}
	fyne.CurrentApp().Clipboard().SetContent(string(b) + "\n")
	return nil
}

// report shows what a button did in the chart's notes line.
func (c *ChartView) report(err error) {
	if err != nil {
		c.Notes.SetText("chart: " + err.Error())
		return
	}
	c.Notes.SetText("copied to the clipboard")
}

// exportDialog asks where to write the chart (.png, .svg or .pdf).
func (c *ChartView) exportDialog() {
	win := windowOf(c.Object)
	if win == nil || c.Chart() == nil {
		c.report(fmt.Errorf("no chart to export yet"))
		return
	}
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		path := wc.URI().Path()
		_ = wc.Close()
		if err := c.ExportTo(path); err != nil {
			_ = os.Remove(path)
			dialog.ShowError(err, win)
			return
		}
		c.Notes.SetText("exported " + path)
	}, win)
	d.SetFileName(string(c.Chart().Kind()) + ".png")
	d.Show()
}

// windowOf is the window showing o (nil when none does).
func windowOf(o fyne.CanvasObject) fyne.Window {
	app := fyne.CurrentApp()
	if app == nil {
		return nil
	}
	cv := app.Driver().CanvasForObject(o)
	for _, w := range app.Driver().AllWindows() {
		if w.Canvas() == cv {
			return w
		}
	}
	return nil
}
