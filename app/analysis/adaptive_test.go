package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestULowerSearchEndsAndIsExact comes first in the package on purpose: the bisection behind
// every Hodges–Lehmann interval must end, and a changed loop bound that spins fails the
// package at once (the panic) instead of hanging every later test. At a tail equal to
// P(U ≤ u) the answer is u+1 (u itself meets the tail); just below it, u.
func TestULowerSearchEndsAndIsExact(t *testing.T) {
	type result struct {
		n, m, u, at, below int
	}
	done := make(chan []result, 1)
	go func() {
		var out []result
		for _, nm := range [][2]int{{1, 3}, {3, 1}, {2, 2}, {3, 3}, {4, 4}, {3, 5}, {5, 5}, {2, 7}, {6, 6}} {
			n, m := nm[0], nm[1]
			for u := 0; u <= n*m/2; u++ {
				tail := uCDF(n, m, u)
				out = append(out, result{n, m, u, uLowerSearch(n, m, tail), uLowerSearch(n, m, math.Nextafter(tail, 0))})
			}
		}
		done <- out
	}()
	var got []result
	select {
	case got = <-done:
	case <-time.After(20 * time.Second):
		panic("uLowerSearch did not return within 20 s: its bisection does not end")
	}
	for _, r := range got {
		if r.at != r.u+1 || r.below != r.u {
			t.Errorf("%d+%d: tail P(U ≤ %d) gives %d, just below it %d; want %d and %d", r.n, r.m, r.u, r.at, r.below, r.u+1, r.u)
		}
	}
}

func TestHalfWidthAndPrecisionTargets(t *testing.T) {
	xs := []float64{99, 100, 101, 100, 100} // mean 100, sd 0.7071, t(0.975,4)=2.776
	h := HalfWidth(xs)
	if math.Abs(h-2.776445*0.707107/math.Sqrt(5)) > 1e-4 {
		t.Fatalf("half-width %g", h)
	}
	if !(Precision{Rel: 0.01}).Met(xs) || (Precision{Rel: 0.005}).Met(xs) {
		t.Fatalf("±1%% should be met (%.3f%%), ±0.5%% not", RelHalfWidth(xs)*100)
	}
	if !(Precision{Abs: 1}).Met(xs) || (Precision{Abs: 0.5}).Met(xs) {
		t.Fatal("±1 t/s should be met, ±0.5 t/s not")
	}
	if (Precision{Rel: 0.5}).Met([]float64{100}) || !math.IsInf(HalfWidth([]float64{100}), 1) {
		t.Fatal("one sample has no interval, so no target is met")
	}
	if got := (Precision{Rel: 0.01}).String() + " " + (Precision{Abs: 2.5}).String(); got != "±1% ±2.5 t/s" {
		t.Fatal(got)
	}
}

func TestStopRuleChunksAndDecisions(t *testing.T) {
	r := StopRule{MinReps: 3, MaxReps: 10, ChunkReps: 4}
	var chunks []int
	for done := 0; ; {
		n := r.NextChunk(done)
		if n == 0 {
			break
		}
		chunks = append(chunks, n)
		done += n
	}
	if want := []int{3, 4, 3}; len(chunks) != 3 || chunks[0] != want[0] || chunks[1] != want[1] || chunks[2] != want[2] {
		t.Fatalf("chunks %v, want %v", chunks, want)
	}
	tight := []float64{100, 100.1, 99.9}
	wide := []float64{90, 110, 100}
	tg := []Precision{{Rel: 0.01}, {Rel: 0.01}}
	if d := r.Decide(3, [][]float64{tight, tight}, tg); !d.Stop || !d.Met {
		t.Fatalf("both met at the minimum: %+v", d)
	}
	if d := r.Decide(3, [][]float64{tight, wide}, tg); d.Stop || d.Met || d.Worst < 0.1 {
		t.Fatalf("one wide quantity keeps going: %+v", d)
	}
	if d := r.Decide(10, [][]float64{tight, wide}, tg); !d.Stop || d.Met {
		t.Fatalf("at the maximum it stops, not met: %+v", d)
	}
	if d := (StopRule{MinReps: 5, MaxReps: 10, ChunkReps: 5}).Decide(3, [][]float64{tight}, tg[:1]); d.Stop {
		t.Fatalf("below the minimum it never stops: %+v", d)
	}
	if d := r.Decide(3, nil, nil); d.Stop || d.Met {
		t.Fatalf("nothing measured is never met: %+v", d)
	}
}

