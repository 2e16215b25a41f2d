package caprun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
)

// A candidate's model replaced while a run measures it (the real llama-server, the tiny
// model; replaced as the first lifetime starts, before its server is up): that lifetime ends
// without results (model:changed, naming what moved), the run halts with a ModelChangedError,
// and no later lifetime is started.
func TestRunModelReplacedMidRunHalts(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	src, err := os.ReadFile(llamatest.Model(t, "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(llamatest.Model(t, "tiny-moe-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	cands := []runCand{{"dense", model, []string{"-t", llamatest.Threads}, capacity.Markers{}}}
	plan := writeRunPlan(t, dir, cands, []int{1, 2}, []int{1}, 0, 2, 8)
	swapped := false
	rep, evs, err := runPlan(t, plan, loc.Server, filepath.Join(dir, "run"), []string{tag(t)}, func(ev capacity.RunEvent) {
		if ev.Type == capacity.LifetimeStarted && !swapped {
			swapped = true
			if err := os.WriteFile(model+".new", other, 0o644); err != nil {
				t.Error(err)
			}
			if err := os.Rename(model+".new", model); err != nil {
				t.Error(err)
			}
		}
	})
	var mc *ModelChangedError
	if !errors.As(err, &mc) || !strings.Contains(err.Error(), "model:changed: the model of candidate dense, "+model+", changed since this run read it") ||
		!strings.Contains(err.Error(), "(another file)") {
		t.Fatalf("run with the model replaced: %v", err)
	}
	started := 0
	for _, ev := range evs {
		switch ev.Type {
		case capacity.LifetimeStarted:
			started++
		case capacity.LifetimeDone:
			if !strings.HasPrefix(ev.NoResults, CodeModelChanged+": ") {
				t.Errorf("lifetime %s ended with results (%q) on a replaced model", ev.Lifetime, ev.NoResults)
			}
		}
	}
	if started != 1 {
		t.Errorf("%d lifetimes started, want 1 (the run halts after the one whose model changed)", started)
	}
	if rep != nil && len(rep.Lifetimes) > 0 && !strings.HasPrefix(rep.Lifetimes[0].NoResults, CodeModelChanged) {
		t.Errorf("run.json's lifetime: %+v", rep.Lifetimes[0])
	}
}
