package study

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/vocab"
)

func TestChunkReps(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want int
	}{
		{[]string{"-r", "5"}, 5},
		{[]string{"llama-bench", "-p", "64", "-r", "7", "-t", "1"}, 7},
		{[]string{"-p", "64", "-r"}, 0},
		{[]string{"-r"}, 0},
		{nil, 0},
		{[]string{"-r", "x"}, 0},
	} {
		if got := ChunkReps(c.argv); got != c.want {
			t.Errorf("ChunkReps(%q) = %d, want %d", c.argv, got, c.want)
		}
	}
}

// adaptiveChunk is one chunk of a plan leg: its tg32 repetitions (nil: the attempt failed).
type adaptiveChunk struct {
	leg string
	tg  []float64
}

// adaptiveRecord stores the chunks in order, each chunk a notebook leg with a tg32 row (kept)
// and a pp64 row (no target); besides, rows the state must ignore: a flagged row, a canary's
// row, a row of a leg outside the plan.
func adaptiveRecord(chunks ...adaptiveChunk) ([]StoredLeg, []StoredRow) {
	var stored []StoredLeg
	var rows []StoredRow
	attempts := map[string]int{}
	for i, c := range chunks {
		id := int64(i + 1)
		attempts[c.leg]++
		s := StoredLeg{ID: id, Label: fmt.Sprintf("chunk %d", id), PlanLeg: c.leg, Role: RoleLeg, Attempt: attempts[c.leg], State: LegFinished,
			Class: string(vocab.ClassOK), Argv: []string{"llama-bench", "-r", fmt.Sprint(len(c.tg))}}
		if c.tg == nil {
			s.Class, s.Argv = string(vocab.ClassFailed), []string{"llama-bench", "-r", "3"}
			stored = append(stored, s)
			continue
		}
		stored = append(stored, s)
		rows = append(rows,
			StoredRow{LegID: id, Seq: 0, Status: string(vocab.RowResult), Result: benchfmt.Result{NPrompt: 64, AvgTs: 500, SamplesTs: []float64{500, 501, 499}}},
			StoredRow{LegID: id, Seq: 1, Status: string(vocab.RowResult), Result: benchfmt.Result{NGen: 32, AvgTs: c.tg[0], SamplesTs: c.tg}},
			StoredRow{LegID: id, Seq: 2, Status: string(vocab.RowFlagged), Result: benchfmt.Result{NGen: 32, NDepth: 9, SamplesTs: []float64{1, 2, 3}}})
	}
	n := int64(len(chunks))
	stored = append(stored,
		StoredLeg{ID: n + 1, PlanLeg: "a", Role: RoleCanary, Attempt: 1, State: LegFinished, Class: string(vocab.ClassOK), Argv: []string{"-r", "3"}},
		StoredLeg{ID: n + 2, PlanLeg: "z", Role: RoleLeg, Attempt: 1, State: LegFinished, Class: string(vocab.ClassOK), Argv: []string{"-r", "3"}})
	rows = append(rows, StoredRow{LegID: n + 1, Status: string(vocab.RowResult), Result: benchfmt.Result{NGen: 32, SamplesTs: []float64{1, 2, 3}}},
		StoredRow{LegID: n + 2, Status: string(vocab.RowResult), Result: benchfmt.Result{NGen: 32, SamplesTs: []float64{1, 2, 3}}})
	return stored, rows
}

func adaptivePlan() (*Plan, []LegPlan) {
	retries := 1
	p := &Plan{Retries: &retries, Adaptive: &Adaptive{MinReps: 3, MaxReps: 9, ChunkReps: 3, Order: OrderBlocks, Seed: 1,
		Targets: []PrecisionTarget{{Test: "tg", Rel: 0.01}}}}
	legs := []LegPlan{{ID: "a", Models: []string{"m"}, Depths: []int{0}}, {ID: "b", Models: []string{"m"}, Depths: []int{0}}, {ID: "c", Models: []string{"m"}, Depths: []int{0}}}
	return p, legs
}

var tight, noisy = []float64{100, 100.1, 99.9}, []float64{90, 110, 100}

