package capacity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

func synthConversations() *Workload {
	return &Workload{Kind: WorkloadMultiTurn, Seed: 9, Turns: &LengthDist{Dist: DistUniform, Min: 2, Max: 4},
		InputWords: &LengthDist{Dist: DistUniform, Min: 3, Max: 6}, OutputTokens: &LengthDist{Dist: DistFixed, Value: 5}}
}

// TestConversationDrawing: a synthetic conversation's turns are drawn from its seed and number
// alone; turn k's prompt is turn k-1's prompt, its stand-in reply and the new user message.
func TestConversationDrawing(t *testing.T) {
	d := &WorkloadData{W: synthConversations()}
	lens := map[int]bool{}
	for n := range 12 {
		conv := d.Conversation(n, 64)
		again := d.Conversation(n, 64)
		if len(conv) < 2 || len(conv) > 4 {
			t.Fatalf("conversation %d: %d turns, want 2 to 4", n, len(conv))
		}
		lens[len(conv)] = true
		for k, r := range conv {
			if r != again[k] {
				t.Fatalf("conversation %d turn %d built twice differs", n, k+1)
			}
			if r.Turn != k+1 || r.Turns != len(conv) || r.Conversation != n || r.NPredict != 5 || r.Lead != ConversationLead(n) {
				t.Errorf("conversation %d turn %d: %+v", n, k+1, r)
			}
			if !strings.HasPrefix(r.Prompt, r.Lead) || !strings.HasSuffix(r.Prompt, "\nAssistant:") {
				t.Errorf("turn prompt %q: want the header first and the assistant's cue last", r.Prompt)
			}
			if k == 0 {
				continue
			}
			prev := strings.TrimSuffix(conv[k-1].Prompt, "Assistant:")
			if !strings.HasPrefix(r.Prompt, prev+"Assistant: ") {
				t.Errorf("turn %d does not extend turn %d: %q / %q", k+1, k, prev, r.Prompt)
			}
			reply := r.Prompt[len(prev)+len("Assistant: "):]
			reply = reply[:strings.Index(reply, "\n")]
			if len(strings.Fields(reply)) != 5 {
				t.Errorf("stand-in reply %q: want 5 words (the turn's n_predict)", reply)
			}
		}
		if n > 0 && conv[0].Prompt == d.Conversation(n-1, 64)[0].Prompt {
			t.Errorf("conversations %d and %d open alike", n-1, n)
		}
	}
	if len(lens) < 2 {
		t.Errorf("turn counts %v: want the uniform draw to vary", lens)
	}
	other := synthConversations()
	other.Seed = 10
	if (&WorkloadData{W: other}).Conversation(3, 64)[0].Prompt == d.Conversation(3, 64)[0].Prompt {
		t.Error("another seed gave the same conversation")
	}
	if got := d.W.Describe(); !strings.Contains(got, "multi-turn synthetic conversations of uniform in [2, 4] turns, uniform in [3, 6] words a user message") {
		t.Errorf("describe: %q", got)
	}
	if r := d.Request(5, 64); r != d.Conversation(5, 64)[0] {
		t.Errorf("Request of a multi_turn workload is not the conversation's first turn: %+v", r)
	}
}

func TestMultiTurnValidation(t *testing.T) {
	bad := []struct {
		w    Workload
		path string
	}{
		{Workload{Kind: WorkloadMultiTurn}, "serving.workload"},
		{Workload{Kind: WorkloadMultiTurn, Turns: &LengthDist{Dist: DistFixed, Value: 3}}, "serving.workload"},
		{Workload{Kind: WorkloadMultiTurn, Turns: &LengthDist{Dist: DistFixed, Value: 2000}, InputWords: &LengthDist{Dist: DistFixed, Value: 3}}, "serving.workload.turns"},
		{Workload{Kind: WorkloadMultiTurn, Conversations: &FileRef{"c.jsonl", sha0}, InputWords: &LengthDist{Dist: DistFixed, Value: 3}}, "serving.workload"},
		{Workload{Kind: WorkloadSynthetic, InputWords: &LengthDist{Dist: DistFixed, Value: 3}, Turns: &LengthDist{Dist: DistFixed, Value: 3}}, "serving.workload"},
	}
	for i, c := range bad {
		errs := study.Errors(Validate(withWorkload(c.w), ValidateOptions{}))
		found := false
		for _, e := range errs {
			found = found || e.Path == c.path
		}
		if !found {
			t.Errorf("case %d: want a problem at %s, got %v", i, c.path, errs)
		}
	}
	for _, w := range []*Workload{synthConversations(), {Kind: WorkloadMultiTurn, Conversations: &FileRef{"c.jsonl", sha0}}} {
		if errs := study.Errors(Validate(withWorkload(*w), ValidateOptions{})); len(errs) > 0 {
			t.Errorf("%+v: %v", w, errs)
		}
	}
	if b, _ := json.Marshal(servingPlan()); strings.Contains(string(b), "timing_tolerance") || strings.Contains(string(b), "turns") || strings.Contains(string(b), "conversations") {
		t.Errorf("a plan without them wrote the new fields (its SHA-256 would change): %s", b)
	}
	p := servingPlan()
	p.Serving.TimingTolerance = -1
	if errs := study.Errors(Validate(p, ValidateOptions{})); len(errs) != 1 || errs[0].Path != "serving.timing_tolerance" {
		t.Errorf("timing_tolerance -1: %v", errs)
	}
}

