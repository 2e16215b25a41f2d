package capacity

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Exact failure codes of a serving probe, in the order its gates are checked (docs/serving.md);
// the latency codes name the plan's percentile, e.g. ttft_ms_p95_above_slo.
const (
	CodeServingCompletion = "completion_rate_below_slo"
	CodeBehindSchedule    = "client_behind_schedule"
	CodeContaminated      = "prompt_cache_contaminated"
	CodeTokenMismatch     = "token_count_mismatch"
)

// ClientBoundFactor: a probe whose median TTFT or TPOT is within this multiple of the harness
// floor's p99 is flagged client_bound (the client's own overhead is a visible share of it).
const ClientBoundFactor = 3

// ProbeResult is one offered rate of one server lifetime: its requests' figures, with TTFT and
// E2E measured from each request's scheduled send time, and its SLO gates.
type ProbeResult struct {
	Probe          int     `json:"probe"`
	Kind           string  `json:"kind"`         // sweep or search
	OfferedRate    float64 `json:"offered_rate"` // req/s
	ScheduleSHA256 string  `json:"schedule_sha256"`
	Requests       int     `json:"requests"`
	Completed      int     `json:"completed"`
	Contaminated   int     `json:"contaminated"`    // cold requests the server answered from its prompt cache (excluded)
	TokenMismatch  int     `json:"token_mismatch"`  // requests whose predicted_n or content events differ from tokens
	CompletionRate float64 `json:"completion_rate"` // completed / (requests - contaminated)
	// ScheduledRate is (requests - 1) / (last scheduled - first scheduled send): the rate the
	// schedule itself offers (a seeded Poisson schedule of few requests is not exactly the
	// nominal rate); AchievedRate is the same over the actual sends: what the client managed.
	ScheduledRate *float64 `json:"scheduled_rate"`
	AchievedRate  *float64 `json:"achieved_rate"`
	// Throughput and Goodput are completed and SLO-meeting requests per second of the window
	// (first scheduled send to last end); TokenRate is generated tokens per second of it.
	Throughput *float64  `json:"throughput"`
	Goodput    *float64  `json:"goodput"`
	TokenRate  *float64  `json:"token_rate"`
	TTFTMs     Quantiles `json:"ttft_ms"`
	TPOTMs     Quantiles `json:"tpot_ms"`
	E2EMs      Quantiles `json:"e2e_ms"`
	// SendDelayMs is actual - scheduled send over the measured requests.
	SendDelayMs Quantiles `json:"send_delay_ms"`
	// ClientBound: the latencies are within ClientBoundFactor of the harness floor.
	ClientBound bool `json:"client_bound,omitempty"`
	// Conversations is a multi_turn probe's turns by kind (omitted otherwise).
	Conversations *ConversationCounts `json:"conversations,omitempty"`
	// TimingDisagreements are the requests whose client-measured generation time differs from
	// the server's timings beyond timing_tolerance (when the plan sets it).
	TimingDisagreements *TimingDisagreements `json:"timing_disagreements,omitempty"`
	// Sustain is the sustain rule measured over the probe's window (serving files of version
	// 2; omitted for the probes of a version 1 file, judged before the rule).
	Sustain  *SustainCheck `json:"sustain,omitempty"`
	Checks   []GateCheck   `json:"checks"`
	Failures []string      `json:"failures"`
	Passed   bool          `json:"passed"`
}

// Quantiles are p50, p95, p99 and the maximum (null when no value).
type Quantiles struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
	Max *float64 `json:"max"`
}

func quantilesOf(xs []float64) Quantiles {
	if len(xs) == 0 {
		return Quantiles{}
	}
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return Quantiles{P50: pct(xs, 50), P95: pct(xs, 95), P99: pct(xs, 99), Max: fptr(m)}
}

func (q Quantiles) at(p int) *float64 {
	if p == 99 {
		return q.P99
	}
	return q.P95
}

// ProbeMetrics computes one probe from its measured records (any order) and judges it against
// the serving SLO. Its pass or fail is what the max-rate search follows, so it depends on the
// records alone; the harness floor (when known) only adds the client_bound flag.
func ProbeMetrics(s *Serving, nPredict int, probe int, kind string, rate float64, measured []ServingRecord) ProbeResult {
	return probeMetrics(s, ServingRulesSustain, nPredict, probe, kind, rate, measured)
}

