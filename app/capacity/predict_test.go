package capacity

import (
	"strings"
	"testing"

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
