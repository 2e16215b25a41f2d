package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
)

type fakeStudies struct {
	mu      sync.Mutex
	done    int
	block   bool // Run waits for cancel after the first leg
	ran     int
	demoErr error
	// incomplete: Run ends with these plan legs lacking results (the first one retried next).
	incomplete []study.LegStatus
}

func (f *fakeStudies) List(context.Context) ([]StudySummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == 2 { // what the notebook says once the run has recorded its legs
		return []StudySummary{{ID: 7, Name: "demo", Kind: "throughput", Status: "complete", Legs: 2, Predictions: 3}}, nil
	}
	return []StudySummary{{ID: 7, Name: "demo", Kind: "throughput", Status: "registered", Legs: 0, Predictions: 3}}, nil
}

func (f *fakeStudies) Show(_ context.Context, id int64) (*study.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &study.Report{Study: study.ReportStudy{ID: id, Name: "demo", Status: "registered", PlanSHA256: strings.Repeat("c", 64), LegsDone: f.done, LegsTotal: 2}}
	r.Scoreboard = []study.ReportScore{{Prediction: "P1", Text: "tg above 1000", Expected: ">= 1000", Word: "PENDING"}}
	if f.done == 2 {
		r.Study.Status = "complete"
		r.Scoreboard[0].Word = "HIT"
		r.Results = []study.ReportCell{{Model: "tiny", Test: "tg32", Depth: 0, Mean: 9000, SD: 90, Reps: 3, Unit: &study.CellUnit{N: 1, M: "3", Mean: 9000, WithinCV: 0.01}},
			{Model: "tiny", Test: "tg32", Depth: 128, Mean: 7000, SD: 70, Reps: 3, Unit: &study.CellUnit{N: 1, M: "3", Mean: 7000, WithinCV: 0.01}}}
	}
	return r, nil
}

func (f *fakeStudies) Run(ctx context.Context, id int64, on func(study.Event)) (study.RunSummary, error) {
	f.mu.Lock()
	f.ran++
	f.mu.Unlock()
	on(study.Event{Kind: study.EventLegStarted, Leg: "tiny/d0", Argv: []string{"llama-bench", "-m", "tiny"}, Progress: study.Progress{LegsTotal: 2, Current: "tiny/d0", ETA: -1}})
	on(study.Event{Kind: study.EventSample, Leg: "tiny/d0", Sample: &runner.Sample{Test: "tg32", Kind: benchfmt.KindTG, Model: "tiny", AvgTs: 9000, CV: 0.01,
		Result: benchfmt.Result{StddevTs: 90, SamplesTs: []float64{1, 2, 3}}}, Progress: study.Progress{LegsTotal: 2, Current: "tiny/d0", ETA: -1}})
	on(study.Event{Kind: study.EventLegFinished, StudyID: id, Leg: "tiny/d0", Outcome: &study.LegOutcome{Class: "ok", Results: 1, Expected: 1}, Progress: study.Progress{LegsDone: 1, LegsTotal: 2, ETA: time.Second}})
	if f.block {
		<-ctx.Done()
		return study.RunSummary{LegsDone: 1, LegsTotal: 2}, study.ErrStopped
	}
	on(study.Event{Kind: study.EventVerdict, Verdict: &study.Verdict{Prediction: "P1", Outcome: study.Hit, Detail: "9000 inside >= 1000"}, Progress: study.Progress{LegsDone: 2, LegsTotal: 2}})
	f.mu.Lock()
	f.done = 2
	inc := f.incomplete
	f.mu.Unlock()
	if inc != nil {
		return study.RunSummary{LegsDone: 2, LegsTotal: 2, Status: study.StatusIncomplete, Incomplete: inc}, nil
	}
	return study.RunSummary{LegsDone: 2, LegsTotal: 2, Verdicts: []study.Verdict{{Prediction: "P1"}}}, nil
}

func (f *fakeStudies) EnsureDemo(context.Context) (int64, error) { return 7, f.demoErr }

