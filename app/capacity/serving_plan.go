package capacity

import (
	"fmt"
	"math"
)

// Arrival processes of an open-loop serving probe (docs/serving.md).
const (
	ArrivalConstant = "constant" // one request every 1/rate seconds
	ArrivalPoisson  = "poisson"  // exponential gaps of mean 1/rate (seeded)
	ArrivalGamma    = "gamma"    // gamma gaps of mean 1/rate, shape = burstiness (seeded; 1 is Poisson, below 1 burstier)
	ArrivalRamp     = "ramp"     // the rate climbs linearly from ramp_from to the probe's rate over its requests
)

// Serving defaults (docs/serving.md).
const (
	DefaultMaxInFlight       = 256
	DefaultScheduleSlackMs   = 10
	DefaultSLOPercentile     = 95
	DefaultServingCompletion = 1.0
)

// Serving is a plan's open-loop serving measurement: after the closed-loop client levels of
// each server lifetime, requests arrive at offered rates (a sweep, then optionally a search for
// the largest rate meeting every SLO), each rate a probe of Requests measured requests on a
// seeded schedule. Written only when given: a plan without it is the closed-loop study it was.
type Serving struct {
	Arrival Arrival `json:"arrival"`
	// Rates is the sweep: offered request rates (req/s), strictly increasing.
	Rates []float64 `json:"rates,omitempty"`
	// Search, when given, probes for the largest rate meeting every SLO after the sweep.
	Search *RateSearch `json:"search,omitempty"`
	// Requests is the number of measured requests of every probe.
	Requests int `json:"requests"`
	// Warmups are sent closed-loop by one client before each probe, and discarded.
	Warmups int `json:"warmups"`
	SLO     SLO `json:"slo"`
	// MaxInFlight bounds the client's open requests (default 256): a request due while the
	// bound is reached waits, and its send delay records it.
	MaxInFlight int `json:"max_in_flight"`
	// ScheduleSlackMs is the largest p99 send delay (actual - scheduled send) a probe may show
	// before it is flagged client_behind_schedule (default 10 ms).
	ScheduleSlackMs float64 `json:"schedule_slack_ms"`
	// CachePrompt lets llama-server reuse cached prompt prefixes (an explicit arm); off, every
	// request should be cold, and one the server answers from its cache is contaminated.
	CachePrompt bool `json:"cache_prompt,omitempty"`
	// ContaminationMax is the fraction of a probe's requests that may be contaminated (excluded
	// from its figures) before the probe fails with prompt_cache_contaminated (default 0).
	ContaminationMax float64 `json:"contamination_max"`
	// Workload, when given, is the probes' prompts and output lengths (synthetic lengths, a
	// shared-prefix workload, a JSONL prompt set or multi-turn conversations); omitted, the
	// prompt plan's prompts.
	Workload *Workload `json:"workload,omitempty"`
	// TimingTolerance, when set, flags a request whose client-measured time per generated
	// token differs from the server's own (timings.predicted_ms) by more than this fraction
	// (plus 0.5 ms), and fails the probe client_server_timing_disagreement (docs/serving.md).
	TimingTolerance float64 `json:"timing_tolerance,omitempty"`
	// Sustain, when given, is the least a probe's measured window holds (min_requests,
	// min_seconds); left out, the defaults (docs/serving.md, "Sustained rates"). Written only
	// when given: other plans keep their SHA-256.
	Sustain *SustainWindow `json:"sustain,omitempty"`
}

// Arrival is the arrival process shared by every probe; only the rate differs between them.
type Arrival struct {
	Process string `json:"process"` // constant, poisson, gamma, ramp
	// Seed makes the poisson and gamma schedules reproducible: the same seed, rate and count
	// give the same send times, byte for byte.
	Seed int64 `json:"seed"`
	// Burstiness is the gamma shape (gamma only): 1 is Poisson, below 1 burstier.
	Burstiness float64 `json:"burstiness,omitempty"`
	// RampFrom is the starting rate of a ramp (req/s, below every probe's rate).
	RampFrom float64 `json:"ramp_from,omitempty"`
}

