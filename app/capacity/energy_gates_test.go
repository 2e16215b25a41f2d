package capacity

import (
	"strings"
	"testing"
	"time"

	"sparkbench/app/energy"
	"sparkbench/runner/telemetry"
)

// lifetimeSamples is a sampled server lifetime: client levels 1, 2 and 4 one after another,
// each 1 s, a GPU at 100 W read every 100 ms, a thermal slowdown reason only at throttleAt
// (ns on the lifetime's clock; -1: never).
func lifetimeSamples(throttleAt time.Duration) []telemetry.Sample {
	var out []telemetry.Sample
	mark := func(t time.Duration, metric string, c int) {
		out = append(out, telemetry.Sample{Source: telemetry.SourceMark, T: t, Points: []telemetry.Point{{Device: "clients", Metric: metric, Value: float64(c)}}})
	}
	for i, c := range []int{1, 2, 4} {
		from := time.Duration(i) * time.Second
		mark(from, energy.MarkCellStart, c)
		for t := from; t <= from+time.Second; t += 100 * time.Millisecond {
			hot := 0.0
			if t == throttleAt {
				hot = 1
			}
			out = append(out, telemetry.Sample{Source: "nvml", T: t, Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 100},
				{Device: "GPU0", Metric: telemetry.ThrottleHot, Value: hot}}})
		}
		mark(from+time.Second, energy.MarkCellEnd, c)
	}
	return out
}

// A throttle event fails exactly the cell whose window it fell in, with the exact code; the
// other cells pass the machine-state gate; a plan without a telemetry block gets no check;
// a cell no sampler read passes, said as not sampled.
func TestMachineGatesFlagTheCellTheyOverlap(t *testing.T) {
	p := &Plan{Telemetry: &energy.Plan{}}
	fwd := &lifetime{key: LifetimeKey{Pass: PassForward}, breaches: cellBreaches(lifetimeSamples(1500*time.Millisecond), p.Telemetry.Gates)}
	rev := &lifetime{key: LifetimeKey{Pass: PassReverse}, breaches: cellBreaches(lifetimeSamples(-1), p.Telemetry.Gates)}
	for _, c := range []int{1, 2, 4} {
		cell := CellResult{Clients: c, Failures: []string{}}
		a := &assembler{p: p}
		a.machineGates(&cell, []*lifetime{fwd, rev}, checker(&cell))
		if len(cell.Checks) != 1 || cell.Checks[0].Gate != gateMachineState {
			t.Fatalf("C%d: checks %+v", c, cell.Checks)
		}
		g := cell.Checks[0]
		if c == 2 {
			if g.Passed || g.Failure != energy.CodeThrottled || len(cell.Failures) != 1 || cell.Failures[0] != energy.CodeThrottled ||
				!strings.HasPrefix(g.Detail, "forward: nvml GPU0: a thermal or hardware slowdown reason in 1 sample") {
				t.Errorf("C2 (throttled in the forward pass): %+v, failures %v", g, cell.Failures)
			}
			continue
		}
		if !g.Passed || len(cell.Failures) != 0 || g.Detail != "no gate fired in 2 sampled pass(es)" {
			t.Errorf("C%d: %+v, failures %v", c, g, cell.Failures)
		}
	}
	cell := CellResult{Clients: 8, Failures: []string{}}
	(&assembler{p: p}).machineGates(&cell, []*lifetime{fwd, rev}, checker(&cell))
	if len(cell.Checks) != 1 || !cell.Checks[0].Passed || !strings.HasPrefix(cell.Checks[0].Detail, "not sampled") {
		t.Errorf("a cell no sampler read: %+v", cell.Checks)
	}
	cell = CellResult{Clients: 2, Failures: []string{}}
	(&assembler{p: &Plan{}}).machineGates(&cell, []*lifetime{fwd, rev}, checker(&cell))
	if len(cell.Checks) != 0 {
		t.Errorf("a plan without telemetry: %+v", cell.Checks)
	}
}

// checker is the cell's gate recorder as assembler.cell has it.
func checker(cell *CellResult) func(GateCheck, string) {
	return func(g GateCheck, code string) {
		if !g.Passed {
			g.Failure = code
			cell.Failures = append(cell.Failures, code)
		}
		cell.Checks = append(cell.Checks, g)
	}
}
