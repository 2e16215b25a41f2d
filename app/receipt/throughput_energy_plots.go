package receipt

import (
	"sparkbench/app/charts"
	"sparkbench/app/study"
	"sparkbench/plots"
)

// energyCharts are a throughput study's energy per token against depth (plots/energy-tg,
// energy-pp, energy-pg), one per metric its energy cells have: none for a study without
// telemetry samples, whose receipt is byte for byte what it was before telemetry existed.
func energyCharts(rep *study.Report, meta func(plots.Meta) plots.Meta) []NamedChart {
	var out []NamedChart
	for _, metric := range charts.EnergyMetrics(rep) {
		if ch, err := charts.Energy(rep, metric); err == nil {
			ch.Meta = meta(ch.Meta)
			out = append(out, NamedChart{DirPlots + "energy-" + metric, *ch})
		}
	}
	return out
}
