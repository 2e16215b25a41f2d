package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/ui"
	"sparkbench/ui/uitest"
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
	nb, tmp, _ := tempNotebook(t)
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
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
		// A flag (three repetitions can spread past even 100% on a loaded machine) counts with
		// its flag instead of running the leg again: the run ends within the wait either way.
		w.OnCV.SetSelectedIndex(1)
	})

	// The prediction, through the Add a prediction… dialog.
	c := wb.Window.Canvas()
	ui.Locked(func() { test.Tap(w.AddPred) })
	waitFor(t, "the prediction dialog", func() bool { return uitest.DialogEntry(c, "the claim in words") != nil })
	ui.Locked(func() {
		test.Type(uitest.DialogEntry(c, "the claim in words"), "tiny generates faster than 1000 t/s at d0")
		test.Type(uitest.DialogEntry(c, "depth, e.g. 0"), "0")
		test.Type(uitest.DialogEntry(c, "lower bound (empty: open)"), "1000")
	})
	tapDialog(t, c, "Add")
	waitFor(t, "a clean validation", func() bool { return w.Problems.Text == "no problems: ready to register" && !w.RegisterBtn.Disabled() })

	// Register…: the plan and its SHA-256 are shown before anything is frozen.
	ui.Locked(func() { test.Tap(w.RegisterBtn) })
	confirm := waitDialog(t, c, "plan sha256 ")
	shown := regexp.MustCompile(`plan sha256 ([0-9a-f]{64})`).FindStringSubmatch(confirm)
	if shown == nil {
		t.Fatalf("no SHA-256 in the confirmation: %q", confirm)
	}
	if list, err := nb.Studies(context.Background()); err != nil {
		t.Fatal(err)
	} else {
		for _, s := range list {
			if s.Name == "e2e tiny vs moe" {
				t.Fatalf("the study was registered before the confirmation: %+v", s)
			}
		}
	}
	tapDialog(t, c, "Register")
	info := waitDialog(t, c, "Study registered")
	m := regexp.MustCompile(`study (\d+)\nplan sha256 ([0-9a-f]{64})\n(\d+) legs`).FindStringSubmatch(info)
	if m == nil || m[2] != shown[1] || m[3] != "4" {
		t.Fatalf("registration dialog %q (shown before: %s)", info, shown[1])
	}
	studyID, _ := strconv.ParseInt(m[1], 10, 64)
	tapDialog(t, c, "OK")

	st := wb.Studies
	waitFor(t, "the study to be shown", func() bool {
		return st.Report() != nil && st.Report().Study.ID == studyID && strings.HasPrefix(st.Title.Text, "e2e tiny vs moe") && !st.RunButton.Disabled()
	})
	// Live chart frames while it runs (the registered study's own frame drained first).
	time.Sleep(300 * time.Millisecond)
	for drained := false; !drained; {
		select {
		case <-st.Chart.Frames:
		default:
			drained = true
		}
	}
	var frames atomic.Int32
	stopFrames := make(chan struct{})
	go func() {
		for {
			select {
			case <-st.Chart.Frames:
				frames.Add(1)
			case <-stopFrames:
				return
			}
		}
	}()
	ui.Locked(func() { test.Tap(st.RunButton) })
	var progress string
	waitFor(t, "the run to finish (progress: the last line below)", func() bool {
		if p := st.ProgressMsg.Text; p != progress {
			progress = p
			t.Logf("progress: %s", p)
		}
		return strings.HasPrefix(progress, "finished: ") || strings.HasPrefix(progress, "halted") || strings.HasPrefix(progress, "not run")
	})
	if !strings.HasPrefix(progress, "finished: 4/4 legs") {
		t.Fatalf("the run ended: %q", progress)
	}
	waitFor(t, "the verdict", func() bool { return strings.Contains(st.Status.Text, "complete") })
	close(stopFrames)
	if n := frames.Load(); n < 1 {
		t.Errorf("no chart frame was shown during the run; want live updates")
	}
	ui.Locked(func() {
		r := st.Report()
		if r == nil || len(r.Scoreboard) != 1 || r.Scoreboard[0].Verdict.Outcome != study.Hit {
			t.Fatalf("scoreboard: %+v", r)
		}
		// The Results table states each cell's unit: one llama-bench process, its repetitions,
		// no interval from one process (issue 31).
		np, ci := ui.ResultColumn("Processes"), ui.ResultColumn("95% CI over processes")
		for i := range r.Results {
			if n, c := st.ResultCell(i, np), st.ResultCell(i, ci); n != fmt.Sprintf("n=1 m=%d", r.Results[i].Reps) || c != "none: one process" {
				t.Errorf("results row %d: processes %q, interval %q", i, n, c)
			}
		}
		// The end's notification leads with the study's figure, as study.Headline gives it.
		if n := st.Notified(); n == nil || study.Headline(r) == "" || !strings.HasPrefix(n.Content, study.Headline(r)+"\nfinished: 4/4 legs") ||
			!strings.HasPrefix(n.Content, "tiny-llama-f32 tg") {
			t.Errorf("end notification %+v; want it led by %q", n, study.Headline(r))
		}
		lines := strings.Join(st.ConsoleLines(), "\n")
		// Engine lines, and the legs' own llama-bench output (jsonl rows) as it arrived.
		for _, want := range []string{"tiny-llama-f32/d0", "tiny-moe-f32/d128", "verdict P1: HIT", `│ {"build_commit":`} {
			if !strings.Contains(lines, want) {
				t.Errorf("console has no %q:\n%s", want, lines)
			}
		}
	})

	// The New study form now estimates the same plan's duration from these legs' times.
	ui.Locked(func() { w.Validate() })
	waitFor(t, "the estimated duration", func() bool {
		return strings.Contains(w.Estimate.Text, "estimated duration ≈") && strings.Contains(w.Estimate.Text, "from 4 past leg(s) of these models")
	})

	// A human verdict and a finding, through their dialogs.
	ui.Locked(func() { test.Tap(st.HumanButton) })
	waitFor(t, "the human verdict dialog", func() bool {
		return uitest.DialogEntry(c, "the rationale: what the evidence shows and why this verdict") != nil
	})
	ui.Locked(func() {
		test.Type(uitest.DialogEntry(c, "the rationale: what the evidence shows and why this verdict"), "the tiny model is far above the line")
	})
	tapDialog(t, c, "Record")
	ui.Locked(func() { test.Tap(st.FindingButton) })
	waitFor(t, "the finding dialog", func() bool { return uitest.DialogEntry(c, "what was found") != nil })
	ui.Locked(func() {
		test.Type(uitest.DialogEntry(c, "what was found"), "tg falls with depth on both models")
		test.Type(uitest.DialogEntry(c, "legs it rests on, e.g. tiny/d128, moe/d0"), "tiny-llama-f32/d128")
		test.Type(uitest.DialogEntry(c, "predictions it bears on, e.g. P1, P3"), "P1")
	})
	tapDialog(t, c, "Record")
	if txt := waitDialog(t, c, "Finding recorded"); !strings.Contains(txt, "F1 is in the notebook") {
		t.Fatalf("finding dialog %q", txt)
	}
	tapDialog(t, c, "OK")
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

	// Export the receipt bundle with Ctrl+E (the folder dialog opens where receipts were put
	// last), then verify it with Verify a bundle… > A folder….
	exports := filepath.Join(tmp, "receipts")
	if err := os.MkdirAll(exports, 0o755); err != nil {
		t.Fatal(err)
	}
	ui.Locked(func() {
		a.Preferences().SetString("last.folder.receipts", exports)
		c.(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyE, Modifier: fyne.KeyModifierShortcutDefault})
	})
	tapDialog(t, c, "Open")
	if txt := waitDialog(t, c, "Receipt written"); !strings.Contains(txt, "receipt") {
		t.Fatalf("receipt dialog %q", txt)
	}
	tapDialog(t, c, "OK")
	bundles, _ := filepath.Glob(filepath.Join(exports, "*-receipt"))
	if len(bundles) != 1 {
		t.Fatalf("receipt folders: %v", bundles)
	}
	ui.Locked(func() {
		a.Preferences().SetString("last.folder.bundles", bundles[0])
		test.Tap(wb.Notebook.BundleBt)
	})
	tapDialog(t, c, "A folder…")
	tapDialog(t, c, "Open")
	if txt := waitDialog(t, c, "Bundle verified"); !strings.Contains(txt, "OK: every file matches SHA256SUMS") {
		t.Fatalf("verify dialog %q", txt)
	}
	tapDialog(t, c, "OK")
	receipts := make(chan error, 1)
	verified := make(chan bool, 1)

	// The same as a .tar.gz: the preview comes from the export's files, and the archive verifies.
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

// waitDialog waits until the window's top dialog says want, and returns its text.
func waitDialog(t *testing.T, c fyne.Canvas, want string) string {
	t.Helper()
	var txt string
	waitFor(t, "a dialog saying "+want, func() bool {
		txt = uitest.DialogText(c)
		return strings.Contains(txt, want)
	})
	return txt
}

// tapDialog waits for an enabled button labelled label in the top dialog and taps it.
func tapDialog(t *testing.T, c fyne.Canvas, label string) {
	t.Helper()
	waitFor(t, "the dialog button "+label, func() bool { return uitest.TapDialogButton(c, label) })
}
