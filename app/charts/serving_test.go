package charts

import (
	"testing"

	"sparkbench/app/capacity"
)

func fp(v float64) *float64 { return &v }

func servingResult(multiTurn bool) *capacity.Result {
	r := &capacity.Result{Plan: &capacity.Plan{Name: "plan"}}
	r.Plan.Serving = &capacity.Serving{SLO: capacity.SLO{TTFTMs: 1000, TPOTMs: 50, Percentile: 99}}
	if multiTurn {
		r.Plan.Serving.Workload = &capacity.Workload{Kind: capacity.WorkloadMultiTurn}
	}
	q := func(p95, p99 float64) capacity.Quantiles { return capacity.Quantiles{P95: fp(p95), P99: fp(p99)} }
	sv := capacity.ServingResult{Pass: "forward", Slots: 4, MaxSweepRate: fp(2),
		Probes: []capacity.ProbeResult{
			{Probe: 1, Kind: capacity.ProbeSweep, OfferedRate: 1, TTFTMs: q(200, 250), TPOTMs: q(20, 25), Throughput: fp(1), Goodput: fp(1), Passed: true},
			{Probe: 2, Kind: capacity.ProbeSweep, OfferedRate: 2, TTFTMs: q(400, 450), TPOTMs: q(30, 35), Throughput: fp(2), Goodput: fp(1.9), Passed: true},
			{Probe: 3, Kind: capacity.ProbeSweep, OfferedRate: 4, TTFTMs: q(4000, 5000), TPOTMs: q(60, 70), Throughput: fp(2.5), Goodput: fp(0.2)},
			{Probe: 4, Kind: capacity.ProbeSearch, OfferedRate: 3, TTFTMs: q(1500, 1800)},
			{Probe: 5, Kind: capacity.ProbeSearch, OfferedRate: 2.5, TTFTMs: q(700, 800), Passed: true},
		},
		Search: &capacity.SearchResult{MaxRate: fp(2.5), Probes: []int{4, 5}}}
	r.Candidates = []capacity.CandidateResult{{ID: "q8", Label: "Q8", Serving: []capacity.ServingResult{sv}}}
	return r
}

func TestServingCharts(t *testing.T) {
	if a, b, c := ServingCharts(&capacity.Result{}); a != nil || b != nil || c != nil {
		t.Fatal("charts for a plan without a serving block")
	}
	lat, good, search := ServingCharts(servingResult(false))
	if lat == nil || good == nil || search == nil {
		t.Fatalf("charts missing: %v %v %v", lat, good, search)
	}
	if len(lat.Series) != 1 || lat.Series[0].Label != "Q8, P4" || lat.Series[0].Knee != 2.5 || lat.Percentile != 99 {
		t.Fatalf("latency series: %+v", lat)
	}
	if p := lat.Series[0].Points[1]; p.TTFTMs != 450 || p.TPOTMs != 35 || p.Goodput != 1.9 || !p.Pass {
		t.Errorf("probe 2 (p99 wanted): %+v", p)
	}
	if s := search.Series[0]; len(s.Probes) != 2 || s.Probes[0].Rate != 3 || s.Probes[0].Pass || s.Probes[1].Rate != 2.5 || s.MaxRate != 2.5 {
		t.Errorf("search series: %+v", s)
	}
	if good.Unit != "req/s" || good.YUnit != "req/s" {
		t.Errorf("units %q %q", good.Unit, good.YUnit)
	}
	if _, err := lat.Plot(); err != nil {
		t.Fatal(err)
	}
	r := servingResult(true)
	r.Candidates[0].Serving[0].Search = nil
	lat, good, search = ServingCharts(r)
	if search != nil || lat.Series[0].Knee != 2 || good.Unit != "conversations/s" || good.YUnit != "turns/s" {
		t.Errorf("without a search: search %v, knee %v, units %q %q", search, lat.Series[0].Knee, good.Unit, good.YUnit)
	}
}
