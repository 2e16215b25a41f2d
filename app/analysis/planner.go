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

// ProcessSpread estimates, from cells each measured by several processes (a cell: its
// processes, each a list of repetitions), the relative spread between processes and within
// one: within² pools every process's variance about its own mean (over its cell's mean²,
// weighted by its degrees of freedom); between² pools each cell's variance of process means
// less within²/m (m: the cell's mean repetitions per process), weighted by the cell's
// processes less one, floored at 0. Cells of fewer than two processes inform within only.
// cells counts those of two processes or more (0: between unknown).
func ProcessSpread(groups [][][]float64) (between, within float64, cells int) {
	var sw, dw float64
	type cellVar struct{ v, m, k float64 }
	var cvs []cellVar
	for _, g := range groups {
		var all []float64
		for _, p := range g {
			all = append(all, p...)
		}
		if len(all) == 0 {
			continue
		}
		grand := Summarize(all).Mean
		if grand == 0 {
			continue
		}
		var means []float64
		reps := 0
		for _, p := range g {
			if len(p) == 0 {
				continue
			}
			s := Summarize(p)
			means = append(means, s.Mean/grand)
			reps += len(p)
			if len(p) > 1 {
				sw += (s.SD / grand) * (s.SD / grand) * float64(len(p)-1)
				dw += float64(len(p) - 1)
			}
		}
		if len(means) > 1 {
			sd := Summarize(means).SD
			cvs = append(cvs, cellVar{v: sd * sd, m: float64(reps) / float64(len(means)), k: float64(len(means))})
		}
	}
	if dw > 0 {
		within = math.Sqrt(sw / dw)
	}
	var sb, db float64
	for _, c := range cvs {
		sb += (c.v - within*within/c.m) * (c.k - 1)
		db += c.k - 1
	}
	if db > 0 && sb > 0 {
		between = math.Sqrt(sb / db)
	}
	return between, within, len(cvs)
}

// processCV is the relative spread of one process's mean of m repetitions.
func processCV(between, within float64, m int) float64 {
	return math.Sqrt(between*between + within*within/float64(max(m, 1)))
}

// ProcessesToDetect is the processes of m repetitions per arm a comparison of process means
// (Welch's t-test on them, StatsProcess) needs to detect a relative effect at alpha with the
// given power, from the spread between processes and within one: the t-test's n on 2n−2
// degrees of freedom, at least 2 (PlannerMaxReps+1: more than the planner counts).
func ProcessesToDetect(between, within float64, m int, effect, alpha, power float64) int {
	cv := processCV(between, within, m)
	if !(cv > 0) || !(effect > 0) {
		return 2
	}
	for n := 2; n <= PlannerMaxReps; n++ {
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(2*n - 2)}
		q := t.Quantile(1-alpha/2) + t.Quantile(power)
		if float64(n) >= 2*(q*cv/effect)*(q*cv/effect) {
			return n
		}
	}
	return PlannerMaxReps + 1
}

// ProcessMDE is the smallest relative effect n processes of m repetitions per arm detect
// (+Inf with fewer than two processes: no interval between processes).
func ProcessMDE(between, within float64, m, n int, alpha, power float64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(2*n - 2)}
	q := t.Quantile(1-alpha/2) + t.Quantile(power)
	return q * processCV(between, within, m) * math.Sqrt(2/float64(n))
}

// ProcessesForPrecision is the expected processes of m repetitions for the adaptive rule's
// interval over processes (SummarizeStopped: n−2 degrees of freedom) to reach ±rel, from the
// spread between processes and within one: the smallest n ≥ 3 with
// t(0.975, n−2)·cv/√n ≤ rel, cv the spread of one process's mean (PlannerMaxReps+1 when none
// up to the bound).
func ProcessesForPrecision(between, within float64, m int, rel float64) int {
	cv := processCV(between, within, m)
	if !(rel > 0) {
		return PlannerMaxReps + 1
	}
	for n := 3; n <= PlannerMaxReps; n++ {
		if TCritical(0.95, float64(n-2))*cv/math.Sqrt(float64(n)) <= rel {
			return n
		}
	}
	return PlannerMaxReps + 1
}
