package study

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"sparkbench/runner/benchfmt"
)

// Report is everything `study show` prints: legs, results by depth, derived figures, the
// prediction scoreboard, amendments, deviations and findings. Every number names the stored
// rows it came from (RowRef), so it can be checked against the notebook.
type Report struct {
	Study   ReportStudy  `json:"study"`
	Legs    []ReportLeg  `json:"legs"`
	Results []ReportCell `json:"results"`
	// Processes states the results' model in one line (UnitLine): "95% intervals over 6
	// processes of 3 repetitions; between-process spread 1.3%, within 0.2% (median over 4
	// cells)".
	Processes    string            `json:"processes,omitempty"`
	Figures      []ReportFigure    `json:"figures"`
	Scoreboard   []ReportScore     `json:"scoreboard"`
	Amendments   []StoredAmendment `json:"amendments"`
	Deviations   []ReportDeviation `json:"deviations"`
	Findings     []ReportFinding   `json:"findings"`
	BandwidthGBs *float64          `json:"bandwidth_gbs"`
	Bandwidth    string            `json:"bandwidth"` // "entered", "measured", "none"
	// KVQuality: the KL divergence of each non-f16 KV cache type the plan measured (none: the
	// plan has only f16, or the check has not run).
	KVQuality []KVQuality `json:"kv_quality,omitempty"`
	// Adaptive: a plan with adaptive repetitions, where each leg's chunks stand against its
	// stopping rule (docs/adaptive.md).
	Adaptive *AdaptiveReport `json:"adaptive,omitempty"`
	// Energy: the sampled legs' energy and the result cells' Joules per token, when the study
	// has telemetry samples (docs/telemetry.md).
	Energy *ReportEnergy `json:"energy,omitempty"`
	// CountedFlags: a plan whose CV gate counts (gates.on_cv "count"), each result cell above
	// its gate, counted with its flag (CountedFlags).
	CountedFlags []string `json:"counted_flags,omitempty"`
}

// ReportStudy heads the report.
type ReportStudy struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	Status       string    `json:"status"`
	PlanSHA256   string    `json:"plan_sha256"`
	RegisteredAt time.Time `json:"registered_at"`
	PlanDir      string    `json:"plan_dir"`
	LegsDone     int       `json:"legs_done"`
	LegsTotal    int       `json:"legs_total"`
	Halted       string    `json:"halted,omitempty"` // the last halt's reason while halted
	// Incomplete lists, while the study is incomplete, each plan leg without results: its last
	// class and reason and whether the next run retries it.
	Incomplete []string `json:"incomplete,omitempty"`
}

