package caprun

import (
	"os"
	"path/filepath"

	"sparkbench/app/capacity"
	"sparkbench/app/energy"
)

// lifetimeTelemetry samples one server lifetime, when the run has a telemetry hook (nil
// otherwise: every method does nothing): each client level marked at its start and end, the
// samples written to telemetry.jsonl in the lifetime's folder when it ends.
type lifetimeTelemetry struct{ span energy.SpanRun }

func (r *Run) beginTelemetry() *lifetimeTelemetry {
	if r.spec.Telemetry == nil {
		return nil
	}
	return &lifetimeTelemetry{span: r.spec.Telemetry.BeginSpan()}
}

// mark places a cell mark (energy.MarkCellStart or MarkCellEnd) for the client level.
func (t *lifetimeTelemetry) mark(metric string, clients int) {
	if t != nil && t.span != nil {
		t.span.Mark("clients", metric, float64(clients))
	}
}

// stop ends the sampling of a lifetime that did not finish (its samples are dropped).
func (t *lifetimeTelemetry) stop() {
	if t != nil && t.span != nil {
		t.span.End()
		t.span = nil
	}
}

// write ends the sampling and writes the samples into the lifetime's folder (dir; rel from the
// run folder), naming the file in the lifetime's record.
func (t *lifetimeTelemetry) write(dir, rel string, rl *capacity.RunLifetime) error {
	if t == nil || t.span == nil {
		return nil
	}
	samples := t.span.End()
	t.span = nil
	b, err := energy.AppendSamplesJSONL(nil, 0, samples)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, capacity.RunTelemetryFile), b, 0o644); err != nil {
		return err
	}
	rl.Files["telemetry"] = filepath.Join(rel, capacity.RunTelemetryFile)
	return nil
}

// telemetryFile is a lifetime's telemetry.jsonl in the run folder out (in its folder of dirs),
// when it was sampled.
func telemetryFile(out string, dirs capacity.LifetimeDirs, k capacity.LifetimeKey) (string, bool) {
	p := filepath.Join(out, filepath.FromSlash(dirs.Of(k)), capacity.RunTelemetryFile)
	_, err := os.Stat(p)
	return p, err == nil
}
