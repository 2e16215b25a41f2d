package capacity

import (
	"slices"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
)

func ip(x int) *int                   { return &x }
func fp(x float64) *float64           { return &x }
func sel(f Figure, c string) Selector { return Selector{Figure: f, Candidate: c} }

func TestPredictionVerdicts(t *testing.T) {
	p := smallPlan()
	p.Predictions = []Prediction{
		{ID: "A", Text: "cell", Kind: study.KindBand, About: Selector{Figure: FigureCellRate, Candidate: "a", Slots: ip(1), Clients: ip(2)}, Lo: fp(100), Hi: fp(120)},
		{ID: "B", Text: "gain", Kind: study.KindQuestion, About: sel(FigureSelectedGain, "a")},
		{ID: "C", Text: "tax", Kind: study.KindQuestion, About: sel(FigureServingTax, "a")},
		{ID: "D", Text: "tax b", Kind: study.KindBand, About: sel(FigureServingTax, "b"), Hi: fp(0.1)},
		{ID: "E", Text: "step", Kind: study.KindBand, About: Selector{Figure: FigureGainPerDoubling, Candidate: "b", Slots: ip(2)}, Lo: fp(-0.01), Hi: fp(0.01)},
		{ID: "F", Text: "e2e", Kind: study.KindComparison, About: Selector{Figure: FigureE2EP95, Candidate: "a", Slots: ip(2), Clients: ip(2)},
			Op: "within", Than: &Selector{Figure: FigureE2EP95, Candidate: "b", Slots: ip(2), Clients: ip(2)}, Tolerance: 0.01},
		{ID: "G", Text: "clients", Kind: study.KindQuestion, About: sel(FigureSelectedClients, "b")},
	}
	p.Defaults()
	if errs := study.Errors(Validate(p, ValidateOptions{})); len(errs) > 0 {
		t.Fatal(errs)
	}
	p.Limits.TTFTMsP95Max = 100 // nothing of candidate a passes... nor of b: no selection at all
	in := fixture{}.inputs(t, p)
	in.BenchTG = map[string]float64{"b": 100}
	r := mustAssemble(t, p, in)
	want := []struct {
		outcome study.Outcome
		detail  string
	}{
		{study.Miss, "128 is 6.7% above the band's top (120)"},
		{study.Unresolvable, "a has no selected point: no cell passes every gate"},
		{study.Unresolvable, "no llama-bench tg given (--bench-tg a=T)"},
		{study.Miss, ""}, // per-stream 1000/(800/63) = 78.75 tok/s vs 100: tax 21.25%
		{study.Miss, ""}, // P1/C1 -> P2/C2: 64 -> 128 tok/s, +100%
		{study.Holds, "+0.0%"},
		{study.Unresolvable, "b has no selected point"},
	}
	for i, v := range r.Verdicts {
		if v.Outcome != want[i].outcome || !strings.Contains(v.Detail, want[i].detail) {
			t.Errorf("%s: %s %q, want %s %q", v.Prediction, v.Outcome, v.Detail, want[i].outcome, want[i].detail)
		}
	}
	if v := r.Verdicts[3]; *v.Value < 0.2124 || *v.Value > 0.2126 {
		t.Errorf("serving tax %v, want 0.2125", *v.Value)
	}
	if v := r.Verdicts[4]; *v.Value != 1 || v.Sources[0] != "b P1/C1 -> P2/C2" {
		t.Errorf("gain per doubling %v from %v", *v.Value, v.Sources)
	}
	if v := r.Verdicts[5]; !strings.Contains(v.Expected, "within 1% of e2e_p95_ms of b P2/C2") || len(v.Sources) != 2 {
		t.Errorf("comparison %+v", v)
	}
}

