package study

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"sparkbench/app/analysis"
)

// cv2History is a model's history with tg32 measured at a CV of exactly 2% (98, 100, 102 ns:
// sd 2, mean 100) by one past leg of 10 s whose three 1 s repetitions (32 tokens each: 32 t/s)
// and warm-up run took 4 s: a leg's overhead of 6 s.
func cv2History() BenchHistory {
	return BenchHistory{
		Tests: []HistoryTest{{LegID: 1, NGen: 32, AvgNs: 1e9, Reps: 3, SamplesNs: []float64{98, 100, 102}}},
		Legs:  []HistoryLeg{{ID: 1, Wall: 10e9}},
	}
}

// TestPlannerFromHistory: at the CV of 2% the notebook measured, a 3% difference needs n = 10
// repetitions per arm — the n at which TestSimulatedStoppingRuleAndComparison measured a power
// of 0.8355 — and one arm of a one-depth plan takes about 17 s: the 6 s overhead and eleven
// 1 s runs (ten repetitions and the warm-up). The plan as written (3 reps) detects only a larger
// effect; a model without history says so.
func TestPlannerFromHistory(t *testing.T) {
	p := loadValid(t)
	p.Axes.Depths = []int{0}
	got := PlanRepetitions(p, map[string]BenchHistory{"tiny": cv2History()}, 0)
	if len(got) != 4 || got[0].Test != "pp64" || got[1].Test != "tg32" || got[2].Model != "moe" {
		t.Fatalf("planner: %+v", got)
	}
	tg := got[1]
	if tg.Rows != 1 || tg.CV != 0.02 || tg.Effect != 0.03 || tg.Reps != 10 || tg.Seconds != 17 || tg.PlanReps != 3 {
		t.Fatalf("tg32 of tiny: %+v", tg)
	}
	if !(tg.MDE > 0.03) || !(analysis.MinDetectableEffect(tg.CV, tg.Reps, PlannerAlpha, PlannerPower) <= 0.03) {
		t.Errorf("MDE at the plan's 3 reps %g; at the planner's 10 it must be within 3%%", tg.MDE)
	}
	// One process per cell in the history: the within-process figures are a lower bound, and
	// the planner says the history is too thin for what decides a comparison.
	want := "tg32 of tiny (CV 2.00% within one process, over 1 past rows): too thin to say what a comparison needs: no cell was measured by two processes or more, so the spread between llama-bench processes, which decides it, is unknown (within one process alone a 3% difference would take n ≈ 10 repetitions per arm: a lower bound)"
	if !strings.HasPrefix(tg.Words(), want) || tg.Cells != 0 || tg.Processes != 0 || tg.ProcessMDE != nil || tg.M != 3 || tg.PlanProcesses != 1 {
		t.Errorf("words %q (%+v)", tg.Words(), tg)
	}
	if got[0].Rows != 0 || !strings.Contains(got[0].Words(), "pp64 of tiny: no history in this notebook") ||
		got[3].Rows != 0 || !strings.Contains(got[3].Words(), "tg32 of moe: no history") {
		t.Errorf("no history: %q %q", got[0].Words(), got[3].Words())
	}
	// An adaptive plan runs its n in chunks: 10 reps from 3 in chunks of 3 are four processes
	// (3+3+3+1), each with its overhead and warm-up: 4·6 s + (10+4)·1 s.
	adaptiveOf(p)
	p.Adaptive.MaxReps = 30
	a := PlanRepetitions(p, map[string]BenchHistory{"tiny": cv2History()}, 0.03)[1]
	if a.Reps != 10 || a.Seconds != 4*6+14 || a.PlanReps != 30 || !(a.MDE < 0.03) {
		t.Errorf("adaptive: %+v", a)
	}
}

// TestNarrowBandWarned: a band prediction on a cell narrower than the interval the plan
// resolves is warned about (at validation, hence at registration), with the repetitions a band
// that narrow needs; a band wide enough is not, nor any band without history.
func TestNarrowBandWarned(t *testing.T) {
	hist := map[string]BenchHistory{"tiny": cv2History()}
	band := func(lo, hi float64) *Plan { return bandPlan(t, lo, hi) }
	// 3 reps at CV 2%: t(0.975, 2)·2%/√3 = ±4.97%; the band 99-101 is ±1%, which needs 18
	// reps: t(0.975, 17)·2%/√18 = 2.110·0.471% = ±0.995%, where 17 give 2.120·2%/√17 = ±1.03%.
	got := problemsOf(t, band(99, 101), ValidateOptions{History: hist})
	want := "warning: predictions[0]: P1: the band [99, 101] is ±1.00% about its middle, narrower than the ±4.97% 95% interval this plan resolves for tg of model tiny (3 reps, at the CV of 2.00% this notebook measured over 1 past rows): its verdict cannot be told from noise; widen the band or raise the repetitions (about 18 for ±1.00%)"
	if !strings.Contains(got, want) || strings.Count(got, "warning: predictions[") != 1 {
		t.Fatalf("got:\n%s", got)
	}
	if got := problemsOf(t, band(90, 110), ValidateOptions{History: hist}); strings.Contains(got, "predictions[0]") {
		t.Errorf("a ±10%% band: %s", got)
	}
	if got := problemsOf(t, band(99, 101), ValidateOptions{}); got != "" {
		t.Errorf("no history: %s", got)
	}
	// Adaptive to ±3% on tg: the run stops there, so a ±2% band cannot be resolved, whatever
	// max_reps allows; a ±5% one can.
	p := band(98, 102)
	adaptiveOf(p)
	p.Adaptive.Targets[0].Rel = 0.03
	if got := problemsOf(t, p, ValidateOptions{History: hist}); !strings.Contains(got, "narrower than the ±3.00% 95% interval this plan resolves for tg of model tiny (stopping at its target ±3%") {
		t.Errorf("adaptive: %s", got)
	}
	p = band(95, 105)
	adaptiveOf(p)
	p.Adaptive.Targets[0].Rel = 0.03
	if got := problemsOf(t, p, ValidateOptions{History: hist}); strings.Contains(got, "predictions[0]") {
		t.Errorf("adaptive, ±5%%: %s", got)
	}
}

