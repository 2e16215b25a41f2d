package quant

import (
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// TestPredictionsAreChecked: every selector is checked against the plan with its JSON path.
func TestPredictionsAreChecked(t *testing.T) {
	opts := ValidateOptions{Types: []string{"Q4_0", "Q8_0", "Q4_K_M"}, ReferenceRead: true, ReferenceFileType: "MOSTLY_F16", CorpusTokens: 10000}
	cases := []struct {
		pred Prediction
		want string
	}{
		{Prediction{ID: "P1", Text: "a", Kind: study.KindBand, About: Selector{Figure: "speedy", Candidate: "Q4_0"}, Hi: f(1)},
			`predictions[0].about.figure: "speedy": want one of speed, kld_mean,`},
		{Prediction{ID: "P1", Text: "a", Kind: study.KindBand, About: Selector{Figure: FigureKLDMean, Candidate: "Q2_K"}, Hi: f(1)},
			`predictions[0].about.candidate: "Q2_K": want a candidate of this plan (Q8_0, Q4_K_M, Q4_0), "selected" or "runner_up"`},
		{Prediction{ID: "P1", Text: "a", Kind: study.KindBand, About: Selector{Figure: FigureSpeed, Candidate: "Q4_0"}, Lo: f(1)},
			"predictions[0].about.at: missing; a speed figure names TEST@DEPTH, e.g. tg@0"},
		{Prediction{ID: "P1", Text: "a", Kind: study.KindBand, About: Selector{Figure: FigureSpeed, Candidate: "Q4_0", At: "tg@4096"}, Lo: f(1)},
			"predictions[0].about.at: tg@4096: depth 4096 is not among speed.depths [0 512]"},
		{Prediction{ID: "P1", Text: "a", Kind: study.KindBand, About: Selector{Figure: FigureFileMiB, Candidate: "Q4_0", At: "tg@0"}, Lo: f(1)},
			"predictions[0].about.at: only a speed figure takes at"},
		{Prediction{ID: "P1", Text: "a", Kind: study.KindComparison, About: Selector{Figure: FigureKLDMean, Candidate: "Q4_0"}, Op: ">=",
			Than: &Selector{Figure: FigureKLDMean, Candidate: "Q9"}}, `predictions[0].than.candidate: "Q9"`},
		{Prediction{ID: "P1", Text: "a", Kind: study.KindBand, About: Selector{Figure: FigureKLDMean, Candidate: "Q4_0"}},
			"predictions[0]: a band needs lo and/or hi"},
	}
	for _, c := range cases {
		p := goodPlan()
		p.Predictions = []Prediction{c.pred}
		errs := errorsOf(Validate(p, opts))
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, c.want) }) {
			t.Errorf("want %q among %v", c.want, errs)
		}
	}
	p := goodPlan()
	p.Predictions = []Prediction{{ID: "P1", Text: "fast", Kind: study.KindBand, About: Selector{Figure: FigureSpeed, Candidate: CandidateSelected, At: "tg@512"}, Lo: f(100)}}
	if errs := errorsOf(Validate(p, opts)); len(errs) > 0 {
		t.Fatalf("a good prediction: %v", errs)
	}
}

