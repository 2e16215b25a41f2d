package ui

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/runner/server"
	"sparkbench/ui/uitest"
)

// fakeCapacity is an in-memory CapacityService: Register keeps the plan, Run replays events.
type fakeCapacity struct {
	mu      sync.Mutex
	got     *capacity.Plan
	regErr  error
	runs    int
	status  string
	events  func(on func(capacity.RunEvent))
	runErr  error
	runNil  bool // RunCapacity fails before a run starts (no summary)
	assembl bool // Show returns an assembled envelope once a run finished
	// kv is the KV cache check a complete run ends with (kvOnly: the study was complete, the
	// check runs alone); kvQuality and kvUnchecked are what Show reports of it.
	kv          func(kvOnly bool, say func(string)) error
	kvQuality   []capacity.KVQuality
	kvUnchecked []string
	kvRuns      int
}

func (f *fakeCapacity) RegisterCapacity(_ context.Context, p *capacity.Plan) (capacity.Registration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.regErr != nil {
		return capacity.Registration{}, f.regErr
	}
	f.got = p
	sum, _, _ := p.SHA256()
	return capacity.Registration{StudyID: 9, Name: p.Name, Kind: "capacity", PlanSHA256: sum}, nil
}

func capPlan() *capacity.Plan {
	w := 1
	p := &capacity.Plan{Schema: capacity.SchemaCapacity, Name: "grid", Slots: []int{1, 2}, Clients: []int{1, 2}, Warmups: &w, Measured: 2, NPredict: 8,
		Candidates: []capacity.Candidate{{ID: "tiny", Label: "tiny"}},
		Limits:     capacity.Limits{TTFTMsP95Max: 100, E2EMsP95Max: 1000, PeakRSSMiBMax: 4096}}
	p.Defaults()
	return p
}

func (f *fakeCapacity) ShowCapacity(_ context.Context, id int64) (*CapacityStudy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	status := f.status
	if status == "" {
		status = "registered"
	}
	r := &capacity.Report{Study: capacity.ReportStudy{ID: id, Name: "grid", Kind: "capacity", Status: status, PlanSHA256: strings.Repeat("d", 64)},
		Pending: []string{"P1"}}
	if f.assembl {
		rate, ttft, e2e := 900.0, 50.0, 400.0
		r.Envelope = []capacity.EnvelopeReport{{Candidate: "tiny", Label: "tiny", Selected: &capacity.Selection{Slots: 2, Clients: 2},
			Cells: []capacity.EnvelopeCell{
				{Slots: 1, Clients: 1, GenerationRate: &rate, TTFTMsP95: &ttft, E2EMsP95: &e2e, Passed: true, Failures: []string{}},
				{Slots: 2, Clients: 2, GenerationRate: &rate, TTFTMsP95: &ttft, E2EMsP95: &e2e, Passed: true, Failures: []string{}},
				{Slots: 2, Clients: 1, Passed: false, Failures: []string{"generation_rate_spread_above_max"}},
			}}}
		two := 2
		r.Selected = []capacity.SelectedPoint{{Candidate: "tiny", Slots: &two, Clients: &two, GenerationRate: &rate}}
		obs := 0.4
		r.Verdicts = []capacity.ReportVerdict{{Prediction: "P1", Outcome: "HIT", Observed: &obs, Detail: "0.4 inside >= 0"}}
		r.Pending = nil
	}
	r.KVQuality, r.KVUnchecked = f.kvQuality, f.kvUnchecked
	return &CapacityStudy{Report: r, Plan: capPlan()}, nil
}

