package capacity

import (
	"maps"
	"slices"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/energy"
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
