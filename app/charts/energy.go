package charts

import (
	"fmt"
	"sort"

	"sparkbench/app/study"
	"sparkbench/plots"
)

// EnergyMetrics are the metrics of a study's energy cells that an energy chart can draw, tg
// before pp before pg (the order the window and the receipt show them); none when the study
// has no energy per token.
func EnergyMetrics(r *study.Report) []string {
	if r == nil || r.Energy == nil {
		return nil
	}
	var out []string
	for _, m := range []string{"tg", "pp", "pg"} {
		for _, c := range r.Energy.Cells {
			if matches(m, c.Test) && !isRepeat(c.Leg) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// Energy is Joules per token of metric against KV depth, one series per model (and
// configuration), from the study's energy cells (repeatability copies left out); an error when
// the study has none for metric (a study without telemetry has none at all).
func Energy(r *study.Report, metric string) (*plots.EnergyChart, error) {
	if r.Energy == nil {
		return nil, fmt.Errorf("study %d has no energy figures (its plan has no telemetry block, or no leg was sampled)", r.Study.ID)
	}
	var cells []study.EnergyCell
	var keyed []study.ReportCell
	exact := metric
	for _, c := range r.Energy.Cells {
		if matches(metric, c.Test) && !isRepeat(c.Leg) {
			cells = append(cells, c)
			keyed = append(keyed, study.ReportCell{Model: c.Model, Config: c.Config})
			exact = c.Test
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("study %d has no %s energy per token", r.Study.ID, metric)
	}
	key := seriesKeys(keyed)
	byKey := map[string][]plots.EnergyPoint{}
	var order []string
	for i, c := range cells {
		k := key(keyed[i])
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], plots.EnergyPoint{Depth: int(c.Depth), JPerToken: c.JPerToken, MeanW: c.MeanW})
	}
	ch := &plots.EnergyChart{Metric: exact, Meta: meta(r)}
	for _, k := range order {
		pts := byKey[k]
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Depth < pts[j].Depth })
		ch.Series = append(ch.Series, plots.EnergySeries{Label: k, Points: pts})
	}
	return ch, nil
}
