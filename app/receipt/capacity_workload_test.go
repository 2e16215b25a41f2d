package receipt

import (
	"strings"
	"testing"

	"sparkbench/app/capacity"
)

// TestCapServingWorkloadLine: a serving plan with a workload gets its Workload line (the
// workload in words, where token counts come from, the prompt-cache arm); one without gets
// none, so its receipt is what it was.
func TestCapServingWorkloadLine(t *testing.T) {
	s := &capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{1}, Requests: 4,
		SLO: capacity.SLO{TTFTMs: 500, TPOTMs: 50, Percentile: 95, CompletionRateMin: 1}, MaxInFlight: 256, ScheduleSlackMs: 10}
	render := func() string {
		w := &mdWriter{}
		capServing(w, &capacity.Result{Plan: &capacity.Plan{Serving: s}})
		return w.b.String()
	}
	if out := render(); strings.Contains(out, "Workload") {
		t.Errorf("a plan without a workload got a Workload line:\n%s", out)
	}
	s.Workload = &capacity.Workload{Kind: capacity.WorkloadSharedPrefix, Seed: 3, Prefixes: 2, Suffixes: 4, PrefixWords: 60,
		InputWords: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 6}, OutputTokens: &capacity.LengthDist{Dist: capacity.DistNormal, Mean: 12, Std: 4, Min: 4, Max: 24}}
	s.CachePrompt = true
	want := "**Workload:** shared prefix: 2 prefixes of 60 words, each shared by 4 consecutive requests, then 6 suffix words; output tokens normal 12 ± 4 in \\[4, 24\\] (seed 3). " +
		"Each request's prompt tokens are llama-server's own /tokenize count (prompt_tokens in serving.jsonl); prompt cache on (cache_prompt: an explicit arm): requests may reuse cached prefixes."
	if out := render(); !strings.Contains(out, want) {
		t.Errorf("workload line missing; want %q in:\n%s", want, out)
	}
}

// TestCapServingRateUnits: a multi-turn workload's serving table gives its schedule's rates in
// conversations per second and its throughput in turns per second; any other workload keeps
// requests per second.
func TestCapServingRateUnits(t *testing.T) {
	mr := 1.5
	sv := capacity.ServingResult{Slots: 1, Pass: "forward", MaxSweepRate: &mr,
		Probes: []capacity.ProbeResult{{Probe: 1, Kind: "sweep", OfferedRate: 1, Requests: 4, Passed: true, ScheduleSHA256: strings.Repeat("a", 64)}}}
	render := func(s *capacity.Serving) string {
		w := &mdWriter{}
		capServingLifetime(w, "c", sv, 95, servingUnits(s))
		return w.b.String()
	}
	plain := render(&capacity.Serving{})
	if !strings.Contains(plain, "| Offered (req/s) | Scheduled (req/s) | Achieved (req/s) | Throughput (req/s) | Goodput (req/s) |") ||
		!strings.Contains(plain, "every SLO: 1.5 req/s.") {
		t.Errorf("requests per second:\n%s", plain)
	}
	mt := render(&capacity.Serving{Workload: &capacity.Workload{Kind: capacity.WorkloadMultiTurn}})
	if !strings.Contains(mt, "| Offered (conversations/s) | Scheduled (conversations/s) | Achieved (conversations/s) | Throughput (turns/s) | Goodput (turns/s) |") ||
		!strings.Contains(mt, "every SLO: 1.5 conversations/s.") {
		t.Errorf("multi-turn:\n%s", mt)
	}
}

// TestCapServingSustained: a lifetime judged by the sustain rule (serving-requests/v2) shows
// each probe's completions against its arrivals and the knee; a v1 lifetime's section is
// what it was (no sustain text), so its bundle's receipt keeps its bytes.
func TestCapServingSustained(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	knee, low := 4.0, 20.0
	sv := capacity.ServingResult{Slots: 1, Pass: "forward",
		Probes: []capacity.ProbeResult{
			{Probe: 0, Kind: "sweep", OfferedRate: 4, Requests: 16, Passed: true, ScheduleSHA256: strings.Repeat("a", 64),
				Sustain: &capacity.SustainCheck{Arrivals: 16, WindowS: 3.75, OfferedRate: f(4), DepartureRate: f(3.99), Ratio: f(0.9975), GrowthLimit: 3, Sustained: true}},
			{Probe: 1, Kind: "sweep", OfferedRate: 20, Requests: 41, Failures: []string{capacity.CodeNotSustained}, ScheduleSHA256: strings.Repeat("b", 64),
				Sustain: &capacity.SustainCheck{Arrivals: 41, WindowS: 2, OfferedRate: f(20), DepartureRate: f(9.63), Ratio: f(0.4816), InFlightMiddle: 6, InFlightLast: 13.1, InFlightGrowth: 7.1, GrowthLimit: 4.1}},
		},
		Saturation: &capacity.Saturation{Found: true, KneeRate: &knee, LowestUnsustained: &low, SaturatedRate: f(9.63), SkippedSweepRates: []float64{40},
			MinRequests: 16, MinSeconds: 2, Note: "saturates between 4/s (sustained) and 20/s (not sustained)"}}
	w := &mdWriter{}
	capServingLifetime(w, "c", sv, 95, servingUnits(&capacity.Serving{}))
	out := w.b.String()
	for _, want := range []string{"**Sustained rates:** a probe passes only when, over its window (at least 16 requests and 2 s of arrivals",
		"| 1 | 20 | 41 | 2.00 | 20 | 9.63 | 48.2% | 6.0 | 13.1 | 4.1 | NOT SUSTAINED |",
		"**Knee:** saturates between 4/s (sustained) and 20/s (not sustained); saturated, the server completed 9.63 req/s; sweep rates not probed (past saturation): 40 req/s."} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	sv.Saturation = nil
	for i := range sv.Probes {
		sv.Probes[i].Sustain = nil
	}
	w = &mdWriter{}
	capServingLifetime(w, "c", sv, 95, servingUnits(&capacity.Serving{}))
	if out := w.b.String(); strings.Contains(out, "Sustained") || strings.Contains(out, "Knee") {
		t.Errorf("a v1 lifetime's section mentions the sustain rule:\n%s", out)
	}
}
