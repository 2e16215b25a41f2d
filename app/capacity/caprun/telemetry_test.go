package caprun

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sparkbench/app/bundle"
	"sparkbench/app/capacity"
	"sparkbench/app/energy/energyrun"
	"sparkbench/app/receipt"
	"sparkbench/runner/telemetry"
)

// fiftyWatts is a fake GPU sampler drawing a constant 50 W (no energy counter).
type fiftyWatts struct{}

func (fiftyWatts) Name() string { return "nvml" }
func (fiftyWatts) Close() error { return nil }
func (fiftyWatts) Read(context.Context) ([]telemetry.Point, error) {
	return []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 50}}, nil
}

// A capacity run with a telemetry hook samples each server lifetime (the fake server here, a
// fake 50 W GPU): each lifetime's folder gets telemetry.jsonl with a start and end mark per
// client level, and the assembled study gives every pass of every cell its energy (50 W mean,
// integrated) and J per generated token = 50 W / the pass's generation rate, the cell the
// median over passes.
func TestEngineTelemetrySamplesEachLifetime(t *testing.T) {
	dir := t.TempDir()
	planPath := writeEnginePlan(t, dir)
	ctx := context.Background()
	rec := &memRecorder{}
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, hashFile)
	if err != nil {
		t.Fatal(err)
	}
	hook := &energyrun.Hook{Sources: []telemetry.Source{fiftyWatts{}}, Interval: 5 * time.Millisecond}
	e := &Engine{Rec: rec, Server: os.Args[0], Env: []string{tag(t), fakeServerEnv + "=1"}, DataDir: filepath.Join(dir, "data"),
		StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, Hash: hashFile, Telemetry: hook}
	sum, err := e.Run(ctx, reg.StudyID, "")
	if err != nil || sum.Status != capacity.StatusComplete {
		t.Fatalf("run: %+v %v", sum, err)
	}
	tel, _ := filepath.Glob(filepath.Join(sum.RunDir, "runs", "*", "*", "*", capacity.RunTelemetryFile))
	b, err := os.ReadFile(filepath.Join(sum.RunDir, capacity.RunStudyFile))
	if err != nil {
		t.Fatal(err)
	}
	var res capacity.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(tel) != len(res.Plan.Passes) || len(tel) == 0 || res.Definitions["j_per_generated_token"] == "" {
		t.Fatalf("telemetry files %v for passes %v; definitions %v", tel, res.Plan.Passes, res.Definitions)
	}
	cells := 0
	for _, c := range res.Candidates {
		for _, cell := range c.Cells {
			cells++
			var per []float64
			for _, p := range cell.Passes {
				f := p.Energy
				if f == nil || p.GenerationRate == nil || f.MeanW != 50 || f.Method != "integrated" || f.Clients != cell.Clients ||
					math.Abs(f.EnergyJ-50*f.Seconds) > 1e-3 || math.Abs(f.JPerToken - 50 / *p.GenerationRate) > 1e-8 {
					t.Errorf("cell C%d pass %s: energy %+v, rate %v", cell.Clients, p.Pass, f, p.GenerationRate)
					continue
				}
				per = append(per, f.JPerToken)
			}
			if len(per) != len(cell.Passes) || cell.JPerGeneratedToken == nil || math.Abs(*cell.JPerGeneratedToken-median(per)) > 1e-12 {
				t.Errorf("cell C%d: J per generated token %v from %v", cell.Clients, cell.JPerGeneratedToken, per)
			}
		}
	}
	if cells != 2 {
		t.Fatalf("%d cells", cells)
	}
	// The bundle carries each lifetime's telemetry.jsonl as a raw file, its study.json is the
	// run folder's (energy included), and it verifies byte for byte.
	files, err := bundle.Capacity(sum.RunDir, bundle.CapacityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name := range files {
		if filepath.Base(name) == capacity.RunTelemetryFile {
			n++
		}
	}
	if vr := receipt.Verify(files, receipt.VerifyOptions{HashPlots: true}); !vr.OK() || n != len(tel) || string(files[receipt.FileStudy]) != string(b) {
		t.Fatalf("bundle: %d telemetry files, study.json same %v, verify %+v", n, string(files[receipt.FileStudy]) == string(b), vr.Problems)
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
