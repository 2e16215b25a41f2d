package study

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"sparkbench/runner/benchfmt"
)

func row(leg, model string, depth, np, ng int64, ts float64) ResultRow {
	return ResultRow{Leg: leg, Model: model, Ref: fmt.Sprintf("%s %s d%d", leg, map[bool]string{true: "pp", false: "tg"}[ng == 0], depth),
		Result: benchfmt.Result{NPrompt: np, NGen: ng, NDepth: depth, AvgTs: ts, StddevTs: ts / 100,
			NUbatch: 512, NBatch: 2048, FlashAttn: -1, TypeK: "f16", TypeV: "f16", NThreads: 1, NGPULayers: -1}}
}

func fixture(t *testing.T) *Results {
	p := loadValid(t)
	_, models := Validate(p, ValidateOptions{PlanDir: "testdata"})
	res := &Results{Plan: p, Models: models, BandwidthGBs: p.Bandwidth.GBs, Finished: map[string]bool{}}
	tg := map[string][]float64{"tiny": {9000, 6000, 4000}, "moe": {8000, 7000, 6000}}
	for _, m := range []string{"tiny", "moe"} {
		for i, d := range []int64{0, 128, 256} {
			leg := fmt.Sprintf("%s/d%d", m, d)
			res.Rows = append(res.Rows, row(leg, m, d, 64, 0, 30000), row(leg, m, d, 0, 32, tg[m][i]))
			res.Finished[leg] = true
		}
	}
	res.Rows = append(res.Rows, row("tiny/d0#start", "tiny", 0, 0, 32, 9450), row("tiny/d0#end", "tiny", 0, 0, 32, 8550))
	res.Finished["tiny/d0#start"], res.Finished["tiny/d0#end"] = true, true
	return res
}

func TestResolveFigures(t *testing.T) {
	res := fixture(t)
	d0, d256 := 0, 256
	cases := []struct {
		sel  Selector
		want float64
		srcs int
	}{
		{Selector{Figure: FigureCell, Model: "tiny", Test: "tg", Depth: &d0}, 9000, 1},
		{Selector{Figure: FigureCell, Model: "tiny", Test: "pp64", Depth: &d256}, 30000, 1},
		{Selector{Figure: FigureCV, Model: "tiny", Test: "tg32", Depth: &d0}, 0.01, 1},
		{Selector{Figure: FigureCrossing, Model: "tiny", Test: "tg", Line: 5000}, 128 + 1000.0/2000*128, 3},
		{Selector{Figure: FigureSlope, Model: "moe", Test: "tg", Depth: &d256}, -0.25, 3},
		// repeats 9450 and 8550 around 9000: sd 450, CV 0.05
		{Selector{Figure: FigureRepeatabilityCV, Test: "tg"}, 0.05, 3},
		{Selector{Figure: FigureContamination, Test: "tg", Legs: []string{"tiny/d0#start", "tiny/d0", "tiny/d0#end"}}, 0, 3},
	}
	for _, c := range cases {
		v, err := res.Resolve(c.sel)
		if err != nil {
			t.Errorf("%s: %v", c.sel, err)
			continue
		}
		if math.Abs(v.X-c.want) > 1e-9 || len(v.Sources) != c.srcs {
			t.Errorf("%s = %v (sources %v), want %v from %d rows", c.sel, v.X, v.Sources, c.want, c.srcs)
		}
	}
	// Ceiling and efficiency from the tiny model's tensor table at the plan's 20 GB/s.
	c, err := res.Resolve(Selector{Figure: FigureCeiling, Model: "tiny", Conv: "tensor_exact"})
	want := 20e9 / float64(res.Models["tiny"].Header.ActiveBytesPerToken())
	if err != nil || math.Abs(c.X-want) > 1e-6 {
		t.Fatalf("ceiling = %v %v, want %v", c.X, err, want)
	}
	e, err := res.Resolve(Selector{Figure: FigureEfficiency, Model: "tiny", Conv: "tensor_exact", Depth: &d0})
	if err != nil || math.Abs(e.X-9000/want) > 1e-9 {
		t.Fatalf("efficiency = %v %v", e.X, err)
	}
	// Never below the line within range: +Inf, and the verdict carries no number.
	v, _ := res.Resolve(Selector{Figure: FigureCrossing, Model: "moe", Test: "tg", Line: 1000})
	if !math.IsInf(v.X, 1) || !strings.Contains(v.Detail, "does not fall below 1000") {
		t.Errorf("not reached: %+v", v)
	}
}

