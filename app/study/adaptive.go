package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/vocab"
)

// Adaptive repetitions (docs/adaptive.md): instead of a fixed axes.reps, every leg runs
// llama-bench in chunks (one process each) until the 95% confidence interval of every targeted
// test's mean is within its target, or max_reps repetitions were run. The rule is part of the
// registered plan and a pure function of the recorded samples: a resumed run decides exactly
// as an uninterrupted one. All legs advance together, one chunk each per round in an order
// drawn from the plan's seed, and stop together, so slow drift falls on every leg alike and
// the legs stay comparable with each other.

// Adaptive is a plan's adaptive repetitions. Written only when given.
type Adaptive struct {
	MinReps   int               `json:"min_reps"`
	MaxReps   int               `json:"max_reps"`
	ChunkReps int               `json:"chunk_reps"`
	Targets   []PrecisionTarget `json:"targets"`
	// Order is how each round's chunks are ordered: "blocks" (a permutation per round drawn
	// from Seed: a randomised block design) or "abab" (plan order every round).
	Order  string      `json:"order"`
	Seed   int64       `json:"seed"`
	Warmup *WarmupRule `json:"warmup,omitempty"`
	// Unit is what the stopping rule's interval is over: UnitProcess (the default of a plan
	// registered since process-level statistics: the interval over the chunks' means, each
	// chunk one llama-bench process) or UnitRepetition (every kept repetition pooled, as if
	// independent: the rule of plans registered before, whose canonical plan has no unit).
	Unit string `json:"unit,omitempty"`
	// MinProcesses is the fewest processes a cell's interval rests on before it can be met
	// (UnitProcess; default analysis.DefaultMinProcesses, at least 3).
	MinProcesses int `json:"min_processes,omitempty"`
}

// The units of the adaptive stopping rule.
const (
	UnitProcess    = "process"
	UnitRepetition = "repetition"
)

// ByProcess reports whether the stopping rule's interval is over processes.
func (a *Adaptive) ByProcess() bool { return a.Unit == UnitProcess }

// Interleaving orders.
const (
	OrderBlocks = "blocks"
	OrderABAB   = "abab"
)

// PrecisionTarget is the precision one test must reach: the half-width of its mean's 95%
// interval at most Rel of the mean, or at most Abs t/s.
type PrecisionTarget struct {
	Test string  `json:"test"` // "tg", "pp", "pg" or exact ("tg128")
	Rel  float64 `json:"rel,omitempty"`
	Abs  float64 `json:"abs,omitempty"`
}

// Precision is the target as the analysis takes it.
func (t PrecisionTarget) Precision() analysis.Precision {
	return analysis.Precision{Rel: t.Rel, Abs: t.Abs}
}

// WarmupRule drops the slow first repetitions of every chunk (analysis.Warmup): at most
// MaxDiscard, each more than Tolerance below the median of the repetitions after it.
type WarmupRule struct {
	MaxDiscard int     `json:"max_discard"`
	Tolerance  float64 `json:"tolerance"`
}

// Rule is the stopping rule of the plan.
func (a *Adaptive) Rule() analysis.StopRule {
	return analysis.StopRule{MinReps: a.MinReps, MaxReps: a.MaxReps, ChunkReps: a.ChunkReps}
}

// targetOf is the target of a row's test (the first that matches), nil when none does.
func (a *Adaptive) targetOf(r *benchfmt.Result) *PrecisionTarget {
	for i := range a.Targets {
		if matchTest(a.Targets[i].Test, r) {
			return &a.Targets[i]
		}
	}
	return nil
}

