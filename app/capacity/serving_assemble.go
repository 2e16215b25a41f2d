package capacity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/study"
)

// Input roles of a serving plan.
const (
	FlagServing = "--serving"
	FlagHarness = "--harness"
)

// SchemaHarnessFloor identifies the harness floor record (docs/serving.md).
const SchemaHarnessFloor = "sparkbench.harness-floor/v1"

// HarnessFloor is the client's own overhead, measured before the study by a null run against
// the built-in fake server (which answers at once) at the study's highest concurrency and
// payload: no server time is in these figures, only the client's.
type HarnessFloor struct {
	Schema        string  `json:"schema"`
	Server        string  `json:"server"`
	Clients       int     `json:"clients"`
	Requests      int     `json:"requests"`
	NPredict      int     `json:"n_predict"`
	Tokens        int     `json:"tokens"`
	TTFTMsP50     float64 `json:"ttft_ms_p50"`
	TTFTMsP99     float64 `json:"ttft_ms_p99"`
	ITLMsP50      float64 `json:"itl_ms_p50"`
	ITLMsP99      float64 `json:"itl_ms_p99"`
	CPUUsPerToken float64 `json:"cpu_us_per_token"`
	WallMs        float64 `json:"wall_ms"`
}

// ReadHarnessFloor reads a harness floor record strictly.
func ReadHarnessFloor(name string, data []byte) (*HarnessFloor, error) {
	var h HarnessFloor
	if err := study.DecodeFileStrict(name, data, &h, "a harness floor file holds one JSON object", "docs/serving.md"); err != nil {
		return nil, err
	}
	fin := func(xs ...float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return false
			}
		}
		return true
	}
	switch {
	case h.Schema != SchemaHarnessFloor:
		return nil, fmt.Errorf("%s: schema %q: want %q", name, h.Schema, SchemaHarnessFloor)
	case h.Clients < 1 || h.Requests < 1 || h.NPredict < 1 || h.Tokens < 0:
		return nil, fmt.Errorf("%s: clients %d, requests %d, n_predict %d, tokens %d: want positive counts", name, h.Clients, h.Requests, h.NPredict, h.Tokens)
	case !fin(h.TTFTMsP50, h.TTFTMsP99, h.ITLMsP50, h.ITLMsP99, h.CPUUsPerToken, h.WallMs):
		return nil, fmt.Errorf("%s: times must be non-negative numbers", name)
	}
	return &h, nil
}

// ServingResult is the open-loop measurement of one server lifetime (pass, P).
type ServingResult struct {
	Pass   string        `json:"pass"`
	Slots  int           `json:"slots"`
	Probes []ProbeResult `json:"probes"`
	// MaxSweepRate is the largest sweep rate meeting every SLO (null: none, or no sweep).
	MaxSweepRate *float64      `json:"max_sweep_rate_meeting_slo"`
	Search       *SearchResult `json:"search,omitempty"`
	// Saturation is the knee the sustain rule found (serving files of version 2; omitted for
	// a version 1 file, judged before the rule).
	Saturation *Saturation `json:"saturation,omitempty"`
}

// SearchResult is the max-rate search's outcome: the largest offered rate that met every SLO
// below the lowest that failed, and whether the bracket closed to the tolerance.
type SearchResult struct {
	MaxRate    *float64 `json:"max_rate"`
	LowestFail *float64 `json:"lowest_failing_rate"`
	Converged  bool     `json:"converged"`
	Note       string   `json:"note"`
	Probes     []int    `json:"probes"` // the search's own probes, by number
}

