package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
	"sparkbench/store"
)

// notebookStudies is the window's study service over a real notebook and the real llama-bench
// (-t 1), its samplers a fake NVML GPU: what cmd wires, with the hardware this machine lacks.
type notebookStudies struct {
	nb    *store.Notebook
	dir   string
	ids   []int64
	fake  func() *live.Config
	first int64
}

func (s *notebookStudies) List(context.Context) ([]StudySummary, error) {
	var out []StudySummary
	for _, id := range s.ids {
		out = append(out, StudySummary{ID: id, Name: fmt.Sprintf("study %d", id), Kind: "throughput", Status: "registered"})
	}
	return out, nil
}

func (s *notebookStudies) Show(ctx context.Context, id int64) (*study.Report, error) {
	return workbench.ShowThroughput(ctx, s.nb, id)
}

func (s *notebookStudies) Run(ctx context.Context, id int64, on func(study.Event)) (study.RunSummary, error) {
	return workbench.RunThroughput(ctx, s.nb, workbench.ThroughputRunRequest{ID: id, LlamaDir: s.dir, OnEvent: on, Telemetry: s.fake(), LiveTelemetry: true})
}

func (s *notebookStudies) EnsureDemo(context.Context) (int64, error)                     { return s.first, nil }
func (s *notebookStudies) HumanVerdict(context.Context, int64, study.HumanVerdict) error { return nil }
func (s *notebookStudies) AddFinding(context.Context, int64, study.FindingRequest) (string, error) {
	return "", nil
}
func (s *notebookStudies) Receipt(context.Context, int64, string) (ReceiptExport, error) {
	return ReceiptExport{}, nil
}

// fakeGPU80 is a sampler set with one fake NVML GPU at a constant 80 W (so 2520 MHz and
// 48 °C, the fake's clock and temperature at that load) over an empty sysfs tree.
func fakeGPU80(t *testing.T) func() *live.Config {
	return func() *live.Config {
		nv := &telemetrytest.NVML{Clock: telemetrytest.NewClock(), GPUs: []*telemetrytest.GPU{
			{Label: "Fake GPU", Load: func(float64) float64 { return 80 }, NoEnergyCounter: true}}}
		return &live.Config{Root: t.TempDir(), NvidiaSMI: "-", AMDSMI: "-", ROCmSMI: "-", NVML: nv}
	}
}

func registerTiny(t *testing.T, nb *store.Notebook, dir, llamaDir, name, extra string) int64 {
	t.Helper()
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	plan := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "tiny", "path": %q, "sha256": "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"}],
  "axes": {"depths": [0, 64], "n_prompt": [16], "n_gen": [8], "reps": 1, "threads": [1]},
  "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}%s}`, name, tiny, extra)
	reg, err := workbench.RegisterThroughput(context.Background(), nb, workbench.ThroughputRegisterRequest{Data: []byte(plan), File: name + ".json", LlamaDir: llamaDir, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return reg.StudyID
}

// A study whose plan has a telemetry block, run from the window on the real llama-bench with a
// fake 80 W GPU: the timeline under the live chart appears with the GPU's power, clock and
// temperature readings, the Bench machine card lists the samplers in the doctor's words and
// shows the readings live while the study runs (the last ones after), and the study view
// shows energy per token against depth. A study without the block leaves the view as it was:
// no timeline, no energy chart, and the card says why there are no readings.
func TestTelemetryTimelineMachineCardAndEnergyChart(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb, err := store.Open(filepath.Join(dir, "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	svc := &notebookStudies{nb: nb, dir: loc.Dir, fake: fakeGPU80(t)}
	sampled := registerTiny(t, nb, dir, loc.Dir, "sampled", `, "telemetry": {"interval_ms": 20}`)
	plain := registerTiny(t, nb, dir, loc.Dir, "plain", "")
	svc.ids, svc.first = []int64{sampled, plain}, sampled
	statuses := live.Discover(context.Background(), *svc.fake()).Status

	a := newTestApp(t)
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Studies: svc, Doctor: func(context.Context, string) app.DoctorReport {
			return app.DoctorReport{Machine: "test machine", Telemetry: statuses}
		}})
	})
	defer ui(wb.Studies.close)
	waitChecked(t, wb.Bench)
	v := wb.Studies
	waitUpdated(t, v, func() bool { return v.report != nil && v.report.Study.ID == sampled })
	var mu sync.Mutex
	var liveTexts []string
	ui(func() {
		for _, want := range []string{"nvml:         available: GPU0", "nvidia-smi:   not available:", "rapl:         not available:"} {
			if !strings.Contains(wb.Bench.Card.Samplers.Text, want) {
				t.Errorf("samplers card lacks %q:\n%s", want, wb.Bench.Card.Samplers.Text)
			}
		}
		if wb.Bench.Card.Readings.Text != notRunning {
			t.Errorf("readings before any run: %q", wb.Bench.Card.Readings.Text)
		}
		if v.Telemetry.Object.Visible() || v.Energy.Object.Visible() {
			t.Fatal("timeline or energy chart shown before the study ran")
		}
		v.onTelemetry = func(id int64, latest []LiveReading, running bool) {
			wb.Bench.ShowLive(id, latest, running)
			if running {
				mu.Lock()
				liveTexts = append(liveTexts, wb.Bench.Card.Readings.Text)
				mu.Unlock()
			}
		}
		test.Tap(v.RunButton)
	})
	waitUpdated(t, v, func() bool {
		return v.report != nil && v.report.Study.LegsDone == 2 && strings.HasPrefix(v.ProgressMsg.Text, "finished")
	})
	select {
	case <-v.Telemetry.Chart.Frames:
	case <-time.After(10 * time.Second):
		t.Fatal("the timeline never drew a frame")
	}
	ui(func() { checkSampledRun(t, wb, sampled) })
	mu.Lock()
	if len(liveTexts) == 0 || !strings.HasPrefix(liveTexts[0], fmt.Sprintf("live readings (study %d running", sampled)) || !strings.Contains(liveTexts[0], "nvml GPU0 80 W") {
		t.Errorf("machine card while running: %q", liveTexts)
	}
	mu.Unlock()

	// The plain study: nothing of telemetry in its view, before or after its run.
	ui(func() { v.Select(plain) })
	waitUpdated(t, v, func() bool { return v.report != nil && v.report.Study.ID == plain })
	ui(func() {
		if v.Telemetry.Object.Visible() || v.Energy.Object.Visible() {
			t.Fatal("the sampled study's timeline or energy chart shown with the plain study")
		}
		test.Tap(v.RunButton)
	})
	waitUpdated(t, v, func() bool {
		return v.report != nil && v.report.Study.ID == plain && v.report.Study.LegsDone == 2 && strings.HasPrefix(v.ProgressMsg.Text, "finished")
	})
	ui(func() {
		if v.Telemetry.Object.Visible() || v.Energy.Object.Visible() || v.report.Energy != nil {
			t.Fatal("a study without a telemetry block got a timeline or an energy chart")
		}
		if v.tel.samples != 0 {
			t.Fatalf("the plain study's run sent %d telemetry samples", v.tel.samples)
		}
		if wb.Bench.Card.Readings.Text != notRunning {
			t.Errorf("machine card after a run without telemetry: %q", wb.Bench.Card.Readings.Text)
		}
	})
}

