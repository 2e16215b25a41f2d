package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
)

// notRunning is what the machine card's live readings say while no sampled study runs.
const notRunning = "live readings: not available: no study with a telemetry block is running (its plan's \"telemetry\" block samples each leg; docs/telemetry.md)"

// machineCard is the Bench section's Machine card below the machine line: each telemetry
// sampler, available or not and why (the words of `sparkbench doctor --telemetry`), and the
// newest power, clock and temperature readings of the running study (the same samples its
// timeline draws).
type machineCard struct {
	Samplers *widget.Label
	Readings *widget.Label
}

func newMachineCard() machineCard {
	c := machineCard{Samplers: widget.NewLabel("samplers: checking…"), Readings: widget.NewLabel(notRunning)}
	c.Samplers.Wrapping, c.Readings.Wrapping = fyne.TextWrapWord, fyne.TextWrapWord
	c.Samplers.TextStyle = fyne.TextStyle{Monospace: true}
	c.Readings.TextStyle = fyne.TextStyle{Monospace: true}
	return c
}

// showSamplers lists the report's samplers (UI goroutine).
func (v *BenchView) showSamplers(r app.DoctorReport) {
	if len(r.Telemetry) == 0 {
		setText(v.Card.Samplers, "samplers: not checked (the doctor ran without its telemetry check)")
		return
	}
	lines := []string{"samplers (as sparkbench doctor --telemetry):"}
	for _, st := range r.Telemetry {
		lines = append(lines, fmt.Sprintf("  %-13s %s", st.Source+":", app.TelemetryLine(st)))
	}
	setText(v.Card.Samplers, strings.Join(lines, "\n"))
}

// ShowLive shows study id's newest readings (UI goroutine): power, then clock, then
// temperature, each device on its line; while it runs they are live, after it they are the
// last ones it read; a run whose samplers read none of the three says so.
func (v *BenchView) ShowLive(id int64, latest []LiveReading, running bool) {
	var text string
	switch {
	case len(latest) == 0 && running:
		text = fmt.Sprintf("live readings (study %d running): not available: this machine's samplers read no power, clock or temperature (see the samplers above)", id)
	case len(latest) == 0:
		text = notRunning
	default:
		head := fmt.Sprintf("live readings (study %d running, %s):", id, latest[0].At.Format("15:04:05"))
		if !running {
			head = fmt.Sprintf("last readings of study %d (its run has ended; %s):", id, latest[0].At.Format("15:04:05"))
		}
		lines := []string{head}
		for _, r := range latest {
			word := map[string]string{telPower: "power", telClock: "clock", telTemp: "temperature"}[r.Metric]
			lines = append(lines, fmt.Sprintf("  %-12s %s", word, readingText(r)))
		}
		text = strings.Join(lines, "\n")
	}
	setText(v.Card.Readings, text)
}
