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
		{"welch", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: "welch"}, 5, `"welch": want "process" (judge the claim on the cells' processes), "benchmath"`, SevError},
		{"process on a band", Prediction{Kind: KindBand, About: cell, Stats: StatsProcess}, 5, "process judges a comparison of two cells", SevError},
		{"process, fixed plan", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: StatsProcess}, 5, "gives no interval between processes: this comparison will be inconclusive", SevWarning},
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
	v = &validator{p: &Plan{Adaptive: &Adaptive{Unit: UnitProcess}}}
	v.checkStats("predictions[0]", Prediction{Kind: KindComparison, About: cell, Than: &cell, Stats: StatsProcess})
	if len(v.problems) != 0 {
		t.Errorf("process on an adaptive plan: %+v", v.problems)
	}
}

// processesOf draws n processes of m repetitions: each process's mean shifted by its own
// effect (relative sd sb), repetitions around it (relative sd sw).
func processesOf(seed uint64, n, m int, mean, sb, sw float64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 11))
	out := make([][]float64, n)
	for i := range out {
		pm := mean * (1 + sb*r.NormFloat64())
		for range m {
			out[i] = append(out[i], pm*(1+sw*r.NormFloat64()))
		}
	}
	return out
}

// A comparison judged on the processes ("stats": "process") holds, fails or is inconclusive
// by the interval of the difference between the process means; processes tight inside but
// apart from each other leave it inconclusive where the repetitions (benchmath) would call
// it; one process a side gives no interval and says so.
func TestEvaluateComparisonProcesses(t *testing.T) {
	base := processesOf(1, 6, 3, 100, 0.005, 0.002)
	pr := func(op string, tol float64) Prediction {
		return Prediction{ID: "C1", Kind: KindComparison, Op: op, Tolerance: tol, Stats: StatsProcess, About: Selector{Figure: FigureCell}, Than: &Selector{Figure: FigureCell}}
	}
	for _, c := range []struct {
		name    string
		p       Prediction
		a       [][]float64
		stopped bool
		want    Outcome
		wantSub string
	}{
		{"5% faster, claimed >= with 2% slack", pr(">=", 0.02), processesOf(2, 6, 3, 105, 0.005, 0.002), false, Holds, "95% interval over n=6+6 processes of m=3+3"},
		{"10% slower, claimed >= with 2% slack", pr(">=", 0.02), processesOf(3, 6, 3, 90, 0.005, 0.002), false, Fails, ""},
		{"the same, claimed within 3%", pr("within", 0.03), processesOf(4, 6, 3, 100, 0.005, 0.002), false, Holds, ""},
		{"1% faster, processes 5% apart, claimed >= with 0 slack", pr(">=", 0), processesOf(5, 4, 3, 101, 0.05, 0.001), false, Inconclusive, "straddles"},
		{"one process a side", pr(">=", 0.02), processesOf(6, 1, 10, 105, 0, 0.002), false, Inconclusive, "n=1+1 processes give no 95% interval"},
		{"stopped: the first 6 of 9 processes", pr(">=", 0.02), append(processesOf(7, 6, 3, 105, 0.005, 0.002), processesOf(8, 3, 3, 50, 0, 0.001)...), true, Holds, "n=6+6"},
	} {
		b := base
		if len(c.a) == 1 {
			b = base[:1]
		}
		vd := EvaluateComparisonProcesses(c.p, c.a, b, c.stopped)
		if vd.Outcome != c.want || !strings.Contains(vd.Detail, c.wantSub) {
			t.Errorf("%s: %s (%s), want %s", c.name, vd.Outcome, vd.Detail, c.want)
		}
	}
	// the repetitions pooled as if independent call what the processes cannot: four processes
	// 3% apart, each tight inside; benchmath on their 12 repetitions says HOLDS (+3.9%
	// [+3.0%, +4.8%]), the processes say +2.9% [-2.2%, +7.9%], inconclusive
	a := processesOf(6, 4, 3, 101.5, 0.03, 0.001)
	var pa, pb []float64
	for i := range a {
		pa = append(pa, a[i]...)
	}
	for i := range base {
		pb = append(pb, base[i]...)
	}
	if vs, vp := EvaluateComparisonSamples(pr(">=", 0), pa, pb), EvaluateComparisonProcesses(pr(">=", 0), a, base, false); vs.Outcome != Holds || vp.Outcome != Inconclusive {
		t.Errorf("pooled %s (%s), processes %s (%s): want HOLDS and INCONCLUSIVE", vs.Outcome, vs.Detail, vp.Outcome, vp.Detail)
	}
	if got := pr(">=", 0.02).Expectation(); !strings.Contains(got, StatsJudgedProcesses) {
		t.Errorf("expectation %q", got)
	}
}
