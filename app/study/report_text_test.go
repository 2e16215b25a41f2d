package study

import (
	"bytes"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/runner/benchfmt"
)

// study show's text says why each leg that did not end ok ended (the gate's code and message),
// as --json does: a leg the device gate flagged names device:not_used; an ok leg and a pending
// one are not listed.
func TestShowTextSaysWhyLegsEnded(t *testing.T) {
	why := "tg16: device:not_used: row ran on the CPU (gpu_info \"\", n_gpu_layers 99)"
	r := &Report{Study: ReportStudy{ID: 1, Name: "s", Status: StatusComplete}, Legs: []ReportLeg{
		{ID: 1, Label: "tiny/d0", PlanLeg: "tiny/d0", Role: RoleLeg, State: "finished", Class: "flagged", Reason: why, Rows: 2, Results: 1, Flagged: 1},
		{ID: 2, Label: "tiny/d32", PlanLeg: "tiny/d32", Role: RoleLeg, State: "finished", Class: "ok", Rows: 2, Results: 2},
		{Label: "tiny/d64", PlanLeg: "tiny/d64", Role: RoleLeg, State: "pending"},
	}}
	var b bytes.Buffer
	WriteReport(&b, r)
	text := b.String()
	if !strings.Contains(text, "why legs ended otherwise than ok\n  tiny/d0: flagged: "+why+"\n") {
		t.Fatalf("show text does not say why tiny/d0 ended:\n%s", text)
	}
	if strings.Contains(text, "tiny/d32: ok") || strings.Contains(text, "tiny/d64: ") {
		t.Errorf("an ok or pending leg is listed as ended otherwise:\n%s", text)
	}
}

// TestShowStatesTheUnit (issue 31, item 7): show's results say what their ± is at the
// process level (the spread within one llama-bench process, or of an adaptive cell's
// processes together, never the spread between processes), state the model in one line, and
// give each cell's n and m with its interval over processes, or none from one process.
func TestShowStatesTheUnit(t *testing.T) {
	fixedPlan := &Plan{}
	cellOf := func(p *Plan, depth int64, samples []float64, chunks []int) ReportCell {
		row := ResultRow{Leg: "m/d", Ref: "leg 1 seq 0", Model: "m", Chunks: chunks,
			Result: benchfmt.Result{NGen: 16, NDepth: depth, SamplesTs: samples, AvgTs: analysis.Summarize(samples).Mean, StddevTs: analysis.Summarize(samples).SD}}
		return reportCells(p, &Results{Rows: []ResultRow{row}})[0]
	}
	fixed := &Report{Results: []ReportCell{cellOf(fixedPlan, 0, []float64{20, 20.1, 19.9}, nil), cellOf(fixedPlan, 256, []float64{18, 18.1, 17.9}, nil)}}
	var b strings.Builder
	writeResults(&b, fixed)
	for _, want := range []string{
		"the unit is the llama-bench process: each cell above is one process of 3 repetitions, and ± is the spread within it,\nnot between processes",
		"processes: one process of 3 repetitions per cell: point estimates, no intervals; within-process spread 0.53% (median over 2 cells); the spread between processes is not measured\n",
		"m tg16 d0    20.00 t/s  n=1 m=3, a point estimate (one process: no interval)  within 0.50%",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("fixed cells: want %q in:\n%s", want, b.String())
		}
	}
	adaptivePlan := &Plan{Adaptive: &Adaptive{Unit: UnitProcess}}
	chunked := &Report{Results: []ReportCell{
		cellOf(adaptivePlan, 0, []float64{20, 20.1, 19.9, 20.4, 20.5, 20.3, 19.6, 19.7, 19.5}, []int{3, 3, 3}),
		cellOf(adaptivePlan, 256, []float64{18, 18.1, 17.9, 18.2, 18.3, 18.1}, []int{3, 3})}}
	b.Reset()
	writeResults(&b, chunked)
	for _, want := range []string{
		"each cell above ran as 2–3 processes (its chunks), 6–9 repetitions in all, and ± is\nthe spread of those repetitions together",
		"processes: 95% intervals over 2–3 processes of 3 repetitions (one degree of freedom charged for the adaptive stop); between-process spread 1.35%, within 0.53% (median over 2 cells)\n",
		"between 1.98%, within 0.50%\n",
		"m tg16 d0    20.00 t/s  n=3 m=3, 95% CI ±14.67% [17.07, 22.93]   ",
		"m tg16 d256  18.10 t/s  n=2 m=3, no interval (2 processes after an adaptive stop: it needs 3)  between 0.71%, within 0.55%",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("adaptive cells: want %q in:\n%s", want, b.String())
		}
	}
	if u := chunked.Results[0].Unit; u == nil || u.N != 3 || u.M != "3" || u.Lo == nil || !u.Stopped || u.BetweenCV == nil {
		t.Errorf("the --json cell: %+v", u)
	}
	if u := fixed.Results[0].Unit; u == nil || u.N != 1 || u.Lo != nil || u.Hi != nil || u.BetweenCV != nil {
		t.Errorf("one process has no interval and no between-process spread in --json: %+v", u)
	}
}

