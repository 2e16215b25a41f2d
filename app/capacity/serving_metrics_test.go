package capacity

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// probeServing is a serving block with tight, round SLOs for hand-computed probes.
func probeServing() *Serving {
	return &Serving{Arrival: Arrival{Process: ArrivalConstant}, Rates: []float64{2}, Requests: 5,
		SLO:             SLO{TTFTMs: 100, TPOTMs: 10, E2EMs: 130, Percentile: 95, CompletionRateMin: 0.75},
		ScheduleSlackMs: 5, ContaminationMax: 0.2, MaxInFlight: 256}
}

// servingRec is a measured single-turn request: due at sched, sent at send, first token at
// first (< 0: none), ended at end, with tokens generated and answered with status.
func servingRec(seq int, sched, send, first, end float64, tokens, status int) ServingRecord {
	r := ServingRecord{Phase: PhaseMeasured, Seq: seq, ScheduledMs: &sched, SendMs: send, EndMs: end, Tokens: tokens, Events: tokens, HTTPStatus: status}
	if first >= 0 {
		r.FirstTokenMs = &first
	}
	if status != 200 {
		r.Error = "busy"
	}
	return r
}

// TestProbeFiguresHandComputed: one probe's figures from five requests. Each SLO has a
// request exactly at it that still counts as good (TTFT 100 ms; TPOT 10 and E2E 120 ms), and
// one request meets TTFT and TPOT but not E2E, so it is not; a one-token request has TPOT 0;
// the contaminated request is excluded from the completion rate's denominator.
func TestProbeFiguresHandComputed(t *testing.T) {
	s := probeServing()
	s.SLO.E2EMs = 120
	recs := []ServingRecord{
		servingRec(0, 0, 5, 90, 120, 4, 200),          // TTFT 90, TPOT 10, E2E 120: good, at two edges
		servingRec(1, 500, 505, 580, 630, 6, 200),     // TTFT 80, TPOT 10, E2E 130: completed, not good
		servingRec(2, 1000, 1002, 1100, 1100, 1, 200), // asks for one token: TTFT 100, TPOT 0: good
		servingRec(3, 1500, 1500, -1, 1510, 0, 503),   // failed
		servingRec(4, 2000, 2000, 2050, 2100, 4, 200), // answered from the prompt cache
	}
	recs[1].NPredict, recs[2].NPredict = 6, 1
	recs[4].Timings = &ServingTimings{PromptN: 10, PredictedN: 4, CacheN: 5}
	slices.Reverse(recs) // any order
	pr := ProbeMetrics(s, 4, 3, ProbeSweep, 2, recs)
	if pr.Requests != 5 || pr.Completed != 3 || pr.Contaminated != 1 || pr.CompletionRate != 0.75 || pr.TokenMismatch != 0 || pr.Probe != 3 || pr.Kind != ProbeSweep {
		t.Errorf("counts: %d requests, %d completed, %d contaminated, rate %v, %d mismatched; want 5, 3, 1, 0.75, 0", pr.Requests, pr.Completed, pr.Contaminated, pr.CompletionRate, pr.TokenMismatch)
	}
	eq := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || *got != want {
			t.Errorf("%s = %s, want %v", name, ptrText(got), want)
		}
	}
	eq("scheduled rate", pr.ScheduledRate, perSecond(4, 2000))
	eq("achieved rate", pr.AchievedRate, perSecond(4, 1995))
	eq("throughput", pr.Throughput, perSecond(3, 2100))
	eq("goodput", pr.Goodput, perSecond(2, 2100))
	eq("token rate", pr.TokenRate, perSecond(15, 2100))
	eq("TPOT max", pr.TPOTMs.Max, 10)
	eq("TPOT p50", pr.TPOTMs.P50, 10)
	eq("TTFT max", pr.TTFTMs.Max, 100)
	eq("E2E max", pr.E2EMs.Max, 130)
	eq("TPOT p95", pr.TPOTMs.P95, 10)
	eq("send delay max", pr.SendDelayMs.Max, 5)
	eq("send delay p99", pr.SendDelayMs.P99, 5) // delays 5, 5, 2, 0, 0
	// At their edges: completion 0.75, contamination 1/5 = 0.2, send delay p99 5 ms and TPOT
	// p95 10 ms pass, as does TTFT p95 (80, 90, 100: 99); E2E p95 (100, 120, 130: 129) is above
	// 120, and the completions (3 over 1.98 s) fell behind 2/s.
	if want := []string{"e2e_ms_p95_above_slo", CodeNotSustained}; !slices.Equal(pr.Failures, want) {
		t.Errorf("failures %v, want %v", pr.Failures, want)
	}

	// One request: no rate over no span; a failure that ends as it was due has no window.
	one := ProbeMetrics(s, 4, 0, ProbeSweep, 2, []ServingRecord{servingRec(0, 100, 100, -1, 100, 0, 500)})
	if one.ScheduledRate != nil || one.AchievedRate != nil || one.Throughput != nil || one.Goodput != nil || one.TokenRate != nil || one.CompletionRate != 0 {
		t.Errorf("one request: %+v", one)
	}
	// Every request contaminated: no cold request, completion rate 0.
	all := []ServingRecord{servingRec(0, 0, 0, 50, 90, 4, 200), servingRec(1, 500, 500, 550, 590, 4, 200)}
	for i := range all {
		all[i].Timings = &ServingTimings{PromptN: 10, PredictedN: 4, CacheN: 3}
	}
	if pr := ProbeMetrics(s, 4, 0, ProbeSweep, 2, all); pr.Contaminated != 2 || pr.CompletionRate != 0 || pr.Completed != 0 {
		t.Errorf("all contaminated: %d contaminated, rate %v, %d completed; want 2, 0, 0", pr.Contaminated, pr.CompletionRate, pr.Completed)
	}
}

