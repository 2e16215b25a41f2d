package study

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func adaptiveOf(p *Plan) {
	p.Repeatability = nil
	p.Axes.Reps = 0
	p.Adaptive = &Adaptive{MinReps: 3, MaxReps: 30, ChunkReps: 3, Order: OrderBlocks, Seed: 42,
		Targets: []PrecisionTarget{{Test: "tg", Rel: 0.01}}}
}

func problemsOf(t *testing.T, p *Plan, opts ValidateOptions) string {
	t.Helper()
	opts.PlanDir = "testdata"
	probs, _ := Validate(p, opts)
	var lines []string
	for _, pr := range probs {
		lines = append(lines, pr.String())
	}
	return strings.Join(lines, "\n")
}

func TestAdaptivePlanValidatesAndKeepsOldPlansHashes(t *testing.T) {
	p := loadValid(t)
	before, _, _ := p.SHA256()
	adaptiveOf(p)
	if got := problemsOf(t, p, ValidateOptions{}); got != "" {
		t.Fatalf("valid adaptive plan: %s", got)
	}
	after, canonical, _ := p.SHA256()
	if before == after || !strings.Contains(string(canonical), `"adaptive":{"chunk_reps":3,"max_reps":30,"min_reps":3,"order":"blocks","seed":42,"targets":[{"rel":0.01,"test":"tg"}]}`) {
		t.Fatalf("canonical plan %s", canonical)
	}
	legs, err := Expand(p, "")
	if err != nil || !strings.Contains(JoinArgs(legs[0].Args), "-r 3 ") {
		t.Fatalf("the first chunk's -r is min_reps: %v %v", legs, err)
	}
	// A plan without the field hashes as before the field existed.
	q := loadValid(t)
	if h, _, _ := q.SHA256(); h != before {
		t.Fatal("a plan without adaptive changed its hash")
	}
}

func TestAdaptiveBadInput(t *testing.T) {
	cases := []struct {
		edit func(a *Adaptive, p *Plan)
		want string
	}{
		{func(a *Adaptive, _ *Plan) { a.MinReps, a.MaxReps = 10, 5 }, "adaptive.min_reps: 10 is above adaptive.max_reps 5; raise max_reps or lower min_reps"},
		{func(a *Adaptive, _ *Plan) { a.MinReps = 1 }, "adaptive.min_reps: 1: a confidence interval needs at least 2 repetitions"},
		{func(a *Adaptive, _ *Plan) { a.Targets = nil }, "adaptive.targets: empty; give at least one precision target"},
		{func(a *Adaptive, _ *Plan) { a.Targets[0].Abs = 2 }, "adaptive.targets[0]: give exactly one of rel"},
		{func(a *Adaptive, _ *Plan) { a.Targets[0].Rel = 1.5 }, "adaptive.targets[0].rel: 1.5: want a fraction in (0, 1)"},
		{func(a *Adaptive, _ *Plan) { a.Targets[0].Test = "tgx" }, `adaptive.targets[0].test: "tgx": want tg, pp, pg`},
		{func(a *Adaptive, _ *Plan) { a.Order = "zigzag" }, `adaptive.order: "zigzag": want "blocks"`},
		{func(a *Adaptive, _ *Plan) { a.Warmup = &WarmupRule{MaxDiscard: 2, Tolerance: 0.05} }, "adaptive.warmup.max_discard: 2: a chunk of 3 repetitions keeps at least 2, so at most 1 may be dropped"},
		{func(_ *Adaptive, p *Plan) { p.Repeatability = &Repeatability{Leg: "tiny/d0", At: []string{"end"}} }, "repeatability: not with adaptive repetitions"},
		{func(_ *Adaptive, p *Plan) { p.Axes.Reps = 5 }, "warning: axes.reps: 5 is not used"},
	}
	for _, c := range cases {
		p := loadValid(t)
		adaptiveOf(p)
		c.edit(p.Adaptive, p)
		if got := problemsOf(t, p, ValidateOptions{}); !strings.Contains(got, c.want) {
			t.Errorf("want %q in:\n%s", c.want, got)
		}
	}
}