// readServing reads the serving files (required for every lifetime of a serving plan, refused
// otherwise) and the harness floor.
func (a *assembler) readServing() error {
	given := slices.SortedFunc(maps.Keys(a.in.Serving), func(x, y LifetimeKey) int { return strings.Compare(x.String(), y.String()) })
	if a.p.Serving == nil {
		if len(given) > 0 {
			return inputErr(FlagServing, given[0].String(), "the plan has no serving block; remove --serving")
		}
		if a.in.Harness != nil {
			return inputErr(FlagHarness, "", "the plan has no serving block; remove --harness")
		}
		return nil
	}
	for _, k := range given {
		if !a.inPlan(k) {
			return inputErr(FlagServing, k.String(), "not a server lifetime of this plan; remove it or fix the key")
		}
	}
	a.serving = map[LifetimeKey]*ServingResult{}
	for _, k := range a.keys() {
		f, ok := a.in.Serving[k]
		if !ok {
			return inputErr(FlagServing, k.String(), "missing: a serving plan needs one serving file per server lifetime; add %s %s=FILE", FlagServing, k)
		}
		sr, err := a.servingLifetime(k, f)
		if err != nil {
			return err
		}
		a.serving[k] = sr
		a.refs = append(a.refs, InputRef{Role: "serving", Key: k.String(), SHA256: canon.SHA256Hex(f.Data), Bytes: len(f.Data)})
	}
	if h := a.in.Harness; h != nil {
		floor, err := ReadHarnessFloor(h.Name, h.Data)
		if err != nil {
			return &InputError{Flag: FlagHarness, Err: err}
		}
		a.harness = floor
		a.refs = append(a.refs, InputRef{Role: "harness", Key: "harness", SHA256: canon.SHA256Hex(h.Data), Bytes: len(h.Data)})
		for _, sr := range a.serving {
			for i := range sr.Probes {
				sr.Probes[i].ClientBound = clientBound(sr.Probes[i], floor)
			}
		}
	}
	return nil
}

func clientBound(pr ProbeResult, h *HarnessFloor) bool {
	near := func(q *float64, floor float64) bool { return q != nil && floor > 0 && *q <= ClientBoundFactor*floor }
	return near(pr.TTFTMs.P50, h.TTFTMsP99) || near(pr.TPOTMs.P50, h.ITLMsP99)
}

// servingLifetime re-runs the sweep and the search on one lifetime's records: every probe must
// be the rate the plan (and the search, from the probes before it) asks for, with the plan's
// counts of warmup and measured requests.
func (a *assembler) servingLifetime(k LifetimeKey, f InputFile) (*ServingResult, error) {
	s := a.p.Serving
	key := k.String()
	file, err := ReadServing(f.Name, f.Data)
	if err != nil {
		return nil, &InputError{Flag: FlagServing, Key: key, Err: err}
	}
	if hk := file.Header.Key(); hk != k {
		return nil, inputErr(FlagServing, key, "%s: the header names server lifetime %s; pass it as %s=%s", f.Name, hk, hk, f.Name)
	}
	if h := file.Header.PlanSHA256; h != "" && h != a.sha {
		return nil, inputErr(FlagServing, key, "%s: recorded for plan %s, not this plan (%s)", f.Name, h, a.sha)
	}
	byProbe := map[int][]ServingRecord{}
	warm := map[int]int{}
	for _, r := range file.Records {
		if r.Phase == PhaseWarmup {
			warm[r.Probe]++
			continue
		}
		byProbe[r.Probe] = append(byProbe[r.Probe], r)
	}
	rules := file.Rules()
	sr := &ServingResult{Pass: k.Pass, Slots: k.Slots, Probes: []ProbeResult{}}
	var points []ProbePoint
	for probe := 0; ; probe++ {
		rate, kind, done, st := s.NextProbe(points)
		if done {
			if s.Search != nil {
				sr.Search = searchResult(st, sr.Probes)
			}
			break
		}
		recs := byProbe[probe]
		delete(byProbe, probe)
		want := s.probeRequests(rules, rate)
		if n, msg := s.measuredCount(recs, want); n != want || warm[probe] != s.Warmups {
			if msg != "" {
				return nil, inputErr(FlagServing, key, "%s: probe %d (%s conversations/s): %s: the run is incomplete; re-run this server lifetime", f.Name, probe, ms(rate), msg)
			}
			return nil, inputErr(FlagServing, key, "%s: probe %d (%s req/s) has %d warmup and %d measured requests, the plan says %d and %d: the run is incomplete; re-run this server lifetime",
				f.Name, probe, ms(rate), warm[probe], len(recs), s.Warmups, want)
		}
		for _, r := range recs {
			if r.Rate != rate {
				return nil, inputErr(FlagServing, key, "%s:%d: probe %d offered %s req/s, but the plan's %s asks for %s req/s here", f.Name, r.Line, probe, ms(r.Rate), kind, ms(rate))
			}
		}
		pr := probeMetrics(s, rules, a.p.NPredict, probe, kind, rate, recs)
		sr.Probes = append(sr.Probes, pr)
		points = append(points, pr.Point())
		if kind == ProbeSweep && pr.Passed && (sr.MaxSweepRate == nil || rate > *sr.MaxSweepRate) {
			sr.MaxSweepRate = fptr(rate)
		}
	}
	if rules >= ServingRulesSustain {
		sr.Saturation = saturationOf(s, sr.Probes)
	}
	if len(byProbe) > 0 {
		extra := slices.Sorted(maps.Keys(byProbe))
		return nil, inputErr(FlagServing, key, "%s:%d: probe %d was not asked for by the plan (the sweep and search end after %d probes)", f.Name, byProbe[extra[0]][0].Line, extra[0], len(sr.Probes))
	}
	return sr, nil
}

