package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/charts"
	"sparkbench/app/study"
	"sparkbench/plots"
)

// Plot size in CSS pixels (PNG at 96 dpi; SVG 600 × 375 pt).
const plotW, plotH = 800, 500

// NamedChart is one plot of a bundle: its name (plots/depth-tg, no extension) and its chart.
type NamedChart struct {
	Name  string
	Chart plots.Chart
}

// throughputCharts are the charts of a throughput study: tg and pp by depth (one series per
// device in a device study), the repeated leg run after run, the ubatch sweep and tg and pp by
// -ngl, each when the study has the data.
func throughputCharts(d *ThroughputStudy) []NamedChart {
	rep := d.Report
	meta := func(m plots.Meta) plots.Meta {
		if len(d.Provenance.Builds) > 0 {
			b := d.Provenance.Builds[0]
			m.Build = charts.BuildLabel(b.Commit, b.Number, b.Backends)
		}
		if len(d.Provenance.Machines) > 0 {
			m.Machine = charts.MachineLabel(d.Provenance.Machines[0].CPU, d.Provenance.Machines[0].GPU)
		}
		return m
	}
	var out []NamedChart
	for _, metric := range []string{"tg", "pp"} {
		if ch, err := charts.Depth(rep, metric, charts.CrossingLine(rep, metric)); err == nil {
			ch.Meta = meta(ch.Meta)
			out = append(out, NamedChart{DirPlots + "depth-" + metric, *ch})
		}
	}
	if ch, err := charts.Repeatability(rep, "tg"); err == nil {
		ch.Meta = meta(ch.Meta)
		out = append(out, NamedChart{DirPlots + "repeatability-tg", *ch})
	}
	if ch, err := charts.Ubatch(rep, "pp"); err == nil {
		ch.Meta = meta(ch.Meta)
		out = append(out, NamedChart{DirPlots + "ubatch-pp", *ch})
	}
	for _, metric := range []string{"tg", "pp"} {
		if ch, err := charts.NGL(rep, metric); err == nil {
			ch.Meta = meta(ch.Meta)
			out = append(out, NamedChart{DirPlots + "ngl-" + metric, *ch})
		}
	}
	return append(out, energyCharts(rep, meta)...)
}

func throughputPlotNames(d *ThroughputStudy) []string {
	var names []string
	for _, c := range throughputCharts(d) {
		names = append(names, c.Name+".png", c.Name+".svg")
	}
	sort.Strings(names)
	if names == nil {
		names = []string{}
	}
	return names
}

// capacityCharts are, per candidate, its envelope and its latency against clients, and one
// chart of the aggregate and per-stream rate along the diagonal (clients = slots).
func capacityCharts(r *capacity.Result) []NamedChart {
	var out []NamedChart
	meta := plots.Meta{Model: r.Plan.Name}
	slots := plots.SlotsChart{Meta: meta, Knee: r.Plan.KneeThreshold}
	for _, c := range r.Candidates {
		m := meta
		m.Model = c.Label
		grid := plots.EnvelopeGrid{Candidate: c.Label, Slots: r.Plan.Slots}
		clients := map[int]bool{}
		for _, cell := range c.Cells {
			clients[cell.Clients] = true
		}
		for k := range clients {
			grid.Clients = append(grid.Clients, k)
		}
		sort.Ints(grid.Clients)
		lat := plots.LatencyChart{Meta: m, Candidate: c.Label, TTFTLimitMs: r.Plan.Limits.TTFTMsP95Max, E2ELimitMs: r.Plan.Limits.E2EMsP95Max}
		var diag []plots.SlotsPoint
		for _, s := range r.Plan.Slots {
			row := make([]plots.EnvelopeCell, len(grid.Clients))
			series := plots.LatencySeries{Slots: s, Label: fmt.Sprintf("P%d", s)}
			for j, k := range grid.Clients {
				row[j] = plots.EnvelopeCell{Missing: true}
				for _, cell := range c.Cells {
					if cell.Slots != s || cell.Clients != k {
						continue
					}
					if cell.GenerationRate == nil || cell.E2EMsP95 == nil || cell.TTFTMsP95 == nil {
						break
					}
					row[j] = plots.EnvelopeCell{Pass: cell.Passed, Rate: *cell.GenerationRate, E2EP95: *cell.E2EMsP95,
						TTFTP95: *cell.TTFTMsP95, Failures: cell.Failures}
					series.Points = append(series.Points, plots.LatencyPoint{Clients: k, TTFTP95Ms: *cell.TTFTMsP95, E2EP95Ms: *cell.E2EMsP95})
					if k == s && cell.PerStreamRate != nil {
						diag = append(diag, plots.SlotsPoint{Slots: s, Aggregate: *cell.GenerationRate, PerStream: *cell.PerStreamRate})
					}
				}
			}
			grid.Cells = append(grid.Cells, row)
			if len(series.Points) > 0 {
				lat.Series = append(lat.Series, series)
			}
		}
		if sel := c.Selected; sel != nil {
			grid.Selected = &[2]int{sel.Slots, sel.Clients}
		}
		out = append(out, NamedChart{DirPlots + "envelope-" + c.ID, plots.EnvelopeChart{Meta: m, Grid: grid}})
		out = append(out, NamedChart{DirPlots + "latency-" + c.ID, lat})
		if len(diag) > 0 {
			slots.Series = append(slots.Series, plots.SlotsSeries{Label: c.Label, Points: diag})
		}
	}
	if len(slots.Series) > 0 {
		out = append(out, NamedChart{DirPlots + "slots", slots})
	}
	// A serving plan's open-loop charts (docs/serving.md); nothing for any other plan.
	if lat, good, search := charts.ServingCharts(r); lat != nil {
		out = append(out, NamedChart{DirPlots + "serving-latency", *lat}, NamedChart{DirPlots + "serving-goodput", *good})
		if search != nil {
			out = append(out, NamedChart{DirPlots + "serving-search", *search})
		}
	}
	return out
}

