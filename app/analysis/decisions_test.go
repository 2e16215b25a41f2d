package analysis

// Boundary tests of the decisions (issue 29, mutation testing): each case sits where a
// comparison's two sides differ — a value equal to its limit, the smallest count that
// qualifies, the other branch.

import (
	"math"
	"strings"
	"testing"

	"github.com/aclements/go-moremath/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// Two samples have an interval; a target exactly equal to the half-width is met.
func TestPrecisionAtItsLimit(t *testing.T) {
	xs := []float64{3, 5} // mean 4 (a power of two: h/4*4 is h exactly), sd √2
	h := HalfWidth(xs)
	near(t, "half-width of two", h, 12.706205, 1e-5) // t(0.975, 1)·√2/√2
	if !(Precision{Rel: h / 4}).Met(xs) || (Precision{Rel: math.Nextafter(h/4, 0)}).Met(xs) {
		t.Fatalf("a relative target equal to the half-width (%g) is met, one just under it not", h/4)
	}
	if !(Precision{Abs: h}).Met(xs) || (Precision{Abs: math.Nextafter(h, 0)}).Met(xs) {
		t.Fatalf("an absolute target equal to the half-width (%g) is met, one just under it not", h)
	}
	if got := RelHalfWidth(xs); got != h/4 {
		t.Fatalf("relative half-width %g, want %g", got, h/4)
	}
	for _, zero := range [][]float64{{-1, 1}, {0, 0}} {
		if got := RelHalfWidth(zero); !math.IsInf(got, 1) {
			t.Errorf("relative half-width around a zero mean %v: %g, want +Inf", zero, got)
		}
	}
}

func TestWarmupBoundaries(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		max  int
		tol  float64
		want int
	}{
		{[]float64{5, 10, 10, 10}, 3, 0.5, 0},    // exactly tol below the median: kept
		{[]float64{4.99, 10, 10, 10}, 3, 0.5, 1}, // more than tol below: dropped
		{[]float64{1, 2, 10}, 5, 0.05, 1},        // two always kept, however slow the second
	} {
		if got := Warmup(c.xs, c.max, c.tol); got != c.want {
			t.Errorf("Warmup(%v, %d, %g) = %d, want %d", c.xs, c.max, c.tol, got, c.want)
		}
	}
}

// Significance is P < alpha: a P equal to alpha is not significant.
func TestSignificanceAtAlpha(t *testing.T) {
	a, b := []float64{1, 2, 3}, []float64{2, 3, 5}
	p := Compare(a, b, 0.05).P
	if Compare(a, b, p).Significant || !Compare(a, b, math.Nextafter(p, 1)).Significant {
		t.Fatalf("Welch: p %g against alpha equal to it is not significant, just above it is", p)
	}
	x, y := []float64{1, 2, 3, 4}, []float64{3, 5, 6, 7}
	pm := CompareMedians(x, y, 0.05).P
	if CompareMedians(x, y, pm).Significant || !CompareMedians(x, y, math.Nextafter(pm, 1)).Significant {
		t.Fatalf("Mann-Whitney: p %g against alpha equal to it is not significant, just above it is", pm)
	}
}

func TestCompareSmallAndConstantSamples(t *testing.T) {
	// Three a side: no warning. Two a side: a test and an interval (with the warnings).
	if c := Compare([]float64{1, 2, 3}, []float64{2, 3, 5}, 0.05); len(c.Warnings) != 0 {
		t.Errorf("three reps warned: %q", c.Warnings)
	}
	c := Compare([]float64{100, 101}, []float64{100, 102}, 0.05)
	if math.IsNaN(c.P) || !(c.DeltaLo < c.Delta && c.Delta < c.DeltaHi) {
		t.Errorf("two a side still has a p-value and an interval: %+v", c)
	}
	// Constant samples: equal means, p = 1; different, p = 0; the interval is the delta.
	same := Compare([]float64{5, 5, 5}, []float64{5, 5, 5}, 1)
	if same.P != 1 || same.Significant {
		t.Errorf("equal constants: %+v", same)
	}
	diff := Compare([]float64{5, 5, 5}, []float64{6, 6, 6}, 0.05)
	if diff.P != 0 || !diff.Significant || diff.DeltaLo != diff.Delta || diff.DeltaHi != diff.Delta || math.Abs(diff.Delta-0.2) > 1e-15 {
		t.Errorf("different constants: %+v", diff)
	}
	if zero := Compare([]float64{5, 5, 5}, []float64{6, 6, 6}, 0); zero.Significant {
		t.Errorf("p = 0 is not below alpha 0: %+v", zero)
	}
	if got := Compare([]float64{1}, []float64{2}, 0.05).String(); got != "+100.00% (p=? n=1+1)" {
		t.Errorf("no p-value: %q", got)
	}
	s := Summarize([]float64{1, 2, 3, 4, 5})
	near(t, "lo", s.Lo, 3-2.776445*math.Sqrt(2.5)/math.Sqrt(5), 1e-5)
}

