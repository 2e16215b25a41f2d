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
