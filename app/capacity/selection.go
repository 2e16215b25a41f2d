package capacity

import (
	"fmt"
	"math"
	"sort"

	"sparkbench/app/analysis"
)

// PassLoadGates are one pass's load-SLO gates of a cell, in order: observed-p95 TTFT, observed-p95
// E2E, completion rate, each named and coded with the pass prefix (forward:ttft_p95_above_slo …).
// Failure is set on the ones that failed. The assembly applies them to every pass of a cell; the
// window applies them to a pass as soon as its cell is measured (the live envelope).
func PassLoadGates(m PassMetrics, l Limits) []GateCheck {
	var out []GateCheck
	gate := func(g GateCheck, code string) {
		if !g.Passed {
			g.Failure = code
		}
		out = append(out, g)
	}
	above := func(name string, obs *float64, limit float64, code string) {
		g := GateCheck{Gate: name, Observed: obs, Limit: fptr(limit), Passed: obs != nil && *obs <= limit}
		if obs == nil {
			g.Detail = "no completed measured request: the observed p95 is undefined"
		}
		gate(g, code)
	}
	above(m.Pass+":ttft_ms_p95", m.TTFTMsP95, l.TTFTMsP95Max, m.Pass+":"+CodeTTFTAbove)
	above(m.Pass+":e2e_latency_ms_p95", m.E2EMsP95, l.E2EMsP95Max, m.Pass+":"+CodeE2EAbove)
	gate(GateCheck{Gate: m.Pass + ":completion_rate", Observed: fptr(m.CompletionRate), Limit: fptr(l.CompletionRateMin),
		Passed: m.CompletionRate >= l.CompletionRateMin, Detail: fmt.Sprintf("%d of %d", m.Completed, m.Attempted)},
		m.Pass+":"+CodeCompletionBelow)
	return out
}

// selectPoint applies the selection rule: maximise the generation rate among cells passing
// every gate; cells within tol of the best are ordered by lower observed-p95 E2E, lower
// observed-p95 TTFT, lower peak RSS, fewer slots, fewer clients.
func selectPoint(cells []CellResult, tol float64, baseRate *float64) (*Selection, string) {
	var passing []CellResult
	for _, c := range cells {
		if c.Passed && c.GenerationRate != nil && c.E2EMsP95 != nil && c.TTFTMsP95 != nil {
			passing = append(passing, c)
		}
	}
	if len(passing) == 0 {
		return nil, "no cell passes every gate"
	}
	best := math.Inf(-1)
	for _, c := range passing {
		best = max(best, *c.GenerationRate)
	}
	var within []CellResult
	for _, c := range passing {
		if *c.GenerationRate >= best*(1-tol) {
			within = append(within, c)
		}
	}
	steps := []struct {
		name string
		key  func(CellResult) float64
	}{
		{DecidedByE2E, func(c CellResult) float64 { return *c.E2EMsP95 }},
		{DecidedByTTFT, func(c CellResult) float64 { return *c.TTFTMsP95 }},
		{DecidedByPeakRSS, func(c CellResult) float64 { return c.PeakRSSMiB }},
		{DecidedBySlots, func(c CellResult) float64 { return float64(c.Slots) }},
		{DecidedByClients, func(c CellResult) float64 { return float64(c.Clients) }},
	}
	sort.SliceStable(within, func(i, j int) bool {
		for _, s := range steps {
			if a, b := s.key(within[i]), s.key(within[j]); a != b {
				return a < b
			}
		}
		return false
	})
	sel := within[0]
	s := &Selection{Slots: sel.Slots, Clients: sel.Clients, GenerationRate: *sel.GenerationRate, DecidedBy: DecidedByRate, WithinTolerance: []PointRef{}}
	if len(within) > 1 {
		for _, st := range steps {
			if st.key(within[0]) != st.key(within[1]) {
				s.DecidedBy = st.name
				break
			}
		}
	}
	for _, c := range within {
		s.WithinTolerance = append(s.WithinTolerance, PointRef{Slots: c.Slots, Clients: c.Clients, GenerationRate: c.GenerationRate})
	}
	if baseRate != nil && *baseRate > 0 {
		s.Gain = fptr(s.GenerationRate / *baseRate - 1)
	}
	return s, ""
}

// scalingOf computes speedup, gain per doubling, knee and TTFT growth along the diagonal
// clients = slots.
func scalingOf(cells []CellResult, knee float64) (*ScalingResult, string) {
	var pts []analysis.Point
	var diag []CellResult
	for _, c := range cells {
		if c.Clients == c.Slots && c.GenerationRate != nil && *c.GenerationRate > 0 {
			pts = append(pts, analysis.Point{X: float64(c.Slots), Y: *c.GenerationRate})
			diag = append(diag, c)
		}
	}
	if len(pts) < 2 {
		return nil, fmt.Sprintf("scaling needs at least two diagonal cells (clients = slots) with a rate; have %d", len(pts))
	}
	s, err := analysis.ScalingOf(pts, knee)
	if err != nil {
		return nil, err.Error()
	}
	r := &ScalingResult{Points: pts, Scaling: s}
	if a, b := diag[0].TTFTMsP95, diag[len(diag)-1].TTFTMsP95; a != nil && b != nil && *a > 0 {
		r.TTFTGrowth = fptr(*b / *a)
	}
	return r, ""
}
