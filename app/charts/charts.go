// Package charts turns a study's report into chart inputs for plots: the same charts in the
// window, on the command line and in receipts.
package charts

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sparkbench/app/study"
	"sparkbench/plots"
	"sparkbench/runner/benchfmt"
)

// matches reports whether test (e.g. "tg32") is the metric asked for ("tg", "pp", "tg32").
func matches(metric, test string) bool {
	if metric == test {
		return true
	}
	return (metric == "tg" || metric == "pp" || metric == "pg") && strings.HasPrefix(test, metric) &&
		(metric != "pp" || !strings.Contains(test, "+")) // pp512+tg128 is a pg test
}

// CheckMetric refuses a metric that is neither tg, pp nor pg (each test of that kind) nor a
// test of r's results, listing the tests r has: a misspelt metric is not "no results yet".
func CheckMetric(r *study.Report, metric string) error {
	if metric == "tg" || metric == "pp" || metric == "pg" {
		return nil
	}
	var tests []string
	for _, c := range r.Results {
		if matches(metric, c.Test) {
			return nil
		}
		if !slices.Contains(tests, c.Test) {
			tests = append(tests, c.Test)
		}
	}
	slices.Sort(tests)
	have := "none yet"
	if len(tests) > 0 {
		have = strings.Join(tests, ", ")
	}
	return fmt.Errorf("--metric %q is not a metric of study %d: give tg, pp or pg (every test of that kind) or one of its tests (%s)", metric, r.Study.ID, have)
}

func isRepeat(leg string) bool { return strings.Contains(leg, "#") }

// seriesKey names a series: the model, plus its configuration when the model ran several.
func seriesKeys(cells []study.ReportCell) func(c study.ReportCell) string {
	configs := map[string]map[string]bool{}
	for _, c := range cells {
		if configs[c.Model] == nil {
			configs[c.Model] = map[string]bool{}
		}
		configs[c.Model][c.Config] = true
	}
	// the words every configuration of a model shares (ub512 b2048 …) say nothing about which
	// series is which: a series is named by the model and the words of its configuration that
	// the model's other configurations lack (dev-none, dev-Vulkan0 on-Vulkan, kv-q8_0/q8_0 …)
	shared := map[string]map[string]int{}
	for m, cs := range configs {
		shared[m] = map[string]int{}
		for c := range cs {
			for _, w := range strings.Fields(c) {
				shared[m][w]++
			}
		}
	}
	return func(c study.ReportCell) string {
		n := len(configs[c.Model])
		if n <= 1 {
			return c.Model
		}
		var own []string
		for _, w := range strings.Fields(c.Config) {
			if shared[c.Model][w] < n {
				own = append(own, w)
			}
		}
		if len(own) == 0 {
			return c.Model + " " + c.Config
		}
		return c.Model + " " + strings.Join(own, " ")
	}
}

// CrossingLine is the line (t/s) of the study's crossing prediction about metric, or 0: the
// reference line its depth chart draws, in the window, the receipt and `sparkbench plot`.
func CrossingLine(r *study.Report, metric string) float64 {
	for _, f := range r.Figures {
		if f.Figure == study.FigureCrossing && strings.HasPrefix(f.Selector.Test, metric) {
			return f.Selector.Line
		}
	}
	return 0
}

// Depth is the metric against KV depth, one series per model (and configuration), from the
// study's result rows (repeatability copies left out). refLine 0 draws no line.
func Depth(r *study.Report, metric string, refLine float64) (*plots.DepthChart, error) {
	var cells []study.ReportCell
	exact := metric
	for _, c := range r.Results {
		if matches(metric, c.Test) && !isRepeat(c.Leg) {
			cells = append(cells, c)
			exact = c.Test
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("study %d has no %s results yet", r.Study.ID, metric)
	}
	key := seriesKeys(cells)
	byKey := map[string][]plots.DepthPoint{}
	var order []string
	for _, c := range cells {
		k := key(c)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], plots.DepthPoint{Depth: int(c.Depth), Mean: c.Mean, SD: c.SD, N: c.Reps})
	}
	ch := &plots.DepthChart{Metric: exact, RefLine: refLine, Meta: meta(r)}
	for _, k := range order {
		pts := byKey[k]
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Depth < pts[j].Depth })
		ch.Series = append(ch.Series, plots.DepthSeries{Label: k, Points: pts})
	}
	return ch, nil
}