// TestProbeArrivalsAreFirstTurns: in a multi-turn probe the schedule's arrivals are the first
// turns; a later turn is due when the turn before it ended and does not count.
func TestProbeArrivalsAreFirstTurns(t *testing.T) {
	s := probeServing()
	turn := func(seq, conv, turn int, sched, send float64) ServingRecord {
		r := servingRec(seq, sched, send, sched+50, sched+80, 4, 200)
		r.Conversation, r.Turn, r.Turns = conv, turn, 2
		return r
	}
	recs := []ServingRecord{turn(0, 1, 1, 0, 1), turn(1, 1, 2, 300, 300), turn(2, 2, 1, 1000, 1004), turn(3, 2, 2, 1400, 1400)}
	pr := ProbeMetrics(s, 4, 0, ProbeSweep, 1, recs)
	if pr.ScheduledRate == nil || *pr.ScheduledRate != 1 || pr.AchievedRate == nil || *pr.AchievedRate != perSecond(1, 1003) {
		t.Errorf("scheduled %v achieved %v; want 1/s over the first turns (0 and 1000 ms), 1 per 1003 ms sent", ptrText(pr.ScheduledRate), ptrText(pr.AchievedRate))
	}
}

// judgedProbe is a probe's figures at the given p95/p99 values, judged by s.
func judgedProbe(s *Serving, pr ProbeResult) ProbeResult {
	pr.Checks, pr.Failures = []GateCheck{}, []string{}
	pr.judge(s)
	return pr
}

func gateNames(pr ProbeResult) []string {
	var out []string
	for _, g := range pr.Checks {
		out = append(out, g.Gate)
	}
	return out
}