// convDir is a plan folder whose model a.gguf is the committed tiny test model (a byte-level
// vocabulary: no token longer than one byte).
func convDir(t *testing.T, files map[string]string) (string, study.HashFunc) {
	t.Helper()
	dir, hash := workloadDir(t, files)
	model, err := os.ReadFile(filepath.Join("..", "..", "testdata", "models", "tiny-llama-f16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.gguf"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, hash
}

// TestConversationFileRefused: a conversation file's malformed line is refused at validation
// as file:line; a conversation that cannot fit the context whatever the tokenizer does is
// refused there too, the longest named by file:line, id and turn.
func TestConversationFileRefused(t *testing.T) {
	long := strings.Repeat("word ", 500)
	convs := `{"id": "short", "turns": [{"user": "Hello there", "assistant": "Hi!"}, {"user": "Bye"}]}
{"id": "long", "turns": [{"user": "` + long + `", "assistant": "` + long + `"}, {"user": "` + long + `"}]}
{"id": "longer", "turns": [{"user": "` + long + long + `", "assistant": "ok"}, {"user": "` + long + long + `"}]}
`
	broken := "{\"turns\": [{\"user\": \"a\", \"assistant\": \"b\"}]}\n{\"turns\": [{\"user\": \"a\"}, {\"user\": \"b\"}]}\n"
	dir, hash := convDir(t, map[string]string{"c.jsonl": convs, "bad.jsonl": broken})
	p := withWorkload(Workload{Kind: WorkloadMultiTurn, Conversations: &FileRef{"bad.jsonl", fileSHA([]byte(broken))}})
	p.Candidates = p.Candidates[:1]
	errs := study.Errors(Validate(p, ValidateOptions{PlanDir: dir, Hash: hash}))
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "bad.jsonl:2: turn 1: no assistant reply") {
		t.Errorf("malformed conversation: %v, want one problem naming bad.jsonl:2", errs)
	}
	p = withWorkload(Workload{Kind: WorkloadMultiTurn, Conversations: &FileRef{"c.jsonl", fileSHA([]byte(convs))}})
	p.Candidates = p.Candidates[:1]
	p.CtxPerSlot = 2048
	errs = study.Errors(Validate(p, ValidateOptions{PlanDir: dir, Hash: hash}))
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, `c.jsonl:3 (conversation "longer") turn 2: at least 10038 prompt tokens`) || !strings.Contains(errs[0].Msg, "2 conversations cannot fit") {
		t.Errorf("too long: %v, want one problem naming c.jsonl:3 (conversation \"longer\") turn 2", errs)
	}
	p.CtxPerSlot = 16384
	if errs = study.Errors(Validate(p, ValidateOptions{PlanDir: dir, Hash: hash})); len(errs) != 0 {
		t.Errorf("ctx 16384: %v", errs)
	}
}

func TestMaxTokenBytes(t *testing.T) {
	n, err := MaxTokenBytes(filepath.Join("..", "..", "testdata", "models", "tiny-llama-f16.gguf"))
	if err != nil || n < 1 || n > 8 {
		t.Errorf("tiny model: %d, %v", n, err)
	}
	if _, err := MaxTokenBytes(filepath.Join(t.TempDir(), "none.gguf")); err == nil {
		t.Error("a missing model gave a bound")
	}
}