// Describe is the arrival process in words, its numbers written by num: "poisson (seed 3)",
// "gamma (burstiness 0.5, seed 1)", "ramp (from 2 req/s)", "constant". The receipt and the
// window say it this way.
func (a Arrival) Describe(num func(float64) string) string {
	switch a.Process {
	case ArrivalGamma:
		return fmt.Sprintf("%s (burstiness %s, seed %d)", a.Process, num(a.Burstiness), a.Seed)
	case ArrivalPoisson:
		return fmt.Sprintf("%s (seed %d)", a.Process, a.Seed)
	case ArrivalRamp:
		return fmt.Sprintf("%s (from %s req/s)", a.Process, num(a.RampFrom))
	}
	return a.Process
}

// RateSearch brackets, then bisects, the largest offered rate meeting every SLO: the first
// probe is Lo (or the sweep's measured points), the bracket doubles the best passing rate up
// to Hi, then bisection halves the gap between the best pass and the lowest failure until it
// is within Tolerance of the pass (relative) or MaxProbes probes were made.
type RateSearch struct {
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Tolerance float64 `json:"tolerance"`
	MaxProbes int     `json:"max_probes"`
}

// SLO is what a request must meet to count in goodput (TTFT, TPOT and, when set, E2E at most
// these), and what a probe's percentile of each must meet for the probe to pass.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
	E2EMs  float64 `json:"e2e_ms,omitempty"`
	// Percentile is 95 or 99: the probe's percentile judged against the SLO (default 95).
	Percentile int `json:"percentile"`
	// CompletionRateMin is the fraction of a probe's requests that must complete (default 1).
	CompletionRateMin float64 `json:"completion_rate_min"`
	// Preset names the public source the figures come from, when they do (informative).
	Preset string `json:"preset,omitempty"`
}

// servingGiven says which defaulted serving fields the plan wrote (a written 0 is judged,
// never replaced).
type servingGiven struct {
	maxInFlight, slack, percentile, completion bool
}