func TestEvaluatePendingUnresolvableAmbiguous(t *testing.T) {
	res := fixture(t)
	p := res.Plan.Predictions
	vd := res.Evaluate(p[0]) // band lo 1000 on tiny tg d0 = 9000
	if vd.Outcome != Hit || len(vd.Sources) != 1 || vd.Sources[0] != "tiny/d0 tg d0" {
		t.Fatalf("P1: %+v", vd)
	}
	vd = res.Evaluate(p[2]) // comparison tiny tg32 d256 (4000) >= moe (6000) within 2%
	if vd.Outcome != Fails || len(vd.Sources) != 2 {
		t.Fatalf("P3: %+v", vd)
	}
	vd = res.Evaluate(p[3]) // question: crossing of 5000
	if vd.Outcome != Answered || math.Abs(*vd.Value-192) > 1e-9 {
		t.Fatalf("P4: %+v", vd)
	}

	// A leg that has not run yet: PENDING.
	res.Finished["moe/d256"] = false
	res.Rows = res.Rows[:len(res.Rows)-4] // drop moe/d256 rows and the repeats
	res.Rows = append(res.Rows, row("tiny/d0#start", "tiny", 0, 0, 32, 9450), row("tiny/d0#end", "tiny", 0, 0, 32, 8550))
	if vd = res.Evaluate(p[1]); vd.Outcome != Pending || !strings.Contains(vd.Problem, "moe/d256") {
		t.Fatalf("pending: %+v", vd)
	}
	// It ran and crashed without rows: UNRESOLVABLE, saying so.
	res.Finished["moe/d256"] = true
	if vd = res.Evaluate(p[1]); vd.Outcome != Unresolvable || !strings.Contains(vd.Problem, "ended without one") {
		t.Fatalf("unresolvable: %+v", vd)
	}
	// Two configurations in one cell: the selector must narrow it.
	extra := row("tiny/d0", "tiny", 0, 0, 32, 8000)
	extra.Result.NUbatch = 256
	extra.Ref = "tiny/d0 tg ub256"
	res.Rows = append(res.Rows, extra)
	_, err := res.Resolve(p[0].About)
	if !errors.Is(err, ErrUnresolvable) || !strings.Contains(err.Error(), "matches 2 rows") {
		t.Fatalf("ambiguous: %v", err)
	}
	ub := 256
	sel := p[0].About
	sel.Config = &ConfigSel{Ubatch: &ub}
	if v, err := res.Resolve(sel); err != nil || v.X != 8000 {
		t.Fatalf("narrowed: %v %v", v, err)
	}
}

func TestTouches(t *testing.T) {
	p := loadValid(t)
	legs, _ := Expand(p, "")
	d128 := 128
	got := strings.Join(Touches(Selector{Figure: FigureCell, Model: "moe", Depth: &d128}, legs), " ")
	if got != "moe/d128" {
		t.Errorf("cell touches %q", got)
	}
	got = strings.Join(Touches(Selector{Figure: FigureCrossing, Model: "tiny"}, legs), " ")
	if got != "tiny/d0 tiny/d128 tiny/d256" {
		t.Errorf("crossing touches %q", got)
	}
	got = strings.Join(Touches(Selector{Figure: FigureRepeatabilityCV}, legs), " ")
	if got != "tiny/d0#start tiny/d0 tiny/d0#end" {
		t.Errorf("repeatability touches %q", got)
	}
	if len(Touches(Selector{Figure: FigureCeiling, Model: "tiny"}, legs)) != 0 {
		t.Error("a ceiling reads no leg")
	}
}