func searchResult(st SearchState, probes []ProbeResult) *SearchResult {
	r := &SearchResult{Converged: st.Converged, Note: st.Note, Probes: []int{}}
	if st.MaxRate > 0 {
		r.MaxRate = fptr(st.MaxRate)
	}
	if !math.IsInf(st.LowestFail, 1) {
		r.LowestFail = fptr(st.LowestFail)
	}
	for _, p := range probes {
		if p.Kind == ProbeSearch {
			r.Probes = append(r.Probes, p.Probe)
		}
	}
	return r
}

// servingOf lists a candidate's serving results, passes in fixed order, P ascending.
func (a *assembler) servingOf(c Candidate) []ServingResult {
	if a.serving == nil {
		return nil
	}
	var out []ServingResult
	for _, ps := range a.passes() {
		for _, s := range a.p.Slots {
			out = append(out, *a.serving[LifetimeKey{ps, c.ID, s}])
		}
	}
	return out
}

// servingDefinitions are added to a serving plan's result.
var servingDefinitions = map[string]string{
	"serving_open_loop":     "open loop: requests are due at the arrival process's send times whether or not earlier ones ended (closed loop: C clients, each sending when its last request ended)",
	"serving_latency":       "TTFT and E2E of an open-loop request are measured from its scheduled send time (coordinated-omission-correct); send delay = actual - scheduled send",
	"serving_tpot":          "(end event - first token) / (tokens - 1) per completed request",
	"serving_goodput":       "completed requests meeting the per-request SLO (TTFT, TPOT and E2E at most the limits) per second of the probe's window (first scheduled send to last end); DistServe's definition",
	"serving_achieved":      "(sends - 1) / (last send - first send): the rate the client actually offered",
	"serving_search":        "bracket (double the best passing rate up to hi), then bisect between the best pass and the lowest failure until (fail - pass) / pass <= tolerance; every probe is recorded",
	"serving_client_bound":  "a probe whose TTFT or TPOT p50 is within 3x the harness floor's p99 (a null run against the built-in fake server)",
	"serving_contamination": "a cold request (cache_prompt off) with timings.cache_n > 0 was answered from the prompt cache: excluded from the figures and counted against contamination_max",
}

// servingSustainedDefinition is added when a lifetime was judged by the sustain rules.
const servingSustainedDefinition = "a probe (sustain rules: serving-requests/v2) passes only when, over its window of at least min_requests requests and min_seconds of arrivals, completions per second (first to last completion) are at least 0.95 of the schedule's own rate and the time-averaged in-flight count over the window's last third exceeds the middle third's by at most max(3, 0.1 x arrivals); else rate:not_sustained. The sweep stops climbing at its first unsustained rate; the knee is the highest sustained rate below the lowest unsustained one"
