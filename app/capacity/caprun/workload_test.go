package caprun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
)

// servingPlanFile writes a one-candidate, one-slot, forward-only plan with serving block s and
// a slot context of ctx tokens into dir.
func servingPlanFile(t *testing.T, dir, id, model string, flags []string, s capacity.Serving, ctx int) string {
	t.Helper()
	plan := writeRunPlan(t, dir, []runCand{{id, model, flags, capacity.Markers{}}}, []int{1}, []int{1}, 0, 2, 8)
	addServing(t, plan, s)
	p := mustLoad(t, plan)
	p.Passes, p.CtxPerSlot = []string{capacity.PassForward}, ctx
	b, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return plan
}

// measuredRecords reads the lifetime's serving file: its measured records, by probe.
func measuredRecords(t *testing.T, out string, key capacity.LifetimeKey) map[int][]capacity.ServingRecord {
	t.Helper()
	f := readServing(t, out, key)
	m := map[int][]capacity.ServingRecord{}
	for _, r := range f.Records {
		if r.Phase == capacity.PhaseMeasured {
			m[r.Probe] = append(m[r.Probe], r)
		}
	}
	return m
}

// TestServingWorkloadOnTheFake: a synthetic workload (uniform prompt words, uniform output
// lengths) through the runner on the stand-in server: every request asks for its own drawn
// n_predict and gets it, records the server's /tokenize count of its prompt (the fake: a token
// a word, so the words drawn plus "Request n."), and the study re-assembles byte for byte.
func TestServingWorkloadOnTheFake(t *testing.T) {
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	w := &capacity.Workload{Kind: capacity.WorkloadSynthetic, Seed: 9,
		InputWords:   &capacity.LengthDist{Dist: capacity.DistUniform, Min: 3, Max: 30},
		OutputTokens: &capacity.LengthDist{Dist: capacity.DistUniform, Min: 2, Max: 6}}
	plan := servingPlanFile(t, dir, "fake", model, []string{"-lv", "4"}, capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalPoisson, Seed: 2},
		Rates: []float64{20, 40}, Requests: 12, Warmups: 1, SLO: capacity.SLO{TTFTMs: 2000, TPOTMs: 500}, Workload: w}, 256)
	out := filepath.Join(dir, "run")
	rep, _, err := runPlan(t, plan, os.Args[0], out, []string{tag(t), fakeServerEnv + "=1", fakeWordTokensEnv + "=1"}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sv := checkServingRun(t, plan, out, rep)
	recs := measuredRecords(t, out, capacity.LifetimeKey{Pass: capacity.PassForward, Candidate: "fake", Slots: 1})
	var asked []int
	for probe, rs := range recs {
		for _, r := range rs {
			if r.NPredict < 2 || r.NPredict > 6 || r.Tokens != r.NPredict || r.PromptTokens < 5 || r.PromptTokens > 32 {
				t.Errorf("probe %d request %d: n_predict %d, %d tokens, %d prompt tokens: want 2-6, as asked, 5-32", probe, r.Seq, r.NPredict, r.Tokens, r.PromptTokens)
			}
			asked = append(asked, r.NPredict)
		}
	}
	if slices.Min(asked) == slices.Max(asked) {
		t.Errorf("every request asked for %d tokens: the output lengths were not drawn", asked[0])
	}
	for _, pr := range sv.Probes {
		if pr.Completed != 12 || pr.Contaminated != 0 {
			t.Errorf("probe %d: %d completed, %d contaminated; want 12, 0", pr.Probe, pr.Completed, pr.Contaminated)
		}
	}
}

// TestServingWorkloadTooLong: a prompt set whose second line cannot fit a slot's context is
// refused with the plan, before any server starts, naming the line (the validation bound: the
// tiny model's tokens are single bytes); a synthetic workload too long by the server's own
// /tokenize count is refused before its probe sends anything, naming the longest request.
func TestServingWorkloadTooLong(t *testing.T) {
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	set := "{\"prompt\": \"short one\"}\n{\"prompt\": \"" + strings.Repeat("word ", 300) + "\"}\n{\"prompt\": \"" + strings.Repeat("word ", 260) + "\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "set.jsonl"), []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &capacity.Workload{Kind: capacity.WorkloadPromptSet, PromptSet: &capacity.FileRef{Path: "set.jsonl", SHA256: fileSHA(t, filepath.Join(dir, "set.jsonl"))}}
	plan := servingPlanFile(t, dir, "fake", model, []string{"-lv", "4"}, capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalConstant},
		Rates: []float64{20}, Requests: 2, SLO: capacity.SLO{TTFTMs: 2000, TPOTMs: 500}, Workload: w}, 256)
	_, _, err := runPlan(t, plan, os.Args[0], filepath.Join(dir, "run"), []string{tag(t), fakeServerEnv + "=1", fakeWordTokensEnv + "=1"}, nil)
	if err == nil || !strings.Contains(err.Error(), "plan refused") || !strings.Contains(err.Error(), "2 prompts cannot fit") || !strings.Contains(err.Error(), "the longest is set.jsonl:2: at least 1500 prompt tokens") {
		t.Fatalf("run: %v; want the prompt set refused at validation, naming set.jsonl:2", err)
	}
	w = &capacity.Workload{Kind: capacity.WorkloadSynthetic, Seed: 1, InputWords: &capacity.LengthDist{Dist: capacity.DistUniform, Min: 200, Max: 300}}
	plan = servingPlanFile(t, dir, "fake", model, []string{"-lv", "4"}, capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalConstant},
		Rates: []float64{20}, Requests: 2, SLO: capacity.SLO{TTFTMs: 2000, TPOTMs: 500}, Workload: w}, 256)
	_, _, err = runPlan(t, plan, os.Args[0], filepath.Join(dir, "run2"), []string{tag(t), fakeServerEnv + "=1", fakeWordTokensEnv + "=1"}, nil)
	if err == nil || !strings.Contains(err.Error(), "2 requests do not fit") || !strings.Contains(err.Error(), " words): ") || !strings.Contains(err.Error(), "(the server's /tokenize)") {
		t.Fatalf("run: %v; want the synthetic requests refused by their /tokenize counts, naming the longest", err)
	}
}

