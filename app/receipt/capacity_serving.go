package receipt

import (
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/capacity"
)

// servingBundleInputs adds a serving plan's open-loop records and harness floor to the
// assembly's inputs (none for a closed-loop bundle).
func servingBundleInputs(files Files, ci *CapacityIndex, in *capacity.Inputs) error {
	if len(ci.Serving) > 0 {
		in.Serving = map[capacity.LifetimeKey]capacity.InputFile{}
	}
	for ks, name := range ci.Serving {
		k, err := capacity.ParseLifetimeKey(ks)
		if err != nil {
			return fmt.Errorf("%s: %s %v", FileIndex, capacity.FlagServing, err)
		}
		b, err := need(files, name)
		if err != nil {
			return fmt.Errorf("%s %s: %w", capacity.FlagServing, ks, err)
		}
		in.Serving[k] = capacity.InputFile{Name: name, Data: b}
	}
	if ci.Harness != "" {
		b, err := need(files, ci.Harness)
		if err != nil {
			return fmt.Errorf("%s: %w", capacity.FlagHarness, err)
		}
		in.Harness = &capacity.InputFile{Name: ci.Harness, Data: b}
	}
	return nil
}

// servingReproduce adds the serving files to the reproduce command.
func servingReproduce(w *mdWriter, ci *CapacityIndex) {
	keys := make([]string, 0, len(ci.Serving))
	for k := range ci.Serving {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.line("  --serving %s=%s \\", k, ci.Serving[k])
	}
	if ci.Harness != "" {
		w.line("  --harness %s \\", ci.Harness)
	}
}

// capServing writes the harness floor and, per server lifetime, the open-loop probes: offered
// against achieved rate, goodput beside throughput, latency percentiles from the scheduled
// send, the send delay, the gates, and the max-rate search's outcome.
func capServing(w *mdWriter, r *capacity.Result) {
	s := r.Plan.Serving
	if s == nil {
		return
	}
	w.heading(2, "Serving: open-loop arrivals")
	proc := s.Arrival.Describe(num)
	each := fmt.Sprintf("each probe is %d measured requests", s.Requests)
	if sustainRules(r) { // the sustain rules' probes send at least their window
		each = fmt.Sprintf("each probe is max(%d, %d, ⌈rate × %s s⌉ + 1) measured requests", s.Requests, s.SustainMinRequests(), num(s.SustainMinSeconds()))
	}
	w.line("**Open loop, not the closed loop of the tables above.** Requests arrive on a %s schedule at each offered rate whether or not earlier ones finished (at most %d in flight); %s after %d closed-loop warmups. TTFT and E2E run from each request's **scheduled** send time (coordinated-omission-correct); the send delay is actual − scheduled. The closed-loop cells above answer which slots × clients point to pick; these rows answer how much traffic the server takes and at what latency.",
		proc, s.MaxInFlight, each, s.Warmups)
	w.blank()
	slo := fmt.Sprintf("TTFT ≤ %s ms, TPOT ≤ %s ms", num(s.SLO.TTFTMs), num(s.SLO.TPOTMs))
	if s.SLO.E2EMs > 0 {
		slo += fmt.Sprintf(", E2E ≤ %s ms", num(s.SLO.E2EMs))
	}
	if s.SLO.Preset != "" {
		slo += " (preset " + code(s.SLO.Preset)
		if pr, ok := capacity.FindSLOPreset(s.SLO.Preset); ok {
			slo += ": " + pr.Source + ", " + pr.URL
		}
		slo += ")"
	}
	keep := ""
	if sustainRules(r) {
		keep = ", and its completions keep up with its arrivals (*Sustained rates*, below)"
	}
	w.line("**SLO:** %s per request (goodput counts the requests meeting all of them); a probe passes when its p%d of each meets it, at least %s complete, its p99 send delay is ≤ %s ms and no more than %s of its cold requests were answered from the prompt cache%s.",
		slo, s.SLO.Percentile, pct(s.SLO.CompletionRateMin), num(s.ScheduleSlackMs), pct(s.ContaminationMax), keep)
	w.blank()
	if wl := s.Workload; wl != nil {
		cache := "prompt cache off: every request should be cold, and one with cache_n > 0 or prompt_n below its /tokenize count is contaminated"
		if s.CachePrompt {
			cache = "prompt cache on (cache_prompt: an explicit arm): requests may reuse cached prefixes"
		}
		w.line("**Workload:** %s. Each request's prompt tokens are llama-server's own /tokenize count (prompt_tokens in serving.jsonl); %s.", inline(wl.Describe()), cache)
		w.blank()
	}
	capHarnessFloor(w, r.HarnessFloor)
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			capServingLifetime(w, c.ID, sv, s.SLO.Percentile, servingUnits(s))
		}
	}
}

