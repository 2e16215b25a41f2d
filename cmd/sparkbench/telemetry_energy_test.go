package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
	"sparkbench/store"
)

// fakeGPU is a sampler set with one fake NVML GPU drawing a constant 100 W and no energy
// counter (so its energy is integrated power), over an empty sysfs tree: the hardware this
// machine lacks.
func fakeGPU(t *testing.T) *live.Config {
	nv := &telemetrytest.NVML{Clock: telemetrytest.NewClock(), GPUs: []*telemetrytest.GPU{
		{Label: "Fake GPU", Load: func(float64) float64 { return 100 }, NoEnergyCounter: true}}}
	return &live.Config{Root: t.TempDir(), NvidiaSMI: "-", AMDSMI: "-", ROCmSMI: "-", NVML: nv}
}

// A throughput study with a telemetry block, run on the real llama-bench with a fake GPU
// sampler: study show gives every plan leg's energy (integrated, 100 W) and each cell's J per
// token, worked by hand from the rows (100 W × llama-bench's test time / tokens), a prediction
// on J per generated token is answered from it, and the receipt carries the energy table, the
// samplers in its methodology and each sampled leg's telemetry.jsonl, and verifies byte for
// byte; a changed sample is caught.
func TestThroughputEnergyReceiptWithFakeSampler(t *testing.T) {
	llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nbPath := filepath.Join(dir, "nb.db")
	file := writePlan(t, dir, "energy", tiny, moe, 2, 16, `, "telemetry": {"interval_ms": 20},
  "predictions": [{"id": "E1", "text": "tiny tg16 at d0 costs at most 1000 J per generated token", "kind": "band",
    "about": {"figure": "j_per_token", "model": "tiny", "test": "tg16", "depth": 0}, "hi": 1000}]`)
	code, out, errOut := runCLI("study", "register", file, "--notebook", nbPath)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	id := registeredID(t, out)
	sid, _ := strconv.ParseInt(id, 10, 64)
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := workbench.RunThroughput(context.Background(), nb, workbench.ThroughputRunRequest{ID: sid, Telemetry: fakeGPU(t)})
	if err != nil || sum.Status != study.StatusComplete {
		t.Fatalf("run: %+v %v", sum, err)
	}
	checkSamplersJournaled(t, nb, sid, study.NoteRun)
	rows, err := store.StudyRecorder{N: nb}.Rows(context.Background(), sid)
	nb.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI("study", "show", id, "--json", "--notebook", nbPath)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	var rep study.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	checkEnergyByHand(t, &rep, rows)
	code, text, _ := runCLI("study", "show", id, "--notebook", nbPath)
	if code != 0 || !strings.Contains(text, "energy per token (J per prompt token for pp, per generated token for tg)") ||
		!strings.Contains(text, "nvml GPU0") || !strings.Contains(text, "(integrated)") {
		t.Fatalf("study show text:\n%s", text)
	}
	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--notebook", nbPath); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Energy", "| Model | Test | Depth | J/token | tokens/J | Mean W | Source |",
		"samplers that read: `nvml (integrated)`", "- `j_per_token`: Joules per token of a row",
		"![energy-tg](plots/energy-tg.png)", "![energy-pp](plots/energy-pp.png)"} { // energy per token against depth: only a sampled study's receipt draws it
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	tel, _ := filepath.Glob(filepath.Join(bundle, "legs", "*", "telemetry.jsonl"))
	if len(tel) != len(rep.Energy.Legs) {
		t.Fatalf("%d telemetry.jsonl files for %d sampled legs: %v", len(tel), len(rep.Energy.Legs), tel)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	// sparkbench plot draws the same chart from the notebook.
	energyPNG := filepath.Join(dir, "energy.png")
	if code, out, errOut := runCLI("plot", id, "--kind", "energy", "--metric", "tg", "--out", energyPNG, "--notebook", nbPath); code != 0 || !strings.Contains(out, "wrote "+energyPNG) {
		t.Fatalf("plot --kind energy: %d %s %s", code, out, errOut)
	}
	b, _ := os.ReadFile(tel[0])
	if err := os.WriteFile(tel[0], []byte(strings.Replace(string(b), `"value":100`, `"value":90`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI("verify", bundle); code == 0 || !strings.Contains(out+errOut, "telemetry.jsonl") {
		t.Fatalf("a changed sample verified: %d %s", code, out)
	}
}

// checkEnergyByHand holds the report's energy against the rows: every plan leg sampled by
// the one fake GPU (integrated, 100 W), and each cell's J per token 100 W × the row's
// samples_ns / (tokens × repetitions), its tokens per J the inverse; E1 answered from it.
func checkEnergyByHand(t *testing.T, rep *study.Report, rows []study.StoredRow) {
	t.Helper()
	e := rep.Energy
	planLegs := 0
	for _, l := range rep.Legs {
		if l.Role == study.RoleLeg && l.ID != 0 {
			planLegs++
		}
	}
	// A loaded machine may flag a leg (its CV above the gate): its rows are not results, and
	// it still has its energy.
	if e == nil || len(e.Legs) != planLegs || planLegs < 6 || len(e.Cells) != len(rep.Results) || len(e.Cells) == 0 {
		t.Fatalf("energy %+v for %d results", e, len(rep.Results))
	}
	for _, l := range e.Legs {
		if !l.HasEnergy || l.Method != "integrated" || len(l.Devices) != 1 || l.Devices[0].Device != "GPU0" ||
			math.Abs(l.EnergyJ-100*l.Seconds) > 1e-3 || l.Devices[0].PeakW != 100 || l.Devices[0].AvgW < 99.99 {
			t.Errorf("leg %s: %+v", l.Label, l)
		}
	}
	byRef := map[string]study.StoredRow{}
	for _, r := range rows {
		byRef[study.RowRef(r.LegID, r.Seq)] = r
	}
	e1 := rep.Scoreboard[0]
	if e1.Prediction != "E1" {
		t.Fatalf("scoreboard %+v", rep.Scoreboard)
	}
	answered := false
	for _, c := range e.Cells {
		r := byRef[c.Source].Result
		var ns int64
		for _, x := range r.SamplesNs {
			ns += x
		}
		want := 100 * float64(ns) / 1e9 / float64((r.NPrompt+r.NGen)*int64(len(r.SamplesNs)))
		if c.MeanW != 100 || math.Abs(c.JPerToken-want) > 1e-9 || math.Abs(c.TokensPerJ*want-1) > 1e-5 {
			t.Errorf("cell %s %s d%d: %g J/token (want %g), %g tokens/J, %g W", c.Model, c.Test, c.Depth, c.JPerToken, want, c.TokensPerJ, c.MeanW)
		}
		if c.Model == "tiny" && c.Test == "tg16" && c.Depth == 0 {
			answered = true
			if e1.Verdict.Outcome != study.Hit || e1.Verdict.Value == nil || *e1.Verdict.Value != c.JPerToken {
				t.Errorf("E1: %+v, cell %g", e1.Verdict, c.JPerToken)
			}
		}
	}
	if !answered && e1.Verdict.Outcome != study.Unresolvable { // its leg flagged: no result row to read
		t.Errorf("E1 without its cell: %+v", e1.Verdict)
	}
}
