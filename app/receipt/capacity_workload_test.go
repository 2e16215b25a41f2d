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
