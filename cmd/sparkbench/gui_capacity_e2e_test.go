package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
	"sparkbench/ui"
	"sparkbench/ui/uitest"
)

// TestWindowBuildsRegistersAndRunsACapacityStudy clicks through a capacity study in the window
// (Fyne's test driver): choose the capacity kind, fill the form on a generated model, register,
// run it against the real llama-server (P {1,2} x C {1,2} x forward and reverse), watch the
// live envelope fill in, and read the assembled envelope, the selected point and the verdict.
func TestWindowBuildsRegistersAndRunsACapacityStudy(t *testing.T) {
	loc := llamatest.Binaries(t)
	capacityTag(t)
	nb, tmp, _ := tempNotebook(t)
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	capSvc := capacityService{nb: nb, llamaDir: filepath.Dir(loc.Server), dataDir: filepath.Join(tmp, "data")}
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{
			Doctor:    func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Library:   notebookLibrary{nb},
			Studies:   svc,
			Registrar: svc,
			Notebook:  notebookService{nb},
			Capacity:  capSvc,
		})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	tiny := filepath.Join(llamatest.ModelsDir(), "tiny-llama-f32.gguf")
	ui.Locked(func() { wb.Models.Add([]string{tiny}) })
	waitFor(t, "the model to be listed", func() bool { return wb.Models.Count.Text == "1 GGUF file(s)" })

	w := wb.CapWiz
	ui.Locked(func() {
		wb.ShowSection("new")
		wb.Kind.SetSelected(ui.KindCapacity)
		w.RefreshModels()
		test.Type(w.Name, "e2e capacity grid")
		w.Models.SetSelected([]string{tiny})
		w.Flags.SetText("-t 1")
		w.Slots.SetText("1,2")
		w.Clients.SetText("1,2")
		w.Warmups.SetText("1")
		w.Measured.SetText("2")
		w.NPredict.SetText("32") // long enough for the live envelope's 2 Hz updates to show rows
		w.CtxPerSlot.SetText("512")
		w.TTFT.SetText("60000") // generous: the gates are exercised by unit tests
		w.E2E.SetText("60000")
		w.RSS.SetText("4096")
		// A loaded machine can make the forward and reverse passes of a tiny cell differ by
		// more than the default 15%/20%: the spread gates are exercised by unit tests.
		w.RateSpread.SetText("0.9")
		w.E2ESpread.SetText("0.9")
	})
	// The prediction, through the Add a prediction… dialog (a band about the selected gain).
	c := wb.Window.Canvas()
	ui.Locked(func() { test.Tap(w.AddPred) })
	waitFor(t, "the prediction dialog", func() bool { return uitest.DialogEntry(c, "the claim in words") != nil })
	ui.Locked(func() {
		test.Type(uitest.DialogEntry(c, "the claim in words"), "the selected point gains at least -100%")
		test.Type(uitest.DialogEntry(c, "lower bound (empty: open)"), "-1")
	})
	tapDialog(t, c, "Add")
	waitFor(t, "a clean validation", func() bool { return w.Problems.Text == "no problems: ready to register" && !w.RegisterBtn.Disabled() })
	ui.Locked(func() {
		// No llama-bench history of the model in this notebook: said, not guessed.
		if !strings.HasPrefix(w.Estimate.Text, "4 server lifetimes, 8 cells, 24 requests of 32 tokens") ||
			!strings.Contains(w.Estimate.Text, "estimated duration no estimate yet") {
			t.Errorf("estimate %q", w.Estimate.Text)
		}
	})
	// Register…: the plan and its SHA-256 are shown before anything is frozen, then registered.
	ui.Locked(func() { test.Tap(w.RegisterBtn) })
	confirm := waitDialog(t, c, "plan sha256 ")
	shown := regexp.MustCompile(`plan sha256 ([0-9a-f]{64})`).FindStringSubmatch(confirm)
	if shown == nil {
		t.Fatalf("no SHA-256 in the confirmation: %q", confirm)
	}
	tapDialog(t, c, "Register")
	info := waitDialog(t, c, "Study registered")
	m := regexp.MustCompile(`study (\d+) \(capacity\)\nplan sha256 ([0-9a-f]{64})`).FindStringSubmatch(info)
	if m == nil || m[2] != shown[1] {
		t.Fatalf("registration dialog %q (shown before: %s)", info, shown[1])
	}
	studyID, _ := strconv.ParseInt(m[1], 10, 64)
	tapDialog(t, c, "OK")
	reg := capacity.Registration{StudyID: studyID}

	st := wb.Studies
	waitFor(t, "the capacity study to be shown", func() bool {
		return st.Cap.Study() != nil && strings.HasPrefix(st.Cap.Title.Text, "e2e capacity grid") && !st.Cap.RunButton.Disabled()
	})
	ui.Locked(func() { test.Tap(st.Cap.RunButton) })
	sawLive := false
	waitFor(t, "the run to finish", func() bool {
		if st.Cap.Running() && len(st.Cap.Rows()) > 0 {
			sawLive = true
		}
		return strings.HasPrefix(st.Cap.ProgressMsg.Text, "finished: complete")
	})
	waitFor(t, "the assembled study", func() bool {
		s := st.Cap.Study()
		return s != nil && s.Report.Study.Status == capacity.StatusComplete && len(st.Cap.Rows()) == 4
	})
	ui.Locked(func() {
		if !sawLive {
			t.Error("no live envelope row was shown while the study ran")
		}
		s := st.Cap.Study()
		if len(s.Report.Verdicts) != 1 || s.Report.Verdicts[0].Outcome != "HIT" {
			t.Errorf("verdicts %+v", s.Report.Verdicts)
		}
		if !strings.Contains(st.Cap.Selected.Text, "tiny-llama-f32: selected P") {
			t.Errorf("selected: %q", st.Cap.Selected.Text)
		}
		if len(s.Charts) < 2 {
			t.Errorf("charts of the assembled study: %d", len(s.Charts))
		}
		lines := strings.Join(st.Cap.ConsoleLines(), "\n")
		if !strings.Contains(lines, "reverse/tiny-llama-f32/p1 C=1: 2/2 completed") {
			t.Errorf("console:\n%s", lines)
		}
		// The servers' own log lines, as they arrived.
		if !strings.Contains(lines, "forward/tiny-llama-f32/p2 │ ") || !strings.Contains(lines, "llama_server: model loaded") {
			t.Errorf("no llama-server log line in the console:\n%s", lines)
		}
	})
	// The notebook: one leg per server lifetime, and the chain verifies.
	ui.Locked(func() { wb.Notebook.Verify() })
	waitFor(t, "the chain check", func() bool { return strings.HasPrefix(wb.Notebook.Chain.Text, "chain intact") })
	if n := countJournal(t, nb, reg.StudyID, "capacity.assembled"); n != 1 {
		t.Fatalf("%d capacity.assembled entries", n)
	}
}