// RoundOrder is the order of the plan legs' chunks in a round: plan order for "abab", else a
// permutation drawn from the seed and the round (the same on every run and resume).
func (a *Adaptive) RoundOrder(legs []string, round int) []string {
	out := append([]string(nil), legs...)
	if a.Order == OrderABAB {
		return out
	}
	rng := rand.New(rand.NewPCG(uint64(a.Seed), uint64(round)))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// AdaptiveCell is one measured quantity (a result row's model, test, depth and configuration)
// across a leg's chunks.
type AdaptiveCell struct {
	Test      string    `json:"test"`
	Depth     int64     `json:"depth"`
	Config    string    `json:"config"`
	Samples   []float64 `json:"samples"`   // the kept repetitions (t/s), chunk by chunk
	Discarded int       `json:"discarded"` // repetitions the warm-up rule dropped
	Target    string    `json:"target,omitempty"`
	// HalfWidth is the kept samples' 95% half-width relative to their mean (null: none yet).
	HalfWidth *float64 `json:"half_width"`
	Met       bool     `json:"met"`
	Refs      []string `json:"refs"`
	// Process: a plan whose rule is over processes, the cell's processes (its chunks): n, m,
	// the interval the rule reads (analysis.SummarizeStopped) and the between- and
	// within-process spreads. Absent under the repetition rule.
	Process *analysis.ProcessSummary `json:"process,omitempty"`
	rows    []*benchfmt.Result
	chunks  []int // kept repetitions per chunk
	target  *PrecisionTarget
	model   string
}

// AdaptiveLeg is one plan leg's chunks.
type AdaptiveLeg struct {
	Leg    string         `json:"leg"`
	Chunks int            `json:"chunks"` // chunks that ended with results
	Reps   int            `json:"reps"`   // repetitions those chunks ran
	Cells  []AdaptiveCell `json:"cells"`
	Met    bool           `json:"met"`
	Failed bool           `json:"-"` // final by failures (no chunk can run any more)
	chunks []StoredLeg
}

// AdaptiveState is where an adaptive study stands: every plan leg's chunks and the joint
// decision of the stopping rule.
type AdaptiveState struct {
	Legs []AdaptiveLeg `json:"legs"`
	// Stop: every leg met its targets, or ran the maximum (or failed for good).
	Stop bool `json:"stop"`
	Met  bool `json:"met"`
	// Worst is the largest relative half-width of a targeted cell (+Inf: a cell without one).
	Worst float64 `json:"-"`
}

// seedTypeError words a plan's adaptive.seed that is not an integer.
func seedTypeError(e *jsonlex.StrictError) (string, bool) {
	var typ *json.UnmarshalTypeError
	if !errors.As(e.Err, &typ) || typ.Field != "adaptive.seed" {
		return "", false
	}
	return fmt.Sprintf("adaptive.seed: a JSON %s is not a seed; give an integer such as 42 (it fixes the interleaving order)", typ.Value), true
}

// ChunkReps reads a chunk's repetitions from its arguments (-r N).
func ChunkReps(argv []string) int {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-r" {
			n, _ := strconv.Atoi(argv[i+1])
			return n
		}
	}
	return 0
}

// NewAdaptiveState reads the chunks the notebook holds (legs in start order, their rows) and
// applies the plan's stopping rule. planDir resolves model paths for rows of a leg with
// several models.
func NewAdaptiveState(p *Plan, planDir string, legs []LegPlan, stored []StoredLeg, rows []StoredRow) *AdaptiveState {
	a := p.Adaptive
	st := &AdaptiveState{}
	idx := map[string]int{}
	byNotebook := map[int64]int{}
	statuses := LegStatuses(p, legs, stored)
	for i, lp := range legs {
		idx[lp.ID] = i
		st.Legs = append(st.Legs, AdaptiveLeg{Leg: lp.ID, Cells: []AdaptiveCell{},
			Failed: !statuses[i].Results && statuses[i].Failed >= statuses[i].MaxAttempts})
	}
	for _, s := range stored {
		i, ok := idx[s.PlanLeg]
		if s.Role != RoleLeg || !ok || !hasResults(s) {
			continue
		}
		l := &st.Legs[i]
		l.Chunks++
		l.Reps += ChunkReps(s.Argv)
		l.chunks = append(l.chunks, s)
		byNotebook[s.ID] = i
	}
	for _, r := range rows {
		i, ok := byNotebook[r.LegID]
		if !ok || r.Status != string(vocab.RowResult) {
			continue
		}
		st.Legs[i].addRow(a, p, planDir, legs[i], r)
	}
	rule := a.Rule()
	st.Met = true
	active := 0
	for i := range st.Legs {
		l := &st.Legs[i]
		var samples [][]float64
		var targets []analysis.Precision
		var procs [][][]float64
		for j := range l.Cells {
			c := &l.Cells[j]
			var cp [][]float64
			if a.ByProcess() {
				cp = c.processes()
				ps := analysis.SummarizeStopped(cp)
				c.Process = &ps
			}
			if c.target == nil {
				continue
			}
			samples, targets = append(samples, c.Samples), append(targets, c.target.Precision())
			h := analysis.RelHalfWidth(c.Samples)
			if a.ByProcess() {
				procs = append(procs, cp)
				c.Met = l.Reps >= a.MinReps && c.Process.N >= a.MinProcesses && c.target.Precision().MetProcesses(*c.Process)
				h = analysis.RelHalfWidthProcesses(*c.Process)
			} else {
				c.Met = l.Reps >= a.MinReps && c.target.Precision().Met(c.Samples)
			}
			if !math.IsInf(h, 0) {
				c.HalfWidth = &h
			}
		}
		var d analysis.Decision
		if a.ByProcess() {
			d = rule.DecideProcesses(l.Reps, a.MinProcesses, procs, targets)
		} else {
			d = rule.Decide(l.Reps, samples, targets)
		}
		l.Met = d.Met
		if l.Failed {
			continue
		}
		active++
		st.Worst = math.Max(st.Worst, d.Worst)
		st.Met = st.Met && d.Met
	}
	// Every leg stops when all are met or every leg still running reached the maximum, and
	// only at the end of a round: the legs stop with the same repetitions.
	st.Stop = active == 0 || (st.roundComplete() && st.Met) || st.allAtMax(rule)
	st.Met = st.Met && active > 0
	return st
}

