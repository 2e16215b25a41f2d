package receipt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"

	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner/telemetry"
)

// A throughput bundle's telemetry (docs/telemetry.md): each sampled leg's telemetry.jsonl,
// tied to its leg.finished entry, and the receipt's energy section, methodology lines and
// definitions, written only when the study has samples (every other receipt is unchanged).

// EnergyDefinitions are added to a receipt whose study has telemetry samples.
var EnergyDefinitions = map[string]string{
	"energy":       "a device's energy over a leg: the difference of its energy counter interpolated at the leg's start and end (method counter), else the trapezoidal integral of its power readings (method integrated); a leg's total adds the GPUs and RAPL's package and dram zones; gross, no idle power subtracted",
	"power":        "average power = a device's energy / the leg's time; peak power = its highest power reading (or steepest counter slope between two samples)",
	"j_per_token":  "Joules per token of a row: the mean power of the row's window (from the previous row's arrival, or the leg's start, to its own) × llama-bench's own test time of the row / (tokens × repetitions); tokens are n_prompt for pp (J per prompt token), n_gen for tg (J per generated token), both for pg; loading, warm-up and depth prefill count in the leg's energy, not per token",
	"tokens_per_j": "1 / J per token",
	"machine_gate": "thermal:throttled (a thermal or hardware slowdown reason in a sample), clock:drop_above_maximum (the shader clock below its first reading in the leg by more than the plan's fraction), thermal:temperature_above_maximum (a sensor above the plan's limit): the leg is flagged, its rows never count, the queue goes on",
}

// readTelemetry parses the leg's telemetry.jsonl, when the bundle has one.
func (lf *legFolder) readTelemetry(files Files) error {
	name := lf.dir + "/" + LegTelemetry
	b, ok := files[name]
	if !ok {
		return nil
	}
	lf.telemetryJSONL = b
	var err error
	lf.telemetry, err = energy.ReadSamplesJSONL(name, b)
	return err
}

// checkLegTelemetry ties telemetry.jsonl to the leg.finished entry seq: its sample count
// (telemetry_rows) and, where journaled, its SHA-256 (telemetry_sha256).
func checkLegTelemetry(lf legFolder, rows int64, sum string, seq int64) error {
	name := lf.dir + "/" + LegTelemetry
	if int64(len(lf.telemetry)) != rows {
		return fmt.Errorf("%s: %d telemetry samples, the journal (entry %d) recorded %d", name, len(lf.telemetry), seq, rows)
	}
	if sum == "" {
		return nil
	}
	h := sha256.Sum256(lf.telemetryJSONL)
	if got := hex.EncodeToString(h[:]); got != sum {
		return fmt.Errorf("%s: hashes to %s, the telemetry_sha256 the journal (entry %d) recorded is %s", name, got, seq, sum)
	}
	return nil
}

// Telemetry is study.TelemetryReader over the bundle: a leg's samples from its telemetry.jsonl.
func (r bundleRecorder) Telemetry(_ context.Context, legID int64) ([]telemetry.Sample, error) {
	for _, lf := range r.tb.legs {
		if lf.rec.ID == legID {
			return lf.telemetry, nil
		}
	}
	return nil, nil
}

var _ study.TelemetryReader = bundleRecorder{}

// withEnergyDefinitions adds the energy definitions when the report has energy.
func withEnergyDefinitions(defs map[string]string, rep *study.Report) map[string]string {
	if rep.Energy == nil {
		return defs
	}
	defs = maps.Clone(defs)
	maps.Copy(defs, EnergyDefinitions)
	return defs
}

// tmEnergy writes the energy section: each sampled leg's total, each device's energy, power,
// clock, temperature and throttle counts, and each result cell's Joules per token.
func tmEnergy(w *mdWriter, d *ThroughputStudy) {
	e := d.Energy
	if e == nil {
		return
	}
	w.heading(2, "Energy")
	var legs, devices [][]string
	for _, l := range e.Legs {
		legs = append(legs, []string{cell(l.Label), cell(l.TotalText(l.HasEnergy)), fmt.Sprint(l.Samples), fmt.Sprint(l.Unreadable)})
		devices = append(devices, energyDeviceRows(l.Label, l.Devices)...)
	}
	w.table([]string{"Leg", "Total", "Samples", "Unreadable"}, "llrr", legs)
	w.table([]string{"Leg", "Device", "Energy", "Power", "Clock", "Temperature", "Throttle"}, "lllllll", devices)
	if len(e.Cells) > 0 {
		var cells [][]string
		for _, c := range e.Cells {
			cells = append(cells, []string{cell(c.Model), cell(c.Test), fmt.Sprintf("d%d", c.Depth), num(c.JPerToken), num(c.TokensPerJ),
				f1(c.MeanW), cell(c.Source)})
		}
		w.table([]string{"Model", "Test", "Depth", "J/token", "tokens/J", "Mean W", "Source"}, "lllrrrl", cells)
	}
	w.line("Measured from the telemetry samples of each sampled leg (`legs/NNN-label/telemetry.jsonl`, on the leg's clock, with a mark at each row's arrival and at the leg's end). J/token is per prompt token for pp and per generated token for tg; see `j_per_token` below.")
	w.blank()
}

// energyDeviceRows are a leg's device lines for the energy tables (the capacity receipt's too).
func energyDeviceRows(label string, devs []energy.DeviceFigures) [][]string {
	var out [][]string
	for _, dv := range devs {
		out = append(out, []string{cell(label), cell(dv.Source + " " + dv.Device), cell(dv.EnergyText()), cell(dv.PowerText()),
			cell(dv.ClockText()), cell(dv.TempText()), cell(dv.ThrottleText())})
	}
	return out
}

// energyMethodology is the methodology's telemetry lines (none without samples).
func energyMethodology(p *study.Plan, e *study.ReportEnergy) []string {
	if e == nil {
		return nil
	}
	return telemetryMethodLines(p.Telemetry, e.EnergySamplers())
}

// telemetryMethodLines says how the machine was sampled and gated, and which samplers read.
func telemetryMethodLines(tp *energy.Plan, samplers []string) []string {
	gates := "none"
	if tp != nil {
		gates = machineGatesText(tp.Gates)
	}
	read := "none"
	if len(samplers) > 0 {
		read = code(strings.Join(samplers, ", "))
	}
	return []string{
		fmt.Sprintf("- Telemetry: sampled every %s ms while each leg ran, once more when its process ended; samplers that read: %s; machine-state gates: %s.",
			code(fmt.Sprint(tp.Interval().Milliseconds())), read, gates),
		"- Energy: per device from its energy counter where it has one, else its power readings integrated (the method is named with each figure); J per token from each row's window, see the definitions.",
	}
}

// machineGatesText names the machine-state gates in effect ("none" when every one is off).
func machineGatesText(g energy.Gates) string {
	var gs []string
	if g.Throttle == nil || *g.Throttle {
		gs = append(gs, "thermal:throttled")
	}
	if g.ClockDropMax > 0 {
		gs = append(gs, "clock:drop_above_maximum above "+pct(g.ClockDropMax))
	}
	if g.TempMaxC > 0 {
		gs = append(gs, "thermal:temperature_above_maximum above "+num(g.TempMaxC)+" °C")
	}
	if len(gs) == 0 {
		return "none"
	}
	return strings.Join(gs, ", ")
}
