package ui

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"sparkbench/plots"
)

// A chart's own buttons: Export writes the chart shown as PNG, SVG and PDF (each file starts as
// its format does, and the PNG is the receipt's rendering of the same input at the view's
// size); Copy CSV puts its points on the clipboard (plots.CSV of the same input) and Copy JSON
// its input, which decodes back to the same chart; before any chart, each says there is none.
func TestChartViewExportAndCopy(t *testing.T) {
	a := newTestApp(t)
	c := build(func() *ChartView { return NewChartView(640, 400) })
	defer c.Close()
	if err := c.ExportTo(filepath.Join(t.TempDir(), "x.png")); err == nil || !strings.Contains(err.Error(), "no chart yet") {
		t.Errorf("export before a chart: %v", err)
	}
	ch := plots.DepthChart{Metric: "tg32", Series: []plots.DepthSeries{{Label: "tiny",
		Points: []plots.DepthPoint{{Depth: 0, Mean: 900, SD: 10, N: 3}, {Depth: 256, Mean: 450, SD: 10, N: 3}}}}}
	c.Show(ch)
	dir := t.TempDir()
	for _, c2 := range []struct{ name, magic string }{{"d.png", "\x89PNG"}, {"d.svg", "<?xml"}, {"d.pdf", "%PDF-"}} {
		p := filepath.Join(dir, c2.name)
		if err := c.ExportTo(p); err != nil {
			t.Fatalf("%s: %v", c2.name, err)
		}
		b, _ := os.ReadFile(p)
		if !bytes.HasPrefix(b, []byte(c2.magic)) {
			t.Errorf("%s starts %q, want %q", c2.name, b[:min(8, len(b))], c2.magic)
		}
	}
	p, _ := ch.Plot()
	var want bytes.Buffer
	if err := plots.Export(p, plots.PNG, plots.Pixels(640), plots.Pixels(400), &want); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "d.png")); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the exported PNG is not the chart's rendering at 640x400")
	}
	if err := c.ExportTo(filepath.Join(dir, "d.jpg")); err == nil || !strings.Contains(err.Error(), ".png, .svg or .pdf") {
		t.Errorf("a .jpg: %v", err)
	}
	Locked(func() { test.Tap(c.CSVBtn) })
	wantCSV, _ := plots.CSV(ch)
	if got := a.Clipboard().Content(); got != string(wantCSV) || !strings.HasPrefix(got, "series,depth,mean") || c.Notes.Text != "copied to the clipboard" {
		t.Errorf("Copy CSV: %q (notes %q)", got, c.Notes.Text)
	}
	Locked(func() { test.Tap(c.JSONBtn) })
	var back plots.DepthChart
	if err := json.Unmarshal([]byte(a.Clipboard().Content()), &back); err != nil || back.Metric != "tg32" || len(back.Series[0].Points) != 2 {
		t.Errorf("Copy JSON: %v %+v", err, back)
	}
	// A chart without series of points says what to use instead.
	c.Show(plots.EnvelopeChart{})
	Locked(func() { test.Tap(c.CSVBtn) })
	if !strings.Contains(c.Notes.Text, "copy its JSON input instead") {
		t.Errorf("CSV of an envelope: notes %q", c.Notes.Text)
	}
}
