package capacity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
)

func fileSHA(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// workloadDir writes files into a plan folder with the small plan's models and prompt plan,
// and a hash function that knows them (the models by their plan hashes).
func workloadDir(t *testing.T, files map[string]string) (string, study.HashFunc) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"a.gguf": "", "b.gguf": "", "prompts.json": ""} {
		files[name] = body
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hash := func(path string) (string, error) {
		switch filepath.Base(path) {
		case "a.gguf", "prompts.json":
			return sha0, nil
		case "b.gguf":
			return sha1, nil
		}
		b, err := os.ReadFile(path)
		return fileSHA(b), err
	}
	return dir, hash
}

func withWorkload(w Workload) *Plan {
	p := servingPlan()
	p.Serving.Workload = &w
	return p
}

func TestWorkloadValidation(t *testing.T) {
	uni := &LengthDist{Dist: DistUniform, Min: 4, Max: 8}
	bad := []struct {
		w    Workload
		path string
	}{
		{Workload{Kind: "chat"}, "serving.workload.kind"},
		{Workload{Kind: WorkloadSynthetic}, "serving.workload.input_words"},
		{Workload{Kind: WorkloadSynthetic, InputWords: &LengthDist{Dist: DistUniform, Min: 9, Max: 3}}, "serving.workload.input_words"},
		{Workload{Kind: WorkloadSynthetic, InputWords: &LengthDist{Dist: DistNormal, Mean: 50, Std: 5}}, "serving.workload.input_words"},
		{Workload{Kind: WorkloadSynthetic, InputWords: &LengthDist{Dist: "zipf"}}, "serving.workload.input_words.dist"},
		{Workload{Kind: WorkloadSynthetic, InputWords: uni, OutputTokens: &LengthDist{Dist: DistFixed}}, "serving.workload.output_tokens"},
		{Workload{Kind: WorkloadSynthetic, InputWords: &LengthDist{Dist: DistFile}}, "serving.workload.input_words"},
		{Workload{Kind: WorkloadSharedPrefix, Suffixes: 4, PrefixWords: 100, InputWords: uni}, "serving.workload.prefixes"},
		{Workload{Kind: WorkloadSharedPrefix, Prefixes: 2, Suffixes: 4, InputWords: uni}, "serving.workload.prefix_words"},
		{Workload{Kind: WorkloadSynthetic, Prefixes: 2, InputWords: uni}, "serving.workload"},
		{Workload{Kind: WorkloadPromptSet}, "serving.workload.prompt_set"},
		{Workload{Kind: WorkloadPromptSet, PromptSet: &FileRef{"p.jsonl", "nope"}}, "serving.workload.prompt_set.sha256"},
		{Workload{Kind: WorkloadSynthetic, Seed: -1, InputWords: uni}, "serving.workload.seed"},
	}
	for i, c := range bad {
		errs := study.Errors(Validate(withWorkload(c.w), ValidateOptions{}))
		found := false
		for _, e := range errs {
			found = found || e.Path == c.path
		}
		if !found {
			t.Errorf("case %d %+v: want a problem at %s, got %v", i, c.w, c.path, errs)
		}
	}
	good := []Workload{
		{Kind: WorkloadSynthetic, Seed: 1, InputWords: uni, OutputTokens: &LengthDist{Dist: DistNormal, Mean: 16, Std: 4, Min: 4, Max: 32}},
		{Kind: WorkloadSharedPrefix, Prefixes: 2, Suffixes: 4, PrefixWords: 300, InputWords: &LengthDist{Dist: DistFixed, Value: 8}},
		{Kind: WorkloadPromptSet, PromptSet: &FileRef{"p.jsonl", sha0}},
	}
	for _, w := range good {
		if errs := study.Errors(Validate(withWorkload(w), ValidateOptions{})); len(errs) > 0 {
			t.Errorf("%+v: %v", w, errs)
		}
	}
}

// TestWorkloadFileLineRefused: a prompt set or length file with a bad line is refused at
// validation (files opened) as file:line.
func TestWorkloadFileLineRefused(t *testing.T) {
	set := "{\"prompt\": \"one\"}\n{\"prompt\": \"two\", \"n_predict\": 8}\n{\"prompt\": \"three\"\n"
	lens := "12 14\n16\nx7\n"
	dir, hash := workloadDir(t, map[string]string{"p.jsonl": set, "lens.txt": lens})
	p := withWorkload(Workload{Kind: WorkloadPromptSet, PromptSet: &FileRef{"p.jsonl", fileSHA([]byte(set))}})
	errs := study.Errors(Validate(p, ValidateOptions{PlanDir: dir, Hash: hash}))
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "p.jsonl:3: ") {
		t.Errorf("prompt set: %v, want one problem naming p.jsonl:3", errs)
	}
	p = withWorkload(Workload{Kind: WorkloadSynthetic, InputWords: &LengthDist{Dist: DistFile, File: &FileRef{"lens.txt", fileSHA([]byte(lens))}}})
	errs = study.Errors(Validate(p, ValidateOptions{PlanDir: dir, Hash: hash}))
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "lens.txt:3: \"x7\"") {
		t.Errorf("length file: %v, want one problem naming lens.txt:3", errs)
	}
}

