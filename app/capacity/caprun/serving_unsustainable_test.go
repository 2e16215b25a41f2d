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

// TestServingUnsustainableRateIsFlagged: a probe offered 2,000 req/s to the test's server
// stand-in with one request in flight at a time (each takes a few ms, so the client can send a
// few hundred a second at most) falls behind its schedule. The probe is not silently slowed:
// it fails client_behind_schedule, its check's detail gives the achieved rate, the achieved
// rate is recorded well below the offered one, and the validity entry says so.
func TestServingUnsustainableRateIsFlagged(t *testing.T) {
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	plan := writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-lv", "4"}, capacity.Markers{}}}, []int{1}, []int{1}, 0, 2, 8)
	addServing(t, plan, capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{2000},
		Requests: 24, Warmups: 1, MaxInFlight: 1, SLO: capacity.SLO{TTFTMs: 60000, TPOTMs: 60000},
		Sustain: planWindow()})
	p := mustLoad(t, plan)
	p.Passes = []string{capacity.PassForward}
	b, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _, err := runPlan(t, plan, os.Args[0], filepath.Join(dir, "run"), []string{tag(t), fakeServerEnv + "=1"}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	pr := rep.Result.Candidates[0].Serving[0].Probes[0]
	if !slices.Contains(pr.Failures, capacity.CodeBehindSchedule) || !slices.Contains(pr.Failures, capacity.CodeNotSustained) || pr.AchievedRate == nil || *pr.AchievedRate > 1000 {
		t.Fatalf("offered 2000 req/s with one request in flight: failures %v, achieved %v; want %s, %s and an achieved rate far below",
			pr.Failures, pr.AchievedRate, capacity.CodeBehindSchedule, capacity.CodeNotSustained)
	}
	var detail string
	for _, c := range pr.Checks {
		if !c.Passed && strings.Contains(c.Detail, "achieved") {
			detail = c.Detail
		}
	}
	if detail == "" {
		t.Errorf("no failed check names the achieved rate: %+v", pr.Checks)
	}
	v := capacity.Validity(rep.Result)
	if v == nil || len(v.Probes) != 1 || !v.Probes[0].BehindSchedule {
		t.Errorf("validity %+v: want the probe behind schedule", v)
	}
	t.Logf("offered 2000 req/s, achieved %.0f req/s, send delay p99 %.0f ms: %s", *pr.AchievedRate, *pr.SendDelayMs.P99, detail)
}
