package bundle

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/receipt/receipttest"
)

// seedBatchedMD is llama-batched-bench Markdown for the seed's q8 candidate: PP 512, TG 64,
// B 1, 2, 4, 8 with T = 1.6, 2.56, 2.5 and 5 s, so B×TG/T = 40, 50, 102.4 and 102.4 tok/s.
const seedBatchedMD = `main: n_kv_max = 8192, n_batch = 2048, n_ubatch = 512, flash_attn = 0, is_pp_shared = 0, n_gpu_layers = 0, n_threads = 4, n_threads_batch = 4

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|   512 |     64 |    1 |    576 |    1.000 |   512.00 |    0.600 |   106.67 |    1.600 |   360.00 |
|   512 |     64 |    2 |   1152 |    1.600 |   640.00 |    0.960 |   133.33 |    2.560 |   450.00 |
|   512 |     64 |    4 |   2304 |    1.500 |  1365.33 |    1.000 |   256.00 |    2.500 |   921.60 |
|   512 |     64 |    8 |   4608 |    3.000 |  1365.33 |    2.000 |   256.00 |    5.000 |   921.60 |
`

// seedBatchedJSONL is the q4 candidate's B=4 row as --output-format jsonl prints it: 256/2.
const seedBatchedJSONL = `{"n_kv_max": 8192, "n_batch": 2048, "n_ubatch": 512, "flash_attn": 0, "is_pp_shared": 0, "n_gpu_layers": 0, "n_threads": 4, "n_threads_batch": 4, "pp": 512, "tg": 64, "pl": 4, "n_kv": 2304, "t_pp": 1.200000, "speed_pp": 1706.666626, "t_tg": 0.800000, "speed_tg": 320.000000, "t": 2.000000, "speed": 1152.000000}
`