func TestCompareMediansIntervalWarning(t *testing.T) {
	const warn = "too few repetitions (3+3) for an interval of the difference"
	small := CompareMedians([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.05)
	if small.ShiftLo != nil || !strings.Contains(strings.Join(small.Warnings, "\n"), warn) {
		t.Errorf("3+3: %v %q", small.ShiftLo, small.Warnings)
	}
	big := CompareMedians([]float64{1, 2, 3, 4, 5, 6}, []float64{4, 5, 6, 7, 8, 9}, 0.05)
	if big.ShiftLo == nil || strings.Contains(strings.Join(big.Warnings, "\n"), "for an interval of the difference") {
		t.Errorf("6+6: %v %q", big.ShiftLo, big.Warnings)
	}
}

// One against five: the samples apart give 2/C(6, 1) = 1/3; no sample, no test (1).
func TestMinPValueUOneSample(t *testing.T) {
	for _, c := range []struct {
		n, m int
		want float64
	}{{1, 5, 1.0 / 3}, {5, 1, 1.0 / 3}, {0, 5, 1}, {5, 0, 1}} {
		if got := MinPValueU(c.n, c.m); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MinPValueU(%d, %d) = %g, want %g", c.n, c.m, got, c.want)
		}
	}
}

func TestHodgesLehmannEdges(t *testing.T) {
	if s, lo, hi, conf := HodgesLehmann(nil, []float64{1}, 0.95); !math.IsNaN(s) || !math.IsInf(lo, -1) || !math.IsInf(hi, 1) || conf != 0 {
		t.Errorf("empty x: %g [%g, %g] %g", s, lo, hi, conf)
	}
	if s, lo, hi, conf := HodgesLehmann([]float64{1}, nil, 0.95); !math.IsNaN(s) || !math.IsInf(lo, -1) || !math.IsInf(hi, 1) || conf != 0 {
		t.Errorf("empty y: %g [%g, %g] %g", s, lo, hi, conf)
	}
	// 3+3 at 95%: P(U ≤ 0) = 1/20 > 0.025, no interval.
	if s, lo, hi, conf := HodgesLehmann([]float64{1, 2, 3}, []float64{11, 12, 13}, 0.95); s != 10 || !math.IsInf(lo, -1) || !math.IsInf(hi, 1) || conf != 0 {
		t.Errorf("3+3: %g [%g, %g] %g", s, lo, hi, conf)
	}
	// 4+4 at 95%: P(U ≤ 0) = 1/70 ≤ 0.025 < P(U ≤ 1) = 2/70, so k = 1: the interval is the
	// smallest and largest of the 16 differences (7 to 13), at confidence 1 − 2/70.
	s, lo, hi, conf := HodgesLehmann([]float64{1, 2, 3, 4}, []float64{11, 12, 13, 14}, 0.95)
	if s != 10 || lo != 7 || hi != 13 || math.Abs(conf-(1-2.0/70)) > 1e-12 {
		t.Errorf("4+4: %g [%g, %g] %g", s, lo, hi, conf)
	}
	// 1+3 at 50%: the tail 0.25 equals P(U ≤ 0) = 1/4, so k = 1 and the interval is [1, 3].
	s, lo, hi, conf = HodgesLehmann([]float64{0}, []float64{1, 2, 3}, 0.5)
	if s != 2 || lo != 1 || hi != 3 || conf != 0.5 {
		t.Errorf("1+3 at 50%%: %g [%g, %g] %g", s, lo, hi, conf)
	}
}