// ReportLeg is one recorded leg, or a plan leg that has not run (ID 0, State "pending").
type ReportLeg struct {
	ID         int64         `json:"id,omitempty"`
	Label      string        `json:"label"`
	PlanLeg    string        `json:"plan_leg"`
	Role       string        `json:"role"`
	Attempt    int           `json:"attempt,omitempty"`
	State      string        `json:"state"`
	Class      string        `json:"class,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	Rows       int           `json:"rows"`
	Results    int           `json:"results"`
	Flagged    int           `json:"flagged"`
	Discarded  int           `json:"discarded"`
	Unmarked   int           `json:"unmarked"`
	Counts     bool          `json:"counts"` // its result rows are the study's results for its plan leg
	Conditions []string      `json:"conditions"`
	Started    *time.Time    `json:"started,omitempty"`
	Duration   time.Duration `json:"duration,omitempty"`
	// Launch: a leg run under the plan's launch wrapper (the wrapper as run, the affinity in
	// force for llama-bench); absent otherwise.
	Launch *ReportLaunch `json:"launch,omitempty"`
	// RPCSplit: a leg of a plan with rpc_servers, its layers per RPC device and host; absent
	// otherwise.
	RPCSplit *ReportRPCSplit `json:"rpc_split,omitempty"`
}

// ReportCell is one result row: a test at a depth.
type ReportCell struct {
	Model  string  `json:"model"`
	Leg    string  `json:"leg"`
	Test   string  `json:"test"` // pp64, tg32
	Depth  int64   `json:"depth"`
	Config string  `json:"config,omitempty"`
	Mean   float64 `json:"mean_ts"`
	SD     float64 `json:"sd_ts"`
	CV     float64 `json:"cv"`
	Reps   int     `json:"reps"`
	Source string  `json:"source"`
	// Unit is the cell at the process level (docs/adaptive.md, "Processes and repetitions"):
	// n processes of m repetitions, the mean of the process means and its 95% interval over
	// them (none from one process), the spreads between and within processes.
	Unit *CellUnit `json:"processes,omitempty"`
}

// ReportFigure is a derived figure with its selector and evidence.
type ReportFigure struct {
	Figure   Figure   `json:"figure"`
	Label    string   `json:"label"`
	Selector Selector `json:"selector"`
	Value    *float64 `json:"value"` // null: beyond the measured range (a crossing) or not computable
	Detail   string   `json:"detail,omitempty"`
	Sources  []string `json:"sources"`
	Problem  string   `json:"problem,omitempty"`
}

// ReportScore is one line of the prediction scoreboard.
type ReportScore struct {
	Prediction string         `json:"prediction"`
	Text       string         `json:"text"`
	Kind       PredictionKind `json:"kind"`
	About      string         `json:"about"`
	Expected   string         `json:"expected"`
	Verdict    Verdict        `json:"verdict"`
	Word       string         `json:"word"` // HIT, MISS -3.2%, arm "steep", ANSWERED 192, PENDING …
	// Recorded is the computed verdict journaled for it (absent while PENDING).
	Recorded *StoredVerdict `json:"recorded,omitempty"`
	Human    *StoredVerdict `json:"human,omitempty"`
	Amended  bool           `json:"amended"`
	// Deviations are changes recorded after legs ran, each with the verdict the changed
	// prediction would get: shown, never the verdict of record.
	Deviations []DeviationVerdict `json:"deviations"`
	// Processes reads a band or fork verdict about a cell at the process level: whether it
	// holds across the cell's interval over processes (absent for other predictions).
	Processes *ScoreProcesses `json:"processes,omitempty"`
}

// DeviationVerdict is a deviated prediction's would-be verdict.
type DeviationVerdict struct {
	Change  string  `json:"change"`
	Reason  string  `json:"reason"`
	Verdict Verdict `json:"verdict"`
	Word    string  `json:"word"`
}

// ReportDeviation is a recorded deviation.
type ReportDeviation struct {
	StoredDeviation
	Prediction string `json:"prediction,omitempty"`
}

// ReportFinding is a finding with its evidence named.
type ReportFinding struct {
	Label       string   `json:"label"`
	Text        string   `json:"text"`
	Legs        []string `json:"legs"`
	LegIDs      []int64  `json:"leg_ids"`
	Predictions []string `json:"predictions"`
}

// Word is a verdict in one short phrase.
func (v Verdict) Word() string {
	switch {
	case v.Outcome == Hit && v.Arm != "":
		return fmt.Sprintf("arm %q", v.Arm)
	case (v.Outcome == Miss || v.Outcome == MissEdge) && v.Distance != nil:
		return fmt.Sprintf("%s %+.1f%%", v.Outcome, *v.Distance*100)
	case v.Outcome == Answered && v.Value != nil:
		return fmt.Sprintf("ANSWERED %.4g", *v.Value)
	case v.Outcome == Answered:
		return "ANSWERED (beyond the measured range)"
	}
	return string(v.Outcome)
}

// Show assembles a study's report from the notebook. Model files are read (not hashed) for
// the ceilings; a missing one leaves those figures unresolvable.
func Show(ctx context.Context, rec RecordReader, studyID int64) (*Report, error) {
	l, err := LoadStudy(ctx, rec, studyID)
	if err != nil {
		return nil, err
	}
	_, models := Validate(l.Plan, ValidateOptions{PlanDir: l.St.PlanDir})
	bw := l.Bandwidth()
	res := BuildResults(l, models, bw)
	rep := &Report{Study: ReportStudy{ID: l.St.ID, Name: l.St.Name, Status: l.St.Status, PlanSHA256: l.St.PlanSHA256,
		RegisteredAt: l.St.RegisteredAt, PlanDir: l.St.PlanDir, LegsTotal: len(l.Legs), LegsDone: len(res.Finished)},
		Amendments: l.St.Amendments, Bandwidth: "none"}
	if rep.Amendments == nil {
		rep.Amendments = []StoredAmendment{}
	}
	if bw > 0 {
		rep.BandwidthGBs = fptr(bw)
		rep.Bandwidth = "entered"
		if b := l.Plan.Bandwidth; b != nil && b.Measure {
			rep.Bandwidth = "measured"
		}
	}
	if l.St.Status == StatusHalted {
		for _, n := range l.St.Notes {
			if n.Kind == NoteHalted {
				var h struct {
					Reason string `json:"reason"`
				}
				_ = json.Unmarshal(n.Payload, &h)
				rep.Study.Halted = h.Reason
			}
		}
	}
	if l.St.Status == StatusIncomplete {
		for _, st := range LegStatuses(l.Plan, l.Legs, l.Stored) {
			if st.Results {
				continue
			}
			line := fmt.Sprintf("%s: %s", st.Leg, st.Last.Class)
			if st.Last.Reason != "" {
				line += " (" + st.Last.Reason + ")"
			}
			if st.Final {
				line += fmt.Sprintf(", %d of %d attempts failed: final", st.Failed, st.MaxAttempts)
			} else {
				line += fmt.Sprintf(", %d more attempt(s) allowed: the next run retries it", st.RetriesLeft())
			}
			rep.Study.Incomplete = append(rep.Study.Incomplete, line)
		}
	}
	rep.Legs = reportLegs(l)
	reportLaunches(l, rep.Legs)
	reportRPCSplits(l, rep.Legs)
	if l.Plan.Adaptive != nil {
		rep.Adaptive = adaptiveReport(l, rep.Legs)
	}
	rep.Results = reportCells(l.Plan, res)
	if len(rep.Results) > 0 {
		rep.Processes = UnitLine(rep.Results)
	}
	rep.CountedFlags = CountedFlags(l.Plan, rep.Results)
	rep.Energy = energyReport(l, rep.Legs, res)
	rep.Figures = reportFigures(l, res)
	rep.Scoreboard, rep.Deviations = reportScores(l, res, rep.Results)
	rep.Findings = reportFindings(l)
	return rep, nil
}

func reportLegs(l *Loaded) []ReportLeg {
	final := finalLegs(l.Stored)
	out := []ReportLeg{}
	seen := map[string]bool{}
	for _, s := range l.Stored {
		started := s.StartedAt
		rl := ReportLeg{ID: s.ID, Label: s.Label, PlanLeg: s.PlanLeg, Role: s.Role, Attempt: s.Attempt, State: s.State,
			Class: s.Class, Reason: s.Reason, Rows: s.Rows, Results: s.Results, Flagged: s.Flagged, Discarded: s.Discarded,
			Unmarked: s.Unmarked, Conditions: s.Conditions, Started: &started}
		if !s.EndedAt.IsZero() {
			rl.Duration = s.EndedAt.Sub(s.StartedAt)
		}
		if f, ok := final[s.PlanLeg]; ok && f.ID == s.ID && s.Role == RoleLeg {
			rl.Counts = true
		}
		if rl.Conditions == nil {
			rl.Conditions = []string{}
		}
		if s.Role == RoleLeg {
			seen[s.PlanLeg] = true
		}
		out = append(out, rl)
	}
	for _, lp := range l.Legs {
		if !seen[lp.ID] {
			c := lp.Conditions
			if c == nil {
				c = []string{}
			}
			out = append(out, ReportLeg{Label: lp.ID, PlanLeg: lp.ID, Role: RoleLeg, State: "pending", Conditions: c})
		}
	}
	return out
}

func configLabel(r *benchfmt.Result) string {
	fa := map[int64]string{-1: "auto", 0: "off", 1: "on"}[r.FlashAttn]
	return fmt.Sprintf("ub%d b%d fa-%s kv-%s/%s t%d ngl%d", r.NUbatch, r.NBatch, fa, r.TypeK, r.TypeV, r.NThreads, r.NGPULayers) +
		deviceLabel(r)
}

// deviceLabel is the device part of a row's configuration label: only what differs from
// llama-bench's defaults (so rows of plans without device axes, run on the CPU, keep the label
// they always had), then where the row ran when that was not the CPU.
func deviceLabel(r *benchfmt.Result) string {
	var b strings.Builder
	k := r.Known
	if k.Has(benchfmt.FDevices) && r.Devices != "" && r.Devices != "auto" {
		b.WriteString(" dev-" + r.Devices)
	}
	if k.Has(benchfmt.FSplitMode) && r.SplitMode != "" && r.SplitMode != "layer" {
		b.WriteString(" sm-" + r.SplitMode)
	}
	if k.Has(benchfmt.FTensorSplit) && strings.Trim(r.TensorSplit, "0./") != "" {
		b.WriteString(" ts-" + r.TensorSplit)
	}
	if k.Has(benchfmt.FNCPUMoE) && r.NCPUMoE != 0 {
		fmt.Fprintf(&b, " ncmoe%d", r.NCPUMoE)
	}
	if k.Has(benchfmt.FTensorBuftOverrides) && r.TensorBuftOverrides != "" && r.TensorBuftOverrides != "none" {
		b.WriteString(" ot-" + r.TensorBuftOverrides)
	}
	if k.Has(benchfmt.FNoKVOffload) && r.NoKVOffload {
		b.WriteString(" nkvo")
	}
	if k.Has(benchfmt.FLoadMode) && r.LoadMode != "" && r.LoadMode != "auto" {
		b.WriteString(" lm-" + r.LoadMode)
	}
	if on := r.RanOn(); on != "" && on != "CPU" && k.Has(benchfmt.FGPUInfo) && k.Has(benchfmt.FNGPULayers) {
		b.WriteString(" on-" + on)
	}
	return b.String()
}

func testOf(r *benchfmt.Result) string { return benchfmt.TestName(r.NPrompt, r.NGen, 0) }

// CountedFlags lists the result cells a counting CV gate flagged (gates.on_cv "count"): each
// counted as a result, with its CV over its repetitions and the gate it is above, re-derived
// from the rows as the runner judged them. Nil for a plan whose gate halts or that is
// adaptive (no CV gate on its chunks).
func CountedFlags(p *Plan, cells []ReportCell) []string {
	if p.Adaptive != nil || !p.Gates.CountsFlagged() {
		return nil
	}
	var out []string
	for _, c := range cells {
		if lim := p.Gates.Limit(c.Test, c.Depth); c.Reps >= 2 && c.CV > lim {
			out = append(out, fmt.Sprintf("%s %s at depth %d (%s): CV %.1f%% above the %.1f%% gate", c.Model, c.Test, c.Depth, c.Source, 100*c.CV, 100*lim))
		}
	}
	return out
}

func reportCells(p *Plan, res *Results) []ReportCell {
	order := map[string]int{}
	for i, m := range p.Models {
		order[m.ID] = i
	}
	out := []ReportCell{}
	for _, row := range res.Rows {
		r := &row.Result
		c := ReportCell{Model: row.Model, Leg: row.Leg, Test: testOf(r), Depth: r.NDepth, Config: configLabel(r),
			Mean: r.AvgTs, SD: r.StddevTs, Reps: len(r.SamplesTs), Source: row.Ref, Unit: cellUnit(p, row)}
		if r.AvgTs != 0 {
			c.CV = r.StddevTs / r.AvgTs
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Model != b.Model {
			return order[a.Model] < order[b.Model]
		}
		if a.Test != b.Test {
			return a.Test < b.Test
		}
		if a.Config != b.Config {
			return a.Config < b.Config
		}
		if a.Depth != b.Depth {
			return a.Depth < b.Depth
		}
		return a.Leg < b.Leg
	})
	return out
}

// reportFigures derives, per model: the depth slope of every test at every depth after the
// first, the crossings the predictions ask about, both ceiling conventions and the tg
// efficiency at every depth (when a bandwidth is known), and the repeatability CV.
func reportFigures(l *Loaded, res *Results) []ReportFigure {
	out := []ReportFigure{}
	add := func(s Selector) {
		v, err := res.Resolve(s)
		f := ReportFigure{Figure: s.Figure, Label: s.String(), Selector: s, Sources: v.Sources, Detail: v.Detail}
		if f.Sources == nil {
			f.Sources = []string{}
		}
		if err != nil {
			f.Problem = err.Error()
		} else if !math.IsInf(v.X, 0) && !math.IsNaN(v.X) {
			f.Value = fptr(v.X)
		}
		out = append(out, f)
	}
	depths := slices.Clone(l.Plan.Axes.Depths)
	sort.Ints(depths)
	tests := map[string][]string{} // model -> exact test names measured
	for _, r := range res.Rows {
		t := testOf(&r.Result)
		if !slices.Contains(tests[r.Model], t) {
			tests[r.Model] = append(tests[r.Model], t)
		}
	}
	// a plan that sweeps devices gets each device's slopes, and every device's ratio to the
	// first one listed (e.g. Vulkan0 / none, RPC0 / none); one without keeps its figures
	devs := l.Plan.Axes.Devices
	var perDevice []*ConfigSel
	if len(devs) > 1 {
		for _, d := range devs {
			perDevice = append(perDevice, &ConfigSel{Devices: d})
		}
	} else {
		perDevice = []*ConfigSel{nil}
	}
	for _, m := range l.Plan.Models {
		ts := tests[m.ID]
		sort.Strings(ts)
		for _, t := range ts {
			for _, c := range perDevice {
				for _, d := range depths[min(1, len(depths)):] {
					d := d
					add(Selector{Figure: FigureSlope, Model: m.ID, Test: t, Depth: &d, Config: c})
				}
			}
			for _, dev := range devs[min(1, len(devs)):] {
				for _, d := range depths {
					d := d
					add(Selector{Figure: FigureDeviceRatio, Model: m.ID, Test: t, Depth: &d, Device: dev, BaseDevice: devs[0]})
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range l.Preds {
		for _, s := range []*Selector{&p.About, p.Than} {
			if s != nil && s.Figure == FigureCrossing && !seen[s.String()] {
				seen[s.String()] = true
				add(*s)
			}
		}
	}
	if res.BandwidthGBs > 0 {
		for _, m := range l.Plan.Models {
			for _, conv := range []string{"house", "tensor_exact"} {
				add(Selector{Figure: FigureCeiling, Model: m.ID, Conv: conv})
			}
			for _, t := range tests[m.ID] {
				if !strings.HasPrefix(t, "tg") {
					continue
				}
				for _, d := range depths {
					d := d
					add(Selector{Figure: FigureEfficiency, Model: m.ID, Test: t, Conv: "tensor_exact", Depth: &d})
				}
			}
		}
	}
	if l.Plan.Repeatability != nil {
		var base *LegPlan
		for i := range l.Legs {
			if l.Legs[i].ID == l.Plan.Repeatability.Leg {
				base = &l.Legs[i]
			}
		}
		if base != nil && len(base.Models) == 1 {
			ts := tests[base.Models[0]]
			sort.Strings(ts)
			for _, t := range ts {
				add(Selector{Figure: FigureRepeatabilityCV, Test: t})
			}
		}
	}
	return out
}

func reportScores(l *Loaded, res *Results, cells []ReportCell) ([]ReportScore, []ReportDeviation) {
	amended := map[string]bool{}
	for _, a := range l.St.Amendments {
		if k, ok := strings.CutPrefix(a.Target, "prediction:"); ok {
			amended[k] = true
		}
	}
	devs := []ReportDeviation{}
	byPred := map[string][]DeviationVerdict{}
	for _, d := range l.St.Deviations {
		rd := ReportDeviation{StoredDeviation: d}
		var det struct {
			Kind   string          `json:"kind"`
			Reason string          `json:"reason"`
			Change AmendmentChange `json:"change"`
		}
		if json.Unmarshal(d.Detail, &det) == nil && det.Kind == "prediction_change" {
			rd.Prediction = det.Change.Prediction
			v := res.Evaluate(det.Change.After)
			byPred[rd.Prediction] = append(byPred[rd.Prediction], DeviationVerdict{
				Change: det.Change.Set.describe(det.Change.Before), Reason: det.Reason, Verdict: v, Word: "DEVIATION: " + v.Word()})
		}
		devs = append(devs, rd)
	}
	out := []ReportScore{}
	for _, p := range l.Preds {
		v := res.Evaluate(p)
		if v.Sources == nil {
			v.Sources = []string{}
		}
		sc := ReportScore{Prediction: p.ID, Text: p.Text, Kind: p.Kind, About: p.About.String(), Expected: p.Expectation(),
			Verdict: v, Word: v.Word(), Amended: amended[p.ID], Deviations: byPred[p.ID], Processes: scoreProcesses(p, v, cells)}
		if sc.Deviations == nil {
			sc.Deviations = []DeviationVerdict{}
		}
		if sv, ok := l.St.Verdicts[p.ID]; ok {
			sc.Recorded, sc.Human = sv.Computed, sv.Human
		}
		out = append(out, sc)
	}
	return out, devs
}

func reportFindings(l *Loaded) []ReportFinding {
	labels := map[int64]string{}
	for _, s := range l.Stored {
		labels[s.ID] = s.Label
	}
	out := []ReportFinding{}
	for _, f := range l.St.Findings {
		rf := ReportFinding{Label: f.Label, Text: f.Text, Legs: []string{}, LegIDs: f.LegIDs, Predictions: f.Predictions}
		if rf.LegIDs == nil {
			rf.LegIDs = []int64{}
		}
		if rf.Predictions == nil {
			rf.Predictions = []string{}
		}
		for _, id := range f.LegIDs {
			rf.Legs = append(rf.Legs, labels[id])
		}
		out = append(out, rf)
	}
	return out
}
