package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/vocab"
	"sparkbench/store"
	"sparkbench/ui"
)

// TestWindowShowsAWrappedLegsReceipt: a study whose plan starts its legs under taskset -c CPU
// (registered and run on the real llama-bench) is exported from the window (Fyne's test
// driver): the receipt preview has the Launch wrapper table with the canonical command, the
// command launched as and CPU affinity CPU; the Notebook timeline has one sentence per
// launched leg.
func TestWindowShowsAWrappedLegsReceipt(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	cpu := allowedCPU(t)
	taskset, err := vocab.ResolveProgram("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is needed: %v", err)
	}
	dir := t.TempDir()
	nbPath := filepath.Join(dir, "notebook.db")
	id := mustAtoi(t, registerAndRun(t, nbPath, writeWrappedPlan(t, dir, "window wrapped", tiny, []string{"taskset", "-c", cpu}), loc.Dir, true))

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
			Studies: svc, Notebook: notebookService{nb}})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	st := wb.Studies
	ui.Locked(func() { st.Select(int64(id)) })
	waitFor(t, "the study to be shown", func() bool { return st.Report() != nil && st.Report().Study.ID == int64(id) })
	done := make(chan error, 1)
	ui.Locked(func() { st.ExportReceipt(dir, func(_ string, err error) { done <- err }) })
	if err := <-done; err != nil {
		t.Fatalf("export: %v", err)
	}
	ui.Locked(func() {
		md := st.Receipt.String()
		for _, want := range []string{"Launch wrapper", "taskset -c " + cpu, "Canonical command", "Launched as", taskset + " -c " + cpu + " "} {
			if !strings.Contains(md, want) {
				t.Errorf("the receipt preview lacks %q:\n%s", want, md)
			}
		}
		for _, l := range st.Report().Legs {
			if l.ID != 0 && (l.Launch == nil || l.Launch.Affinity == nil || l.Launch.Affinity.CPUs != cpu) {
				t.Errorf("leg %s in the window's report: launch %+v", l.Label, l.Launch)
			}
		}
	})
	ui.Locked(func() { wb.Notebook.Reload() })
	waitFor(t, "the journal timeline", func() bool { return wb.Notebook.List.Length() > 5 })
	ui.Locked(func() { wb.Notebook.Filter.SetText("launched under " + taskset) })
	waitFor(t, "one sentence per launched leg", func() bool { return wb.Notebook.List.Length() == 2 })
}