// roundComplete reports whether every leg still running has as many chunks as the others.
func (st *AdaptiveState) roundComplete() bool {
	n := -1
	for _, l := range st.Legs {
		if l.Failed {
			continue
		}
		if n >= 0 && l.Chunks != n {
			return false
		}
		n = l.Chunks
	}
	return true
}

func (st *AdaptiveState) allAtMax(rule analysis.StopRule) bool {
	for _, l := range st.Legs {
		if !l.Failed && rule.NextChunk(l.Reps) > 0 {
			return false
		}
	}
	return true
}

// addRow adds a result row of one of the leg's chunks to its cell.
func (l *AdaptiveLeg) addRow(a *Adaptive, p *Plan, planDir string, lp LegPlan, r StoredRow) {
	res := r.Result
	model := modelOfRow(p, planDir, lp, &res)
	test, config := testOf(&res), configLabel(&res)
	var c *AdaptiveCell
	for j := range l.Cells {
		x := &l.Cells[j]
		if x.model == model && x.Test == test && x.Depth == res.NDepth && x.Config == config {
			c = x
		}
	}
	if c == nil {
		l.Cells = append(l.Cells, AdaptiveCell{Test: test, Depth: res.NDepth, Config: config, Samples: []float64{},
			Refs: []string{}, model: model, target: a.targetOf(&res)})
		c = &l.Cells[len(l.Cells)-1]
		if c.target != nil {
			c.Target = c.target.Precision().String()
		}
	}
	xs := res.SamplesTs
	if w := a.Warmup; w != nil {
		drop := analysis.Warmup(xs, w.MaxDiscard, w.Tolerance)
		c.Discarded += drop
		xs = xs[drop:]
	}
	c.Samples = append(c.Samples, xs...)
	c.chunks = append(c.chunks, len(xs))
	c.Refs = append(c.Refs, RowRef(r.LegID, r.Seq))
	c.rows = append(c.rows, &r.Result)
}

// processes are the cell's kept repetitions by chunk (each chunk one process).
func (c AdaptiveCell) processes() [][]float64 {
	procs, err := analysis.Processes(c.Samples, c.chunks)
	if err != nil {
		procs = [][]float64{c.Samples}
	}
	return procs
}

// Finished lists the plan legs that are final: every leg once the rule stops, and a leg
// whose failures reached the plan's retry limit.
func (st *AdaptiveState) Finished() map[string]bool {
	out := map[string]bool{}
	for _, l := range st.Legs {
		if st.Stop || l.Failed {
			out[l.Leg] = true
		}
	}
	return out
}

// ResultRows are the final legs' merged cells as result rows: each the cell's first row with
// the kept samples of every chunk, their mean and standard deviation, its sources every
// chunk's row. A leg still running has none: no figure is read from a leg the rule has not
// stopped.
func (st *AdaptiveState) ResultRows() []ResultRow {
	var out []ResultRow
	final := st.Finished()
	for _, l := range st.Legs {
		if !final[l.Leg] {
			continue
		}
		for _, c := range l.Cells {
			r := *c.rows[0]
			r.SamplesTs = slices.Clone(c.Samples)
			sum := analysis.Summarize(c.Samples)
			r.AvgTs, r.StddevTs = sum.Mean, sum.SD
			if c.Process != nil { // the rule over processes: the mean of the process means
				r.AvgTs = c.Process.Mean
			}
			out = append(out, ResultRow{Leg: l.Leg, Ref: strings.Join(c.Refs, ", "), Model: c.model, Result: r, Chunks: slices.Clone(c.chunks)})
		}
	}
	return out
}

// Words says how a cell ended: "±0.62% (target ±1%) met after 9 reps" or "precision not
// reached, CI ±1.84% (target ±1%) after 30 reps".
func (c AdaptiveCell) Words(reps int) string {
	hw := "no interval"
	if c.HalfWidth != nil {
		hw = fmt.Sprintf("CI ±%.2f%%", *c.HalfWidth*100)
	}
	if p := c.Process; p != nil {
		hw += fmt.Sprintf(" over %d process(es) of %s reps", p.N, p.MString())
	}
	tail := fmt.Sprintf(" after %d reps", reps)
	if c.Discarded > 0 {
		tail += fmt.Sprintf(" (%d warm-up rep(s) dropped)", c.Discarded)
	}
	switch {
	case c.Target == "":
		return hw + " (no target)" + tail
	case c.Met:
		return fmt.Sprintf("%s (target %s) met%s", hw, c.Target, tail)
	}
	return fmt.Sprintf("precision not reached, %s (target %s)%s", hw, c.Target, tail)
}