func (f *fakeCapacity) RunCapacity(ctx context.Context, id int64, on func(capacity.RunEvent), say func(string)) (*capacity.RunSummary, error) {
	f.mu.Lock()
	f.runs++
	events, runErr, kv, kvOnly := f.events, f.runErr, f.kv, f.status == capacity.StatusComplete
	f.mu.Unlock()
	if kvOnly && kv != nil {
		f.mu.Lock()
		f.kvRuns++
		f.mu.Unlock()
		return &capacity.RunSummary{StudyID: id, Status: capacity.StatusComplete}, kv(true, say)
	}
	if events != nil {
		events(on)
	}
	if runErr != nil && f.runNil {
		return nil, runErr
	}
	if runErr != nil {
		return &capacity.RunSummary{StudyID: id, Status: "halted"}, runErr
	}
	if ctx.Err() != nil {
		return &capacity.RunSummary{StudyID: id, Status: "halted"}, capacity.ErrRunStopped
	}
	f.mu.Lock()
	f.status, f.assembl = capacity.StatusComplete, true
	f.mu.Unlock()
	sum := &capacity.RunSummary{StudyID: id, Status: capacity.StatusComplete, RunDir: "/runs/9", Legs: 2}
	if kv != nil {
		return sum, kv(false, say)
	}
	return sum, nil
}

func waitCapValidated(t *testing.T, v *CapacityWizard, cond func() bool) {
	t.Helper()
	waitSignalled(t, v.validated, 10*time.Second, cond, func() string { return "problems:\n" + v.Problems.Text })
}

func TestCapacityWizardBuildsValidatesAndRegisters(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	moe := filepath.Join(modelsDir(), "tiny-moe-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny), app.InspectModel(moe), {Path: "/x/broken.gguf", Err: "invalid magic"}}
	svc := &fakeCapacity{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	var done int64
	v := build(func() *CapacityWizard {
		return newCapacityWizard(a.NewWindow("t"), svc, lib, func() []app.ModelEntry { return models }, func(id int64) { done = id })
	})
	Locked(func() {
		if len(v.Models.Options) != 2 {
			t.Fatalf("model choices %v: the unreadable file must not be offered", v.Models.Options)
		}
		test.Type(v.Name, "tiny grid")
		v.Models.SetSelected([]string{tiny, moe})
		v.Configs.SetText("f16: -ctk f16 -ctv f16\nq8: -ctk q8_0 -ctv q8_0")
		v.Flags.SetText("-t 1 --port 8080") // the harness picks the port: refused
		v.Slots.SetText("1,2")
		v.Clients.SetText("1,x")
	})
	waitCapValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `clients: "x" is not a whole number`) && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.Clients.SetText("1,2") })
	waitCapValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, "--port") && strings.Contains(v.Problems.Text, "harness") && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.Flags.SetText("-t 1"); v.RateSpread.SetText("12") })
	waitCapValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, "generation_rate_spread_max") && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.RateSpread.SetText("0.3"); v.E2ESpread.SetText("wide") })
	waitCapValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `pass spread max (E2E p95): "wide" is not a number`) && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.E2ESpread.SetText("0.25") })
	waitCapValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	Locked(func() {
		// 4 candidates x 2 P x 2 passes = 16 lifetimes, 2 client levels each, 4 + 8 requests a level.
		if !strings.HasPrefix(v.Estimate.Text, "16 server lifetimes, 32 cells, 384 requests of 64 tokens") {
			t.Errorf("estimate %q", v.Estimate.Text)
		}
	})
	pr, err := buildCapacityPrediction("band", "the grid gains", "selected_gain", "tiny-llama-f32-f16", "", "", "0", "")
	if err != nil {
		t.Fatal(err)
	}
	Locked(func() { v.AddPrediction(pr) })
	if _, err := buildCapacityPrediction("band", "x", "cell_rate", "tiny", "two", "", "", ""); err == nil || !strings.Contains(err.Error(), `slots: "two" is not a whole number`) {
		t.Fatalf("bad slots: %v", err)
	}
	waitCapValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" })

	result := make(chan error, 1)
	Locked(func() {
		v.Register(func(r capacity.Registration, err error) {
			if err == nil {
				v.onDone(r.StudyID)
			}
			result <- err
		})
	})
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	g := svc.got
	if g == nil || len(g.Candidates) != 4 || g.Candidates[0].ID != "tiny-llama-f32-f16" || g.Candidates[0].Model.SHA256 != strings.Repeat("ab", 32) ||
		strings.Join(g.Candidates[1].ServerFlags, " ") != "-t 1 -ctk q8_0 -ctv q8_0" || g.PromptPlan != capacity.DefaultPromptPlanRef() ||
		len(g.Predictions) != 1 || g.Predictions[0].ID != "P1" || done != 9 ||
		g.Limits.GenRateSpreadMax != 0.3 || g.Limits.E2EP95SpreadMax != 0.25 {
		t.Fatalf("registered plan: %+v (done %d)", g, done)
	}

	// Concurrency: the diagonal, every candidate an arm.
	Locked(func() { v.SetKind(KindConcurrency) })
	waitCapValidated(t, v, func() bool { return v.Clients.Disabled() && v.Problems.Text == "no problems: ready to register" })
	Locked(func() {
		p, errs := v.Plan()
		if len(errs) > 0 || p.Schema != capacity.SchemaConcurrency || p.Clients != nil || p.Candidates[0].Arm != "tiny-llama-f32/f16" || p.ArmAxis != "server_flags" {
			t.Fatalf("concurrency plan: %v %+v", errs, p)
		}
	})
}

