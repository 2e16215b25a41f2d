package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"sparkbench/app/analysis"
)

// DefaultAlpha is the significance level of a study comparison: a delta whose p-value is at
// or above it prints as "~" (no significant difference), as benchstat does.
const DefaultAlpha = 0.05

// The statistics a comparison uses (CompareOptions.Stats; docs/adaptive.md says which when).
const (
	// StatsAuto is StatsProcess (comparisons made before process-level statistics, which a
	// receipt marks as such, read it as benchmath when either study has adaptive repetitions,
	// else Welch).
	StatsAuto = "auto"
	// StatsProcess compares the cells' llama-bench processes: the process is the unit of
	// replication, its repetitions sub-samples (analysis.CompareProcesses: Welch's t-test on
	// the process means, n processes of m repetitions a side; a side of one process gives a
	// point estimate and no interval).
	StatsProcess = "process"
	// StatsBenchmath compares medians with golang.org/x/perf/benchmath (Mann–Whitney U, the
	// Hodges–Lehmann interval of the difference), as benchstat does.
	StatsBenchmath = "benchmath"
	// StatsWelch compares means with Welch's t-test and its interval of the difference.
	StatsWelch = "welch"
)

// CompareOptions are a comparison's statistics and level.
type CompareOptions struct {
	Alpha float64 // <= 0: DefaultAlpha
	Stats string  // StatsAuto ("" too), StatsBenchmath or StatsWelch
	// AA adds the A/A control of both studies (AAControl).
	AA bool
	// OldAuto reads StatsAuto as comparisons did before process-level statistics (benchmath
	// when a study has adaptive repetitions, else Welch): a receipt made then is re-derived
	// under the rules it was made with.
	OldAuto bool
	// OldAllProcesses compares every process of an adaptive side, as comparisons did before
	// CompareStopped (a receipt made then is re-derived under the rules it was made with).
	OldAllProcesses bool
}

// ErrNotComparable is wrapped by every refusal of CompareStudies: the studies measure
// different model files, share no cell, or a shared cell has too few repetitions for an
// interval and a p-value.
var ErrNotComparable = errors.New("the studies cannot be compared")

// StudyComparison compares a study's results with a baseline study's, cell by cell, in the
// benchstat manner. A cell is the same model file (by SHA-256, whatever its ID in each plan),
// the same test (pp64, tg32), the same depth and the same configuration (ubatch, batch,
// flash-attn, KV types, threads, GPU layers). Only rows that count as results are read, and
// only from the plan legs proper (repeatability copies are left out).
type StudyComparison struct {
	Baseline ComparedStudy `json:"baseline"`
	New      ComparedStudy `json:"new"`
	Alpha    float64       `json:"alpha"`
	// Stats is "process" when the cells compare their processes' means (each cell's Processes
	// then hold the comparison), "benchmath" when they compare medians with the Mann–Whitney U
	// test (each cell's Medians); absent for Welch's t-test on the repetitions, so a Welch
	// comparison reads as it always did.
	Stats string `json:"stats,omitempty"`
	// Cells are the cells both studies measured, in the baseline plan's model order, then by
	// test, configuration and depth.
	Cells []CellComparison `json:"cells"`
	// OnlyBaseline and OnlyNew name the cells only one side measured (not compared).
	OnlyBaseline []string `json:"only_baseline"`
	OnlyNew      []string `json:"only_new"`
	// Notes name models that are not compared: a model ID whose file differs between the
	// plans, a file only one plan measures.
	Notes []string `json:"notes"`
	// AA is the A/A control of both studies, when asked for.
	AA *AAControl `json:"aa_control,omitempty"`
}

