package quant

import (
	"bytes"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/plots"
)

func TestAssembleAndMarkdown(t *testing.T) {
	p := goodPlan()
	rec := func(typ string, tg0, tg512, kld float64, mib int64, rss int64) Record {
		return Record{Type: typ, Key: strings.Repeat("a", 64), File: typ + ".gguf", SHA256: strings.Repeat("b", 64), Bytes: mib << 20, Bits: 4.5,
			Bench: []BenchCell{{Test: "tg", Depth: 0, Mean: tg0, N: 3, Leg: typ + "/d0"}, {Test: "tg", Depth: 512, Mean: tg512, N: 3, Leg: typ + "/d512"}},
			KLD:   &KLD{Mean: kld, P99: 5 * kld, Max: 20 * kld, SameTopP: 0.97, PPLRatio: 1.002}, KLDLeg: "kld/" + typ, KLDLines: []int{40, 41, 42, 50, 38}, PeakRSS: rss << 20}
	}
	recs := []Record{rec("Q4_0", 300, 151, 0.0031, 14, 90), rec("Q8_0", 200, 100, 0.0005, 27, 110)}
	// The rules a bundle written before they were recorded was made by (it must verify as
	// written): Q4_K_M has no record: in the table, unmeasured, rejected for it.
	res, err := AssembleRules(p, "plan-sha", recs, RulesSelectOverIncomplete)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 3 || res.Candidates[1].Type != "Q4_K_M" || res.Records[1].Incomplete[0] != "not run" {
		t.Fatalf("candidates %+v", res.Candidates)
	}
	if res.Selection.Selected != "Q4_0" || res.Selection.RunnerUp != "Q8_0" {
		t.Fatalf("selection %+v", res.Selection)
	}
	if c := res.Candidates[2]; c.PeakRSSMiB == nil || *c.PeakRSSMiB != 90 || c.Speed["tg@512"] != 151 {
		t.Fatalf("Q4_0 %+v", c)
	}
	md := Markdown(res)
	for _, want := range []string{
		"| Q4_0 | 4.50 | 14.0 | 300.00 | 151.00 | 0.003100 | 0.015500 | 0.062000 | 97.00% | 1.0020 | 90.0 | **selected** |",
		"| Q4_K_M | 0.00 | 0.0 | — | — | — | — | — | — | — | — | speed_missing, kld_missing |",
		"**Selected: Q4_0** — Q4_0: tg@512 151.00 t/s, the highest of the 2 candidates within every limit. Runner-up: Q8_0.",
		"On the frontier: Q8_0, Q4_0.",
		"| Q4_0 | `bbbbbbbbbbbb` | `aaaaaaaaaaaa` | quantized | kld/Q4_0 (40, 41, 42, 50, 38) | Q4_0/d0, Q4_0/d512 |",
		"- Q4_K_M: not run",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt lacks %q:\n%s", want, md)
		}
	}
	again, _ := AssembleRules(p, "plan-sha", recs, RulesSelectOverIncomplete)
	if !bytes.Equal(md, Markdown(again)) {
		t.Error("the same records gave other bytes")
	}
	if _, err := Assemble(p, "x", []Record{{Type: "Q2_K"}}); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Errorf("a record of a type not in the plan: %v", err)
	}
	if _, err := Assemble(p, "x", []Record{{Type: "Q4_0"}, {Type: "Q4_0"}}); err == nil {
		t.Error("two records of one type were taken")
	}
}

// TestCharts: the KLD-against-bits chart takes every candidate with a KLD and a size, the
// selected one marked; the depth charts a series per measured candidate in plan order, its
// points sorted by depth; a test nobody measured has no chart.
func TestCharts(t *testing.T) {
	p := goodPlan()
	rec := func(typ string, bits, kld float64) Record {
		return Record{Type: typ, File: typ + ".gguf", Bits: bits, Bytes: 10 << 20,
			Bench: []BenchCell{{Test: "tg", Depth: 512, Mean: 100 * bits, N: 3}, {Test: "tg", Depth: 0, Mean: 200 * bits, N: 3}},
			KLD:   &KLD{Mean: kld, P99: 2 * kld}}
	}
	res, err := Assemble(p, "x", []Record{rec("Q8_0", 8.5, 0.0001), rec("Q4_0", 4.5, 0.003)})
	if err != nil {
		t.Fatal(err)
	}
	names, charts := Charts(res, plots.Meta{})
	if strings.Join(names, ",") != "pareto,kld-bits,candidates-tg" || len(charts) != 3 {
		t.Fatalf("charts %v", names)
	}
	kb := charts[1].(plots.KLDBitsChart)
	if len(kb.Points) != 2 || kb.Points[0].Label != "Q8_0" || kb.Points[1].Selected != (res.Selection.Selected == "Q4_0") || kb.Points[1].KLDP99 != 0.006 {
		t.Fatalf("kld-bits %+v (selected %s)", kb.Points, res.Selection.Selected)
	}
	d := charts[2].(plots.DepthChart)
	if len(d.Series) != 2 || !strings.HasPrefix(d.Series[0].Label, "Q8_0") || d.Series[0].Points[0].Depth != 0 || d.Series[0].Points[1].Mean != 850 {
		t.Fatalf("depth %+v", d.Series)
	}
	md := string(Markdown(res))
	if !strings.Contains(md, "(plots/kld-bits.png)") || !strings.Contains(md, "(plots/candidates-tg.png)") || strings.Contains(md, "candidates-pp") {
		t.Errorf("receipt links:\n%s", md)
	}
}

