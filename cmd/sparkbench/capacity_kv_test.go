package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
)

// TestCapacityKVArmsGetTheirKLD: a concurrency study whose arms are the f16 and q8_0 KV caches
// of the medium model (one cell each, P1/C1, one pass) gets, after its cells, the KL divergence
// of q8_0 from f16 on that model: run, capacity show and the receipt say it beside the speed
// change, the plan's gate (a limit below any KLD q8_0 gives) fails with its code, and the
// receipt verifies. A build without llama-perplexity leaves the check to the next run.
func TestCapacityKVArmsGetTheirKLD(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "medium-llama-f16.gguf")
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")
	pp := filepath.Join(dir, "prompt-plan.json")
	if err := os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox jumps over the lazy dog."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{
  "schema": "sparkbench.concurrency/v1", "name": "kv f16 vs q8_0 (CLI test)", "arm_axis": "kv_cache_type",
  "candidates": [
    {"id": "f16", "label": "medium f16 KV", "arm": "f16", "model": {"path": %[1]q, "sha256": %[2]q},
     "server_flags": ["-t", "1", "-fa", "on"]},
    {"id": "q8", "label": "medium q8_0 KV", "arm": "q8_0", "model": {"path": %[1]q, "sha256": %[2]q},
     "server_flags": ["-t", "1", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0"]}
  ],
  "slots": [1], "passes": ["forward"],
  "warmups": 1, "measured": 2, "n_predict": 8, "ctx_per_slot": 256, "seed": 42,
  "prompt_plan": {"path": "prompt-plan.json", "sha256": %[3]q},
  "limits": {"ttft_ms_p95_max": 60000, "e2e_ms_p95_max": 120000, "peak_rss_mib_max": 16384},
  "kv_quality": {"kld_mean_max": 1e-9}
}`, model, mediumSHA, capacitySHA(t, pp))), 0o644); err != nil {
		t.Fatal(err)
	}
	// First with a build that has no llama-perplexity (the same binaries but that one): the
	// cells are measured and assembled, the check is said not to have run, and show says so.
	noPPL := filepath.Join(dir, "no-perplexity")
	if err := os.Mkdir(noPPL, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(loc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "llama-perplexity" {
			if err := os.Symlink(filepath.Join(loc.Dir, e.Name()), filepath.Join(noPPL, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, out, errOut := runCapacity("run", plan, "--notebook", nb, "--llama-dir", noPPL)
	if code != 0 || !strings.Contains(out, "  q8 (q8_0/q8_0 KV) vs f16: KL divergence not checked (run the study again to check it)") ||
		!strings.Contains(errOut, "kv quality: not checked: ") || !strings.Contains(errOut, "has no executable llama-perplexity") {
		t.Fatalf("run without llama-perplexity: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, text, _ := runCapacity("show", "1", "--notebook", nb); !strings.Contains(text, "  q8: KL divergence not checked yet (`sparkbench capacity run 1` checks it)") {
		t.Errorf("show before the check:\n%s", text)
	}
	// The next run of the complete study runs the check alone.
	code, out, errOut = runCapacity("run", "1", "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 || strings.Contains(errOut, "server lifetime") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("run:\n%s", out)
	// The gate's limit, 1e-9, is below any KLD q8_0 gives: it fails, and says so.
	for _, w := range []string{"study 1 KV cache types: speed against quality", "  q8 (q8_0/q8_0 KV) vs f16: selected rate ", "per-stream rate at P1/C1 ",
		"; mean KLD ", "; gate (mean KLD <= 1e-09): kv:kld_mean_above_maximum — leg kv-quality/medium-llama-f16/q8_0-q8_0"} {
		if !strings.Contains(out, w) {
			t.Errorf("run stdout lacks %q", w)
		}
	}
	if !strings.Contains(errOut, "kv quality medium-llama-f16: q8_0/q8_0 against f16: mean KLD ") {
		t.Errorf("run stderr lacks the check's line:\n%s", errOut)
	}

	code, js, errOut := runCapacity("show", "1", "--notebook", nb, "--json")
	var rep struct {
		Legs     []struct{ Label string }        `json:"legs"`
		KVLegs   []struct{ Label, Class string } `json:"kv_legs"`
		Envelope []struct {
			Candidate string
			Selected  *struct {
				GenerationRate float64 `json:"generation_rate"`
			} `json:"selected"`
		} `json:"envelope"`
		KV []struct {
			Candidate, Base, Model, KV, Leg, Gate string
			MeanKLD                               float64 `json:"mean_kld"`
			Speed                                 []struct {
				Figure string
				Ratio  float64
			}
		} `json:"kv_quality"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil || len(rep.KV) != 1 || len(rep.Envelope) != 2 {
		t.Fatalf("show --json: exit %d\n%s\n%s", code, js, errOut)
	}
	q := rep.KV[0]
	// (A llama-perplexity run that lost its statistics block is run again, about one in
	// fifteen here: its leg is then "… (attempt 2)".)
	if q.Candidate != "q8" || q.Base != "f16" || q.KV != "q8_0/q8_0" || q.MeanKLD <= 0 || q.MeanKLD > 0.1 || q.Gate != "kv:kld_mean_above_maximum" ||
		!kvLegIs(q.Leg, "kv-quality/medium-llama-f16/q8_0-q8_0") || len(q.Speed) != 2 || q.Speed[0].Figure != "selected_rate" || q.Speed[1].Figure != "per_stream_rate" {
		t.Fatalf("kv quality %+v", q)
	}
	if f, q8 := rep.Envelope[0].Selected, rep.Envelope[1].Selected; f == nil || q8 == nil || q.Speed[0].Ratio != q8.GenerationRate/f.GenerationRate {
		t.Errorf("selected rate ratio %v, envelope %+v", q.Speed[0].Ratio, rep.Envelope)
	}
	// The check's legs are listed apart from the server lifetimes.
	kvOK := len(rep.KVLegs) >= 2 && rep.KVLegs[len(rep.KVLegs)-1].Class == "ok" &&
		kvLegIs(rep.KVLegs[len(rep.KVLegs)-1].Label, "kv-quality/medium-llama-f16/q8_0-q8_0")
	for _, l := range rep.KVLegs {
		kvOK = kvOK && (kvLegIs(l.Label, "kv-quality/medium-llama-f16/f16 base") || kvLegIs(l.Label, "kv-quality/medium-llama-f16/q8_0-q8_0"))
	}
	if len(rep.Legs) != 2 || !kvOK || !kvLegIs(rep.KVLegs[0].Label, "kv-quality/medium-llama-f16/f16 base") {
		t.Errorf("legs %+v, kv legs %+v", rep.Legs, rep.KVLegs)
	}
	for _, verb := range [][]string{{"capacity", "show", "1"}} {
		_, text, e := runCLI(append(verb, "--notebook", nb)...)
		text += e
		if !strings.Contains(text, "server lifetimes (2):") || !strings.Contains(text, "KV cache types: speed against quality") ||
			!strings.Contains(text, "  q8 (q8_0/q8_0 KV) vs f16: selected rate ") || !strings.Contains(text, "kv:kld_mean_above_maximum") {
			t.Errorf("%s:\n%s", strings.Join(verb, " "), text)
		}
	}
	// A second run has nothing left: refused as complete, no check runs again.
	if code, out, errOut := runCapacity("run", "1", "--notebook", nb, "--llama-dir", loc.Dir); code != 1 || strings.Contains(out+errOut, "kv quality") || !strings.Contains(errOut, "complete") {
		t.Errorf("second run: exit %d\n%s\n%s", code, out, errOut)
	}

	bundle := filepath.Join(dir, "receipt")
	if code, _, errOut := runCLI("receipt", "1", "--notebook", nb, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	for _, w := range []string{"## KV cache types: speed against quality", "| q8 | q8\\_0/q8\\_0 | f16 | selected rate ", "per-stream rate at P1/C1 ",
		"kv-quality/medium-llama-f16/q8\\_0-q8\\_0", " (lines ", "kv:kld\\_mean\\_above\\_maximum", "Gate (mean KLD ≤ 1e-09)"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("receipt.md lacks %q", w)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("receipt.md:\n%s", md)
	}
}

// kvLegIs: label is the check's leg want, or one of its later attempts ("want (attempt N)").
func kvLegIs(label, want string) bool {
	if label == want {
		return true
	}
	rest, ok := strings.CutPrefix(label, want+" (attempt ")
	return ok && strings.HasSuffix(rest, ")") && len(rest) > 1
}