// Up to 50 a side the U distribution is exact; above, the normal approximation with mean
// nm/2, variance nm(n+m+1)/12 and a continuity correction, close to the exact one.
func TestUCDFExactThenNormal(t *testing.T) {
	for _, nm := range [][2]int{{50, 2}, {2, 50}} {
		n, m := nm[0], nm[1]
		for _, u := range []int{0, 10, 37, 50} {
			if got, want := uCDF(n, m, u), (stats.UDist{N1: n, N2: m}).CDF(float64(u)); got != want {
				t.Errorf("%d+%d at %d: %g, want the exact %g", n, m, u, got, want)
			}
		}
	}
	for _, nm := range [][2]int{{51, 3}, {3, 51}, {60, 60}} {
		n, m := nm[0], nm[1]
		mu, sd := float64(n*m)/2, math.Sqrt(float64(n*m*(n+m+1))/12)
		for _, u := range []int{n * m / 4, n*m/2 - 7, n * m / 2} {
			want := stats.NormalDist{Mu: mu, Sigma: sd}.CDF(float64(u) + 0.5)
			if got := uCDF(n, m, u); math.Abs(got-want) > 1e-15 {
				t.Errorf("%d+%d at %d: %g, want the normal %g", n, m, u, got, want)
			}
		}
	}
	if got, exact := uCDF(51, 3, 60), (stats.UDist{N1: 51, N2: 3}).CDF(60); math.Abs(got-exact) > 0.01 {
		t.Errorf("51+3 at 60: normal %g, exact %g", got, exact)
	}
}

func TestCrossingAtTheLine(t *testing.T) {
	c, err := CrossingDepth([]Point{{0, 10}, {100, 5}}, 10)
	if err != nil || c.Kind != Crossed || c.Depth != 0 || c.From != (Point{0, 10}) || c.To != (Point{100, 5}) {
		t.Errorf("on the line at the start is not below it: %+v %v", c, err)
	}
	c, err = CrossingDepth([]Point{{0, 20}, {100, 10}, {200, 2}}, 10)
	if err != nil || c.Kind != Crossed || c.Depth != 100 || c.From != (Point{100, 10}) || c.To != (Point{200, 2}) {
		t.Errorf("on the line in the middle is not below it: %+v %v", c, err)
	}
}

func TestFiguresRefuseZero(t *testing.T) {
	if _, err := Efficiency(1, 0); err == nil {
		t.Error("Efficiency with a zero ceiling accepted")
	}
	if _, err := ContaminationDelta(0, 5, 0); err == nil {
		t.Error("ContaminationDelta with a zero quiet bracket accepted")
	}
	if _, err := ServingTax(5, 0); err == nil {
		t.Error("ServingTax with a zero llama-bench rate accepted")
	}
	if tax, err := ServerTax(0, 10); err != nil || tax != 0 {
		t.Errorf("a server rate of 0 is a tax of 100%%: %g %v", tax, err)
	}
}

func TestScalingBoundaries(t *testing.T) {
	s, err := ScalingOf([]Point{{1, 100}, {2, 125}}, 0.25) // a gain of exactly 25%: no knee at 25%
	if err != nil || s.Knee != nil || s.Speedup != 1.25 || len(s.Doubling) != 1 || s.Doubling[0].Gain != 0.25 {
		t.Errorf("two points, gain at the threshold: %+v %v", s, err)
	}
	s, err = ScalingOf([]Point{{1, 100}, {2, 125}}, 0.2500001)
	if err != nil || s.Knee == nil || *s.Knee != 2 {
		t.Errorf("gain just under the threshold: %+v %v", s, err)
	}
	if _, err := ScalingOf([]Point{{1, 100}, {2, 0}}, 0.2); err == nil {
		t.Error("a zero rate accepted")
	}
	if _, err := ScalingOf([]Point{{1, 100}}, 0.2); err == nil {
		t.Error("one point accepted")
	}
}

