package charts

import (
	"fmt"
	"slices"

	"sparkbench/app/capacity"
	"sparkbench/plots"
)

// ServingCharts are a serving capacity study's open-loop charts: TTFT and TPOT at the SLO's
// percentile against offered rate, throughput and goodput against offered rate, and (when a
// lifetime ran the max-rate search) the search's trace. One series per server lifetime
// (candidate, P, and the pass when the plan runs more than one). Nil without a serving block.
func ServingCharts(r *capacity.Result) (lat *plots.ServingLatencyChart, good *plots.ServingGoodputChart, search *plots.ServingSearchChart) {
	if r == nil || r.Plan == nil || r.Plan.Serving == nil {
		return nil, nil, nil
	}
	s := r.Plan.Serving
	unit, yunit := "req/s", "req/s"
	if s.Workload != nil && s.Workload.Kind == capacity.WorkloadMultiTurn {
		unit, yunit = "conversations/s", "turns/s"
	}
	meta := plots.Meta{Model: r.Plan.Name}
	lat = &plots.ServingLatencyChart{Meta: meta, Unit: unit, Percentile: s.SLO.Percentile, TTFTSLOMs: s.SLO.TTFTMs, TPOTSLOMs: s.SLO.TPOTMs}
	good = &plots.ServingGoodputChart{Meta: meta, Unit: unit, YUnit: yunit}
	search = &plots.ServingSearchChart{Meta: meta, Unit: unit}
	passes := map[string]bool{}
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			passes[sv.Pass] = true
		}
	}
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			label := fmt.Sprintf("%s, P%d", c.Label, sv.Slots)
			if len(passes) > 1 {
				label += " (" + sv.Pass + ")"
			}
			series := plots.ServingSeries{Label: label, Knee: knee(sv)}
			for _, pr := range sv.Probes {
				series.Points = append(series.Points, plots.ServingPoint{Rate: pr.OfferedRate,
					TTFTMs: at(pr.TTFTMs, s.SLO.Percentile), TPOTMs: at(pr.TPOTMs, s.SLO.Percentile),
					Throughput: val(pr.Throughput), Goodput: val(pr.Goodput), Pass: pr.Passed})
			}
			lat.Series = append(lat.Series, series)
			good.Series = append(good.Series, series)
			if sv.Search == nil || len(sv.Search.Probes) == 0 {
				continue
			}
			ss := plots.SearchSeries{Label: label, MaxRate: val(sv.Search.MaxRate), Converged: sv.Search.Converged}
			for _, pr := range sv.Probes {
				if slices.Contains(sv.Search.Probes, pr.Probe) {
					ss.Probes = append(ss.Probes, plots.SearchProbe{Probe: pr.Probe, Rate: pr.OfferedRate, Pass: pr.Passed})
				}
			}
			search.Series = append(search.Series, ss)
		}
	}
	if len(search.Series) == 0 {
		search = nil
	}
	return lat, good, search
}

// knee is the largest offered rate of the lifetime meeting every SLO: the search's when it
// found one, else the sweep's (0: none).
func knee(sv capacity.ServingResult) float64 {
	if sv.Search != nil && sv.Search.MaxRate != nil {
		return *sv.Search.MaxRate
	}
	return val(sv.MaxSweepRate)
}

// at is the quantile the SLO judges (p99 when the plan says 99, else p95); 0 when missing.
func at(q capacity.Quantiles, percentile int) float64 {
	if percentile == 99 {
		return val(q.P99)
	}
	return val(q.P95)
}

func val(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