// A model whose SHA-256 differs from the expected one is refused before anything is registered.
func TestCapacityWizardRefusesAMismatchedModel(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	svc := &fakeCapacity{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{tiny: strings.Repeat("0", 64)}}
	v := build(func() *CapacityWizard {
		return newCapacityWizard(a.NewWindow("t"), svc, lib, func() []app.ModelEntry { return []app.ModelEntry{app.InspectModel(tiny)} }, nil)
	})
	Locked(func() {
		test.Type(v.Name, "mismatch")
		v.Models.SetSelected([]string{tiny})
	})
	waitCapValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	result := make(chan error, 1)
	Locked(func() { v.Register(func(_ capacity.Registration, err error) { result <- err }) })
	err := <-result
	if err == nil || !strings.Contains(err.Error(), "is MISMATCH") || !strings.Contains(err.Error(), "download it again") {
		t.Fatalf("register of a mismatched model: %v", err)
	}
	if svc.got != nil {
		t.Fatal("a plan was registered")
	}
}

func capEvents(on func(capacity.RunEvent)) {
	life := "forward/tiny/p1"
	on(capacity.RunEvent{Type: capacity.RunStarted, Progress: capacity.RunProgress{LifetimesTotal: 2, CellsTotal: 4, ETA: -1}})
	on(capacity.RunEvent{Type: capacity.ServerReady, Lifetime: life, Server: &capacity.RunServer{Port: 4242, Pid: 7}})
	for i, slow := range []float64{40, 400} { // C=1 passes, C=2 breaks the 100 ms TTFT SLO
		c := i + 1
		on(capacity.RunEvent{Type: capacity.CellStarted, Lifetime: life, Clients: c})
		for seq := 0; seq < 2; seq++ {
			r := capacity.RequestRecord{Clients: c, Phase: capacity.PhaseMeasured, Seq: seq, SendMs: float64(seq * 100),
				EndMs: float64(seq*100) + 300, Tokens: 8, HTTPStatus: 200}
			ft := r.SendMs + slow
			r.FirstTokenMs = &ft
			on(capacity.RunEvent{Type: capacity.RequestDone, Lifetime: life, Clients: c, Request: &r})
		}
		on(capacity.RunEvent{Type: capacity.CellDone, Lifetime: life, Clients: c, Cell: &capacity.RunCell{Clients: c, Attempted: 2, Completed: 2, Rate: 40},
			Progress: capacity.RunProgress{CellsDone: c, CellsTotal: 4, LifetimesTotal: 2}})
	}
}

func waitCap(t *testing.T, v *CapacityPanel, cond func() bool) {
	t.Helper()
	waitSignalled(t, v.Updated, 10*time.Second, cond, nil)
}

