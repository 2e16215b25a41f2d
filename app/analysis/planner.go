package analysis

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// The repetition planner: how many repetitions per arm a comparison needs to detect an effect,
// the smallest effect a plan as written can detect, and how many repetitions a precision
// target needs, all from a coefficient of variation (the notebook's history or a pilot run).

// mwEfficiency is the Mann–Whitney U test's asymptotic relative efficiency against the t-test
// on normal samples (3/π): it needs about 1/0.955 times the t-test's repetitions.
const mwEfficiency = 3 / math.Pi

// PlannerMaxReps bounds the planner's answers (a plan's max_reps is at most 1000 too).
const PlannerMaxReps = 1000

// RepsToDetect is the repetitions per arm a two-sided Mann–Whitney comparison at alpha needs to
// detect a relative effect (0.03 for 3%) with the given power, on samples with the given CV:
// the t-test's n with Student quantiles on 2n−2 degrees of freedom, divided by the U test's
// efficiency, rounded up, plus one repetition for the exact U test's discreteness at small n
// (without it, 3% at CV 2% gets n=9 and a simulated power of 0.79, not 0.80). PlannerMaxReps+1
// means "more than the planner counts".
func RepsToDetect(cv, effect, alpha, power float64) int {
	if !(cv > 0) || !(effect > 0) {
		return 3
	}
	n := 2
	for n <= PlannerMaxReps {
		df := float64(2*n - 2)
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
		q := t.Quantile(1-alpha/2) + t.Quantile(power)
		need := 2 * (q * cv / effect) * (q * cv / effect) / mwEfficiency
		if float64(n) >= need {
			return n + 1
		}
		n++
	}
	return PlannerMaxReps + 1
}

// MinDetectableEffect is the smallest relative effect a comparison of n repetitions per arm
// detects with the given power at alpha, on samples with the given CV (+Inf when n < 2).
func MinDetectableEffect(cv float64, n int, alpha, power float64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(2*n - 2)}
	q := t.Quantile(1-alpha/2) + t.Quantile(power)
	return q * cv * math.Sqrt(2/(float64(n)*mwEfficiency))
}

// RepsForPrecision is the expected repetitions for a mean's 95% interval to reach ±rel (a
// fraction) on samples with the given CV: the smallest n ≥ 2 with t(0.975, n−1)·cv/√n ≤ rel
// (PlannerMaxReps+1 when none up to the bound).
func RepsForPrecision(cv, rel float64) int {
	if !(rel > 0) {
		return PlannerMaxReps + 1
	}
	for n := 2; n <= PlannerMaxReps; n++ {
		if TCritical(0.95, float64(n-1))*cv/math.Sqrt(float64(n)) <= rel {
			return n
		}
	}
	return PlannerMaxReps + 1
}