// An incomplete ladder selects nothing: the repro (llama-bench crashed at depth 512 on
// the two faster candidates; the rule maximises tg@512) gave "Selected: Q8_0", the slowest,
// because the other two were rejected as speed_missing. A candidate whose figure is missing
// because its legs have not run or ended without results is pending, never rejected; the
// selection, the receipt, the headline and the predictions that read the pick say so and name
// the missing legs. A fully measured candidate that fails a limit is still rejected.
func TestIncompleteLadderSelectsNothing(t *testing.T) {
	p := goodPlan()
	p.Predictions = []Prediction{
		{ID: "P1", Text: "the pick's speed", Kind: "question", About: Selector{Figure: FigureSpeed, Candidate: CandidateSelected, At: "tg@512"}},
		{ID: "P2", Text: "Q8_0's KLD", Kind: "question", About: Selector{Figure: FigureKLDMean, Candidate: "Q8_0"}},
		{ID: "P3", Text: "Q4_0's speed", Kind: "question", About: Selector{Figure: FigureSpeed, Candidate: "Q4_0", At: "tg@0"}},
	}
	full := func(typ string, tg512, kld float64) Record {
		return Record{Type: typ, File: typ + ".gguf", SHA256: strings.Repeat("b", 64), Bytes: 10 << 20, Bits: 4.5,
			Bench: []BenchCell{{Test: "tg", Depth: 0, Mean: 2 * tg512, N: 3, Leg: "bench/" + typ + "/d0"}, {Test: "tg", Depth: 512, Mean: tg512, N: 3, Leg: "bench/" + typ + "/d512"}},
			KLD:   &KLD{Mean: kld}, KLDLeg: "kld/" + typ, PeakRSS: 90 << 20}
	}
	crashed := func(r Record) Record {
		r.Bench = r.Bench[:1]
		r.Incomplete = []string{"bench/" + r.Type + "/d512: llama-bench crashed: killed by SIGSEGV"}
		r.MissingLegs = []string{"bench/" + r.Type + "/d512"}
		return r
	}
	recs := []Record{full("Q8_0", 100, 0.0005), crashed(full("Q4_K_M", 140, 0.002)), crashed(full("Q4_0", 150, 0.003))}
	res, err := Assemble(p, "plan-sha", recs)
	if err != nil {
		t.Fatal(err)
	}
	sel := res.Selection
	if sel.Selected != "" || sel.RunnerUp != "" || !sel.Incomplete {
		t.Fatalf("an incomplete ladder selected %q (runner-up %q): %+v", sel.Selected, sel.RunnerUp, sel)
	}
	if len(sel.Pending) != 2 || sel.Pending[0].Type != "Q4_K_M" || sel.Pending[1].Type != "Q4_0" {
		t.Fatalf("pending %+v, want Q4_K_M and Q4_0", sel.Pending)
	}
	if len(sel.Rejected) != 0 {
		t.Fatalf("rejected %+v: a candidate whose legs are not final is pending, never rejected", sel.Rejected)
	}
	if got := strings.Join(sel.MissingLegs(), ","); got != "bench/Q4_K_M/d512,bench/Q4_0/d512" {
		t.Errorf("missing legs %q", got)
	}
	if !strings.HasPrefix(sel.Why, "incomplete, no selection: 2 of 3 candidates pending (missing legs: bench/Q4_K_M/d512, bench/Q4_0/d512)") {
		t.Errorf("why %q", sel.Why)
	}
	if h := Headline(res); h != "incomplete, no selection (2 pending)" {
		t.Errorf("headline %q", h)
	}
	md := string(Markdown(res))
	for _, want := range []string{
		"**Incomplete, no selection**: 2 of 3 candidates pending",
		"- pending Q4_0: missing legs bench/Q4_0/d512 — bench/Q4_0/d512: llama-bench crashed: killed by SIGSEGV",
		"| pending |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("receipt lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"Selected:", "speed_missing", "**selected**", "runner-up"} {
		if strings.Contains(md, bad) {
			t.Errorf("receipt of an incomplete ladder says %q:\n%s", bad, md)
		}
	}
	// The pick and a pending candidate wait; a fully measured candidate's figure is answered.
	want := map[string]string{"P1": "PENDING", "P2": "ANSWERED", "P3": "PENDING"}
	for _, v := range res.Verdicts {
		if string(v.Outcome) != want[v.Prediction] {
			t.Errorf("%s is %s (%s), want %s", v.Prediction, v.Outcome, v.Problem, want[v.Prediction])
		}
	}
	// A fully measured candidate over a limit is rejected, also on an incomplete ladder.
	over := full("Q8_0", 100, 0.5)
	res, _ = Assemble(p, "plan-sha", []Record{over, crashed(full("Q4_K_M", 140, 0.002)), full("Q4_0", 150, 0.003)})
	if res.Selection.Selected != "" || len(res.Selection.Rejected) != 1 || res.Selection.Rejected[0].Codes[0] != FailKLDMean {
		t.Errorf("selection %+v", res.Selection)
	}
	// Measured in full, the same ladder selects.
	res, _ = Assemble(p, "plan-sha", []Record{full("Q8_0", 100, 0.0005), full("Q4_K_M", 140, 0.002), full("Q4_0", 150, 0.003)})
	if res.Selection.Selected != "Q4_0" || res.Selection.RunnerUp != "Q4_K_M" || res.Selection.Incomplete || len(res.Selection.Pending) != 0 {
		t.Errorf("complete: %+v", res.Selection)
	}
	// The rules of a bundle written before they were recorded still select over what was
	// measured (the bundle verifies as written).
	res, _ = AssembleRules(p, "plan-sha", recs, RulesSelectOverIncomplete)
	if res.Selection.Selected != "Q8_0" || res.Selection.Incomplete {
		t.Errorf("old rules: %+v", res.Selection)
	}
}

