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
	// The process level (docs/adaptive.md, "Processes and repetitions"): what decides a
	// comparison is the spread between llama-bench processes. BetweenCV is estimated from the
	// history's cells measured by two processes or more (Cells of them: 0, too thin to say;
	// CV, Reps and MDE above are then within one process only, a lower bound); M is the
	// repetitions a process of the plan runs; Processes how many such processes per arm detect
	// Effect, ProcessSeconds about how long an arm runs them; PlanProcesses what the plan runs
	// per arm at most, ProcessMDE the smallest effect that detects (null: fewer than two, no
	// interval between processes).
	BetweenCV      float64  `json:"between_cv"`
	Cells          int      `json:"cells"`
	M              int      `json:"m"`
	Processes      int      `json:"processes"`
	ProcessSeconds float64  `json:"process_seconds"`
	PlanProcesses  int      `json:"plan_processes"`
	ProcessMDE     *float64 `json:"process_mde"`
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
				r.planProcesses(p, history[m.ID], t, rates)
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

// planProcesses fills the process-level answer from the history's cells of this test measured
// by several processes (each row one process; a cell: the same depth and configuration).
func (r *RepPlan) planProcesses(p *Plan, h BenchHistory, t planTest, rates *modelRates) {
	var within float64
	r.BetweenCV, within, r.Cells = historySpread(h, t.name)
	r.M, r.PlanProcesses = planProcessShape(p)
	if r.Cells == 0 {
		return
	}
	r.Processes = analysis.ProcessesToDetect(r.BetweenCV, within, r.M, r.Effect, PlannerAlpha, PlannerPower)
	if mde := analysis.ProcessMDE(r.BetweenCV, within, r.M, r.PlanProcesses, PlannerAlpha, PlannerPower); !math.IsInf(mde, 0) {
		r.ProcessMDE = &mde
	}
	if rates != nil && r.Processes <= analysis.PlannerMaxReps {
		var total time.Duration
		for _, d := range p.Axes.Depths {
			total += rates.overhead*time.Duration(r.Processes) + rates.testTime(t.nPrompt, t.nGen, d, r.Processes*(r.M+1))
		}
		r.ProcessSeconds = total.Seconds()
	}
}

// historySpread is the spread between processes and within one of a test in a model's
// history: its rows (each one process) grouped in cells of one depth and configuration
// (analysis.ProcessSpread; cells: those of two processes or more).
func historySpread(h BenchHistory, test string) (between, within float64, cells int) {
	type key struct {
		depth  int
		config int64
	}
	byCell := map[key][][]float64{}
	var order []key
	for _, ht := range h.Tests {
		if !historyMatches(test, ht) || len(ht.SamplesNs) == 0 {
			continue
		}
		k := key{ht.Depth, ht.Config}
		if _, ok := byCell[k]; !ok {
			order = append(order, k)
		}
		byCell[k] = append(byCell[k], ht.SamplesNs)
	}
	var groups [][][]float64
	for _, k := range order {
		groups = append(groups, byCell[k])
	}
	return analysis.ProcessSpread(groups)
}

// planProcessShape is what a plan runs per cell: m repetitions a process, and at most that
// many processes (a fixed plan: one; an adaptive plan: its first chunk and every later one).
func planProcessShape(p *Plan) (m, processes int) {
	m, processes = max(p.Axes.Reps, 1), 1
	if a := p.Adaptive; a != nil {
		m = a.MinReps
		if a.ChunkReps > 0 {
			m = a.ChunkReps
			processes = 1 + max(a.MaxReps-a.MinReps+a.ChunkReps-1, 0)/a.ChunkReps
		}
	}
	return m, processes
}