func (f *fakeStudies) HumanVerdict(context.Context, int64, study.HumanVerdict) error { return nil }

func (f *fakeStudies) Receipt(_ context.Context, id int64, out string) (ReceiptExport, error) {
	return ReceiptExport{Summary: "wrote " + out}, nil
}

func (f *fakeStudies) AddFinding(context.Context, int64, study.FindingRequest) (string, error) {
	return "F1", nil
}

// ui runs f under the UI lock, as a UI callback would: tests read widget state only so.
func ui(f func()) {
	uiMu.Lock()
	defer uiMu.Unlock()
	f()
}

func waitUpdated(t *testing.T, v *StudiesView, cond func() bool) {
	t.Helper()
	// 30 s: a loaded machine (two test suites at once) has been seen to take more than 10 s
	// over a fake run's updates
	waitSignalled(t, v.Updated, 30*time.Second, cond, func() string {
		return fmt.Sprintf("progress %q, status %q", v.ProgressMsg.Text, v.Status.Text)
	})
}

func TestStudiesOpensOnTheDemoAndRunsIt(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeStudies{}
	v := build(func() *StudiesView { return newStudiesView(a, a.NewWindow("t"), svc) })
	defer v.close()
	ui(v.Start)
	waitUpdated(t, v, func() bool { return v.report != nil })
	ui(func() {
		if v.selected != 7 || v.Title.Text != "demo (study 7)" || !strings.Contains(v.Status.Text, "0/2 legs") {
			t.Fatalf("opened on %d: %q %q", v.selected, v.Title.Text, v.Status.Text)
		}
		if v.RunButton.Disabled() || !v.AbortButton.Disabled() {
			t.Fatal("a registered study must be runnable and not abortable")
		}
		if got := v.scoreCell(0, 3); got != "PENDING" {
			t.Errorf("before the run the verdict is %q", got)
		}
		test.Tap(v.RunButton)
	})
	waitUpdated(t, v, func() bool {
		return v.report != nil && v.report.Study.LegsDone == 2 && strings.HasPrefix(v.ProgressMsg.Text, "finished")
	})
	ui(func() {
		if got := v.scoreCell(0, 3); got != "HIT" {
			t.Errorf("after the run the verdict is %q", got)
		}
		v.mu.Lock()
		console := strings.Join(v.console, "\n")
		v.mu.Unlock()
		for _, want := range []string{"leg 1/2 tiny/d0 started: llama-bench -m tiny", "tiny/d0 tg32", "verdict P1: HIT (9000 inside >= 1000)"} {
			if !strings.Contains(console, want) {
				t.Errorf("console lacks %q:\n%s", want, console)
			}
		}
		if !strings.HasPrefix(v.ProgressMsg.Text, "finished: 2/2 legs, 1 verdict(s)") {
			t.Errorf("progress message %q", v.ProgressMsg.Text)
		}
		if !v.RunButton.Disabled() {
			t.Error("a complete study has nothing left to run")
		}
		if v.resultCell(1, 3) != "7000.00" {
			t.Errorf("results table: %q", v.resultCell(1, 3))
		}
		// the unit: one llama-bench process per cell, its repetitions, and no interval from it
		if n, ci := v.resultCell(1, 7), v.resultCell(1, 8); !strings.HasPrefix(n, "n=1 m=") || ci != "none: one process" {
			t.Errorf("results table's processes %q and interval %q", n, ci)
		}
		if !strings.HasPrefix(v.Gates.Text, "gates: CV ●ok (0 of 1 rows flagged) · legs 1 ok") {
			t.Errorf("gate lights %q", v.Gates.Text)
		}
	})
}

