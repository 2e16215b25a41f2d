package workbench

import (
	"bytes"
	"fmt"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/overview"
	"sparkbench/plots"
)

// FleetFigures is one depth chart per figure (a test of one model and configuration) made
// from the cells, one series per compared host that has a cell of it, in the cells' order.
// The fleet receipt's figures are these, and verify holds them to the cells.
func FleetFigures(cells []FleetCell, hosts []FleetHost) []FleetFigure {
	figs := []FleetFigure{}
	idx := map[string]int{}
	var names []string
	for _, h := range hosts {
		if h.Compared {
			names = append(names, h.Host)
		}
	}
	meta := plots.Meta{Build: commonBuild(hosts), Machine: fmt.Sprintf("%d hosts: %s", len(names), strings.Join(names, ", "))}
	for _, c := range cells {
		k := c.Model + "|" + c.Test + "|" + c.Config
		i, ok := idx[k]
		if !ok {
			i = len(figs)
			idx[k] = i
			mt := meta
			mt.Model = c.Model
			if c.Config != "" {
				mt.Model += " (" + c.Config + ")"
			}
			ch := plots.DepthChart{Meta: mt, Metric: c.Test, Interval: plots.IntervalCI95}
			for _, v := range c.Values {
				ch.Series = append(ch.Series, plots.DepthSeries{Label: v.Host, Points: []plots.DepthPoint{}})
			}
			figs = append(figs, FleetFigure{File: FleetChartFile(i), Model: c.Model, Test: c.Test, Config: c.Config, Chart: ch})
		}
		for j, v := range c.Values {
			if v.Present && j < len(figs[i].Chart.Series) {
				s := &figs[i].Chart.Series[j]
				s.Points = append(s.Points, plots.DepthPoint{Depth: int(c.Depth), Mean: v.Mean, SD: v.SD, N: v.Reps})
			}
		}
	}
	for i := range figs { // a host without a cell of the figure has no series in its chart
		kept := []plots.DepthSeries{}
		for _, s := range figs[i].Chart.Series {
			if len(s.Points) > 0 {
				kept = append(kept, s)
			}
		}
		figs[i].Chart.Series = kept
	}
	return figs
}

// commonBuild is the compared hosts' llama.cpp version line when they share one, else says
// how many builds there are.
func commonBuild(hosts []FleetHost) string {
	seen := map[string]bool{}
	var first string
	for _, h := range hosts {
		if h.Compared && h.LlamaCpp != "" {
			if len(seen) == 0 {
				first = h.LlamaCpp
			}
			seen[h.LlamaCpp] = true
		}
	}
	switch len(seen) {
	case 0:
		return ""
	case 1:
		return first
	}
	return fmt.Sprintf("%d llama.cpp builds (see the hosts table)", len(seen))
}

// checkFleet holds fleet.json's figures to each other, as they were computed: every cell has
// the compared hosts in order, each half-width is the interval of its SD and repetitions, each
// ratio its mean over the baseline's, the figures are the cells' charts, and each constant of
// the ladder is its members' summary, each member's efficiency its t/s over its ceiling. A
// number edited in fleet.json alone (with fleet.md, the charts and SHA256SUMS re-made) is
// refused unless every figure made from it is edited to match.
func checkFleet(r *FleetReceipt) error {
	var compared []string
	for _, h := range r.Hosts {
		if h.Compared {
			compared = append(compared, h.Host)
		}
	}
	if len(compared) < 2 || r.Baseline != compared[0] {
		return fmt.Errorf("%d compared hosts, baseline %q: want two or more, the first the baseline", len(compared), r.Baseline)
	}
	for _, c := range r.Cells {
		if err := checkCell(c, compared); err != nil {
			return fmt.Errorf("cell %s %s d%d: %v", c.Model, c.Test, c.Depth, err)
		}
	}
	want, err := canon.Marshal(FleetFigures(r.Cells, r.Hosts))
	if err != nil {
		return err
	}
	if got, err := canon.Marshal(r.Figures); err != nil || !bytes.Equal(got, want) {
		return fmt.Errorf("the figures are not the charts of the cells")
	}
	for _, row := range r.Ladder.Rows {
		if len(row.Hosts) != len(compared) {
			return fmt.Errorf("ladder %s/%s/%s: %d hosts, want %d", row.Architecture, row.Quant, row.Backend, len(row.Hosts), len(compared))
		}
		for i, h := range row.Hosts {
			if h.Host != compared[i] {
				return fmt.Errorf("ladder %s/%s/%s: host %d is %q, want %q", row.Architecture, row.Quant, row.Backend, i+1, h.Host, compared[i])
			}
			if h.Constant == nil {
				continue
			}
			if err := checkConstant(*h.Constant); err != nil {
				return fmt.Errorf("ladder %s/%s/%s on %s: %v", row.Architecture, row.Quant, row.Backend, h.Host, err)
			}
		}
	}
	return nil
}