// Words says the answer in one line, at the process level: "tg16 of medium (between
// processes CV 1.30% over 2 cell(s) of two processes or more; within one 2.31% over 12 past
// rows): to detect a 3% difference at 95% confidence you need n ≈ 5 processes of 3 repetitions
// per arm, about 1m20s per arm; the plan as written (one process per cell) gives no interval
// between processes"; with no cell of two processes, that history is too thin to say.
func (r RepPlan) Words() string {
	if r.Rows == 0 {
		return fmt.Sprintf("%s of %s: no history in this notebook; run any study of this model once (a pilot) and validate again", r.Test, r.Model)
	}
	if r.Cells == 0 {
		lower := fmt.Sprintf("n ≈ %d", r.Reps)
		if r.Reps > analysis.PlannerMaxReps {
			lower = fmt.Sprintf("more than %d", analysis.PlannerMaxReps)
		}
		return fmt.Sprintf("%s of %s (CV %.2f%% within one process, over %d past rows): too thin to say what a comparison needs: no cell was measured by two processes or more, so the spread between llama-bench processes, which decides it, is unknown (within one process alone a %g%% difference would take %s repetitions per arm: a lower bound); run these cells as several processes (an adaptive plan's chunks, or the plan again) and validate again",
			r.Test, r.Model, r.CV*100, r.Rows, r.Effect*100, lower)
	}
	need := fmt.Sprintf("n ≈ %d processes of %d repetitions per arm", r.Processes, r.M)
	if r.Processes > analysis.PlannerMaxReps {
		need = fmt.Sprintf("more than %d processes of %d repetitions per arm", analysis.PlannerMaxReps, r.M)
	} else if r.ProcessSeconds > 0 {
		need += fmt.Sprintf(", about %s per arm", roundDuration(time.Duration(r.ProcessSeconds*float64(time.Second))))
	}
	plan := "(one process per cell) gives no interval between processes"
	if r.ProcessMDE != nil {
		plan = fmt.Sprintf("(up to %d processes of %d per arm) detects %.1f%% or more", r.PlanProcesses, r.M, *r.ProcessMDE*100)
	}
	return fmt.Sprintf("%s of %s (between processes CV %.2f%% over %d cell(s) of two processes or more; within one %.2f%% over %d past rows): to detect a %g%% difference at 95%% confidence you need %s; the plan as written %s",
		r.Test, r.Model, r.BetweenCV*100, r.Cells, r.CV*100, r.Rows, r.Effect*100, need, plan)
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
		if between, within, cells := historySpread(v.opts.History[model], pr.About.Test); cells > 0 {
			h, how := v.processResolution(pr.About.Test, between, within)
			if band < h {
				v.warnf(fmt.Sprintf("predictions[%d]", i), "%s: the band [%g, %g] is ±%.2f%% about its middle, narrower than the ±%.2f%% this plan resolves for %s of model %s (%s, at the spread of %.2f%% between llama-bench processes and %.2f%% within one this notebook measured over %d cell(s) of two processes or more): its verdict cannot be told from noise; widen the band or run the cell as more processes",
					pr.ID, *pr.Lo, *pr.Hi, band*100, h*100, pr.About.Test, model, how, between*100, within*100, cells)
			}
			continue
		}
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

// processResolution is resolution at the process level: the relative half-width of the 95%
// interval of a cell's mean over the processes the plan runs, each of m repetitions, at the
// history's spread between and within processes. One process (a fixed plan): its mean's own
// 95% spread, 1.96 of its relative SD (the spread known from history); an adaptive plan: the
// t-based interval over its processes, or its target when that is wider (it stops there).
func (v *validator) processResolution(test string, between, within float64) (float64, string) {
	m, n := planProcessShape(v.p)
	sd := math.Sqrt(between*between + within*within/float64(m))
	if n < 2 {
		return 1.96 * sd, fmt.Sprintf("one process of %d reps", m)
	}
	h, how := analysis.TCritical(0.95, float64(n-1))*sd/math.Sqrt(float64(n)), fmt.Sprintf("at most %d processes of %d reps", n, m)
	for _, t := range v.p.Adaptive.Targets {
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
