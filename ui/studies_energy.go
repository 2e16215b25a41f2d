package ui

import (
	"sparkbench/app/charts"
	"sparkbench/app/study"
)

// showEnergy shows the study's energy per token against depth under its charts (the first
// metric it has: tg, else pp, else pg), and hides it for a study without energy figures; the
// telemetry timeline is shown only with the study whose run sent readings. UI goroutine.
func (v *StudiesView) showEnergy(r *study.Report) {
	v.syncTelemetryPane(r.Study.ID)
	metrics := charts.EnergyMetrics(r)
	if len(metrics) == 0 {
		v.Energy.Object.Hide()
		return
	}
	ch, err := charts.Energy(r, metrics[0])
	if err != nil {
		v.Energy.Object.Hide()
		return
	}
	v.mu.Lock()
	ch.Meta.Build, ch.Meta.Machine = v.meta.Build, v.meta.Machine
	v.mu.Unlock()
	v.Energy.Show(*ch)
	v.Energy.Object.Show()
}
