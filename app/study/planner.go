package study

import (
	"fmt"
	"math"
	"strings"
	"time"

	"sparkbench/app/analysis"
)

// The repetition planner (docs/adaptive.md): from the notebook's history of a plan's models on
// this machine, how many repetitions per arm a comparison needs to detect an effect, about how
// long they take, and the smallest effect the plan as written detects; and, at validation and
// registration, a warning for each band prediction narrower than the plan can resolve.

// Planner's fixed levels: a two-sided comparison at 95% confidence with 80% power.
const (
	PlannerAlpha = 0.05
	PlannerPower = 0.8
	// DefaultPlannerEffect is the difference the planner sizes a comparison for (3%).
	DefaultPlannerEffect = 0.03
)

// RepPlan is the planner's answer for one test of one model.
type RepPlan struct {
	Model string `json:"model"`
	Test  string `json:"test"` // "tg16", "pp64"
	// CV is the pooled coefficient of variation of the test's past repetitions, Rows how many
	// past rows it rests on (0: no history; nothing else is then filled in).
	CV   float64 `json:"cv"`
	Rows int     `json:"rows"`
	// Reps is the repetitions per arm that detect Effect (a fraction) with the planner's power;
	// Seconds about how long one arm runs them at the plan's depths (0: unknown).
	Effect  float64 `json:"effect"`
	Reps    int     `json:"reps"`
	Seconds float64 `json:"seconds"`
	// PlanReps is what a leg of the plan runs (axes.reps, or adaptive.max_reps), MDE the
	// smallest effect that many repetitions per arm detect.
	PlanReps int     `json:"plan_reps"`
	MDE      float64 `json:"mde"`
}

