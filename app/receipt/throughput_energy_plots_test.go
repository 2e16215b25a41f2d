package receipt

import (
	"slices"
	"testing"

	"sparkbench/app/study"
	"sparkbench/plots"
)

// A throughput study's receipt draws energy per token against depth only when the study has
// energy cells; a study without telemetry gets exactly the charts it had before.
func TestEnergyChartOnlyForStudiesWithTelemetry(t *testing.T) {
	rep := &study.Report{Study: study.ReportStudy{ID: 7, Name: "e"}, Results: []study.ReportCell{
		{Model: "tiny", Leg: "tiny/d0", Test: "tg16", Depth: 0, Mean: 50, Reps: 2},
		{Model: "tiny", Leg: "tiny/d128", Test: "tg16", Depth: 128, Mean: 45, Reps: 2},
	}}
	names := func(d *ThroughputStudy) []string {
		var out []string
		for _, c := range throughputCharts(d) {
			out = append(out, c.Name)
		}
		return out
	}
	without := names(&ThroughputStudy{Report: rep})
	if !slices.Equal(without, []string{"plots/depth-tg"}) {
		t.Fatalf("charts without telemetry = %v", without)
	}
	rep.Energy = &study.ReportEnergy{Cells: []study.EnergyCell{
		{Model: "tiny", Leg: "tiny/d0", Test: "tg16", Depth: 0, Kind: "tg", JPerToken: 2, MeanW: 100},
		{Model: "tiny", Leg: "tiny/d128", Test: "tg16", Depth: 128, Kind: "tg", JPerToken: 2.2, MeanW: 100},
	}}
	d := &ThroughputStudy{Report: rep}
	with := names(d)
	if !slices.Equal(with, []string{"plots/depth-tg", "plots/energy-tg"}) {
		t.Fatalf("charts with telemetry = %v", with)
	}
	ch := throughputCharts(d)[1].Chart.(plots.EnergyChart)
	if ch.Metric != "tg16" || len(ch.Series) != 1 || ch.Series[0].Points[1].JPerToken != 2.2 {
		t.Fatalf("energy chart = %+v", ch)
	}
	if got := throughputPlotNames(d); !slices.Contains(got, "plots/energy-tg.png") || !slices.Contains(got, "plots/energy-tg.svg") {
		t.Fatalf("plot files = %v", got)
	}
}