func TestStudiesAbort(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeStudies{block: true}
	v := build(func() *StudiesView { return newStudiesView(a, a.NewWindow("t"), svc) })
	defer v.close()
	ui(v.Start)
	waitUpdated(t, v, func() bool { return v.report != nil })
	ui(func() { test.Tap(v.RunButton) })
	waitUpdated(t, v, func() bool { return !v.AbortButton.Disabled() })
	ui(func() {
		if !v.RunButton.Disabled() {
			t.Fatal("Run must be disabled while running")
		}
	})
	// The status line follows the run, not the study as it was loaded.
	waitUpdated(t, v, func() bool { return strings.HasPrefix(v.Status.Text, "running · plan sha256 ") })
	v.Abort()
	waitUpdated(t, v, func() bool {
		return strings.HasPrefix(v.ProgressMsg.Text, "stopped by you") && v.AbortButton.Disabled()
	})
}

func TestStudiesDemoFailureStillListsStudies(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *StudiesView {
		return newStudiesView(a, a.NewWindow("t"), &fakeStudies{demoErr: errors.New("disk full")})
	})
	defer v.close()
	ui(v.Start)
	waitUpdated(t, v, func() bool { return v.report != nil && v.selected == 7 })
}

func TestStudiesRunOnLoadRunsTheDemo(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeStudies{}
	v := build(func() *StudiesView { return newStudiesView(a, a.NewWindow("t"), svc) })
	defer v.close()
	ui(func() {
		v.RunOnLoad(-1)
		v.Start()
	})
	waitUpdated(t, v, func() bool { return strings.HasPrefix(v.ProgressMsg.Text, "finished: 2/2 legs") })
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.ran != 1 {
		t.Fatalf("ran %d times", svc.ran)
	}
}

func TestGateLights(t *testing.T) {
	var g gateCounts
	for _, e := range []study.Event{
		{Kind: study.EventSample}, {Kind: study.EventSample}, {Kind: study.EventFlagged},
		{Kind: study.EventLegFinished, Leg: "tiny/d0", Outcome: &study.LegOutcome{Class: "ok"}},
		{Kind: study.EventLegFinished, Leg: "moe/d0", Outcome: &study.LegOutcome{Class: "crashed"}},
		{Kind: study.EventCanary, Canary: &runner.Canary{Pass: false, Reason: "30% below its baseline"}},
	} {
		g.observe(e)
	}
	want := "gates: CV ●STOP (1 of 2 rows flagged) · legs 1 ok, 1 not ok · crashes: moe/d0 crashed · canary FAIL: 30% below its baseline"
	if got := g.String(); got != want {
		t.Fatalf("gates:\n got %s\nwant %s", got, want)
	}
	if got := (gateCounts{rows: 4, legsOK: 2}).String(); !strings.HasPrefix(got, "gates: CV ●ok (0 of 4 rows flagged)") {
		t.Fatalf("all ok: %s", got)
	}

	// Backend evidence: the rows agree, then one row reports another backend.
	var b gateCounts
	cpu := &runner.Sample{Result: benchfmt.Result{Backends: "CPU"}}
	b.observe(study.Event{Kind: study.EventSample, Sample: cpu})
	b.observe(study.Event{Kind: study.EventSample, Sample: cpu})
	if got := b.String(); !strings.HasSuffix(got, " · backend evidence ●ok CPU, ngl 0 ×2 rows") {
		t.Fatalf("one backend: %s", got)
	}
	b.observe(study.Event{Kind: study.EventSample, Sample: &runner.Sample{Result: benchfmt.Result{Backends: "Vulkan", NGPULayers: 99, GPUInfo: "Radeon 8060S"}}})
	if got := b.String(); !strings.HasSuffix(got, " · backend evidence ●MIXED (rows disagree: check the build and device): CPU, ngl 0 ×2; Vulkan, ngl 99, Radeon 8060S ×1") {
		t.Fatalf("mixed backends: %s", got)
	}
	// While running, the lights without counts: they change only when a gate does.
	if got := b.Live(); got != "gates: CV ●ok · legs ●ok · backend evidence ●MIXED (rows disagree: check the build and device)" {
		t.Fatalf("live: %s", got)
	}
	if got := g.Live(); got != "gates: CV ●STOP (1 row(s) flagged) · legs: 1 not ok · crashes: moe/d0 crashed · canary FAIL: 30% below its baseline" {
		t.Fatalf("live: %s", got)
	}
}

