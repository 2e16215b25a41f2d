// Package energyrun samples the machine around each leg an engine runs: it discovers the
// samplers once (runner/telemetry/live), starts a Sampler when a leg starts, marks each row's
// arrival on the leg's clock, and when the leg ends records the samples in the notebook and
// checks the plan's machine-state gates (app/energy).
package energyrun

import (
	"context"
	"math"
	"sync"
	"time"

	"sparkbench/app/energy"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
)

// Recorder is the part of the notebook the hook writes to (store.Notebook has it).
type Recorder interface {
	AddTelemetry(ctx context.Context, legID int64, samples []telemetry.Sample) error
}

// Hook implements energy.LegHook.
type Hook struct {
	Rec      Recorder
	Sources  []telemetry.Source
	Status   []telemetry.Status
	Interval time.Duration
	Gates    energy.Gates
	// OnSample, when set before the first leg, is handed each reading of a notebook leg as it
	// is taken, with the leg's notebook ID, on the sampler's goroutine (the window's live
	// timeline); it must return quickly. Capacity spans are not handed on.
	OnSample func(legID int64, s telemetry.Sample)

	mu   sync.Mutex
	gone map[string]string // sources that stopped: not started again
}

// New discovers the samplers with cfg (its Interval is the plan's).
func New(ctx context.Context, rec Recorder, cfg live.Config, gates energy.Gates) (*Hook, func() error) {
	set := live.Discover(ctx, cfg)
	return &Hook{Rec: rec, Sources: set.Sources, Status: set.Status, Interval: cfg.Interval, Gates: gates}, set.Close
}

// Statuses is what discovery found, sampler by sampler (energy.StatusReporter).
func (h *Hook) Statuses() []telemetry.Status {
	if h == nil {
		return nil
	}
	return h.Status
}

// Gone lists the sources that stopped during the run, with why.
func (h *Hook) Gone() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for k, v := range h.gone {
		out[k] = v
	}
	return out
}

func (h *Hook) live() []telemetry.Source {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []telemetry.Source
	for _, s := range h.Sources {
		if _, g := h.gone[s.Name()]; !g {
			out = append(out, s)
		}
	}
	return out
}

// Begin starts sampling for the notebook leg legID.
func (h *Hook) Begin(_ context.Context, legID int64) energy.LegRun {
	if h.OnSample != nil {
		on := h.OnSample
		return &legRun{span: h.startWith(func(s telemetry.Sample) { on(legID, s) }), legID: legID}
	}
	return &legRun{span: h.start(), legID: legID}
}

// BeginSpan starts sampling a span that is not a notebook leg (a capacity server lifetime):
// its samples are returned by End, not recorded.
func (h *Hook) BeginSpan() energy.SpanRun { return h.start() }

func (h *Hook) start() *span { return &span{h: h, s: telemetry.Start(h.live(), h.Interval)} }

func (h *Hook) startWith(notify func(telemetry.Sample)) *span {
	return &span{h: h, s: telemetry.StartNotify(h.live(), h.Interval, notify)}
}

// span is one sampling from start to end, with the marks placed on its clock.
type span struct {
	h     *Hook
	s     *telemetry.Sampler
	mu    sync.Mutex
	marks []telemetry.Sample
	rows  int
}

// Mark places a mark now.
func (sp *span) Mark(device, metric string, value float64) {
	t := time.Since(sp.s.Started())
	sp.mu.Lock()
	sp.marks = append(sp.marks, telemetry.Sample{Source: telemetry.SourceMark, T: t,
		Points: []telemetry.Point{{Device: device, Metric: metric, Value: value}}})
	sp.mu.Unlock()
}

// End stops sampling and returns the samples, the marks and the end mark; the sources that
// stopped are not started again.
func (sp *span) End() []telemetry.Sample {
	all, _ := sp.end()
	return all
}

func (sp *span) end() (all, readings []telemetry.Sample) {
	end := time.Since(sp.s.Started())
	readings = sp.s.Stop()
	sp.h.mu.Lock()
	for k, v := range sp.s.Gone() {
		if sp.h.gone == nil {
			sp.h.gone = map[string]string{}
		}
		sp.h.gone[k] = v
	}
	sp.h.mu.Unlock()
	sp.mu.Lock()
	all = append(append([]telemetry.Sample(nil), readings...), sp.marks...)
	sp.mu.Unlock()
	all = append(all, telemetry.Sample{Source: telemetry.SourceMark, T: end,
		Points: []telemetry.Point{{Device: "leg", Metric: telemetry.MarkEnd, Value: 1}}})
	return all, readings
}

type legRun struct {
	*span
	legID int64
}

// Row marks a row's arrival now (its sequence number as value).
func (l *legRun) Row() {
	l.mu.Lock()
	n := l.rows
	l.rows++
	l.mu.Unlock()
	l.Mark("leg", telemetry.MarkRow, float64(n))
}

// End stops sampling, records the samples with the marks and the end, and returns the gates
// that fired over the leg.
func (l *legRun) End(ctx context.Context) ([]energy.Breach, error) {
	all, samples := l.end()
	if err := l.h.Rec.AddTelemetry(ctx, l.legID, all); err != nil {
		return nil, err
	}
	// The gates read every sample of the leg, the closing reading (just after the process
	// ended) among them.
	return l.h.Gates.Check(samples, energy.Window{From: 0, To: time.Duration(math.MaxInt64)}), nil
}
