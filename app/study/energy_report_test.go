package study

import (
	"math"
	"strings"
	"testing"
	"time"

	"sparkbench/app/energy"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/telemetry"
)

// handLeg is one leg's samples worked by hand: the GPU draws 100 W until 1 s, ramps to 300 W
// at 1.5 s and holds it until 2 s; the pp64 row arrives at 1 s, the tg32 row at 2 s (the end).
func handLeg() ([]telemetry.Sample, []benchfmt.Result) {
	p := func(t time.Duration, w float64) telemetry.Sample {
		return telemetry.Sample{Source: "nvml", T: t, Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: w}}}
	}
	mark := func(t time.Duration, metric string, v float64) telemetry.Sample {
		return telemetry.Sample{Source: telemetry.SourceMark, T: t, Points: []telemetry.Point{{Device: "leg", Metric: metric, Value: v}}}
	}
	s := []telemetry.Sample{p(0, 100), p(time.Second, 100), p(1500*time.Millisecond, 300), p(2*time.Second, 300),
		mark(time.Second, telemetry.MarkRow, 0), mark(2*time.Second, telemetry.MarkRow, 1), mark(2*time.Second, telemetry.MarkEnd, 1)}
	rows := []benchfmt.Result{
		{NPrompt: 64, SamplesNs: []int64{250e6, 250e6}}, // 0.5 s of llama-bench's own test time
		{NGen: 32, SamplesNs: []int64{400e6, 400e6}}}    // 0.8 s
	return s, rows
}

// Worked by hand: the leg's energy is 100 J (first second) + 250 J (1 to 1.5 s: the trapezoid
// (100+300)/2 × 0.5 = 100 J, then 300 W × 0.5 s = 150 J) = 350 J over 2 s. The pp64 row's
// window is 0-1 s at 100 W: 100 W × 0.5 s / (64 tokens × 2 reps) = 0.390625 J per prompt
// token. The tg32 row's window is 1-2 s at a mean 250 W: 250 W × 0.8 s / (32 × 2) = 3.125 J
// per generated token, 0.32 tokens per J. A band "at most 3 J per generated token" misses by
// +4.2%; tokens_per_j reads 0.32; a cell whose leg was not sampled is unresolvable.
func TestEnergyPredictionsWorkedByHand(t *testing.T) {
	samples, rows := handLeg()
	f, ok := LegEnergy(samples, rows)
	if !ok || f.EnergyJ != 350 || f.Seconds != 2 || f.Method != energy.MethodIntegrated || len(f.Rows) != 2 {
		t.Fatalf("leg figures %+v %v", f, ok)
	}
	if f.Rows[0].JPerToken != 0.390625 || f.Rows[0].Kind != "pp" || f.Rows[1].JPerToken != 3.125 || f.Rows[1].MeanW != 250 ||
		f.Rows[1].TokensPerJ != 0.32 {
		t.Fatalf("rows %+v", f.Rows)
	}
	res := fixture(t)
	res.Energy = map[string]energy.RowFigures{}
	for _, r := range res.Rows {
		if r.Leg == "tiny/d0" {
			res.Energy[r.Ref] = f.Rows[map[bool]int{true: 0, false: 1}[r.Result.NGen == 0]]
		}
	}
	d0 := 0
	hi := 3.0
	p := Prediction{ID: "E1", Kind: KindBand, About: Selector{Figure: FigureJPerToken, Model: "tiny", Test: "tg", Depth: &d0}, Hi: &hi}
	v := res.Evaluate(p)
	if v.Outcome != Miss || v.Value == nil || *v.Value != 3.125 || v.Distance == nil || math.Abs(*v.Distance-0.125/3) > 1e-12 ||
		v.Word() != "MISS +4.2%" || !strings.Contains(v.Detail, "3.125 J/token, 0.32 tokens/J at 250.0 W mean") {
		t.Fatalf("E1: %+v %s", v, v.Word())
	}
	tpj, err := res.Resolve(Selector{Figure: FigureTokensPerJ, Model: "tiny", Test: "pp64", Depth: &d0})
	if err != nil || tpj.X != 2.56 {
		t.Fatalf("tokens_per_j pp64: %+v %v", tpj, err)
	}
	_, err = res.Resolve(Selector{Figure: FigureJPerToken, Model: "moe", Test: "tg", Depth: &d0})
	if err == nil || !strings.Contains(err.Error(), "has no energy figure") {
		t.Fatalf("a cell without samples: %v", err)
	}
}

// A prediction on an energy figure needs the plan's telemetry block, a model, a test and a
// measured depth, as a cell does.
func TestEnergyPredictionValidation(t *testing.T) {
	p := loadValid(t)
	d := 7
	p.Predictions = append(p.Predictions, Prediction{ID: "E1", Text: "energy", Kind: KindQuestion,
		About: Selector{Figure: FigureJPerToken, Model: "tiny", Test: "tg", Depth: &d}})
	at := func(probs []Problem) string {
		var out []string
		for _, pr := range Errors(probs) {
			out = append(out, pr.Path+": "+pr.Msg)
		}
		return strings.Join(out, "\n")
	}
	probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata", Hash: sha256File})
	got := at(probs)
	for _, want := range []string{"j_per_token needs the plan's telemetry block", "about.depth: 7 is not a measured depth"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	p.Telemetry = &energy.Plan{}
	*p.Predictions[len(p.Predictions)-1].About.Depth = 0
	if probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata", Hash: sha256File}); at(probs) != "" {
		t.Fatalf("with the block: %s", at(probs))
	}
}