// tgCell is a leg's tg32 cell.
func tgCell(t *testing.T, l AdaptiveLeg) AdaptiveCell {
	t.Helper()
	for _, c := range l.Cells {
		if c.Test == "tg32" {
			return c
		}
	}
	t.Fatalf("leg %s has no tg32 cell: %+v", l.Leg, l.Cells)
	return AdaptiveCell{}
}

// TestAdaptiveStateStops: the rule stops every leg at the end of a round when all met their
// targets (the minimum reached), or when every leg still running ran the maximum, or when no
// leg can run any more; a leg whose failures reached the retry limit is final and left out.
func TestAdaptiveStateStops(t *testing.T) {
	p, legs := adaptivePlan()
	state := func(chunks ...adaptiveChunk) *AdaptiveState {
		stored, rows := adaptiveRecord(chunks...)
		return NewAdaptiveState(p, "", legs, stored, rows)
	}

	// Round 1, both legs met at min_reps, c failed twice (the limit): stop, met.
	st := state(adaptiveChunk{"a", tight}, adaptiveChunk{"b", tight}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil})
	if !st.Stop || !st.Met || st.Legs[2].Failed != true || st.Legs[0].Failed || st.Worst <= 0 || st.Worst > 0.01 {
		t.Fatalf("met in round 1: stop %v met %v worst %g legs %+v", st.Stop, st.Met, st.Worst, st.Legs)
	}
	a := st.Legs[0]
	if a.Chunks != 1 || a.Reps != 3 || len(a.Cells) != 2 || !a.Met {
		t.Errorf("leg a: %+v", a)
	}
	tg := tgCell(t, a)
	if !tg.Met || tg.Target != "±1%" || tg.HalfWidth == nil || math.Abs(*tg.HalfWidth-analysis.RelHalfWidth(tight)) > 1e-15 ||
		!reflect.DeepEqual(tg.Samples, tight) || !reflect.DeepEqual(tg.Refs, []string{RowRef(1, 1)}) {
		t.Errorf("a's tg cell: %+v", tg)
	}
	for _, c := range a.Cells {
		if c.Test == "pp64" && (c.Target != "" || c.Met) {
			t.Errorf("a cell without a target: %+v", c)
		}
	}
	if got := st.Finished(); !reflect.DeepEqual(got, map[string]bool{"a": true, "b": true, "c": true}) {
		t.Errorf("finished %v", got)
	}
	if rr := st.ResultRows(); len(rr) != 4 {
		t.Errorf("result rows %+v", rr)
	}

	// c failed once, one retry left: it is still running, with nothing met: no stop.
	st = state(adaptiveChunk{"a", tight}, adaptiveChunk{"b", tight}, adaptiveChunk{"c", nil})
	if st.Stop || st.Met || st.Legs[2].Failed {
		t.Errorf("c with a retry left: stop %v met %v legs %+v", st.Stop, st.Met, st.Legs)
	}
	if got := st.Finished(); len(got) != 0 || st.ResultRows() != nil {
		t.Errorf("nothing is final: %v %v", got, st.ResultRows())
	}

	// a ran a second chunk, b not yet: all met but the round is not over.
	st = state(adaptiveChunk{"a", tight}, adaptiveChunk{"b", tight}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil}, adaptiveChunk{"a", tight})
	if st.Stop || !st.Met {
		t.Errorf("mid-round: stop %v met %v", st.Stop, st.Met)
	}
	if got := st.Finished(); !reflect.DeepEqual(got, map[string]bool{"c": true}) {
		t.Errorf("mid-round finished %v", got)
	}
	tg = tgCell(t, st.Legs[0])
	if st.Legs[0].Chunks != 2 || st.Legs[0].Reps != 6 || len(tg.Samples) != 6 || !reflect.DeepEqual(tg.chunks, []int{3, 3}) || len(tg.Refs) != 2 {
		t.Errorf("a after two chunks: %+v %+v", st.Legs[0], tg)
	}

	// Noisy: not met after a round, and not at the maximum: go on.
	st = state(adaptiveChunk{"a", noisy}, adaptiveChunk{"b", tight}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil})
	if st.Stop || st.Met || st.Legs[0].Met || !st.Legs[1].Met || math.Abs(st.Worst-analysis.RelHalfWidth(noisy)) > 1e-15 {
		t.Errorf("noisy a: stop %v met %v worst %g", st.Stop, st.Met, st.Worst)
	}
	// ... until both ran the maximum (9): stop, precision not reached.
	st = state(adaptiveChunk{"a", noisy}, adaptiveChunk{"b", noisy}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil},
		adaptiveChunk{"a", noisy}, adaptiveChunk{"b", noisy}, adaptiveChunk{"a", noisy}, adaptiveChunk{"b", noisy})
	if !st.Stop || st.Met || st.Legs[0].Reps != 9 {
		t.Errorf("at the maximum: stop %v met %v legs %+v", st.Stop, st.Met, st.Legs)
	}
	if w := tgCell(t, st.Legs[0]).Words(9); !strings.HasPrefix(w, "precision not reached, CI ±") || !strings.HasSuffix(w, "(target ±1%) after 9 reps") {
		t.Errorf("words %q", w)
	}
	// One at the maximum, one not: go on.
	st = state(adaptiveChunk{"a", noisy}, adaptiveChunk{"b", noisy}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil},
		adaptiveChunk{"a", noisy}, adaptiveChunk{"b", noisy}, adaptiveChunk{"a", noisy})
	if st.Stop {
		t.Errorf("a at the maximum, b not: stop")
	}

	// Every leg failed for good: stop, nothing met.
	st = state(adaptiveChunk{"a", nil}, adaptiveChunk{"a", nil}, adaptiveChunk{"b", nil}, adaptiveChunk{"b", nil}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil})
	if !st.Stop || st.Met {
		t.Errorf("all failed: stop %v met %v", st.Stop, st.Met)
	}

	// min_reps above a chunk: a tight chunk of 3 is not met yet.
	p.Adaptive.MinReps = 4
	st = state(adaptiveChunk{"a", tight}, adaptiveChunk{"b", tight}, adaptiveChunk{"c", nil}, adaptiveChunk{"c", nil})
	if tgCell(t, st.Legs[0]).Met || st.Met || st.Stop {
		t.Errorf("below min_reps: met %v stop %v", st.Met, st.Stop)
	}
}