// TestPredictionSelectorChecks: each way a selector can name a number the plan does not
// measure is refused at its path; the selectors next to them that do are accepted.
func TestPredictionSelectorChecks(t *testing.T) {
	cell := func(f Figure, c string, slots, clients *int) Selector {
		return Selector{Figure: f, Candidate: c, Slots: slots, Clients: clients}
	}
	for _, tc := range []struct {
		name  string
		plan  func() *Plan
		about Selector
		than  *Selector
		path  string // "" when the plan is valid
		msg   string
	}{
		{"cell", smallPlan, cell(FigureTTFTP95, "a", ip(2), ip(1)), nil, "", ""},
		{"cell without slots", smallPlan, cell(FigureCellRate, "a", nil, ip(1)), nil, "predictions[0].about.slots", "missing; a cell_rate names a cell"},
		{"cell slots not in plan", smallPlan, cell(FigurePerStreamRate, "a", ip(4), ip(1)), nil, "predictions[0].about.slots", "4 is not a slot count of this plan ([1 2])"},
		{"comparison than", smallPlan, cell(FigureE2EP95, "a", ip(1), ip(1)), &Selector{Figure: FigureE2EP95, Candidate: "b", Slots: ip(3), Clients: ip(1)},
			"predictions[0].than.slots", "3 is not a slot count"},
		{"concurrency cell", concurrencyPlan, cell(FigureCellRate, "f16", ip(4), nil), nil, "", ""},
		{"concurrency cell clients = slots", concurrencyPlan, cell(FigureCellRate, "f16", ip(4), ip(4)), nil, "", ""},
		{"concurrency cell clients", concurrencyPlan, cell(FigureCellRate, "f16", ip(4), ip(2)), nil, "predictions[0].about.clients", "leave clients out"},
		{"concurrency cell clients without slots", concurrencyPlan, cell(FigureCellRate, "f16", nil, ip(2)), nil, "predictions[0].about.clients", "leave clients out"},
		{"gain per doubling", smallPlan, cell(FigureGainPerDoubling, "a", ip(2), nil), nil, "", ""},
		{"gain per doubling without slots", smallPlan, cell(FigureGainPerDoubling, "a", nil, nil), nil, "predictions[0].about.slots", "missing; give the P the gain leads to (one of [2])"},
		{"gain per doubling from the first", smallPlan, cell(FigureGainPerDoubling, "a", ip(1), nil), nil, "predictions[0].about.slots", "1 is not a diagonal slot count after the first"},
		{"candidate figure with clients", smallPlan, cell(FigureSelectedRate, "a", nil, ip(1)), nil, "predictions[0].about", "leave slots and clients out"},
		{"speedup", smallPlan, sel(FigureSpeedup, "a"), nil, "", ""},
		{"speedup off one diagonal cell", func() *Plan { p := smallPlan(); p.Clients = []int{1}; return p }, sel(FigureSpeedup, "a"), nil,
			"predictions[0].about.figure", "speedup reads the diagonal clients = slots, which this plan measures at [1]"},
		{"knee", smallPlan, sel(FigureKnee, "b"), nil, "", ""},
		{"serving tax", smallPlan, sel(FigureServingTax, "a"), nil, "", ""},
		{"serving tax without one client", func() *Plan { p := smallPlan(); p.Clients = []int{2}; return p }, sel(FigureServingTax, "a"), nil,
			"predictions[0].about.figure", "serving_tax reads the single-client cell at P1; add clients 1"},
	} {
		p := tc.plan()
		kind := study.KindQuestion
		if tc.than != nil {
			kind = study.KindComparison
		}
		p.Predictions = []Prediction{{ID: "A", Text: "t", Kind: kind, About: tc.about, Than: tc.than, Op: map[bool]string{true: "within"}[tc.than != nil], Tolerance: map[bool]float64{true: 0.1}[tc.than != nil]}}
		errs := study.Errors(Validate(p, ValidateOptions{}))
		if tc.path == "" {
			if len(errs) > 0 {
				t.Errorf("%s: refused: %v", tc.name, errs)
			}
			continue
		}
		found := false
		for _, e := range errs {
			found = found || (e.Path == tc.path && strings.Contains(e.Msg, tc.msg))
		}
		if !found {
			t.Errorf("%s: want %s: %q, got %v", tc.name, tc.path, tc.msg, errs)
		}
	}
}

