package study

import (
	"fmt"
	"math"
	"regexp"

	"sparkbench/app/analysis"
)

// MaxAdaptiveReps bounds adaptive.max_reps, as axes.reps is bounded.
const MaxAdaptiveReps = 1000

var targetTestRE = regexp.MustCompile(`^(pp|tg|pg)(\d*)$`)

// checkAdaptive checks the adaptive repetitions' rule, and warns from the notebook's history
// when a target cannot be met within max_reps.
func (v *validator) checkAdaptive() {
	a := v.p.Adaptive
	if a == nil {
		return
	}
	switch {
	case a.MinReps < 2:
		v.errf("adaptive.min_reps", "%d: a confidence interval needs at least 2 repetitions; give 2 to %d (3 or more is usual)", a.MinReps, MaxAdaptiveReps)
	case a.MaxReps < 1 || a.MaxReps > MaxAdaptiveReps:
		v.errf("adaptive.max_reps", "%d: want 2 to %d repetitions", a.MaxReps, MaxAdaptiveReps)
	case a.MinReps > a.MaxReps:
		v.errf("adaptive.min_reps", "%d is above adaptive.max_reps %d; raise max_reps or lower min_reps", a.MinReps, a.MaxReps)
	}
	if a.ChunkReps < 1 || a.ChunkReps > MaxAdaptiveReps {
		v.errf("adaptive.chunk_reps", "%d: want 1 to %d repetitions per chunk (each chunk is one llama-bench process)", a.ChunkReps, MaxAdaptiveReps)
	}
	if a.Order != OrderBlocks && a.Order != OrderABAB {
		v.errf("adaptive.order", "%q: want %q (a random order each round, from the seed) or %q (plan order every round)", a.Order, OrderBlocks, OrderABAB)
	}
	switch a.Unit {
	case UnitProcess:
		switch mp := a.MinProcesses; {
		case mp < analysis.DefaultMinProcesses:
			v.errf("adaptive.min_processes", "%d: the interval over processes charges a degree of freedom for the stop, so it needs at least %d processes; give %d or more (or leave it out: %d)",
				mp, analysis.DefaultMinProcesses, analysis.DefaultMinProcesses, analysis.DefaultMinProcesses)
		case a.MinReps >= 2 && a.MaxReps >= a.MinReps && a.ChunkReps >= 1 && mp > a.Rule().MaxProcesses():
			v.errf("adaptive.min_processes", "%d processes cannot run within max_reps %d (a first chunk of %d repetitions, then chunks of %d: at most %d processes); raise max_reps or lower min_processes",
				mp, a.MaxReps, a.MinReps, a.ChunkReps, a.Rule().MaxProcesses())
		}
	case UnitRepetition:
		if a.MinProcesses != 0 {
			v.errf("adaptive.min_processes", "%d: only with \"unit\": \"process\"; the repetition rule pools every repetition", a.MinProcesses)
		}
		v.warnf("adaptive.unit", "\"repetition\": the interval pools every repetition of every chunk as if independent, so it leaves out the spread between llama-bench processes and is narrower than the truth when that spread is real; \"process\" (the default) reads the chunks' means")
	case "":
		// a plan registered before process-level statistics (its canonical plan has no unit),
		// read back: its rule pools the repetitions, as it did when it was registered
		if v.p.Given("adaptive.unit") {
			v.errf("adaptive.unit", "empty: want %q (the default) or %q", UnitProcess, UnitRepetition)
		}
	default:
		v.errf("adaptive.unit", "%q: want %q (the interval over the chunks' means, each chunk one llama-bench process; the default) or %q (every repetition pooled, as plans registered before)", a.Unit, UnitProcess, UnitRepetition)
	}
	if v.p.Repeatability != nil {
		v.errf("repeatability", "not with adaptive repetitions: every leg's chunks are interleaved round by round, which spreads drift over all legs instead of measuring it; drop one of the two")
	}
	if len(a.Targets) == 0 {
		v.errf("adaptive.targets", "empty; give at least one precision target, e.g. {\"test\": \"tg\", \"rel\": 0.01} for ±1%%")
	}
	for i, t := range a.Targets {
		path := fmt.Sprintf("adaptive.targets[%d]", i)
		if !targetTestRE.MatchString(t.Test) {
			v.errf(path+".test", "%q: want tg, pp, pg or an exact test such as tg128", t.Test)
		}
		switch {
		case (t.Rel != 0) == (t.Abs != 0):
			v.errf(path, "give exactly one of rel (a fraction of the mean, 0.01 for ±1%%) and abs (t/s)")
		case t.Rel != 0 && !(t.Rel > 0 && t.Rel < 1):
			v.errf(path+".rel", "%g: want a fraction in (0, 1), e.g. 0.01 for ±1%%", t.Rel)
		case t.Abs != 0 && !(t.Abs > 0):
			v.errf(path+".abs", "%g: want a half-width above 0 t/s", t.Abs)
		}
	}
	if w := a.Warmup; w != nil {
		keep := min(a.MinReps, a.ChunkReps)
		if w.MaxDiscard < 0 || w.MaxDiscard > max(keep-2, 0) {
			v.errf("adaptive.warmup.max_discard", "%d: a chunk of %d repetitions keeps at least 2, so at most %d may be dropped; lower it or raise min_reps and chunk_reps", w.MaxDiscard, keep, max(keep-2, 0))
		}
		if !(w.Tolerance > 0 && w.Tolerance < 1) {
			v.errf("adaptive.warmup.tolerance", "%g: want a fraction in (0, 1), e.g. 0.05: a repetition more than 5%% below the rest's median is a warm-up", w.Tolerance)
		}
	}
	if len(Errors(v.problems)) == 0 {
		v.warnUnreachable()
	}
}

