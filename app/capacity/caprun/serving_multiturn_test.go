package caprun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/loadgen"
)

// conversationsOf groups a probe's measured records by conversation, turns in order.
func conversationsOf(recs []capacity.ServingRecord) map[int][]capacity.ServingRecord {
	m := map[int][]capacity.ServingRecord{}
	for _, r := range recs {
		m[r.Conversation] = append(m[r.Conversation], r)
	}
	for _, rs := range m {
		slices.SortFunc(rs, func(x, y capacity.ServingRecord) int { return x.Turn - y.Turn })
	}
	return m
}

// checkMultiTurnRun checks a multi_turn run's folder: each probe's first turns sent on the
// plan's schedule of conversation arrivals, every later turn due when the turn before it ended
// and sent after it, study.json re-assembled byte for byte.
func checkMultiTurnRun(t *testing.T, plan, out string, rep *capacity.RunReport) (capacity.ServingResult, map[int][]capacity.ServingRecord) {
	t.Helper()
	p := mustLoad(t, plan)
	if rep.Result == nil || len(rep.Result.Candidates[0].Serving) != 1 {
		t.Fatalf("result %+v", rep.Result)
	}
	sv := rep.Result.Candidates[0].Serving[0]
	recs := measuredRecords(t, out, capacity.LifetimeKey{Pass: capacity.PassForward, Candidate: p.Candidates[0].ID, Slots: p.Slots[0]})
	for probe, rs := range recs {
		var firsts []time.Duration
		for _, r := range rs {
			if r.Turn == 1 {
				firsts = append(firsts, time.Duration(*r.ScheduledMs*1e6))
			}
		}
		slices.Sort(firsts)
		t0 := firsts[0]
		for k := range firsts {
			firsts[k] = (firsts[k] - t0).Round(time.Microsecond)
		}
		if want := p.Serving.ProbeSchedule(sv.Probes[probe].OfferedRate); !slices.Equal(firsts, want) {
			t.Errorf("probe %d: first turns due at %v, the plan's schedule is %v", probe, firsts, want)
		}
		for c, turns := range conversationsOf(rs) {
			if len(turns) != turns[0].Turns {
				t.Errorf("probe %d conversation %d: %d records of %d turns", probe, c, len(turns), turns[0].Turns)
			}
			for k := 1; k < len(turns); k++ {
				if *turns[k].ScheduledMs != turns[k-1].EndMs || turns[k].SendMs < turns[k-1].EndMs {
					t.Errorf("probe %d conversation %d turn %d: due %.3f, sent %.3f; the turn before ended %.3f", probe, c, k+1, *turns[k].ScheduledMs, turns[k].SendMs, turns[k-1].EndMs)
				}
			}
		}
	}
	study1, err := os.ReadFile(filepath.Join(out, capacity.RunStudyFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, again, err := assembleRun(out, nil, capacity.Schedule(p, filepath.Dir(plan)), nil); err != nil || !bytes.Equal(study1, again) {
		t.Fatalf("re-assembly differs (err %v)", err)
	}
	return sv, recs
}

// TestMultiTurnOnTheFake: synthetic conversations (2 to 3 turns) through the runner on the
// stand-in server: 3 conversations a probe at 10 and 20 conversations/s, each turn's prompt
// the conversation so far (the fake's /tokenize, a token a word, grows turn by turn), the
// header's count recorded, nothing contaminated, the study re-assembled byte for byte.
func TestMultiTurnOnTheFake(t *testing.T) {
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	w := &capacity.Workload{Kind: capacity.WorkloadMultiTurn, Seed: 5, Turns: &capacity.LengthDist{Dist: capacity.DistUniform, Min: 2, Max: 3},
		InputWords: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 6}, OutputTokens: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 3}}
	plan := servingPlanFile(t, dir, "fake", model, []string{"-lv", "4"}, capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalPoisson, Seed: 2},
		Rates: []float64{10, 20}, Requests: 3, Warmups: 1, SLO: capacity.SLO{TTFTMs: 2000, TPOTMs: 500}, CachePrompt: true, Workload: w, TimingTolerance: 2}, 512)
	out := filepath.Join(dir, "run")
	rep, _, err := runPlan(t, plan, os.Args[0], out, []string{tag(t), fakeServerEnv + "=1", fakeWordTokensEnv + "=1"}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sv, recs := checkMultiTurnRun(t, plan, out, rep)
	for _, turns := range conversationsOf(append(recs[0], recs[1]...)) {
		for k, r := range turns {
			if r.LeadTokens != 3 || r.NPredict != 3 || r.Tokens != 3 {
				t.Errorf("conversation %d turn %d: lead %d, n_predict %d, tokens %d; want 3 (2 words + BOS), 3, 3", r.Conversation, r.Turn, r.LeadTokens, r.NPredict, r.Tokens)
			}
			// Each turn adds its user message (User: + 6 words) and the stand-in reply
			// (Assistant: + 3 words) to the one before.
			if k > 0 && r.PromptTokens != turns[k-1].PromptTokens+11 {
				t.Errorf("conversation %d turn %d: %d prompt tokens after %d", r.Conversation, r.Turn, r.PromptTokens, turns[k-1].PromptTokens)
			}
		}
	}
	for _, pr := range sv.Probes {
		c := pr.Conversations
		if c == nil || c.Conversations != 3 || c.FirstTurns != 3 || c.LaterTurns < 3 || pr.Contaminated != 0 || pr.Completed != pr.Requests {
			t.Errorf("probe %d: %+v, contaminated %d, completed %d of %d", pr.Probe, c, pr.Contaminated, pr.Completed, pr.Requests)
		}
		if pr.TimingDisagreements == nil || pr.TimingDisagreements.Compared != pr.Requests {
			t.Errorf("probe %d: timing comparisons %+v", pr.Probe, pr.TimingDisagreements)
		}
	}
}

