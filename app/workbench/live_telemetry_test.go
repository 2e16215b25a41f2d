package workbench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
	"sparkbench/store"
)

// A study with a telemetry block run with LiveTelemetry hands OnEvent every reading as it is
// taken (a fake NVML GPU at a constant 80 W here), each with the notebook leg that started it;
// the same run without LiveTelemetry sends no telemetry event (the CLI's events unchanged).
func TestRunThroughputLiveTelemetryEvents(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb, err := store.Open(filepath.Join(dir, "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	fake := func() *live.Config {
		nv := &telemetrytest.NVML{Clock: telemetrytest.NewClock(), GPUs: []*telemetrytest.GPU{
			{Label: "Fake GPU", Load: func(float64) float64 { return 80 }, NoEnergyCounter: true}}}
		return &live.Config{Root: t.TempDir(), NvidiaSMI: "-", AMDSMI: "-", ROCmSMI: "-", NVML: nv}
	}
	register := func(name string) int64 {
		plan := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "tiny", "path": %q, "sha256": "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"}],
  "axes": {"depths": [0, 64], "n_prompt": [16], "n_gen": [8], "reps": 1, "threads": [1]},
  "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
  "telemetry": {"interval_ms": 20}}`, name, tiny)
		reg, err := RegisterThroughput(context.Background(), nb, ThroughputRegisterRequest{Data: []byte(plan), File: name + ".json", LlamaDir: loc.Dir, DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return reg.StudyID
	}
	run := func(id int64, liveOn bool) (started map[int64]string, readings map[int64][]float64) {
		var mu sync.Mutex
		started, readings = map[int64]string{}, map[int64][]float64{}
		sum, err := RunThroughput(context.Background(), nb, ThroughputRunRequest{ID: id, LlamaDir: loc.Dir, Telemetry: fake(), LiveTelemetry: liveOn,
			OnEvent: func(e study.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Kind {
				case study.EventLegStarted:
					started[e.LegID] = e.Leg
				case study.EventTelemetry:
					for _, p := range e.Telemetry.Points {
						if p.Metric == study.TelemetryPowerW {
							readings[e.LegID] = append(readings[e.LegID], p.Value)
						}
					}
				}
			}})
		if err != nil || sum.Status != study.StatusComplete {
			t.Fatalf("run: %+v %v", sum, err)
		}
		return started, readings
	}
	started, readings := run(register("live"), true)
	if len(started) != 2 || len(readings) != 2 {
		t.Fatalf("legs started %v, legs with live power readings %d", started, len(readings))
	}
	for leg, ws := range readings {
		if _, ok := started[leg]; !ok {
			t.Errorf("readings for leg %d, which never started", leg)
		}
		for _, w := range ws {
			if w != 80 {
				t.Fatalf("leg %d: power %v W, want the fake GPU's 80", leg, w)
			}
		}
		if len(ws) < 2 {
			t.Errorf("leg %d: %d readings (the first and the closing one at least)", leg, len(ws))
		}
	}
	if _, readings := run(register("quiet"), false); len(readings) != 0 {
		t.Fatalf("without LiveTelemetry: %d legs had telemetry events", len(readings))
	}
}