func TestCapacityPanelRunsAndShowsTheEnvelope(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeCapacity{events: capEvents}
	var live []capRow
	var gates string
	release := make(chan struct{}) // the run stays live until the test has seen its rows
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	svc.events = func(on func(capacity.RunEvent)) {
		capEvents(on)
		// An event that adds no row, right after the last cell: the live table must still
		// show every row (the throttled update keeps only the latest event's closure).
		on(capacity.RunEvent{Type: capacity.LifetimeDone, Lifetime: "forward/tiny/p1", Server: &capacity.RunServer{}})
		<-release
	}
	v := build(func() *CapacityPanel { return newCapacityPanel(a, a.NewWindow("t"), svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(9) })
	waitCap(t, v, func() bool { return v.study != nil && !v.RunButton.Disabled() })
	Locked(func() {
		if v.verdictRows() != 1 || v.verdictCell(0, 1) != "PENDING" || !strings.Contains(v.Selected.Text, "no assembled result yet") {
			t.Fatalf("before the run: %d verdict rows, %q, %q", v.verdictRows(), v.verdictCell(0, 1), v.Selected.Text)
		}
		test.Tap(v.RunButton)
	})
	waitCap(t, v, func() bool { return len(v.rows) == 2 && v.Running() })
	Locked(func() { live, gates = v.Rows(), v.Gates.Text })
	once.Do(func() { close(release) })
	waitCap(t, v, func() bool {
		return !v.Running() && v.study != nil && v.study.Report.Study.Status == capacity.StatusComplete
	})
	if len(live) != 2 || live[0].Verdict != "PASS" || live[1].Verdict != "FAIL" || strings.Join(live[1].Failures, ",") != "forward:"+capacity.CodeTTFTAbove {
		t.Fatalf("live rows: %+v", live)
	}
	if !strings.Contains(gates, "1/2 cell-passes PASS") || !strings.Contains(gates, "forward:"+capacity.CodeTTFTAbove+" ×1") {
		t.Fatalf("gate lights while running: %q", gates)
	}
	Locked(func() {
		if len(v.rows) != 3 || v.envelopeCell(1, 8) != "PASS ★" || v.envelopeCell(2, 9) != "generation_rate_spread_above_max" {
			t.Fatalf("assembled rows: %+v", v.rows)
		}
		if !strings.Contains(v.Selected.Text, "tiny: selected P2/C2 at 900.00 tok/s") || v.verdictCell(0, 1) != "HIT" {
			t.Fatalf("selected %q, verdict %q", v.Selected.Text, v.verdictCell(0, 1))
		}
		if !strings.HasPrefix(v.ProgressMsg.Text, "finished: complete") || !v.RunButton.Disabled() {
			t.Fatalf("after the run: %q (run enabled: %v)", v.ProgressMsg.Text, !v.RunButton.Disabled())
		}
		lines := strings.Join(v.ConsoleLines(), "\n")
		if !strings.Contains(lines, "forward/tiny/p1: llama-server ready on 127.0.0.1:4242") || !strings.Contains(lines, "forward/tiny/p1 C=2: 2/2 completed") {
			t.Fatalf("console:\n%s", lines)
		}
	})
}

// A run refused before it starts (the llama.cpp folder is gone) says so in a dialog that names
// the fix, and the study stays as registered.
func TestCapacityPanelMissingBuildFolder(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeCapacity{runNil: true, runErr: errors.New("llama.cpp folder /nowhere: no llama-server there; choose the folder in Bench or pass --llama-dir")}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *CapacityPanel { return newCapacityPanel(a, w, svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(9) })
	waitCap(t, v, func() bool { return v.study != nil && !v.RunButton.Disabled() })
	Locked(func() { test.Tap(v.RunButton) })
	waitCap(t, v, func() bool {
		return !v.Running() && strings.HasPrefix(v.ProgressMsg.Text, "not run: llama.cpp folder /nowhere")
	})
	waitCap(t, v, func() bool { return v.study != nil && v.study.Report.Study.Status == "registered" })
	Locked(func() {
		txt := strings.ToLower(uitest.DialogText(w.Canvas()))
		if !strings.Contains(txt, "the study was not run: llama.cpp folder /nowhere") || !strings.Contains(txt, "choose the folder in bench") {
			t.Fatalf("dialog: %q", txt)
		}
	})
}

// A run that halts part-way reports where the raw files are and keeps the study runnable.
func TestCapacityPanelHaltedRun(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeCapacity{events: capEvents, runErr: errors.New("llama-server exited: crashed (signal: killed)")}
	v := build(func() *CapacityPanel { return newCapacityPanel(a, a.NewWindow("t"), svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(9) })
	waitCap(t, v, func() bool { return v.study != nil && !v.RunButton.Disabled() })
	Locked(func() { test.Tap(v.RunButton) })
	waitCap(t, v, func() bool {
		return !v.Running() && strings.HasPrefix(v.ProgressMsg.Text, "halted: llama-server exited: crashed")
	})
	waitCap(t, v, func() bool { return !v.RunButton.Disabled() })
}

// mixedStudies lists a throughput study (7) and a capacity study (9).
type mixedStudies struct{ *fakeStudies }

func (m mixedStudies) List(context.Context) ([]StudySummary, error) {
	return []StudySummary{{ID: 9, Name: "grid", Kind: "capacity", Status: "registered"}, {ID: 7, Name: "demo", Kind: "throughput", Status: "registered"}}, nil
}

// The Studies section shows a capacity study in the capacity panel and a throughput study in
// its own view, whichever is selected.
func TestStudiesSwitchesBetweenThroughputAndCapacity(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *StudiesView {
		v := newStudiesView(a, a.NewWindow("t"), mixedStudies{&fakeStudies{}})
		v.SetCapacity(&fakeCapacity{})
		return v
	})
	defer Locked(v.close)
	Locked(func() { v.Reload(9) })
	waitCap(t, v.Cap, func() bool { return v.capShown && v.Cap.study != nil })
	Locked(func() {
		if !v.Cap.Object.Visible() || v.detail.Visible() || v.Cap.Title.Text != "grid (study 9, capacity)" {
			t.Fatalf("capacity study: panel visible %v, throughput visible %v, title %q", v.Cap.Object.Visible(), v.detail.Visible(), v.Cap.Title.Text)
		}
		v.List.Select(1)
	})
	waitUpdated(t, v, func() bool { return !v.capShown && v.report != nil && v.report.Study.ID == 7 })
	Locked(func() {
		if v.Cap.Object.Visible() || !v.detail.Visible() {
			t.Fatal("the throughput study is not the one shown")
		}
	})
}

// The window's --run ID starts a capacity study as soon as it is shown.
func TestStudiesRunOnLoadRunsACapacityStudy(t *testing.T) {
	a := newTestApp(t)
	capSvc := &fakeCapacity{events: capEvents}
	v := build(func() *StudiesView {
		v := newStudiesView(a, a.NewWindow("t"), mixedStudies{&fakeStudies{}})
		v.SetCapacity(capSvc)
		return v
	})
	defer Locked(v.close)
	Locked(func() {
		v.RunOnLoad(9)
		v.Start()
	})
	waitCap(t, v.Cap, func() bool {
		capSvc.mu.Lock()
		defer capSvc.mu.Unlock()
		return capSvc.runs == 1 && capSvc.status == capacity.StatusComplete && !v.Cap.Running()
	})
}

// The live gate lights judge each server lifetime's backend markers and peak RSS as it ends.
func TestLiveCapacityJudgesMarkersAndRSS(t *testing.T) {
	p := capPlan()
	p.Candidates = []capacity.Candidate{
		{ID: "kleidi", Label: "kleidi", Markers: capacity.Markers{Must: []string{"CPU_KLEIDIAI model buffer"}}},
		{ID: "generic", Label: "generic", Markers: capacity.Markers{MustNot: []string{"CPU_KLEIDIAI model buffer"}}},
		{ID: "plain", Label: "plain"},
	}
	l := newLiveCapacity(p)
	done := func(key string, kib int64, marks ...server.MarkerCheck) {
		l.observe(capacity.RunEvent{Type: capacity.LifetimeDone, Lifetime: key,
			Server: &capacity.RunServer{RSS: &server.RSS{KiB: kib}, Evidence: &server.Evidence{Markers: marks}}})
	}
	done("forward/kleidi/p1", 1024*1024, server.MarkerCheck{Rule: "must", Regex: "CPU_KLEIDIAI model buffer", Found: true, Ok: true})
	done("forward/generic/p1", 2048*1024, server.MarkerCheck{Rule: "must_not", Regex: "CPU_KLEIDIAI model buffer", Found: true, Line: 57})
	done("forward/plain/p1", 5000*1024)
	g := l.gates()
	for _, want := range []string{
		`backend markers FAIL in 1/2 lifetimes: forward/generic/p1: must_not "CPU_KLEIDIAI model buffer" present (line 57)`,
		"peak RSS max 5000 MiB (limit 4096) FAIL in forward/plain/p1 (5000 MiB)",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("gates %q\nlack %q", g, want)
		}
	}
	l2 := newLiveCapacity(p)
	l2.observe(capacity.RunEvent{Type: capacity.LifetimeDone, Lifetime: "reverse/kleidi/p2",
		Server: &capacity.RunServer{RSS: &server.RSS{KiB: 1024}, Evidence: &server.Evidence{Markers: []server.MarkerCheck{{Rule: "must", Regex: "x", Found: true, Ok: true}}}}})
	if g := l2.gates(); !strings.Contains(g, "backend markers: 1/1 lifetimes PASS") || strings.Contains(g, "RSS max 1 MiB (limit 4096) FAIL") {
		t.Errorf("passing lifetime: %q", g)
	}
}