// TestTimingDisagreementOnTheFake: the stand-in server streams a token every 8 ms but its
// timings claim 1 ms (predicted_ms); with timing_tolerance 2 every request is flagged and
// the probe fails client_server_timing_disagreement. The same load against an honest fake
// passes the check.
func TestTimingDisagreementOnTheFake(t *testing.T) {
	s := &capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{50}, Requests: 6,
		SLO: capacity.SLO{TTFTMs: 5000, TPOTMs: 1000}, ScheduleSlackMs: 1000, TimingTolerance: 2}
	run := func(report time.Duration) capacity.ProbeResult {
		f, err := loadgen.StartFake(loadgen.FakeConfig{TTFT: 2 * time.Millisecond, ITL: 8 * time.Millisecond, ReportITL: report})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		a := loadgen.Start(context.Background(), loadgen.Config{URL: f.URL, Clients: 1, Measured: s.Requests, NPredict: 6,
			Prompt: func(i int) string { return "timing " + string(rune('a'+i)) }, Schedule: s.ProbeSchedule(50)})
		var recs []capacity.ServingRecord
		for _, res := range drain(a) {
			recs = append(recs, servingRecord(0, 50, res))
		}
		return capacity.ProbeMetrics(s, 6, 0, capacity.ProbeSweep, 50, recs)
	}
	lying := run(time.Millisecond)
	td := lying.TimingDisagreements
	// Every request should be flagged; on a loaded machine the client may read a request's
	// tokens in one burst after a stall (its own time per token then falls near the claim), so
	// at least 4 of the 6 must be.
	if td == nil || td.Compared != 6 || td.Flagged < 4 || lying.Passed || !slices.Contains(lying.Failures, capacity.CodeTimingDisagreement) {
		t.Fatalf("server claiming 1 ms a token: %+v, failures %v", td, lying.Failures)
	}
	var detail string
	for _, c := range lying.Checks {
		if c.Failure == capacity.CodeTimingDisagreement {
			detail = c.Detail
		}
	}
	if !strings.Contains(detail, fmt.Sprintf("%d of 6 requests", td.Flagged)) {
		t.Errorf("detail %q", detail)
	}
	honest := run(0)
	if td := honest.TimingDisagreements; td == nil || td.Compared != 6 || td.Flagged != 0 || slices.Contains(honest.Failures, capacity.CodeTimingDisagreement) {
		t.Errorf("honest server: %+v, failures %v", td, honest.Failures)
	}
	t.Logf("worst relative difference, lying server: %+.2f", *td.Worst)
}

// turnArm is one arm of the multi-turn cache test: its records and probe.
type turnArm struct {
	recs               []capacity.ServingRecord
	probe              capacity.ProbeResult
	declaredOffVerdict capacity.ProbeResult
	firstTTFT, laterTTFT,
	firstPromptMs, laterPromptMs []float64
}

