package workbench

import (
	"bytes"
	"fmt"

	"sparkbench/app/receipt"
	"sparkbench/plots"
)

// The overlaid charts of a capacity comparison, made from its shared cells alone: the slots
// chart (aggregate and per-stream rate along the diagonal clients = slots, one series per
// study and candidate) and, per candidate, the latency chart (p95 TTFT and E2E against
// clients, one series per study and slot count).

// CapacityCompareCharts are the comparison's charts by bundle file name (plots/…png).
func CapacityCompareCharts(c *CapacityComparison) map[string]plots.Chart {
	out := map[string]plots.Chart{}
	slots := plots.SlotsChart{Meta: plots.Meta{Model: "capacity comparison"}}
	lat := map[string]*plots.LatencyChart{}
	var order []string
	for i, s := range c.Studies {
		diag := map[string]*plots.SlotsSeries{}
		var dorder []string
		for _, cell := range c.Cells {
			if cell.Slots == cell.Clients && cell.GenerationRate[i] != nil && cell.PerStreamRate[i] != nil {
				if diag[cell.Candidate] == nil {
					diag[cell.Candidate] = &plots.SlotsSeries{Label: fmt.Sprintf("study %d %s", s.ID, cell.Candidate)}
					dorder = append(dorder, cell.Candidate)
				}
				d := diag[cell.Candidate]
				d.Points = append(d.Points, plots.SlotsPoint{Slots: cell.Slots, Aggregate: *cell.GenerationRate[i], PerStream: *cell.PerStreamRate[i]})
			}
			if cell.TTFTMsP95[i] == nil || cell.E2EMsP95[i] == nil {
				continue
			}
			l := lat[cell.Candidate]
			if l == nil {
				l = &plots.LatencyChart{Meta: plots.Meta{Model: cell.Candidate}, Candidate: cell.Candidate}
				lat[cell.Candidate] = l
				order = append(order, cell.Candidate)
			}
			label := fmt.Sprintf("study %d P%d", s.ID, cell.Slots)
			n := len(l.Series)
			if n == 0 || l.Series[n-1].Label != label {
				l.Series = append(l.Series, plots.LatencySeries{Label: label, Slots: cell.Slots})
				n++
			}
			l.Series[n-1].Points = append(l.Series[n-1].Points, plots.LatencyPoint{Clients: cell.Clients, TTFTP95Ms: *cell.TTFTMsP95[i], E2EP95Ms: *cell.E2EMsP95[i]})
		}
		for _, k := range dorder {
			slots.Series = append(slots.Series, *diag[k])
		}
	}
	if len(slots.Series) > 0 {
		out["plots/slots.png"] = slots
	}
	for _, k := range order {
		out["plots/latency-"+k+".png"] = *lat[k]
	}
	return out
}

// addCapacityCompareCharts renders the charts into files.
func addCapacityCompareCharts(files receipt.Files, c *CapacityComparison) error {
	for name, ch := range CapacityCompareCharts(c) {
		p, err := ch.Plot()
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		var b bytes.Buffer
		if err := plots.Export(p, plots.PNG, plots.Pixels(compareChartW), plots.Pixels(compareChartH), &b); err != nil {
			return err
		}
		files[name] = b.Bytes()
	}
	return nil
}
