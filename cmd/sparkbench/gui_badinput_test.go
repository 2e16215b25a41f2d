package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
	"sparkbench/ui/uitest"
)

// With the llama.cpp folder chosen in the Bench section gone, Run in the window (a throughput
// and a capacity study) shows a dialog naming the folder and the fix, and the notebook's
// journal is unchanged. The window was started on a working folder (--llama-dir): the Bench
// section's choice is what runs use.
func TestWindowRunWithAMissingBuildFolder(t *testing.T) {
	loc := llamatest.Binaries(t) // the models exist; the folder chosen in the window does not
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "llama.cpp-was-here")
	nb, err := store.Open(filepath.Join(tmp, "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	data := filepath.Join(tmp, "data")
	var wb *ui.Workbench
	folder := func() string { return wb.Bench.LlamaDir() }
	svc := studyService{nb: nb, dataDir: data, folder: folder}
	capSvc := capacityService{nb: nb, dataDir: data, folder: folder}
	ctx := context.Background()
	demoID, err := svc.EnsureDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tiny := filepath.Join(llamatest.ModelsDir(), "tiny-llama-f32.gguf")
	sum, err := cachedHash(ctx, nb, io.Discard)(tiny)
	if err != nil {
		t.Fatal(err)
	}
	w1 := 0
	reg, err := capSvc.RegisterCapacity(ctx, &capacity.Plan{Schema: capacity.SchemaCapacity, Name: "missing folder",
		Candidates: []capacity.Candidate{{ID: "tiny", Label: "tiny", Model: capacity.FileRef{Path: tiny, SHA256: sum}, ServerFlags: []string{"-t", "1"}}},
		Slots:      []int{1}, Clients: []int{1}, Warmups: &w1, Measured: 1, NPredict: 4, CtxPerSlot: 256,
		PromptPlan: capacity.DefaultPromptPlanRef(),
		Limits:     capacity.Limits{TTFTMsP95Max: 1000, E2EMsP95Max: 1000, PeakRSSMiBMax: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := nb.Journal(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}

	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{
			LlamaDir: filepath.Dir(loc.Bench),
			Doctor:   func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Library:  notebookLibrary{nb}, Studies: svc, Registrar: svc, Notebook: notebookService{nb}, Capacity: capSvc,
		})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	if got := wb.Bench.LlamaDir(); got != filepath.Dir(loc.Bench) {
		t.Fatalf("the window's folder before a choice: %q, want the launch folder", got)
	}
	ui.Locked(func() { wb.Bench.ChooseFolder(missing) })
	if got := wb.Bench.LlamaDir(); got != missing {
		t.Fatalf("the window's folder after choosing %s: %q", missing, got)
	}
	st := wb.Studies

	// The throughput demo.
	ui.Locked(func() { st.Reload(demoID) })
	waitFor(t, "the demo study", func() bool { return st.Report() != nil && st.Report().Study.ID == demoID && !st.RunButton.Disabled() })
	ui.Locked(func() { test.Tap(st.RunButton) })
	waitFor(t, "the refusal", func() bool { return strings.HasPrefix(st.ProgressMsg.Text, "could not run: ") })
	ui.Locked(func() {
		txt := uitest.DialogText(wb.Window.Canvas())
		if !strings.Contains(txt, missing) || !strings.Contains(strings.ToLower(txt), "the study could not run") {
			t.Errorf("throughput dialog: %q", txt)
		}
		c := wb.Window.Canvas() // dismiss it
		for c.Overlays().Top() != nil {
			c.Overlays().Remove(c.Overlays().Top())
		}
	})

	// The capacity study.
	ui.Locked(func() { st.Reload(reg.StudyID) })
	waitFor(t, "the capacity study", func() bool { return st.Cap.Study() != nil && !st.Cap.RunButton.Disabled() })
	ui.Locked(func() { test.Tap(st.Cap.RunButton) })
	waitFor(t, "the capacity refusal", func() bool { return strings.HasPrefix(st.Cap.ProgressMsg.Text, "not run: ") })
	ui.Locked(func() {
		txt := uitest.DialogText(wb.Window.Canvas())
		if !strings.Contains(txt, missing) || !strings.Contains(strings.ToLower(txt), "the study was not run") || !strings.Contains(txt, "Nothing was recorded") {
			t.Errorf("capacity dialog: %q", txt)
		}
	})

	after, err := nb.Journal(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("the journal changed: %d entries before, %d after (last: %s)", len(before), len(after), after[len(after)-1].Kind)
	}
}
