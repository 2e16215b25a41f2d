package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/kinds"
	"sparkbench/app/workbench"
	"sparkbench/ui"
)

// capacity says whether the baseline is a capacity or concurrency study: the comparison is
// then workbench.CompareCapacity's (which refuses a throughput study among the others).
func (s compareService) capacity(ctx context.Context, ids []int64) bool {
	if len(ids) == 0 {
		return false
	}
	st, err := s.nb.Study(ctx, ids[0])
	return err == nil && (st.Kind == kinds.Capacity || st.Kind == kinds.Concurrency)
}

// windowCapacityComparison is what the window shows of a capacity comparison: per shared cell
// and compared study, the generation rates and the per-request comparisons the CLI prints.
func windowCapacityComparison(c *workbench.CapacityComparison) *ui.Comparison {
	w := &ui.Comparison{Notes: []string{"candidates matched by " + c.MatchedBy}, Footer: strings.TrimSpace(workbench.CapacityCompareFooter(c))}
	for i, st := range c.Studies {
		role := "new"
		if i == 0 {
			role = "baseline"
		}
		w.Studies = append(w.Studies, fmt.Sprintf("study %d %s (%s), %s", st.ID, st.Name, st.Status, role))
	}
	for _, cell := range c.Cells {
		for i, p := range cell.Pairs {
			w.Cells = append(w.Cells, []string{fmt.Sprintf("%d vs %d", p.Study, c.Studies[0].ID),
				fmt.Sprintf("%s P%d/C%d", cell.Candidate, cell.Slots, cell.Clients),
				workbench.RateText(cell.GenerationRate[0]) + " t/s", workbench.RateText(cell.GenerationRate[i+1]) + " t/s",
				fmt.Sprintf("TTFT %s · E2E %s · per-stream %s", p.TTFTMs, p.E2EMs, p.PerStream)})
		}
	}
	for _, v := range c.Verdicts {
		w.Verdicts = append(w.Verdicts, c.VerdictLine(v))
	}
	charts := workbench.CapacityCompareCharts(c)
	names := make([]string, 0, len(charts))
	for f := range charts {
		names = append(names, f)
	}
	sort.Strings(names) // plots/latency-….png before plots/slots.png: the slots chart first
	sort.SliceStable(names, func(i, j int) bool { return names[i] == "plots/slots.png" && names[j] != "plots/slots.png" })
	for _, f := range names {
		w.Charts = append(w.Charts, ui.NamedChart{Name: chartName(f), Chart: charts[f]})
	}
	return w
}

// chartName is a comparison chart's name in the window: "slots", "latency CANDIDATE".
func chartName(file string) string {
	n := strings.TrimSuffix(strings.TrimPrefix(file, "plots/"), ".png")
	if c, ok := strings.CutPrefix(n, "latency-"); ok {
		return "latency " + c
	}
	return n
}