// probeMetrics is ProbeMetrics under a serving file's rules (ServingRulesV1: no sustain rule,
// every probe the plan's requests).
func probeMetrics(s *Serving, rules, nPredict int, probe int, kind string, rate float64, measured []ServingRecord) ProbeResult {
	recs := append([]ServingRecord(nil), measured...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	pr := ProbeResult{Probe: probe, Kind: kind, OfferedRate: rate, Requests: len(recs),
		ScheduleSHA256: ScheduleSHA256(ArrivalSchedule(s.Arrival, rate, s.probeRequests(rules, rate))), Checks: []GateCheck{}, Failures: []string{}}
	var ttft, tpot, e2e, delay []float64
	first, lastEnd := math.Inf(1), math.Inf(-1)
	firstSend, lastSend, lastSched := math.Inf(1), math.Inf(-1), math.Inf(-1)
	tokens, good, arrivals := 0, 0, 0
	pr.Conversations, pr.TimingDisagreements = conversationCounts(s, recs), timingDisagreements(s, recs)
	for _, r := range recs {
		sched := *r.ScheduledMs
		first, lastEnd = min(first, sched), max(lastEnd, r.EndMs)
		if r.Turn <= 1 { // an arrival of the schedule (a later turn is due when the turn before it ended)
			arrivals++
			lastSched, firstSend, lastSend = max(lastSched, sched), min(firstSend, r.SendMs), max(lastSend, r.SendMs)
		}
		delay = append(delay, r.SendMs-sched)
		tokens += r.Tokens
		if t := r.Timings; t != nil && (t.PredictedN != r.Tokens || r.Events != r.Tokens) && r.HTTPStatus == 200 && r.Error == "" {
			pr.TokenMismatch++
		}
		if contaminatedUnder(s.CachePrompt, r) {
			pr.Contaminated++
			continue
		}
		if !completedUnder(s, nPredict, r) {
			continue
		}
		pr.Completed++
		t, e := *r.FirstTokenMs-sched, r.EndMs-sched
		ttft, e2e = append(ttft, t), append(e2e, e)
		p := 0.0
		if r.Tokens > 1 {
			p = (r.EndMs - *r.FirstTokenMs) / float64(r.Tokens-1)
		}
		tpot = append(tpot, p)
		if t <= s.SLO.TTFTMs && p <= s.SLO.TPOTMs && (s.SLO.E2EMs == 0 || e <= s.SLO.E2EMs) {
			good++
		}
	}
	if n := len(recs); n > 0 {
		if cold := n - pr.Contaminated; cold > 0 {
			pr.CompletionRate = float64(pr.Completed) / float64(cold)
		}
		if lastSched > first {
			pr.ScheduledRate = fptr(float64(arrivals-1) / (lastSched - first) * 1000)
		}
		if lastSend > firstSend {
			pr.AchievedRate = fptr(float64(arrivals-1) / (lastSend - firstSend) * 1000)
		}
		if w := lastEnd - first; w > 0 {
			pr.Throughput, pr.Goodput = fptr(float64(pr.Completed)/w*1000), fptr(float64(good)/w*1000)
			pr.TokenRate = fptr(float64(tokens) / w * 1000)
		}
	}
	pr.TTFTMs, pr.TPOTMs, pr.E2EMs, pr.SendDelayMs = quantilesOf(ttft), quantilesOf(tpot), quantilesOf(e2e), quantilesOf(delay)
	if rules >= ServingRulesSustain {
		sc := Sustain(arrivalUnits(recs, func(r ServingRecord) bool { return completedUnder(s, nPredict, r) }))
		pr.Sustain = &sc
	}
	pr.judge(s)
	return pr
}

// judge runs the probe's gates in their fixed order.
func (pr *ProbeResult) judge(s *Serving) {
	slo := s.SLO
	check := func(g GateCheck, code string) {
		if !g.Passed {
			g.Failure = code
			pr.Failures = append(pr.Failures, code)
		}
		pr.Checks = append(pr.Checks, g)
	}
	check(GateCheck{Gate: "completion_rate", Observed: fptr(pr.CompletionRate), Limit: fptr(slo.CompletionRateMin),
		Passed: pr.CompletionRate >= slo.CompletionRateMin}, CodeServingCompletion)
	p := slo.Percentile
	for _, g := range []struct {
		name  string
		q     Quantiles
		limit float64
	}{{"ttft_ms", pr.TTFTMs, slo.TTFTMs}, {"tpot_ms", pr.TPOTMs, slo.TPOTMs}, {"e2e_ms", pr.E2EMs, slo.E2EMs}} {
		if g.limit == 0 {
			continue
		}
		obs := g.q.at(p)
		gc := GateCheck{Gate: fmt.Sprintf("%s_p%d", g.name, p), Observed: obs, Limit: fptr(g.limit), Passed: obs != nil && *obs <= g.limit}
		if obs == nil {
			gc.Detail = "no completed request"
		}
		check(gc, fmt.Sprintf("%s_p%d_above_slo", g.name, p))
	}
	sd := GateCheck{Gate: "send_delay_ms_p99", Observed: pr.SendDelayMs.P99, Limit: fptr(s.ScheduleSlackMs),
		Passed: pr.SendDelayMs.P99 != nil && *pr.SendDelayMs.P99 <= s.ScheduleSlackMs}
	if !sd.Passed {
		sd.Detail = fmt.Sprintf("the client could not keep its schedule: offered %s req/s (the schedule's own %s), achieved %s", ms(pr.OfferedRate), rateText(pr.ScheduledRate), rateText(pr.AchievedRate))
	}
	check(sd, CodeBehindSchedule)
	cold, what := pr.Requests, "cold requests answered from the prompt cache (timings.cache_n > 0)"
	if c := pr.Conversations; c != nil && s.CachePrompt { // later turns are warm by design: only first turns should be cold
		cold, what = c.FirstTurns, "first turns took more than their header (lead_tokens) from the prompt cache"
	}
	frac := 0.0
	if cold > 0 {
		frac = float64(pr.Contaminated) / float64(cold)
	}
	cg := GateCheck{Gate: "prompt_cache_contamination", Observed: fptr(frac), Limit: fptr(s.ContaminationMax), Passed: frac <= s.ContaminationMax}
	if pr.Contaminated > 0 {
		cg.Detail = fmt.Sprintf("%d of %d %s, excluded from the figures", pr.Contaminated, cold, what)
	}
	check(cg, CodeContaminated)
	tg := GateCheck{Gate: "token_count", Observed: fptr(float64(pr.TokenMismatch)), Limit: fptr(0), Passed: pr.TokenMismatch == 0}
	if !tg.Passed {
		tg.Detail = "the server's predicted_n or the content events seen differ from tokens_predicted"
	}
	check(tg, CodeTokenMismatch)
	if td := pr.TimingDisagreements; td != nil {
		check(td.gate(s.TimingTolerance), CodeTimingDisagreement)
	}
	if sc := pr.Sustain; sc != nil {
		check(sc.gate(), CodeNotSustained)
	}
	pr.Passed = len(pr.Failures) == 0
}

func rateText(r *float64) string {
	if r == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.3g req/s", *r)
}

// NextProbe is the rate the serving block measures next, given the probes measured so far in
// order: the sweep's rates, then the max-rate search's choices; done when there is none. The
// sweep stops climbing at its first probe that was not sustained (ProbePoint.Saturated): the
// rates above it are skipped, and the search (when planned) takes over.
func (s *Serving) NextProbe(points []ProbePoint) (rate float64, kind string, done bool, st SearchState) {
	sweep, saturated := min(len(points), len(s.Rates)), false
	for i := range sweep {
		if points[i].Saturated {
			sweep, saturated = i+1, true
			break
		}
	}
	if k := len(points); k == sweep && k < len(s.Rates) && !saturated {
		return s.Rates[k], ProbeSweep, false, st
	}
	if s.Search == nil {
		return 0, "", true, st
	}
	rate, done, st = NextSearchRate(*s.Search, points, len(points)-sweep)
	return rate, ProbeSearch, done, st
}

// ProbeSchedule is a probe's send times (the plan's arrival process at rate, ProbeRequests
// of them).
func (s *Serving) ProbeSchedule(rate float64) []time.Duration {
	return ArrivalSchedule(s.Arrival, rate, s.ProbeRequests(rate))
}

// completedUnder says a measured record completed: HTTP 200, no error, every token it asked
// for, a first token.
func completedUnder(s *Serving, nPredict int, r ServingRecord) bool {
	return r.HTTPStatus == 200 && r.Error == "" && r.Tokens == r.asked(nPredict) && r.FirstTokenMs != nil
}

// Point is the probe as the search and the sweep follow it.
func (pr ProbeResult) Point() ProbePoint {
	return ProbePoint{Rate: pr.OfferedRate, Passed: pr.Passed, Saturated: pr.Sustain != nil && !pr.Sustain.Sustained}
}

// contaminated says a request the server should have answered cold reused its prompt cache:
// timings.cache_n > 0, or timings.prompt_n below the prompt's own /tokenize count.
func contaminated(r ServingRecord) bool {
	t := r.Timings
	return t != nil && (t.CacheN > 0 || (r.PromptTokens > 0 && t.PromptN < r.PromptTokens))
}

// asked is the number of tokens the request asked for: its own n_predict when the workload
// gave it one, else the plan's.
func (r ServingRecord) asked(nPredict int) int {
	if r.NPredict > 0 {
		return r.NPredict
	}
	return nPredict
}