func TestWarmupDropsOnlyTheSlowLeadingRepetitions(t *testing.T) {
	cases := []struct {
		xs   []float64
		max  int
		want int
	}{
		{[]float64{60, 80, 100, 101, 99, 100}, 3, 2}, // two slow starts
		{[]float64{60, 80, 100, 101, 99, 100}, 1, 1}, // the rule's maximum
		{[]float64{100, 60, 101, 99}, 3, 0},          // a slow one later is not a warm-up
		{[]float64{99, 100, 101}, 2, 0},              // within tolerance
		{[]float64{10, 100, 100}, 5, 1},              // two kept at least
		{[]float64{10, 100}, 5, 0},
	}
	for _, c := range cases {
		if got := Warmup(c.xs, c.max, 0.05); got != c.want {
			t.Errorf("Warmup(%v, %d) = %d, want %d", c.xs, c.max, got, c.want)
		}
	}
}

func TestCompareMediansExactCase(t *testing.T) {
	c := CompareMedians([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.05)
	// exact two-sided U test: 2/C(10,5) = 2/252
	if math.Abs(c.P-2.0/252) > 1e-12 || !c.Significant || c.Test != TestMannWhitney {
		t.Fatalf("p %g significant %v", c.P, c.Significant)
	}
	// 25 pairwise differences 1..9; k = 3 (P(U<=2) = 4/252 <= 0.025): [d(3), d(23)] = [2, 8]
	if c.Shift != 5.0/3 || c.ShiftLo == nil || *c.ShiftLo != 2.0/3 || *c.ShiftHi != 8.0/3 {
		t.Fatalf("shift %g [%v, %v]", c.Shift, c.ShiftLo, c.ShiftHi)
	}
	if math.Abs(c.Confidence-(1-8.0/252)) > 1e-12 || math.Abs(c.Delta-5.0/3) > 1e-12 {
		t.Fatalf("confidence %g delta %g", c.Confidence, c.Delta)
	}
	if got := c.String(); got != "+166.67% [+66.67%, +266.67%] (p=0.008 n=5+5)" {
		t.Fatal(got)
	}
	same := CompareMedians([]float64{10, 11, 12}, []float64{10.5, 11.5, 12.5}, 0.05)
	if same.Significant || !strings.HasPrefix(same.String(), "~ (p=") || len(same.Warnings) == 0 {
		t.Fatalf("three against three can never be significant at 5%%: %s %v", same.String(), same.Warnings)
	}
	// Not significant, but large enough for an interval: "~" with the difference's interval,
	// which holds 0. Six a side, the second shifted by half a step: 36 differences.
	base, next := []float64{1, 2, 3, 4, 5, 6}, []float64{1.5, 2.5, 3.5, 4.5, 5.5, 6.5}
	flat := CompareMedians(base, next, 0.05)
	_, lo, hi, _ := HodgesLehmann(base, next, 0.95)
	want := fmt.Sprintf("~ [%+.2f%%, %+.2f%%] (p=%.3f n=6+6)", lo/3.5*100, hi/3.5*100, flat.P)
	if flat.Significant || flat.ShiftLo == nil || !(lo < 0 && hi > 0) || flat.String() != want {
		t.Fatalf("~ with its interval: %q, want %q", flat.String(), want)
	}
}

// TestMinPValueU: the exact U test's smallest two-sided p-value is 2/C(n+m, n), checked
// against the p-value benchmath gives two samples entirely apart.
func TestMinPValueU(t *testing.T) {
	for _, c := range []struct{ n, m int }{{3, 3}, {3, 4}, {5, 5}, {4, 6}, {10, 10}} {
		base, next := make([]float64, c.n), make([]float64, c.m)
		for i := range base {
			base[i] = float64(i)
		}
		for i := range next {
			next[i] = float64(100 + i)
		}
		got := MinPValueU(c.n, c.m)
		if p := CompareMedians(base, next, 0.05).P; math.Abs(got-p) > 1e-9*p {
			t.Errorf("%d+%d: MinPValueU %g, the test's p for samples apart %g", c.n, c.m, got, p)
		}
	}
	if p := MinPValueU(3, 3); p < 0.05 {
		t.Errorf("3+3: %g; three against three cannot be significant at 5%%", p)
	}
}

func TestPlannerAnswers(t *testing.T) {
	n := RepsToDetect(0.02, 0.03, 0.05, 0.8)
	if n != 10 {
		t.Fatalf("3%% at CV 2%%: n = %d per arm, outside any reasonable plan", n)
	}
	if mde := MinDetectableEffect(0.02, n, 0.05, 0.8); mde > 0.03 || mde < 0.02 {
		t.Fatalf("MDE at the planner's n = %g, want just under 3%%", mde)
	}
	if RepsToDetect(0.02, 0.01, 0.05, 0.8) <= n {
		t.Fatal("a smaller effect needs more repetitions")
	}
	if got := RepsForPrecision(0.02, 0.01); got < 16 || got > 20 {
		t.Fatalf("±1%% at CV 2%%: %d repetitions", got)
	}
	if RepsForPrecision(0.5, 0.0001) != PlannerMaxReps+1 {
		t.Fatal("an unreachable target is more than the planner counts")
	}
}

// normalSamples draws n samples of mean mu and the given CV.
func normalSamples(rng *rand.Rand, n int, mu, cv float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mu * (1 + cv*rng.NormFloat64())
	}
	return xs
}