// Repeatability is each repeated leg's metric run after run (the canonical leg and its
// #start/#middle/#end copies, in the order they ran), with declared conditions.
func Repeatability(r *study.Report, metric string) (*plots.RepeatChart, error) {
	legs := map[string]study.ReportLeg{}
	for _, l := range r.Legs {
		if l.Counts {
			legs[l.PlanLeg] = l
		}
	}
	type run struct {
		leg  study.ReportLeg
		cell study.ReportCell
	}
	groups := map[string][]run{}
	repeated := map[string]bool{}
	exact := metric
	for _, c := range r.Results {
		if !matches(metric, c.Test) {
			continue
		}
		base, _, copied := strings.Cut(c.Leg, "#")
		if copied {
			repeated[base] = true
		}
		groups[base+"|"+c.Test+"|"+c.Config+fmt.Sprint(c.Depth)] = append(groups[base+"|"+c.Test+"|"+c.Config+fmt.Sprint(c.Depth)], run{legs[c.Leg], c})
		exact = c.Test
	}
	ch := &plots.RepeatChart{Metric: exact, Meta: meta(r)}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		if repeated[strings.SplitN(k, "|", 2)[0]] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		runs := groups[k]
		sort.SliceStable(runs, func(i, j int) bool {
			a, b := runs[i].leg.Started, runs[j].leg.Started
			return a != nil && b != nil && a.Before(*b)
		})
		s := plots.RepeatSeries{Label: strings.SplitN(k, "|", 2)[0] + " " + runs[0].cell.Test}
		for _, x := range runs {
			p := plots.RepeatPoint{Value: x.cell.Mean, SD: x.cell.SD, N: x.cell.Reps, Condition: strings.Join(x.leg.Conditions, "; ")}
			if x.leg.Started != nil {
				p.At = *x.leg.Started
			}
			s.Points = append(s.Points, p)
		}
		ch.Series = append(ch.Series, s)
	}
	if len(ch.Series) == 0 {
		return nil, fmt.Errorf("study %d has no repeated leg with %s results (the plan's repeatability block repeats one)", r.Study.ID, metric)
	}
	return ch, nil
}

var ubRE = regexp.MustCompile(`\bub(\d+)\b`)

// Ubatch is the metric (normally pp) against ubatch at depth 0, one series per model and
// prompt length.
func Ubatch(r *study.Report, metric string) (*plots.UbatchChart, error) {
	if metric == "" {
		metric = "pp"
	}
	type key struct{ label, test, rest string }
	byKey := map[key][]plots.UbatchPoint{}
	var order []key
	for _, c := range r.Results {
		if !matches(metric, c.Test) || c.Depth != 0 || isRepeat(c.Leg) {
			continue
		}
		m := ubRE.FindStringSubmatch(c.Config)
		if m == nil {
			continue
		}
		ub, _ := strconv.Atoi(m[1])
		// one series per model, test and the rest of the configuration: the points of a
		// series differ in ubatch alone (a device study's two devices at one ubatch are no sweep)
		rest := strings.Join(strings.Fields(ubRE.ReplaceAllString(c.Config, "")), " ")
		k := key{c.Model, c.Test, rest}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], plots.UbatchPoint{Ubatch: ub, Mean: c.Mean, SD: c.SD, N: c.Reps})
	}
	ch := &plots.UbatchChart{Metric: metric, Meta: meta(r)}
	rests := map[key]int{}
	for _, k := range order {
		rests[key{k.label, k.test, ""}]++
	}
	for _, k := range order {
		pts := byKey[k]
		if len(pts) < 2 {
			continue
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].Ubatch < pts[j].Ubatch })
		if pts[0].Ubatch == pts[len(pts)-1].Ubatch {
			continue // one ubatch value: no sweep
		}
		n, _ := strconv.Atoi(strings.TrimLeft(k.test, "ptg"))
		label := k.label + " " + k.test
		if rests[key{k.label, k.test, ""}] > 1 {
			label += " " + k.rest // the same test swept in several configurations
		}
		ch.Series = append(ch.Series, plots.UbatchSeries{Label: label, PromptTokens: n, Points: pts})
	}
	if len(ch.Series) == 0 {
		return nil, fmt.Errorf("study %d has no ubatch sweep (at least two ubatch values of %s at depth 0)", r.Study.ID, metric)
	}
	return ch, nil
}

func meta(r *study.Report) plots.Meta {
	return plots.Meta{Model: fmt.Sprintf("%s (study %d)", r.Study.Name, r.Study.ID)}
}

