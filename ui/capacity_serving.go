package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/capacity"
	"sparkbench/plots"
)

// servingTab is a serving study's open-loop results in the capacity panel (docs/serving.md):
// what open loop means next to the closed-loop envelope, one row per probe of every server
// lifetime, and the receipt's three serving charts (latency percentiles against offered rate
// with the SLO lines and the knee, goodput against rate, the max-rate search trace). The tab
// is in the panel only while a study whose plan has a serving block is shown.
type servingTab struct {
	Item    *container.TabItem
	Loop    *widget.Label // open loop against closed loop, as the receipt words it
	Search  *widget.Label // each lifetime's search outcome and largest sweep rate meeting the SLO
	Probes  *widget.Table
	Latency *ChartView
	Goodput *ChartView
	Trace   *ChartView
	rows    []servingRow
}

// servingRow is one probe of one server lifetime.
type servingRow struct {
	Lifetime string
	P        capacity.ProbeResult
}

var servingCols = []col[servingRow]{
	{"Lifetime", 150, func(r servingRow) string { return r.Lifetime }},
	{"#", 40, func(r servingRow) string { return fmt.Sprint(r.P.Probe) }},
	{"Probe", 70, func(r servingRow) string { return r.P.Kind }},
	{"Offered", 80, func(r servingRow) string { return trimFloat(r.P.OfferedRate) }},
	{"Achieved", 80, func(r servingRow) string { return servingFig(r.P.AchievedRate, 2) }},
	{"Goodput", 80, func(r servingRow) string { return servingFig(r.P.Goodput, 2) }},
	{"Completed", 90, func(r servingRow) string { return fmt.Sprintf("%d/%d", r.P.Completed, r.P.Requests) }},
	{"TTFT p95 ms", 100, func(r servingRow) string { return servingFig(r.P.TTFTMs.P95, 1) }},
	{"TPOT p95 ms", 100, func(r servingRow) string { return servingFig(r.P.TPOTMs.P95, 2) }},
	{"Send delay p99 ms", 130, func(r servingRow) string { return servingFig(r.P.SendDelayMs.P99, 2) }},
	{"Verdict", 320, servingVerdict},
}

func servingVerdict(r servingRow) string {
	v := "PASS"
	if !r.P.Passed {
		v = "FAIL " + strings.Join(r.P.Failures, ", ")
	}
	if r.P.ClientBound {
		v += " · client-bound"
	}
	return v
}

func servingFig(x *float64, prec int) string {
	if x == nil {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, *x)
}

func trimFloat(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}

func newServingTab() *servingTab {
	t := &servingTab{Loop: widget.NewLabel(""), Search: widget.NewLabel(""),
		Latency: NewChartView(760, 420), Goodput: NewChartView(760, 420), Trace: NewChartView(760, 360)}
	t.Loop.Wrapping, t.Search.Wrapping = fyne.TextWrapWord, fyne.TextWrapWord
	t.Probes = newItemTable(servingCols, func() []servingRow { return t.rows })
	charts := container.NewAppTabs(
		container.NewTabItem("Probes", t.Probes),
		container.NewTabItem("Latency vs rate", t.Latency.Object),
		container.NewTabItem("Goodput vs rate", t.Goodput.Object),
		container.NewTabItem("Search trace", t.Trace.Object))
	t.Item = container.NewTabItem("Serving", container.NewBorder(container.NewVBox(t.Loop, t.Search), nil, nil, nil, charts))
	return t
}

// servingLoopText says what the open-loop rows measure, and that the envelope's cells are
// closed-loop, so the two are never read as one.
func servingLoopText(s *capacity.Serving) string {
	proc := s.Arrival.Describe(trimFloat)
	slo := fmt.Sprintf("TTFT ≤ %s ms, TPOT ≤ %s ms at p%d", trimFloat(s.SLO.TTFTMs), trimFloat(s.SLO.TPOTMs), s.SLO.Percentile)
	if pr, ok := capacity.FindSLOPreset(s.SLO.Preset); ok {
		slo += " (preset " + pr.Name + ": " + pr.Source + ")"
	}
	return fmt.Sprintf("Open loop: requests arrive on a %s schedule at each offered rate whether or not earlier ones finished "+
		"(at most %d in flight, %d measured requests a probe); TTFT and E2E run from each request's scheduled send time "+
		"(coordinated-omission-correct). SLO: %s. The Envelope tab is closed loop: C clients, each sending its next request when "+
		"its last one ended.", proc, s.MaxInFlight, s.Requests, slo)
}

