package capacity

import (
	"strings"
	"testing"
	"time"

	"sparkbench/app/energy"
)

// The machine-state gate through Assemble (not only machineGates with a hand-made recorder): a
// throttle sample in one lifetime's client-2 window fails exactly that cell with
// thermal:throttled; a plan without a telemetry block reads the same samples for energy only
// and fails nothing.
func TestMachineGateThroughAssemble(t *testing.T) {
	p := smallPlan()
	p.Telemetry = &energy.Plan{}
	in := fixture{}.inputs(t, p)
	k := LifetimeKey{PassReverse, "b", 2}
	data, err := energy.AppendSamplesJSONL(nil, 0, lifetimeSamples(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	in.Telemetry = map[LifetimeKey]InputFile{k: {"telemetry/" + k.String() + ".jsonl", data}}
	r := mustAssemble(t, p, in)
	cell := cellOf(t, r, "b", 2, 2)
	wantFailures(t, cell, energy.CodeThrottled)
	g := checkOf(t, cell, gateMachineState)
	if g.Passed || !strings.HasPrefix(g.Detail, "reverse: nvml GPU0: a thermal or hardware slowdown reason") {
		t.Errorf("check %+v", g)
	}
	wantOthersPass(t, r, "b", 2, 2)
	if g := checkOf(t, cellOf(t, r, "b", 2, 1), gateMachineState); !g.Passed {
		t.Errorf("client 1 of the same lifetime: %+v", g)
	}

	p = smallPlan()
	r = mustAssemble(t, p, in)
	for _, c := range r.Candidates {
		for _, cell := range c.Cells {
			if !cell.Passed {
				t.Errorf("no telemetry block: %s P%d/C%d fails %v", c.ID, cell.Slots, cell.Clients, cell.Failures)
			}
		}
	}
}