// A plan whose CV gate counts (speed.gates.on_cv "count") keeps each flagged speed row as a
// figure and says so: the result and the receipt list exactly the rows above their gate (CV =
// sd/mean over the row's repetitions, pp at depth against cv_pp_depth); a plan whose gate
// halts lists none (its flagged rows never became figures).
func TestCountedCVFlagsAreListed(t *testing.T) {
	p := goodPlan()
	// The limits left out, as a quant plan leaves them: the runner's defaults (5%, pp at depth 10%).
	p.Speed.Gates = study.Gates{OnCV: study.OnCVCount}
	rec := func(typ string, cells ...BenchCell) Record {
		return Record{Type: typ, Key: strings.Repeat("a", 64), File: typ + ".gguf", SHA256: strings.Repeat("b", 64), Bytes: 14 << 20, Bits: 4.5,
			Bench: cells, KLD: &KLD{Mean: 0.001, P99: 0.002, Max: 0.004, SameTopP: 0.97, PPLRatio: 1.001}}
	}
	recs := []Record{
		rec("Q8_0", BenchCell{Test: "tg", Depth: 0, Mean: 100, SD: 6, N: 3, Leg: "bench/Q8_0/d0", Row: 2}, // 6% > 5%: listed
			BenchCell{Test: "tg", Depth: 512, Mean: 100, SD: 5, N: 3, Leg: "bench/Q8_0/d512", Row: 2}), // 5% = gate: passes
		rec("Q4_0", BenchCell{Test: "pp", Depth: 512, Mean: 1000, SD: 90, N: 3, Leg: "bench/Q4_0/d512", Row: 1}, // 9% < 10% at depth
			BenchCell{Test: "pp", Depth: 0, Mean: 1000, SD: 90, N: 3, Leg: "bench/Q4_0/d0", Row: 1},     // 9% > 5% at d0: listed
			BenchCell{Test: "tg", Depth: 512, Mean: 150, SD: 30, N: 1, Leg: "bench/Q4_0/d512", Row: 2}), // one repetition: no CV
	}
	res, err := Assemble(p, "plan-sha", recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Q8_0 tg at depth 0 (bench/Q8_0/d0 row 2): CV 6.0% above the 5.0% gate",
		"Q4_0 pp at depth 0 (bench/Q4_0/d0 row 1): CV 9.0% above the 5.0% gate"}
	if strings.Join(res.CountedFlags, "\n") != strings.Join(want, "\n") {
		t.Fatalf("counted flags:\n%s\nwant:\n%s", strings.Join(res.CountedFlags, "\n"), strings.Join(want, "\n"))
	}
	md := string(Markdown(res))
	for _, w := range append([]string{"Counted with a CV flag (the plan's `speed.gates.on_cv` is `count`"}, want...) {
		if !strings.Contains(md, w) {
			t.Errorf("receipt lacks %q", w)
		}
	}
	p.Speed.Gates.OnCV = study.OnCVHalt
	res, err = Assemble(p, "plan-sha", recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CountedFlags) != 0 || strings.Contains(string(Markdown(res)), "Counted with a CV flag") {
		t.Fatalf("a halting gate lists counted flags: %v", res.CountedFlags)
	}
}