func capacityPlotNames(r *capacity.Result) []string {
	var names []string
	for _, c := range capacityCharts(r) {
		names = append(names, c.Name+".png", c.Name+".svg")
	}
	sort.Strings(names)
	return names
}

// RenderPlots draws the plots of a bundle from its study.json (PNG and SVG with the
// deterministic exporters): the same study.json gives the same bytes.
func RenderPlots(kind string, studyJSON []byte) (Files, error) {
	k, ok := bundleKinds[kind]
	if !ok {
		return nil, fmt.Errorf("no plots for a %q bundle", kind)
	}
	cs, err := k.Charts(studyJSON)
	if err != nil {
		return nil, err
	}
	out := Files{}
	for _, c := range cs {
		for _, f := range []plots.Format{plots.PNG, plots.SVG} {
			p, err := c.Chart.Plot() // a plot is drawn once: build it for each format
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			var b bytes.Buffer
			if err := plots.Export(p, f, plots.Pixels(plotW), plots.Pixels(plotH), &b); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", c.Name, f, err)
			}
			out[c.Name+"."+string(f)] = b.Bytes()
		}
	}
	return out, nil
}

// DecodeThroughputStudy reads a throughput study.json back.
func DecodeThroughputStudy(studyJSON []byte) (*ThroughputStudy, error) {
	d := &ThroughputStudy{Report: &study.Report{}}
	if err := json.Unmarshal(studyJSON, d); err != nil {
		return nil, fmt.Errorf("%s: %w", FileStudy, err)
	}
	// The report's legs are the receipt legs without their extra fields.
	var legs struct {
		Legs []study.ReportLeg `json:"legs"`
	}
	if err := json.Unmarshal(studyJSON, &legs); err != nil {
		return nil, fmt.Errorf("%s: %w", FileStudy, err)
	}
	d.Report.Legs = legs.Legs
	return d, nil
}

// CapacityChart is one chart of an assembled capacity study, as the receipt draws it: kind
// envelope or latency for one candidate (its id; "" = the first), or slots (every candidate).
func CapacityChart(r *capacity.Result, kind plots.Kind, candidate string) (plots.Chart, error) {
	if len(r.Candidates) == 0 {
		return nil, fmt.Errorf("the study has no candidate")
	}
	if candidate == "" {
		candidate = r.Candidates[0].ID
	}
	var name string
	switch kind {
	case plots.KindEnvelope:
		name = DirPlots + "envelope-" + candidate
	case plots.KindLatency:
		name = DirPlots + "latency-" + candidate
	case plots.KindSlots:
		name = DirPlots + "slots"
	case plots.KindServingLatency, plots.KindServingGoodput, plots.KindServingSearch:
		return servingChart(r, kind)
	default:
		return nil, fmt.Errorf("a capacity study draws envelope, latency or slots charts (with a serving block also serving_latency, serving_goodput or serving_search), not %s", kind)
	}
	var ids []string
	for _, c := range r.Candidates {
		ids = append(ids, c.ID)
	}
	for _, c := range capacityCharts(r) {
		if c.Name == name {
			return c.Chart, nil
		}
	}
	if kind == plots.KindSlots {
		return nil, fmt.Errorf("no diagonal cell (clients = slots) has a per-stream rate: nothing to draw")
	}
	return nil, fmt.Errorf("no candidate %q (candidates: %s)", candidate, strings.Join(ids, ", "))
}

// servingChart is one of a serving study's open-loop charts, as its receipt draws it.
func servingChart(r *capacity.Result, kind plots.Kind) (plots.Chart, error) {
	lat, good, search := charts.ServingCharts(r)
	switch {
	case lat == nil:
		return nil, fmt.Errorf("--kind %s charts a serving study's open-loop probes; this capacity study's plan has no serving block (envelope, latency or slots)", kind)
	case kind == plots.KindServingLatency:
		return *lat, nil
	case kind == plots.KindServingGoodput:
		return *good, nil
	case search == nil && r.Plan.Serving.Search != nil:
		return nil, fmt.Errorf("--kind %s: the max-rate search made no probe of its own (%s), so there is no search trace", kind, searchNotes(r))
	case search == nil:
		return nil, fmt.Errorf("--kind %s: the plan has no max-rate search (serving.search), so there is no search trace", kind)
	}
	return *search, nil
}

// searchNotes are the search outcomes' notes of a serving study's lifetimes, each once.
func searchNotes(r *capacity.Result) string {
	var notes []string
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			if q := sv.Search; q != nil && !slices.Contains(notes, q.Note) {
				notes = append(notes, q.Note)
			}
		}
	}
	return strings.Join(notes, "; ")
}