func TestWorkloadRequests(t *testing.T) {
	lens := "5 9\n"
	dir, _ := workloadDir(t, map[string]string{"lens.txt": lens, "p.jsonl": "{\"prompt\": \"alpha\"}\n{\"prompt\": \"beta\", \"n_predict\": 3}\n"})
	w := &Workload{Kind: WorkloadSharedPrefix, Seed: 4, Prefixes: 2, Suffixes: 3, PrefixWords: 50,
		InputWords:   &LengthDist{Dist: DistFile, File: &FileRef{"lens.txt", fileSHA([]byte(lens))}},
		OutputTokens: &LengthDist{Dist: DistNormal, Mean: 16, Std: 8, Min: 10, Max: 20}}
	d, err := LoadWorkloadFiles(w, dir)
	if err != nil {
		t.Fatal(err)
	}
	prefix := func(r WorkRequest) string { return r.Prompt[:strings.Index(r.Prompt, "\n")] }
	var reqs []WorkRequest
	for n := range 7 {
		r := d.Request(n, 64)
		reqs = append(reqs, r)
		if again := d.Request(n, 64); again != r {
			t.Fatalf("request %d built twice differs", n)
		}
		words := len(strings.Fields(r.Prompt[strings.Index(r.Prompt, "\n"):])) - 2 // "Request n."
		if words != 5 && words != 9 {
			t.Errorf("request %d: %d suffix words, want 5 or 9 (the length file)", n, words)
		}
		if r.NPredict < 10 || r.NPredict > 20 {
			t.Errorf("request %d: n_predict %d outside [10, 20]", n, r.NPredict)
		}
	}
	for n, r := range reqs {
		if same := prefix(r) == prefix(reqs[0]); same != (n/3%2 == 0) {
			t.Errorf("request %d: shares request 0's prefix: %v; want prefix (n/3) mod 2", n, same)
		}
		if n > 0 && r.Prompt == reqs[n-1].Prompt {
			t.Errorf("requests %d and %d are the same prompt", n-1, n)
		}
	}
	if len(prefix(reqs[0])) < 50*2 {
		t.Errorf("prefix %q: want about 50 words", prefix(reqs[0]))
	}
	set := &Workload{Kind: WorkloadPromptSet, PromptSet: &FileRef{"p.jsonl", fileSHA([]byte("{\"prompt\": \"alpha\"}\n{\"prompt\": \"beta\", \"n_predict\": 3}\n"))}}
	if d, err = LoadWorkloadFiles(set, dir); err != nil {
		t.Fatal(err)
	}
	r0, r1, r2 := d.Request(0, 64), d.Request(1, 64), d.Request(2, 64)
	if r0.Prompt != "alpha" || r0.NPredict != 64 || r1.Prompt != "beta" || r1.NPredict != 3 || r2 != r0 || r1.Source != "p.jsonl:2" {
		t.Errorf("prompt set requests %+v %+v %+v", r0, r1, r2)
	}
}

// TestWorkloadKeepsOldPlans: a serving plan without a workload writes no workload key, so its
// canonical JSON and SHA-256 are what they were.
func TestWorkloadKeepsOldPlans(t *testing.T) {
	b, err := json.Marshal(servingPlan())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "workload") || strings.Contains(string(b), "prompt_tokens") {
		t.Errorf("a plan without a workload wrote one: %s", b)
	}
}

// TestContaminationByPromptCount: a cold request whose prompt_n is below its prompt's
// /tokenize count was served partly from the cache, even with cache_n 0; a request's own
// n_predict is what completion is judged against.
func TestContaminationByPromptCount(t *testing.T) {
	s := servingPlan().Serving
	at := func(ms float64) *float64 { return &ms }
	rec := func(seq, promptTokens, promptN, asked int) ServingRecord {
		return ServingRecord{Phase: PhaseMeasured, Seq: seq, ScheduledMs: at(float64(seq)), SendMs: float64(seq), FirstTokenMs: at(float64(seq) + 5),
			EndMs: float64(seq) + 10, Tokens: asked, Events: asked, HTTPStatus: 200, PromptTokens: promptTokens, NPredict: asked,
			Timings: &ServingTimings{PromptN: promptN, PredictedN: asked}}
	}
	recs := []ServingRecord{rec(0, 100, 101, 7), rec(1, 100, 12, 9), rec(2, 0, 3, 5)}
	pr := ProbeMetrics(s, 64, 0, ProbeSweep, 1, recs)
	if pr.Contaminated != 1 || pr.Completed != 2 || pr.Passed {
		t.Errorf("contaminated %d, completed %d, passed %v: want 1, 2, false (contamination_max 0)", pr.Contaminated, pr.Completed, pr.Passed)
	}
	s.CachePrompt = true
	if pr = ProbeMetrics(s, 64, 0, ProbeSweep, 1, recs); pr.Contaminated != 0 || pr.Completed != 3 {
		t.Errorf("caching on: contaminated %d, completed %d; want 0, 3", pr.Contaminated, pr.Completed)
	}
}