func (s *Serving) defaults(g servingGiven) {
	if s.MaxInFlight == 0 && !g.maxInFlight {
		s.MaxInFlight = DefaultMaxInFlight
	}
	if s.ScheduleSlackMs == 0 && !g.slack {
		s.ScheduleSlackMs = DefaultScheduleSlackMs
	}
	if s.SLO.Percentile == 0 && !g.percentile {
		s.SLO.Percentile = DefaultSLOPercentile
	}
	if s.SLO.CompletionRateMin == 0 && !g.completion {
		s.SLO.CompletionRateMin = DefaultServingCompletion
	}
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// checkServing validates the serving block.
func (v *validator) checkServing() {
	s := v.p.Serving
	if s == nil {
		return
	}
	a := s.Arrival
	switch a.Process {
	case ArrivalConstant, ArrivalPoisson, ArrivalGamma, ArrivalRamp:
	default:
		v.errf("serving.arrival.process", "%q: want constant, poisson, gamma or ramp", a.Process)
	}
	if a.Seed < 0 {
		v.errf("serving.arrival.seed", "%d: want a non-negative seed", a.Seed)
	}
	if a.Process == ArrivalGamma {
		if !(a.Burstiness > 0 && a.Burstiness <= 100) {
			v.errf("serving.arrival.burstiness", "%g: want the gamma shape in (0, 100] (1 is Poisson, below 1 burstier)", a.Burstiness)
		}
	} else if a.Burstiness != 0 {
		v.errf("serving.arrival.burstiness", "only for the gamma process; remove it or set process to gamma")
	}
	lowest := math.Inf(1)
	if a.Process == ArrivalRamp && !positive(a.RampFrom) {
		v.errf("serving.arrival.ramp_from", "%g: a ramp needs its starting rate (req/s > 0)", a.RampFrom)
	} else if a.Process != ArrivalRamp && a.RampFrom != 0 {
		v.errf("serving.arrival.ramp_from", "only for the ramp process; remove it or set process to ramp")
	}
	if len(s.Rates) == 0 && s.Search == nil {
		v.errf("serving", "neither rates nor search: give a sweep of offered rates, a max-rate search, or both")
	}
	for i, r := range s.Rates {
		if !positive(r) || r > 100000 {
			v.errf(fmt.Sprintf("serving.rates[%d]", i), "%g: want an offered rate in (0, 100000] req/s", r)
		} else if i > 0 && r <= s.Rates[i-1] {
			v.errf(fmt.Sprintf("serving.rates[%d]", i), "%g: rates must be strictly increasing", r)
		}
		lowest = min(lowest, r)
	}
	if q := s.Search; q != nil {
		switch {
		case !positive(q.Lo) || !positive(q.Hi) || q.Hi <= q.Lo || q.Hi > 100000:
			v.errf("serving.search", "lo %g, hi %g: want 0 < lo < hi <= 100000 req/s", q.Lo, q.Hi)
		case !(q.Tolerance > 0 && q.Tolerance < 1):
			v.errf("serving.search.tolerance", "%g: want a relative tolerance in (0, 1), e.g. 0.1 for 10%%", q.Tolerance)
		case q.MaxProbes < 2 || q.MaxProbes > 64:
			v.errf("serving.search.max_probes", "%d: want 2 to 64 probes", q.MaxProbes)
		}
		lowest = min(lowest, q.Lo)
	}
	if a.Process == ArrivalRamp && positive(a.RampFrom) && a.RampFrom >= lowest {
		v.errf("serving.arrival.ramp_from", "%g: a ramp starts below every probe's rate (the lowest is %g)", a.RampFrom, lowest)
	}
	if s.Requests < 2 || s.Requests > 100000 {
		v.errf("serving.requests", "%d: want 2 to 100000 measured requests per probe", s.Requests)
	}
	if s.Warmups < 0 || s.Warmups > 1000 {
		v.errf("serving.warmups", "%d: want 0 to 1000", s.Warmups)
	}
	v.checkSLO(s)
	v.checkSustain(s)
	v.checkWorkload(s.Workload)
	if !(s.TimingTolerance >= 0 && s.TimingTolerance <= 10) {
		v.errf("serving.timing_tolerance", "%g: want a fraction in (0, 10], e.g. 0.5 for 50%%; or leave it out", s.TimingTolerance)
	}
}

func (v *validator) checkSLO(s *Serving) {
	slo := s.SLO
	if !positive(slo.TTFTMs) || !positive(slo.TPOTMs) || slo.E2EMs < 0 || math.IsInf(slo.E2EMs, 0) {
		v.errf("serving.slo", "ttft_ms %g, tpot_ms %g, e2e_ms %g: want TTFT and TPOT limits > 0 ms (e2e_ms optional, > 0)", slo.TTFTMs, slo.TPOTMs, slo.E2EMs)
	}
	if slo.Percentile != 95 && slo.Percentile != 99 {
		v.errf("serving.slo.percentile", "%d: want 95 or 99", slo.Percentile)
	}
	if !(slo.CompletionRateMin > 0 && slo.CompletionRateMin <= 1) {
		v.errf("serving.slo.completion_rate_min", "%g: want a fraction in (0, 1]", slo.CompletionRateMin)
	}
	if s.MaxInFlight < 1 || s.MaxInFlight > 4096 {
		v.errf("serving.max_in_flight", "%d: want 1 to 4096 requests in flight", s.MaxInFlight)
	}
	if !positive(s.ScheduleSlackMs) {
		v.errf("serving.schedule_slack_ms", "%g: want a send delay in ms > 0", s.ScheduleSlackMs)
	}
	if !(s.ContaminationMax >= 0 && s.ContaminationMax < 1) {
		v.errf("serving.contamination_max", "%g: want a fraction in [0, 1)", s.ContaminationMax)
	}
	if slo.Preset != "" {
		if msg := slo.presetProblem(); msg != "" {
			v.errf("serving.slo.preset", "%s", msg)
		}
	}
}