// TestPredictionValue: what each selector reads from a result, with its source, and the
// problem named when the number is not there.
func TestPredictionValue(t *testing.T) {
	r := &Result{Candidates: []CandidateResult{
		{ID: "a", Base: PointRef{Slots: 1, Clients: 1},
			Cells: []CellResult{
				{Slots: 1, Clients: 1, GenerationRate: fp(60), PerStreamRate: fp(58), TTFTMsP95: fp(90), E2EMsP95: fp(900)},
				{Slots: 2, Clients: 2, GenerationRate: fp(100), PerStreamRate: fp(49)},
			},
			Selected: &Selection{Slots: 2, Clients: 2, GenerationRate: 100, Gain: fp(2.0 / 3)},
			Scaling: &ScalingResult{Scaling: analysis.Scaling{Speedup: 5.0 / 3, Knee: fp(2), KneeRule: 0.1,
				Doubling: []analysis.DoublingGain{{From: 1, To: 2, Gain: 2.0 / 3}}}, TTFTGrowth: fp(1.5)},
			BenchTG: fp(64), ServingTax: fp(0.09375)},
		{ID: "b", Base: PointRef{Slots: 1, Clients: 1}, SelectionNote: "no cell passes every gate", ScalingNote: "scaling needs at least two diagonal cells",
			Cells:    []CellResult{{Slots: 1, Clients: 1}},
			Selected: &Selection{Slots: 1, Clients: 1, GenerationRate: 50}, Scaling: &ScalingResult{Scaling: analysis.Scaling{KneeRule: 0.1}},
			BenchTG: fp(64), ServingTaxNote: "no single-stream rate"},
		{ID: "c", SelectionNote: "no cell passes every gate", ScalingNote: "scaling needs at least two diagonal cells (clients = slots) with a rate; have 1"},
	}}
	for _, tc := range []struct {
		s       Selector
		v       float64
		source  string
		problem string
	}{
		{Selector{Figure: FigureCellRate, Candidate: "a", Slots: ip(2), Clients: ip(2)}, 100, "a P2/C2", ""},
		{Selector{Figure: FigureCellRate, Candidate: "a", Slots: ip(2)}, 100, "a P2/C2", ""}, // clients = slots
		{Selector{Figure: FigurePerStreamRate, Candidate: "a", Slots: ip(1), Clients: ip(1)}, 58, "a P1/C1", ""},
		{Selector{Figure: FigureTTFTP95, Candidate: "a", Slots: ip(1), Clients: ip(1)}, 90, "a P1/C1", ""},
		{Selector{Figure: FigureE2EP95, Candidate: "a", Slots: ip(1), Clients: ip(1)}, 900, "a P1/C1", ""},
		{Selector{Figure: FigureE2EP95, Candidate: "a", Slots: ip(2), Clients: ip(2)}, 0, "", "a P2/C2 has no e2e_p95_ms (no completed request)"},
		{Selector{Figure: FigureCellRate, Candidate: "a", Slots: ip(2), Clients: ip(1)}, 0, "", "a P2/C1 is not a cell of the result"},
		{sel(FigureSelectedRate, "a"), 100, "a P2/C2 (selected)", ""},
		{sel(FigureSelectedSlots, "a"), 2, "a P2/C2 (selected)", ""},
		{sel(FigureSelectedClients, "a"), 2, "a P2/C2 (selected)", ""},
		{sel(FigureSelectedGain, "a"), 2.0 / 3, "a P2/C2 (selected)", ""},
		{sel(FigureSelectedGain, "b"), 0, "", "b: the base cell P1/C1 has no rate"},
		{sel(FigureSelectedRate, "c"), 0, "", "c has no selected point: no cell passes every gate"},
		{sel(FigureSpeedup, "a"), 5.0 / 3, "a diagonal", ""},
		{sel(FigureKnee, "a"), 2, "a diagonal", ""},
		{sel(FigureKnee, "b"), 0, "", "b: no knee within the measured slot counts (every gain >= 0.1)"},
		{sel(FigureTTFTGrowth, "a"), 1.5, "a diagonal", ""},
		{sel(FigureTTFTGrowth, "b"), 0, "", "b: TTFT growth undefined (a diagonal end has no TTFT)"},
		{Selector{Figure: FigureGainPerDoubling, Candidate: "a", Slots: ip(2)}, 2.0 / 3, "a P1/C1 -> P2/C2", ""},
		{Selector{Figure: FigureGainPerDoubling, Candidate: "a", Slots: ip(4)}, 0, "", "a: no diagonal step to P4 with a rate"},
		{sel(FigureSpeedup, "c"), 0, "", "c: scaling needs at least two diagonal cells (clients = slots) with a rate; have 1"},
		{sel(FigureServingTax, "a"), 0.09375, "a P1/C1 per-stream vs bench tg 64", ""},
		{sel(FigureServingTax, "b"), 0, "", "b: no single-stream rate"},
		{sel(FigureServingTax, "c"), 0, "", "c: no llama-bench tg given (--bench-tg c=T)"},
		{sel(FigureCellRate, "z"), 0, "", `candidate "z" is not in the result`},
		{sel("rate", "a"), 0, "", `figure "rate" is not known`},
	} {
		v, src, problem := value(tc.s, r)
		want := []string{tc.source}
		if tc.source == "" {
			want = nil
		}
		if v != tc.v || problem != tc.problem || !slices.Equal(src, want) {
			t.Errorf("%s: %v from %q, problem %q; want %v from %q, problem %q", tc.s, v, src, problem, tc.v, tc.source, tc.problem)
		}
	}
}

