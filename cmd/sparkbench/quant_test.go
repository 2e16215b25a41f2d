package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/quant"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
)

const (
	mediumSHA = "721dd8183618655b0f808cfc70ed85549f733ccedc54b0094f858f13fe8d3f0a"
	corpusSHA = "b6d688656e30648ec81e70402bd1768cb3056fc9bc5c6749846a61a4066f8604"
)

// writeLadderPlan writes a small ladder plan of the medium model into dir.
func writeLadderPlan(t *testing.T, dir, ref, refSHA, corpus, corpusSHA string, quants []string, chunks int) string {
	t.Helper()
	q, _ := json.Marshal(quants)
	plan := fmt.Sprintf(`{"schema": "sparkbench.quant/v1", "name": "ladder test", "build": {},
  "reference": {"path": %q, "sha256": %q}, "quants": %s,
  "speed": {"depths": [0, 512], "n_prompt": 64, "n_gen": 16, "reps": 3, "threads": 1, "gates": {"cv_tg": 0.5, "cv_pp_depth": 0.5, "cv_pp_d0": 0.5}},
  "quality": {"corpus": {"path": %q, "sha256": %q}, "ctx": 128, "chunks": %d},
  "rule": {"maximize": "tg@512", "limits": {"kld_mean_max": 0.01}, "tolerance": 0.01},
  "predictions": [
    {"id": "P1", "text": "Q8_0 stays closer to the reference than Q4_0", "kind": "comparison", "about": {"figure": "kld_mean", "candidate": "Q8_0"}, "op": "<=", "than": {"figure": "kld_mean", "candidate": "Q4_0"}},
    {"id": "P2", "text": "how fast is the pick at d512", "kind": "question", "about": {"figure": "speed", "candidate": "selected", "at": "tg@512"}}]}`, ref, refSHA, q, corpus, corpusSHA, chunks)
	path := filepath.Join(dir, "ladder.json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// editPlan sets top-level fields of a plan file (nil: written as null, which leaves a
// slice or pointer field empty).
func editPlan(t *testing.T, plan string, set map[string]any) {
	t.Helper()
	b, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	maps.Copy(m, set)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func corpusPath() string {
	return filepath.Join(llamatest.RepoRoot(), "assets", "corpus", "sparkbench-corpus-v1.txt")
}

// bySelfRule is the plan's rule worked out again here, from the shown candidates: within mean
// KLD 0.01, the best tg@512; within 1% of it, the lowest mean KLD.
func bySelfRule(cands []quant.Candidate) string {
	best := 0.0
	for _, c := range cands {
		if c.KLD != nil && c.KLD.Mean <= 0.01 {
			best = max(best, c.Speed["tg@512"])
		}
	}
	pick, kld := "", 1.0
	for _, c := range cands {
		if c.KLD != nil && c.KLD.Mean <= 0.01 && c.Speed["tg@512"] >= best*0.99 && c.KLD.Mean < kld {
			pick, kld = c.Type, c.KLD.Mean
		}
	}
	return pick
}

// TestQuantLadderOnTheMediumModel runs a ladder (Q8_0, Q4_K_M, Q4_0 and IQ4_NL, depths 0 and
// 512) on the real llama-quantize, llama-perplexity and llama-bench through the same verbs as
// the other kinds: validate, run, show, receipt, verify; the selection is worked out again
// here; a second run reuses every derived model; a cache file that no longer hashes as
// recorded is set aside, kept, and made again.
func TestQuantLadderOnTheMediumModel(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")
	// The CV gates are opened to 50% here: three repetitions of 16 tokens on a shared 2-core
	// machine under the race detector spread wider than a real study's 5%.
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q8_0", "Q4_K_M", "Q4_0", "IQ4_NL"}, 4)

	if code, out, errOut := runCLI("study", "validate", plan); code != 0 || !strings.Contains(out, "valid quantization ladder") {
		t.Fatalf("validate: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runCLI("study", "run", plan, "--notebook", nb)
	// 17 legs: base logits, then per type quantize, KLD and two speed legs; a KLD run that lost
	// its last lines at exit, or a flagged speed leg, is run again as a leg of its own.
	legs := regexp.MustCompile(`study 1 complete: (\d+) legs, 0 derived model\(s\) reused`).FindStringSubmatch(out)
	if code != 0 || legs == nil || mustAtoi(t, legs[1]) < 17 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("run:\n%s", out)
	code, js, errOut := runCLI("study", "show", "1", "--notebook", nb, "--json")
	var res quant.Result
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil {
		t.Fatalf("show --json: %d %s %s", code, js, errOut)
	}
	if len(res.Candidates) != 4 {
		t.Fatalf("candidates %+v", res.Candidates)
	}
	for _, c := range res.Candidates {
		if c.KLD == nil || c.Speed["tg@512"] <= 0 || c.Speed["pp@0"] <= 0 || c.PeakRSSMiB == nil || c.FileBytes <= 0 || c.BitsPerWeight <= 0 {
			t.Errorf("%s not measured: %+v", c.Type, c)
		}
	}
	q8, q4 := res.Candidates[0], res.Candidates[2]
	if q8.KLD.Mean >= q4.KLD.Mean || q8.FileBytes <= q4.FileBytes || q8.BitsPerWeight <= q4.BitsPerWeight {
		t.Errorf("Q8_0 is not the closer, larger one: %+v %+v", q8.KLD, q4.KLD)
	}
	if want := bySelfRule(res.Candidates); res.Selection.Selected != want || want == "" {
		t.Fatalf("selected %q, by hand %q (%s)", res.Selection.Selected, want, res.Selection.Why)
	}
	// the predictions registered with the plan, answered from the candidates table
	if len(res.Verdicts) != 2 || res.Verdicts[0].Outcome != study.Holds || res.Verdicts[1].Outcome != study.Answered ||
		*res.Verdicts[1].Value != res.Candidates[slices.IndexFunc(res.Candidates, func(c quant.Candidate) bool { return c.Type == res.Selection.Selected })].Speed["tg@512"] {
		t.Errorf("verdicts %+v", res.Verdicts)
	}
	if !strings.Contains(out, "selected "+res.Selection.Selected) {
		t.Errorf("the run did not say what it selected:\n%s", out)
	}

	bundle := filepath.Join(dir, "receipt")
	if code, _, errOut := runCLI("receipt", "1", "--notebook", nb, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if !strings.Contains(string(md), "**Selected: "+res.Selection.Selected+"**") || !strings.Contains(string(md), "| P1 | Q8_0 stays closer to the reference than Q4_0 |") || !strings.Contains(string(md), "## Pareto frontier (tg@512 against mean KLD)") {
		t.Errorf("receipt.md:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(bundle, "provenance.json")); err != nil || !strings.Contains(string(md), "Measured with llama.cpp `version: ") {
		t.Errorf("the receipt does not say which build it measured with (%v)", err)
	}
	for _, chart := range []string{"pareto", "kld-bits", "candidates-tg", "candidates-pp"} {
		if _, err := os.Stat(filepath.Join(bundle, "plots", chart+".png")); err != nil {
			t.Errorf("no %s chart in the bundle: %v", chart, err)
		}
		if !strings.Contains(string(md), "(plots/"+chart+".png)") {
			t.Errorf("receipt.md does not show plots/%s.png", chart)
		}
	}
	// A changed study.json is found by verify.
	sj := filepath.Join(bundle, "study.json")
	b, _ := os.ReadFile(sj)
	if err := os.WriteFile(sj, []byte(strings.Replace(string(b), res.Selection.Selected, "Q2_K", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI("verify", bundle); code == 0 {
		t.Error("verify passed a changed study.json")
	}

	// The hand-off: a capacity plan of the selected quant and its runner-up, registered and run
	// for one cell (P1/C1) on the real llama-server.
	capacityTag(t)
	cplan := filepath.Join(dir, "handoff", "capacity.json")
	if err := os.MkdirAll(filepath.Dir(cplan), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI("quant", "handoff", "1", "--out", cplan, "--slots", "1", "--clients", "1", "--n-predict", "16", "--notebook", nb)
	if code != 0 || !strings.Contains(out, "capacity plan of ladder study 1") {
		t.Fatalf("handoff: %d %s %s", code, out, errOut)
	}
	cb, _ := os.ReadFile(cplan)
	for _, want := range []string{`"id": "` + strings.ToLower(res.Selection.Selected) + `"`, `"id": "` + strings.ToLower(res.Selection.RunnerUp) + `"`, "Handed off by quantization ladder study 1"} {
		if !strings.Contains(string(cb), want) {
			t.Errorf("capacity plan lacks %q:\n%s", want, cb)
		}
	}
	if code, _, errOut := runCLI("quant", "handoff", "1", "--out", cplan, "--notebook", nb); code != 2 || !strings.Contains(errOut, "exists; give a new file") {
		t.Errorf("handoff over an existing file: %d %s", code, errOut)
	}
	// The ladder's receipt now names the plan it handed off; the bundle still verifies.
	bundle2 := filepath.Join(dir, "receipt2")
	if code, _, errOut := runCLI("receipt", "1", "--notebook", nb, "--out", bundle2); code != 0 {
		t.Fatalf("receipt after the hand-off: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle2); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify after the hand-off: %d %s %s", code, out, errOut)
	}
	md2, _ := os.ReadFile(filepath.Join(bundle2, "receipt.md"))
	if !strings.Contains(string(md2), "## Hand-off") || !strings.Contains(string(md2), "- capacity plan `"+cplan+"` (sha256 `") {
		t.Errorf("the ladder's receipt does not name its hand-off:\n%s", md2)
	}
	code, out, errOut = runCLI("capacity", "run", cplan, "--notebook", nb)
	if code != 0 || !strings.Contains(out, "complete, 4 server lifetimes recorded") {
		t.Fatalf("capacity run of the hand-off: %d\n%s\n%s", code, out, errOut)
	}

	// Again: every derived model is reused. Then one cache file is changed on disk: set aside
	// (kept), made again, journaled.
	if code, out, errOut := runCLI("study", "run", "1", "--notebook", nb); code != 0 || !strings.Contains(out, "4 derived model(s) reused") {
		t.Fatalf("second run: %d\n%s\n%s", code, out, errOut)
	}
	cache := filepath.Join(dir, "data", "sparkbench", "quant-cache")
	ggufs, _ := filepath.Glob(filepath.Join(cache, "*.gguf"))
	if len(ggufs) != 4 {
		t.Fatalf("cache holds %v", ggufs)
	}
	f, err := os.OpenFile(ggufs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	code, out, errOut = runCLI("study", "run", "1", "--notebook", nb)
	if code != 0 || !strings.Contains(out, "3 derived model(s) reused") || !strings.Contains(out, "no longer hashes as recorded; set aside as "+ggufs[0]+".stale-") {
		t.Fatalf("run after a changed cache file: %d\n%s\n%s", code, out, errOut)
	}
	if stale, _ := filepath.Glob(ggufs[0] + ".stale-*"); len(stale) != 1 {
		t.Errorf("the changed file was not kept aside: %v", stale)
	}
	if code, out, _ := runCLI("notebook", "verify", "--notebook", nb); code != 0 {
		t.Errorf("notebook verify: %d %s", code, out)
	}
}

// TestQuantLadderBadInput: a type the build does not know (the valid ones listed), a
// quantized reference, and a corpus too short for ctx x chunks (the run stops before it
// quantizes anything, saying how many tokens it needs).
func TestQuantLadderBadInput(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	q8 := llamatest.Model(t, "medium-llama-q8_0.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))

	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q4_0", "Q4_K_Z"}, 4)
	code, _, errOut := runCLI("study", "validate", plan)
	if code == 0 || !strings.Contains(errOut, "Q4_K_Z is not a type this build's llama-quantize knows; it knows ") || !strings.Contains(errOut, "Q4_K_M") {
		t.Fatalf("unknown type: %d %s", code, errOut)
	}
	q8sha := sha256File(t, q8)
	plan = writeLadderPlan(t, dir, q8, q8sha, corpusPath(), corpusSHA, []string{"Q4_0"}, 4)
	if code, _, errOut := runCLI("study", "register", plan, "--notebook", filepath.Join(dir, "nb.db")); code != 2 || !strings.Contains(errOut, "the reference is already quantized (MOSTLY_Q8_0)") {
		t.Fatalf("quantized reference: %d %s", code, errOut)
	}
	short := filepath.Join(dir, "short.txt")
	if err := os.WriteFile(short, []byte(strings.Repeat("a short text. ", 8)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan = writeLadderPlan(t, dir, ref, mediumSHA, short, sha256File(t, short), []string{"Q4_0"}, 4)
	// counted at validation (llama-tokenize with the reference's vocabulary): refused before
	// anything runs, with the count it needs; the run counts again before quantizing
	// (TestRealPerplexityTooFew covers the tool's own refusal)
	code, out, errOut := runCLI("study", "validate", plan)
	if code != 2 || !regexp.MustCompile(`quality\.corpus: the corpus has \d+ tokens; ctx 128 x 4 chunks needs 512`).MatchString(errOut) {
		t.Fatalf("short corpus, validate: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("study", "run", plan, "--notebook", filepath.Join(dir, "nb2.db"))
	if code != 2 || !strings.Contains(errOut, "needs 512: give a longer text, or fewer chunks") {
		t.Fatalf("short corpus, run: %d\n%s\n%s", code, out, errOut)
	}
	if ggufs, _ := filepath.Glob(filepath.Join(dir, "data", "sparkbench", "quant-cache", "*.gguf")); len(ggufs) != 0 {
		t.Errorf("quantized before the corpus was checked: %v", ggufs)
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// TestKVTypesGetTheirKLD: a throughput study of the medium model with KV caches f16 and q8_0
// gets, once its legs have results, the KL divergence of q8_0 from f16 (llama-perplexity
// -ctk/-ctv against f16 base logits, each run a leg of the study), shown beside the speed q8_0
// bought at each depth — the ratio checked against the study's own cells — and the study's
// receipt still verifies.
func TestKVTypesGetTheirKLD(t *testing.T) {
	loc := llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")
	plan := filepath.Join(dir, "kv.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "kv f16 vs q8_0",
  "models": [{"id": "medium", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 256], "n_prompt": [32], "n_gen": [16], "reps": 3, "threads": [1],
           "kv_types": [{"k": "f16", "v": "f16"}, {"k": "q8_0", "v": "q8_0"}]},
  "split": "per_depth",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
  "kv_quality": {"kld_mean_max": 1e-9}
}`, ref, mediumSHA)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("study", "run", plan, "--notebook", nb, "--llama-dir", loc.Dir)
	// The gate's limit, 1e-9, is below any KLD q8_0 gives: it fails, and says so.
	if code != 0 || !strings.Contains(out, "kv quality medium: q8_0/q8_0 against f16: mean KLD ") || !strings.Contains(out, "; gate (mean KLD <= 1e-09): kv:kld_mean_above_maximum") {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	code, js, errOut := runCLI("study", "show", "1", "--notebook", nb, "--json")
	var rep struct {
		Results []struct {
			Model, Test, Config string
			Depth               int64
			Mean                float64 `json:"mean_ts"`
		} `json:"results"`
		KV []struct {
			Model, KV, Leg, Gate string
			MeanKLD              float64 `json:"mean_kld"`
			Speed                []struct {
				Test  string
				Depth int64
				Ratio float64
			}
		} `json:"kv_quality"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil || len(rep.KV) != 1 {
		t.Fatalf("show --json: %d %s %s", code, js, errOut)
	}
	q := rep.KV[0]
	if q.Model != "medium" || q.KV != "q8_0/q8_0" || q.MeanKLD <= 0 || q.MeanKLD > 0.1 || len(q.Speed) != 2 || !strings.HasPrefix(q.Leg, "kv-quality/medium/q8_0-q8_0") || q.Gate != "kv:kld_mean_above_maximum" {
		t.Fatalf("kv quality %+v", q)
	}
	for _, s := range q.Speed {
		var f16, q8 float64
		for _, c := range rep.Results {
			if c.Test == s.Test && c.Depth == s.Depth {
				switch {
				case strings.Contains(c.Config, "kv-f16/f16"):
					f16 = c.Mean
				case strings.Contains(c.Config, "kv-q8_0/q8_0"):
					q8 = c.Mean
				}
			}
		}
		if f16 == 0 || q8 == 0 || s.Ratio != q8/f16 {
			t.Errorf("d%d %s: ratio %v, cells q8_0 %v / f16 %v", s.Depth, s.Test, s.Ratio, q8, f16)
		}
	}
	_, text, _ := runCLI("study", "show", "1", "--notebook", nb)
	if !strings.Contains(text, "KV cache types: speed against quality") || !strings.Contains(text, "medium q8_0/q8_0: ") || !strings.Contains(text, "mean KLD ") {
		t.Errorf("show:\n%s", text)
	}
	// A second run has nothing left: no check runs again.
	if code, out, _ := runCLI("study", "run", "1", "--notebook", nb, "--llama-dir", loc.Dir); code != 0 || strings.Contains(out, "kv quality") {
		t.Errorf("second run: %d %s", code, out)
	}
	bundle := filepath.Join(dir, "receipt")
	if code, _, errOut := runCLI("receipt", "1", "--notebook", nb, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if !strings.Contains(string(md), "## KV cache types: speed against quality") || !strings.Contains(string(md), `| medium | q8\_0/q8\_0 | `) ||
		!strings.Contains(string(md), `kv-quality/medium/q8\_0-q8\_0`) || !strings.Contains(string(md), `kv:kld\_mean\_above\_maximum`) {
		t.Errorf("receipt.md lacks the KV quality table:\n%s", md)
	}
}

// TestQuantLadderWithImatrix: a ladder whose plan names an importance matrix makes it once with
// llama-imatrix on the reference (a leg), quantizes with it (Q4_0 then differs from the plain
// Q4_0 of the same build, testdata/models/medium-llama-q4_0.gguf), records its SHA-256 in each
// candidate and the receipt, and reuses it on the next run; without one, a type that needs it
// (IQ2_XS) is refused at validation.
func TestQuantLadderWithImatrix(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	plainQ4 := sha256File(t, llamatest.Model(t, "medium-llama-q4_0.gguf"))
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")

	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q4_0", "IQ2_XS"}, 4)
	if code, _, errOut := runCLI("study", "validate", plan); code != 2 || !strings.Contains(errOut, "IQ2_XS needs an importance matrix") {
		t.Fatalf("IQ2_XS without a matrix: %d %s", code, errOut)
	}
	plan = writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q4_0"}, 4)
	editPlan(t, plan, map[string]any{"predictions": nil, "memory_ctx": 2048,
		"imatrix": map[string]any{"calibration": map[string]any{"path": corpusPath(), "sha256": corpusSHA}, "ctx": 128, "chunks": 4}})
	code, out, errOut := runCLI("study", "run", plan, "--notebook", nb)
	if code != 0 || !strings.Contains(out, "study 1 complete") || !strings.Contains(errOut+out, "imatrix: made in") {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	code, js, errOut := runCLI("study", "show", "1", "--notebook", nb, "--json")
	var res quant.Result
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil || len(res.Records) != 1 {
		t.Fatalf("show --json: %d %s %s", code, js, errOut)
	}
	r := res.Records[0]
	cache := filepath.Join(dir, "data", "sparkbench", "quant-cache")
	mats, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	var matSHA string
	for _, f := range mats {
		var d struct{ Type, SHA256 string }
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &d) == nil && d.Type == "imatrix" {
			matSHA = d.SHA256
		}
	}
	if matSHA == "" || r.Imatrix != matSHA || !slices.Contains(r.Quantize, "--imatrix") {
		t.Fatalf("the candidate's matrix %q, the cache's %q, argv %v", r.Imatrix, matSHA, r.Quantize)
	}
	if c := res.Candidates[0]; c.Projected == nil || c.Projected.Of != "host" || c.Projected.MiB <= 0 || !strings.Contains(c.Projected.Line, "projected to use") {
		t.Errorf("no memory projection: %+v", c.Projected)
	}
	if r.SHA256 == plainQ4 {
		t.Error("Q4_0 with an importance matrix is byte for byte the plain Q4_0: the matrix was not used")
	}
	bundle := filepath.Join(dir, "receipt")
	if code, _, errOut := runCLI("receipt", "1", "--notebook", nb, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if !strings.Contains(string(md), "Every candidate is quantized with an importance matrix") || !strings.Contains(string(md), "Projected MiB: llama-fit-params's projection at a context of 2048 tokens") || !strings.Contains(string(md), matSHA[:12]) {
		t.Errorf("receipt.md does not name the matrix:\n%s", md)
	}
	code, out, errOut = runCLI("study", "run", "1", "--notebook", nb)
	if code != 0 || !strings.Contains(errOut+out, "imatrix: reused") || !strings.Contains(out, "1 derived model(s) reused") {
		t.Fatalf("second run: %d\n%s\n%s", code, out, errOut)
	}
}

// TestQuantLadderKVTypes: a ladder with kv_types tries each quant with each KV cache type as
// its own candidate (one derived file for both), measures each pair's KLD and speed with that
// cache (-ctk/-ctv in its legs), and hands the pair off with its cache flags.
func TestQuantLadderKVTypes(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q4_0"}, 4)
	editPlan(t, plan, map[string]any{"predictions": nil, "kv_types": []map[string]string{{"k": "f16", "v": "f16"}, {"k": "q8_0", "v": "q8_0"}}})
	code, out, errOut := runCLI("study", "run", plan, "--notebook", nb)
	if code != 0 || !strings.Contains(out, "study 1 complete") {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	code, js, errOut := runCLI("study", "show", "1", "--notebook", nb, "--json")
	var res quant.Result
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil || len(res.Candidates) != 2 {
		t.Fatalf("show --json: %d %s %s", code, js, errOut)
	}
	f16, q8 := res.Records[0], res.Records[1]
	if res.Candidates[0].Type != "Q4_0/kv:f16" || res.Candidates[1].Type != "Q4_0/kv:q8_0" || f16.SHA256 != q8.SHA256 || f16.SHA256 == "" {
		t.Fatalf("candidates %s %s, files %s %s", res.Candidates[0].Type, res.Candidates[1].Type, f16.SHA256, q8.SHA256)
	}
	for _, r := range res.Records {
		if r.KLD == nil || len(r.Bench) != 4 || !strings.HasPrefix(r.Bench[0].Leg, "bench/"+r.Label()+"/d") {
			t.Errorf("%s not measured: %+v", r.Label(), r)
		}
	}
	// the q8_0 pair's legs ran with the cache flags
	code, legs, _ := runCLI("study", "show", "1", "--notebook", nb)
	if code != 0 || !strings.Contains(legs, "Q4_0/kv:q8_0") {
		t.Errorf("show:\n%s", legs)
	}
	cplan := filepath.Join(dir, "handoff", "capacity.json")
	if err := os.MkdirAll(filepath.Dir(cplan), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI("quant", "handoff", "1", "--out", cplan, "--notebook", nb); code != 0 {
		t.Fatalf("handoff: %d %s %s", code, out, errOut)
	}
	cb, _ := os.ReadFile(cplan)
	if !strings.Contains(string(cb), `"id": "q4_0-kv-q8_0"`) || !strings.Contains(string(cb), `"-ctk",`) || !strings.Contains(string(cb), `"q8_0"`) {
		t.Errorf("the hand-off lacks the q8_0 pair's cache flags:\n%s", cb)
	}
}