func TestAdaptiveSeedThatIsNotANumber(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), `"split": "per_depth",`, `"split": "per_depth", "adaptive": {"min_reps": 3, "max_reps": 9, "chunk_reps": 3, "order": "blocks",
  "seed": "forty-two", "targets": [{"test": "tg", "rel": 0.01}]},`, 1)
	_, err = Decode("plan.json", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), `plan.json:10:`) ||
		!strings.Contains(err.Error(), "adaptive.seed: a JSON string is not a seed; give an integer such as 42") {
		t.Fatalf("got %v", err)
	}
}

// TestAdaptiveTargetUnreachableFromHistory: a notebook that measured tg of this model at a CV
// of 5% before warns that ±1% needs about 99 repetitions, above max_reps 30.
func TestAdaptiveTargetUnreachableFromHistory(t *testing.T) {
	p := loadValid(t)
	adaptiveOf(p)
	h := BenchHistory{Tests: []HistoryTest{
		{NGen: 32, SamplesNs: []float64{100, 105, 95, 100, 105, 95}},
		{NPrompt: 64, SamplesNs: []float64{100, 101, 99}},
	}}
	cv, rows := HistoryCV(h, "tg")
	if rows != 1 || cv < 0.04 || cv > 0.05 {
		t.Fatalf("history CV %g from %d rows", cv, rows)
	}
	got := problemsOf(t, p, ValidateOptions{History: map[string]BenchHistory{"tiny": h}})
	if !strings.Contains(got, `warning: adaptive.targets[0]: tg ±1% on model tiny: at the CV of 4.47% this notebook measured before (1 past rows), the interval needs about`) ||
		!strings.Contains(got, `above max_reps 30: the run will end with "precision not reached"; raise max_reps or loosen the target`) {
		t.Fatalf("got:\n%s", got)
	}
	p.Adaptive.MaxReps = 200
	if got := problemsOf(t, p, ValidateOptions{History: map[string]BenchHistory{"tiny": h}}); got != "" {
		t.Fatalf("a reachable target warns: %s", got)
	}
}

// Under the rule over processes the warning reads the spread between processes the notebook
// measured (cells of two processes or more), not the spread inside a row: rows tight inside
// (0.5%) but 3% apart need more processes than max_reps allows; with no cell of two
// processes the history is too thin and nothing is warned.
func TestAdaptiveProcessTargetUnreachableFromHistory(t *testing.T) {
	p := loadValid(t)
	adaptiveOf(p)
	p.Defaults()
	row := func(cfg int64, mu float64) HistoryTest {
		return HistoryTest{Config: cfg, NGen: 32, SamplesNs: []float64{mu * 0.995, mu, mu * 1.005}}
	}
	apart := BenchHistory{Tests: []HistoryTest{row(1, 100), row(1, 103), row(1, 97), row(1, 100)}}
	got := problemsOf(t, p, ValidateOptions{History: map[string]BenchHistory{"tiny": apart}})
	if !strings.Contains(got, "warning: adaptive.targets[0]: tg ±1% on model tiny: at the spread this notebook measured (between processes 2.4") ||
		!strings.Contains(got, "over 1 cell(s) of two processes or more), the interval over processes of 3 repetitions needs about") ||
		!strings.Contains(got, "above the 10 processes max_reps 30 allows") {
		t.Fatalf("got:\n%s", got)
	}
	if cv, _ := HistoryCV(apart, "tg"); cv > 0.01 {
		t.Fatalf("the rows' own CV is %g: the warning must come from the spread between them", cv)
	}
	thin := BenchHistory{Tests: []HistoryTest{row(1, 100), row(2, 103)}}
	if got := problemsOf(t, p, ValidateOptions{History: map[string]BenchHistory{"tiny": thin}}); got != "" {
		t.Fatalf("one process per cell is too thin to say, yet: %s", got)
	}
	p.Adaptive.MaxReps = 300
	if got := problemsOf(t, p, ValidateOptions{History: map[string]BenchHistory{"tiny": apart}}); got != "" {
		t.Fatalf("a reachable target warns: %s", got)
	}
}
