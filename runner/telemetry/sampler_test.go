package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

// A source that blocks in Read until released, ignoring its context (a driver call that hangs).
type hanging struct{ release chan struct{} }

func (h *hanging) Name() string { return "stuck" }
func (h *hanging) Close() error { return nil }
func (h *hanging) Read(context.Context) ([]telemetry.Point, error) {
	<-h.release
	return nil, nil
}

func TestSamplerReadsUntilStoppedAndBracketsTheWindow(t *testing.T) {
	ok := &telemetrytest.Script{SourceName: "ok", Reads: []telemetrytest.ScriptRead{{Points: []telemetry.Point{{Device: "d", Metric: telemetry.PowerW, Value: 1}}}}}
	bad := &telemetrytest.Script{SourceName: "bad", Reads: []telemetrytest.ScriptRead{
		{Err: errors.New("unreadable output: garbage")},
		{Points: []telemetry.Point{{Device: "d", Metric: telemetry.PowerW, Value: 2}}},
		{Err: errors.New("device gone: " + telemetry.ErrGone.Error())},
		{Err: errors.Join(errors.New("device gone"), telemetry.ErrGone)},
	}}
	s := telemetry.Start([]telemetry.Source{ok, bad}, time.Millisecond)
	for ok.ReadCount() < 5 || bad.ReadCount() < 4 {
		time.Sleep(time.Millisecond)
	}
	samples := s.Stop()
	n := ok.ReadCount()
	time.Sleep(5 * time.Millisecond)
	if ok.ReadCount() != n {
		t.Fatal("a source was read after Stop")
	}
	var okN, badN int
	var last time.Duration
	for _, smp := range samples {
		if smp.T < last {
			t.Fatalf("samples out of order: %v after %v", smp.T, last)
		}
		last = smp.T
		switch smp.Source {
		case "ok":
			okN++
		case "bad":
			badN++
		}
	}
	if okN != n || okN < 2 {
		t.Fatalf("ok: %d samples kept of %d reads", okN, n)
	}
	// garbage, a reading, an error that only looks like ErrGone, then the real one: 4 reads,
	// the fourth ends it, and no closing read is asked of a gone source.
	if badN != 4 || bad.ReadCount() != 4 {
		t.Fatalf("bad: %d samples, %d reads; want 4 and 4", badN, bad.ReadCount())
	}
	if g := s.Gone(); len(g) != 1 || !strings.Contains(g["bad"], "device gone") {
		t.Fatalf("gone: %v", g)
	}
}

// A source stuck inside a read never holds Stop beyond its bound, and is reported gone.
func TestSamplerStopIsBoundedByAStuckSource(t *testing.T) {
	h := &hanging{release: make(chan struct{})}
	defer close(h.release)
	ok := &telemetrytest.Script{SourceName: "ok", Reads: []telemetrytest.ScriptRead{{Points: []telemetry.Point{{Device: "d", Metric: telemetry.TempC, Value: 50}}}}}
	s := telemetry.Start([]telemetry.Source{h, ok}, time.Millisecond)
	for ok.ReadCount() < 3 {
		time.Sleep(time.Millisecond)
	}
	samples := s.Stop()
	if len(samples) < 3 {
		t.Fatalf("%d samples", len(samples))
	}
	if g := s.Gone(); !strings.Contains(g["stuck"], "still inside a read") {
		t.Fatalf("gone: %v", g)
	}
}