// TestAdaptiveStateWarmup: the warm-up rule drops each chunk's slow first repetition.
func TestAdaptiveStateWarmup(t *testing.T) {
	p, legs := adaptivePlan()
	p.Adaptive.Warmup = &WarmupRule{MaxDiscard: 1, Tolerance: 0.05}
	stored, rows := adaptiveRecord(adaptiveChunk{"a", []float64{80, 100, 100.1, 99.9}}, adaptiveChunk{"a", []float64{100, 100.1, 99.9}})
	st := NewAdaptiveState(p, "", legs, stored, rows)
	tg := tgCell(t, st.Legs[0])
	if tg.Discarded != 1 || !reflect.DeepEqual(tg.Samples, []float64{100, 100.1, 99.9, 100, 100.1, 99.9}) || !reflect.DeepEqual(tg.chunks, []int{3, 3}) {
		t.Errorf("warm-up: %+v", tg)
	}
	if w := tg.Words(7); !strings.HasSuffix(w, "(target ±1%) met after 7 reps (1 warm-up rep(s) dropped)") || !strings.HasPrefix(w, "CI ±0.") {
		t.Errorf("words %q", w)
	}
}

func TestRoundComplete(t *testing.T) {
	for _, c := range []struct {
		legs []AdaptiveLeg
		want bool
	}{
		{[]AdaptiveLeg{{Chunks: 0}, {Chunks: 1}}, false},
		{[]AdaptiveLeg{{Chunks: 1}, {Chunks: 0}}, false},
		{[]AdaptiveLeg{{Chunks: 1}, {Chunks: 2}}, false},
		{[]AdaptiveLeg{{Chunks: 2}, {Chunks: 0, Failed: true}, {Chunks: 2}}, true},
		{[]AdaptiveLeg{{Chunks: 0}, {Chunks: 0}}, true},
		{nil, true},
	} {
		st := &AdaptiveState{Legs: c.legs}
		if got := st.roundComplete(); got != c.want {
			t.Errorf("roundComplete(%+v) = %v, want %v", c.legs, got, c.want)
		}
	}
}

