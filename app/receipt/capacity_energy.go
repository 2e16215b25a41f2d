package receipt

import (
	"fmt"
	"slices"

	"sparkbench/app/capacity"
)

// The capacity receipt's energy (docs/telemetry.md, Capacity cells): written only when a
// cell's lifetime was sampled, or the plan has a telemetry block, so every other capacity
// receipt is byte for byte what it was.

// capEnergy writes each sampled cell's energy per pass and its median J per generated token,
// then each device's figures per cell and pass.
func capEnergy(w *mdWriter, r *capacity.Result) {
	var cells, devices [][]string
	var methods []string
	for _, c := range r.Candidates {
		for _, cl := range c.Cells {
			for _, pm := range cl.Passes {
				e := pm.Energy
				if e == nil {
					continue
				}
				at := fmt.Sprintf("P%d/C%d %s", cl.Slots, cl.Clients, pm.Pass)
				perTok, perJ := "—", "—"
				if e.JPerToken > 0 {
					perTok, perJ = num(e.JPerToken), num(e.TokensPerJ)
				}
				median := "—"
				if cl.JPerGeneratedToken != nil {
					median = num(*cl.JPerGeneratedToken)
				}
				cells = append(cells, []string{cell(c.Label), at, fmt.Sprintf("%.3f J (%s)", e.EnergyJ, e.Method), fmt.Sprintf("%.3f s", e.Seconds),
					f1(e.MeanW), perTok, perJ, median})
				devices = append(devices, energyDeviceRows(c.Label+" "+at, e.Devices)...)
				if !slices.Contains(methods, e.Method) {
					methods = append(methods, e.Method)
				}
			}
		}
	}
	if len(cells) == 0 {
		if r.Plan.Telemetry != nil {
			w.heading(2, "Energy")
			w.line("The plan samples telemetry, but no sampler read during any cell (no device measured energy): `sparkbench doctor --telemetry` says why each sampler is not available. The machine-state gates passed as not sampled.")
			w.blank()
		}
		return
	}
	w.heading(2, "Energy")
	w.table([]string{"Candidate", "Cell / pass", "Energy", "Window", "Mean W", "J/generated token", "tokens/J", "Cell median J/token"}, "llrrrrrr", cells)
	w.table([]string{"Cell", "Device", "Energy", "Power", "Clock", "Temperature", "Throttle"}, "lllllll", devices)
	w.line("Measured from each sampled server lifetime's telemetry samples (`telemetry.jsonl` beside its request records; a mark at each client level's start and end). A cell's window runs from its start mark to its end mark, warm-ups included; J per generated token = the window's mean power / the pass's generation rate, and the cell's figure is the median over passes; see `cell_energy` and `j_per_generated_token` below.")
	w.blank()
}