// checkSampledRun holds, after the sampled study ran, its timeline (every device reading of
// the fake GPU, both legs marked), the newest readings and the machine card's last readings.
// Under the UI lock.
func checkSampledRun(t *testing.T, wb *Workbench, sampled int64) {
	t.Helper()
	v := wb.Studies
	if !v.Telemetry.Object.Visible() {
		t.Fatal("no timeline under the live chart for a plan with a telemetry block")
	}
	v.mu.Lock()
	charts := map[string]int{}
	for _, m := range telMetrics {
		ch := v.tel.chart(m.choice, v.meta)
		if len(ch.Series) != 1 || ch.Series[0].Label != "nvml GPU0" {
			t.Fatalf("%s timeline series: %+v", m.choice, ch.Series)
		}
		for _, p := range ch.Series[0].Points {
			if want := map[string]float64{telPower: 80, telClock: 2520, telTemp: 48}[m.choice]; p.Value != want {
				t.Fatalf("%s reading %v, want %v", m.choice, p.Value, want)
			}
		}
		charts[m.choice] = len(ch.Series[0].Points)
		if len(ch.Legs) != 2 || ch.Legs[0].Label != "tiny/d0" || ch.Legs[1].Label != "tiny/d64" || ch.Legs[1].T <= ch.Legs[0].T {
			t.Fatalf("leg marks: %+v", ch.Legs)
		}
	}
	v.mu.Unlock()
	if charts[telPower] < 4 {
		t.Errorf("power readings drawn: %d (two legs, a reading at each start and end at least)", charts[telPower])
	}
	if want := "newest: nvml GPU0 80 W · nvml GPU0 2520 MHz · nvml GPU0 48 °C"; v.Telemetry.Latest.Text != want {
		t.Errorf("newest readings %q, want %q", v.Telemetry.Latest.Text, want)
	}
	card := wb.Bench.Card.Readings.Text
	if !strings.HasPrefix(card, fmt.Sprintf("last readings of study %d (its run has ended", sampled)) ||
		!strings.Contains(card, "power        nvml GPU0 80 W") || !strings.Contains(card, "clock        nvml GPU0 2520 MHz") ||
		!strings.Contains(card, "temperature  nvml GPU0 48 °C") {
		t.Errorf("machine card after the run:\n%s", card)
	}
	if !v.Energy.Object.Visible() {
		t.Error("no energy per token chart for a study with energy figures")
	}
}
