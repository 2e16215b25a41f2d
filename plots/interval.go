package plots

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// IntervalKind says what an error bar spans.
type IntervalKind string

const (
	// IntervalCI95 is a 95% confidence interval of the mean from Student's t with n-1
	// degrees of freedom: mean ± t(0.975, n-1) · sd / √n. It needs n >= 2; with fewer
	// repetitions the bar falls back to ± sd and the chart says so.
	IntervalCI95 IntervalKind = "ci95"
	// IntervalSD is ± one standard deviation of the repetitions (what llama-bench prints).
	IntervalSD IntervalKind = "sd"
)

func (k IntervalKind) orDefault() (IntervalKind, error) {
	switch k {
	case "":
		return IntervalCI95, nil
	case IntervalCI95, IntervalSD:
		return k, nil
	}
	return "", fmt.Errorf("unknown interval %q: use %q (95%% t-interval of the mean) or %q (± 1 sd)", string(k), IntervalCI95, IntervalSD)
}

// HalfWidth returns the half-width of the error bar for a mean of n repetitions with
// standard deviation sd, and the kind actually used: IntervalCI95 falls back to IntervalSD
// when n < 2 (no interval can be formed from one value). A negative, NaN or infinite sd
// gives 0 with the kind asked for.
func HalfWidth(kind IntervalKind, sd float64, n int) (float64, IntervalKind) {
	if kind == "" {
		kind = IntervalCI95
	}
	if !(sd >= 0) || math.IsInf(sd, 0) {
		return 0, kind
	}
	if kind == IntervalSD || n < 2 {
		return sd, IntervalSD
	}
	return tQuantile975(n-1) * sd / math.Sqrt(float64(n)), IntervalCI95
}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of freedom
// (2.776 for df = 4: llama-bench's default five repetitions).
// The quantile is computed once per df (a numeric inversion that took most of a depth chart's
// build time when it ran for every point) and kept.
func tQuantile975(df int) float64 {
	if q, ok := tQuantiles.Load(df); ok {
		return q.(float64)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	tQuantiles.Store(df, q)
	return q
}

var tQuantiles sync.Map // df -> the 0.975 quantile

// intervalTally collects which kinds of bar a chart drew, for its caption.
type intervalTally struct {
	ci95N, sdN   map[int]bool // n values seen per kind
	fellBack     int          // bars that wanted ci95 but had n < 2
	zero, absent int
}

func (t *intervalTally) add(want IntervalKind, sd float64, n int) float64 {
	if t.ci95N == nil {
		t.ci95N, t.sdN = map[int]bool{}, map[int]bool{}
	}
	if !(sd >= 0) || math.IsInf(sd, 0) {
		t.absent++
		return 0
	}
	half, used := HalfWidth(want, sd, n)
	if used == IntervalCI95 {
		t.ci95N[n] = true
	} else {
		t.sdN[n] = true
		if want == IntervalCI95 {
			t.fellBack++
		}
	}
	if half == 0 {
		t.zero++
	}
	return half
}

// caption says which intervals the bars are, e.g. "error bars: 95% t-interval of the mean
// (n = 5)" or "error bars: ± 1 sd (n = 1–3)".
func (t *intervalTally) caption() string {
	var parts []string
	if len(t.ci95N) > 0 {
		parts = append(parts, "95% t-interval of the mean ("+nRange(t.ci95N)+")")
	}
	if len(t.sdN) > 0 {
		s := "± 1 sd (" + nRange(t.sdN) + ")"
		if t.fellBack > 0 && len(t.ci95N) > 0 {
			s = "± 1 sd where n < 2"
		} else if t.fellBack > 0 {
			s = "± 1 sd (n < 2: no t-interval)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no spread reported: no error bars"
	}
	out := "error bars: " + parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}

func nRange(ns map[int]bool) string {
	lo, hi := math.MaxInt, math.MinInt
	for n := range ns {
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo == hi {
		return fmt.Sprintf("n = %d", lo)
	}
	return fmt.Sprintf("n = %d–%d", lo, hi)
}