// A band or fork verdict about a cell is read at the process level (issue 31, item 1): the
// same across the cell's interval over processes (resolved), or not, naming the verdict at
// each end; a cell of one process has no interval and the words say the verdict rests on one
// value. Other predictions get none.
func TestScoreProcesses(t *testing.T) {
	lo := 20.0
	band := Prediction{ID: "P1", Kind: KindBand, About: Selector{Figure: FigureCell}, Lo: &lo, NoiseFloor: 0.015}
	cell := func(n int, mean, l, h float64) []ReportCell {
		u := &CellUnit{N: n, M: "3", Mean: mean}
		if n > 1 {
			u.Lo, u.Hi = &l, &h
		}
		return []ReportCell{{Source: "leg 1 seq 0", Unit: u}}
	}
	verdict := func(p Prediction, x float64) Verdict {
		v := EvaluateBand(p, x)
		v.Sources = []string{"leg 1 seq 0"}
		return v
	}
	sp := scoreProcesses(band, verdict(band, 25), cell(5, 25, 22, 28))
	if sp == nil || sp.Resolved == nil || !*sp.Resolved || !strings.Contains(sp.Words, "n=5 m=3, 95% interval over processes [22.00, 28.00]: the verdict is the same across it") {
		t.Errorf("inside: %+v", sp)
	}
	sp = scoreProcesses(band, verdict(band, 25), cell(5, 25, 15, 35))
	if sp == nil || sp.Resolved == nil || *sp.Resolved || !strings.Contains(sp.Words, "NOT RESOLVED, the verdict would be MISS at its low end and HIT at its high end") {
		t.Errorf("straddling: %+v", sp)
	}
	sp = scoreProcesses(band, verdict(band, 25), cell(1, 25, 0, 0))
	if sp == nil || sp.Resolved != nil || !strings.Contains(sp.Words, "n=1 m=3, no interval over processes (a point estimate): the verdict rests on one value") {
		t.Errorf("one process: %+v", sp)
	}
	fork := Prediction{ID: "F1", Kind: KindFork, About: Selector{Figure: FigureCell}, Arms: []Arm{{Name: "slow", Hi: &lo}, {Name: "fast", Lo: &lo}}}
	fv := EvaluateFork(fork, 25)
	fv.Sources = []string{"leg 1 seq 0"}
	if sp := scoreProcesses(fork, fv, cell(4, 25, 18, 30)); sp == nil || *sp.Resolved || !strings.Contains(sp.Words, `HIT slow at its low end and HIT fast at its high end`) {
		t.Errorf("fork: %+v", sp)
	}
	q := Prediction{ID: "Q1", Kind: KindQuestion, About: Selector{Figure: FigureCell}}
	if sp := scoreProcesses(q, verdict(band, 25), cell(5, 25, 22, 28)); sp != nil {
		t.Errorf("a question: %+v", sp)
	}
	var b strings.Builder
	writeScoreboard(&b, &Report{Scoreboard: []ReportScore{{Prediction: "P1", Processes: scoreProcesses(band, verdict(band, 25), cell(5, 25, 15, 35))}}})
	if !strings.Contains(b.String(), "  P1 at the process level: n=5 m=3") {
		t.Errorf("show:\n%s", b.String())
	}
}