// MetaFromRows fills a chart's build and machine from the llama-bench rows it was drawn from,
// as a receipt names them: the first build (commit, number, backends) and the first machine
// (CPU, GPU) in the receipt's order.
func MetaFromRows(m plots.Meta, rows []benchfmt.Result) plots.Meta {
	type build struct {
		commit, backends string
		number           int64
	}
	var builds []build
	var machines [][2]string
	for _, r := range rows {
		b := build{r.BuildCommit, r.Backends, r.BuildNumber}
		if !slices.Contains(builds, b) {
			builds = append(builds, b)
		}
		mc := [2]string{r.CPUInfo, r.GPUInfo}
		if !slices.Contains(machines, mc) {
			machines = append(machines, mc)
		}
	}
	slices.SortFunc(builds, func(a, b build) int {
		return strings.Compare(a.commit+"\x00"+a.backends+fmt.Sprint(a.number), b.commit+"\x00"+b.backends+fmt.Sprint(b.number))
	})
	slices.SortFunc(machines, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	if len(builds) > 0 && builds[0].commit != "" {
		m.Build = BuildLabel(builds[0].commit, builds[0].number, builds[0].backends)
	}
	if len(machines) > 0 && machines[0][0] != "" {
		m.Machine = MachineLabel(machines[0][0], machines[0][1])
	}
	return m
}

// BuildLabel names a llama.cpp build in a chart's title.
func BuildLabel(commit string, number int64, backends string) string {
	return fmt.Sprintf("llama.cpp %s (build %d) %s", commit, number, backends)
}

// MachineLabel names a machine in a chart's title: its CPU, and its GPU when it has one.
func MachineLabel(cpu, gpu string) string {
	if gpu != "" {
		return cpu + ", " + gpu
	}
	return cpu
}

var (
	nglRE = regexp.MustCompile(`\bngl(-?\d+)\b`)
	onRE  = regexp.MustCompile(`\bon-\S+`)
)

// NGL is the metric against -ngl (layers offloaded), one series per model, test, depth and the
// rest of the configuration, from the study's result rows (repeatability copies left out); a
// series needs two -ngl values of 0 or more (-1, "auto", has no place on the axis).
func NGL(r *study.Report, metric string) (*plots.NGLChart, error) {
	if metric == "" {
		metric = "tg"
	}
	byKey := map[string][]plots.DepthPoint{}
	var order []string
	exact := metric
	for _, c := range r.Results {
		if !matches(metric, c.Test) || isRepeat(c.Leg) {
			continue
		}
		m := nglRE.FindStringSubmatch(c.Config)
		if m == nil {
			continue
		}
		ngl, _ := strconv.Atoi(m[1])
		if ngl < 0 {
			continue
		}
		// the rest of the configuration, without where the row ran: -ngl 0 runs on the CPU,
		// the other values on the device, and all are one sweep
		rest := strings.Join(strings.Fields(onRE.ReplaceAllString(nglRE.ReplaceAllString(c.Config, ""), "")), " ")
		k := fmt.Sprintf("%s %s @ d%d %s", c.Model, c.Test, c.Depth, rest)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], plots.DepthPoint{Depth: ngl, Mean: c.Mean, SD: c.SD, N: c.Reps})
		exact = c.Test
	}
	ch := &plots.NGLChart{Metric: exact, Meta: meta(r)}
	for _, k := range order {
		pts := byKey[k]
		if len(pts) < 2 {
			continue
		}
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Depth < pts[j].Depth })
		ch.Series = append(ch.Series, plots.DepthSeries{Label: strings.TrimSpace(k), Points: pts})
	}
	if len(ch.Series) == 0 {
		return nil, fmt.Errorf("study %d has no ngl sweep (at least two -ngl values of 0 or more for %s)", r.Study.ID, metric)
	}
	return ch, nil
}

// CompareDepth overlays the depth curves of several studies (charts.Depth of each), every
// series named by its study: "study 3 tiny". Studies without results of metric are left out;
// none with any is an error.
func CompareDepth(reports []*study.Report, metric string) (*plots.DepthChart, error) {
	var out *plots.DepthChart
	var missing []string
	for _, r := range reports {
		ch, err := Depth(r, metric, 0)
		if err != nil {
			missing = append(missing, fmt.Sprintf("study %d", r.Study.ID))
			continue
		}
		if out == nil {
			out = &plots.DepthChart{Metric: ch.Metric, Meta: plots.Meta{Build: ch.Meta.Build, Machine: ch.Meta.Machine}}
		}
		for _, s := range ch.Series {
			s.Label = fmt.Sprintf("study %d %s", r.Study.ID, s.Label)
			out.Series = append(out.Series, s)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("none of %s has %s results", strings.Join(missing, ", "), metric)
	}
	return out, nil
}
