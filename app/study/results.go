package study

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/app/energy"
	"sparkbench/runner/benchfmt"
)

// ResultRow is one llama-bench result row of the study that counts as a result, with where it
// came from, so every derived figure can name its evidence.
type ResultRow struct {
	Leg    string          `json:"leg"`   // plan leg ID, e.g. "tiny/d0" or "tiny/d0#end"
	Ref    string          `json:"ref"`   // reference to the stored row, e.g. "leg 12 row 3"
	Model  string          `json:"model"` // model ID
	Result benchfmt.Result `json:"-"`
	// Chunks are the kept repetitions of each chunk of an adaptive cell, in order (their sum is
	// len(Result.SamplesTs)); nil for a fixed leg's row (one process).
	Chunks []int `json:"-"`
}

// Results is what a study has measured so far.
type Results struct {
	Plan *Plan
	Rows []ResultRow
	// Finished lists the plan legs that have ended (with or without rows).
	Finished map[string]bool
	// Models holds what validation read of each model (headers for ceilings).
	Models map[string]ModelInfo
	// BandwidthGBs is the plan's bandwidth, or the measured one when the plan says measure.
	BandwidthGBs float64
	// Energy is each sampled row's energy figure by its RowRef (nil: no leg was sampled).
	Energy map[string]energy.RowFigures
}

// Resolution errors: Pending while a leg the figure needs has not run, Unresolvable when the
// legs ran and still the figure cannot be computed.
var (
	ErrPending      = errors.New("waiting for legs that have not finished")
	ErrUnresolvable = errors.New("cannot be computed from the results")
)

// Value is a resolved selector: the number and the rows it came from.
type Value struct {
	X       float64  `json:"value"`
	Detail  string   `json:"detail,omitempty"`
	Sources []string `json:"sources"`
}

var testSelRE = regexp.MustCompile(`^(pp|tg|pg)(\d*)$`)