// The window's --study ID opens on that study instead of the demo, without running it.
func TestStudiesShowOnLoad(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeCapacity{}
	studies := &fakeStudies{}
	v := build(func() *StudiesView {
		v := newStudiesView(a, a.NewWindow("t"), mixedStudies{studies})
		v.SetCapacity(svc)
		return v
	})
	defer Locked(v.close)
	Locked(func() {
		v.ShowOnLoad(9)
		v.Start()
	})
	waitCap(t, v.Cap, func() bool { return v.capShown && v.Cap.study != nil && v.Cap.study.Report.Study.ID == 9 })
	time.Sleep(100 * time.Millisecond)
	svc.mu.Lock()
	runs := svc.runs
	svc.mu.Unlock()
	studies.mu.Lock()
	ran := studies.ran
	studies.mu.Unlock()
	if runs != 0 || ran != 0 {
		t.Fatalf("opening a study ran it (capacity %d, throughput %d)", runs, ran)
	}
}

// A run that ends with server lifetimes without results says incomplete (not halted), names
// them and what Run does next, and leaves Run enabled.
func TestCapacityPanelIncompleteRun(t *testing.T) {
	a := newTestApp(t)
	inc := &capacity.IncompleteError{Total: 2, Lifetimes: []capacity.IncompleteLifetime{{Key: "q8/P2", Reason: "llama-server exited 1 before it was healthy"}}}
	svc := &fakeCapacity{events: capEvents, runErr: inc}
	v := build(func() *CapacityPanel { return newCapacityPanel(a, a.NewWindow("t"), svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(9) })
	waitCap(t, v, func() bool { return v.study != nil && !v.RunButton.Disabled() })
	Locked(func() { test.Tap(v.RunButton) })
	want := "incomplete: 1 of 2 server lifetimes ended without results: q8/P2 (llama-server exited 1 before it was healthy). Run runs those server lifetimes again and keeps the ones that have results"
	waitCap(t, v, func() bool { return !v.Running() && strings.HasPrefix(v.ProgressMsg.Text, want) })
	waitCap(t, v, func() bool { return !v.RunButton.Disabled() })
}
