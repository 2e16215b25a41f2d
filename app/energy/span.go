package energy

import (
	"fmt"
	"sort"
	"time"

	"sparkbench/runner/telemetry"
)

// A span is sampled like a leg but is not one notebook leg: a capacity server lifetime, each
// client level (a cell) marked within it. Its samples are kept in the run folder
// (telemetry.jsonl beside the lifetime's request records) on the span's clock.

// Cell marks (source telemetry.SourceMark, device "clients", the client level as value).
const (
	MarkCellStart = "cell_start"
	MarkCellEnd   = "cell_end"
)

// SpanHook samples a span (energyrun.Hook has it; nil: no telemetry).
type SpanHook interface {
	BeginSpan() SpanRun
}

// StatusReporter is a hook that can say what sampler discovery found: each sampler available
// or not, and why (energyrun.Hook has it). Runs journal it with their start, so the notebook
// records which samplers read and why the others did not.
type StatusReporter interface {
	Statuses() []telemetry.Status
}

// Statuses is what hook reports when it is a StatusReporter (nil otherwise).
func Statuses(hook any) []telemetry.Status {
	if sr, ok := hook.(StatusReporter); ok && sr != nil {
		return sr.Statuses()
	}
	return nil
}

// SpanRun is one span's sampling: Mark now on the span's clock, End once when the span is
// over: every sample, the marks among them, and the end mark.
type SpanRun interface {
	Mark(device, metric string, value float64)
	End() []telemetry.Sample
}

// CellFigures is one cell's energy: its window from its start mark to its end mark.
type CellFigures struct {
	Clients int     `json:"clients"`
	Seconds float64 `json:"seconds"`
	EnergyJ float64 `json:"energy_j"`
	Method  string  `json:"method"`
	MeanW   float64 `json:"mean_w"`
	// JPerToken is MeanW over the cell's generation rate (set by the caller, who knows it).
	JPerToken  float64         `json:"j_per_generated_token,omitempty"`
	TokensPerJ float64         `json:"tokens_per_j,omitempty"`
	Devices    []DeviceFigures `json:"devices"`
}

// CellWindows are the marked cells' windows by client level: from each level's start mark to
// its end mark; a level without both marks, or whose end is not after its start, is left out.
func CellWindows(samples []telemetry.Sample) map[int]Window {
	start, end := map[int]time.Duration{}, map[int]time.Duration{}
	for _, s := range samples {
		if s.Source != telemetry.SourceMark {
			continue
		}
		for _, p := range s.Points {
			switch p.Metric {
			case MarkCellStart:
				start[int(p.Value)] = s.T
			case MarkCellEnd:
				end[int(p.Value)] = s.T
			}
		}
	}
	out := map[int]Window{}
	for c, from := range start {
		if to, ok := end[c]; ok && to > from {
			out[c] = Window{From: from, To: to}
		}
	}
	return out
}

// Cells computes each marked cell's figures from a span's samples, in client order; a cell
// without both marks, or when no device measured energy, is left out.
func Cells(samples []telemetry.Sample) []CellFigures {
	tl := NewTimeline(samples)
	var out []CellFigures
	for c, w := range CellWindows(samples) {
		j, method, ok := tl.Total(w)
		if !ok {
			continue
		}
		cf := CellFigures{Clients: c, Seconds: round(w.Seconds(), 6), EnergyJ: round(j, 6), Method: method, MeanW: round(j/w.Seconds(), 4)}
		for _, d := range tl.devices {
			cf.Devices = append(cf.Devices, d.figures(w))
		}
		out = append(out, cf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Clients < out[j].Clients })
	return out
}

// PerToken sets the cell's Joules per generated token from its generation rate (tok/s).
func (c *CellFigures) PerToken(rate float64) {
	if rate > 0 && c.MeanW > 0 {
		c.JPerToken = round(c.MeanW/rate, 9)
		c.TokensPerJ = round(rate/c.MeanW, 6)
	}
}

// Text is a cell's energy in words.
func (c CellFigures) Text() string {
	s := fmt.Sprintf("%.3f J over %.3f s (%s), %.1f W mean", c.EnergyJ, c.Seconds, c.Method, c.MeanW)
	if c.JPerToken > 0 {
		s += fmt.Sprintf(", %.4g J per generated token", c.JPerToken)
	}
	return s
}