// TestMultiTurnContamination: with caching off every turn is cold (a later turn that hit the
// cache is contaminated); with caching on later turns are warm by design and only a first turn
// that took more than its header from the cache is contaminated. Assembly counts a probe in
// conversations, each with all its turns.
func TestMultiTurnContamination(t *testing.T) {
	s := servingPlan().Serving
	s.Workload = synthConversations()
	s.Requests = 2
	at := func(ms float64) *float64 { return &ms }
	rec := func(seq, conv, turn, turns, cacheN int) ServingRecord {
		base := float64(seq * 100)
		return ServingRecord{Rate: 1, Phase: PhaseMeasured, Seq: seq, ScheduledMs: at(base), SendMs: base, FirstTokenMs: at(base + 5),
			EndMs: base + 10, Tokens: 4, Events: 4, HTTPStatus: 200, PromptTokens: 50, Conversation: conv, Turn: turn, Turns: turns,
			LeadTokens: 6, Timings: &ServingTimings{PromptN: 50 - cacheN, CacheN: cacheN, PredictedN: 4}, Line: seq + 2}
	}
	recs := []ServingRecord{rec(0, 1, 1, 2, 3), rec(1, 1, 2, 2, 40), rec(2, 2, 1, 2, 30), rec(3, 2, 2, 2, 45)}
	s.CachePrompt = true
	pr := ProbeMetrics(s, 64, 0, ProbeSweep, 1, recs)
	if pr.Contaminated != 1 || pr.Conversations == nil || pr.Conversations.WarmHits != 2 || pr.Conversations.FirstTurns != 2 || pr.Passed {
		t.Errorf("caching on: contaminated %d, counts %+v, passed %v; want 1 (conversation 2's first turn), 2 warm hits, failed", pr.Contaminated, pr.Conversations, pr.Passed)
	}
	if !strings.Contains(strings.Join(pr.Failures, ","), CodeContaminated) {
		t.Errorf("failures %v: want %s", pr.Failures, CodeContaminated)
	}
	for _, c := range pr.Checks {
		if c.Gate == "prompt_cache_contamination" && (*c.Observed != 0.5 || !strings.Contains(c.Detail, "1 of 2 first turns took more than their header")) {
			t.Errorf("contamination check %+v: want 1 of the 2 first turns", c)
		}
	}
	if pr.ScheduledRate == nil || *pr.ScheduledRate != 5 {
		t.Errorf("scheduled rate %v: want 5 conversations/s (first turns at 0 and 200 ms)", pr.ScheduledRate)
	}
	s.CachePrompt = false
	if pr = ProbeMetrics(s, 64, 0, ProbeSweep, 1, recs); pr.Contaminated != 4 {
		t.Errorf("caching off: contaminated %d, want all 4", pr.Contaminated)
	}
	if n, msg := s.measuredCount(recs, 2); n != 2 || msg != "" {
		t.Errorf("count %d %q", n, msg)
	}
	if _, msg := s.measuredCount(recs[:3], 2); !strings.Contains(msg, "conversation 2 has 1 of its 2 turns") {
		t.Errorf("a missing turn: %q", msg)
	}
	if _, msg := s.measuredCount(append(recs, rec(4, 3, 1, 1, 0)), 2); !strings.Contains(msg, "3 measured conversations, the plan says 2") {
		t.Errorf("an extra conversation: %q", msg)
	}
	if msg := checkServingRecord(rec(0, 1, 3, 2, 0)); !strings.Contains(msg, "turn 3 of 2") {
		t.Errorf("turn beyond turns: %q", msg)
	}
}

// TestTimingDisagreement: a request whose client-measured time per token differs from the
// server's timings beyond timing_tolerance is flagged, and the probe fails with the code.
func TestTimingDisagreement(t *testing.T) {
	s := servingPlan().Serving
	at := func(ms float64) *float64 { return &ms }
	rec := func(seq int, predictedMs float64) ServingRecord {
		base := float64(seq * 100)
		return ServingRecord{Phase: PhaseMeasured, Seq: seq, ScheduledMs: at(base), SendMs: base, FirstTokenMs: at(base + 5),
			EndMs: base + 35, Tokens: 4, Events: 4, HTTPStatus: 200, Timings: &ServingTimings{PredictedN: 4, PredictedMs: predictedMs}}
	}
	recs := []ServingRecord{rec(0, 30), rec(1, 33), rec(2, 6)}
	if pr := ProbeMetrics(s, 4, 0, ProbeSweep, 1, recs); pr.TimingDisagreements != nil || slices.ContainsFunc(pr.Checks, func(g GateCheck) bool { return g.Gate == "client_server_timing" }) {
		t.Errorf("no tolerance: %+v, checks %+v; want no timing check (old results unchanged)", pr.TimingDisagreements, pr.Checks)
	}
	s.TimingTolerance = 0.25
	pr := ProbeMetrics(s, 4, 0, ProbeSweep, 1, recs)
	td := pr.TimingDisagreements
	if td == nil || td.Compared != 3 || td.Flagged != 1 || td.Seqs[0] != 2 || *td.Worst != 4 {
		t.Fatalf("disagreements %+v: want request 2 flagged (10 ms/token seen, 2 claimed: +400%%)", td)
	}
	if !strings.Contains(strings.Join(pr.Failures, ","), CodeTimingDisagreement) || pr.Passed {
		t.Errorf("failures %v", pr.Failures)
	}
}
