package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/bundle"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
)

// withPrediction adds a band prediction P1 on the plan's tg at depth 0 to a plan file.
func withPrediction(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatal(err)
	}
	plan["predictions"] = []any{map[string]any{"id": "P1", "text": "tg at d0 above 100 t/s", "kind": "band",
		"about": map[string]any{"figure": "cell", "model": "m", "test": "tg", "depth": 0}, "lo": 100}}
	if data, err = json.Marshal(plan); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestWindowComparesTwoRealStudies runs two small studies of the same model on the real
// llama-bench and compares them in the Compare section (Fyne's test driver): every shared cell
// with the delta word `study compare --json` gives, the overlaid depth curves drawn, the verdict
// line of their shared prediction; the comparison exported as a receipt that `sparkbench
// verify` accepts and that fails once its Markdown is edited; a study that shares no cell with
// the baseline is refused with the reason.
func TestWindowComparesTwoRealStudies(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nbPath := filepath.Join(dir, "notebook.db")
	base := registerAndRun(t, nbPath, withPrediction(t, writeSmallPlan(t, dir, "window compare base", tiny, tinySHA, "0, 128", 3)), loc.Dir, true)
	nw := registerAndRun(t, nbPath, withPrediction(t, writeSmallPlan(t, dir, "window compare new", tiny, tinySHA, "0, 128", 4)), loc.Dir, true)
	apart := registerAndRun(t, nbPath, writeSmallPlan(t, dir, "window compare apart", tiny, tinySHA, "256", 3), loc.Dir, false)
	code, out, errOut := runCLI("study", "compare", base, nw, "--notebook", nbPath, "--json")
	var cli study.StudyComparison
	if code != 0 || json.Unmarshal([]byte(out), &cli) != nil {
		t.Fatalf("study compare --json: %d %s %s", code, out, errOut)
	}

	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	svc := studyService{nb: nb, llamaDir: loc.Dir, dataDir: filepath.Join(dir, "data")}
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Studies: svc, Notebook: notebookService{nb}, Compare: compareService{nb}})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	ui.Locked(func() { wb.ShowSection("compare") })
	waitFor(t, "the studies offered", func() bool { return len(wb.Compare.Choose.Options) >= 3 })
	cv := wb.Compare
	ui.Locked(func() {
		cv.ChooseIDs(int64(mustAtoi(t, nw)), int64(mustAtoi(t, base)))
		test.Tap(cv.CompareBt)
	})
	waitFor(t, "the comparison", func() bool { return cv.Result != nil && !cv.CompareBt.Disabled() })
	ui.Locked(func() {
		r := cv.Result
		if len(r.Cells) != len(cli.Cells) || len(r.Cells) != 4 {
			t.Fatalf("%d cells in the window, %d from the CLI: %v", len(r.Cells), len(cli.Cells), r.Cells)
		}
		for i, c := range cli.Cells {
			if r.Cells[i][1] != c.Label() || r.Cells[i][4] != c.Word || r.Cells[i][0] != nw+" vs "+base {
				t.Errorf("cell %d: window %q, CLI %s %q", i, r.Cells[i], c.Label(), c.Word)
			}
		}
		if len(r.Verdicts) != 1 || !strings.HasPrefix(r.Verdicts[0], "P1 (") || !strings.Contains(r.Verdicts[0], "study "+base+" HIT · study "+nw+" HIT — they agree") {
			t.Errorf("verdict lines %q", r.Verdicts)
		}
		if r.Depth == nil || len(r.Depth.Series) != 2 || r.Depth.Series[0].Label != "study "+base+" m" || r.Depth.Series[1].Label != "study "+nw+" m" {
			t.Errorf("overlaid depth chart %+v", r.Depth)
		}
		if !strings.Contains(cv.Status.Text, "study "+base+" window compare base (complete), baseline") || !strings.Contains(cv.Status.Text, "4 shared cell(s), 1 shared prediction(s)") {
			t.Errorf("status %q", cv.Status.Text)
		}
	})
	select {
	case <-cv.Chart.Frames:
	case <-time.After(60 * time.Second):
		t.Fatal("the overlaid depth chart was never drawn")
	}

	// The comparison's receipt: written, verified, and refused once edited.
	bundleDir := filepath.Join(dir, "compare-receipt")
	done := make(chan error, 1)
	ui.Locked(func() {
		cv.Export(cv.Chosen(), bundleDir, func(x ui.ReceiptExport, err error) { done <- err })
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI("verify", bundleDir); code != 0 || !strings.Contains(out, "comparison bundle") || !strings.Contains(out, "comparison.md re-made from comparison.json byte for byte") {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
	// A cell forged (its delta and p changed while its medians stay), comparison.md and
	// SHA256SUMS re-made with the program's own functions: verify re-derives the cell from the
	// rows comparison.json carries and fails, naming the cell.
	files, err := bundle.ReadDir(bundleDir, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var set workbench.ComparisonSet
	if err := json.Unmarshal(files[workbench.FileComparison], &set); err != nil || len(set.Sides) != 2 {
		t.Fatalf("comparison.json carries no rows: %v %d", err, len(set.Sides))
	}
	cell := &set.Pairs[0].Cells[0]
	p := 0.001
	cell.Word, cell.P, cell.Delta, cell.Significant = "+25.00% (p=0.001)", &p, 0.25, true
	forgedFiles, err := workbench.ComparisonFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(dir, "forged-compare")
	if err := bundle.Write(forged, forgedFiles); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI("verify", forged); code != 1 || !strings.Contains(out, "DIFFERS comparison.json: pairs[0] (study "+nw+" against study "+base+"): cell "+cell.Label()+": cells[0].word is \"+25.00% (p=0.001)\", the rows give ") ||
		!strings.Contains(out, "DIFFERS comparison.md: ") {
		t.Errorf("verify of a forged comparison: %d\n%s", code, out)
	}
	md := filepath.Join(bundleDir, workbench.FileComparisonMD)
	if err := os.WriteFile(md, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI("verify", bundleDir); code == 0 || !strings.Contains(out, "DIFFERS comparison.md: differs from the one re-made from comparison.json") {
		t.Fatalf("verify of an edited receipt: %d\n%s", code, out)
	}

	// The statistics and the A/A control, chosen in the window as `study compare --stats
	// welch --aa` takes them: the same words, the same control.
	code, out, errOut = runCLI("study", "compare", base, nw, "--notebook", nbPath, "--json", "--stats", "welch", "--aa")
	var welch study.StudyComparison
	if code != 0 || json.Unmarshal([]byte(out), &welch) != nil || welch.AA == nil {
		t.Fatalf("study compare --stats welch --aa --json: %d %s %s", code, out, errOut)
	}
	ui.Locked(func() {
		if !strings.HasPrefix(cv.StatsPick.Selected, "process:") || cv.AACheck.Checked || !strings.Contains(cv.Status.Text, "the unit is the llama-bench process") {
			t.Errorf("the default statistics: %q, A/A %v, status %q", cv.StatsPick.Selected, cv.AACheck.Checked, cv.Status.Text)
		}
		// each cell's word states both sides' processes and repetitions (issue 31)
		for i, row := range cv.Result.Cells {
			if !strings.Contains(row[4], " processes, m=") || !strings.Contains(row[4], "n=") {
				t.Errorf("the window's comparison, cell %d: %q states no n and m", i, row[4])
			}
		}
		cv.StatsPick.SetSelectedIndex(2)
		cv.AACheck.SetChecked(true)
		cv.Result = nil
		test.Tap(cv.CompareBt)
	})
	waitFor(t, "the Welch comparison", func() bool { return cv.Result != nil && !cv.CompareBt.Disabled() })
	ui.Locked(func() {
		r := cv.Result
		for i, c := range welch.Cells {
			if i >= len(r.Cells) || r.Cells[i][4] != c.Word {
				t.Errorf("welch cell %d: window %q, CLI %q", i, r.Cells, c.Word)
			}
		}
		if !strings.Contains(cv.Status.Text, "Welch's two-sided t-test") || !strings.Contains(cv.AAText.Text, welch.AA.Words()) ||
			!strings.Contains(cv.AAText.Text, "A/A control (Welch's t-test, alpha 0.05)") {
			t.Errorf("status %q\nA/A %q (want %q)", cv.Status.Text, cv.AAText.Text, welch.AA.Words())
		}
	})

	// No shared cell: refused, with the reason.
	ui.Locked(func() {
		cv.Choose.SetSelected(nil)
		cv.ChooseIDs(int64(mustAtoi(t, base)), int64(mustAtoi(t, apart)))
		test.Tap(cv.CompareBt)
	})
	waitFor(t, "the refusal", func() bool { return strings.HasPrefix(cv.Status.Text, "not compared: ") })
	ui.Locked(func() {
		if !strings.Contains(cv.Status.Text, "study "+apart+" against study "+base+": ") || !strings.Contains(cv.Status.Text, "no measured cell") || cv.Result != nil {
			t.Errorf("refusal %q", cv.Status.Text)
		}
	})
}
