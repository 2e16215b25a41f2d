package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// A capacity study with a telemetry block, run on the real llama-server with a fake 100 W GPU
// sampler: every pass of every cell has its energy (integrated, mean 100 W) and J per
// generated token = 100 W / the pass's generation rate, the cell the median over passes;
// every cell passes the machine-state gate; `capacity show` prints J/token per cell; the
// receipt has the energy tables and the telemetry methodology line and verifies byte for
// byte; a changed telemetry sample is caught.
func TestCapacityEnergyReceiptWithFakeSampler(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := sampledCapacityPlan(t, dir, "capacity energy")
	nbPath := filepath.Join(dir, "notebook.db")
	if code, stdout, stderr := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: exit %d\n%s%s", code, stdout, stderr)
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := workbench.RunCapacity(context.Background(), nb, workbench.CapacityRunRequest{ID: 1, Telemetry: fakeGPU(t)})
	checkSamplersJournaled(t, nb, 1, capacity.NoteRun)
	nb.Close()
	if err != nil || sum == nil || sum.Status != capacity.StatusComplete || sum.Report == nil || sum.Report.Result == nil {
		t.Fatalf("run: %+v %v", sum, err)
	}
	cells := 0
	for _, c := range sum.Report.Result.Candidates {
		for _, cell := range c.Cells {
			cells++
			checkCellEnergy(t, cell)
		}
	}
	if cells != 2 {
		t.Fatalf("%d cells, want 2 (P1/C1, P2/C1)", cells)
	}
	code, text, _ := runCapacity("show", "1", "--notebook", nbPath)
	if code != 0 || strings.Count(text, " J/token  ") != 2 {
		t.Errorf("capacity show: exit %d\n%s", code, text)
	}
	bundle := filepath.Join(dir, "bundle")
	defer func() {
		if t.Failed() {
			out, _ := exec.Command("find", bundle).Output()
			md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
			t.Logf("bundle:\n%s\n%s", out, md)
		}
	}()
	if code, out, errOut := runCLI("receipt", "1", "--out", bundle, "--notebook", nbPath); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Energy", "| Candidate | Cell / pass | Energy | Window | Mean W | J/generated token | tokens/J | Cell median J/token |",
		"P1/C1 forward", "P2/C1 reverse", "nvml GPU0", "- Telemetry: each server lifetime sampled every `20` ms; machine-state gates on each cell's window: thermal:throttled",
		"- `machine_gate`: machine\\_state: in each sampled pass", "  --telemetry forward/dense/p1=runs/forward/dense/p1/telemetry.jsonl \\"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	reproduceCapacity(t, bundle, string(md))
	tel, _ := filepath.Glob(filepath.Join(bundle, "runs", "*", "*", "*", "telemetry.jsonl"))
	if len(tel) != 4 {
		t.Fatalf("%d telemetry.jsonl in the bundle, want one per server lifetime (4)", len(tel))
	}
	raw, _ := os.ReadFile(tel[0])
	changed := strings.Replace(string(raw), `"value":100`, `"value":101`, 1)
	if changed == string(raw) {
		t.Fatalf("no 100 W reading to change in %s", tel[0])
	}
	if err := os.WriteFile(tel[0], []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI("verify", bundle); code == 0 {
		t.Errorf("verify accepted a changed telemetry sample:\n%s", out)
	}
}

// checkCellEnergy: each pass integrated at a mean of 100 W, J per generated token = 100 W /
// its rate, the cell's figure their median, and the machine-state gate passed.
func checkCellEnergy(t *testing.T, cell capacity.CellResult) {
	t.Helper()
	var per []float64
	for _, p := range cell.Passes {
		e := p.Energy
		if e == nil || p.GenerationRate == nil {
			t.Fatalf("P%d/C%d %s: no energy (%+v) or no rate", cell.Slots, cell.Clients, p.Pass, e)
		}
		if e.Method != "integrated" || math.Abs(e.MeanW-100) > 0.5 {
			t.Errorf("P%d/C%d %s: %s at %.3f W, want integrated at 100 W", cell.Slots, cell.Clients, p.Pass, e.Method, e.MeanW)
		}
		if want := e.MeanW / *p.GenerationRate; math.Abs(e.JPerToken-want) > 1e-6*want {
			t.Errorf("P%d/C%d %s: %g J/token, want %g (mean W / rate)", cell.Slots, cell.Clients, p.Pass, e.JPerToken, want)
		}
		per = append(per, e.JPerToken)
	}
	if cell.JPerGeneratedToken == nil || math.Abs(*cell.JPerGeneratedToken-(per[0]+per[1])/2) > 1e-9 {
		t.Errorf("P%d/C%d: cell figure %v, passes %v", cell.Slots, cell.Clients, cell.JPerGeneratedToken, per)
	}
	found := false
	for _, g := range cell.Checks {
		if g.Gate == "machine_state" {
			found = true
			if !g.Passed || g.Detail != "no gate fired in 2 sampled pass(es)" {
				t.Errorf("P%d/C%d machine_state: %+v", cell.Slots, cell.Clients, g)
			}
		}
	}
	if !found {
		t.Errorf("P%d/C%d: no machine_state check: %+v", cell.Slots, cell.Clients, cell.Checks)
	}
}

// reproduceCapacity runs the receipt's own `capacity assemble` command in the bundle and
// requires the reproduced study.json to be study.json byte for byte.
func reproduceCapacity(t *testing.T, bundle, md string) {
	t.Helper()
	_, cmd, ok := strings.Cut(md, "sparkbench capacity assemble \\\n")
	cmd, _, ok2 := strings.Cut(cmd, "cmp study.json")
	if !ok || !ok2 {
		t.Fatalf("no capacity assemble command in the receipt")
	}
	var args []string
	for _, f := range strings.Fields(strings.ReplaceAll(cmd, "\\\n", " ")) {
		if strings.HasPrefix(f, "--") || !strings.Contains(f, "=") && !strings.HasSuffix(f, ".json") {
			args = append(args, f)
			continue
		}
		if k, v, kv := strings.Cut(f, "="); kv && !strings.HasSuffix(k, ".json") {
			f = k + "=" + filepath.Join(bundle, v)
		} else {
			f = filepath.Join(bundle, f)
		}
		args = append(args, f)
	}
	if code, out, errOut := runCapacity(append([]string{"assemble"}, args...)...); code != 0 {
		t.Fatalf("capacity assemble %v: %d %s %s", args, code, out, errOut)
	}
	got, _ := os.ReadFile(filepath.Join(bundle, "study.reproduced.json"))
	want, _ := os.ReadFile(filepath.Join(bundle, "study.json"))
	if len(got) == 0 || string(got) != string(want) {
		t.Errorf("the receipt's assemble command reproduces %d bytes, study.json has %d, not byte for byte", len(got), len(want))
	}
	_ = os.Remove(filepath.Join(bundle, "study.reproduced.json"))
}

// checkSamplersJournaled: the run's start note records what sampler discovery found: the fake
// NVML GPU available, the fake tree's RAPL not, with its reason.
func checkSamplersJournaled(t *testing.T, nb *store.Notebook, id int64, kind string) {
	t.Helper()
	es, err := nb.Journal(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind != kind {
			continue
		}
		var p struct {
			Samplers []struct {
				Source    string `json:"source"`
				Available bool   `json:"available"`
				Reason    string `json:"reason"`
			} `json:"samplers"`
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, s := range p.Samplers {
			got[s.Source] = fmt.Sprint(s.Available, " ", s.Reason)
		}
		if !strings.HasPrefix(got["nvml"], "true") || !strings.HasPrefix(got["rapl"], "false ") || len(got["rapl"]) < 10 {
			t.Errorf("%s samplers: %v", kind, got)
		}
		return
	}
	t.Errorf("no %s entry in the journal", kind)
}

// sampledCapacityPlan is smallCapacityPlan with a telemetry block (20 ms) and both passes.
func sampledCapacityPlan(t *testing.T, dir, name string) string {
	t.Helper()
	plan := smallCapacityPlan(t, dir, name)
	var m map[string]any
	b, _ := os.ReadFile(plan)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["telemetry"] = map[string]any{"interval_ms": 20}
	m["passes"] = []string{"forward", "reverse"}
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return plan
}