// ComparedStudy names one side of a comparison.
type ComparedStudy struct {
	ID         int64           `json:"id"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	PlanSHA256 string          `json:"plan_sha256"`
	Models     []ComparedModel `json:"models"`
	// Adaptive: the plan has adaptive repetitions (StatsAuto then means benchmath).
	Adaptive bool `json:"-"`
}

// ComparedModel is a plan model with the SHA-256 its file was verified against.
type ComparedModel struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
}

// CellComparison is one cell measured by both studies: each side's mean with its t-based 95%
// interval over the repetitions (llama-bench's samples_ts), and the comparison: Welch's on the
// means, or benchmath's on the medians (Medians; Delta, DeltaLo, DeltaHi and P are then its
// median delta, Hodges–Lehmann interval and U test p-value).
type CellComparison struct {
	Model       string `json:"model"`     // the baseline plan's model ID
	NewModel    string `json:"new_model"` // the new plan's ID of the same file
	ModelSHA256 string `json:"model_sha256"`
	Test        string `json:"test"`
	Depth       int64  `json:"depth"`
	Config      string `json:"config"`
	// Baseline and New summarise each side's repetitions (t/s): n, mean, sd, 95% interval.
	Baseline analysis.Summary `json:"baseline"`
	New      analysis.Summary `json:"new"`
	// Delta is New.Mean / Baseline.Mean - 1; DeltaLo/DeltaHi its 95% interval.
	Delta   float64 `json:"delta"`
	DeltaLo float64 `json:"delta_lo"`
	DeltaHi float64 `json:"delta_hi"`
	// P is the test's two-sided p-value (null when it cannot be computed).
	P           *float64 `json:"p"`
	Significant bool     `json:"significant"`
	// Word is the benchstat column: "+3.21% (p=0.002 n=5+5)" or "~ (p=0.412 n=5+5)"; with
	// benchmath the difference's interval follows the delta: "+3.21% [+2.10%, +4.30%] (…)".
	Word string `json:"word"`
	// Medians is the benchmath comparison (absent with Welch).
	Medians *analysis.MedianComparison `json:"medians,omitempty"`
	// Processes is the process-level comparison (StatsProcess): Baseline and New then
	// summarise each side's process means (N: processes), and Processes says each side's n
	// processes of m repetitions and the between- and within-process spread.
	Processes *analysis.ProcessComparison `json:"processes,omitempty"`
	// Sources name the stored row each side's repetitions came from.
	BaselineSource string `json:"baseline_source"`
	NewSource      string `json:"new_source"`
}

// Label names a cell for messages: "tg32 @ d128 of tiny [ub512 b2048 …]".
func (c CellComparison) Label() string {
	return cellLabel(c.Model, c.Test, c.Depth, c.Config)
}

func cellLabel(model, test string, depth int64, config string) string {
	return fmt.Sprintf("%s @ d%d of %s [%s]", test, depth, model, config)
}

// cellKey identifies a cell across studies: the model by its file's SHA-256.
type cellKey struct {
	sha, test, config string
	depth             int64
}

type sideCell struct {
	model string
	row   CompareRow
}

// CompareRow is one result row as a comparison reads it: the stored row it is (leg and
// reference), its cell (model ID, test, depth, configuration label, as the row gives them) and
// its repetitions (llama-bench's samples_ts, and an adaptive cell's chunks). A comparison's
// receipt carries these rows and verify re-computes every cell from them.
type CompareRow struct {
	Leg       string    `json:"leg"`
	Ref       string    `json:"ref"`
	Model     string    `json:"model"`
	Test      string    `json:"test"`
	Depth     int64     `json:"depth"`
	Config    string    `json:"config"`
	SamplesTs []float64 `json:"samples_ts"`
	Chunks    []int     `json:"chunks,omitempty"`
}

// CompareSide is one study as a comparison reads it: the study, whether its plan has adaptive
// repetitions, and its result rows from the plan legs proper (repeatability copies left out),
// in the order the study holds them.
type CompareSide struct {
	Study    ComparedStudy `json:"study"`
	Adaptive bool          `json:"adaptive"`
	Rows     []CompareRow  `json:"rows"`
}

// LoadCompareSide reads one study's side of a comparison from the notebook.
func LoadCompareSide(ctx context.Context, rec RecordReader, id int64) (CompareSide, error) {
	l, err := LoadStudy(ctx, rec, id)
	if err != nil {
		return CompareSide{}, err
	}
	side := CompareSide{Study: ComparedStudy{ID: l.St.ID, Name: l.St.Name, Status: l.St.Status, PlanSHA256: l.St.PlanSHA256, Adaptive: l.Plan.Adaptive != nil},
		Adaptive: l.Plan.Adaptive != nil, Rows: []CompareRow{}}
	for _, m := range l.Plan.Models {
		side.Study.Models = append(side.Study.Models, ComparedModel{ID: m.ID, SHA256: m.SHA256})
	}
	repeat := map[string]bool{}
	for _, lp := range l.Legs {
		if lp.Repeat != "" {
			repeat[lp.ID] = true
		}
	}
	res := BuildResults(l, nil, 0)
	for _, row := range res.Rows {
		if repeat[row.Leg] {
			continue
		}
		r := &row.Result
		side.Rows = append(side.Rows, CompareRow{Leg: row.Leg, Ref: row.Ref, Model: row.Model, Test: testOf(r), Depth: r.NDepth, Config: configLabel(r),
			SamplesTs: slices.Clone(r.SamplesTs), Chunks: slices.Clone(row.Chunks)})
	}
	return side, nil
}

// comparedSide loads one study's cells.
func comparedSide(ctx context.Context, rec RecordReader, id int64) (ComparedStudy, map[cellKey]sideCell, []cellKey, error) {
	side, err := LoadCompareSide(ctx, rec, id)
	if err != nil {
		return ComparedStudy{}, nil, nil, err
	}
	return sideCells(side)
}

// sideCells are a side's cells by key, in the plan's model order, then by test, configuration
// and depth; a cell measured twice is not comparable.
func sideCells(side CompareSide) (ComparedStudy, map[cellKey]sideCell, []cellKey, error) {
	cs := side.Study
	cs.Adaptive = side.Adaptive
	sha := map[string]string{}
	order := map[string]int{}
	for i, m := range cs.Models {
		sha[m.ID] = m.SHA256
		order[m.ID] = i
	}
	cells := map[cellKey]sideCell{}
	var keys []cellKey
	for _, row := range side.Rows {
		k := cellKey{sha: sha[row.Model], test: row.Test, config: row.Config, depth: row.Depth}
		if prev, dup := cells[k]; dup {
			return cs, nil, nil, fmt.Errorf("study %d measured %s twice (%s and %s): %w", cs.ID,
				cellLabel(row.Model, k.test, k.depth, k.config), prev.row.Ref, row.Ref, ErrNotComparable)
		}
		cells[k] = sideCell{model: row.Model, row: row}
		keys = append(keys, k)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		ma, mb := cells[a].model, cells[b].model
		switch {
		case ma != mb:
			return order[ma] < order[mb]
		case a.test != b.test:
			return a.test < b.test
		case a.config != b.config:
			return a.config < b.config
		}
		return a.depth < b.depth
	})
	return cs, cells, keys, nil
}

// CompareStudies compares study newID against study baselineID with Welch's t-test (alpha <=
// 0: DefaultAlpha); CompareStudiesWith chooses the statistics.
func CompareStudies(ctx context.Context, rec RecordReader, baselineID, newID int64, alpha float64) (*StudyComparison, error) {
	return CompareStudiesWith(ctx, rec, baselineID, newID, CompareOptions{Alpha: alpha, Stats: StatsWelch})
}

// CompareStudiesWith compares study newID against study baselineID. It refuses
// (ErrNotComparable, naming why) when the two plans share no model file (by SHA-256), when the
// shared models have no cell in common, or when a shared cell has fewer than analysis.MinReps
// repetitions on either side; statistics it does not know are an error.
func CompareStudiesWith(ctx context.Context, rec RecordReader, baselineID, newID int64, o CompareOptions) (*StudyComparison, error) {
	if err := CheckStats(o.Stats); err != nil {
		return nil, err
	}
	if baselineID == newID {
		return nil, fmt.Errorf("study %d is both the baseline and the new study; compare it with another study: %w", newID, ErrNotComparable)
	}
	base, err := LoadCompareSide(ctx, rec, baselineID)
	if err != nil {
		return nil, err
	}
	nw, err := LoadCompareSide(ctx, rec, newID)
	if err != nil {
		return nil, err
	}
	return CompareSides(base, nw, o)
}

// CompareSides is CompareStudiesWith on two sides already read: the pure half, which a
// comparison's receipt re-runs on the rows it carries.
func CompareSides(baseSide, newSide CompareSide, o CompareOptions) (*StudyComparison, error) {
	alpha := o.Alpha
	if alpha <= 0 || alpha >= 1 {
		alpha = DefaultAlpha
	}
	if err := CheckStats(o.Stats); err != nil {
		return nil, err
	}
	if baseSide.Study.ID == newSide.Study.ID {
		return nil, fmt.Errorf("study %d is both the baseline and the new study; compare it with another study: %w", newSide.Study.ID, ErrNotComparable)
	}
	base, baseCells, baseKeys, err := sideCells(baseSide)
	if err != nil {
		return nil, err
	}
	nw, newCells, newKeys, err := sideCells(newSide)
	if err != nil {
		return nil, err
	}
	stats := resolveStats(o.Stats, o.OldAuto, base, nw)
	out := &StudyComparison{Baseline: base, New: nw, Alpha: alpha, Cells: []CellComparison{}, OnlyBaseline: []string{}, OnlyNew: []string{},
		Notes: []string{}}
	if stats != StatsWelch {
		out.Stats = stats
	}

	shared := map[string]bool{}
	for _, m := range base.Models {
		for _, n := range nw.Models {
			if m.SHA256 == n.SHA256 {
				shared[m.SHA256] = true
			}
		}
	}
	for _, m := range base.Models {
		for _, n := range nw.Models {
			if m.ID == n.ID && m.SHA256 != n.SHA256 {
				out.Notes = append(out.Notes, fmt.Sprintf("model %s is a different file in each plan (baseline sha256 %s, new %s): its cells are not compared", m.ID, m.SHA256, n.SHA256))
			}
		}
	}
	if len(shared) == 0 {
		return nil, fmt.Errorf("the studies measure different model files: baseline study %d has %s; new study %d has %s; a comparison needs the same file (the same SHA-256) on both sides: %w",
			base.ID, modelList(base.Models), nw.ID, modelList(nw.Models), ErrNotComparable)
	}

	var few []string
	for _, k := range baseKeys {
		b := baseCells[k]
		n, ok := newCells[k]
		if !ok {
			out.OnlyBaseline = append(out.OnlyBaseline, cellLabel(b.model, k.test, k.depth, k.config))
			continue
		}
		bs, ns := b.row.SamplesTs, n.row.SamplesTs
		cc := CellComparison{Model: b.model, NewModel: n.model, ModelSHA256: k.sha, Test: k.test, Depth: k.depth, Config: k.config,
			BaselineSource: b.row.Ref, NewSource: n.row.Ref}
		if len(bs) < analysis.MinReps || len(ns) < analysis.MinReps {
			few = append(few, fmt.Sprintf("%s: baseline %d rep(s) (%s), new %d (%s)", cc.Label(), len(bs), b.row.Ref, len(ns), n.row.Ref))
			continue
		}
		stopped := (baseSide.Adaptive || newSide.Adaptive) && !o.OldAllProcesses
		compareSamples(&cc, bs, ns, b.row.Chunks, n.row.Chunks, stats, alpha, stopped)
		out.Cells = append(out.Cells, cc)
	}
	for _, k := range newKeys {
		if _, ok := baseCells[k]; !ok {
			out.OnlyNew = append(out.OnlyNew, cellLabel(newCells[k].model, k.test, k.depth, k.config))
		}
	}
	if len(few) > 0 {
		return nil, fmt.Errorf("need >= %d reps per cell on both sides for a confidence interval and a p-value; %d cell(s) have fewer: %s: %w",
			analysis.MinReps, len(few), strings.Join(few, "; "), ErrNotComparable)
	}
	if len(out.Cells) == 0 {
		return nil, fmt.Errorf("the studies share model files but no measured cell (same test, depth and configuration): baseline study %d has %d result cell(s), new study %d has %d: %w",
			base.ID, len(baseKeys), nw.ID, len(newKeys), ErrNotComparable)
	}
	if o.AA {
		out.AA = newAAControl(stats, alpha)
		out.AA.add(base.ID, baseCells, baseKeys)
		out.AA.add(nw.ID, newCells, newKeys)
		out.AA.finish()
	}
	return out, nil
}

// CheckStats refuses statistics a comparison does not know.
func CheckStats(stats string) error {
	switch stats {
	case "", StatsAuto, StatsProcess, StatsBenchmath, StatsWelch:
		return nil
	}
	return fmt.Errorf("statistics %q: want %s (the default: %s), %s (the processes' means, the honest default), %s (medians over the repetitions, as benchstat) or %s (means over the repetitions, as if independent)",
		stats, StatsAuto, StatsProcess, StatsProcess, StatsBenchmath, StatsWelch)
}

// resolveStats is the statistics a comparison of these studies uses: StatsAuto is
// StatsProcess; under the old rules (oldAuto) benchmath when one of them has adaptive
// repetitions, else Welch.
func resolveStats(stats string, oldAuto bool, sides ...ComparedStudy) string {
	if stats == StatsBenchmath || stats == StatsWelch || stats == StatsProcess {
		return stats
	}
	if !oldAuto {
		return StatsProcess
	}
	for _, s := range sides {
		if s.Adaptive {
			return StatsBenchmath
		}
	}
	return StatsWelch
}

// compareSamples fills a cell's summaries and comparison from its two samples (t/s; chunks:
// the repetitions of each process, none for one process) by the statistics at alpha; stopped:
// a side's process count was chosen by an adaptive rule, so the process-level comparison
// reads the first processes of each side at equal counts (analysis.CompareStopped).
func compareSamples(cc *CellComparison, bs, ns []float64, bChunks, nChunks []int, stats string, alpha float64, stopped bool) {
	if stats == StatsProcess {
		bp, err := analysis.Processes(bs, bChunks)
		if err != nil {
			bp = [][]float64{bs}
		}
		np, err := analysis.Processes(ns, nChunks)
		if err != nil {
			np = [][]float64{ns}
		}
		c := analysis.CompareProcesses(bp, np, alpha)
		if stopped {
			c = analysis.CompareStopped(bp, np, alpha)
		}
		cc.Baseline, cc.New, cc.Processes = processSummary(c.Base), processSummary(c.New), &c
		cc.Delta, cc.DeltaLo, cc.DeltaHi, cc.Significant, cc.Word = c.Delta, c.DeltaLo, c.DeltaHi, c.Significant, c.String()
		if !math.IsNaN(c.P) {
			cc.P = fptr(c.P)
		}
		return
	}
	if stats != StatsBenchmath {
		c := analysis.Compare(bs, ns, alpha)
		cc.Baseline, cc.New, cc.Delta, cc.DeltaLo, cc.DeltaHi, cc.Significant = c.Base, c.New, c.Delta, c.DeltaLo, c.DeltaHi, c.Significant
		if !math.IsNaN(c.P) {
			cc.P = fptr(c.P)
		}
		cc.Word = c.String()
		return
	}
	m := analysis.CompareMedians(bs, ns, alpha)
	if p := analysis.MinPValueU(len(bs), len(ns)); p >= alpha {
		m.Warnings = append(m.Warnings, fmt.Sprintf("n=%d+%d: the Mann-Whitney test cannot reach p < %g at these counts (its smallest p is %.3f); add repetitions or compare with welch",
			len(bs), len(ns), alpha, p))
	}
	cc.Baseline, cc.New, cc.Medians = analysis.Summarize(bs), analysis.Summarize(ns), &m
	cc.Delta, cc.DeltaLo, cc.DeltaHi, cc.Significant, cc.Word = m.Delta, m.Delta, m.Delta, m.Significant, m.String()
	if !math.IsNaN(m.P) {
		cc.P = fptr(m.P)
	}
	if m.ShiftLo != nil {
		cc.DeltaLo, cc.DeltaHi = *m.ShiftLo, *m.ShiftHi
	}
}

func modelList(ms []ComparedModel) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s (sha256 %s)", m.ID, m.SHA256))
	}
	if len(parts) == 0 {
		return "no models"
	}
	return strings.Join(parts, ", ")
}

// processSummary is a side's process means as a Summary: N processes, their mean, SD and
// interval.
func processSummary(p analysis.ProcessSummary) analysis.Summary {
	s := analysis.Summary{N: p.N, Mean: p.Mean, SD: p.SD, Lo: p.Lo, Hi: p.Hi}
	if p.Mean != 0 {
		s.CV = p.SD / math.Abs(p.Mean)
	}
	return s
}