// capHarnessFloor writes the harness floor: the client's own overhead.
func capHarnessFloor(w *mdWriter, h *capacity.HarnessFloor) {
	w.heading(3, "Harness floor")
	if h == nil {
		w.line("No harness floor was measured for this run.")
		w.blank()
		return
	}
	w.line("A null run against the %s, closed-loop at %d clients, %d requests of %d tokens, before the study: the client's own overhead, with no server time in it. A probe whose median TTFT or TPOT is within %d× the floor's p99 is marked client-bound (⚠).",
		inline(h.Server), h.Clients, h.Requests, h.NPredict, capacity.ClientBoundFactor)
	w.blank()
	w.table([]string{"TTFT p50 (ms)", "TTFT p99 (ms)", "ITL p50 (ms)", "ITL p99 (ms)", "CPU per token (µs)", "Tokens", "Wall (ms)"}, "rrrrrrr",
		[][]string{{f3(h.TTFTMsP50), f3(h.TTFTMsP99), f3(h.ITLMsP50), f3(h.ITLMsP99), f2(h.CPUUsPerToken), fmt.Sprint(h.Tokens), f1(h.WallMs)}})
	w.blank()
}

// rateUnits are the units of a serving table's rates: the schedule's (offered, scheduled,
// achieved, max rate) and the requests' (throughput, goodput).
type rateUnits struct{ schedule, requests string }

// servingUnits: a multi-turn workload schedules conversations (its later turns follow their
// turn before), so its schedule's rates are conversations per second and its throughput and
// goodput turns per second; every other workload's are requests per second.
func servingUnits(s *capacity.Serving) rateUnits {
	if s.Workload != nil && s.Workload.Kind == capacity.WorkloadMultiTurn {
		return rateUnits{"conversations/s", "turns/s"}
	}
	return rateUnits{"req/s", "req/s"}
}

func capServingLifetime(w *mdWriter, cand string, sv capacity.ServingResult, p int, u rateUnits) {
	w.heading(3, fmt.Sprintf("%s · P%d · %s pass", cand, sv.Slots, sv.Pass))
	var rows [][]string
	for _, pr := range sv.Probes {
		ttft, tpot, e2e := pr.TTFTMs.P95, pr.TPOTMs.P95, pr.E2EMs.P95
		if p == 99 {
			ttft, tpot, e2e = pr.TTFTMs.P99, pr.TPOTMs.P99, pr.E2EMs.P99
		}
		verdict := "PASS"
		if !pr.Passed {
			verdict = "FAIL " + strings.Join(pr.Failures, ", ")
		}
		if pr.ClientBound {
			verdict += " ⚠ client-bound"
		}
		rows = append(rows, []string{fmt.Sprint(pr.Probe), pr.Kind, num(pr.OfferedRate), fp(pr.ScheduledRate, num), fp(pr.AchievedRate, num), fp(pr.Throughput, num), fp(pr.Goodput, num),
			fmt.Sprintf("%d/%d", pr.Completed, pr.Requests), fp(pr.TTFTMs.P50, f1), fp(ttft, f1), fp(tpot, f2), fp(e2e, f1), fp(pr.SendDelayMs.P99, f3),
			code(pr.ScheduleSHA256[:12]), verdict})
	}
	pp := fmt.Sprintf("p%d", p)
	w.table([]string{"#", "Probe", "Offered (" + u.schedule + ")", "Scheduled (" + u.schedule + ")", "Achieved (" + u.schedule + ")",
		"Throughput (" + u.requests + ")", "Goodput (" + u.requests + ")", "Completed", "TTFT p50 (ms)",
		"TTFT " + pp + " (ms)", "TPOT " + pp + " (ms)", "E2E " + pp + " (ms)", "Send delay p99 (ms)", "Schedule", "Verdict"}, "rlrrrrrrrrrrrll", rows)
	w.blank()
	if sv.MaxSweepRate != nil {
		w.line("Largest sweep rate meeting every SLO: %s %s.", num(*sv.MaxSweepRate), u.schedule)
	} else if len(sv.Probes) > 0 && (sv.Search == nil || len(sv.Search.Probes) < len(sv.Probes)) {
		w.line("No sweep rate met every SLO.")
	}
	if q := sv.Search; q != nil {
		status := "converged"
		if !q.Converged {
			status = "not converged"
		}
		w.line("**Max-rate search:** %s %s (lowest failing rate %s; %s: %s; probes %s).", fp(q.MaxRate, num), u.schedule, fp(q.LowestFail, num), status, inline(q.Note), probeList(q.Probes))
	}
	capSustained(w, sv, u)
	w.blank()
}

