package analysis

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// MedianSummary is a sample's median with its distribution-free 95% confidence interval, as
// benchstat prints it (benchmath.AssumeNothing). Lo and Hi are null (JSON) when the sample is
// too small for an interval.
type MedianSummary struct {
	N      int      `json:"n"`
	Median float64  `json:"median"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
}

// MedianComparison compares a new sample with a baseline the way benchstat does: each side's
// median and interval, the Mann–Whitney U test's p-value, and, beyond benchstat, the interval
// of the difference itself (the Hodges–Lehmann shift, relative to the baseline's median).
type MedianComparison struct {
	Base MedianSummary `json:"base"`
	New  MedianSummary `json:"new"`
	// Delta is New.Median / Base.Median − 1.
	Delta float64 `json:"delta"`
	// Shift is the Hodges–Lehmann estimate of new − base (the median of every pairwise
	// difference) over Base.Median; ShiftLo/ShiftHi its distribution-free interval at
	// Confidence (null when the samples are too small for one).
	Shift      float64  `json:"shift"`
	ShiftLo    *float64 `json:"shift_lo"`
	ShiftHi    *float64 `json:"shift_hi"`
	Confidence float64  `json:"confidence"`
	Test       string   `json:"test"`
	P          float64  `json:"p"`
	Alpha      float64  `json:"alpha"`
	// Significant is P < Alpha; the delta then prints, else "~".
	Significant bool     `json:"significant"`
	Warnings    []string `json:"warnings,omitempty"`
}

// TestMannWhitney names the test CompareMedians uses.
const TestMannWhitney = "Mann-Whitney U"

// CompareMedians compares new against base with benchmath (no distributional assumption: the
// timing distributions of llama-bench repetitions are skewed, which Welch's t-test assumes
// away) at alpha, adding the confidence interval of the difference.
func CompareMedians(base, new []float64, alpha float64) MedianComparison {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = alpha
	sb := benchmath.NewSample(append([]float64(nil), base...), &th)
	sn := benchmath.NewSample(append([]float64(nil), new...), &th)
	c := MedianComparison{Test: TestMannWhitney, Alpha: alpha, Base: medianOf(sb), New: medianOf(sn)}
	for _, s := range []*benchmath.Sample{sb, sn} {
		for _, w := range benchmath.AssumeNothing.Summary(s, 0.95).Warnings {
			c.Warnings = append(c.Warnings, w.Error())
		}
	}
	cmp := benchmath.AssumeNothing.Compare(sb, sn)
	c.P = cmp.P
	for _, w := range cmp.Warnings {
		c.Warnings = append(c.Warnings, w.Error())
	}
	c.Significant = cmp.P < alpha
	if c.Base.Median != 0 {
		c.Delta = c.New.Median/c.Base.Median - 1
	}
	shift, lo, hi, conf := HodgesLehmann(sb.Values, sn.Values, 0.95)
	c.Confidence = conf
	if c.Base.Median != 0 {
		b := math.Abs(c.Base.Median)
		c.Shift = shift / b
		if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
			c.ShiftLo, c.ShiftHi = fptr(lo/b), fptr(hi/b)
		}
	}
	if c.ShiftLo == nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("too few repetitions (%d+%d) for an interval of the difference", c.Base.N, c.New.N))
	}
	return c
}

func medianOf(s *benchmath.Sample) MedianSummary {
	sum := benchmath.AssumeNothing.Summary(s, 0.95)
	m := MedianSummary{N: len(s.Values), Median: sum.Center}
	if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
		m.Lo, m.Hi = fptr(sum.Lo), fptr(sum.Hi)
	}
	return m
}

func fptr(x float64) *float64 { return &x }

// String is benchstat's column with the difference's interval: "+3.21% [+2.10%, +4.30%]
// (p=0.002 n=5+5)", or "~ [-0.80%, +1.20%] (p=0.412 n=5+5)" when the difference is not
// significant: the interval still says how small a difference the samples rule out (none is
// printed when the samples are too small for one: "~ (p=0.700 n=3+3)").
func (c MedianComparison) String() string {
	n := fmt.Sprintf("n=%d+%d", c.Base.N, c.New.N)
	ci := ""
	if c.ShiftLo != nil {
		ci = fmt.Sprintf(" [%+.2f%%, %+.2f%%]", *c.ShiftLo*100, *c.ShiftHi*100)
	}
	if !c.Significant {
		return fmt.Sprintf("~%s (p=%.3f %s)", ci, c.P, n)
	}
	return fmt.Sprintf("%+.2f%%%s (p=%.3f %s)", c.Delta*100, ci, c.P, n)
}

// MinPValueU is the smallest two-sided p-value the exact Mann–Whitney U test can give with n
// and m samples, 2/C(n+m, n) (the two samples entirely apart): at or above alpha, no
// difference can be significant at these counts (three against three: 0.1).
func MinPValueU(n, m int) float64 {
	if n < 1 || m < 1 {
		return 1
	}
	// log C(n+m, n) by lgamma: exact enough, and no overflow for large counts.
	a, _ := math.Lgamma(float64(n + m + 1))
	b, _ := math.Lgamma(float64(n + 1))
	c, _ := math.Lgamma(float64(m + 1))
	return math.Min(1, 2*math.Exp(b+c-a))
}

// HodgesLehmann is the Hodges–Lehmann estimate of the shift y − x (the median of the n·m
// pairwise differences) and its distribution-free confidence interval, the one the
// Mann–Whitney test inverts: [d(k), d(nm+1−k)] of the sorted differences, k−1 the largest U
// with P(U ≤ k−1) ≤ (1−confidence)/2 (exact U distribution up to 50 per side, normal
// approximation above). It returns the interval's actual confidence; ±Inf bounds when the
// samples are too small for the level.
func HodgesLehmann(x, y []float64, confidence float64) (shift, lo, hi, actual float64) {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return math.NaN(), math.Inf(-1), math.Inf(1), 0
	}
	d := make([]float64, 0, n*m)
	for _, a := range x {
		for _, b := range y {
			d = append(d, b-a)
		}
	}
	sort.Float64s(d)
	shift, _ = Median(d)
	k := uLowerCritical(n, m, (1-confidence)/2)
	if k < 1 {
		return shift, math.Inf(-1), math.Inf(1), 0
	}
	actual = 1 - 2*uCDF(n, m, k-1)
	return shift, d[k-1], d[n*m-k], actual
}

// uLowerCritical is 1 + the largest u with P(U ≤ u) ≤ tail under the null (0 when none),
// found by bisection (the CDF is monotone; each evaluation is costly for large samples).
func uLowerCritical(n, m int, tail float64) int {
	key := [3]float64{float64(n), float64(m), tail}
	if k, ok := criticalCache.Load(key); ok {
		return k.(int)
	}
	k := uLowerSearch(n, m, tail)
	criticalCache.Store(key, k)
	return k
}

// criticalCache maps (n, m, tail) to uLowerCritical's answer.
var criticalCache sync.Map

func uLowerSearch(n, m int, tail float64) int {
	lo, hi := -1, n*m/2 // P(U ≤ lo) ≤ tail holds (vacuously at −1); find the last such u
	if uCDF(n, m, 0) > tail {
		return 0
	}
	lo = 0
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if uCDF(n, m, mid) <= tail {
			lo = mid
		} else {
			hi = mid
		}
	}
	if uCDF(n, m, hi) <= tail {
		lo = hi
	}
	return lo + 1
}

func uCDF(n, m, u int) float64 {
	if n <= 50 && m <= 50 {
		return stats.UDist{N1: n, N2: m}.CDF(float64(u))
	}
	mu := float64(n*m) / 2
	sd := math.Sqrt(float64(n*m*(n+m+1)) / 12)
	return stats.NormalDist{Mu: mu, Sigma: sd}.CDF(float64(u) + 0.5)
}
