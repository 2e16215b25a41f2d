package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ok bool
		ui.Locked(func() { ok = cond() })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestWindowBuildsRegistersAndRunsAStudy clicks through a whole throughput study in the
// window (Fyne's test driver): add the generated models, fill the New study form, register,
// run it against the real llama-bench, and read the verdict and the console.
func TestWindowBuildsRegistersAndRunsAStudy(t *testing.T) {
	llamatest.Binaries(t)
	tmp := t.TempDir()
	nbPath := filepath.Join(tmp, "notebook.db")
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data"), nbPath: nbPath}
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{
			Doctor:    func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Library:   notebookLibrary{nb},
			Studies:   svc,
			Registrar: svc,
			Notebook:  notebookService{nb},
		})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	tiny := filepath.Join(llamatest.ModelsDir(), "tiny-llama-f32.gguf")
	moe := filepath.Join(llamatest.ModelsDir(), "tiny-moe-f32.gguf")
	ui.Locked(func() { wb.Models.Add([]string{llamatest.ModelsDir()}) })
	waitFor(t, "the models to be listed", func() bool {
		return strings.Contains(wb.Models.Count.Text, "GGUF file") && wb.Models.Count.Text != "0 GGUF file(s)"
	})

	w := wb.Wizard
	ui.Locked(func() {
		w.RefreshModels()
		test.Type(w.Name, "e2e tiny vs moe")
		w.Models.SetSelected([]string{tiny, moe})
		w.Depths.SetText("0,128")
		w.NPrompt.SetText("32")
		w.NGen.SetText("16")
		w.Reps.SetText("3")
		w.Threads.SetText("1")
		for _, e := range []*widget.Entry{w.CVTG, w.CVPPDepth, w.CVPPD0} {
			e.SetText("100") // tiny-model tests last about a millisecond: noise, not a signal
		}
		p, err := buildPredictionForTest()
		if err != nil {
			t.Fatal(err)
		}
		w.AddPrediction(p)
	})
	waitFor(t, "a clean validation", func() bool { return w.Problems.Text == "no problems: ready to register" && !w.RegisterBtn.Disabled() })

	regs := make(chan study.Registration, 1)
	ui.Locked(func() {
		w.Register(func(r study.Registration, err error) {
			if err != nil {
				t.Errorf("register: %v", err)
			}
			regs <- r
		})
	})
	reg := <-regs
	if reg.StudyID == 0 || len(reg.PlanSHA256) != 64 || reg.Legs != 4 {
		t.Fatalf("registration: %+v", reg)
	}

	st := wb.Studies
	ui.Locked(func() { st.Reload(reg.StudyID) })
	waitFor(t, "the study to be shown", func() bool {
		return strings.HasPrefix(st.Title.Text, "e2e tiny vs moe") && !st.RunButton.Disabled()
	})
	ui.Locked(func() { test.Tap(st.RunButton) })
	waitFor(t, "the run to finish", func() bool { return strings.HasPrefix(st.ProgressMsg.Text, "finished: 4/4 legs") })
	waitFor(t, "the verdict", func() bool { return strings.Contains(st.Status.Text, "complete") })
	ui.Locked(func() {
		r := st.Report()
		if r == nil || len(r.Scoreboard) != 1 || r.Scoreboard[0].Verdict.Outcome != study.Hit {
			t.Fatalf("scoreboard: %+v", r)
		}
		if lines := st.ConsoleLines(); !strings.Contains(strings.Join(lines, "\n"), "verdict P1: HIT") {
			t.Errorf("console: %v", lines)
		}
	})

	// A human verdict and a finding, through the same calls the dialogs make.
	humanDone := make(chan error, 1)
	ui.Locked(func() {
		st.RecordHuman(study.HumanVerdict{Prediction: "P1", Outcome: "PASS", Rationale: "the tiny model is far above the line"}, func(err error) { humanDone <- err })
	})
	if err := <-humanDone; err != nil {
		t.Fatal(err)
	}
	findingDone := make(chan string, 1)
	ui.Locked(func() {
		st.RecordFinding(study.FindingRequest{Text: "tg falls with depth on both models", Legs: []string{"tiny-llama-f32/d128"}, Predictions: []string{"P1"}},
			func(label string, err error) {
				if err != nil {
					t.Errorf("finding: %v", err)
				}
				findingDone <- label
			})
	})
	if label := <-findingDone; label != "F1" {
		t.Fatalf("finding label %q", label)
	}
	waitFor(t, "the human verdict in the scoreboard", func() bool {
		r := st.Report()
		return r != nil && r.Scoreboard[0].Human != nil && r.Scoreboard[0].Human.Outcome == "PASS" && len(r.Findings) == 1
	})

	// The notebook section: the timeline lists the new entries and the chain verifies.
	ui.Locked(func() {
		wb.Notebook.Reload()
		wb.Notebook.Verify()
	})
	waitFor(t, "the chain check", func() bool { return strings.HasPrefix(wb.Notebook.Chain.Text, "chain intact") })
	waitFor(t, "the journal timeline", func() bool { return wb.Notebook.List.Length() > 5 })
	ui.Locked(func() { wb.Notebook.Filter.SetText("F1") })
	waitFor(t, "the filtered timeline", func() bool { return wb.Notebook.List.Length() >= 1 })

	// Export the receipt bundle and verify it, as the Export receipt… and Verify a bundle…
	// dialogs do.
	receipts := make(chan error, 1)
	ui.Locked(func() { st.ExportReceipt(tmp, func(_ string, err error) { receipts <- err }) })
	if err := <-receipts; err != nil {
		t.Fatalf("export receipt: %v", err)
	}
	bundles, _ := filepath.Glob(filepath.Join(tmp, "*-receipt"))
	if len(bundles) != 1 {
		t.Fatalf("receipt folders: %v", bundles)
	}
	verified := make(chan bool, 1)
	ui.Locked(func() {
		wb.Notebook.VerifyBundle(bundles[0], func(ok bool, lines []string, err error) {
			if err != nil || !ok {
				t.Errorf("verify: %v %v", err, lines)
			}
			verified <- ok
		})
	})
	if !<-verified {
		t.Fatal("the exported bundle does not verify")
	}

	// The same as a .tar.gz: the preview is read from the archive, and the archive verifies.
	ui.Locked(func() {
		st.ExportTarGz.SetChecked(true)
		st.Receipt.ParseMarkdown("")
		st.ReceiptImgs.RemoveAll()
		st.ExportReceipt(tmp, func(_ string, err error) { receipts <- err })
	})
	if err := <-receipts; err != nil {
		t.Fatalf("export receipt as .tar.gz: %v", err)
	}
	archives, _ := filepath.Glob(filepath.Join(tmp, "*-receipt.tar.gz"))
	if len(archives) != 1 {
		t.Fatalf("receipt archives: %v", archives)
	}
	ui.Locked(func() {
		if !strings.Contains(st.Receipt.String(), "e2e tiny vs moe") || len(st.ReceiptImgs.Objects) == 0 || st.ExportBar.Visible() {
			t.Errorf("preview from the archive: %d chart(s), text %.80q, progress bar visible %v", len(st.ReceiptImgs.Objects), st.Receipt.String(), st.ExportBar.Visible())
		}
	})
	ui.Locked(func() {
		wb.Notebook.VerifyBundle(archives[0], func(ok bool, lines []string, err error) {
			if err != nil || !ok {
				t.Errorf("verify the archive: %v %v", err, lines)
			}
			verified <- ok
		})
	})
	if !<-verified {
		t.Fatal("the exported archive does not verify")
	}
}

func buildPredictionForTest() (study.Prediction, error) {
	lo := 1000.0
	d := 0
	return study.Prediction{Kind: study.KindBand, Text: "tiny generates faster than 1000 t/s at d0", Lo: &lo,
		About: study.Selector{Figure: study.FigureCell, Model: "tiny-llama-f32", Test: "tg", Depth: &d}}, nil
}