// TestProbeJudgeBoundaries: each probe gate passes at its limit and fails just past it, with
// its code, in the fixed order; an SLO of 0 is no gate; the plan's percentile picks p95 or p99.
func TestProbeJudgeBoundaries(t *testing.T) {
	s := probeServing()
	s.SLO.E2EMs = 0 // no E2E gate
	s.ContaminationMax = 0.2
	at := ProbeResult{Requests: 10, Contaminated: 2, CompletionRate: 0.75,
		TTFTMs: Quantiles{P95: fp(100), P99: fp(100.5)}, TPOTMs: Quantiles{P95: fp(10), P99: fp(10)},
		E2EMs: Quantiles{P95: fp(9999), P99: fp(9999)}, SendDelayMs: Quantiles{P99: fp(5)}}
	pr := judgedProbe(s, at)
	if !pr.Passed || len(pr.Failures) != 0 {
		t.Errorf("at every limit: failures %v, checks %+v", pr.Failures, pr.Checks)
	}
	if want := []string{"completion_rate", "ttft_ms_p95", "tpot_ms_p95", "send_delay_ms_p99", "prompt_cache_contamination", "token_count"}; !slices.Equal(gateNames(pr), want) {
		t.Errorf("gates %v, want %v", gateNames(pr), want)
	}
	if g := pr.Checks[4]; *g.Observed != 0.2 || g.Detail != "2 of 10 cold requests answered from the prompt cache (timings.cache_n > 0), excluded from the figures" {
		t.Errorf("contamination check %+v", g)
	}
	if g := pr.Checks[3]; g.Detail != "" {
		t.Errorf("send delay within slack carries detail %q", g.Detail)
	}

	past := at
	past.CompletionRate, past.TPOTMs.P95, past.SendDelayMs.P99, past.Contaminated, past.TokenMismatch = 0.74, fp(10.01), fp(5.01), 3, 1
	past.OfferedRate, past.ScheduledRate = 2, fp(1.95)
	pr = judgedProbe(s, past)
	want := []string{CodeServingCompletion, "tpot_ms_p95_above_slo", CodeBehindSchedule, CodeContaminated, CodeTokenMismatch}
	if pr.Passed || !slices.Equal(pr.Failures, want) {
		t.Errorf("past every limit but TTFT: failures %v, want %v", pr.Failures, want)
	}
	if d := pr.Checks[3].Detail; d != "the client could not keep its schedule: offered 2 req/s (the schedule's own 1.95 req/s), achieved unknown" {
		t.Errorf("behind schedule detail %q", d)
	}

	// p99: the TTFT's 100.5 is judged, and fails.
	s99 := probeServing()
	s99.SLO.E2EMs, s99.SLO.Percentile = 0, 99
	if pr := judgedProbe(s99, at); !slices.Equal(pr.Failures, []string{"ttft_ms_p99_above_slo"}) || pr.Checks[1].Gate != "ttft_ms_p99" {
		t.Errorf("p99: failures %v, gates %v", pr.Failures, gateNames(pr))
	}

	// No completed request: the latency gates fail as undefined; nothing cold, nothing
	// contaminated: the contamination gate passes at 0 with no detail.
	pr = judgedProbe(s, ProbeResult{CompletionRate: 1, SendDelayMs: Quantiles{P99: fp(0)}})
	if !slices.Equal(pr.Failures, []string{"ttft_ms_p95_above_slo", "tpot_ms_p95_above_slo"}) || pr.Checks[1].Detail != "no completed request" {
		t.Errorf("no completed request: failures %v, checks %+v", pr.Failures, pr.Checks)
	}
	if g := pr.Checks[4]; !g.Passed || *g.Observed != 0 || g.Detail != "" {
		t.Errorf("no request: contamination check %+v", g)
	}
	// No send delay measured: behind schedule.
	if pr := judgedProbe(s, ProbeResult{CompletionRate: 1, TTFTMs: at.TTFTMs, TPOTMs: at.TPOTMs}); !slices.Equal(pr.Failures, []string{CodeBehindSchedule}) {
		t.Errorf("no send delay: failures %v", pr.Failures)
	}

	// Multi-turn with caching on: only first turns are cold.
	mt := at
	mt.Conversations, mt.Contaminated = &ConversationCounts{FirstTurns: 5}, 1
	s.CachePrompt = true
	if g := judgedProbe(s, mt).Checks[4]; !g.Passed || *g.Observed != 0.2 || !strings.HasPrefix(g.Detail, "1 of 5 first turns took more than their header") {
		t.Errorf("multi-turn contamination %+v", g)
	}
	// The sustain rule, when measured, is the last gate.
	sus := at
	sus.Sustain = &SustainCheck{Arrivals: 3}
	s.CachePrompt = false
	if pr := judgedProbe(s, sus); !slices.Equal(pr.Failures, []string{CodeNotSustained}) || pr.Checks[len(pr.Checks)-1].Gate != "sustained" {
		t.Errorf("unsustained: failures %v", pr.Failures)
	}
}

// TestContaminated: a cold request reused its prompt cache when cache_n > 0 or when the
// server processed fewer prompt tokens than the prompt's own /tokenize count.
func TestContaminated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tm     *ServingTimings
		prompt int
		want   bool
	}{
		{"no timings", nil, 10, false},
		{"cold", &ServingTimings{PromptN: 10}, 10, false},
		{"cache_n 1", &ServingTimings{PromptN: 10, CacheN: 1}, 10, true},
		{"prompt_n short by one", &ServingTimings{PromptN: 9}, 10, true},
		{"prompt_n above", &ServingTimings{PromptN: 11}, 10, false},
		{"no tokenize count", &ServingTimings{PromptN: 0}, 0, false},
	} {
		if got := contaminated(ServingRecord{Timings: tc.tm, PromptTokens: tc.prompt}); got != tc.want {
			t.Errorf("%s: contaminated = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCompletedUnder: HTTP 200, no error, every token asked for (the request's own n_predict
// when it has one) and a first token.
func TestCompletedUnder(t *testing.T) {
	s := probeServing()
	ok := servingRec(0, 0, 0, 10, 20, 4, 200)
	if !completedUnder(s, 4, ok) {
		t.Error("a complete request not completed")
	}
	for name, r := range map[string]ServingRecord{
		"status":        func() ServingRecord { r := ok; r.HTTPStatus = 201; return r }(),
		"error":         func() ServingRecord { r := ok; r.Error = "reset"; return r }(),
		"short":         func() ServingRecord { r := ok; r.Tokens = 3; return r }(),
		"no first":      func() ServingRecord { r := ok; r.FirstTokenMs = nil; return r }(),
		"own n_predict": func() ServingRecord { r := ok; r.NPredict = 8; return r }(),
	} {
		if completedUnder(s, 4, r) {
			t.Errorf("%s: completed", name)
		}
	}
	own := ok
	own.NPredict, own.Tokens = 8, 8
	if !completedUnder(s, 4, own) {
		t.Error("a request with its own n_predict of 8 that got 8 not completed")
	}
}

func ptrText(x *float64) string {
	if x == nil {
		return "nil"
	}
	return strconv.FormatFloat(*x, 'g', -1, 64)
}

// perSecond is n per span ms in requests per second, in the code's own float operations (a
// constant expression would be computed exactly, then rounded once).
func perSecond(n, spanMs float64) float64 { return n / spanMs * 1000 }
