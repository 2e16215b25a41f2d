package studyrun

import (
	"context"
	"sync"
	"testing"
	"time"

	"sparkbench/app/energy"
	"sparkbench/app/energy/energyrun"
	"sparkbench/app/study"
	"sparkbench/runner/telemetry"
)

// hotSource reads one GPU at 100 W whose thermal slowdown is on while the leg named hot runs.
type hotSource struct {
	mu      sync.Mutex
	current string
	hot     string
}

func (s *hotSource) Name() string { return "nvml" }
func (s *hotSource) Close() error { return nil }
func (s *hotSource) set(leg string) {
	s.mu.Lock()
	s.current = leg
	s.mu.Unlock()
}

func (s *hotSource) Read(context.Context) ([]telemetry.Point, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	th := 0.0
	if s.current != "" && s.current == s.hot {
		th = 1
	}
	return []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 100}, {Device: "GPU0", Metric: telemetry.ThrottleHot, Value: th}}, nil
}

// legClears ends each leg's sampling, then tells the source that no leg runs.
type legClears struct {
	energy.LegHook
	src *hotSource
}

type clearingRun struct {
	energy.LegRun
	src *hotSource
}

func (h legClears) Begin(ctx context.Context, legID int64) energy.LegRun {
	return clearingRun{h.LegHook.Begin(ctx, legID), h.src}
}

func (r clearingRun) End(ctx context.Context) ([]energy.Breach, error) {
	b, err := r.LegRun.End(ctx)
	r.src.set("")
	return b, err
}

type telemetryRecorder struct {
	*memRecorder
	mu      sync.Mutex
	gates   []study.GateRecord
	samples map[int64][]telemetry.Sample
}

func (r *telemetryRecorder) RecordGate(_ context.Context, g study.GateRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gates = append(r.gates, g)
	return nil
}

func (r *telemetryRecorder) AddTelemetry(_ context.Context, legID int64, s []telemetry.Sample) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples[legID] = append(r.samples[legID], s...)
	return nil
}

// A thermal slowdown during one leg flags exactly that leg, as a CV breach would: its gate is
// recorded with the code thermal:throttled, its rows turn flagged and never count (it kept no
// rows, so it has no results: the study is incomplete and the prediction that reads it waits
// for a later attempt), and the queue goes on; every other leg is ok.
// Every leg's samples are recorded with a mark per row and the leg's end.
func TestEngineTelemetryFlagsExactlyTheThrottledLeg(t *testing.T) {
	h := newHarness(t, nil)
	src := &hotSource{hot: "tiny/d128"}
	h.bench.onLeg = src.set
	rec := &telemetryRecorder{memRecorder: h.rec, samples: map[int64][]telemetry.Sample{}}
	hook := &energyrun.Hook{Rec: rec, Sources: []telemetry.Source{src}, Interval: time.Millisecond}
	e := h.engine()
	e.Rec, e.Telemetry = rec, legClears{hook, src}
	sum, err := e.Run(context.Background(), h.id)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != study.StatusIncomplete || sum.LegsRun != 8 || len(sum.Incomplete) != 1 || sum.Incomplete[0].Leg != "tiny/d128" {
		t.Fatalf("the queue went on, the throttled leg without results: %+v", sum)
	}
	legs, _ := h.rec.Legs(context.Background(), h.id)
	var flaggedID int64
	for _, l := range legs {
		switch {
		case l.Label == "tiny/d128":
			flaggedID = l.ID
			if l.Class != "flagged" || l.Results != 0 || l.Flagged != l.Rows || l.Rows == 0 || l.Reason[:len(energy.CodeThrottled)] != energy.CodeThrottled {
				t.Errorf("throttled leg %+v", l)
			}
		case l.Class != "ok" || l.Results != l.Rows:
			t.Errorf("leg %s: %+v", l.Label, l)
		}
		marks, end, ok := energy.Marks(rec.samples[l.ID])
		if l.Role != study.RoleLeg {
			if len(rec.samples[l.ID]) != 0 {
				t.Errorf("%s was sampled", l.Label)
			}
			continue
		}
		if !ok || len(marks) != l.Rows || end <= 0 {
			t.Errorf("leg %s: %d row marks for %d rows, end %v %v", l.Label, len(marks), l.Rows, end, ok)
		}
	}
	if len(rec.gates) != 1 || rec.gates[0].LegID != flaggedID || rec.gates[0].Code != energy.CodeThrottled || rec.gates[0].Name != "thermal:GPU0" {
		t.Fatalf("gates %+v", rec.gates)
	}
	rep, _ := study.Show(context.Background(), rec, h.id)
	for _, s := range rep.Scoreboard {
		if s.Prediction == "P4" && s.Verdict.Outcome != study.Pending {
			t.Errorf("P4 reads the throttled leg: %+v", s.Verdict)
		}
	}
	for _, c := range rep.Results {
		if c.Leg == "tiny/d128" {
			t.Errorf("a row of the throttled leg counted: %+v", c)
		}
	}
}