// TestCapacityBundleServerTax: a run folder with batched/q8-generic.txt (as capacity run
// --batched leaves it) and a jsonl file for the q4 candidate given to the export: both are raw
// files of the bundle, named in bundle.json, fingerprinted in study.json; receipt.md has the
// Server tax table (the seed's diagonal rates over B×TG/T: 35.10/40, 38.85/50, 84.94/102.4,
// 90.67/128), the definition and the --batched lines of the reproduction; verify passes, and
// a changed batched file fails it. A file that does not parse or a candidate not in the plan
// is refused.
func TestCapacityBundleServerTax(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if err := exec.Command("cp", "-r", seedDir, run).Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(run, "batched"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "batched", "q8-generic.txt"), []byte(seedBatchedMD), 0o644); err != nil {
		t.Fatal(err)
	}
	q4 := filepath.Join(t.TempDir(), "q4.jsonl")
	if err := os.WriteFile(q4, []byte(seedBatchedJSONL), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := CapacityOptions{Options: Options{Version: "sparkbench test"}, BenchTG: map[string]float64{"q8-generic": 41.2},
		Batched: map[string]string{"q4-kleidiai-tuned": q4}}
	files, err := Capacity(run, opt)
	if err != nil {
		t.Fatal(err)
	}
	if string(files["batched/q8-generic.txt"]) != seedBatchedMD || string(files["batched/q4-kleidiai-tuned.txt"]) != seedBatchedJSONL {
		t.Fatal("the batched-bench files are not in the bundle byte for byte")
	}
	if !bytes.Contains(files[receipt.FileIndex], []byte(`"batched":{"q4-kleidiai-tuned":"batched/q4-kleidiai-tuned.txt","q8-generic":"batched/q8-generic.txt"}`)) {
		t.Errorf("bundle.json: %s", files[receipt.FileIndex])
	}
	var res capacity.Result
	if err := json.Unmarshal(files[receipt.FileStudy], &res); err != nil {
		t.Fatal(err)
	}
	want := map[string][][3]float64{ // B, server rate (the seed's diagonal cells), batched rate
		"q8-generic":        {{1, 35.10, 40}, {2, 38.85, 50}, {4, 84.94, 102.4}},
		"q4-kleidiai-tuned": {{4, 90.67, 128}},
	}
	for _, c := range res.Candidates {
		st := c.ServerTax
		if st == nil || len(st.Points) != len(want[c.ID]) {
			t.Fatalf("%s: server tax %+v", c.ID, st)
		}
		for i, w := range want[c.ID] {
			p := st.Points[i]
			cell := *findCell(t, c, p.B).GenerationRate
			if p.B != int(w[0]) || math.Abs(p.ServerRate-w[1]) > 1e-9 || p.ServerRate != cell || math.Abs(p.BatchedRate-w[2]) > 1e-9 || p.Tax != cell/p.BatchedRate {
				t.Errorf("%s point %d: %+v, want B %g, %g / %g", c.ID, i, p, w[0], w[1], w[2])
			}
		}
	}
	if n := res.Candidates[0].ServerTax.Note; n != "not paired: B=8 (no cell P8/C8 in the study)" {
		t.Errorf("q8 note %q", n)
	}
	md := string(files[receipt.FileReceipt])
	for _, w := range []string{
		"## Server tax\n",
		"| Candidate | Server cell | llama-batched-bench | Server generation rate | Batched generation rate (B×TG/T) | Server tax |",
		"| Q8 generic reference | P4/C4 | B=4 (pp512+tg64) | 84.94 tok/s | 102.40 tok/s | 0.8295 |",
		"| Q8 generic reference | P1/C1 | B=1 (pp512+tg64) | 35.10 tok/s | 40.00 tok/s | 0.8775 |",
		"| Q4 with KleidiAI and 512-token micro-batch | P4/C4 | B=4 (pp512+tg64) | 90.67 tok/s | 128.00 tok/s | 0.7084 |",
		"`q8-generic`: not paired: B=8 (no cell P8/C8 in the study).",
		"- `server_tax`: cell generation rate at P = C = B / llama-batched-bench generation rate B×TG / T",
		"  --batched q4-kleidiai-tuned=batched/q4-kleidiai-tuned.txt \\\n  --batched q8-generic=batched/q8-generic.txt \\\n",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("receipt.md lacks %q", w)
		}
	}
	if _, probs := receipttest.Tables([]byte(md)); len(probs) > 0 {
		t.Errorf("malformed tables: %v", probs)
	}
	if bad := receipttest.CrossCheck([]byte(md), files[receipt.FileStudy]); len(bad) > 0 {
		t.Errorf("numbers not in study.json: %v", bad)
	}
	if rep := receipt.Verify(files, receipt.VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
	// A changed batched file: its checksum and the re-assembly both say so.
	bad := receipt.Files{}
	for k, v := range files {
		bad[k] = v
	}
	bad["batched/q8-generic.txt"] = bytes.Replace(files["batched/q8-generic.txt"], []byte("1.600 |   360.00"), []byte("1.500 |   384.00"), 1)
	rep := receipt.Verify(bad, receipt.VerifyOptions{HashPlots: true})
	found := false
	for _, p := range rep.Problems {
		found = found || p.File == "batched/q8-generic.txt"
	}
	if rep.OK() || !found {
		t.Errorf("a changed batched file verified: %v", rep.Problems)
	}
	// Refused: a file that is no batched-bench output, a candidate not in the plan.
	junk := filepath.Join(t.TempDir(), "junk.txt")
	_ = os.WriteFile(junk, []byte("no table here\n"), 0o644)
	for _, tc := range []struct {
		batched map[string]string
		want    string
	}{
		{map[string]string{"q4-kleidiai-tuned": junk}, "--batched q4-kleidiai-tuned: batched/q4-kleidiai-tuned.txt:1: no llama-batched-bench table"},
		{map[string]string{"q5": q4}, "--batched q5: not a candidate of this plan (q8-generic, q4-kleidiai-tuned)"},
	} {
		o := opt
		o.Batched = tc.batched
		if _, err := Capacity(run, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.batched, err, tc.want)
		}
	}
}

func findCell(t *testing.T, c capacity.CandidateResult, b int) *capacity.CellResult {
	t.Helper()
	for i := range c.Cells {
		if c.Cells[i].Slots == b && c.Cells[i].Clients == b {
			return &c.Cells[i]
		}
	}
	t.Fatalf("%s: no cell P%d/C%d", c.ID, b, b)
	return nil
}