// show fills the tab from a study's assembled result and charts (charts: latency, goodput and,
// when the plan searched, the trace — as the receipt draws them).
func (t *servingTab) show(p *capacity.Plan, r *capacity.Result, charts []plots.Chart, meta plots.Meta) {
	t.Loop.SetText(servingLoopText(p.Serving))
	t.rows = nil
	var lines []string
	if r != nil {
		for _, c := range r.Candidates {
			for _, sv := range c.Serving {
				key := capacity.LifetimeKey{Pass: sv.Pass, Candidate: c.ID, Slots: sv.Slots}.String()
				for _, pr := range sv.Probes {
					t.rows = append(t.rows, servingRow{Lifetime: key, P: pr})
				}
				lines = append(lines, key+": "+servingOutcome(sv, p.Serving.RateUnit()))
			}
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "no open-loop results yet: Run measures the closed-loop cells, then each lifetime's probes")
	}
	t.Search.SetText(strings.Join(lines, "\n"))
	t.Probes.Refresh()
	for i, v := range []*ChartView{t.Latency, t.Goodput, t.Trace} {
		if i < len(charts) {
			v.Show(withMeta(charts[i], meta))
		}
	}
}

// servingOutcome is one lifetime's answer: the largest sweep rate meeting every SLO, the
// search's rate and the knee the sustain rule found, as show and the receipt state them.
func servingOutcome(sv capacity.ServingResult, unit string) string {
	var parts []string
	if sv.MaxSweepRate != nil {
		parts = append(parts, "largest sweep rate meeting every SLO "+trimFloat(*sv.MaxSweepRate)+" "+unit)
	}
	if q := sv.Search; q != nil {
		s := "max-rate search: "
		switch {
		case q.MaxRate != nil && q.Converged:
			s += trimFloat(*q.MaxRate) + " " + unit + " (converged"
		case q.MaxRate != nil:
			s += trimFloat(*q.MaxRate) + " " + unit + " (not converged"
		default:
			s += "none (no probe met every SLO"
		}
		if q.LowestFail != nil {
			s += "; lowest failing " + trimFloat(*q.LowestFail)
		}
		parts = append(parts, s+"; "+q.Note+")")
	}
	if len(parts) == 0 {
		parts = append(parts, "no sweep rate met every SLO")
	}
	if st := sv.Saturation; st != nil {
		parts = append(parts, "knee: "+capacity.SaturationLine(st, unit))
	}
	return strings.Join(parts, " · ")
}

func (t *servingTab) close() {
	t.Latency.Close()
	t.Goodput.Close()
	t.Trace.Close()
}

// showServing puts the Serving tab after the Slots tab for a study whose plan has a serving
// block, filled from its assembled result, and takes it out for any other study.
func (v *CapacityPanel) showServing(cs *CapacityStudy) {
	in := false
	for _, it := range v.Tabs.Items {
		in = in || it == v.Serving.Item
	}
	if cs.Plan == nil || cs.Plan.Serving == nil {
		if in {
			v.Tabs.Remove(v.Serving.Item)
		}
		return
	}
	if !in {
		v.Tabs.Items = append(v.Tabs.Items[:3], append([]*container.TabItem{v.Serving.Item}, v.Tabs.Items[3:]...)...)
		v.Tabs.Refresh()
	}
	var res *capacity.Result
	if r := cs.Report; r != nil && r.Run != nil && r.Trusted {
		res = r.Run.Result
	}
	v.Serving.show(cs.Plan, res, cs.ServingCharts, v.chartMeta())
}
