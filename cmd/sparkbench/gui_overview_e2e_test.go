package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
)

// TestWindowOverviewOnRealStudies: two small studies on the real llama-bench (-t 1, depths 0
// and 256; study A tiny-llama-f32, study B tiny-llama-f16). The window primes the overview at
// start; the Overview section lists one badge row per model with the d0 and deep values the
// rows hold (as `export` prints them, not from the overview's code) and the rows they came
// from, and the ladder's groups. A line that is not a positive number shows the service's
// refusal and no table.
func TestWindowOverviewOnRealStudies(t *testing.T) {
	loc := llamatest.Binaries(t)
	f32, f16 := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-llama-f16.gguf")
	var nbPath, a, b string
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		nbPath = filepath.Join(dir, "notebook.db")
		a = registerAndRun(t, nbPath, writeOverviewPlan(t, dir, "window overview A", [][3]string{{"tiny", f32, tinySHA}}), loc.Dir, true)
		b = registerAndRun(t, nbPath, writeOverviewPlan(t, dir, "window overview B", [][3]string{{"f16", f16, tinyF16SHA}}), loc.Dir, true)
		if flagged := flaggedLegs(t, nbPath, a, b); len(flagged) == 0 {
			break
		} else if attempt == cvAttempts {
			t.Fatalf("rows flagged by the CV gate in each of %d runs (a busy machine): %v", cvAttempts, flagged)
		}
	}
	want := []struct {
		model, study string
		d0, deep     string
		rows         []string
	}{}
	for _, w := range []struct{ model, study, file string }{{"f16", b, "tiny-llama-f16.gguf"}, {"tiny", a, "tiny-llama-f32.gguf"}} {
		cells := exportedTG(t, nbPath, w.study)[w.file]
		d0, deep := cells[0], cells[256]
		want = append(want, struct {
			model, study string
			d0, deep     string
			rows         []string
		}{w.model, w.study, fmt.Sprintf("%.2f", d0.TS), fmt.Sprintf("%.2f @256", deep.TS), []string{d0.Leg + " " + d0.Row, deep.Leg + " " + deep.Row}})
	}

	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	var fa fyne.App
	ui.Locked(func() { fa = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(fa, ui.Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{Machine: "test machine"} },
			Studies: studyService{nb: nb, llamaDir: loc.Dir, dataDir: filepath.Join(filepath.Dir(nbPath), "data")}, Overview: newOverviewService(nb)})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	ov := wb.Overview
	// Primed at start, with the CLI's defaults (line 70: the tiny models pass it everywhere).
	waitFor(t, "the primed overview", func() bool { return ov.Result != nil && !ov.ShowBt.Disabled() })
	ui.Locked(func() {
		if ov.Line.Text != "70" || ov.Test.Text != "tg" || ov.Deep.Text != "8192" {
			t.Errorf("entries %q %q %q, want the CLI's defaults 70 tg 8192", ov.Line.Text, ov.Test.Text, ov.Deep.Text)
		}
		lines := ov.BadgeLines()
		if len(lines) != len(want)+1 || !strings.HasPrefix(lines[0], "model") || !strings.Contains(lines[0], "badge death") {
			t.Fatalf("badge lines %q", lines)
		}
		for i, w := range want {
			got := strings.Fields(lines[i+1])
			if len(got) < 8 || got[0] != w.model || got[1] != "tg128" || got[2] != "CPU" || got[3] != w.study || got[4] != w.d0 ||
				got[5]+" "+got[6] != w.deep || got[7] != "earned" ||
				!strings.Contains(lines[i+1], "undecided: not measured at 8192 (nearest measured depth 256)") || !strings.Contains(lines[i+1], "beyond the deepest measured depth") {
				// d0 earns it; the both-depths badge is decided at 8192 only, which the studies did not measure
				t.Errorf("badge row %d: %q, want %s study %s d0 %s deep %s earned, undecided: not measured at 8192 (nearest measured depth 256)", i, lines[i+1], w.model, w.study, w.d0, w.deep)
			}
			src := ov.Result.Badges.Sources[i]
			for _, r := range w.rows {
				if !strings.Contains(src, r) {
					t.Errorf("row %d sources %q lack %q", i, src, r)
				}
			}
		}
		ladder := ov.LadderLines()
		if len(ladder) != 3 || !strings.Contains(ladder[1], "llama") || !strings.Contains(ladder[1]+ladder[2], "ALL_F32") || !strings.Contains(ladder[1]+ladder[2], "MOSTLY_F16") {
			t.Errorf("ladder lines %q", ladder)
		}
		// A row shows the rows it came from.
		ov.Badges.Select(2)
		if !strings.Contains(ov.Detail.Text, "from: tiny") || !strings.Contains(ov.Detail.Text, want[1].rows[0]) {
			t.Errorf("detail of the tiny row: %q", ov.Detail.Text)
		}
	})
	waitFor(t, "the recent studies", func() bool { return strings.Contains(ov.Recent.Text, "window overview B") })
	ui.Locked(func() {
		if !strings.Contains(ov.Recent.Text, "complete") || !strings.Contains(ov.Machine.Text, "test machine") {
			t.Errorf("recent %q machine %q", ov.Recent.Text, ov.Machine.Text)
		}
	})

	// The overview's receipt from the window: written with the section's machine line,
	// verified byte for byte, the same badge rows the section shows.
	out := filepath.Join(t.TempDir(), "overview-receipt")
	done := make(chan error, 1)
	ui.Locked(func() { ov.ExportReceipt(out, func(err error) { done <- err }) })
	if err := <-done; err != nil {
		t.Fatalf("window receipt: %v", err)
	}
	if code, stdout, errOut := runCLI("verify", out); code != 0 || !strings.Contains(stdout+errOut, "overview.md re-made from overview.json byte for byte") {
		t.Fatalf("verify the window's receipt: %d\n%s%s", code, stdout, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(out, workbench.FileOverview)); !strings.Contains(string(b), `"machine":"test machine"`) {
		t.Errorf("the window's receipt lacks the machine line: %.300s", b)
	}
	ui.Locked(func() {
		if !strings.HasPrefix(ov.Status.Text, "wrote the overview's receipt to "+out) {
			t.Errorf("status %q", ov.Status.Text)
		}
	})

	// A bad line: the service's refusal, not a crash, and no stale table.
	for _, line := range []string{"-5", "fast"} {
		ui.Locked(func() {
			ov.Line.SetText(line)
			test.Tap(ov.ShowBt)
		})
		waitFor(t, "the refusal of line "+line, func() bool { return !ov.ShowBt.Disabled() })
		ui.Locked(func() {
			if !strings.HasPrefix(ov.Status.Text, "no overview: line ") || !strings.Contains(ov.Status.Text, "want a positive number of tokens per second") ||
				ov.Result != nil || len(ov.BadgeLines()) != 0 {
				t.Errorf("line %q: status %q, result %v", line, ov.Status.Text, ov.Result)
			}
		})
	}
}
