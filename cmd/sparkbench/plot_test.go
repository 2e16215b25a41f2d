package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/plots"
)

func runPlot(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cmdPlot(args, &o, &e)
	return code, o.String(), e.String()
}

func plotData(kind plots.Kind) string {
	return filepath.Join("..", "..", "plots", "testdata", string(kind)+".json")
}

// Every kind, every format, from the example data in plots/testdata.
func TestPlotWritesEveryKindAndFormat(t *testing.T) {
	dir := t.TempDir()
	for _, k := range plots.Kinds() {
		for _, ext := range []string{"png", "svg", "pdf"} {
			out := filepath.Join(dir, string(k)+"."+ext)
			code, stdout, stderr := runPlot("--kind", string(k), "--data", plotData(k), "--out", out)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", k, ext, code, stderr)
			}
			if !strings.Contains(stdout, "wrote "+out) {
				t.Errorf("%s %s: stdout %q", k, ext, stdout)
			}
			b, err := os.ReadFile(out)
			if err != nil || len(b) == 0 {
				t.Fatalf("%s: %v (%d bytes)", out, err, len(b))
			}
			switch ext {
			case "png":
				img, err := png.Decode(bytes.NewReader(b))
				if err != nil || img.Bounds().Dx() != 800 || img.Bounds().Dy() != 500 {
					t.Errorf("%s: %v %v", out, err, img.Bounds())
				}
			case "svg":
				if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("@font-face")) {
					t.Errorf("%s: not an SVG with embedded fonts", out)
				}
			case "pdf":
				if !bytes.HasPrefix(b, []byte("%PDF-")) {
					t.Errorf("%s: not a PDF", out)
				}
			}
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")) // atomicfile's temporary files are hidden
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestPlotSizeDPIAndDeterminism(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	for _, out := range []string{a, b} {
		if code, _, stderr := runPlot("--kind", "slots", "--data", plotData(plots.KindSlots), "--out", out, "--width", "640", "--height", "400", "--dpi", "192"); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ba, bb) {
		t.Error("the same data gave different PNG bytes")
	}
	img, err := png.Decode(bytes.NewReader(ba))
	if err != nil || img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
		t.Errorf("640x400 at 192 dpi: %v %v", err, img.Bounds())
	}
}

func TestPlotPrintsNotes(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "grid.json")
	os.WriteFile(data, []byte(`{"grid": {"candidate": "Q8", "slots": [1], "clients": [1, 2],
		"cells": [[{"pass": false, "rate": 35.1, "e2e_p95_ms": 9000, "ttft_p95_ms": 4000, "failures": ["forward:ttft_ms_p95_above_maximum"]}]]}}`), 0o644)
	code, _, stderr := runPlot("--kind", "envelope", "--data", data, "--out", filepath.Join(dir, "g.svg"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"note: no result for P1/C2", "note: no cell passes every gate", "note: title lacks the model, build and machine"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// Bad usage and bad input exit 2 with one line that says what to do.
func TestPlotBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"metric": "tg128", "seriess": []}`), 0o644)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"metric": `), 0o644)
	badOpt := filepath.Join(dir, "opt.json")
	os.WriteFile(badOpt, []byte(`{"interval": "iqr"}`), 0o644)
	depth := plotData(plots.KindDepth)
	out := filepath.Join(dir, "x.png")

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"study without a notebook", []string{"my-study", "--kind", "depth", "--out", out, "--notebook", filepath.Join(dir, "absent.db")}, []string{"absent.db", "no such file"}},
		{"study with data", []string{"my-study", "--kind", "depth", "--data", depth, "--out", out}, []string{"give a STUDY or --data FILE.json, not both"}},
		{"two studies", []string{"a", "b", "--kind", "depth"}, []string{"at most one STUDY"}},
		{"no kind", []string{"--data", depth, "--out", out}, []string{"--kind is required", "depth, slots, latency, envelope, ubatch, repeatability"}},
		{"unknown kind", []string{"--kind", "pie", "--data", depth, "--out", out}, []string{`unknown chart kind "pie"`}},
		{"no data", []string{"--kind", "depth", "--out", out}, []string{"give a STUDY (id or name) or --data FILE.json"}},
		{"no out", []string{"--kind", "depth", "--data", depth}, []string{"--out FILE.png|svg|pdf is required"}},
		{"bad extension", []string{"--kind", "depth", "--data", depth, "--out", filepath.Join(dir, "x.jpg")}, []string{`unknown image format ".jpg"`, ".png, .svg or .pdf"}},
		{"too small", []string{"--kind", "depth", "--data", depth, "--out", out, "--width", "100"}, []string{"too small", "400×260"}},
		{"bad dpi", []string{"--kind", "depth", "--data", depth, "--out", out, "--dpi", "0"}, []string{"--dpi 0 is out of range"}},
		{"missing file", []string{"--kind", "depth", "--data", filepath.Join(dir, "absent.json"), "--out", out}, []string{"absent.json", "no such file"}},
		{"unknown field", []string{"--kind", "depth", "--data", bad, "--out", out}, []string{`unknown field "seriess"`, "docs/plots.md"}},
		{"broken json", []string{"--kind", "depth", "--data", broken, "--out", out}, []string{"broken.json", "unexpected EOF"}},
		{"bad option", []string{"--kind", "depth", "--data", badOpt, "--out", out}, []string{`unknown interval "iqr"`}},
		{"wrong kind for data", []string{"--kind", "envelope", "--data", depth, "--out", out}, []string{"unknown field"}},
		{"unknown flag", []string{"--bogus"}, []string{"flag provided but not defined: -bogus"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runPlot(c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if c.name != "unknown flag" {
				if lines := strings.Count(strings.TrimRight(stderr, "\n"), "\n") + 1; lines != 1 {
					t.Errorf("%d lines on stderr, want 1: %q", lines, stderr)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run wrote the output file")
	}
}

func TestPlotUnwritableOutputExitsOne(t *testing.T) {
	out := filepath.Join(t.TempDir(), "no-such-dir", "x.png")
	code, _, stderr := runPlot("--kind", "depth", "--data", plotData(plots.KindDepth), "--out", out)
	if code != 1 || !strings.Contains(stderr, "no-such-dir") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