// cacheArm is one arm of the prefix-cache test: its measured records and what they sum to.
type cacheArm struct {
	recs               []capacity.ServingRecord
	hits, promptN      int
	ttft, promptMs     []float64
	probe              capacity.ProbeResult
	declaredOffVerdict capacity.ProbeResult
}

// TestPrefixCacheRealServer: a shared-prefix workload (2 prefixes of 60 words x 4 numbered
// suffixes) on the real llama-server with the medium model (-t 1, one slot), run with
// cache_prompt off and on. Off, every request is cold: no cache_n, prompt_n at least the
// prompt's /tokenize count, nothing contaminated. On, requests after the first of a prefix
// reuse it (cache_n > 0) and the server evaluates far fewer prompt tokens; TTFT and prompt_ms
// are logged side by side (not asserted: timings). The same records judged as a cell that
// declared caching off are contaminated, and the probe fails prompt_cache_contaminated.
func TestPrefixCacheRealServer(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "medium-llama-q8_0.gguf")
	w := &capacity.Workload{Kind: capacity.WorkloadSharedPrefix, Seed: 1, Prefixes: 2, Suffixes: 4, PrefixWords: 60,
		InputWords: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 6}, OutputTokens: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 4}}
	arms := map[bool]*cacheArm{}
	for _, cache := range []bool{false, true} {
		dir := t.TempDir()
		s := capacity.Serving{Sustain: planWindow(), Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{2}, Requests: 8,
			SLO: capacity.SLO{TTFTMs: 5000, TPOTMs: 1000}, ScheduleSlackMs: 1000, CachePrompt: cache, Workload: w}
		plan := servingPlanFile(t, dir, "medium", model, []string{"-t", llamatest.Threads, "-lv", "4"}, s, 1024)
		out := filepath.Join(dir, "run")
		rep, _, err := runPlan(t, plan, loc.Server, out, []string{tag(t)}, nil)
		if err != nil {
			t.Fatalf("cache_prompt %v: run: %v", cache, err)
		}
		sv := checkServingRun(t, plan, out, rep)
		a := &cacheArm{recs: measuredRecords(t, out, capacity.LifetimeKey{Pass: capacity.PassForward, Candidate: "medium", Slots: 1})[0], probe: sv.Probes[0]}
		for _, r := range a.recs {
			if r.Timings == nil || r.FirstTokenMs == nil || r.PromptTokens < 200 {
				t.Fatalf("cache_prompt %v: request %d: timings %+v, %d prompt tokens: want a completed request with its /tokenize count", cache, r.Seq, r.Timings, r.PromptTokens)
			}
			if r.Timings.CacheN > 0 {
				a.hits++
			}
			a.promptN += r.Timings.PromptN
			a.ttft = append(a.ttft, *r.FirstTokenMs-*r.ScheduledMs)
			a.promptMs = append(a.promptMs, r.Timings.PromptMs)
		}
		off := s
		off.CachePrompt = false
		p := mustLoad(t, plan)
		a.declaredOffVerdict = capacity.ProbeMetrics(&off, p.NPredict, 0, capacity.ProbeSweep, 2, a.recs)
		arms[cache] = a
		t.Logf("cache_prompt %v: %d of %d requests hit the cache, prompt_n %d in all, TTFT median %.1f ms (from the scheduled send), prompt_ms median %.1f, contaminated %d, failures %v",
			cache, a.hits, len(a.recs), a.promptN, median(a.ttft), median(a.promptMs), a.probe.Contaminated, a.probe.Failures)
	}
	off, on := arms[false], arms[true]
	if off.hits != 0 || off.probe.Contaminated != 0 || off.probe.Completed != 8 {
		t.Errorf("cache off: %d cache hits, %d contaminated, %d completed; want 0, 0, 8", off.hits, off.probe.Contaminated, off.probe.Completed)
	}
	for _, r := range off.recs {
		if r.Timings.PromptN < r.PromptTokens {
			t.Errorf("cache off: request %d evaluated %d prompt tokens of its %d", r.Seq, r.Timings.PromptN, r.PromptTokens)
		}
	}
	if on.hits < 4 || 2*on.promptN > off.promptN || on.probe.Contaminated != 0 {
		t.Errorf("cache on: %d hits, prompt_n %d (off: %d), %d contaminated; want at least 4 hits, at most half the prompt tokens, none contaminated (declared on)", on.hits, on.promptN, off.promptN, on.probe.Contaminated)
	}
	v := on.declaredOffVerdict
	if v.Contaminated != on.hits || v.Passed || !slices.Contains(v.Failures, capacity.CodeContaminated) {
		t.Errorf("the cached records judged as declared off: %d contaminated (want %d), passed %v, failures %v", v.Contaminated, on.hits, v.Passed, v.Failures)
	}
	if v := off.declaredOffVerdict; v.Contaminated != 0 {
		t.Errorf("the cold records judged as declared off: %d contaminated", v.Contaminated)
	}
}