// warnUnreachable warns, from the notebook's history of each model, about a relative target
// the maximum cannot reach at the CV measured before.
func (v *validator) warnUnreachable() {
	a := v.p.Adaptive
	if a.ByProcess() {
		v.warnUnreachableProcesses()
		return
	}
	for _, m := range v.p.Models {
		for i, t := range a.Targets {
			cv, rows := HistoryCV(v.opts.History[m.ID], t.Test)
			if rows == 0 || t.Rel == 0 {
				continue
			}
			need := analysis.RepsForPrecision(cv, t.Rel)
			if need > a.MaxReps {
				v.warnf(fmt.Sprintf("adaptive.targets[%d]", i), "%s %s on model %s: at the CV of %.2f%% this notebook measured before (%d past rows), the interval needs %s repetitions, above max_reps %d: the run will end with \"precision not reached\"; raise max_reps or loosen the target",
					t.Test, t.Precision(), m.ID, cv*100, rows, repsWords(need), a.MaxReps)
			}
		}
	}
}

// warnUnreachableProcesses is warnUnreachable for the rule over processes: from the spread
// between processes and within one that the notebook measured on cells of two processes or
// more, the processes of chunk_reps repetitions the interval needs, against those the rule
// can run. With no such cell the history is too thin to say, and nothing is warned.
func (v *validator) warnUnreachableProcesses() {
	a := v.p.Adaptive
	most := a.Rule().MaxProcesses()
	for _, m := range v.p.Models {
		for i, t := range a.Targets {
			if t.Rel == 0 {
				continue
			}
			between, within, cells := historySpread(v.opts.History[m.ID], t.Test)
			if cells == 0 {
				continue
			}
			need := analysis.ProcessesForPrecision(between, within, a.ChunkReps, t.Rel)
			if need > most {
				v.warnf(fmt.Sprintf("adaptive.targets[%d]", i), "%s %s on model %s: at the spread this notebook measured (between processes %.2f%%, within %.2f%%, over %d cell(s) of two processes or more), the interval over processes of %d repetitions needs %s processes, above the %d processes max_reps %d allows: the run will end with \"precision not reached\"; raise max_reps or loosen the target",
					t.Test, t.Precision(), m.ID, between*100, within*100, cells, a.ChunkReps, repsWords(need), most, a.MaxReps)
			}
		}
	}
}

// repsWords is "about 99" repetitions, or "more than 1000" past the planner's bound.
func repsWords(n int) string {
	if n > analysis.PlannerMaxReps {
		return fmt.Sprintf("more than %d", analysis.PlannerMaxReps)
	}
	return fmt.Sprintf("about %d", n)
}

// HistoryCV is the pooled coefficient of variation of a test's repetitions in a model's
// history (rows of that test with at least two repetitions), and how many rows it rests on.
func HistoryCV(h BenchHistory, test string) (cv float64, rows int) {
	var sum float64
	for _, t := range h.Tests {
		if !historyMatches(test, t) || len(t.SamplesNs) < 2 {
			continue
		}
		s := analysis.Summarize(t.SamplesNs)
		sum += s.CV * s.CV
		rows++
	}
	if rows == 0 {
		return 0, 0
	}
	return math.Sqrt(sum / float64(rows)), rows
}

// historyMatches reports whether a past row is the test a selector names.
func historyMatches(test string, t HistoryTest) bool {
	m := targetTestRE.FindStringSubmatch(test)
	if m == nil {
		return false
	}
	kind := "pg"
	switch {
	case t.NGen == 0:
		kind = "pp"
	case t.NPrompt == 0:
		kind = "tg"
	}
	if kind != m[1] {
		return false
	}
	return m[2] == "" || (kind == "pp" && fmt.Sprint(t.NPrompt) == m[2]) || (kind != "pp" && fmt.Sprint(t.NGen) == m[2])
}