func TestPlannerBoundaries(t *testing.T) {
	if got := RepsToDetect(0.02, 0, 0.05, 0.8); got != 3 {
		t.Errorf("no effect: %d, want 3", got)
	}
	if got := RepsToDetect(1, 0.001, 0.05, 0.8); got != PlannerMaxReps+1 {
		t.Errorf("a 0.1%% effect at CV 100%%: %d, want more than the planner counts", got)
	}
	// 10% at CV 2%: n = 3 (t on 4 df: (2.776+0.941)·0.2 squared, doubled, over 3/π = 1.16 ≤ 3;
	// n = 2 on 2 df needs 2.41), plus one.
	if got := RepsToDetect(0.02, 0.1, 0.05, 0.8); got != 4 {
		t.Errorf("10%% at CV 2%%: %d, want 4", got)
	}
	// A CV at which the t-test's need at some n is exactly n: n are enough (answer n+1).
	// Searched over a few n, effects and neighbouring CVs (need moves in steps of ulps).
	found := 0
	for n := 4; n <= 40 && found < 3; n++ {
		for _, effect := range []float64{0.01, 0.03, 0.05, 0.1} {
			q := tQuantiles(2*n-2, 0.05, 0.8)
			need := func(cv float64) float64 { return 2 * (q * cv / effect) * (q * cv / effect) / mwEfficiency }
			cv := effect * math.Sqrt(float64(n)*mwEfficiency/2) / q
			for i := 0; i < 8; i++ {
				cv = math.Nextafter(cv, 0)
			}
			for i := 0; i < 16 && need(cv) != float64(n); i++ {
				cv = math.Nextafter(cv, 1)
			}
			if need(cv) != float64(n) {
				continue
			}
			found++
			if got := RepsToDetect(cv, effect, 0.05, 0.8); got != n+1 {
				t.Errorf("effect %g at CV %g needs exactly %d: %d, want %d", effect, cv, n, got, n+1)
			}
		}
	}
	t.Logf("%d CVs with a need of exactly n", found)
	if found == 0 {
		t.Fatal("no CV with a need of exactly n")
	}

	if !math.IsInf(MinDetectableEffect(0.02, 1, 0.05, 0.8), 1) {
		t.Error("one repetition detects nothing")
	}
	// t(0.975, 18) = 2.100922 and t(0.8, 18) = 0.862049 (R's qt); 2 on 2 df: 4.302653, 1.060660.
	near(t, "MDE n=10", MinDetectableEffect(0.02, 10, 0.05, 0.8), (2.100922+0.862049)*0.02*math.Sqrt(2/(10*3/math.Pi)), 1e-7)
	near(t, "MDE n=2", MinDetectableEffect(0.02, 2, 0.05, 0.8), (4.302653+1.060660)*0.02*math.Sqrt(2/(2*3/math.Pi)), 1e-7)

	if got := RepsForPrecision(0, 0); got != PlannerMaxReps+1 {
		t.Errorf("no precision target: %d", got)
	}
	// A target met exactly at n = 3 and at n = 1000 (the bound itself).
	if got := RepsForPrecision(0.02, TCritical(0.95, 2)*0.02/math.Sqrt(3)); got != 3 {
		t.Errorf("met at 3: %d", got)
	}
	if got := RepsForPrecision(0.02, TCritical(0.95, 999)*0.02/math.Sqrt(1000)); got != 1000 {
		t.Errorf("met at 1000: %d", got)
	}
}

// tQuantiles is t(1−alpha/2) + t(power) on df degrees of freedom, the planner's sum.
func tQuantiles(df int, alpha, power float64) float64 {
	d := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	return d.Quantile(1-alpha/2) + d.Quantile(power)
}

// Points are sorted by depth keeping the given order among equal depths, so the error names
// the point as given: here the first, not a finite number (before the repeated depth).
func TestSortedFiniteKeepsOrder(t *testing.T) {
	_, err := CrossingDepth([]Point{{1, math.NaN()}, {1, 2}}, 0)
	if err == nil || err.Error() != "point 0 (1, NaN) is not a finite number" {
		t.Fatalf("got %v", err)
	}
}
