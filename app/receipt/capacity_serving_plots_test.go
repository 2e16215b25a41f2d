package receipt

import (
	"strings"
	"testing"

	"sparkbench/app/capacity"
)

// TestCapServingPlotNames: a serving plan's receipt lists its latency, goodput and (with a
// search) search-trace plots; a plan without a serving block lists none of them.
func TestCapServingPlotNames(t *testing.T) {
	rate := 2.0
	r := &capacity.Result{Plan: &capacity.Plan{Name: "p"}, Candidates: []capacity.CandidateResult{{ID: "c", Label: "C",
		Serving: []capacity.ServingResult{{Pass: "forward", Slots: 1, Probes: []capacity.ProbeResult{{Probe: 1, OfferedRate: 1, Passed: true}},
			Search: &capacity.SearchResult{MaxRate: &rate, Probes: []int{1}}}}}}}
	if names := strings.Join(capacityPlotNames(r), " "); strings.Contains(names, "serving") {
		t.Fatalf("no serving block, yet: %s", names)
	}
	r.Plan.Serving = &capacity.Serving{SLO: capacity.SLO{TTFTMs: 1000, TPOTMs: 50, Percentile: 95}}
	names := strings.Join(capacityPlotNames(r), " ")
	for _, want := range []string{"plots/serving-latency.png", "plots/serving-goodput.svg", "plots/serving-search.png"} {
		if !strings.Contains(names, want) {
			t.Errorf("plot list lacks %s: %s", want, names)
		}
	}
}

// TestServingSearchChartWithoutProbes: a plan with a search whose search made no probe of its
// own (the server sustained not even lo, which the sweep had measured) has no search trace,
// and `plot --kind serving_search` says so and why, never that the plan has no search.
func TestServingSearchChartWithoutProbes(t *testing.T) {
	fail := 2.0
	r := &capacity.Result{Plan: &capacity.Plan{Name: "p", Serving: &capacity.Serving{Rates: []float64{2}, Search: &capacity.RateSearch{Lo: 2, Hi: 8, Tolerance: 0.2, MaxProbes: 4},
		SLO: capacity.SLO{TTFTMs: 1000, TPOTMs: 50, Percentile: 95}}},
		Candidates: []capacity.CandidateResult{{ID: "c", Label: "C", Serving: []capacity.ServingResult{{Pass: "forward", Slots: 1,
			Probes: []capacity.ProbeResult{{Probe: 0, Kind: capacity.ProbeSweep, OfferedRate: 2, Failures: []string{capacity.CodeNotSustained}}},
			Search: &capacity.SearchResult{LowestFail: &fail, Converged: true, Note: "no rate from lo meets the SLO", Probes: []int{}}}}}}}
	_, err := servingChart(r, "serving_search")
	if err == nil || !strings.Contains(err.Error(), "the max-rate search made no probe of its own (no rate from lo meets the SLO)") {
		t.Errorf("err = %v; want the search's own reason", err)
	}
	r.Plan.Serving.Search = nil
	if _, err := servingChart(r, "serving_search"); err == nil || !strings.Contains(err.Error(), "the plan has no max-rate search") {
		t.Errorf("no search planned: err = %v", err)
	}
}
