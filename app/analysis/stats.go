package analysis

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary describes repeated measurements of one quantity.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation (n-1); 0 when n < 2
	CV   float64 `json:"cv"` // SD / Mean; 0 when the mean is 0
	// Lo and Hi bound the t-based 95% confidence interval of the mean (equal to Mean when n < 2).
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Summarize computes mean, sample SD, CV and a t-based 95% interval.
func Summarize(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	s.Mean = stat.Mean(xs, nil)
	s.Lo, s.Hi = s.Mean, s.Mean
	if len(xs) > 1 {
		s.SD = stat.StdDev(xs, nil)
		half := TCritical(0.95, float64(len(xs)-1)) * s.SD / math.Sqrt(float64(len(xs)))
		s.Lo, s.Hi = s.Mean-half, s.Mean+half
	}
	if s.Mean != 0 {
		s.CV = s.SD / math.Abs(s.Mean)
	}
	return s
}

// TCritical is the two-sided critical value of Student's t for the given confidence and
// degrees of freedom (2.776 for 95% and 4 df).
func TCritical(confidence, df float64) float64 {
	key := [2]float64{confidence, df}
	if df == math.Trunc(df) && df <= 1000 { // whole degrees of freedom recur: kept
		if v, ok := tCache.Load(key); ok {
			return v.(float64)
		}
	}
	v := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
	if df == math.Trunc(df) && df <= 1000 {
		tCache.Store(key, v)
	}
	return v
}

var tCache sync.Map // [confidence, df] → the critical value

// Percentile is numpy's default: linear interpolation between closest ranks. p in [0, 100].
func Percentile(xs []float64, p float64) (float64, error) {
	if len(xs) == 0 {
		return math.NaN(), ErrNoPoints
	}
	if p < 0 || p > 100 || math.IsNaN(p) {
		return math.NaN(), fmt.Errorf("percentile %g: want 0..100", p)
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	frac := rank - float64(lo)
	// The explicit conversion rounds the product before the addition: without it Go may fuse
	// them into one FMA on some processors (arm64), changing the last bit, and so the bytes of
	// a receipt assembled on another machine.
	return s[lo] + float64((s[hi]-s[lo])*frac), nil
}

// Median is Percentile(xs, 50).
func Median(xs []float64) (float64, error) { return Percentile(xs, 50) }

// Comparison is a benchstat-style comparison of a new sample against a baseline.
type Comparison struct {
	Base, New Summary
	Delta     float64  `json:"delta"` // New.Mean / Base.Mean - 1
	P         float64  `json:"p"`     // Welch's two-sided t-test p-value; NaN when it cannot be computed
	Alpha     float64  `json:"alpha"`
	Warnings  []string `json:"warnings,omitempty"`
	// Significant is false when P >= Alpha or P is unknown: the delta then prints as "~".
	Significant bool `json:"significant"`
	// DeltaLo/DeltaHi bound the t-based 95% interval of (New.Mean - Base.Mean) / Base.Mean.
	DeltaLo float64 `json:"delta_lo"`
	DeltaHi float64 `json:"delta_hi"`
}

// MinReps is the number of repetitions below which a comparison warns.
const MinReps = 3

// Compare tests new against base with Welch's t-test (unequal variances), the right test for a
// handful of llama-bench repetitions.
func Compare(base, new []float64, alpha float64) Comparison {
	c := Comparison{Base: Summarize(base), New: Summarize(new), Alpha: alpha, P: math.NaN()}
	for _, side := range []struct {
		name string
		s    Summary
	}{{"baseline", c.Base}, {"new", c.New}} {
		if side.s.N < MinReps {
			c.Warnings = append(c.Warnings, fmt.Sprintf("need >= %d reps for a confidence interval (%s has %d)", MinReps, side.name, side.s.N))
		}
	}
	if c.Base.Mean != 0 {
		c.Delta = c.New.Mean/c.Base.Mean - 1
	}
	if c.Base.N < 2 || c.New.N < 2 || c.Base.Mean == 0 {
		c.DeltaLo, c.DeltaHi = c.Delta, c.Delta
		return c
	}
	diff := c.New.Mean - c.Base.Mean
	se, df := welchSE(c.Base.SD, c.Base.N, c.New.SD, c.New.N)
	if se == 0 {
		if diff == 0 {
			c.P = 1
		} else {
			c.P = 0
		}
		c.DeltaLo, c.DeltaHi = c.Delta, c.Delta
		c.Significant = c.P < alpha
		return c
	}
	c.P = welchP(diff, se, df)
	half := TCritical(0.95, df) * se
	c.DeltaLo = (diff - half) / c.Base.Mean
	c.DeltaHi = (diff + half) / c.Base.Mean
	c.Significant = c.P < alpha
	return c
}

// String prints the delta the benchstat way: "+3.21% (p=0.002 n=5+5)" or "~ (p=0.412 n=5+5)".
func (c Comparison) String() string {
	n := fmt.Sprintf("n=%d+%d", c.Base.N, c.New.N)
	if math.IsNaN(c.P) {
		return fmt.Sprintf("%+.2f%% (p=? %s)", c.Delta*100, n)
	}
	if !c.Significant {
		return fmt.Sprintf("~ (p=%.3f %s)", c.P, n)
	}
	return fmt.Sprintf("%+.2f%% (p=%.3f %s)", c.Delta*100, c.P, n)
}

// welchSE is Welch's standard error of a difference of two means (each side's SD and n ≥ 2)
// and its Welch–Satterthwaite degrees of freedom (0, 0 when both spreads are 0).
func welchSE(sb float64, nb int, sn float64, nn int) (se, df float64) {
	vb := sb * sb / float64(nb)
	vn := sn * sn / float64(nn)
	se = math.Sqrt(vb + vn)
	if se == 0 {
		return 0, 0
	}
	df = (vb + vn) * (vb + vn) / (vb*vb/float64(nb-1) + vn*vn/float64(nn-1))
	return se, df
}

// welchP is the two-sided p-value of a difference with that standard error and df.
func welchP(diff, se, df float64) float64 {
	tstat := diff / se
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(tstat))
}
