package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/plots"
	"sparkbench/runner/llamatest"
	"sparkbench/ui"
)

// TestWindowShowsAServingStudy runs a small serving plan (the tiny model on the real
// llama-server: Poisson arrivals at two rates and a max-rate search) by the CLI, then opens the
// notebook in the window: the capacity panel has a Serving tab saying open loop against the
// envelope's closed loop, one row per probe with the figures study.json holds, each lifetime's
// search outcome, and the receipt's three serving charts (the same inputs receipt.CapacityChart
// gives the receipt). A closed-loop study shown next has no Serving tab.
func TestWindowShowsAServingStudy(t *testing.T) {
	loc := llamatest.Binaries(t)
	capacityTag(t)
	nb, tmp, nbPath := tempNotebook(t)
	plan := capacityRunPlan(t, tmp)
	var doc map[string]any
	b, _ := os.ReadFile(plan)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	closedPlan := filepath.Join(tmp, "closed.json")
	if err := os.WriteFile(closedPlan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	doc["passes"] = []string{"forward"}
	doc["serving"] = map[string]any{"arrival": map[string]any{"process": "poisson", "seed": 3}, "rates": []float64{4, 8},
		"search": map[string]any{"lo": 4, "hi": 64, "tolerance": 0.5, "max_probes": 3}, "requests": 8, "warmups": 1, "schedule_slack_ms": 100, // the client runs in the race-enabled test binary on a loaded 2-core machine (as TestServingPoissonExampleEndToEnd)
		"slo":     map[string]any{"ttft_ms": 60000, "tpot_ms": 60000},
		"sustain": map[string]any{"min_requests": 16, "min_seconds": 2}} // the sustain window: at least 16 requests and 2 s a probe (the default 10 s makes this test minutes long; fewer, and a stall of the loaded machine fails the 4 req/s probe, leaving no search)
	b, _ = json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"register", plan}, {"run", "1"}, {"register", closedPlan}, {"run", "2"}} {
		if code, out, errOut := runCapacity(append(args, "--notebook", nbPath)...); code != 0 {
			t.Fatalf("capacity %v: %d\n%s\n%s", args, code, out, errOut)
		}
	}
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	capSvc := capacityService{nb: nb, llamaDir: filepath.Dir(loc.Server), dataDir: filepath.Join(tmp, "data")}
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Library: notebookLibrary{nb}, Studies: svc, Registrar: svc, Notebook: notebookService{nb}, Capacity: capSvc})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	st := wb.Studies
	ui.Locked(func() { wb.ShowSection("studies"); st.Select(1) })
	waitFor(t, "the serving study to be shown", func() bool { return st.Cap.Study() != nil && st.Cap.Study().Report.Study.ID == 1 })
	cs := st.Cap.Study()
	res := cs.Report.Run.Result
	var probes int
	for _, c := range res.Candidates {
		for _, sv := range c.Serving {
			probes += len(sv.Probes)
			for _, pr := range sv.Probes {
				t.Logf("%s P%d probe %d %s %g req/s: %d requests, failures %v", c.ID, sv.Slots, pr.Probe, pr.Kind, pr.OfferedRate, pr.Requests, pr.Failures)
			}
			if sv.Search != nil {
				t.Logf("search %+v", *sv.Search)
			}
		}
	}
	sv := st.Cap.Serving
	ui.Locked(func() {
		if !hasTab(st.Cap.Tabs, "Serving") {
			t.Fatalf("no Serving tab: %v", tabNames(st.Cap.Tabs))
		}
		if !strings.HasPrefix(sv.Loop.Text, "Open loop: requests arrive on a poisson (seed 3) schedule") || !strings.Contains(sv.Loop.Text, "The Envelope tab is closed loop") {
			t.Errorf("loop text %q", sv.Loop.Text)
		}
		if !strings.Contains(sv.Search.Text, "max-rate search: ") {
			t.Errorf("search outcome %q", sv.Search.Text)
		}
		if rows, _ := sv.Probes.Length(); rows != probes || probes < 3 {
			t.Errorf("%d probe rows, study.json has %d probes (want at least the 2 sweep probes and a search probe)", rows, probes)
		}
	})
	// The window's charts are the receipt's.
	want := []plots.Kind{plots.KindServingLatency, plots.KindServingGoodput, plots.KindServingSearch}
	if len(cs.ServingCharts) != len(want) {
		t.Fatalf("%d serving charts, want %d", len(cs.ServingCharts), len(want))
	}
	for i, k := range want {
		rc, err := receipt.CapacityChart(res, k, "")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(cs.ServingCharts[i])
		exp, _ := json.Marshal(rc)
		if cs.ServingCharts[i].Kind() != k || string(got) != string(exp) {
			t.Errorf("chart %d: %s, want the receipt's %s", i, cs.ServingCharts[i].Kind(), k)
		}
	}
	for i, v := range []*ui.ChartView{sv.Latency, sv.Goodput, sv.Trace} {
		select {
		case <-v.Frames:
		case <-time.After(60 * time.Second):
			t.Fatalf("serving chart %d was never drawn", i)
		}
		ui.Locked(func() {
			if b := v.Image.Image.Bounds(); b.Dx() < 100 || strings.HasPrefix(v.Notes.Text, "chart: ") {
				t.Errorf("serving chart %d: %v, notes %q", i, b, v.Notes.Text)
			}
		})
	}
	// A closed-loop study: no Serving tab.
	ui.Locked(func() { st.Select(2) })
	waitFor(t, "the closed-loop study to be shown", func() bool { return st.Cap.Study() != nil && st.Cap.Study().Report.Study.ID == 2 })
	ui.Locked(func() {
		if hasTab(st.Cap.Tabs, "Serving") {
			t.Errorf("a closed-loop study shows a Serving tab: %v", tabNames(st.Cap.Tabs))
		}
	})
	if s := st.Cap.Study(); s.Plan.Serving != nil || s.Report.Study.Status != capacity.StatusComplete {
		t.Errorf("study 2: %+v", s.Report.Study)
	}
}

func tabNames(t *container.AppTabs) []string {
	var out []string
	for _, it := range t.Items {
		out = append(out, it.Text)
	}
	return out
}

func hasTab(t *container.AppTabs, name string) bool {
	for _, it := range t.Items {
		if it.Text == name {
			return true
		}
	}
	return false
}