// PlanRepetitions is the planner's answer for each test of each model of the plan (after
// Defaults) from the history of its models (by model ID); effect <= 0: DefaultPlannerEffect.
func PlanRepetitions(p *Plan, history map[string]BenchHistory, effect float64) []RepPlan {
	if !(effect > 0) {
		effect = DefaultPlannerEffect
	}
	planReps := p.Axes.Reps
	if p.Adaptive != nil {
		planReps = p.Adaptive.MaxReps
	}
	var out []RepPlan
	for _, m := range p.Models {
		rates, _ := ratesOf(history[m.ID])
		for _, t := range planTests(p) {
			r := RepPlan{Model: m.ID, Test: t.name, Effect: effect, PlanReps: planReps}
			r.CV, r.Rows = HistoryCV(history[m.ID], t.name)
			if r.Rows > 0 {
				r.Reps = analysis.RepsToDetect(r.CV, effect, PlannerAlpha, PlannerPower)
				r.MDE = analysis.MinDetectableEffect(r.CV, planReps, PlannerAlpha, PlannerPower)
				if rates != nil && r.Reps <= analysis.PlannerMaxReps {
					r.Seconds = armTime(p, rates, t, r.Reps).Seconds()
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// planTest is one test of the plan's axes: pp (nPrompt) or tg (nGen).
type planTest struct {
	name          string
	nPrompt, nGen int
}

func planTests(p *Plan) []planTest {
	var out []planTest
	for _, np := range p.Axes.NPrompt {
		if np > 0 {
			out = append(out, planTest{name: fmt.Sprintf("pp%d", np), nPrompt: np})
		}
	}
	for _, ng := range p.Axes.NGen {
		if ng > 0 {
			out = append(out, planTest{name: fmt.Sprintf("tg%d", ng), nGen: ng})
		}
	}
	return out
}

// armTime is about how long one arm (one configuration) runs a test n times at each of the
// plan's depths: the repetitions with each process's warm-up run, and each process's
// overhead (loading the model) — one process per depth, times the chunks of an adaptive plan.
func armTime(p *Plan, r *modelRates, t planTest, n int) time.Duration {
	processes := 1
	if a := p.Adaptive; a != nil && n > a.MinReps && a.ChunkReps > 0 {
		processes += (n - a.MinReps + a.ChunkReps - 1) / a.ChunkReps
	}
	var total time.Duration
	for _, d := range p.Axes.Depths {
		total += r.overhead*time.Duration(processes) + r.testTime(t.nPrompt, t.nGen, d, n+processes-1)
	}
	return total
}

// Words says the answer in one line: "tg16 of medium (CV 2.31% over 12 past rows): to detect a
// 3% difference at 95% confidence with this CV you need n ≈ 10 repetitions per arm, about
// 1m20s per arm; the plan as written (15 reps) detects 2.4% or more".
func (r RepPlan) Words() string {
	if r.Rows == 0 {
		return fmt.Sprintf("%s of %s: no history in this notebook; run any study of this model once (a pilot) and validate again", r.Test, r.Model)
	}
	if r.Reps > analysis.PlannerMaxReps {
		return fmt.Sprintf("%s of %s (CV %.2f%% over %d past rows): to detect a %g%% difference at 95%% confidence with this CV you need more than %d repetitions per arm; the plan as written (%d reps) detects %.1f%% or more",
			r.Test, r.Model, r.CV*100, r.Rows, r.Effect*100, analysis.PlannerMaxReps, r.PlanReps, r.MDE*100)
	}
	about := ""
	if r.Seconds > 0 {
		about = fmt.Sprintf(", about %s per arm", roundDuration(time.Duration(r.Seconds*float64(time.Second))))
	}
	return fmt.Sprintf("%s of %s (CV %.2f%% over %d past rows): to detect a %g%% difference at 95%% confidence with this CV you need n ≈ %d repetitions per arm%s; the plan as written (%d reps) detects %.1f%% or more",
		r.Test, r.Model, r.CV*100, r.Rows, r.Effect*100, r.Reps, about, r.PlanReps, r.MDE*100)
}

// checkResolution warns, from the notebook's history, about each band prediction on a cell
// whose band is narrower than the 95% interval of the mean the plan can resolve: no verdict
// could then be told from noise.
func (v *validator) checkResolution() {
	if len(v.opts.History) == 0 || len(Errors(v.problems)) > 0 {
		return
	}
	for i, pr := range v.p.Predictions {
		if pr.Kind != KindBand || pr.About.Figure != FigureCell || pr.Lo == nil || pr.Hi == nil || *pr.Lo+*pr.Hi <= 0 {
			continue
		}
		model := pr.About.Model
		if model == "" && len(v.p.Models) == 1 {
			model = v.p.Models[0].ID
		}
		cv, rows := HistoryCV(v.opts.History[model], pr.About.Test)
		if rows == 0 {
			continue
		}
		band := (*pr.Hi - *pr.Lo) / (*pr.Hi + *pr.Lo)
		h, how := v.resolution(pr.About.Test, cv)
		if band >= h {
			continue
		}
		v.warnf(fmt.Sprintf("predictions[%d]", i), "%s: the band [%g, %g] is ±%.2f%% about its middle, narrower than the ±%.2f%% 95%% interval this plan resolves for %s of model %s (%s, at the CV of %.2f%% this notebook measured over %d past rows): its verdict cannot be told from noise; widen the band or raise the repetitions (%s for ±%.2f%%)",
			pr.ID, *pr.Lo, *pr.Hi, band*100, h*100, pr.About.Test, model, how, cv*100, rows, repsWords(analysis.RepsForPrecision(cv, band)), band*100)
	}
}

// resolution is the relative half-width of a cell's 95% interval the plan reaches for a test
// at a CV, and how: a fixed plan's axes.reps; an adaptive plan stops at its target for the
// test (when one applies) or at max_reps, whichever is reached first.
func (v *validator) resolution(test string, cv float64) (float64, string) {
	hw := func(n int) float64 { return analysis.TCritical(0.95, float64(n-1)) * cv / math.Sqrt(float64(n)) }
	a := v.p.Adaptive
	if a == nil {
		n := max(v.p.Axes.Reps, 2)
		return hw(n), fmt.Sprintf("%d reps", n)
	}
	h, how := hw(max(a.MaxReps, 2)), fmt.Sprintf("at most %d reps", a.MaxReps)
	for _, t := range a.Targets {
		if t.Rel > 0 && targetCovers(t.Test, test) && t.Rel > h {
			return t.Rel, fmt.Sprintf("stopping at its target ±%g%%", t.Rel*100)
		}
	}
	return h, how
}

// targetCovers reports whether an adaptive target's test selector ("tg", "tg16") covers a
// prediction's ("tg", "tg16"): the same, or the target names the kind alone.
func targetCovers(target, test string) bool {
	return target == test || (len(target) == 2 && strings.HasPrefix(test, target))
}
