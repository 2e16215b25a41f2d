package runner

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"sparkbench/runner/benchfmt"
)

// Default CV gate limits (stddev / mean of t/s over the repetitions).
const (
	DefaultCVTG      = 0.05 // tg (and pg) at any depth
	DefaultCVPPDepth = 0.10 // pp at depth > 0
	DefaultCVPP      = 0.05 // pp at depth 0
)

// CVGate flags a test whose coefficient of variation is above its limit and halts the leg.
// Zero limits take the defaults; Off disables the gate. A test with fewer than two
// repetitions has no CV and passes.
type CVGate struct {
	Off     bool    `json:"off,omitempty"`
	TG      float64 `json:"tg,omitempty"`
	PPDepth float64 `json:"pp_depth,omitempty"`
	PP      float64 `json:"pp,omitempty"`
}

func (g CVGate) withDefaults() CVGate {
	if g.TG <= 0 {
		g.TG = DefaultCVTG
	}
	if g.PPDepth <= 0 {
		g.PPDepth = DefaultCVPPDepth
	}
	if g.PP <= 0 {
		g.PP = DefaultCVPP
	}
	return g
}

// Limit is the CV limit for a row.
func (g CVGate) Limit(r *benchfmt.Result) float64 {
	g = g.withDefaults()
	if r.Kind() == benchfmt.KindPP {
		if r.NDepth > 0 {
			return g.PPDepth
		}
		return g.PP
	}
	return g.TG
}

// CV is stddev_ts / avg_ts; 0 with fewer than two repetitions or no mean.
func CV(r *benchfmt.Result) float64 {
	if r.AvgTs <= 0 || len(r.SamplesTs) < 2 || math.IsNaN(r.StddevTs) {
		return 0
	}
	return r.StddevTs / r.AvgTs
}

// Check returns the CV, the limit and whether the row passes.
func (g CVGate) Check(r *benchfmt.Result) (cv, limit float64, ok bool) {
	cv, limit = CV(r), g.Limit(r)
	if g.Off {
		return cv, limit, true
	}
	return cv, limit, cv <= limit
}

// DefaultCanaryMaxDrop is how far below its baseline a canary may run and still pass.
const DefaultCanaryMaxDrop = 0.20

// CanarySpec is the small, short leg a queue runs after a leg of class device_lost, crashed or
// oom, to learn whether the machine is still fit to measure.
type CanarySpec struct {
	Leg LegSpec `json:"leg"`
	// Baseline is the canary's recorded t/s per test name ("pp64", "tg32"); a test not named
	// here is only required to complete.
	Baseline map[string]float64 `json:"baseline,omitempty"`
	// MaxDrop is the fraction below the baseline still accepted (default 0.20).
	MaxDrop float64 `json:"max_drop,omitempty"`
}

// EvaluateCanary passes a canary leg that completed (class ok) with every baselined test no
// more than MaxDrop below its baseline.
func EvaluateCanary(spec CanarySpec, res *LegResult) (pass bool, reason string, observed map[string]float64) {
	maxDrop := spec.MaxDrop
	if maxDrop <= 0 {
		maxDrop = DefaultCanaryMaxDrop
	}
	observed = map[string]float64{}
	for _, r := range res.Rows {
		observed[r.Sample.Test] = r.Sample.AvgTs
	}
	if res.Exit.Class != ClassOK {
		return false, fmt.Sprintf("canary did not complete: %s: %s", res.Exit.Class, res.Exit.Reason), observed
	}
	names := make([]string, 0, len(spec.Baseline))
	for n := range spec.Baseline {
		names = append(names, n)
	}
	sort.Strings(names)
	var bad []string
	for _, n := range names {
		base := spec.Baseline[n]
		got, ok := observed[n]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s missing (baseline %.2f t/s)", n, base))
		case base > 0 && got < base*(1-maxDrop):
			bad = append(bad, fmt.Sprintf("%s %.2f t/s is %.1f%% below its baseline %.2f (limit %.0f%%)",
				n, got, 100*(1-got/base), base, 100*maxDrop))
		}
	}
	if len(bad) > 0 {
		return false, "canary below baseline: " + strings.Join(bad, "; "), observed
	}
	return true, "canary passed", observed
}