// TestPredictionExpectationAndSelectorText: a comparison's expectation names the right-hand
// selector in capacity words with the tolerance in percent.
func TestPredictionExpectationAndSelectorText(t *testing.T) {
	than := &Selector{Figure: FigureCellRate, Candidate: "b", Slots: ip(2), Clients: ip(1)}
	for _, tc := range []struct {
		pr   Prediction
		want string
	}{
		{Prediction{Kind: study.KindComparison, Op: "within", Than: than, Tolerance: 0.05}, "within 5% of cell_rate of b P2/C1"},
		{Prediction{Kind: study.KindComparison, Op: ">", Than: than, Tolerance: 0.02}, "> cell_rate of b P2/C1 (tolerance 2%)"},
		{Prediction{Kind: study.KindComparison, Op: "<", Than: &Selector{Figure: FigureCellRate, Candidate: "b", Slots: ip(2)}, Tolerance: 0.5}, "< cell_rate of b P2 (tolerance 50%)"},
		{Prediction{Kind: study.KindComparison, Op: "<", Than: &Selector{Figure: FigureSpeedup, Candidate: "b", Clients: ip(2)}}, "< speedup of b (tolerance 0%)"},
	} {
		if got := expectation(tc.pr); got != tc.want {
			t.Errorf("expectation %q, want %q", got, tc.want)
		}
	}
}

// TestComparisonWithAnUnreadableRightSide: a comparison whose right-hand selector reads no
// number is unresolvable, naming why; its expectation is still written.
func TestComparisonWithAnUnreadableRightSide(t *testing.T) {
	r := &Result{Candidates: []CandidateResult{{ID: "a", Cells: []CellResult{{Slots: 1, Clients: 1, GenerationRate: fp(60)}}}}}
	about := Selector{Figure: FigureCellRate, Candidate: "a", Slots: ip(1), Clients: ip(1)}
	pr := Prediction{ID: "C", Kind: study.KindComparison, About: about, Op: "within", Tolerance: 0.1,
		Than: &Selector{Figure: FigureCellRate, Candidate: "a", Slots: ip(2), Clients: ip(2)}}
	v := evaluate(pr, r)
	if v.Outcome != study.Unresolvable || v.Problem != "a P2/C2 is not a cell of the result" || v.Expected != "within 10% of cell_rate of a P2/C2" {
		t.Errorf("verdict %+v", v)
	}
	pr.Than = &about
	if v := evaluate(pr, r); v.Outcome != study.Holds || len(v.Sources) != 2 || v.Sources[0] != "a P1/C1" {
		t.Errorf("a cell against itself: %+v", v)
	}
}