// TestMultiTurnCacheRealServer: synthetic conversations of 3 turns (20 words a user message, 4
// tokens a reply) on the real llama-server with the medium model (-t 1, one slot), one
// conversation every 2 s, with cache_prompt off and on. Off, every turn is cold (cache_n 0,
// prompt_n at least the /tokenize count) and nothing is contaminated. On, later turns take
// the conversation so far from the cache (cache_n above the header), first turns take no more
// than their header, and nothing is counted contaminated; the same records judged as a cell
// that declared caching off are contaminated and fail prompt_cache_contaminated. TTFT and
// prompt_ms of first and later turns are logged (not asserted: timings).
func TestMultiTurnCacheRealServer(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "medium-llama-f16.gguf")
	w := &capacity.Workload{Kind: capacity.WorkloadMultiTurn, Seed: 3, Turns: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 3},
		InputWords: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 20}, OutputTokens: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 4}}
	arms := map[bool]*turnArm{}
	for _, cache := range []bool{false, true} {
		dir := t.TempDir()
		s := capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{0.5}, Requests: 3,
			SLO: capacity.SLO{TTFTMs: 10000, TPOTMs: 2000}, ScheduleSlackMs: 1000, CachePrompt: cache, Workload: w, TimingTolerance: 1}
		plan := servingPlanFile(t, dir, "medium", model, []string{"-t", "1", "-lv", "4"}, s, 1024)
		out := filepath.Join(dir, "run")
		rep, _, err := runPlan(t, plan, loc.Server, out, []string{tag(t)}, nil)
		if err != nil {
			t.Fatalf("cache_prompt %v: run: %v", cache, err)
		}
		sv, recs := checkMultiTurnRun(t, plan, out, rep)
		a := &turnArm{recs: recs[0], probe: sv.Probes[0]}
		for _, r := range a.recs {
			if r.Timings == nil || r.FirstTokenMs == nil || r.PromptTokens < 50 || r.LeadTokens < 2 {
				t.Fatalf("cache_prompt %v: conversation %d turn %d: timings %+v, %d prompt tokens, lead %d", cache, r.Conversation, r.Turn, r.Timings, r.PromptTokens, r.LeadTokens)
			}
			ttft, pms := &a.laterTTFT, &a.laterPromptMs
			if r.Turn == 1 {
				ttft, pms = &a.firstTTFT, &a.firstPromptMs
			}
			*ttft, *pms = append(*ttft, *r.FirstTokenMs-*r.ScheduledMs), append(*pms, r.Timings.PromptMs)
		}
		off := s
		off.CachePrompt = false
		a.declaredOffVerdict = capacity.ProbeMetrics(&off, mustLoad(t, plan).NPredict, 0, capacity.ProbeSweep, 0.5, a.recs)
		arms[cache] = a
		c, td := a.probe.Conversations, a.probe.TimingDisagreements
		t.Logf("cache_prompt %v: %+v; contaminated %d; TTFT median first turns %.1f ms, later turns %.1f ms; prompt_ms median first %.1f, later %.1f; timing: %d of %d flagged (tolerance 1); failures %v",
			cache, *c, a.probe.Contaminated, median(a.firstTTFT), median(a.laterTTFT), median(a.firstPromptMs), median(a.laterPromptMs), td.Flagged, td.Compared, a.probe.Failures)
	}
	off, on := arms[false], arms[true]
	if c := off.probe.Conversations; c.WarmHits != 0 || c.CachedTokens != 0 || off.probe.Contaminated != 0 || off.probe.Completed != 9 {
		t.Errorf("cache off: %+v, %d contaminated, %d completed; want no cached token, 0, 9", c, off.probe.Contaminated, off.probe.Completed)
	}
	for _, r := range off.recs {
		if r.Timings.PromptN < r.PromptTokens {
			t.Errorf("cache off: conversation %d turn %d evaluated %d prompt tokens of its %d", r.Conversation, r.Turn, r.Timings.PromptN, r.PromptTokens)
		}
	}
	c := on.probe.Conversations
	if c.LaterTurns != 6 || c.WarmHits < 4 || 2*c.CachedTokens < c.PromptTokens || on.probe.Contaminated != 0 || on.probe.Completed != 9 {
		t.Errorf("cache on: %+v, %d contaminated, %d completed; want at least 4 of 6 later turns warm, at least half their prompt tokens cached, none contaminated, 9 completed", c, on.probe.Contaminated, on.probe.Completed)
	}
	for _, r := range on.recs {
		if r.Turn == 1 && r.Timings.CacheN > r.LeadTokens {
			t.Errorf("cache on: conversation %d's first turn took %d tokens from the cache, more than its header's %d", r.Conversation, r.Timings.CacheN, r.LeadTokens)
		}
	}
	if v := on.declaredOffVerdict; v.Contaminated < c.WarmHits || v.Passed || !slices.Contains(v.Failures, capacity.CodeContaminated) {
		t.Errorf("the cached records judged as declared off: %d contaminated (want at least %d), passed %v, failures %v", v.Contaminated, c.WarmHits, v.Passed, v.Failures)
	}
}
