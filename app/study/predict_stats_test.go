package study

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// samples are n draws around mean with relative spread cv (seeded).
func samples(seed uint64, n int, mean, cv float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = mean * (1 + cv*r.NormFloat64())
	}
	return out
}

// A stats comparison holds when the whole interval of the difference is on its side of the
// tolerance, fails when the whole interval is beyond it, is inconclusive when it straddles
// it, and says so when the repetitions are too few for an interval.
func TestEvaluateComparisonSamples(t *testing.T) {
	base := samples(1, 10, 100, 0.005)
	cases := []struct {
		name    string
		op      string
		tol     float64
		a       []float64
		want    Outcome
		wantSub string
	}{
		{"5% faster, claimed >= with 2% slack", ">=", 0.02, samples(2, 10, 105, 0.005), Holds, "Hodges–Lehmann"},
		{"10% slower, claimed >= with 2% slack", ">=", 0.02, samples(3, 10, 90, 0.005), Fails, ""},
		{"10% slower, claimed <= with 2% slack", "<=", 0.02, samples(3, 10, 90, 0.005), Holds, ""},
		{"5% faster, claimed <= with 2% slack", "<=", 0.02, samples(2, 10, 105, 0.005), Fails, ""},
		{"the same, claimed within 3%", "within", 0.03, samples(4, 10, 100, 0.005), Holds, ""},
		{"8% faster, claimed within 3%", "within", 0.03, samples(5, 10, 108, 0.005), Fails, ""},
		{"1% faster in 10% noise, claimed within 0.5%", "within", 0.005, samples(6, 10, 101, 0.10), Inconclusive, "straddles"},
		{"three repetitions", ">=", 0.02, samples(7, 3, 105, 0.005), Inconclusive, "give no 95% interval"},
	}
	for _, c := range cases {
		b := base
		if len(c.a) == 3 {
			b = base[:3]
		}
		p := Prediction{ID: "C1", Kind: KindComparison, Op: c.op, Tolerance: c.tol, Stats: StatsBenchmath,
			About: Selector{Figure: FigureCell}, Than: &Selector{Figure: FigureCell}}
		vd := EvaluateComparisonSamples(p, c.a, b)
		if vd.Outcome != c.want || !strings.Contains(vd.Detail, c.wantSub) {
			t.Errorf("%s: %s (%s), want %s", c.name, vd.Outcome, vd.Detail, c.want)
		}
	}
}

// stats is refused on anything but a comparison of two cells, and on a value other than
// benchmath; too few repetitions for an interval is warned.
func TestCheckStats(t *testing.T) {
	cell := Selector{Figure: FigureCell}
	for _, c := range []struct {
		name string
		pr   Prediction
		reps int
		want string
		sev  Severity
	}{
		{"a band", Prediction{Kind: KindBand, About: cell, Stats: StatsBenchmath}, 5, "benchmath judges a comparison of two cells", SevError},
		{"welch", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: "welch"}, 5, `"welch": want "benchmath"`, SevError},
		{"three repetitions", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: StatsBenchmath}, 3, "3 repetitions per cell give no 95% interval", SevWarning},
	} {
		v := &validator{p: &Plan{Axes: Axes{Reps: c.reps}}}
		v.checkStats("predictions[0]", c.pr)
		if len(v.problems) != 1 || !strings.Contains(v.problems[0].Msg, c.want) || v.problems[0].Severity != c.sev {
			t.Errorf("%s: %+v", c.name, v.problems)
		}
	}
	v := &validator{p: &Plan{Axes: Axes{Reps: 5}}}
	v.checkStats("predictions[0]", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: StatsBenchmath})
	if len(v.problems) != 0 {
		t.Errorf("a good one: %+v", v.problems)
	}
}
