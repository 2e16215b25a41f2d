package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/quant"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// A ladder with a telemetry block (one candidate, Q4_0, at depth 0) on the real llama-quantize,
// llama-perplexity and llama-bench with a fake 100 W GPU: each bench cell has its Joules per
// token (100 W over about its rate), the candidate carries them by figure, a prediction on
// j_per_token is answered from them, the bench leg's devices are recorded (100 W average and
// peak), and the receipt's Energy tables have both and verify.
// A j_per_token prediction without the block is refused at validation.
func TestQuantLadderEnergyWithFakeSampler(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nbPath := filepath.Join(dir, "notebook.db")
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q4_0"}, 4)
	pred := []map[string]any{{"id": "E1", "text": "Q4_0 costs at most 1000 J per generated token at d0", "kind": "band",
		"about": map[string]any{"figure": "j_per_token", "candidate": "Q4_0", "at": "tg@0"}, "hi": 1000}}
	editPlan(t, plan, map[string]any{"predictions": pred,
		"speed": map[string]any{"depths": []int{0}, "n_prompt": 64, "n_gen": 16, "reps": 3, "threads": 1, "gates": map[string]any{"cv_tg": 0.5, "cv_pp_depth": 0.5, "cv_pp_d0": 0.5}},
		"rule":  map[string]any{"maximize": "tg@0", "limits": map[string]any{"kld_mean_max": 0.01}, "tolerance": 0.01}})
	if code, out, errOut := runCLI("study", "validate", plan); code == 0 || !strings.Contains(out+errOut, "j_per_token is not measured: the plan has no telemetry block") {
		t.Errorf("a j_per_token prediction without telemetry: %d %s%s", code, out, errOut)
	}
	editPlan(t, plan, map[string]any{"telemetry": map[string]any{"interval_ms": 20}})
	if code, out, errOut := runCLI("study", "register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	done, err := workbench.RunQuantLadder(context.Background(), nb, workbench.QuantRunRequest{ID: 1, Telemetry: fakeGPU(t)})
	nb.Close()
	if err != nil || done == nil || !done.Complete {
		t.Fatalf("run: %+v %v", done, err)
	}
	code, js, errOut := runCLI("study", "show", "1", "--notebook", nbPath, "--json")
	var res quant.Result
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil || len(res.Candidates) != 1 {
		t.Fatalf("show --json: %d %s %s", code, js, errOut)
	}
	c, r := res.Candidates[0], res.Records[0]
	if len(r.Bench) != 2 {
		t.Fatalf("bench cells %+v", r.Bench)
	}
	for _, b := range r.Bench {
		want := 100 / b.Mean // 100 W at the row's rate; llama-bench's mean of rates is not the rate of its mean time
		if b.JPerToken <= 0 || math.Abs(b.JPerToken-want) > 0.25*want || c.JPerToken[b.Figure()] != b.JPerToken ||
			math.Abs(b.TokensPerJ*b.JPerToken-1) > 1e-3 {
			t.Errorf("%s: %g J/token (%g tokens/J), want about %g; candidate %v", b.Figure(), b.JPerToken, b.TokensPerJ, want, c.JPerToken)
		}
	}
	if len(res.Verdicts) != 1 || res.Verdicts[0].Outcome != "HIT" {
		t.Errorf("verdicts %+v", res.Verdicts)
	}
	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", "1", "--out", bundle, "--notebook", nbPath); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if len(r.Energy) != 1 || r.Energy[0].Leg != r.Bench[0].Leg || !r.Energy[0].HasEnergy || len(r.Energy[0].Devices) == 0 {
		t.Errorf("the bench leg's energy: %+v", r.Energy)
	}
	if !strings.Contains(string(md), "## Energy\n\n| type | pp@0 J/token | tg@0 J/token |") || !strings.Contains(string(md), "| nvml GPU0 | 100.0 W avg, 100.0 W peak |") {
		t.Errorf("receipt.md has no energy table:\n%s", md)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
}
