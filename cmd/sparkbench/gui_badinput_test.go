package main

import (
	"context"
	"fmt"
	"io"
	"os"
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
	folder := func() string {
		if wb == nil {
			return loc.Dir // before the window opens (the capacity study is registered first)
		}
		return wb.Bench.LlamaDir()
	}
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

// Bad input through the real notebook: a file that is not a GGUF model is refused in a dialog;
// in the New study forms, invalid axis values and a
// --port flag (the harness picks the server's port) are refused precisely, inline and in the
// Save plan… dialog; a model whose SHA-256 differs from the expected one is refused at
// Register… with a dialog naming both hashes. The notebook's studies and journal are unchanged.
func TestWindowBadInputLeavesTheNotebookUnchanged(t *testing.T) {
	llamatest.Binaries(t)
	nb, tmp, _ := tempNotebook(t)
	ctx := context.Background()
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	capSvc := capacityService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{
			Doctor:  func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Library: notebookLibrary{nb}, Registrar: svc, Notebook: notebookService{nb}, Capacity: capSvc,
		})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	c := wb.Window.Canvas()
	tiny := filepath.Join(llamatest.ModelsDir(), "tiny-llama-f32.gguf")
	ui.Locked(func() { wb.Models.Add([]string{tiny}) })
	waitFor(t, "the model", func() bool { return wb.Models.Count.Text == "1 GGUF file(s)" })
	// The notebook's records: every table's rows and the journal's entries. The model file
	// cache (artefacts, and the artefact.recorded entries that journal its rows) is left out:
	// hashing a model the user picked is not a record of a study.
	before := func() string {
		t.Helper()
		st, err := nb.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		delete(st.Tables, "artefacts")
		delete(st.Tables, "journal")
		es, err := nb.Journal(ctx, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, e := range es {
			if e.Kind != store.KindArtefactRecorded {
				kept = append(kept, e.Kind+" "+string(e.Payload))
			}
		}
		return fmt.Sprintf("%v entries %q", st.Tables, kept)
	}
	state0 := before()
	dismiss := func() {
		ui.Locked(func() {
			for c.Overlays().Top() != nil {
				c.Overlays().Remove(c.Overlays().Top())
			}
		})
	}

	// A file that is not a GGUF model, added in Models: a dialog names it and what to add.
	notes := filepath.Join(tmp, "notes.txt")
	if err := os.WriteFile(notes, []byte("not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ui.Locked(func() { wb.Models.Add([]string{notes}) })
	if txt := waitDialog(t, c, "could not be read as GGUF models"); !strings.Contains(txt, notes) || !strings.Contains(txt, "*.gguf") {
		t.Fatalf("non-GGUF dialog %q", txt)
	}
	dismiss()
	if got := before(); got != state0 {
		t.Fatalf("adding a non-GGUF file changed the notebook:\n%s\n->\n%s", state0, got)
	}

	// Invalid axis values: said inline, Register… disabled, and Save plan… says it in a dialog.
	w := wb.Wizard
	ui.Locked(func() {
		wb.ShowSection("new")
		w.RefreshModels()
		test.Type(w.Name, "bad input")
		w.Models.SetSelected([]string{tiny})
		w.Depths.SetText("0,abc")
		w.Threads.SetText("1")
	})
	waitFor(t, "the axis refusal", func() bool {
		return strings.Contains(w.Problems.Text, `depths: "abc" is not a whole number`) && w.RegisterBtn.Disabled()
	})
	ui.Locked(func() { test.Tap(w.SaveBtn) })
	waitDialog(t, c, `epths: "abc" is not a whole number`) // Fyne capitalises an error's first letter
	dismiss()

	// A --port flag in a capacity study: the harness picks the port.
	cw := wb.CapWiz
	ui.Locked(func() {
		wb.Kind.SetSelected(ui.KindCapacity)
		cw.RefreshModels()
		test.Type(cw.Name, "bad capacity")
		cw.Models.SetSelected([]string{tiny})
		cw.Flags.SetText("-t 1 --port 8080")
		cw.Slots.SetText("1")
		cw.Clients.SetText("1")
	})
	waitFor(t, "the --port refusal", func() bool {
		return strings.Contains(cw.Problems.Text, "--port") && strings.Contains(cw.Problems.Text, "harness") && cw.RegisterBtn.Disabled()
	})
	ui.Locked(func() { test.Tap(cw.SaveBtn) })
	waitDialog(t, c, "--port")
	dismiss()

	// A hash mismatch: the expected SHA-256 recorded in Models differs from the file's.
	wrong := strings.Repeat("0", 64)
	if _, err := (notebookLibrary{nb}).SetExpected(ctx, tiny, wrong); err != nil {
		t.Fatal(err)
	}
	state0 = before() // recording the expected hash is the user's own edit of the library
	ui.Locked(func() {
		wb.Kind.SetSelected("throughput")
		w.Depths.SetText("0")
	})
	waitFor(t, "a clean form", func() bool { return !w.RegisterBtn.Disabled() })
	ui.Locked(func() { test.Tap(w.RegisterBtn) })
	txt := waitDialog(t, c, "is MISMATCH")
	if !strings.Contains(txt, wrong) || !strings.Contains(txt, "download it again") {
		t.Fatalf("mismatch dialog %q", txt)
	}
	dismiss()
	if got := before(); got != state0 {
		t.Fatalf("bad input changed the notebook:\n%s\n->\n%s", state0, got)
	}
}
