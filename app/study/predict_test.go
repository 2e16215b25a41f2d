package study

import (
	"reflect"
	"strings"
	"testing"
)

func iptr(v int) *int { return &v }

func TestSelectorString(t *testing.T) {
	cases := []struct {
		s    Selector
		want string
	}{
		{Selector{Figure: FigureCell}, "cell"},
		{Selector{Figure: FigureCell, Model: "m", Test: "tg32", Depth: iptr(0)}, "cell tg32 @ d0 of m"},
		{Selector{Figure: FigureCrossing, Test: "tg", Line: 70, Model: "m"}, "crossing_depth tg below 70 of m"},
		{Selector{Figure: FigureCeiling, Model: "m", Conv: "house"}, "ceiling of m (house)"},
		{Selector{Figure: FigureContamination, Test: "tg", Legs: []string{"a", "b", "c"}}, "contamination_delta tg legs a,b,c"},
		{Selector{Figure: FigureDeviceRatio, Device: "RPC0", BaseDevice: "none"}, "device_ratio RPC0 / none"},
		{Selector{Figure: FigureDeviceRatio, Device: "RPC0"}, "device_ratio RPC0 / "},
		{Selector{Figure: FigureDeviceRatio, BaseDevice: "none"}, "device_ratio  / none"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{}}, "cell"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{Ubatch: iptr(256), Batch: iptr(1024), FlashAttn: "on", KV: &KVType{K: "q8_0", V: "f16"},
			Threads: iptr(4), Devices: "Vulkan0", NGL: iptr(99)}}, "cell [ub256 b1024 fa-on kv-q8_0/f16 t4 dev-Vulkan0 ngl99]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{Batch: iptr(1024)}}, "cell [b1024]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{FlashAttn: "off"}}, "cell [fa-off]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{KV: &KVType{K: "f16", V: "f16"}}}, "cell [kv-f16/f16]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{Threads: iptr(1)}}, "cell [t1]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{Devices: "none"}}, "cell [dev-none]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{NGL: iptr(0)}}, "cell [ngl0]"},
		{Selector{Figure: FigureCell, Config: &ConfigSel{Ubatch: iptr(512)}}, "cell [ub512]"},
	}
	for _, c := range cases {
		if got := c.s.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestExpectationRanges(t *testing.T) {
	lo, hi := 10.0, 20.0
	cases := []struct {
		p    Prediction
		want string
	}{
		{Prediction{Kind: KindBand, Lo: &lo, Hi: &hi}, "10–20"},
		{Prediction{Kind: KindBand, Lo: &lo}, ">= 10"},
		{Prediction{Kind: KindBand, Hi: &hi}, "<= 20"},
		{Prediction{Kind: KindBand}, "any"},
		{Prediction{Kind: KindFork, Arms: []Arm{{Name: "a", Hi: &lo}, {Name: "b", Lo: &hi}}}, "a: <= 10; b: >= 20; otherwise inconclusive"},
	}
	for _, c := range cases {
		if got := c.p.Expectation(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestEvaluateComparisonBounds: each operator holds at its bound exactly and fails just past it.
func TestEvaluateComparisonBounds(t *testing.T) {
	cases := []struct {
		op      string
		tol     float64
		a, b    float64
		want    Outcome
		wantRel string
	}{
		{">=", 0.5, 50, 100, Holds, "-50.0%"},
		{">=", 0.5, 49.99, 100, Fails, "-50.0%"},
		{"<=", 0.5, 150, 100, Holds, "+50.0%"},
		{"<=", 0.5, 150.01, 100, Fails, "+50.0%"},
		{"<=", 0, 100, 100, Holds, "+0.0%"},
		{"<=", 0, 99, 100, Holds, "-1.0%"},
		{"within", 0.5, 150, 100, Holds, "+50.0%"},
		{"within", 0.5, 50, 100, Holds, "-50.0%"},
		{"within", 0.5, 150.01, 100, Fails, "+50.0%"},
		{"within", 0.5, 0, 0, Fails, "n/a"},
	}
	for _, c := range cases {
		vd := EvaluateComparison(Prediction{ID: "P", Kind: KindComparison, Op: c.op, Tolerance: c.tol}, c.a, c.b)
		if vd.Outcome != c.want || !strings.HasSuffix(vd.Detail, "("+c.wantRel+")") || *vd.Value != c.a || *vd.Other != c.b {
			t.Errorf("%g %s %g (tol %g): %s %q; want %s (%s)", c.a, c.op, c.b, c.tol, vd.Outcome, vd.Detail, c.want, c.wantRel)
		}
	}
}

// quantSel is a kind's own selector, for PredictionOf.
type quantSel struct{ Rung string }

func (q quantSel) String() string { return "rung " + q.Rung }

func TestPredictionOfExpectation(t *testing.T) {
	lo := 5.0
	than := quantSel{"q4"}
	cases := []struct {
		p    PredictionOf[quantSel]
		want string
	}{
		{PredictionOf[quantSel]{Kind: KindComparison, Op: "within", Than: &than, Tolerance: 0.05}, "within 5% of rung q4"},
		{PredictionOf[quantSel]{Kind: KindComparison, Op: ">=", Than: &than, Tolerance: 0.02}, ">= rung q4 (tolerance 2%)"},
		{PredictionOf[quantSel]{Kind: KindComparison, Op: ">=", Tolerance: 0.02}, ">= ? (tolerance 2%)"},
		{PredictionOf[quantSel]{Kind: KindBand, Lo: &lo, Than: &than}, ">= 5"},
	}
	for _, c := range cases {
		if got := c.p.Expectation(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestCheckPredictionsOf(t *testing.T) {
	lo := 5.0
	than := quantSel{"q4"}
	ps := []PredictionOf[quantSel]{
		{ID: "P1", Text: "a", Kind: KindComparison, About: quantSel{"q8"}, Op: ">=", Than: &than, Tolerance: 0.02},
		{ID: "P2", Text: "b", Kind: KindBand, About: quantSel{"f16"}, Lo: &lo, Than: &than},
		{ID: "P3", Text: "c", Kind: KindBand, About: quantSel{"q2"}, Lo: &lo, NoiseFloor: 0.01},
		{ID: "P4", Text: "d", Kind: KindBand, About: quantSel{"q3"}, Lo: &lo},
		{ID: "P5", Text: "e", Kind: KindQuestion, About: quantSel{"q5"}},
	}
	var checked []string
	check := func(at string, s quantSel) []Problem {
		checked = append(checked, at+"="+s.Rung)
		return nil
	}
	zero := func(i int) bool { return i != 3 }
	probs := CheckPredictionsOf(ps, check, zero)
	want := []string{"predictions[0].about=q8", "predictions[0].than=q4", "predictions[1].about=f16", "predictions[2].about=q2", "predictions[3].about=q3", "predictions[4].about=q5"}
	if !reflect.DeepEqual(checked, want) {
		t.Errorf("checked %q, want %q", checked, want)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	if !reflect.DeepEqual(got, []string{"error: predictions[1].noise_floor: 0: want a fraction in (0, 1), e.g. 0.001 for the narrowest edge; or leave the field out for the default 0.015"}) {
		t.Errorf("problems %q", got)
	}
	// Without zeroGiven, a 0 noise floor is the default; a comparison without than is refused by
	// the expectation check.
	checked = nil
	probs = CheckPredictionsOf([]PredictionOf[quantSel]{{ID: "P1", Text: "a", Kind: KindBand, About: quantSel{"q8"}, Lo: &lo},
		{ID: "P2", Text: "b", Kind: KindComparison, About: quantSel{"q8"}, Op: ">=", Tolerance: 0.02}}, check, nil)
	if !reflect.DeepEqual(checked, []string{"predictions[0].about=q8", "predictions[1].about=q8"}) || len(probs) != 1 || !strings.HasPrefix(probs[0].Path, "predictions[1]") {
		t.Errorf("checked %q problems %v", checked, probs)
	}
}

func TestEvaluateOf(t *testing.T) {
	lo, hi := 10.0, 20.0
	than := quantSel{"q4"}
	values := map[string]float64{"q8": 15, "q4": 14, "f16": 30}
	value := func(s quantSel) (float64, []string, string) {
		v, ok := values[s.Rung]
		if !ok {
			return 0, nil, "no rung " + s.Rung
		}
		return v, []string{"row " + s.Rung}, ""
	}
	cases := []struct {
		p       PredictionOf[quantSel]
		out     Outcome
		arm     string
		sources []string
		problem string
	}{
		{PredictionOf[quantSel]{ID: "B", Kind: KindBand, About: quantSel{"q8"}, Lo: &lo, Hi: &hi}, Hit, "", []string{"row q8"}, ""},
		{PredictionOf[quantSel]{ID: "B", Kind: KindBand, About: quantSel{"f16"}, Lo: &lo, Hi: &hi}, Miss, "", []string{"row f16"}, ""},
		{PredictionOf[quantSel]{ID: "F", Kind: KindFork, About: quantSel{"q8"}, Arms: []Arm{{Name: "low", Hi: &lo}, {Name: "mid", Lo: &lo, Hi: &hi}}}, Hit, "mid", []string{"row q8"}, ""},
		{PredictionOf[quantSel]{ID: "C", Kind: KindComparison, About: quantSel{"q8"}, Op: ">=", Than: &than}, Holds, "", []string{"row q8", "row q4"}, ""},
		{PredictionOf[quantSel]{ID: "C", Kind: KindComparison, About: quantSel{"q8"}, Op: "<=", Than: &than}, Fails, "", []string{"row q8", "row q4"}, ""},
		{PredictionOf[quantSel]{ID: "C", Kind: KindComparison, About: quantSel{"q8"}, Op: ">="}, Unresolvable, "", []string{}, "a comparison without its right-hand side (than)"},
		{PredictionOf[quantSel]{ID: "C", Kind: KindComparison, About: quantSel{"q8"}, Op: ">=", Than: &quantSel{"q1"}}, Unresolvable, "", []string{}, "no rung q1"},
		{PredictionOf[quantSel]{ID: "Q", Kind: KindQuestion, About: quantSel{"q8"}}, Answered, "", []string{"row q8"}, ""},
		{PredictionOf[quantSel]{ID: "Q", Kind: KindQuestion, About: quantSel{"q0"}}, Unresolvable, "", []string{}, "no rung q0"},
	}
	for _, c := range cases {
		vd := EvaluateOf(c.p, value)
		if vd.Outcome != c.out || vd.Arm != c.arm || !reflect.DeepEqual(vd.Sources, c.sources) || vd.Problem != c.problem ||
			vd.Expected != c.p.Expectation() || vd.Prediction != c.p.ID {
			t.Errorf("%s %s: %+v; want %s %q sources %q problem %q", c.p.ID, c.p.About, vd, c.out, c.arm, c.sources, c.problem)
		}
	}
}

func TestComparisonExpectation(t *testing.T) {
	d0 := 0
	than := &Selector{Figure: FigureCell, Model: "m", Test: "tg32", Depth: &d0}
	for _, c := range []struct {
		p    Prediction
		want string
	}{
		{Prediction{Kind: KindComparison, Op: "within", Than: than, Tolerance: 0.05}, "within 5% of cell tg32 @ d0 of m"},
		{Prediction{Kind: KindComparison, Op: "within", Than: than, Tolerance: 0.05, Stats: StatsBenchmath}, "within 5% of cell tg32 @ d0 of m, judged on the repetitions (benchmath)"},
		{Prediction{Kind: KindComparison, Op: ">=", Than: than, Tolerance: 0.02}, ">= cell tg32 @ d0 of m (tolerance 2%)"},
		{Prediction{Kind: KindComparison, Op: "<=", Than: than, Tolerance: 0.02, Stats: StatsBenchmath}, "<= cell tg32 @ d0 of m (tolerance 2%, judged on the repetitions (benchmath))"},
		{Prediction{Kind: KindComparison, Op: ">="}, ">= ? (tolerance 0%)"},
		{Prediction{Kind: KindQuestion}, "question (no expectation)"},
		{Prediction{}, ""},
	} {
		if got := c.p.Expectation(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