// orderedShows is a study service whose Show calls wait for the test to release them, so
// that two loads can finish in the opposite order to the one they started in.
type orderedShows struct {
	*fakeStudies
	mu    sync.Mutex
	calls int
	gates map[int]chan struct{}
}

func (o *orderedShows) Show(ctx context.Context, id int64) (*study.Report, error) {
	o.mu.Lock()
	o.calls++
	n := o.calls
	g := o.gates[n]
	o.mu.Unlock()
	if g != nil {
		<-g
	}
	r, err := o.fakeStudies.Show(ctx, id)
	if r != nil {
		r.Study.Name = fmt.Sprintf("load %d", n)
	}
	return r, err
}

// A reload after a human verdict and another after a finding may finish out of order: the
// view must end on the later load, never on the earlier (stale) one.
func TestStudiesShowsTheLatestLoadWhenLoadsFinishOutOfOrder(t *testing.T) {
	a := newTestApp(t)
	first, second := make(chan struct{}), make(chan struct{})
	svc := &orderedShows{fakeStudies: &fakeStudies{}, gates: map[int]chan struct{}{1: first, 2: second}}
	v := build(func() *StudiesView { return newStudiesView(a, a.NewWindow("t"), svc) })
	defer v.close()
	calls := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			svc.mu.Lock()
			c := svc.calls
			svc.mu.Unlock()
			if c >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Show was called %d times, want %d", c, n)
			}
		}
	}
	ui(func() { v.Select(7) })
	calls(1) // the first load is under way (and waits) before the second starts
	ui(func() { v.Select(7) })
	calls(2)
	close(second)
	waitUpdated(t, v, func() bool { return v.report != nil })
	close(first)
	// The first load's result arrives now; give it every chance to be (wrongly) shown.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-v.Updated:
		case <-time.After(50 * time.Millisecond):
		}
		ui(func() {
			if v.report.Study.Name != "load 2" {
				t.Fatalf("the view shows %q after a later load was shown", v.report.Study.Name)
			}
		})
	}
}

// The receipt preview shows tables as aligned columns (RichText renders no Markdown tables).
func TestPreviewMarkdownTables(t *testing.T) {
	md := "# Receipt\n\nPlan `abc`\n\n| Test | d0 | rows\\_sha256 |\n|---|--:|---|\n| `tg32` | 1,234.5 | a\\|b |\n| pp64 | 9 | c |\n\nAfter.\n"
	got := previewMarkdown(md)
	want := "# Receipt\n\nPlan `abc`\n\n```\nTest  d0       rows_sha256\n----  -------  -----------\ntg32  1,234.5  a|b\npp64  9        c\n```\n\nAfter.\n"
	if got != want {
		t.Fatalf("preview:\n%s\nwant:\n%s", got, want)
	}
	// A paragraph's lines join with a space (a soft line break); lists, headings and code do not.
	md = "Study 1 · *plan SHA-256* `2a84`\nThe demo study shipped.\n\n- one\n- two\n\n```\nkeep\nthis\n```\n"
	want = "Study 1 · *plan SHA-256* `2a84` The demo study shipped.\n\n- one\n- two\n\n```\nkeep\nthis\n```\n"
	if got := previewMarkdown(md); got != want {
		t.Fatalf("prose:\n%q\nwant:\n%q", got, want)
	}
	// A chart of the bundle (shown above the text) is named, not loaded from the working folder.
	md = "## Charts\n\n![tg@0 against mean KLD](plots/pareto.png) ([SVG](plots/pareto.svg))\n\n```\n![kept](x.png)\n```\n"
	want = "## Charts\n\n(chart above: tg@0 against mean KLD) ([SVG](plots/pareto.svg))\n\n```\n![kept](x.png)\n```\n"
	if got := previewMarkdown(md); got != want {
		t.Fatalf("images:\n%q\nwant:\n%q", got, want)
	}
}

