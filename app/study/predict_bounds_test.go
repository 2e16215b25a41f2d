package study

import (
	"strings"
	"testing"

	"sparkbench/app/analysis"
)

// TestEvaluateComparisonSamplesAtTheTolerance: an interval bound exactly at the tolerance is on
// its side (holds: lo >= -tol, hi <= tol); fails needs the whole interval strictly beyond it.
// The tolerance is set from the interval itself, so each bound sits on it exactly.
func TestEvaluateComparisonSamplesAtTheTolerance(t *testing.T) {
	base := []float64{100, 100.2, 99.8, 100.4, 99.6, 100.1, 99.9, 100.3, 99.7, 100}
	shifted := func(by float64) []float64 {
		out := make([]float64, len(base))
		for i, x := range base {
			out[i] = x*(1+by) + float64(i%3)*0.05
		}
		return out
	}
	faster, slower, same := shifted(0.05), shifted(-0.05), shifted(0.0005)
	interval := func(a []float64) (lo, hi float64) {
		m := analysis.CompareMedians(base, a, StatsAlpha)
		if m.ShiftLo == nil {
			t.Fatal("no interval")
		}
		return *m.ShiftLo, *m.ShiftHi
	}
	fLo, fHi := interval(faster)
	sLo, sHi := interval(slower)
	eLo, eHi := interval(same)
	if !(fLo > 0 && sHi < 0 && eLo < 0 && eHi > 0) {
		t.Fatalf("intervals: faster [%g, %g], slower [%g, %g], same [%g, %g]", fLo, fHi, sLo, sHi, eLo, eHi)
	}
	wide := max(-eLo, eHi)
	seen := map[string]bool{}
	cases := []struct {
		name string
		op   string
		tol  float64
		a    []float64
		want Outcome
	}{
		{">=: lo at -tol holds", ">=", -sLo, slower, Holds},
		{">=: hi at -tol is not beyond it", ">=", -sHi, slower, Inconclusive},
		{"<=: hi at tol holds", "<=", fHi, faster, Holds},
		{"<=: lo at tol is not beyond it", "<=", fLo, faster, Inconclusive},
		{"within: the wider bound at tol holds", "within", wide, same, Holds},
		{"within: lo at tol is not beyond it", "within", fLo, faster, Inconclusive},
		{"within: hi at -tol is not beyond it", "within", -sHi, slower, Inconclusive},
		{"within: just past lo fails", "within", fLo * 0.999, faster, Fails},
		{"within: just past hi fails", "within", -sHi * 0.999, slower, Fails},
	}
	for _, c := range cases {
		p := Prediction{ID: "C1", Kind: KindComparison, Op: c.op, Tolerance: c.tol, Stats: StatsBenchmath}
		if vd := EvaluateComparisonSamples(p, c.a, base); vd.Outcome != c.want {
			t.Errorf("%s (tol %g): %s (%s)", c.name, c.tol, vd.Outcome, vd.Detail)
		}
	}
	// Within, each bound alone at the tolerance (the other inside): a sample a little faster
	// (hi the wider bound) and one a little slower (lo the wider).
	for _, by := range []float64{0.0005, -0.0005, 0.001, -0.001} {
		lo, hi := interval(shifted(by))
		if lo >= 0 || hi <= 0 {
			continue
		}
		tol, bound := hi, "hi at tol"
		if -lo > hi {
			tol, bound = -lo, "lo at -tol"
		}
		p := Prediction{Kind: KindComparison, Op: "within", Tolerance: tol}
		if vd := EvaluateComparisonSamples(p, shifted(by), base); vd.Outcome != Holds {
			t.Errorf("within, %s (shift %g): %s (%s)", bound, by, vd.Outcome, vd.Detail)
		}
		seen[bound] = true
	}
	if !seen["hi at tol"] || !seen["lo at -tol"] {
		t.Errorf("the samples did not put each bound of within at the tolerance: %v", seen)
	}
}

