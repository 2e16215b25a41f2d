package energy

import (
	"context"
	"fmt"
	"time"

	"sparkbench/runner/telemetry"
)

// Gate codes: a leg during which one fired is flagged, its rows are not used for verdicts, and
// the queue goes on (as after a CV breach).
const (
	CodeThrottled = "thermal:throttled"                 // a thermal or hardware slowdown reason fired
	CodeClockDrop = "clock:drop_above_maximum"          // the GPU clock fell more than allowed below the leg's start
	CodeTempMax   = "thermal:temperature_above_maximum" // a temperature crossed the plan's limit
)

// Plan is a study plan's telemetry block (pre-registered with the plan, like the CV gates).
type Plan struct {
	// IntervalMS is the sampling interval (default 250 ms, at least 10).
	IntervalMS int   `json:"interval_ms,omitempty"`
	Gates      Gates `json:"gates"`
}

// Gates are the machine-state limits. The throttle gate is on unless Throttle is false.
type Gates struct {
	Throttle *bool `json:"throttle,omitempty"`
	// ClockDropMax is the largest fall of a GPU's shader clock below its first reading in the
	// leg, as a fraction (0.1: 10%); 0 is off.
	ClockDropMax float64 `json:"clock_drop_max,omitempty"`
	// TempMaxC is the highest temperature any sensor may read during the leg; 0 is off.
	TempMaxC float64 `json:"temp_max_c,omitempty"`
}

// Interval is the plan's sampling interval.
func (p *Plan) Interval() time.Duration {
	if p == nil || p.IntervalMS == 0 {
		return telemetry.DefaultInterval
	}
	return time.Duration(p.IntervalMS) * time.Millisecond
}

// Problem is what is wrong with a field of the block: its JSON path and why.
type Problem struct{ Path, Msg string }

func (p Problem) String() string { return p.Path + ": " + p.Msg }

// Validate lists what is wrong with the block, each with its JSON path under prefix.
func (p *Plan) Validate(prefix string) []Problem {
	if p == nil {
		return nil
	}
	var out []Problem
	if p.IntervalMS < 0 || p.IntervalMS > 60000 || p.IntervalMS != 0 && time.Duration(p.IntervalMS)*time.Millisecond < telemetry.MinInterval {
		out = append(out, Problem{prefix + ".interval_ms", fmt.Sprintf("%d: want %d to 60000 ms (leave it out for %d)", p.IntervalMS,
			telemetry.MinInterval.Milliseconds(), telemetry.DefaultInterval.Milliseconds())})
	}
	if g := p.Gates; g.ClockDropMax < 0 || g.ClockDropMax >= 1 {
		out = append(out, Problem{prefix + ".gates.clock_drop_max", fmt.Sprintf("%g is not a fraction in [0, 1) (0.1 is 10%%)", g.ClockDropMax)})
	}
	if g := p.Gates; g.TempMaxC < 0 || g.TempMaxC > 150 {
		out = append(out, Problem{prefix + ".gates.temp_max_c", fmt.Sprintf("%g °C is outside 0 to 150", g.TempMaxC)})
	}
	return out
}

// Breach is one gate that fired during a leg.
type Breach struct {
	Name     string  `json:"name"` // thermal:GPU0, clock:GPU0
	Code     string  `json:"code"`
	Device   string  `json:"device"`
	Observed float64 `json:"observed"`
	Limit    float64 `json:"limit"`
	Reason   string  `json:"reason"`
}

// Check evaluates the gates over a leg's samples within w, device by device, in a fixed order.
func (g Gates) Check(samples []telemetry.Sample, w Window) []Breach {
	var out []Breach
	for _, d := range NewTimeline(samples).devices {
		f := d.figures(w)
		label := d.source + " " + d.name
		if (g.Throttle == nil || *g.Throttle) && f.Throttled > 0 {
			out = append(out, Breach{Name: "thermal:" + d.name, Code: CodeThrottled, Device: label, Observed: float64(f.Throttled),
				Reason: fmt.Sprintf("%s: a thermal or hardware slowdown reason in %d sample(s) of the leg", label, f.Throttled)})
		}
		if g.ClockDropMax > 0 && f.ClockStartMHz > 0 {
			drop := 1 - f.ClockMinMHz/f.ClockStartMHz
			if drop > g.ClockDropMax {
				out = append(out, Breach{Name: "clock:" + d.name, Code: CodeClockDrop, Device: label, Observed: round(drop, 4), Limit: g.ClockDropMax,
					Reason: fmt.Sprintf("%s: shader clock fell to %.0f MHz, %.1f%% below the leg's start (%.0f MHz; limit %.1f%%)",
						label, f.ClockMinMHz, drop*100, f.ClockStartMHz, g.ClockDropMax*100)})
			}
		}
		if g.TempMaxC > 0 && f.TempMaxC > g.TempMaxC {
			out = append(out, Breach{Name: "thermal:" + d.name, Code: CodeTempMax, Device: label, Observed: f.TempMaxC, Limit: g.TempMaxC,
				Reason: fmt.Sprintf("%s: %.1f °C, above the limit %.1f °C", label, f.TempMaxC, g.TempMaxC)})
		}
	}
	return out
}

// LegHook is what a run engine calls around each leg it runs, when the study samples
// telemetry (energyrun.Hook; nil: no telemetry, and the engine behaves as before).
type LegHook interface {
	Begin(ctx context.Context, legID int64) LegRun
}

// LegRun is one leg's sampling: Row at each row's arrival, End once when the leg's process
// has ended (before the leg is finished in the notebook): the gates that fired.
type LegRun interface {
	Row()
	End(ctx context.Context) ([]Breach, error)
}
