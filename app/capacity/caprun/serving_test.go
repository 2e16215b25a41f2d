package caprun

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
)

// addServing rewrites the plan file at path with a serving block.
func addServing(t *testing.T, path string, s capacity.Serving) {
	t.Helper()
	p, err := capacity.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.Serving = &s
	p.Defaults()
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// planWindow is a sustain window the plan's requests always fill (2 requests, 1 ms): the
// tests whose probes are about something else keep their few requests at high rates.
func planWindow() *capacity.SustainWindow {
	n, s := 2, 0.001
	return &capacity.SustainWindow{MinRequests: &n, MinSeconds: &s}
}

// readServing reads and parses a lifetime's serving file.
func readServing(t *testing.T, out string, key capacity.LifetimeKey) *capacity.ServingFile {
	t.Helper()
	path := filepath.Join(out, lifetimeDir(key), RunServingFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := capacity.ReadServing(path, b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// servingSchedules reads a lifetime's serving file: each probe's rate and its measured
// requests' scheduled offsets from the probe's first, in seq order.
func servingSchedules(t *testing.T, out string, key capacity.LifetimeKey) ([]float64, [][]time.Duration) {
	t.Helper()
	f := readServing(t, out, key)
	var rates []float64
	var scheds [][]time.Duration
	for _, r := range f.Records {
		if r.Phase != capacity.PhaseMeasured {
			continue
		}
		for len(rates) <= r.Probe {
			rates, scheds = append(rates, 0), append(scheds, nil)
		}
		rates[r.Probe] = r.Rate
		for len(scheds[r.Probe]) <= r.Seq {
			scheds[r.Probe] = append(scheds[r.Probe], 0)
		}
		scheds[r.Probe][r.Seq] = time.Duration(*r.ScheduledMs * 1e6)
	}
	for i := range scheds {
		t0 := scheds[i][0]
		for k := range scheds[i] {
			scheds[i][k] = (scheds[i][k] - t0).Round(time.Microsecond)
		}
	}
	return rates, scheds
}

// checkServingRun checks a serving run's folder: every probe sent on the plan's schedule, the
// harness floor measured, study.json with both sections, re-assembled byte for byte.
func checkServingRun(t *testing.T, plan, out string, rep *capacity.RunReport) capacity.ServingResult {
	t.Helper()
	p := mustLoad(t, plan)
	res := rep.Result
	if res == nil || res.HarnessFloor == nil || res.HarnessFloor.Tokens == 0 {
		t.Fatalf("no harness floor in the result: %+v", res)
	}
	sv := res.Candidates[0].Serving
	if len(sv) != 1 || len(sv[0].Probes) == 0 {
		t.Fatalf("serving results %+v", sv)
	}
	rates, scheds := servingSchedules(t, out, capacity.LifetimeKey{Pass: capacity.PassForward, Candidate: p.Candidates[0].ID, Slots: p.Slots[0]})
	for i, pr := range sv[0].Probes {
		want := p.Serving.ProbeSchedule(pr.OfferedRate)
		if rates[i] != pr.OfferedRate || !slices.Equal(scheds[i], want) {
			t.Errorf("probe %d at %g req/s: sent on %v, the plan's schedule is %v", i, pr.OfferedRate, scheds[i][:3], want[:3])
		}
	}
	study1, err := os.ReadFile(filepath.Join(out, capacity.RunStudyFile))
	if err != nil {
		t.Fatal(err)
	}
	_, again, err := assembleRun(out, nil, capacity.Schedule(p, filepath.Dir(plan)), nil)
	if err != nil || !bytes.Equal(study1, again) {
		t.Fatalf("re-assembly differs (err %v)", err)
	}
	if !slices.Contains(rep.AssembleArgs, capacity.FlagHarness) || !slices.Contains(rep.AssembleArgs, capacity.FlagServing) {
		t.Errorf("assemble args %v lack the serving files", rep.AssembleArgs)
	}
	return sv[0]
}

// TestServingRunOnTheFake: a serving plan (Poisson sweep and a max-rate search) through the
// runner against the test's llama-server stand-in (2 ms TTFT, 0.2 ms per token): the harness
// floor first, the probes on their seeded schedules, every search probe a recorded cell, the
// study re-assembled from the folder byte for byte.
func TestServingRunOnTheFake(t *testing.T) {
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	plan := writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-lv", "4"}, capacity.Markers{}}}, []int{1}, []int{1}, 0, 2, 8)
	addServing(t, plan, capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalPoisson, Seed: 11}, Rates: []float64{20, 40},
		Search: &capacity.RateSearch{Lo: 10, Hi: 80, Tolerance: 0.5, MaxProbes: 4}, Requests: 12, Warmups: 1,
		SLO: capacity.SLO{TTFTMs: 2000, TPOTMs: 500}, Sustain: planWindow()})
	p := mustLoad(t, plan)
	p.Passes = []string{capacity.PassForward}
	b, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	rep, _, err := runPlan(t, plan, os.Args[0], out, []string{tag(t), fakeServerEnv + "=1"}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sv := checkServingRun(t, plan, out, rep)
	if len(sv.Probes) < 3 || sv.Search == nil || len(sv.Search.Probes) != len(sv.Probes)-2 {
		t.Errorf("probes %d, search %+v: want the 2 sweep probes and the search's own", len(sv.Probes), sv.Search)
	}
	for _, pr := range sv.Probes {
		if pr.Completed != 12 || pr.AchievedRate == nil || pr.Goodput == nil {
			t.Errorf("probe %d: %d completed, achieved %v, goodput %v", pr.Probe, pr.Completed, pr.AchievedRate, pr.Goodput)
		}
	}
}

// TestServingRealServer is the acceptance run on the real llama-server with the medium model:
// a Poisson sweep at three rates (seed 5) and a max-rate search, run twice. Both runs send
// every probe they share on the same schedule, judged by the send times the client recorded
// (not by the plan's schedule hash): each request left at or after its due time, and request
// for request the two runs' send offsets agree (median within 25 ms). The search converges
// within its tolerance or says why not, every passing probe kept up with its arrivals (the
// sustain rule), and the receipt bundle lists every probe and verifies byte for byte.
func TestServingRealServer(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	model := llamatest.Model(t, "medium-llama-q8_0.gguf")
	plan := writeRunPlan(t, dir, []runCand{{"medium", model, []string{"-t", llamatest.Threads, "-lv", "4"}, capacity.Markers{}}}, []int{2}, []int{1}, 0, 2, 8)
	minReq, minS := 16, 4.0
	addServing(t, plan, capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalPoisson, Seed: 5}, Rates: []float64{2, 4, 8},
		Search: &capacity.RateSearch{Lo: 2, Hi: 64, Tolerance: 0.3, MaxProbes: 4}, Requests: 8, Warmups: 1, ScheduleSlackMs: 50,
		SLO: capacity.SLO{TTFTMs: 400, TPOTMs: 100}, Sustain: &capacity.SustainWindow{MinRequests: &minReq, MinSeconds: &minS}})
	p := mustLoad(t, plan)
	p.Passes = []string{capacity.PassForward}
	b, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	key := capacity.LifetimeKey{Pass: capacity.PassForward, Candidate: "medium", Slots: 2}
	var runs [2]capacity.ServingResult
	var sends [2]map[int][]float64
	for i := range runs {
		out := filepath.Join(dir, "run"+string(rune('1'+i)))
		start := time.Now()
		rep, _, err := runPlan(t, plan, loc.Server, out, []string{tag(t)}, nil)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		runs[i] = checkServingRun(t, plan, out, rep)
		sends[i] = sendOffsets(t, readServing(t, out, key), p.Serving)
		t.Logf("run %d: %d probes in %v; search %+v; saturation %+v", i+1, len(runs[i].Probes), time.Since(start).Round(time.Millisecond), runs[i].Search, runs[i].Saturation)
		for _, pr := range runs[i].Probes {
			t.Logf("  probe %d %s %g req/s: %d requests, achieved %s, goodput %s, TTFT p95 %s ms, TPOT p95 %s ms, send delay p99 %s ms, sustain %s, failures %v",
				pr.Probe, pr.Kind, pr.OfferedRate, pr.Requests, fmtp(pr.AchievedRate), fmtp(pr.Goodput), fmtp(pr.TTFTMs.P95), fmtp(pr.TPOTMs.P95), fmtp(pr.SendDelayMs.P99), sustainText(pr.Sustain), pr.Failures)
			if pr.Passed && (pr.Sustain == nil || !pr.Sustain.Sustained || *pr.Sustain.Ratio < capacity.SustainRatioMin) {
				t.Errorf("run %d probe %d at %g req/s passed without keeping up: %s", i+1, pr.Probe, pr.OfferedRate, sustainText(pr.Sustain))
			}
		}
	}
	shared := 0
	for k := range min(len(runs[0].Probes), len(runs[1].Probes)) {
		a, b := runs[0].Probes[k], runs[1].Probes[k]
		if a.OfferedRate != b.OfferedRate {
			break // the runs' probes part where one run's sweep stopped at saturation or its search went elsewhere
		}
		x, y := sends[0][k], sends[1][k]
		if len(x) != len(y) || len(x) != p.Serving.ProbeRequests(a.OfferedRate) {
			t.Errorf("probe %d at %g req/s: %d and %d sends, the plan's window is %d", k, a.OfferedRate, len(x), len(y), p.Serving.ProbeRequests(a.OfferedRate))
			continue
		}
		var diff []float64
		for j := range x {
			diff = append(diff, math.Abs(x[j]-y[j]))
		}
		slices.Sort(diff)
		if med := diff[len(diff)/2]; med > 25 {
			t.Errorf("probe %d at %g req/s: the two runs' send offsets differ by %.1f ms at the median (first sends %v and %v): want the same schedule twice", k, a.OfferedRate, med, x[:3], y[:3])
		}
		shared++
	}
	if shared == 0 {
		t.Errorf("no probe shared by both runs: the first sweep probe (2 req/s) must be")
	}
	for i, sv := range runs {
		q := sv.Search
		switch {
		case q == nil:
			t.Fatalf("run %d: no search result", i+1)
		case q.Converged && q.MaxRate != nil && q.LowestFail != nil && (*q.LowestFail-*q.MaxRate)/(*q.MaxRate) > 0.3:
			t.Errorf("run %d: converged but the bracket [%g, %g] is wider than the tolerance", i+1, *q.MaxRate, *q.LowestFail)
		case !q.Converged && len(q.Probes) != 4:
			t.Errorf("run %d: not converged after %d of its 4 probes: %s", i+1, len(q.Probes), q.Note)
		}
	}
}

// sendOffsets are each probe's measured requests' actual send times (send_ms, as the client
// recorded them) from the probe's first due time, in seq order; a request sent before the
// plan's schedule has it due is an error.
func sendOffsets(t *testing.T, f *capacity.ServingFile, s *capacity.Serving) map[int][]float64 {
	t.Helper()
	first := map[int]float64{}
	for _, r := range f.Records {
		if r.Phase == capacity.PhaseMeasured && r.Seq == 0 {
			first[r.Probe] = *r.ScheduledMs
		}
	}
	out := map[int][]float64{}
	for _, r := range f.Records {
		if r.Phase != capacity.PhaseMeasured {
			continue
		}
		due := float64(s.ProbeSchedule(r.Rate)[r.Seq].Microseconds()) / 1000
		if off := r.SendMs - first[r.Probe]; off < due-0.5 {
			t.Errorf("probe %d seq %d sent %.3f ms into the probe, before the plan has it due (%.3f ms)", r.Probe, r.Seq, off, due)
		}
		o := out[r.Probe]
		for len(o) <= r.Seq {
			o = append(o, 0)
		}
		o[r.Seq] = r.SendMs - first[r.Probe]
		out[r.Probe] = o
	}
	return out
}

func fmtp(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*x, 'f', 2, 64)
}
