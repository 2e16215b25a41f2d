package study

import (
	"fmt"
	"math"

	"sparkbench/app/analysis"
)

// A comparison prediction with "stats": "benchmath" (docs/adaptive.md) is judged on the two
// cells' repetitions, not on their means: the Hodges–Lehmann interval (95%) of the difference
// a − b, over b's median, against the prediction's tolerance, with the Mann–Whitney U test
// beside it (golang.org/x/perf/benchmath, as `study compare` uses). The claim HOLDS when the
// whole interval is on its side of the tolerance, FAILS when the whole interval is beyond it,
// and is INCONCLUSIVE when the interval straddles it (or there are too few repetitions for an
// interval): the data cannot tell, and the verdict says so rather than reading noise.

// StatsJudged marks a stats comparison's expectation (the scoreboard and receipts show it).
const StatsJudged = "judged on the repetitions (benchmath)"

// StatsJudgedProcesses marks a comparison judged on the cells' processes ("stats": "process").
const StatsJudgedProcesses = "judged on the processes"

// StatsAlpha is the significance level of a stats comparison's U test.
const StatsAlpha = 0.05

// EvaluateComparisonSamples judges a stats comparison on the repetitions a (left) and b
// (right).
func EvaluateComparisonSamples(p Prediction, a, b []float64) Verdict {
	m := analysis.CompareMedians(b, a, StatsAlpha)
	vd := Verdict{Prediction: p.ID, Value: fptr(m.New.Median), Other: fptr(m.Base.Median), Expected: p.Expectation(), Outcome: Inconclusive}
	test := fmt.Sprintf("%s p=%.3g", m.Test, m.P)
	if !m.Significant {
		test += ", ~"
	}
	if m.ShiftLo == nil {
		vd.Detail = fmt.Sprintf("median %.4g vs %.4g (%+.1f%%): %d+%d repetitions give no 95%% interval of the difference; inconclusive (%s)",
			m.New.Median, m.Base.Median, m.Shift*100, len(a), len(b), test)
		return vd
	}
	lo, hi, tol := *m.ShiftLo, *m.ShiftHi, p.Tolerance
	vd.Outcome = judgeInterval(p.Op, lo, hi, tol)
	vd.Detail = fmt.Sprintf("median %.4g vs %.4g: difference %+.1f%% [%+.1f%%, %+.1f%%] (%.0f%% Hodges–Lehmann interval, %s), tolerance %s",
		m.New.Median, m.Base.Median, m.Shift*100, lo*100, hi*100, m.Confidence*100, test, tolText(p.Op, tol))
	if vd.Outcome == Inconclusive {
		vd.Detail += ": the interval straddles it, inconclusive"
	}
	return vd
}

// judgeInterval is a comparison claim judged on the interval [lo, hi] of the relative
// difference a/b − 1: HOLDS when the whole interval is on its side of the tolerance, FAILS when
// the whole interval is beyond it, INCONCLUSIVE when it straddles it.
func judgeInterval(op string, lo, hi, tol float64) Outcome {
	var holds, fails bool
	switch op {
	case ">=":
		holds, fails = lo >= -tol, hi < -tol
	case "<=":
		holds, fails = hi <= tol, lo > tol
	case "within":
		holds, fails = lo >= -tol && hi <= tol, lo > tol || hi < -tol
	}
	switch {
	case holds:
		return Holds
	case fails:
		return Fails
	}
	return Inconclusive
}

// EvaluateComparisonProcesses judges a comparison on the two cells' processes ("stats":
// "process"): the 95% interval of the relative difference a/b − 1 between the process means
// (analysis.CompareProcesses; CompareStopped when an adaptive rule chose the counts) against
// the tolerance, as EvaluateComparisonSamples does with the repetitions. A side of fewer than
// two processes gives no interval: INCONCLUSIVE, saying so.
func EvaluateComparisonProcesses(p Prediction, a, b [][]float64, stopped bool) Verdict {
	c := analysis.CompareProcesses(b, a, StatsAlpha)
	if stopped {
		c = analysis.CompareStopped(b, a, StatsAlpha)
	}
	vd := Verdict{Prediction: p.ID, Value: fptr(c.New.Mean), Other: fptr(c.Base.Mean), Expected: p.Expectation(), Outcome: Inconclusive}
	if math.IsNaN(c.P) {
		vd.Detail = fmt.Sprintf("mean %.4g vs %.4g (%+.1f%%): n=%d+%d processes give no 95%% interval of the difference (one process is a point estimate); inconclusive",
			c.New.Mean, c.Base.Mean, c.Delta*100, c.New.N, c.Base.N)
		return vd
	}
	vd.Outcome = judgeInterval(p.Op, c.DeltaLo, c.DeltaHi, p.Tolerance)
	vd.Detail = fmt.Sprintf("mean %.4g vs %.4g: difference %+.1f%% [%+.1f%%, %+.1f%%] (95%% interval over n=%d+%d processes of m=%s+%s, Welch p=%.3g), tolerance %s",
		c.New.Mean, c.Base.Mean, c.Delta*100, c.DeltaLo*100, c.DeltaHi*100, c.New.N, c.Base.N, c.New.MString(), c.Base.MString(), c.P, tolText(p.Op, p.Tolerance))
	if vd.Outcome == Inconclusive {
		vd.Detail += ": the interval straddles it, inconclusive"
	}
	return vd
}

func tolText(op string, tol float64) string {
	switch op {
	case ">=":
		return fmt.Sprintf("%+.1f%%", -tol*100)
	case "<=":
		return fmt.Sprintf("%+.1f%%", tol*100)
	}
	return fmt.Sprintf("±%.1f%%", math.Abs(tol)*100)
}

// checkStats checks a prediction's stats field: only "benchmath", only on a comparison of two
// cells, and with repetitions enough for an interval of the difference (warned).
func (v *validator) checkStats(at string, pr Prediction) {
	if pr.Stats == "" {
		return
	}
	if pr.Stats != StatsBenchmath && pr.Stats != StatsProcess {
		v.errf(at+".stats", "%q: want %q (judge the claim on the cells' processes), %q (on the repetitions, as if independent) or leave it out (judge the means)", pr.Stats, StatsProcess, StatsBenchmath)
		return
	}
	if pr.Kind != KindComparison || pr.Than == nil || pr.About.Figure != FigureCell || pr.Than.Figure != FigureCell {
		v.errf(at+".stats", "%s judges a comparison of two cells (figure %q on both sides); remove stats for this prediction", pr.Stats, FigureCell)
		return
	}
	if pr.Stats == StatsProcess {
		if v.p.Adaptive == nil {
			v.warnf(at+".stats", "process: a plan without adaptive repetitions runs each cell as one llama-bench process, which gives no interval between processes: this comparison will be inconclusive; give the plan adaptive repetitions (each chunk is a process)")
		}
		return
	}
	if n := v.p.Axes.Reps; n > 0 && analysis.MinPValueU(n, n) >= StatsAlpha {
		v.warnf(at+".stats", "%d repetitions per cell give no 95%% interval of the difference (the U test's smallest p is %.3f): this comparison will be inconclusive; use at least 4", n, analysis.MinPValueU(n, n))
	}
}