// adaptivePair runs the stopping rule on two arms drawn from draw, chunk by chunk and
// together, as the engine does: both arms get every chunk, and they stop when both meet the
// target or the maximum is reached. (Arms stopped each on its own are biased against each
// other on skewed samples: an arm that stops early is one without slow repetitions.)
func adaptivePair(rule StopRule, target Precision, draw func(n int) []float64) (a, b []float64) {
	for {
		k := rule.NextChunk(len(a))
		a, b = append(a, draw(k)...), append(b, draw(k)...)
		if rule.Decide(len(a), [][]float64{a, b}, []Precision{target, target}).Stop {
			return a, b
		}
	}
}

// TestSimulatedStoppingRuleAndComparison is the acceptance simulation of issue 19 on
// synthetic samples with known means: A/A comparisons after the adaptive stopping rule (arms
// stopped together) reject
// at most alpha (plus three standard errors of the estimate) over 2,000 trials, on normal and
// on skewed (a floor and an exponential tail) repetitions; a 3% effect at CV 2% is detected at the planner's n
// with at least 80% power; and the difference's interval covers the true effect.
func TestSimulatedStoppingRuleAndComparison(t *testing.T) {
	const trials, alpha = 2000, 0.05
	rng := rand.New(rand.NewPCG(19, 2026))
	rule := StopRule{MinReps: 3, MaxReps: 30, ChunkReps: 3}
	target := Precision{Rel: 0.01}
	limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/trials)
	for _, dist := range []struct {
		name string
		draw func(n int) []float64
	}{
		{"normal", func(n int) []float64 { return normalSamples(rng, n, 100, 0.02) }},
		{"skewed", func(n int) []float64 { // a floor and an exponential tail of slow repetitions
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 100 - 2*rng.ExpFloat64()
			}
			return xs
		}},
	} {
		fp, reps := 0, 0
		for range trials {
			a, b := adaptivePair(rule, target, dist.draw)
			reps += len(a) + len(b)
			if CompareMedians(a, b, alpha).Significant {
				fp++
			}
		}
		rate := float64(fp) / trials
		t.Logf("A/A %s: false-positive rate %.4f over %d trials (limit %.4f), mean %.1f reps per arm", dist.name, rate, trials, limit, float64(reps)/(2*trials))
		if rate > limit {
			t.Errorf("A/A %s: false-positive rate %.4f above %.4f", dist.name, rate, limit)
		}
	}
	n := RepsToDetect(0.02, 0.03, alpha, 0.8)
	hits, covered := 0, 0
	for range trials {
		c := CompareMedians(normalSamples(rng, n, 100, 0.02), normalSamples(rng, n, 103, 0.02), alpha)
		if c.Significant && c.Delta > 0 {
			hits++
		}
		if c.ShiftLo != nil && *c.ShiftLo <= 0.03 && 0.03 <= *c.ShiftHi {
			covered++
		}
	}
	power, coverage := float64(hits)/trials, float64(covered)/trials
	t.Logf("3%% effect at CV 2%%: planner n=%d per arm, power %.4f, interval coverage %.4f over %d trials", n, power, coverage, trials)
	if power < 0.8 {
		t.Errorf("power %.4f at the planner's n=%d, want >= 0.80", power, n)
	}
	if coverage < 0.95-3*math.Sqrt(0.95*0.05/trials) {
		t.Errorf("the difference's 95%% interval covered the true 3%% in %.4f of trials", coverage)
	}
}