// TestEvaluateComparisonSamplesWords: the detail prints the medians, the difference and its
// interval in percent, and the tolerance on the claim's side.
func TestEvaluateComparisonSamplesWords(t *testing.T) {
	base := []float64{100, 101, 99, 100.5, 99.5, 100, 100.2, 99.8, 100.1}
	a := []float64{110, 111, 109, 110.5, 109.5, 110, 110.2, 109.8, 110.1}
	for _, c := range []struct {
		op   string
		tol  float64
		want string
	}{
		{">=", 0.02, "tolerance -2.0%"},
		{"<=", 0.02, "tolerance +2.0%"},
		{"within", 0.03, "tolerance ±3.0%"},
	} {
		vd := EvaluateComparisonSamples(Prediction{Kind: KindComparison, Op: c.op, Tolerance: c.tol}, a, base)
		if !strings.HasPrefix(vd.Detail, "median 110 vs 100: difference +10.0% [+") || !strings.Contains(vd.Detail, "Hodges–Lehmann interval, Mann-Whitney U p=") ||
			!strings.HasSuffix(vd.Detail, c.want) || *vd.Value != 110 || *vd.Other != 100 {
			t.Errorf("%s: %q", c.op, vd.Detail)
		}
	}
	vd := EvaluateComparisonSamples(Prediction{Kind: KindComparison, Op: ">=", Tolerance: 0.02}, a[:3], base[:3])
	if vd.Outcome != Inconclusive || vd.Detail != "median 110 vs 100 (+10.0%): 3+3 repetitions give no 95% interval of the difference; inconclusive (Mann-Whitney U p=0.1, ~)" {
		t.Errorf("3+3: %q", vd.Detail)
	}
}

func TestCheckStatsMore(t *testing.T) {
	cell, crossing := Selector{Figure: FigureCell}, Selector{Figure: FigureCrossing}
	for _, c := range []struct {
		name  string
		pr    Prediction
		reps  int
		probs int
	}{
		{"no stats", Prediction{Kind: KindBand, About: cell}, 3, 0},
		{"no than", Prediction{Kind: KindComparison, About: cell, Stats: StatsBenchmath}, 5, 1},
		{"about a crossing", Prediction{Kind: KindComparison, About: crossing, Than: &cell, Stats: StatsBenchmath}, 5, 1},
		{"than a crossing", Prediction{Kind: KindComparison, About: cell, Than: &crossing, Stats: StatsBenchmath}, 5, 1},
		{"reps not given (adaptive)", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: StatsBenchmath}, 0, 0},
		{"four repetitions", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: StatsBenchmath}, 4, 0},
	} {
		v := &validator{p: &Plan{Axes: Axes{Reps: c.reps}}}
		v.checkStats("predictions[0]", c.pr)
		if len(v.problems) != c.probs {
			t.Errorf("%s: %+v", c.name, v.problems)
		}
	}
}

// TestEvaluateBandAtItsEdges: a value on a bound is inside; a miss by exactly the noise floor
// is an edge miss; the detail says how far and on which side.
func TestEvaluateBandAtItsEdges(t *testing.T) {
	lo, hi, zero := 100.0, 200.0, 0.0
	cases := []struct {
		p      Prediction
		v      float64
		want   Outcome
		detail string
	}{
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi}, 100, Hit, "100 inside 100–200"},
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi}, 200, Hit, "200 inside 100–200"},
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi, NoiseFloor: 0.015}, 98.5, MissEdge, "98.5 is 1.5% below the band's floor (100)"},
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi, NoiseFloor: 0.015}, 98.4, Miss, "98.4 is 1.6% below the band's floor (100)"},
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi, NoiseFloor: 0.015}, 203, MissEdge, "203 is 1.5% above the band's top (200)"},
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi}, 250, Miss, "250 is 25.0% above the band's top (200)"},
		{Prediction{Kind: KindBand, Hi: &zero}, 1, Miss, "1 is +Inf% above the band's top (0)"},
		{Prediction{Kind: KindBand, Lo: &lo}, 1e9, Hit, "1e+09 inside >= 100"},
		{Prediction{Kind: KindBand, Hi: &hi}, -1e9, Hit, "-1e+09 inside <= 200"},
	}
	for _, c := range cases {
		vd := EvaluateBand(c.p, c.v)
		if vd.Outcome != c.want || vd.Detail != c.detail {
			t.Errorf("%g in %s: %s %q; want %s %q", c.v, c.p.Expectation(), vd.Outcome, vd.Detail, c.want, c.detail)
		}
	}
	fork := Prediction{Kind: KindFork, Arms: []Arm{{Name: "low", Hi: &lo}, {Name: "high", Lo: &hi}}}
	for _, c := range []struct {
		v   float64
		arm string
	}{{100, "low"}, {200, "high"}, {150, ""}, {99.99, "low"}, {200.01, "high"}} {
		if vd := EvaluateFork(fork, c.v); vd.Arm != c.arm {
			t.Errorf("fork at %g: arm %q, want %q", c.v, vd.Arm, c.arm)
		}
	}
}