func TestAdaptiveCellWords(t *testing.T) {
	hw := 0.0062
	for _, c := range []struct {
		c    AdaptiveCell
		want string
	}{
		{AdaptiveCell{HalfWidth: &hw, Target: "±1%", Met: true}, "CI ±0.62% (target ±1%) met after 9 reps"},
		{AdaptiveCell{HalfWidth: &hw, Target: "±0.5%"}, "precision not reached, CI ±0.62% (target ±0.5%) after 9 reps"},
		{AdaptiveCell{Target: "±1%"}, "precision not reached, no interval (target ±1%) after 9 reps"},
		{AdaptiveCell{HalfWidth: &hw}, "CI ±0.62% (no target) after 9 reps"},
		{AdaptiveCell{HalfWidth: &hw, Discarded: 2}, "CI ±0.62% (no target) after 9 reps (2 warm-up rep(s) dropped)"},
	} {
		if got := c.c.Words(9); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestRoundOrder: "abab" keeps the plan order every round; "blocks" draws a permutation from
// the seed and the round, the same on every call.
func TestRoundOrder(t *testing.T) {
	legs := []string{"a", "b", "c", "d", "e", "f"}
	abab := &Adaptive{Order: OrderABAB, Seed: 42}
	blocks := &Adaptive{Order: OrderBlocks, Seed: 42}
	moved := 0
	for round := 0; round < 4; round++ {
		if got := abab.RoundOrder(legs, round); !reflect.DeepEqual(got, legs) {
			t.Errorf("abab round %d: %q", round, got)
		}
		got := blocks.RoundOrder(legs, round)
		if again := blocks.RoundOrder(legs, round); !reflect.DeepEqual(got, again) {
			t.Errorf("blocks round %d: %q then %q", round, got, again)
		}
		sorted := append([]string(nil), got...)
		slices.Sort(sorted)
		if !reflect.DeepEqual(sorted, legs) {
			t.Errorf("blocks round %d is not a permutation: %q", round, got)
		}
		if !reflect.DeepEqual(got, legs) {
			moved++
		}
	}
	if moved == 0 {
		t.Error("blocks never changed the order in 4 rounds of 6 legs")
	}
	if !reflect.DeepEqual(legs, []string{"a", "b", "c", "d", "e", "f"}) {
		t.Errorf("the plan's legs were changed: %q", legs)
	}
}

// TestAdaptiveStateByProcess (issue 31): a plan whose rule is over processes meets a target
// only with at least min_processes chunks and only when the interval over the chunks' means
// is within it: chunks each tight inside but apart from each other do not meet ±1%, though
// their pooled repetitions would under the repetition rule (the rule of a plan registered
// before, no unit), which still reads them pooled. The merged row's mean is the mean of the
// process means.
func TestAdaptiveStateByProcess(t *testing.T) {
	p, legs := adaptivePlan()
	p.Adaptive.MaxReps, p.Adaptive.Unit, p.Adaptive.MinProcesses = 30, UnitProcess, 3
	legs = legs[:1]
	state := func(chunks ...adaptiveChunk) *AdaptiveState {
		stored, rows := adaptiveRecord(chunks...)
		return NewAdaptiveState(p, "", legs, stored, rows)
	}
	c1, c2, c3 := []float64{100, 100.1, 99.9}, []float64{100.1, 100, 100.2}, []float64{99.8, 99.9, 100}
	if st := state(adaptiveChunk{"a", c1}, adaptiveChunk{"a", c2}); st.Stop || st.Met {
		t.Fatalf("two processes are below min_processes 3: %+v", st.Legs)
	}
	st := state(adaptiveChunk{"a", c1}, adaptiveChunk{"a", c2}, adaptiveChunk{"a", c3})
	tg := tgCell(t, st.Legs[0])
	if !st.Stop || !st.Met || tg.Process == nil || tg.Process.N != 3 || tg.Process.MMin != 3 || !tg.Process.Stopped || tg.HalfWidth == nil ||
		math.Abs(*tg.HalfWidth-analysis.RelHalfWidthProcesses(*tg.Process)) > 1e-15 {
		t.Fatalf("three tight processes: stop %v met %v cell %+v", st.Stop, st.Met, tg)
	}
	if w := tg.Words(st.Legs[0].Reps); !strings.Contains(w, "over 3 process(es) of 3 reps (target ±1%) met after 9 reps") {
		t.Errorf("words: %s", w)
	}
	// apart: 100, 103, 97 — six processes each tight inside, apart by up to 6%: pooled CI ±0.97%, over processes ±2.40%
	far := []adaptiveChunk{{"a", []float64{100, 100.1, 99.9}}, {"a", []float64{103, 103.1, 102.9}}, {"a", []float64{97, 97.1, 96.9}},
		{"a", []float64{100, 100.1, 99.9}}, {"a", []float64{101.5, 101.6, 101.4}}, {"a", []float64{98.5, 98.6, 98.4}}}
	p.Adaptive.Targets[0].Rel = 0.015
	if st := state(far...); st.Met {
		t.Fatalf("processes apart met ±1.5%% over processes: %+v", tgCell(t, st.Legs[0]))
	}
	p.Adaptive.Unit, p.Adaptive.MinProcesses = "", 0
	st = state(far...)
	if old := tgCell(t, st.Legs[0]); !st.Met || old.Process != nil {
		t.Fatalf("the repetition rule (no unit) pools them and meets ±1.5%%: met %v cell %+v", st.Met, old)
	}
	// the merged mean: the mean of the process means (unequal m after a warm-up drop)
	p.Adaptive.Unit, p.Adaptive.MinProcesses, p.Adaptive.Targets[0].Rel = UnitProcess, 3, 0.5
	p.Adaptive.Warmup = &WarmupRule{MaxDiscard: 1, Tolerance: 0.05}
	st = state(adaptiveChunk{"a", []float64{50, 100, 100, 100}}, adaptiveChunk{"a", []float64{110, 110, 110, 110}}, adaptiveChunk{"a", []float64{90, 90, 90, 90}})
	for _, r := range st.ResultRows() {
		if r.Result.NGen == 32 && math.Abs(r.Result.AvgTs-100) > 1e-9 {
			t.Fatalf("merged mean %g, want the mean of the process means 100 (pooled: %g)", r.Result.AvgTs, analysis.Summarize(r.Result.SamplesTs).Mean)
		}
	}
}

// New adaptive plans get the process rule with at least 3 processes; the unit and the
// minimum are checked.
func TestAdaptiveUnitDefaultsAndChecks(t *testing.T) {
	p := loadValid(t)
	adaptiveOf(p)
	p.Defaults()
	if p.Adaptive.Unit != UnitProcess || p.Adaptive.MinProcesses != 3 {
		t.Fatalf("defaults: %+v", p.Adaptive)
	}
	_, canonical, _ := p.SHA256()
	if !strings.Contains(string(canonical), `"min_processes":3`) || !strings.Contains(string(canonical), `"unit":"process"`) {
		t.Fatalf("the rule is part of the plan's identity: %s", canonical)
	}
	for _, c := range []struct {
		edit func(a *Adaptive)
		want string
	}{
		{func(a *Adaptive) { a.MinProcesses = 2 }, `error: adaptive.min_processes: 2: the interval over processes charges a degree of freedom for the stop, so it needs at least 3 processes`},
		{func(a *Adaptive) { a.MaxReps = 6 }, `error: adaptive.min_processes: 3 processes cannot run within max_reps 6 (a first chunk of 3 repetitions, then chunks of 3: at most 2 processes)`},
		{func(a *Adaptive) { a.Unit = "chunk" }, `error: adaptive.unit: "chunk": want "process"`},
		{func(a *Adaptive) { a.Unit = UnitRepetition }, `warning: adaptive.unit: "repetition": the interval pools every repetition`},
		{func(a *Adaptive) { a.Unit, a.MinProcesses = UnitRepetition, 4 }, `error: adaptive.min_processes: 4: only with "unit": "process"`},
	} {
		q := loadValid(t)
		adaptiveOf(q)
		q.Defaults()
		c.edit(q.Adaptive)
		if got := problemsOf(t, q, ValidateOptions{}); !strings.Contains(got, c.want) {
			t.Errorf("want %q, got:\n%s", c.want, got)
		}
	}
	if got := problemsOf(t, p, ValidateOptions{}); got != "" {
		t.Errorf("the defaults validate: %s", got)
	}
}
