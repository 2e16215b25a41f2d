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
	var holds, fails bool
	switch p.Op {
	case ">=":
		holds, fails = lo >= -tol, hi < -tol
	case "<=":
		holds, fails = hi <= tol, lo > tol
	case "within":
		holds, fails = lo >= -tol && hi <= tol, lo > tol || hi < -tol
	}
	switch {
	case holds:
		vd.Outcome = Holds
	case fails:
		vd.Outcome = Fails
	}
	vd.Detail = fmt.Sprintf("median %.4g vs %.4g: difference %+.1f%% [%+.1f%%, %+.1f%%] (%.0f%% Hodges–Lehmann interval, %s), tolerance %s",
		m.New.Median, m.Base.Median, m.Shift*100, lo*100, hi*100, m.Confidence*100, test, tolText(p.Op, tol))
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
	if pr.Stats != StatsBenchmath {
		v.errf(at+".stats", "%q: want %q (judge the claim on the repetitions) or leave it out (judge the means)", pr.Stats, StatsBenchmath)
		return
	}
	if pr.Kind != KindComparison || pr.Than == nil || pr.About.Figure != FigureCell || pr.Than.Figure != FigureCell {
		v.errf(at+".stats", "benchmath judges a comparison of two cells (figure %q on both sides); remove stats for this prediction", FigureCell)
		return
	}
	if n := v.p.Axes.Reps; n > 0 && analysis.MinPValueU(n, n) >= StatsAlpha {
		v.warnf(at+".stats", "%d repetitions per cell give no 95%% interval of the difference (the U test's smallest p is %.3f): this comparison will be inconclusive; use at least 4", n, analysis.MinPValueU(n, n))
	}
}
