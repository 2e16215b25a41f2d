package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
)

// TestStudyValidatePlannerCLI runs a small study of the tiny model on the real llama-bench,
// then validates a plan of the same model against that notebook: the repetition planner's
// line per test (n per arm for a 3% difference, or --effect's, and the plan's minimum
// detectable effect) from the history the run left, the same figures in --json; registering a
// plan whose band is narrower than the plan can resolve warns, naming the band.
func TestStudyValidatePlannerCLI(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg")) // no default notebook
	nb := filepath.Join(dir, "notebook.db")
	registerAndRun(t, nb, writeSmallPlan(t, dir, "pilot", tiny, tinySHA, "0, 128", 4), loc.Dir, true)

	plan := writeSmallPlan(t, dir, "next", tiny, tinySHA, "0", 5)
	code, out, errOut := runCLI("study", "validate", plan, "--notebook", nb, "--json", "--effect", "5")
	var v workbench.ThroughputValidation
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("validate --json: %d %s %s", code, out, errOut)
	}
	if len(v.Planner) != 2 || v.Planner[0].Test != "pp16" || v.Planner[1].Test != "tg8" {
		t.Fatalf("planner: %+v", v.Planner)
	}
	for _, r := range v.Planner {
		if r.Rows == 0 || !(r.CV > 0) || r.Effect != 0.05 || r.PlanReps != 5 ||
			r.Reps != analysis.RepsToDetect(r.CV, 0.05, study.PlannerAlpha, study.PlannerPower) ||
			r.MDE != analysis.MinDetectableEffect(r.CV, 5, study.PlannerAlpha, study.PlannerPower) {
			t.Errorf("%s: %+v", r.Test, r)
		}
		t.Logf("%s", r.Words())
	}
	// One pilot: each cell one process, too thin to say what decides a comparison.
	code, out, _ = runCLI("study", "validate", plan, "--notebook", nb)
	// the lower bound in words: "n ≈ 66", or past the planner's bound (a CV of 30% under
	// load) "more than 1000"
	lower := fmt.Sprintf("n ≈ %d", analysis.RepsToDetect(v.Planner[1].CV, 0.03, study.PlannerAlpha, study.PlannerPower))
	if analysis.RepsToDetect(v.Planner[1].CV, 0.03, study.PlannerAlpha, study.PlannerPower) > analysis.PlannerMaxReps {
		lower = fmt.Sprintf("more than %d", analysis.PlannerMaxReps)
	}
	for _, want := range []string{workbench.PlannerHeading,
		fmt.Sprintf("  tg8 of m (CV %.2f%% within one process, over %d past rows): too thin to say what a comparison needs: no cell was measured by two processes or more", v.Planner[1].CV*100, v.Planner[1].Rows),
		fmt.Sprintf("within one process alone a 3%% difference would take %s repetitions per arm: a lower bound", lower)} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("validate lacks %q:\n%s", want, out)
		}
	}
	if v.Planner[1].Cells != 0 || v.Planner[1].Processes != 0 {
		t.Errorf("one process a cell: %+v", v.Planner[1])
	}
	// The pilot again: every cell now measured by two processes, so the spread between them is
	// estimated and the answer is in processes of the plan's 5 repetitions.
	registerAndRun(t, nb, writeSmallPlan(t, dir, "pilot again", tiny, tinySHA, "0, 128", 4), loc.Dir, true)
	code, out, errOut = runCLI("study", "validate", plan, "--notebook", nb, "--json")
	var v2 workbench.ThroughputValidation
	if code != 0 || json.Unmarshal([]byte(out), &v2) != nil || len(v2.Planner) != 2 {
		t.Fatalf("validate --json after a second pilot: %d %s %s", code, out, errOut)
	}
	tg := v2.Planner[1]
	if tg.Cells < 1 || tg.M != 5 || tg.PlanProcesses != 1 || tg.ProcessMDE != nil || tg.Processes < 2 {
		t.Errorf("two processes a cell: %+v", tg)
	}
	code, out, _ = runCLI("study", "validate", plan, "--notebook", nb)
	for _, want := range []string{fmt.Sprintf("  tg8 of m (between processes CV %.2f%% over %d cell(s) of two processes or more; within one ", tg.BetweenCV*100, tg.Cells),
		"processes of 5 repetitions per arm", "the plan as written (one process per cell) gives no interval between processes"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("validate lacks %q:\n%s", want, out)
		}
	}
	// No notebook: no planner; a notebook named that is not there: refused.
	if code, out, _ := runCLI("study", "validate", plan); code != 0 || strings.Contains(out, "planner") {
		t.Errorf("without a notebook: %d\n%s", code, out)
	}
	if code, _, errOut := runCLI("study", "validate", plan, "--notebook", filepath.Join(dir, "none.db")); code != 2 || errOut == "" {
		t.Errorf("a missing notebook: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("study", "validate", plan, "--effect", "0"); code != 2 || !strings.Contains(errOut, "--effect 0") {
		t.Errorf("--effect 0: %d %q", code, errOut)
	}

	// A band of ±0.01% on tg8 at d0: narrower than one process of 5 repetitions resolves here,
	// at the spread between processes the two pilots measured.
	narrow := writeBandPlan(t, dir, tiny)
	code, out, errOut = runCLI("study", "register", narrow, "--notebook", nb)
	if code != 0 || !strings.Contains(errOut, "warning: predictions[0]: P1: the band [1000, 1000.2] is ±0.01% about its middle, narrower than the ±") ||
		!strings.Contains(errOut, "this plan resolves for tg of model m (one process of 5 reps, at the spread of ") ||
		!strings.Contains(errOut, "between llama-bench processes and ") {
		t.Errorf("register a narrow band: %d %s %s", code, out, errOut)
	}
}

// writeBandPlan writes writeSmallPlan's plan at depth 0 with 5 repetitions and a narrow band.
func writeBandPlan(t *testing.T, dir, model string) string {
	t.Helper()
	path := writeSmallPlan(t, dir, "narrow band", model, tinySHA, "0", 5)
	p, err := study.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, d := 1000.0, 1000.2, 0
	p.Predictions = []study.Prediction{{ID: "P1", Text: "tg8 at d0 is 1000 t/s to a hair", Kind: study.KindBand,
		About: study.Selector{Figure: study.FigureCell, Model: "m", Test: "tg", Depth: &d}, Lo: &lo, Hi: &hi}}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
