package capacity

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/energy"
	"sparkbench/runner/telemetry"
)

// Energy of capacity cells (docs/telemetry.md): a run with a telemetry hook samples each
// server lifetime and marks each client level's start and end among the samples
// (RunTelemetryFile beside the lifetime's request records); the assembly turns each cell's
// window into its energy and, over its generation rate, its Joules per generated token. A run
// without the file assembles as it always did.

// RunTelemetryFile holds a sampled server lifetime's telemetry samples and cell marks
// (energy.AppendSamplesJSONL).
const RunTelemetryFile = "telemetry.jsonl"

// FlagTelemetry gives a server lifetime's telemetry.jsonl to the assembly (optional).
const FlagTelemetry = "--telemetry"

var energyDefinitions = map[string]string{
	"cell_energy":           "a cell's energy in one pass: its devices' energy (counter where the device has one, else integrated power; the method is named) from the mark at the client level's start to the mark at its end, warm-ups included; gross, no idle power subtracted",
	"j_per_generated_token": "a cell's mean power in a pass / its generation rate in that pass (J per generated token; tokens per J its inverse); the cell's figure is the median over passes",
}

// readTelemetry reads each sampled lifetime's telemetry.jsonl into its cells' energy.
func (a *assembler) readTelemetry() error {
	keys := slices.SortedFunc(maps.Keys(a.in.Telemetry), func(x, y LifetimeKey) int { return strings.Compare(x.String(), y.String()) })
	for _, k := range keys {
		f := a.in.Telemetry[k]
		life, ok := a.lives[k]
		if !ok {
			return inputErr(FlagTelemetry, k.String(), "not a server lifetime of this plan; remove it or fix the key")
		}
		samples, err := energy.ReadSamplesJSONL(f.Name, f.Data)
		if err != nil {
			return &InputError{Flag: FlagTelemetry, Key: k.String(), Err: err}
		}
		life.energy = map[int]energy.CellFigures{}
		if a.p.Telemetry != nil {
			life.breaches = cellBreaches(samples, a.p.Telemetry.Gates)
		}
		for _, c := range energy.Cells(samples) {
			life.energy[c.Clients] = c
		}
		a.refs = append(a.refs, InputRef{Role: "telemetry", Key: k.String(), SHA256: canon.SHA256Hex(f.Data), Bytes: len(f.Data)})
	}
	return nil
}

// cellEnergy gives each pass of the cell its energy from its lifetime's samples, with J per
// generated token over the pass's generation rate, and the cell the median over passes.
func cellEnergy(cell *CellResult, lives []*lifetime) {
	var per []*float64
	for i, life := range lives {
		f, ok := life.energy[cell.Clients]
		if !ok {
			continue
		}
		if r := cell.Passes[i].GenerationRate; r != nil {
			f.PerToken(*r)
		}
		cell.Passes[i].Energy = &f
		if f.JPerToken > 0 {
			per = append(per, fptr(f.JPerToken))
		}
	}
	cell.JPerGeneratedToken = medianOf(per)
}

// machineGateDefinition is added to the definitions of a plan with a telemetry block.
const machineGateDefinition = "machine_state: in each sampled pass, the cell's window (from its client level's start mark to its end mark) is checked against the plan's telemetry gates — thermal:throttled (a thermal or hardware slowdown reason in a sample), clock:drop_above_maximum (the shader clock below its first reading in the window by more than the plan's fraction), thermal:temperature_above_maximum (a sensor above the plan's limit); a code that fired fails the cell, so it is never selected; a cell no sampler read passes, said as not sampled"

// checkTelemetry validates the plan's telemetry block (the throughput plan's rules).
func (v *validator) checkTelemetry() {
	for _, pr := range v.p.Telemetry.Validate("telemetry") {
		v.errf(pr.Path, "%s", pr.Msg)
	}
}

// Machine-state gate of a capacity cell: with a telemetry block, each cell's window in each
// sampled pass is checked against the plan's gates (energy.Gates.Check); one check per code
// that fired (the cell fails with that code, like a load SLO), else one passing check.
const gateMachineState = "machine_state"

// cellBreaches keeps each client level's gate breaches in a sampled lifetime.
func cellBreaches(samples []telemetry.Sample, g energy.Gates) map[int][]energy.Breach {
	out := map[int][]energy.Breach{}
	for c, w := range energy.CellWindows(samples) {
		out[c] = g.Check(samples, w)
	}
	return out
}

// machineGates applies the machine-state gates to a cell (a plan with a telemetry block only).
func (a *assembler) machineGates(cell *CellResult, lives []*lifetime, check func(GateCheck, string)) {
	if a.p.Telemetry == nil {
		return
	}
	sampled := 0
	byCode := map[string][]string{}
	for _, life := range lives {
		b, ok := life.breaches[cell.Clients]
		if !ok {
			continue
		}
		sampled++
		for _, x := range b {
			byCode[x.Code] = append(byCode[x.Code], life.key.Pass+": "+x.Reason)
		}
	}
	n := 0
	for _, code := range []string{energy.CodeThrottled, energy.CodeClockDrop, energy.CodeTempMax} {
		if r := byCode[code]; len(r) > 0 {
			check(GateCheck{Gate: gateMachineState, Observed: fptr(float64(len(r))), Limit: fptr(0), Detail: strings.Join(r, "; ")}, code)
			n++
		}
	}
	if n == 0 {
		detail := fmt.Sprintf("no gate fired in %d sampled pass(es)", sampled)
		if sampled == 0 {
			detail = "not sampled: no sampler read during the cell (doctor --telemetry says why)"
		}
		check(GateCheck{Gate: gateMachineState, Observed: fptr(0), Limit: fptr(0), Passed: true, Detail: detail}, "")
	}
}