func checkCell(c FleetCell, compared []string) error {
	if len(c.Values) != len(compared) {
		return fmt.Errorf("%d values, want one per compared host (%d)", len(c.Values), len(compared))
	}
	base := c.Values[0]
	for i, v := range c.Values {
		if v.Host != compared[i] {
			return fmt.Errorf("value %d is %q's, want %q's", i+1, v.Host, compared[i])
		}
		if !v.Present {
			if v.Ratio != nil {
				return fmt.Errorf("%s: a ratio without a value", v.Host)
			}
			continue
		}
		if half, _ := plots.HalfWidth(plots.IntervalCI95, v.SD, v.Reps); v.Half != half {
			return fmt.Errorf("%s: half-width %g, but SD %g over %d repetitions gives %g", v.Host, v.Half, v.SD, v.Reps, half)
		}
		var ratio *float64
		if i > 0 && base.Present && base.Mean > 0 {
			x := v.Mean / base.Mean
			ratio = &x
		}
		if (ratio == nil) != (v.Ratio == nil) || ratio != nil && *ratio != *v.Ratio {
			return fmt.Errorf("%s: ratio %v is not its mean ÷ the baseline's", v.Host, fmtRatio(v.Ratio))
		}
	}
	return nil
}

func fmtRatio(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// checkConstant: each member's ceiling is its bandwidth over its bytes per token and its
// efficiency its t/s over the ceiling; n, mean, median, min and max are the members' (in their
// order, which is by efficiency), as overview.BuildLadder computes them.
func checkConstant(c overview.Constant) error {
	if c.N != len(c.Members) || c.N == 0 {
		return fmt.Errorf("n %d with %d members", c.N, len(c.Members))
	}
	sum := 0.0
	for i, m := range c.Members {
		if ceil := m.BandwidthGBs * 1e9 / m.ActiveBytes; m.Ceiling != ceil || m.Efficiency != m.D0.TS/ceil {
			return fmt.Errorf("member %s (study %d): efficiency %g is not %g t/s over %g GB/s ÷ %g bytes per token", m.Model, m.Study, m.Efficiency, m.D0.TS, m.BandwidthGBs, m.ActiveBytes)
		}
		if i > 0 && m.Efficiency < c.Members[i-1].Efficiency {
			return fmt.Errorf("members are not in order of efficiency")
		}
		sum += m.Efficiency
	}
	n := len(c.Members)
	med := c.Members[n/2].Efficiency
	if n%2 == 0 {
		med = (c.Members[n/2-1].Efficiency + c.Members[n/2].Efficiency) / 2
	}
	if c.Mean != sum/float64(n) || c.Median != med || c.Min != c.Members[0].Efficiency || c.Max != c.Members[n-1].Efficiency {
		return fmt.Errorf("mean %g, median %g, min %g, max %g are not its members'", c.Mean, c.Median, c.Min, c.Max)
	}
	return nil
}