// capSustained writes the sustain rule's figures and the knee of a lifetime judged by it
// (serving-requests/v2; nothing for a v1 file, whose receipt keeps its bytes): per probe,
// completions per second against the schedule's arrivals and the in-flight growth.
func capSustained(w *mdWriter, sv capacity.ServingResult, u rateUnits) {
	st := sv.Saturation
	if st == nil {
		return
	}
	w.blank()
	w.line("**Sustained rates:** a probe passes only when, over its window (at least %d requests and %s s of arrivals; a probe at a higher rate sends more), its completions per second (first to last completion) are at least %s of the schedule's own rate and the requests in flight do not grow (last third of the window against the middle third, at most max(%s, %s × arrivals)); otherwise it fails `%s`, and the sweep stops climbing.",
		st.MinRequests, num(st.MinSeconds), pct(capacity.SustainRatioMin), num(capacity.SustainGrowthFloor), num(capacity.SustainGrowthShare), capacity.CodeNotSustained)
	w.blank()
	var rows [][]string
	for _, pr := range sv.Probes {
		sc := pr.Sustain
		if sc == nil {
			continue
		}
		verdict := "sustained"
		if !sc.Sustained {
			verdict = "NOT SUSTAINED"
		}
		rows = append(rows, []string{fmt.Sprint(pr.Probe), num(pr.OfferedRate), fmt.Sprint(sc.Arrivals), f2(sc.WindowS), fp(sc.OfferedRate, num), fp(sc.DepartureRate, num),
			fp(sc.Ratio, pct), f1(sc.InFlightMiddle), f1(sc.InFlightLast), f1(sc.GrowthLimit), verdict})
	}
	w.table([]string{"#", "Offered (" + u.schedule + ")", "Arrivals", "Window (s)", "Arrivals/s", "Completions/s", "Completions / arrivals",
		"In flight, middle third", "In flight, last third", "Growth limit", "Sustain"}, "rrrrrrrrrrl", rows)
	w.blank()
	line := "**Knee:** " + inline(st.Note)
	if st.SaturatedRate != nil {
		line += fmt.Sprintf("; saturated, the server completed %s %s", num(*st.SaturatedRate), u.schedule)
	}
	if len(st.SkippedSweepRates) > 0 {
		rs := make([]string, len(st.SkippedSweepRates))
		for i, r := range st.SkippedSweepRates {
			rs[i] = num(r)
		}
		line += fmt.Sprintf("; sweep rates not probed (past saturation): %s %s", strings.Join(rs, ", "), u.schedule)
	}
	w.line("%s.", line)
}

func probeList(ps []int) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// capBoundary is the receipt's boundary: a serving plan's open-loop probes are bounded too.
func capBoundary(r *capacity.Result) string {
	what := "a bounded fixed-concurrency study on one machine. It is not an open-loop production-capacity benchmark"
	if r.Plan.Serving != nil {
		what = "a bounded fixed-concurrency study on one machine with bounded open-loop probes (a few requests per offered rate). It is not a production-capacity benchmark"
	}
	return "This is " + what + ", a cost or energy claim, or a model-quality evaluation beyond its guard. Backend log markers establish only that llama.cpp logged them; they are not kernel-level proof."
}

// sustainRules says the study's serving files were judged by the sustain rule (v2): a bundle
// of v1 files keeps the receipt it was made with.
func sustainRules(r *capacity.Result) bool {
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			if sv.Saturation != nil {
				return true
			}
		}
	}
	return false
}