// processHistory is tg32 of a model measured at d0 in one configuration by three processes of
// three repetitions (means 100, 110, 90: a 10% spread between processes; 2% within each),
// and at d128 by one process (within only).
func processHistory() BenchHistory {
	return BenchHistory{
		Tests: []HistoryTest{
			{LegID: 1, Config: 7, NGen: 32, AvgNs: 1e9, Reps: 3, SamplesNs: []float64{98, 100, 102}},
			{LegID: 2, Config: 7, NGen: 32, AvgNs: 1e9, Reps: 3, SamplesNs: []float64{108, 110, 112}},
			{LegID: 3, Config: 7, NGen: 32, AvgNs: 1e9, Reps: 3, SamplesNs: []float64{88, 90, 92}},
			{LegID: 3, Config: 7, NGen: 32, Depth: 128, AvgNs: 1e9, Reps: 3, SamplesNs: []float64{98, 100, 102}},
			// another configuration's process: not the same cell, never pooled with it
			{LegID: 4, Config: 8, NGen: 32, AvgNs: 1e9, Reps: 3, SamplesNs: []float64{49, 50, 51}},
		},
		Legs: []HistoryLeg{{ID: 1, Wall: 10e9}, {ID: 2, Wall: 10e9}, {ID: 3, Wall: 10e9}, {ID: 4, Wall: 10e9}},
	}
}

// TestPlannerBetweenProcesses (issue 31): the planner sizes a comparison in processes, from the
// history's cells measured by several processes: the spread between them (here 10%, against 2%
// within), the processes of the plan's m repetitions per arm it takes, and what the plan as
// written detects: nothing between processes for a fixed plan (one process per cell), an
// effect for an adaptive one (its chunks are processes).
func TestPlannerBetweenProcesses(t *testing.T) {
	p := loadValid(t)
	p.Axes.Depths = []int{0}
	tg := PlanRepetitions(p, map[string]BenchHistory{"tiny": processHistory()}, 0.03)[1]
	wantB := math.Sqrt(0.01 - 0.02*0.02/3)
	if tg.Cells != 1 || math.Abs(tg.BetweenCV-wantB) > 1e-12 || tg.M != 3 || tg.PlanProcesses != 1 || tg.ProcessMDE != nil {
		t.Fatalf("fixed plan: %+v (between want %g)", tg, wantB)
	}
	if want := analysis.ProcessesToDetect(tg.BetweenCV, 0.02, 3, 0.03, PlannerAlpha, PlannerPower); tg.Processes != want || want < 100 {
		t.Errorf("processes %d, want %d (a 10%% spread between processes against a 3%% effect)", tg.Processes, want)
	}
	if w := tg.Words(); !strings.Contains(w, "(between processes CV 9.93% over 1 cell(s) of two processes or more;") ||
		!strings.Contains(w, fmt.Sprintf("you need n ≈ %d processes of 3 repetitions per arm", tg.Processes)) ||
		!strings.HasSuffix(w, "the plan as written (one process per cell) gives no interval between processes") {
		t.Errorf("words %q", w)
	}
	adaptiveOf(p)
	p.Adaptive.MaxReps = 30
	a := PlanRepetitions(p, map[string]BenchHistory{"tiny": processHistory()}, 0.03)[1]
	if a.PlanProcesses != 1+(30-a.M+p.Adaptive.ChunkReps-1)/p.Adaptive.ChunkReps || a.ProcessMDE == nil ||
		*a.ProcessMDE != analysis.ProcessMDE(a.BetweenCV, 0.02, a.M, a.PlanProcesses, PlannerAlpha, PlannerPower) ||
		!strings.Contains(a.Words(), fmt.Sprintf("the plan as written (up to %d processes of %d per arm) detects ", a.PlanProcesses, a.M)) {
		t.Errorf("adaptive plan: %+v %q", a, a.Words())
	}
}

// TestNarrowBandWarnedAtTheProcessLevel: with a history that knows the spread between
// processes (10% here), a band is held to what one process of the plan resolves, 1.96 of that
// spread for a fixed plan: a ±10% band is warned about, a ±25% one is not.
func TestNarrowBandWarnedAtTheProcessLevel(t *testing.T) {
	hist := map[string]BenchHistory{"tiny": processHistory()}
	band := func(lo, hi float64) *Plan { return bandPlan(t, lo, hi) }
	got := problemsOf(t, band(90, 110), ValidateOptions{History: hist})
	want := "warning: predictions[0]: P1: the band [90, 110] is ±10.00% about its middle, narrower than the ±19.60% this plan resolves for tg of model tiny (one process of 3 reps, at the spread of 9.93% between llama-bench processes and 2.00% within one this notebook measured over 1 cell(s) of two processes or more)"
	if !strings.Contains(got, want) {
		t.Fatalf("got:\n%s", got)
	}
	if got := problemsOf(t, band(75, 125), ValidateOptions{History: hist}); strings.Contains(got, "predictions[0]") {
		t.Errorf("a ±25%% band: %s", got)
	}
}

// bandPlan is the valid plan with its first prediction's band set to [lo, hi].
func bandPlan(t *testing.T, lo, hi float64) *Plan {
	t.Helper()
	p := loadValid(t)
	p.Predictions[0].Lo, p.Predictions[0].Hi = &lo, &hi
	return p
}
