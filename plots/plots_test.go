package plots

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/cmpimg"
)

var update = flag.Bool("update", false, "rewrite the golden images in testdata/golden")

// Golden images are drawn at the default window size.
const goldenW, goldenH = 800, 500

// goldenDelta is cmpimg's per-pixel tolerance (YIQ distance, 0 exact .. 1 anything): enough
// for anti-aliasing differences between CPUs and Go versions, far too little for a moved
// line, a missing marker or changed text.
const goldenDelta = 0.08

func loadChart(t testing.TB, kind Kind) Chart {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", string(kind)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Decode(kind, f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func exportBytes(t testing.TB, p *plot.Plot, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(p, f, Pixels(goldenW), Pixels(goldenH), &buf); err != nil {
		t.Fatalf("export %s: %v", f, err)
	}
	return buf.Bytes()
}

// checkGolden compares a PNG with testdata/golden/name.png, or rewrites it with -update. On
// a mismatch the image and a difference image are left in the temp folder for a look.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".png")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./plots -run Golden -update` to create it)", err)
	}
	ok, err := cmpimg.EqualApprox("png", got, want, goldenDelta)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return
	}
	dir := filepath.Join(os.TempDir(), "sparkbench-plots-golden")
	_ = os.MkdirAll(dir, 0o755)
	gotPath := filepath.Join(dir, name+".got.png")
	_ = os.WriteFile(gotPath, got, 0o644)
	a, _ := png.Decode(bytes.NewReader(got))
	b, _ := png.Decode(bytes.NewReader(want))
	if a != nil && b != nil && a.Bounds() == b.Bounds() {
		diff := image.NewRGBA(a.Bounds())
		cmpimg.Diff(diff, a, b)
		var buf bytes.Buffer
		_ = png.Encode(&buf, diff)
		_ = os.WriteFile(filepath.Join(dir, name+".diff.png"), buf.Bytes(), 0o644)
	}
	t.Errorf("%s differs from %s; got %s (diff beside it); if the change is intended, rerun with -update and look at the image", name, path, gotPath)
}

// TestGolden draws every chart kind from the example data in testdata and compares the
// PNG with the reviewed image.
func TestGolden(t *testing.T) {
	for _, k := range Kinds() {
		t.Run(string(k), func(t *testing.T) {
			c := loadChart(t, k)
			if c.Kind() != k {
				t.Fatalf("Kind() = %q", c.Kind())
			}
			p, err := c.Plot()
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, string(k), exportBytes(t, p, PNG))
		})
	}
}

// TestExportDeterministic exports every kind twice in each format, from two separately
// built plots, and wants the same bytes: receipts are compared byte for byte.
func TestExportDeterministic(t *testing.T) {
	for _, k := range Kinds() {
		for _, f := range []Format{PNG, SVG, PDF} {
			t.Run(string(k)+"/"+string(f), func(t *testing.T) {
				c := loadChart(t, k)
				p1, err := c.Plot()
				if err != nil {
					t.Fatal(err)
				}
				p2, _ := c.Plot()
				a, b := exportBytes(t, p1, f), exportBytes(t, p2, f)
				if !bytes.Equal(a, b) {
					t.Fatalf("two exports differ (%d and %d bytes)", len(a), len(b))
				}
				if c := exportBytes(t, p1, f); !bytes.Equal(a, c) { // the same plot drawn again
					t.Fatalf("re-drawing the same plot changed the bytes")
				}
			})
		}
	}
}

func TestExportFormats(t *testing.T) {
	p, err := loadChart(t, KindDepth).Plot()
	if err != nil {
		t.Fatal(err)
	}
	svg := string(exportBytes(t, p, SVG))
	if !strings.Contains(svg, "@font-face") || !strings.Contains(svg, "Liberation Sans") {
		t.Error("SVG does not embed the Liberation Sans font")
	}
	pdf := exportBytes(t, p, PDF)
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Fatal("not a PDF")
	}
	for _, want := range []string{"/CreationDate (D:20000101000000)", "/ModDate (D:20000101000000)", "/FontFile2"} {
		if !bytes.Contains(pdf, []byte(want)) {
			t.Errorf("PDF lacks %q", want)
		}
	}
	img, err := png.Decode(bytes.NewReader(exportBytes(t, p, PNG)))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != goldenW || b.Dy() != goldenH {
		t.Errorf("PNG is %v, want %dx%d", b, goldenW, goldenH)
	}
	var hi bytes.Buffer
	if err := ExportDPI(p, PNG, Pixels(goldenW), Pixels(goldenH), 192, &hi); err != nil {
		t.Fatal(err)
	}
	if img, _ := png.Decode(&hi); img == nil || img.Bounds().Dx() != 2*goldenW {
		t.Errorf("PNG at 192 dpi is not twice as wide")
	}
	if err := Export(p, Format("gif"), Pixels(goldenW), Pixels(goldenH), &hi); err == nil {
		t.Error("gif: no error")
	}
	if err := Export(p, PNG, Pixels(100), Pixels(100), &hi); err == nil {
		t.Error("100x100 px: no error")
	}
	for path, want := range map[string]Format{"a.png": PNG, "b.SVG": SVG, "c.pdf": PDF} {
		if got, err := FormatOf(path); err != nil || got != want {
			t.Errorf("FormatOf(%q) = %q, %v", path, got, err)
		}
	}
	if _, err := FormatOf("chart.jpg"); err == nil {
		t.Error("FormatOf(.jpg): no error")
	}
}

func TestRenderSizeAndDPI(t *testing.T) {
	p, err := loadChart(t, KindSlots).Plot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ w, h, dpi int }{{800, 500, 96}, {1600, 1000, 192}, {640, 400, 0}, {1201, 751, 144}} {
		img, err := Render(p, tc.w, tc.h, tc.dpi)
		if err != nil {
			t.Fatal(err)
		}
		if img.Bounds().Dx() != tc.w || img.Bounds().Dy() != tc.h {
			t.Errorf("Render(%d, %d, %d) = %v", tc.w, tc.h, tc.dpi, img.Bounds())
		}
	}
	if _, err := Render(p, 100, 80, 96); err == nil {
		t.Error("too small: no error")
	}
	if _, err := Render(nil, 800, 500, 96); err == nil {
		t.Error("nil plot: no error")
	}
}

func TestDecode(t *testing.T) {
	if _, err := Decode("pie", strings.NewReader("{}")); err == nil || !strings.Contains(err.Error(), "depth, slots") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Decode(KindDepth, strings.NewReader(`{"serie": []}`)); err == nil || !strings.Contains(err.Error(), `unknown field "serie"`) {
		t.Errorf("misspelt field: %v", err)
	}
	if _, err := Decode(KindDepth, strings.NewReader(`{} {}`)); err == nil {
		t.Error("two values: no error")
	}
	c, err := Decode(KindEnvelope, strings.NewReader(`{"grid": {"slots": [1], "clients": [1], "cells": [[{"pass": true, "rate": 35.1}]], "selected": [1, 1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if g := c.(EnvelopeChart).Grid; g.Selected == nil || *g.Selected != [2]int{1, 1} {
		t.Errorf("selected = %v", g.Selected)
	}
}