// TestPredictionVerdicts: the verdicts, worked by hand from two records. The rule (mean KLD <=
// 0.01, maximise tg@512) selects Q4_0 (151 t/s) over Q8_0 (100 t/s). P1: the selected
// candidate's tg@512 in [140, 160]: 151, HIT. P2: Q4_0's mean KLD at most 0.003: 0.0031 is
// 3.3% above, past the 1.5% noise floor: MISS. P3: Q4_0's tg@0 >= 1.4 x Q8_0's... as a
// comparison, Q4_0 tg@0 (300) >= Q8_0 tg@0 (200): HOLDS, read from both legs. P4: the
// runner-up's file size, a question: 27 MiB. P5: Q4_K_M's KLD, never measured: UNRESOLVABLE.
// These are the rules of a bundle written before they were recorded (RulesSelectOverIncomplete):
// under the current ones the ladder is incomplete and P1, P4 and P5 wait
// (TestIncompleteLadderSelectsNothing).
func TestPredictionVerdicts(t *testing.T) {
	p := goodPlan()
	p.Predictions = []Prediction{
		{ID: "P1", Text: "the pick runs at 140-160", Kind: study.KindBand, About: Selector{Figure: FigureSpeed, Candidate: CandidateSelected, At: "tg@512"}, Lo: f(140), Hi: f(160)},
		{ID: "P2", Text: "Q4_0 stays under 0.003", Kind: study.KindBand, About: Selector{Figure: FigureKLDMean, Candidate: "Q4_0"}, Hi: f(0.003)},
		{ID: "P3", Text: "Q4_0 is faster at d0", Kind: study.KindComparison, About: Selector{Figure: FigureSpeed, Candidate: "Q4_0", At: "tg@0"}, Op: ">=",
			Than: &Selector{Figure: FigureSpeed, Candidate: "Q8_0", At: "tg@0"}},
		{ID: "P4", Text: "how big is the runner-up", Kind: study.KindQuestion, About: Selector{Figure: FigureFileMiB, Candidate: CandidateRunnerUp}},
		{ID: "P5", Text: "Q4_K_M's KLD", Kind: study.KindBand, About: Selector{Figure: FigureKLDMean, Candidate: "Q4_K_M"}, Hi: f(1)},
	}
	rec := func(typ string, tg0, tg512, kld float64, mib int64) Record {
		return Record{Type: typ, File: typ + ".gguf", SHA256: strings.Repeat("b", 64), Bytes: mib << 20,
			Bench: []BenchCell{{Test: "tg", Depth: 0, Mean: tg0, N: 3, Leg: typ + "/d0", Row: 1}, {Test: "tg", Depth: 512, Mean: tg512, N: 3, Leg: typ + "/d512", Row: 1}},
			KLD:   &KLD{Mean: kld, P99: 5 * kld, SameTopP: 0.97, PPLRatio: 1.002}, KLDLeg: "kld/" + typ, KLDLines: []int{40}}
	}
	res, err := AssembleRules(p, "plan-sha", []Record{rec("Q4_0", 300, 151, 0.0031, 14), rec("Q8_0", 200, 100, 0.0005, 27)}, RulesSelectOverIncomplete)
	if err != nil {
		t.Fatal(err)
	}
	want := []study.Outcome{study.Hit, study.Miss, study.Holds, study.Answered, study.Unresolvable}
	for i, v := range res.Verdicts {
		if v.Outcome != want[i] {
			t.Errorf("%s: %s (%s), want %s", v.Prediction, v.Outcome, v.Detail, want[i])
		}
	}
	if v := res.Verdicts[0]; *v.Value != 151 || !slices.Equal(v.Sources, []string{"Q4_0 (selected) tg@512: leg Q4_0/d512 row 1"}) {
		t.Errorf("P1 %+v", v)
	}
	if v := res.Verdicts[2]; *v.Value != 300 || *v.Other != 200 || len(v.Sources) != 2 {
		t.Errorf("P3 %+v", v)
	}
	if v := res.Verdicts[3]; *v.Value != 27 {
		t.Errorf("P4 %+v", v)
	}
	if v := res.Verdicts[4]; v.Problem != "Q4_K_M has no KL divergence" {
		t.Errorf("P5 %+v", v)
	}
	md := string(Markdown(res))
	for _, s := range []string{"## Predictions", "| P2 | Q4_0 stays under 0.003 | kld_mean of Q4_0 | <= 0.003 | 0.0031 | MISS +3.3% |",
		"| P3 | Q4_0 is faster at d0 | tg@0 of Q4_0 | >= tg@0 of Q8_0 (tolerance 0%) | 300 | HOLDS |"} {
		if !strings.Contains(md, s) {
			t.Errorf("receipt lacks %q:\n%s", s, md)
		}
	}
	// No predictions: no section, no verdicts in study.json.
	p.Predictions = nil
	res, _ = Assemble(p, "plan-sha", []Record{rec("Q4_0", 300, 151, 0.0031, 14)})
	if res.Verdicts != nil || strings.Contains(string(Markdown(res)), "## Predictions") {
		t.Error("a plan without predictions got a scoreboard")
	}
}