// A run that leaves legs without results ends "incomplete" (not "finished"), naming the legs
// Run tries again and those out of retries.
func TestStudiesIncompleteRun(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeStudies{incomplete: []study.LegStatus{{Leg: "tiny/d128", MaxAttempts: 3, Failed: 1}, {Leg: "tiny/d256", MaxAttempts: 1, Failed: 1, Final: true}}}
	v := build(func() *StudiesView { return newStudiesView(a, a.NewWindow("t"), svc) })
	defer v.close()
	ui(v.Start)
	waitUpdated(t, v, func() bool { return v.report != nil })
	ui(func() { test.Tap(v.RunButton) })
	want := "incomplete: 2 of 2 legs have no results; Run tries again tiny/d128; out of retries: tiny/d256"
	waitUpdated(t, v, func() bool { return v.ProgressMsg.Text == want })
}

// A study that sweeps devices: rows that asked for different devices ran on different
// backends, and that is not a disagreement; where the rows ran is read from the row (a Vulkan
// build's CPU row says "Vulkan" in its backends field), and two rows that asked for the same
// device but ran on different backends are MIXED.
func TestGateLightsDeviceSweep(t *testing.T) {
	row := func(devices string, ngl int64) *runner.Sample {
		return &runner.Sample{Result: benchfmt.Result{Backends: "Vulkan", GPUInfo: "llvmpipe", Devices: devices, NGPULayers: ngl, Known: benchfmt.AllFields}}
	}
	var g gateCounts
	for _, s := range []*runner.Sample{row("none", 99), row("Vulkan0", 99), row("none", 99)} {
		g.observe(study.Event{Kind: study.EventSample, Sample: s})
	}
	if got := g.String(); !strings.HasSuffix(got, " · backend evidence ●ok, one per device asked for: CPU, ngl 99, llvmpipe ×2; Vulkan, ngl 99, llvmpipe ×1") {
		t.Fatalf("device sweep: %s", got)
	}
	if got := g.Live(); !strings.HasSuffix(got, " · backend evidence ●ok (2 devices)") {
		t.Fatalf("live: %s", got)
	}
	g.observe(study.Event{Kind: study.EventSample, Sample: row("Vulkan0", 0)}) // asked for Vulkan0, ran on the CPU
	if got := g.Live(); !strings.HasSuffix(got, "backend evidence ●MIXED (rows disagree: check the build and device)") {
		t.Fatalf("live after a row that left the device: %s", got)
	}
}

// TestStudiesListFollowsARun: once a run ends, the Studies list (and what it hands on, the
// Overview's recent studies and the Compare section) says the study's state as the notebook has
// it now, without Refresh (it said "registered · 0 legs" until Refresh).
func TestStudiesListFollowsARun(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeStudies{}
	v := build(func() *StudiesView { return newStudiesView(a, a.NewWindow("t"), svc) })
	defer v.close()
	var mu sync.Mutex
	var listed [][]StudySummary
	v.onListed = func(l []StudySummary) {
		mu.Lock()
		listed = append(listed, l)
		mu.Unlock()
	}
	ui(v.Start)
	waitUpdated(t, v, func() bool { return v.report != nil && len(v.studies) == 1 })
	ui(func() {
		if s := v.studies[0]; s.Status != "registered" || studyBadge(s) == "" {
			t.Fatalf("before the run the list says %+v", s)
		}
		test.Tap(v.RunButton)
	})
	waitUpdated(t, v, func() bool {
		return strings.HasPrefix(v.ProgressMsg.Text, "finished") && len(v.studies) == 1 && v.studies[0].Status == "complete"
	})
	ui(func() {
		if s := v.studies[0]; s.Legs != 2 {
			t.Errorf("after the run the list says %+v", s)
		}
		if v.selected != 7 {
			t.Errorf("the study shown changed to %d", v.selected)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if n := len(listed); n == 0 || listed[n-1][0].Status != "complete" {
		t.Errorf("the Overview and Compare were last handed %v", listed)
	}
}
