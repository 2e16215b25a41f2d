package caprun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
)

// TestServingSaturatedServerIsNotSustained: the test's server stand-in with one slot and 100
// ms a request serves at most 10 req/s. Offered 4 req/s it keeps up and the probe passes;
// offered 20 req/s it answers every request, well inside the (wide) SLO, while the client keeps
// its schedule, yet its completions run at ~10/s: the probe fails rate:not_sustained and only
// that, the sweep stops climbing (40 req/s is skipped), and the lifetime's knee is 4 req/s with
// the lowest unsustained rate 20 req/s.
func TestServingSaturatedServerIsNotSustained(t *testing.T) {
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	plan := writeRunPlan(t, dir, []runCand{{"slow", model, []string{"-lv", "4"}, capacity.Markers{}}}, []int{1}, []int{1}, 0, 2, 8)
	// 24 requests (5.75 s) at 4 req/s: a stall of the loaded machine does not make the
	// sustained rate look unsustained; the slack keeps a late send from failing it.
	minReq, minS := 24, 2.0
	addServing(t, plan, capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{4, 20, 40},
		Requests: 8, Warmups: 1, ScheduleSlackMs: 500, Sustain: &capacity.SustainWindow{MinRequests: &minReq, MinSeconds: &minS},
		SLO: capacity.SLO{TTFTMs: 600000, TPOTMs: 600000}})
	p := mustLoad(t, plan)
	p.Passes = []string{capacity.PassForward}
	b, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	rep, _, err := runPlan(t, plan, os.Args[0], out, []string{tag(t), fakeServerEnv + "=1", fakeServiceEnv + "=100"}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sv := checkServingRun(t, plan, out, rep)
	if len(sv.Probes) != 2 {
		t.Fatalf("%d probes: want 4 and 20 req/s, the sweep stopped before 40", len(sv.Probes))
	}
	ok, sat := sv.Probes[0], sv.Probes[1]
	t.Logf("4 req/s: sustain %s; 20 req/s: sustain %s, failures %v", sustainText(ok.Sustain), sustainText(sat.Sustain), sat.Failures)
	if !ok.Passed || ok.Requests != 24 {
		t.Errorf("4 req/s on a 10 req/s server: passed %v (failures %v), %d requests; want a pass over 24", ok.Passed, ok.Failures, ok.Requests)
	}
	if sat.Passed || !slices.Equal(sat.Failures, []string{capacity.CodeNotSustained}) || sat.Requests != 41 || sat.Completed != 41 {
		t.Errorf("20 req/s: passed %v, failures %v, %d of %d completed; want every request answered and only %s", sat.Passed, sat.Failures, sat.Completed, sat.Requests, capacity.CodeNotSustained)
	}
	if d := sat.Sustain.DepartureRate; d == nil || math.Abs(*d-10) > 2 {
		t.Errorf("departure rate %v at 20 req/s: want ~10/s, the server's capacity", d)
	}
	st := sv.Saturation
	if st == nil || !st.Found || st.KneeRate == nil || *st.KneeRate != 4 || *st.LowestUnsustained != 20 || !slices.Equal(st.SkippedSweepRates, []float64{40}) {
		t.Errorf("saturation %+v: want the knee at 4, unsustained from 20, 40 skipped", st)
	}
	if !strings.Contains(st.Note, "between 4/s") {
		t.Errorf("note %q", st.Note)
	}
}

func sustainText(sc *capacity.SustainCheck) string {
	if sc == nil {
		return "none"
	}
	b, _ := json.Marshal(map[string]any{"offered": sc.OfferedRate, "departures": sc.DepartureRate, "ratio": sc.Ratio, "growth": sc.InFlightGrowth, "sustained": sc.Sustained})
	return string(b)
}

// TestServingShow: `capacity show` of a serving study (text and --json) lists every probe of
// every server lifetime, the sweep's best rate, the search's outcome, the knee and the
// harness floor, from the trusted study.json; the same study's show without study.json's
// serving results (a closed-loop plan) has none of it.
func TestServingShow(t *testing.T) {
	dir := t.TempDir()
	planPath := writeEnginePlan(t, dir)
	// The first rate is far below the stand-in's 10 req/s, over a window (3.5 s) long enough
	// that a stall of the loaded machine (the race detector on) does not make it look
	// unsustained; the generous slack keeps a late send from failing it either.
	minReq, minS := 8, 3.0
	addServing(t, planPath, capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalConstant}, Rates: []float64{2, 30, 60},
		Search: &capacity.RateSearch{Lo: 2, Hi: 40, Tolerance: 0.5, MaxProbes: 3}, Requests: 8, Warmups: 0, ScheduleSlackMs: 500,
		Sustain: &capacity.SustainWindow{MinRequests: &minReq, MinSeconds: &minS}, SLO: capacity.SLO{TTFTMs: 600000, TPOTMs: 600000}})
	ctx := context.Background()
	rec := &memRecorder{}
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, hashFile)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Rec: rec, Server: os.Args[0], Env: []string{tag(t), fakeServerEnv + "=1", fakeServiceEnv + "=100"}, DataDir: filepath.Join(dir, "data"),
		StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, Hash: hashFile}
	if _, err := e.Run(ctx, reg.StudyID, ""); err != nil {
		t.Fatalf("run: %v", err)
	}
	rep, err := capacity.Show(ctx, rec, reg.StudyID)
	if err != nil || !rep.Trusted {
		t.Fatalf("show: %+v %v", rep, err)
	}
	if len(rep.Serving) != 2 || rep.HarnessFloor == nil || rep.HarnessFloor.Tokens == 0 {
		t.Fatalf("show: %d serving lifetimes, harness floor %+v; want the forward and reverse passes' and the floor", len(rep.Serving), rep.HarnessFloor)
	}
	sv := rep.Serving[0]
	if sv.Candidate != "fake" || len(sv.Probes) < 3 || sv.Search == nil || sv.Saturation == nil || !sv.Saturation.Found {
		t.Fatalf("serving %+v: want the sweep's and the search's probes, the search and the knee", sv)
	}
	var text bytes.Buffer
	capacity.WriteReport(&text, rep)
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	txt := text.String()
	t.Log(txt)
	for _, want := range []string{"open-loop serving", "harness floor: ", "fake P1 forward pass:", "fake P1 reverse pass:", "#0  sweep  offered        2 req/s",
		"#1  sweep  offered       30 req/s", capacity.CodeNotSustained, "search: ", "knee: saturates between ", "(not sustained); saturated, the server completed ", "sweep rates not probed (past saturation): 60 req/s"} {
		if !strings.Contains(txt, want) {
			t.Errorf("capacity show lacks %q", want)
		}
	}
	for _, want := range []string{`"serving":[{"candidate":"fake"`, `"probes":[{"probe":0`, `"search":{"max_rate":`, `"saturation":{"found":true`, `"harness_floor":{"schema":"` + capacity.SchemaHarnessFloor, `"sustain":{`} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("capacity show --json lacks %s", want)
		}
	}
	for _, pr := range sv.Probes {
		if !strings.Contains(txt, fmt.Sprintf("#%-2d %-6s offered %8s req/s", pr.Probe, pr.Kind, strconv.FormatFloat(pr.OfferedRate, 'f', -1, 64))) {
			t.Errorf("probe %d (%s, %g req/s) missing from the text", pr.Probe, pr.Kind, pr.OfferedRate)
		}
	}
}
