package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
)

// TestServingPoissonExampleEndToEnd runs docs/examples/serving-poisson.json (the medium model,
// Poisson arrivals at three rates and a max-rate search) by the usual verbs: capacity validate,
// register and run through the notebook, receipt, verify, and the three serving plots from the
// study. The receipt lists every probe (sweep and search), the journal carries the probes'
// validity checks as a capacity.validity entry, and a bundle with one changed byte is refused.
func TestServingPoissonExampleEndToEnd(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	examples := filepath.Join(llamatest.RepoRoot(), "docs", "examples")
	llamatest.Model(t, "medium-llama-q8_0.gguf")
	b, err := os.ReadFile(filepath.Join(examples, "serving-poisson.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The example's relative paths, made absolute so the plan runs from a scratch folder.
	models := filepath.Join(llamatest.RepoRoot(), "testdata", "models") + "/"
	s := strings.ReplaceAll(string(b), `"../../testdata/models/`, `"`+models)
	s = strings.ReplaceAll(s, `"serving-prompts.json"`, `"`+filepath.Join(examples, "serving-prompts.json")+`"`)
	// The load generator runs inside the test binary (race detector on) beside the other test
	// packages on a 2-core machine: a send 10 ms late (the default slack) is the harness, not
	// the product, and would fail every sweep probe as client_behind_schedule so no search
	// runs. The client's own accuracy is measured apart (BenchmarkScheduleAccuracy).
	if !strings.Contains(s, `"requests": 16,`) {
		t.Fatal("the example's serving block changed: update this test")
	}
	s = strings.Replace(s, `"requests": 16,`, `"requests": 16, "schedule_slack_ms": 100,`, 1)
	plan := filepath.Join(dir, "serving-poisson.json")
	if err := os.WriteFile(plan, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	nb := filepath.Join(dir, "notebook.db")
	for _, verb := range [][]string{{"validate", plan}, {"register", plan, "--notebook", nb}, {"run", "1", "--notebook", nb}} {
		if code, out, errOut := runCapacity(verb...); code != 0 {
			t.Fatalf("capacity %s: %d\n%s\n%s", verb[0], code, out, errOut)
		}
	}
	out := filepath.Join(dir, "receipt")
	if code, stdout, errOut := runCLI("receipt", "1", "--out", out, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d\n%s\n%s", code, stdout, errOut)
	}
	if code, stdout, errOut := runCLI("verify", out); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, stdout, errOut)
	}
	files, err := bundle.ReadDir(out, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var res capacity.Result
	if err := json.Unmarshal(files[receipt.FileStudy], &res); err != nil {
		t.Fatalf("study.json: %v", err)
	}
	sv := res.Candidates[0].Serving
	if len(sv) != 1 || sv[0].Search == nil {
		t.Fatalf("serving results %+v", sv)
	}
	md := string(files[receipt.FileReceipt])
	probes := sv[0].Probes
	// The sweep climbs 2, 4, 8 req/s until a rate is not sustained (the server's completions
	// fall behind its arrivals: rate:not_sustained); the rates above it are skipped, and the
	// search follows. How far it climbs depends on how busy the machine is.
	sweepRates, sweep := []float64{2, 4, 8}, 0
	for _, pr := range probes {
		if pr.Kind == capacity.ProbeSweep {
			sweep++
		}
	}
	st := sv[0].Saturation
	if sweep == 0 || st == nil || st.MinRequests != capacity.DefaultSustainMinRequests || st.MinSeconds != capacity.DefaultSustainMinSeconds {
		t.Fatalf("probes %+v, saturation %+v: want the sweep first and the knee under the default window", probes, st)
	}
	for i, pr := range probes[:sweep] {
		if pr.OfferedRate != sweepRates[i] || pr.Requests != max(32, int(math.Ceil(pr.OfferedRate*10))+1) {
			t.Errorf("sweep probe %d at %g req/s with %d requests: want %g req/s and the default window", i, pr.OfferedRate, pr.Requests, sweepRates[i])
		}
		if pr.Passed && !pr.Sustain.Sustained {
			t.Errorf("sweep probe %d at %g req/s passed unsustained", i, pr.OfferedRate)
		}
	}
	if last := probes[sweep-1]; sweep < 3 && (last.Sustain.Sustained || !slices.Equal(st.SkippedSweepRates, sweepRates[sweep:])) {
		t.Errorf("the sweep stopped at %g req/s (sustain %+v), skipping %v: want it stopped by an unsustained rate, the rest skipped", last.OfferedRate, last.Sustain, st.SkippedSweepRates)
	}
	if !strings.Contains(string(files[receipt.FileReceipt]), "**Knee:** ") || !strings.Contains(string(files[receipt.FileReceipt]), "**Sustained rates:**") {
		t.Error("receipt.md has no knee or sustained-rates section")
	}
	t.Logf("knee: %s", capacity.SaturationLine(st, "req/s"))
	// capacity show, text and --json: every probe, the search, the knee and the harness floor.
	code, text, errOut := runCapacity("show", "1", "--notebook", nb)
	if code != 0 {
		t.Fatalf("capacity show: %d %s", code, errOut)
	}
	for _, want := range []string{"open-loop serving", "harness floor: ", "search: ", "knee: "} {
		if !strings.Contains(text, want) {
			t.Errorf("capacity show lacks %q:\n%s", want, text)
		}
	}
	for _, pr := range probes {
		if !strings.Contains(text, fmt.Sprintf("#%-2d %-6s offered %8s req/s", pr.Probe, pr.Kind, strconv.FormatFloat(pr.OfferedRate, 'f', -1, 64))) {
			t.Errorf("capacity show lacks probe %d (%s, %g req/s):\n%s", pr.Probe, pr.Kind, pr.OfferedRate, text)
		}
	}
	code, js, errOut := runCapacity("show", "1", "--json", "--notebook", nb)
	var shown capacity.Report
	if code != 0 || json.Unmarshal([]byte(js), &shown) != nil || len(shown.Serving) != 1 || len(shown.Serving[0].Probes) != len(probes) ||
		shown.Serving[0].Search == nil || shown.Serving[0].Saturation == nil || shown.HarnessFloor == nil {
		t.Errorf("capacity show --json: %d %s: want every probe, the search, the knee and the harness floor\n%s", code, errOut, js)
	}
	for _, pr := range probes { // every probe, sweep and search, is a row of the receipt
		if row := rowOf([]byte(md), fmt.Sprintf("| %d | %s |", pr.Probe, pr.Kind)); !strings.Contains(row, "`"+pr.ScheduleSHA256[:12]+"`") {
			t.Errorf("probe %d (%g req/s, %s): its schedule is not in receipt.md", pr.Probe, pr.OfferedRate, pr.Kind)
		}
	}
	if q := sv[0].Search; q.Converged && q.MaxRate != nil && q.LowestFail != nil && (*q.LowestFail-*q.MaxRate)/(*q.MaxRate) > 0.25 {
		t.Errorf("converged, but the bracket [%g, %g] is wider than the tolerance 0.25", *q.MaxRate, *q.LowestFail)
	} else if !q.Converged && !strings.Contains(md, q.Note) {
		t.Errorf("not converged and the receipt does not say why (%q)", q.Note)
	}
	// The search chart exists when the search made probes of its own (on a busy machine the
	// server may not sustain even the search's lo, measured by the sweep already).
	searched := len(sv[0].Search.Probes) > 0
	for _, name := range []string{"plots/serving-latency.png", "plots/serving-goodput.png", "plots/serving-search.png"} {
		if len(files[name]) == 0 && (searched || name != "plots/serving-search.png") {
			t.Errorf("the bundle has no %s", name)
		}
	}
	// The validity entry: one per probe, and read as one sentence.
	var validity []byte
	sc := bufio.NewScanner(bytes.NewReader(files[receipt.FileJournal]))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e struct {
			Kind    string          `json:"kind"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == capacity.NoteValidity {
			validity = e.Payload
		}
	}
	var v capacity.ValidityNote
	if err := json.Unmarshal(validity, &v); err != nil || len(v.Probes) != len(probes) {
		t.Fatalf("capacity.validity entry %s (%v): want one per probe (%d)", validity, err, len(probes))
	}
	if got := workbench.JournalSentence(capacity.NoteValidity, validity); !strings.HasPrefix(got, "serving validity over ") {
		t.Errorf("validity sentence %q", got)
	} else {
		t.Logf("journal: %s", got)
	}
	for _, k := range []string{"serving_latency", "serving_goodput", "serving_search"} {
		code, stdout, errOut := runCLI("plot", "1", "--kind", k, "--out", filepath.Join(dir, k+".png"), "--notebook", nb)
		switch {
		case k == "serving_search" && !searched:
			if code == 0 || !strings.Contains(errOut, "the max-rate search made no probe of its own ("+sv[0].Search.Note+")") {
				t.Errorf("plot --kind %s of a search without probes: %d %s %s; want it refused, saying why", k, code, stdout, errOut)
			}
		case code != 0:
			t.Errorf("plot --kind %s: %d %s %s", k, code, stdout, errOut)
		}
	}
	// One changed byte in receipt.md: verify refuses the bundle.
	if err := os.WriteFile(filepath.Join(out, receipt.FileReceipt), append([]byte(md), ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := runCLI("verify", out); code == 0 || !strings.Contains(stdout+errOut, receipt.FileReceipt) {
		t.Errorf("a tampered receipt.md: verify exit %d\n%s%s", code, stdout, errOut)
	}
}
