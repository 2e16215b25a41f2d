package study

import (
	"time"

	"sparkbench/runner/telemetry"
)

// The telemetry metrics the window shows live (docs/telemetry.md), named here so that the
// window reads EventTelemetry's readings without reaching into the runner.
const (
	TelemetryPowerW     = telemetry.PowerW
	TelemetryClockMHz   = telemetry.ClockSMMHz
	TelemetryCPUFreqMHz = telemetry.FreqMHz
	TelemetryTempC      = telemetry.TempC
)

// TelemetryEvent is the EventTelemetry of one reading s of notebook leg legID in study id.
func TelemetryEvent(id, legID int64, s telemetry.Sample) Event {
	at := s.At
	if at.IsZero() {
		at = time.Now()
	}
	return Event{Kind: EventTelemetry, At: at, StudyID: id, LegID: legID, Telemetry: &s}
}