// matchTest reports whether row r is the test a selector names ("tg", "tg128", "pp512").
func matchTest(test string, r *benchfmt.Result) bool {
	m := testSelRE.FindStringSubmatch(test)
	if m == nil || string(r.Kind()) != m[1] {
		return false
	}
	if m[2] == "" {
		return true
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	if m[1] == "pp" {
		return r.NPrompt == n
	}
	return r.NGen == n
}

func matchConfig(c *ConfigSel, r *benchfmt.Result) bool {
	if c == nil {
		return true
	}
	fa := map[string]int64{"auto": -1, "off": 0, "on": 1}
	return (c.Ubatch == nil || int64(*c.Ubatch) == r.NUbatch) &&
		(c.Batch == nil || int64(*c.Batch) == r.NBatch) &&
		(c.FlashAttn == "" || fa[c.FlashAttn] == r.FlashAttn) &&
		(c.KV == nil || (c.KV.K == r.TypeK && c.KV.V == r.TypeV)) &&
		(c.Threads == nil || int64(*c.Threads) == r.NThreads) &&
		(c.NGL == nil || int64(*c.NGL) == r.NGPULayers) &&
		(c.Devices == "" || c.Devices == r.Devices)
}

// legsOfModel lists plan legs that measure the model at the depth (depth < 0: any), repeats
// included when withRepeats.
func legsOf(legs []LegPlan, model string, depth int, withRepeats bool) []string {
	var out []string
	for _, l := range legs {
		if !has(l.Models, model) || (!withRepeats && l.Repeat != "") {
			continue
		}
		if depth >= 0 && !containsInt(l.Depths, depth) {
			continue
		}
		out = append(out, l.ID)
	}
	return out
}

// Touches lists the plan legs a selector reads: an amendment of a prediction is accepted only
// while none of them has run.
func Touches(s Selector, legs []LegPlan) []string {
	switch s.Figure {
	case FigureCell, FigureCV, FigureEfficiency, FigureDeviceRatio, FigureJPerToken, FigureTokensPerJ:
		d := -1
		if s.Depth != nil {
			d = *s.Depth
		}
		return legsOf(legs, s.Model, d, false)
	case FigureCrossing, FigureSlope:
		return legsOf(legs, s.Model, -1, false)
	case FigureRepeatabilityCV:
		var out []string
		for _, l := range legs {
			if l.Repeat != "" {
				out = append(out, l.ID, l.Of)
			}
		}
		return dedupe(out)
	case FigureContamination:
		return append([]string(nil), s.Legs...)
	}
	return nil // ceiling: model bytes and bandwidth only
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// cell finds the single row for (model, test, depth, config), reading only the given legs.
func (res *Results) cell(s Selector, depth int, legs []string) (*ResultRow, error) {
	var found []*ResultRow
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.Model != s.Model || !has(legs, r.Leg) || r.Result.NDepth != int64(depth) ||
			!matchTest(s.Test, &r.Result) || !matchConfig(s.Config, &r.Result) {
			continue
		}
		found = append(found, r)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		for _, l := range legs {
			if !res.Finished[l] {
				return nil, fmt.Errorf("%s of %s at depth %d: %w (%s)", s.Test, s.Model, depth, ErrPending, l)
			}
		}
		return nil, fmt.Errorf("%s of %s at depth %d: no result row (its legs %s ended without one): %w", s.Test, s.Model, depth, strings.Join(legs, ", "), ErrUnresolvable)
	}
	refs := make([]string, len(found))
	for i, r := range found {
		refs[i] = r.Ref
	}
	return nil, fmt.Errorf("%s of %s at depth %d matches %d rows (%s); narrow the selector with config: %w", s.Test, s.Model, depth, len(found), strings.Join(refs, ", "), ErrUnresolvable)
}

// Resolve computes a selector's value from the results.
func (res *Results) Resolve(s Selector) (Value, error) {
	legs, err := Expand(res.Plan, "")
	if err != nil {
		return Value{}, err
	}
	switch s.Figure {
	case FigureCell, FigureCV:
		return res.resolveCell(s, legs)
	case FigureCrossing, FigureSlope:
		return res.resolveDepthSeries(s, legs)
	case FigureDeviceRatio:
		return res.resolveDeviceRatio(s, legs)
	case FigureCeiling, FigureEfficiency:
		return res.resolveCeiling(s, legs)
	case FigureRepeatabilityCV:
		return res.resolveRepeatability(s, legs)
	case FigureContamination:
		return res.resolveContamination(s, legs)
	case FigureJPerToken, FigureTokensPerJ:
		return res.resolveEnergy(s, legs)
	}
	return Value{}, fmt.Errorf("figure %q: %w", s.Figure, ErrUnresolvable)
}

// resolveCell is a cell's mean (FigureCell) or its CV.
func (res *Results) resolveCell(s Selector, legs []LegPlan) (Value, error) {
	r, err := res.cell(s, *s.Depth, legsOf(legs, s.Model, *s.Depth, false))
	if err != nil {
		return Value{}, err
	}
	if s.Figure == FigureCV {
		if r.Result.AvgTs == 0 {
			return Value{}, fmt.Errorf("CV of %s: mean is 0: %w", r.Ref, ErrUnresolvable)
		}
		return Value{X: r.Result.StddevTs / r.Result.AvgTs, Sources: []string{r.Ref}}, nil
	}
	return Value{X: r.Result.AvgTs, Detail: fmt.Sprintf("%.2f ± %.2f t/s", r.Result.AvgTs, r.Result.StddevTs), Sources: []string{r.Ref}}, nil
}

// cellRow is the result row of a cell selector (nil when it has none).
func (res *Results) cellRow(s Selector) *ResultRow {
	legs, err := Expand(res.Plan, "")
	if err != nil || s.Depth == nil {
		return nil
	}
	r, err := res.cell(s, *s.Depth, legsOf(legs, s.Model, *s.Depth, false))
	if err != nil {
		return nil
	}
	return r
}

// cellSamples is a cell's repetitions (t/s, llama-bench's samples_ts; nil when it has none).
func (res *Results) cellSamples(s Selector) []float64 {
	r := res.cellRow(s)
	if r == nil {
		return nil
	}
	return r.Result.SamplesTs
}

// cellProcesses is a cell's repetitions by process (an adaptive cell's chunks; else one).
func (res *Results) cellProcesses(s Selector) [][]float64 {
	r := res.cellRow(s)
	if r == nil {
		return nil
	}
	procs, err := analysis.Processes(r.Result.SamplesTs, r.Chunks)
	if err != nil {
		return nil
	}
	return procs
}

// resolveDepthSeries is where the depth series crosses the line (FigureCrossing) or its slope up to the depth (FigureSlope).
func (res *Results) resolveDepthSeries(s Selector, legs []LegPlan) (Value, error) {
	var upTo *int
	if s.Figure == FigureSlope {
		upTo = s.Depth
	}
	pts, srcs, err := res.depthSeries(s, legs, upTo)
	if err != nil {
		return Value{}, err
	}
	if s.Figure == FigureCrossing {
		c, err := analysis.CrossingDepth(pts, s.Line)
		if err != nil {
			return Value{}, fmt.Errorf("%v: %w", err, ErrUnresolvable)
		}
		v := Value{Detail: c.String(), Sources: srcs}
		switch c.Kind {
		case analysis.Crossed:
			v.X = c.Depth
		case analysis.BelowAtStart:
			v.X = c.From.X
		default:
			v.X = math.Inf(1)
		}
		return v, nil
	}
	slopes, err := analysis.DepthSlopes(pts)
	if err != nil {
		return Value{}, fmt.Errorf("%v: %w", err, ErrUnresolvable)
	}
	for _, sp := range slopes {
		if sp.Depth == float64(*s.Depth) {
			return Value{X: sp.Slope, Detail: fmt.Sprintf("%+.1f%% from d%g to d%d", sp.Slope*100, pts[0].X, *s.Depth), Sources: srcs}, nil
		}
	}
	return Value{}, fmt.Errorf("depth %d is the reference depth; a slope needs a later depth: %w", *s.Depth, ErrUnresolvable)
}

// resolveDeviceRatio is a cell on one device over the same cell on the base device.
func (res *Results) resolveDeviceRatio(s Selector, legs []LegPlan) (Value, error) {
	var vals [2]float64
	var srcs []string
	for i, dev := range []string{s.Device, s.BaseDevice} {
		sel := s
		sel.Figure = FigureCell
		c := ConfigSel{}
		if s.Config != nil {
			c = *s.Config
		}
		c.Devices = dev
		sel.Config = &c
		r, err := res.cell(sel, *s.Depth, legsOf(legs, s.Model, *s.Depth, false))
		if err != nil {
			return Value{}, err
		}
		vals[i] = r.Result.AvgTs
		srcs = append(srcs, r.Ref)
	}
	if vals[1] == 0 {
		return Value{}, fmt.Errorf("%s on %s: mean is 0: %w", s.Test, s.BaseDevice, ErrUnresolvable)
	}
	return Value{X: vals[0] / vals[1], Detail: fmt.Sprintf("%.2f t/s on %s / %.2f t/s on %s", vals[0], s.Device, vals[1], s.BaseDevice), Sources: srcs}, nil
}

// resolveCeiling is the bandwidth ceiling (FigureCeiling) or a cell's share of it (FigureEfficiency).
func (res *Results) resolveCeiling(s Selector, legs []LegPlan) (Value, error) {
	c, detail, err := res.ceiling(s)
	if err != nil {
		return Value{}, err
	}
	if s.Figure == FigureCeiling {
		return Value{X: c, Detail: detail, Sources: []string{"model " + s.Model + " tensor table"}}, nil
	}
	tg := s
	tg.Figure = FigureCell
	if tg.Test == "" {
		tg.Test = "tg"
	}
	r, err := res.cell(tg, *s.Depth, legsOf(legs, s.Model, *s.Depth, false))
	if err != nil {
		return Value{}, err
	}
	e, err := analysis.Efficiency(r.Result.AvgTs, c)
	if err != nil {
		return Value{}, fmt.Errorf("%v: %w", err, ErrUnresolvable)
	}
	return Value{X: e, Detail: fmt.Sprintf("%.2f t/s of %.1f t/s (%s)", r.Result.AvgTs, c, detail), Sources: []string{r.Ref}}, nil
}

// resolveRepeatability is the CV of the repeatability leg's runs.
func (res *Results) resolveRepeatability(s Selector, legs []LegPlan) (Value, error) {
	rp := res.Plan.Repeatability
	var ids []string
	var base *LegPlan
	for i, l := range legs {
		if l.ID == rp.Leg || l.Of == rp.Leg {
			ids = append(ids, l.ID)
			if l.ID == rp.Leg {
				base = &legs[i]
			}
		}
	}
	var means []float64
	var srcs []string
	for _, id := range ids {
		sel := s
		sel.Model = base.Models[0]
		r, err := res.cell(sel, base.Depths[0], []string{id})
		if err != nil {
			return Value{}, err
		}
		means = append(means, r.Result.AvgTs)
		srcs = append(srcs, r.Ref)
	}
	sum := analysis.Summarize(means)
	return Value{X: sum.CV, Detail: fmt.Sprintf("%d runs of %s: mean %.2f, sd %.2f", len(means), rp.Leg, sum.Mean, sum.SD), Sources: srcs}, nil
}

// resolveContamination is the contaminated leg against the quiet legs around it.
func (res *Results) resolveContamination(s Selector, legs []LegPlan) (Value, error) {
	var vals []float64
	var srcs []string
	for _, id := range s.Legs {
		var l *LegPlan
		for i := range legs {
			if legs[i].ID == id {
				l = &legs[i]
			}
		}
		sel := s
		sel.Model = l.Models[0]
		r, err := res.cell(sel, l.Depths[0], []string{id})
		if err != nil {
			return Value{}, err
		}
		vals = append(vals, r.Result.AvgTs)
		srcs = append(srcs, r.Ref)
	}
	d, err := analysis.ContaminationDelta(vals[0], vals[1], vals[2])
	if err != nil {
		return Value{}, fmt.Errorf("%v: %w", err, ErrUnresolvable)
	}
	return Value{X: d, Detail: fmt.Sprintf("%.2f vs quiet %.2f and %.2f", vals[1], vals[0], vals[2]), Sources: srcs}, nil
}

// depthSeries is the selector's test at every measured depth of the plan. A leg still waiting
// for its result makes the series PENDING even when another depth has already failed for good:
// a figure is decided only from legs that are final. With upTo (a slope to that depth) only the
// first depth and upTo are needed: the depths between are included when they have a result,
// and deeper ones are left out, so a failed middle depth cannot decide the slope.
func (res *Results) depthSeries(s Selector, legs []LegPlan, upTo *int) ([]analysis.Point, []string, error) {
	depths := append([]int(nil), res.Plan.Axes.Depths...)
	sort.Ints(depths)
	var pts []analysis.Point
	var srcs []string
	var unresolvable error
	for i, d := range depths {
		if upTo != nil && d > *upTo {
			break
		}
		r, err := res.cell(s, d, legsOf(legs, s.Model, d, false))
		if err != nil {
			if errors.Is(err, ErrPending) {
				if upTo != nil && i > 0 && d != *upTo {
					continue // a depth between the two the slope reads
				}
				return nil, nil, err
			}
			if upTo != nil && i > 0 && d != *upTo {
				continue
			}
			if unresolvable == nil {
				unresolvable = err
			}
			continue
		}
		pts = append(pts, analysis.Point{X: float64(d), Y: r.Result.AvgTs})
		srcs = append(srcs, r.Ref)
	}
	if unresolvable != nil {
		return nil, nil, unresolvable
	}
	return pts, srcs, nil
}

// ceiling is bandwidth / active bytes per token in the selector's convention.
func (res *Results) ceiling(s Selector) (float64, string, error) {
	info, ok := res.Models[s.Model]
	if !ok || info.Header == nil {
		return 0, "", fmt.Errorf("model %q's tensor table was not read: %w", s.Model, ErrUnresolvable)
	}
	if !(res.BandwidthGBs > 0) {
		return 0, "", fmt.Errorf("no memory bandwidth (enter gbs in the plan, or let the probe measure it): %w", ErrPending)
	}
	var bytes float64
	switch s.Conv {
	case "house":
		bytes = info.Header.HouseActiveBytesPerToken()
	default:
		bytes = float64(info.Header.ActiveBytesPerToken())
	}
	c, err := analysis.CeilingTPS(res.BandwidthGBs, bytes)
	if err != nil {
		return 0, "", fmt.Errorf("%v: %w", err, ErrUnresolvable)
	}
	return c, fmt.Sprintf("%g GB/s over %.4g bytes/token, %s convention", res.BandwidthGBs, bytes, s.Conv), nil
}

// Evaluate answers a prediction from the results: PENDING while its legs are running,
// UNRESOLVABLE (with the problem) when they ran and the figure cannot be computed.
func (res *Results) Evaluate(p Prediction) Verdict {
	v, err := res.Resolve(p.About)
	if err != nil {
		return problemVerdict(p, err)
	}
	var vd Verdict
	switch p.Kind {
	case KindBand:
		vd = EvaluateBand(p, v.X)
	case KindFork:
		vd = EvaluateFork(p, v.X)
	case KindQuestion:
		vd = EvaluateQuestion(p, v.X)
	case KindComparison:
		w, err := res.Resolve(*p.Than)
		if err != nil {
			return problemVerdict(p, err)
		}
		switch p.Stats {
		case StatsBenchmath:
			a, b := res.cellSamples(p.About), res.cellSamples(*p.Than)
			if len(a) == 0 || len(b) == 0 {
				return problemVerdict(p, fmt.Errorf("a cell has no repetitions recorded: %w", ErrUnresolvable))
			}
			vd = EvaluateComparisonSamples(p, a, b)
		case StatsProcess:
			a, b := res.cellProcesses(p.About), res.cellProcesses(*p.Than)
			if len(a) == 0 || len(b) == 0 {
				return problemVerdict(p, fmt.Errorf("a cell has no repetitions recorded: %w", ErrUnresolvable))
			}
			vd = EvaluateComparisonProcesses(p, a, b, res.Plan.Adaptive != nil)
		default:
			vd = EvaluateComparison(p, v.X, w.X)
		}
		vd.Sources = append(vd.Sources, w.Sources...)
	}
	vd.Sources = append(append([]string(nil), v.Sources...), vd.Sources...)
	if v.Detail != "" {
		vd.Detail += " — " + v.Detail
	}
	// JSON carries no infinity: a crossing beyond the measured range has no number.
	if vd.Value != nil && math.IsInf(*vd.Value, 0) {
		vd.Value = nil
	}
	return vd
}

func problemVerdict(p Prediction, err error) Verdict {
	out := Unresolvable
	if errors.Is(err, ErrPending) {
		out = Pending
	}
	return Verdict{Prediction: p.ID, Outcome: out, Expected: p.Expectation(), Problem: err.Error(), Sources: []string{}}
}
