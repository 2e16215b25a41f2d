package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/ui"
)

// TestWindowCapacityRunGetsTheKVCheck runs, in the window, a concurrency study whose arms are
// the medium model's f16 and q8_0 KV caches (one cell each) on the real llama-server and
// llama-perplexity. With the window's folder a build without llama-perplexity, the run measures
// and assembles every cell and says the KV cache check could not run; the panel lists the arm
// as not checked and offers Run the KV cache check. With the full build chosen, that Run checks
// it alone (no server lifetime again): q8_0's mean KLD is shown beside its speed change and the
// gate's outcome, and nothing is left to run.
func TestWindowCapacityRunGetsTheKVCheck(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "medium-llama-f16.gguf")
	capacityTag(t)
	nb, tmp, _ := tempNotebook(t)
	t.Setenv("XDG_DATA_HOME", filepath.Join(tmp, "xdg"))
	noPPL := filepath.Join(tmp, "build-without-perplexity")
	if err := os.Mkdir(noPPL, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(loc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "llama-perplexity" {
			if err := os.Symlink(filepath.Join(loc.Dir, e.Name()), filepath.Join(noPPL, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	var mu sync.Mutex
	folder := noPPL
	svc := capacityService{nb: nb, dataDir: filepath.Join(tmp, "data"), folder: func() string {
		mu.Lock()
		defer mu.Unlock()
		return folder
	}}
	one := 1
	arm := func(id, kv string, flags ...string) capacity.Candidate {
		return capacity.Candidate{ID: id, Label: "medium " + kv + " KV", Arm: kv, Model: capacity.FileRef{Path: model, SHA256: mediumSHA},
			ServerFlags: append([]string{"-t", "1", "-fa", "on"}, flags...)}
	}
	p := &capacity.Plan{Schema: capacity.SchemaConcurrency, Name: "window kv arms", ArmAxis: "kv_cache_type",
		Candidates: []capacity.Candidate{arm("f16", "f16"), arm("q8", "q8_0", "-ctk", "q8_0", "-ctv", "q8_0")},
		Slots:      []int{1}, Passes: []string{"forward"}, Warmups: &one, Measured: 2, NPredict: 8, CtxPerSlot: 1024, Seed: 42,
		PromptPlan: capacity.DefaultPromptPlanRef(), Limits: capacity.Limits{TTFTMsP95Max: 60000, E2EMsP95Max: 120000, PeakRSSMiBMax: 16384},
		KVQuality: &study.KVQualityGate{KLDMeanMax: 0.5}}
	reg, err := svc.RegisterCapacity(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}

	var wb *ui.Workbench
	ui.Locked(func() {
		a := test.NewApp()
		wb = ui.NewWorkbench(a, ui.Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Studies: studyService{nb: nb}, Notebook: notebookService{nb}, Capacity: svc})
	})
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	defer ui.Locked(func() { wb.Window.Close() })
	v := wb.Studies.Cap
	ui.Locked(func() { wb.Studies.Reload(reg.StudyID) })
	waitFor(t, "the study to be shown", func() bool { return v.Study() != nil && !v.RunButton.Disabled() })
	ui.Locked(func() { test.Tap(v.RunButton) })
	defer func() {
		if t.Failed() {
			ui.Locked(func() { t.Logf("progress %q\nconsole:\n%s", v.ProgressMsg.Text, strings.Join(v.ConsoleLines(), "\n")) })
		}
	}()
	waitFor(t, "the run without llama-perplexity to end", func() bool {
		return !v.Running() && strings.HasPrefix(v.ProgressMsg.Text, "every cell is measured and assembled, but the KV cache check: 1 KV arm(s) not checked")
	})
	waitFor(t, "the complete study", func() bool {
		return v.Study() != nil && v.Study().Report.Study.Status == capacity.StatusComplete && !v.RunButton.Disabled()
	})
	ui.Locked(func() {
		console := strings.Join(v.ConsoleLines(), "\n")
		if !strings.Contains(v.ProgressMsg.Text, "has no executable llama-perplexity") || !strings.Contains(console, "kv quality: not checked: ") ||
			!strings.Contains(console, "  q8: KL divergence not checked (Run checks it)") {
			t.Errorf("outcome %q; console:\n%s", v.ProgressMsg.Text, console)
		}
		if !strings.Contains(v.KV.Text, "q8: KL divergence from the f16 cache not checked yet") || v.RunButton.Text != "Run the KV cache check (the cells are kept)" {
			t.Errorf("KV lines %q, run button %q", v.KV.Text, v.RunButton.Text)
		}
	})
	legs := len(v.Study().Report.Legs)

	mu.Lock()
	folder = loc.Dir
	mu.Unlock()
	ui.Locked(func() { test.Tap(v.RunButton) })
	waitFor(t, "the KV cache check to end", func() bool {
		return !v.Running() && strings.HasPrefix(v.ProgressMsg.Text, "finished: the KV cache check ran")
	})
	waitFor(t, "the checked study", func() bool {
		return v.Study() != nil && len(v.Study().Report.KVQuality) == 1 && v.RunButton.Disabled()
	})
	ui.Locked(func() {
		r := v.Study().Report
		q := r.KVQuality[0]
		if q.Candidate != "q8" || q.MeanKLD <= 0 || q.MeanKLD > 0.1 || q.Gate != "pass" || len(q.Speed) != 2 || len(r.KVUnchecked) != 0 || len(r.Legs) != legs {
			t.Errorf("kv quality %+v, unchecked %v, %d server lifetimes (were %d)", q, r.KVUnchecked, len(r.Legs), legs)
		}
		for _, want := range []string{"q8 (q8_0/q8_0 KV) vs f16: selected rate ", "per-stream rate at P1/C1 ", "; mean KLD ", "; gate (mean KLD <= 0.5): pass"} {
			if !strings.Contains(v.KV.Text, want) {
				t.Errorf("KV lines %q lack %q", v.KV.Text, want)
			}
		}
		console := strings.Join(v.ConsoleLines(), "\n")
		if !strings.Contains(console, "kv quality medium-llama-f16: q8_0/q8_0 against f16: mean KLD ") || strings.Contains(console, "llama-server ready") {
			t.Errorf("console of the check alone:\n%s", console)
		}
	})
}
