package quant

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/energy"
	"sparkbench/app/study"
)

// Tests of the decisions one by one, at their boundaries (issue 29: a changed comparison, sign
// or operator must fail a test). Each case is worked by hand in its comment or its table row.

// handOffResult is a finished ladder of three candidates: Q8_0 (peak RSS 100 MiB), Q4_0 on a
// q8_0 KV cache (300 MiB) and Q4_K_M (50 MiB), the second selected and the first its runner-up.
func handOffResult() *Result {
	kv := &study.KVType{K: "q8_0", V: "q8_0"}
	return &Result{Name: "which quant", PlanSHA256: "plan-sha",
		Records: []Record{
			{Type: "Q8_0", File: "q8.gguf", SHA256: "sha-q8", PeakRSS: 100 << 20},
			{Type: "Q4_0", KV: kv, File: "q4.gguf", SHA256: "sha-q4", PeakRSS: 300 << 20},
			{Type: "Q4_K_M", File: "q4km.gguf", SHA256: "sha-q4km", PeakRSS: 50 << 20},
		},
		Selection: Selection{Selected: "Q4_0/kv:q8_0", RunnerUp: "Q8_0", Why: "the fastest"}}
}

// TestCapacityPlanHandOff: the capacity plan a ladder hands off, field by field. Peak RSS
// default: twice the larger of the two candidates' peaks (300 MiB), rounded up to 64 MiB:
// ceil(600/64) = 10 -> 640. The threads are the ladder's (3) unless the hand-off names some.
func TestCapacityPlanHandOff(t *testing.T) {
	p := goodPlan()
	p.Speed.Threads = 3
	cp, err := CapacityPlan(handOffResult(), p, HandOff{StudyID: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Candidates) != 2 {
		t.Fatalf("candidates %+v", cp.Candidates)
	}
	sel, ru := cp.Candidates[0], cp.Candidates[1]
	if sel.ID != "q4_0-kv-q8_0" || sel.Label != "Q4_0/kv:q8_0 (ladder study 7: selected)" || sel.Model.Path != "q4.gguf" || sel.Model.SHA256 != "sha-q4" ||
		!slices.Equal(sel.ServerFlags, []string{"-t", "3", "-ctk", "q8_0", "-ctv", "q8_0"}) {
		t.Errorf("selected %+v", sel)
	}
	if ru.ID != "q8_0" || ru.Label != "Q8_0 (ladder study 7: runner-up)" || ru.Model.Path != "q8.gguf" || ru.Model.SHA256 != "sha-q8" ||
		!slices.Equal(ru.ServerFlags, []string{"-t", "3"}) {
		t.Errorf("runner-up %+v", ru)
	}
	if !slices.Equal(cp.Slots, []int{1, 2, 4}) || !slices.Equal(cp.Clients, []int{1, 2, 4}) || cp.NPredict != 64 {
		t.Errorf("slots %v clients %v n_predict %d", cp.Slots, cp.Clients, cp.NPredict)
	}
	if l := cp.Limits; l.TTFTMsP95Max != 5000 || l.E2EMsP95Max != 60000 || l.PeakRSSMiBMax != 640 {
		t.Errorf("limits %+v, want 5000, 60000, 640", l)
	}
	if cp.Name != "which quant: serving the chosen quant" ||
		cp.Description != "Handed off by quantization ladder study 7 (plan sha256 plan-sha): Q4_0/kv:q8_0, the candidate its rule selected (the fastest), and its runner-up Q8_0." {
		t.Errorf("name %q description %q", cp.Name, cp.Description)
	}

	// What the hand-off names replaces the defaults.
	o := HandOff{StudyID: 7, Slots: []int{1, 8}, Clients: []int{2}, Threads: 6, NPredict: 32, TTFTMsP95Max: 100, E2EMsP95Max: 200, PeakRSSMiBMax: 300}
	cp, err = CapacityPlan(handOffResult(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cp.Slots, []int{1, 8}) || !slices.Equal(cp.Clients, []int{2}) || cp.NPredict != 32 || cp.Candidates[1].ServerFlags[1] != "6" {
		t.Errorf("given: slots %v clients %v n_predict %d flags %v", cp.Slots, cp.Clients, cp.NPredict, cp.Candidates[1].ServerFlags)
	}
	if l := cp.Limits; l.TTFTMsP95Max != 100 || l.E2EMsP95Max != 200 || l.PeakRSSMiBMax != 300 {
		t.Errorf("given limits %+v", l)
	}
	// Slots given, clients not: the clients are the slots.
	cp, _ = CapacityPlan(handOffResult(), p, HandOff{Slots: []int{2, 3}})
	if !slices.Equal(cp.Clients, []int{2, 3}) {
		t.Errorf("clients %v, want the slots", cp.Clients)
	}

	// No runner-up: one candidate, "(none)" in the description; the peak RSS limit is twice
	// Q4_K_M's 50 MiB floored at 64 MiB: 128.
	res := handOffResult()
	res.Selection = Selection{Selected: "Q4_K_M", Why: "alone"}
	cp, err = CapacityPlan(res, p, HandOff{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Candidates) != 1 || cp.Candidates[0].ID != "q4_k_m" || !strings.HasSuffix(cp.Description, "and its runner-up (none).") || cp.Limits.PeakRSSMiBMax != 128 {
		t.Errorf("alone: %+v %q %g", cp.Candidates, cp.Description, cp.Limits.PeakRSSMiBMax)
	}
	// 65 MiB: 130 -> rounded up to 192.
	res.Records[2].PeakRSS = 65 << 20
	if cp, _ = CapacityPlan(res, p, HandOff{}); cp.Limits.PeakRSSMiBMax != 192 {
		t.Errorf("65 MiB: peak RSS limit %g, want 192", cp.Limits.PeakRSSMiBMax)
	}

	// Refusals: nothing selected; a candidate without a record, a file or a SHA-256.
	res = handOffResult()
	res.Selection = Selection{Why: "no candidate meets every limit (3 rejected)"}
	if _, err := CapacityPlan(res, p, HandOff{}); err == nil || err.Error() != "the ladder selected no candidate (no candidate meets every limit (3 rejected)): there is nothing to hand off" {
		t.Errorf("nothing selected: %v", err)
	}
	for name, edit := range map[string]func(r *Result){
		"no record": func(r *Result) { r.Records = r.Records[1:] },
		"no file":   func(r *Result) { r.Records[0].File = "" },
		"no sha256": func(r *Result) { r.Records[0].SHA256 = "" },
	} {
		res := handOffResult()
		edit(res)
		if _, err := CapacityPlan(res, p, HandOff{}); err == nil || err.Error() != "Q8_0 has no derived file in the ladder's records" {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCandidateID: letters, digits, '_' and '-' are kept (lower case); anything else is '-'.
func TestCandidateID(t *testing.T) {
	for in, want := range map[string]string{
		"Q4_0":                "q4_0",
		"Q4_K_M/kv:q8_0,q4_0": "q4_k_m-kv-q8_0-q4_0",
		"az09_-":              "az09_-",
		"a.b c`{/:@[":         "a-b-c------",
	} {
		if got := candidateID(in); got != want {
			t.Errorf("candidateID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestArmsAndLabels: each quant with each KV type, in order; K and V named once when equal.
func TestArmsAndLabels(t *testing.T) {
	p := goodPlan()
	if got := p.Labels(); !slices.Equal(got, []string{"Q8_0", "Q4_K_M", "Q4_0"}) {
		t.Errorf("no kv_types: %v", got)
	}
	p.Quants = []string{"Q8_0", "Q4_0"}
	p.KVTypes = []study.KVType{{K: "f16", V: "f16"}, {K: "q8_0", V: "q4_0"}}
	want := []string{"Q8_0/kv:f16", "Q8_0/kv:q8_0,q4_0", "Q4_0/kv:f16", "Q4_0/kv:q8_0,q4_0"}
	if got := p.Labels(); !slices.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	if a := p.Arms()[3]; a.Quant != "Q4_0" || a.KV != &p.KVTypes[1] {
		t.Errorf("arm %+v", a)
	}
}

// TestDefaultsFillOnlyWhatIsMissing: the defaults of an empty plan, and a plan's own values kept.
func TestDefaultsFillOnlyWhatIsMissing(t *testing.T) {
	var p Plan
	p.Imatrix = &Imatrix{}
	p.Defaults()
	if p.Imatrix.Ctx != 512 || p.Imatrix.Chunks != 16 || p.Speed.NPrompt != 512 || p.Speed.NGen != 128 || p.Speed.Reps != 5 || p.Speed.Threads != 1 ||
		p.Quality.Ctx != 128 || p.Quality.Chunks != 20 || p.Memory != MemoryBench || *p.Rule.Tolerance != 0.01 || !slices.Equal(p.Rule.TieBreak, DefaultTieBreak) {
		t.Fatalf("defaults %+v", p)
	}
	q := Plan{Imatrix: &Imatrix{Ctx: 64, Chunks: 2}, Speed: Speed{NPrompt: 7, NGen: 8, Reps: 9, Threads: 4}, Quality: Quality{Ctx: 32, Chunks: 3},
		Memory: MemoryNone, Rule: Rule{Tolerance: f(0.2), TieBreak: []string{TieOrder}}}
	q.Defaults()
	if q.Imatrix.Ctx != 64 || q.Imatrix.Chunks != 2 || q.Speed.NPrompt != 7 || q.Speed.NGen != 8 || q.Speed.Reps != 9 || q.Speed.Threads != 4 ||
		q.Quality.Ctx != 32 || q.Quality.Chunks != 3 || q.Memory != MemoryNone || *q.Rule.Tolerance != 0.2 || !slices.Equal(q.Rule.TieBreak, []string{TieOrder}) {
		t.Fatalf("kept %+v", q)
	}
	// A plan without an importance matrix gets none.
	var r Plan
	r.Defaults()
	if r.Imatrix != nil {
		t.Fatalf("imatrix %+v", r.Imatrix)
	}
}

// TestEstimateBytesExact: 1000 bytes of F16 as Q4_0 (4.5 bits): 1000 x 4.5 / 16 x 1.1 =
// 309.375 -> 309; of F32 as Q8_0 (8.5): 1000 x 8.5 / 32 x 1.1 = 292.1875 -> 292.
func TestEstimateBytesExact(t *testing.T) {
	for _, c := range []struct {
		ref, typ string
		want     int64
		ok       bool
	}{
		{"MOSTLY_F16", "Q4_0", 309, true},
		{"MOSTLY_F16", "q4_0", 309, true},
		{"ALL_F32", "Q8_0", 292, true},
		{"MOSTLY_F16", "Q9_9", 0, false},
		{"MOSTLY_Q4_0", "Q4_0", 0, false},
	} {
		if n, ok := EstimateBytes(1000, c.ref, c.typ); n != c.want || ok != c.ok {
			t.Errorf("%s from %s: %d %v, want %d %v", c.typ, c.ref, n, ok, c.want, c.ok)
		}
	}
}

// cand is a fully measured candidate: tg@512 speed, mean KLD, file MiB, peak RSS MiB.
func cand(typ string, order int, tg, kld float64, mib int64, rss float64) Candidate {
	return Candidate{Type: typ, Order: order, FileBytes: mib << 20, Speed: map[string]float64{"tg@512": tg},
		KLD: &KLD{Mean: kld, P99: 2 * kld, SameTopP: 0.9, PPLRatio: 1.05}, PeakRSSMiB: &rss, Projected: &Projection{MiB: 100, Of: "host"}}
}

// TestFailuresAtTheLimit: a figure equal to its limit passes; just past it fails, with its
// code. A KLD limit of any kind needs the KLD measured; no KLD limit, none.
func TestFailuresAtTheLimit(t *testing.T) {
	c := cand("Q4_0", 0, 100, 0.01, 20, 200) // P99 0.02, same top p 0.9, PPL ratio 1.05, projected 100
	for _, tc := range []struct {
		name string
		l    Limits
		want []string
	}{
		{"kld mean at", Limits{KLDMeanMax: f(0.01)}, nil},
		{"kld mean past", Limits{KLDMeanMax: f(0.0099)}, []string{FailKLDMean}},
		{"kld p99 at", Limits{KLDP99Max: f(0.02)}, nil},
		{"kld p99 past", Limits{KLDP99Max: f(0.0199)}, []string{FailKLDP99}},
		{"same top p at", Limits{SameTopPMin: f(0.9)}, nil},
		{"same top p past", Limits{SameTopPMin: f(0.91)}, []string{FailSameTopP}},
		{"ppl ratio at", Limits{PPLRatioMax: f(1.05)}, nil},
		{"ppl ratio past", Limits{PPLRatioMax: f(1.04)}, []string{FailPPLRatio}},
		{"file at", Limits{FileMiBMax: f(20)}, nil},
		{"file past", Limits{FileMiBMax: f(19.9)}, []string{FailFileSize}},
		{"peak rss at", Limits{PeakRSSMiBMax: f(200)}, nil},
		{"peak rss past", Limits{PeakRSSMiBMax: f(199)}, []string{FailPeakRSS}},
		{"projected at", Limits{ProjectedMiBMax: f(100)}, nil},
		{"projected past", Limits{ProjectedMiBMax: f(99)}, []string{FailProjected}},
		{"every limit past", Limits{KLDMeanMax: f(0.001), KLDP99Max: f(0.001), SameTopPMin: f(0.95), PPLRatioMax: f(1.01), FileMiBMax: f(1), PeakRSSMiBMax: f(1), ProjectedMiBMax: f(1)},
			[]string{FailKLDMean, FailKLDP99, FailSameTopP, FailPPLRatio, FailFileSize, FailPeakRSS, FailProjected}},
	} {
		if got := failures(Rule{Limits: tc.l}, "tg@512", c); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Unmeasured: each KLD limit alone asks for the KLD; memory and projection limits for theirs.
	bare := Candidate{Type: "Q4_0", Speed: map[string]float64{"tg@512": 1}}
	for _, tc := range []struct {
		name string
		l    Limits
		want []string
	}{
		{"no limit", Limits{}, nil},
		{"kld mean", Limits{KLDMeanMax: f(1)}, []string{FailKLDMissing}},
		{"kld p99", Limits{KLDP99Max: f(1)}, []string{FailKLDMissing}},
		{"same top p", Limits{SameTopPMin: f(0.5)}, []string{FailKLDMissing}},
		{"ppl ratio", Limits{PPLRatioMax: f(2)}, []string{FailKLDMissing}},
		{"file", Limits{FileMiBMax: f(1)}, nil},
		{"peak rss", Limits{PeakRSSMiBMax: f(1)}, []string{FailMemoryMissing}},
		{"projected", Limits{ProjectedMiBMax: f(1)}, []string{FailProjectedMissing}},
	} {
		if got := failures(Rule{Limits: tc.l}, "tg@512", bare); !slices.Equal(got, tc.want) {
			t.Errorf("unmeasured, %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := failures(Rule{}, "tg@0", bare); !slices.Equal(got, []string{FailSpeedMissing}) {
		t.Errorf("figure not measured: %v", got)
	}
}

// TestRankTolerance: the bar is best x (1 - tolerance). A at 200 t/s, B at 150 (lower KLD):
// tolerance 0.25 puts the bar at exactly 150, so B is tied and the KLD tie-break picks it;
// 0.2 (bar 160) leaves A alone; no tolerance is 0.01.
func TestRankTolerance(t *testing.T) {
	a, b := cand("A", 0, 200, 0.5, 10, 1), cand("B", 1, 150, 0.1, 10, 1)
	for _, tc := range []struct {
		tol       *float64
		sel, ru   string
		why       string
		whyPrefix bool
	}{
		{f(0.25), "B", "A", "B: tied on tg@512 within 25% with A, chosen by kld_mean > file_size > peak_rss > order", false},
		{f(0.2), "A", "B", "A: tg@512 200.00 t/s, the highest of the 2 candidates within every limit", false},
		{nil, "A", "B", "A: tg@512 200.00 t/s, the highest of the 2 candidates within every limit", false},
	} {
		r := Rule{Maximize: "tg@512", Tolerance: tc.tol}
		for _, in := range [][]Candidate{{a, b}, {b, a}} {
			s := Select(r, in)
			if s.Selected != tc.sel || s.RunnerUp != tc.ru || s.Why != tc.why {
				t.Errorf("tolerance %s, %s first: selected %q runner-up %q why %q; want %q %q %q", fmtTol(tc.tol), in[0].Type, s.Selected, s.RunnerUp, s.Why, tc.sel, tc.ru, tc.why)
			}
		}
	}
	// The why names a candidate exactly at the bar as tied: A (200 t/s, the lower KLD) is
	// selected, B at 150 is tied with it under tolerance 0.25.
	a.KLD.Mean, b.KLD.Mean = 0.1, 0.5
	if s := Select(Rule{Maximize: "tg@512", Tolerance: f(0.25)}, []Candidate{a, b}); s.Selected != "A" ||
		s.Why != "A: tied on tg@512 within 25% with B, chosen by kld_mean > file_size > peak_rss > order" {
		t.Errorf("B at the bar: selected %q why %q", s.Selected, s.Why)
	}
	// Within 1% by default: 99 of 100 is tied, 98.9 is not.
	c, d := cand("C", 0, 100, 0.5, 10, 1), cand("D", 1, 99, 0.1, 10, 1)
	if s := Select(Rule{Maximize: "tg@512"}, []Candidate{c, d}); s.Selected != "D" {
		t.Errorf("99 of 100 by default: %s (%s)", s.Selected, s.Why)
	}
	d.Speed["tg@512"] = 98.9
	if s := Select(Rule{Maximize: "tg@512"}, []Candidate{c, d}); s.Selected != "C" {
		t.Errorf("98.9 of 100 by default: %s (%s)", s.Selected, s.Why)
	}
	// Tied ones first, the rest by speed: E (100) and F (99.5) tied, G (90), H (80) not.
	cs := []Candidate{cand("H", 0, 80, 0.01, 10, 1), cand("G", 1, 90, 0.01, 10, 1), cand("F", 2, 99.5, 0.01, 10, 1), cand("E", 3, 100, 0.02, 10, 1)}
	var got []string
	for _, c := range rank(Rule{Maximize: "tg@512", Tolerance: f(0.01)}, cs) {
		got = append(got, c.Type)
	}
	if !slices.Equal(got, []string{"F", "E", "G", "H"}) {
		t.Errorf("rank %v, want F E G H", got)
	}
	if rank(Rule{Maximize: "tg@512"}, nil) != nil {
		t.Error("rank of none")
	}
}

func fmtTol(t *float64) string {
	if t == nil {
		return "nil"
	}
	return fmt.Sprint(*t)
}

// TestTieBreakChain: every key of the chain, each deciding between two tied candidates whose
// plan order says the opposite; unmeasured figures come last; a chain that ties throughout
// falls back to the plan order.
func TestTieBreakChain(t *testing.T) {
	r := Rule{Maximize: "tg@512", Tolerance: f(0.01)}
	pick := func(chain []string, cs ...Candidate) string {
		t.Helper()
		rr := r
		rr.TieBreak = chain
		s := Select(rr, cs)
		// The other input order selects the same.
		if s2 := Select(rr, []Candidate{cs[1], cs[0]}); s2.Selected != s.Selected {
			t.Errorf("chain %v: %s one way, %s the other", chain, s.Selected, s2.Selected)
		}
		return s.Selected
	}
	a, b := cand("A", 0, 100, 0.02, 20, 200), cand("B", 1, 100, 0.01, 10, 100)
	for _, tc := range []struct {
		chain []string
		want  string
	}{
		{[]string{TieKLDMean}, "B"},
		{[]string{TieFileSize}, "B"},
		{[]string{TiePeakRSS}, "B"},
		{[]string{TieOrder}, "A"},
		{nil, "B"}, // the default chain starts with kld_mean
		{[]string{"unknown"}, "A"},
	} {
		if got := pick(tc.chain, a, b); got != tc.want {
			t.Errorf("chain %v: %s, want %s", tc.chain, got, tc.want)
		}
	}
	// The default chain is kld_mean first: equal KLD, B smaller, A first in order.
	a.KLD.Mean = 0.01
	if got := pick(nil, a, b); got != "B" {
		t.Errorf("default chain, equal KLD: %s, want B (smaller file)", got)
	}
	// Equal on every key: the plan order, also after a chain without it.
	e1, e2 := cand("E1", 1, 100, 0.01, 10, 100), cand("E2", 0, 100, 0.01, 10, 100)
	for _, chain := range [][]string{{TieKLDMean}, {TieFileSize, TiePeakRSS}, {TieOrder}} {
		if got := pick(chain, e1, e2); got != "E2" {
			t.Errorf("all equal, chain %v: %s, want E2 (order 0)", chain, got)
		}
	}
	// Unmeasured last: without KLD limits, a candidate without a KLD loses the KLD tie-break;
	// without a peak RSS limit, one without a peak RSS loses that one.
	m1, m2 := cand("M1", 0, 100, 0.5, 10, 100), cand("M2", 1, 100, 0.1, 10, 100)
	m1.KLD = nil
	if got := pick([]string{TieKLDMean}, m1, m2); got != "M2" {
		t.Errorf("no KLD: %s, want M2", got)
	}
	m1.PeakRSSMiB = nil
	if got := pick([]string{TiePeakRSS}, m1, m2); got != "M2" {
		t.Errorf("no peak RSS: %s, want M2", got)
	}
	// Both unmeasured: tied, the next key decides.
	m2.KLD, m2.PeakRSSMiB = nil, nil
	if got := pick([]string{TieKLDMean, TiePeakRSS, TieOrder}, m2, m1); got != "M1" {
		t.Errorf("neither measured: %s, want M1 (order 0)", got)
	}
}

// TestCmpMissingLast: measured before unmeasured, both ways round.
func TestCmpMissingLast(t *testing.T) {
	both := func() int { return 7 }
	for _, tc := range []struct {
		a, b bool
		want int
	}{{true, true, 7}, {true, false, -1}, {false, true, 1}, {false, false, 0}} {
		if got := cmpMissingLast(tc.a, tc.b, both); got != tc.want {
			t.Errorf("cmpMissingLast(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestSelectRunnerUp: one passing candidate has no runner-up; of two, the other one is it.
func TestSelectRunnerUp(t *testing.T) {
	r := Rule{Maximize: "tg@512", Limits: Limits{KLDMeanMax: f(0.1)}}
	s := Select(r, []Candidate{cand("A", 0, 100, 0.01, 10, 1), cand("X", 1, 200, 0.5, 10, 1)})
	if s.Selected != "A" || s.RunnerUp != "" || s.Why != "A: tg@512 100.00 t/s, the highest of the 1 candidates within every limit" {
		t.Errorf("one passing: %+v", s)
	}
	s = Select(r, []Candidate{cand("A", 0, 100, 0.01, 10, 1), cand("B", 1, 50, 0.01, 10, 1)})
	if s.Selected != "A" || s.RunnerUp != "B" {
		t.Errorf("two passing: %+v", s)
	}
	s = Select(r, []Candidate{cand("X", 1, 200, 0.5, 10, 1)})
	if s.Selected != "" || s.RunnerUp != "" || s.Why != "no candidate meets every limit (1 rejected)" {
		t.Errorf("none passing: %+v", s)
	}
}

// TestParetoAtTheEdges: equal on one figure and better on the other dominates; equal on both
// does not; a candidate without the speed figure or a KLD is on neither list.
func TestParetoAtTheEdges(t *testing.T) {
	cs := []Candidate{
		cand("A", 0, 100, 0.1, 10, 1),
		cand("B", 1, 100, 0.1, 10, 1),                                              // A's twin: neither dominates
		cand("C", 2, 100, 0.2, 10, 1),                                              // as fast, worse KLD: dominated by A and B
		cand("D", 3, 90, 0.1, 10, 1),                                               // as good KLD, slower: dominated by A and B
		cand("E", 4, 200, 0.5, 10, 1),                                              // fastest: frontier
		cand("F", 5, 300, 9, 10, 1),                                                // fastest: frontier
		{Type: "G", Speed: map[string]float64{"tg@512": 1000}},                     // no KLD
		{Type: "H", Speed: map[string]float64{"tg@0": 1000}, KLD: &KLD{Mean: 0.0}}, // no tg@512
	}
	front, dom := Pareto("tg@512", cs)
	if !slices.Equal(front, []string{"A", "B", "E", "F"}) {
		t.Errorf("frontier %v", front)
	}
	if len(dom) != 2 || !slices.Equal(dom["C"], []string{"A", "B"}) || !slices.Equal(dom["D"], []string{"A", "B"}) {
		t.Errorf("dominated %v", dom)
	}
}

// TestHeadline: a ladder's outcome in one line.
func TestHeadline(t *testing.T) {
	recs := []Record{{Type: "Q4_0"}}
	for _, tc := range []struct {
		res  *Result
		want string
	}{
		{nil, ""},
		{&Result{Selection: Selection{Selected: "Q4_0"}}, ""},
		{&Result{Records: recs, Selection: Selection{Incomplete: true, Pending: []Pending{{Type: "Q4_0"}}}}, "incomplete, no selection (1 pending)"},
		{&Result{Records: recs}, "no candidate passed every limit"},
		{&Result{Records: recs, Selection: Selection{Selected: "Q4_0"}}, "selected Q4_0"},
		{&Result{Records: recs, Selection: Selection{Selected: "Q4_0", RunnerUp: "Q8_0"}}, "selected Q4_0, runner-up Q8_0"},
	} {
		if got := Headline(tc.res); got != tc.want {
			t.Errorf("headline %q, want %q", got, tc.want)
		}
	}
}

// TestSelectionMissing: the missing legs when named, else the candidates and why.
func TestSelectionMissing(t *testing.T) {
	s := Selection{Pending: []Pending{{Type: "Q4_0", Legs: []string{"bench/Q4_0/d0", "kld/Q4_0"}, Why: []string{"x"}}, {Type: "Q8_0", Legs: []string{"kld/Q8_0"}}}}
	if got := s.Missing(); got != "missing legs: bench/Q4_0/d0, kld/Q4_0, kld/Q8_0" {
		t.Errorf("legs: %q", got)
	}
	s = Selection{Pending: []Pending{{Type: "Q4_0", Why: []string{"not run", "no kld"}}, {Type: "Q8_0", Why: []string{"crashed"}}}}
	if got := s.Missing(); got != "not measured: Q4_0 (not run; no kld), Q8_0 (crashed)" {
		t.Errorf("why: %q", got)
	}
}

// TestSelectIncompleteRejectsOnlyTheMeasured: a pending candidate is never rejected; a
// measured one over a limit is, and one within every limit is not.
func TestSelectIncompleteRejectsOnlyTheMeasured(t *testing.T) {
	r := Rule{Maximize: "tg@512", Limits: Limits{KLDMeanMax: f(0.1)}}
	cs := []Candidate{cand("A", 0, 100, 0.5, 10, 1), {Type: "P", Order: 1, Speed: map[string]float64{}}, cand("B", 2, 100, 0.01, 10, 1)}
	s := selectIncomplete(r, cs, []Pending{{Type: "P", Legs: []string{"bench/P/d512"}}})
	if s.Selected != "" || !s.Incomplete || len(s.Rejected) != 1 || s.Rejected[0].Type != "A" ||
		s.Why != "incomplete, no selection: 1 of 3 candidates pending (missing legs: bench/P/d512); run the study again to measure them" {
		t.Errorf("%+v", s)
	}
	if !slices.Equal(s.Frontier, []string{"B"}) || !slices.Equal(s.Dominated["A"], []string{"B"}) {
		t.Errorf("frontier %v dominated %v", s.Frontier, s.Dominated)
	}
}

// TestSelectorString: how a selector is named on the scoreboard.
func TestSelectorString(t *testing.T) {
	for s, want := range map[Selector]string{
		{Figure: FigureSpeed, Candidate: "Q4_0", At: "tg@0"}:        "tg@0 of Q4_0",
		{Figure: FigureJPerToken, Candidate: "Q4_0", At: "pp@0"}:    "J/token at pp@0 of Q4_0",
		{Figure: FigureKLDMean, Candidate: CandidateSelected}:       "kld_mean of selected",
		{Figure: FigurePeakRSS, Candidate: CandidateRunnerUp}:       "peak_rss_mib of runner_up",
		{Figure: FigureProjected, Candidate: "Q8_0", At: "ignored"}: "projected_mib of Q8_0",
	} {
		if got := s.String(); got != want {
			t.Errorf("%+v: %q, want %q", s, got, want)
		}
	}
}

// TestCheckSelector: a selector is checked against what the plan measures.
func TestCheckSelector(t *testing.T) {
	p := goodPlan()
	p.Speed.Depths = []int{256, 512}
	p.Telemetry = &energy.Plan{}
	p.MemoryCtx = 4096
	for _, tc := range []struct {
		name string
		s    Selector
		edit func(*Plan)
		want []string
	}{
		{"speed", Selector{Figure: FigureSpeed, Candidate: "Q4_0", At: "pp@256"}, nil, nil},
		{"energy", Selector{Figure: FigureJPerToken, Candidate: CandidateRunnerUp, At: "tg@512"}, nil, nil},
		{"projected", Selector{Figure: FigureProjected, Candidate: CandidateSelected}, nil, nil},
		{"peak rss", Selector{Figure: FigurePeakRSS, Candidate: "Q8_0"}, nil, nil},
		{"kld", Selector{Figure: FigureKLDP99, Candidate: "Q4_K_M"}, nil, nil},
		{"speed without at", Selector{Figure: FigureSpeed, Candidate: "Q4_0"}, nil,
			[]string{"x.at: missing; a speed figure names TEST@DEPTH, e.g. tg@256"}},
		{"energy without at, no depths", Selector{Figure: FigureJPerToken, Candidate: "Q4_0"}, func(p *Plan) { p.Speed.Depths = nil },
			[]string{"x.at: missing; a speed figure names TEST@DEPTH, e.g. tg@0"}},
		{"at that does not parse", Selector{Figure: FigureSpeed, Candidate: "Q4_0", At: "tg512"}, nil,
			[]string{`x.at: "tg512": want TEST@DEPTH, e.g. tg@256 or pp@256`}},
		{"energy at a depth not measured", Selector{Figure: FigureJPerToken, Candidate: "Q4_0", At: "tg@0"}, nil,
			[]string{"x.at: tg@0: depth 0 is not among speed.depths [256 512]"}},
		{"at on a KLD figure", Selector{Figure: FigureKLDMean, Candidate: "Q4_0", At: "tg@512"}, nil,
			[]string{"x.at: only a speed figure takes at; leave it out for kld_mean"}},
		{"energy without telemetry", Selector{Figure: FigureJPerToken, Candidate: "Q4_0", At: "tg@512"}, func(p *Plan) { p.Telemetry = nil },
			[]string{`x.figure: j_per_token is not measured: the plan has no telemetry block (add "telemetry": {} to sample the bench legs)`}},
		{"projection without memory_ctx", Selector{Figure: FigureProjected, Candidate: "Q4_0"}, func(p *Plan) { p.MemoryCtx = 0 },
			[]string{"x.figure: projected_mib is not measured: the plan sets no memory_ctx"}},
		{"peak rss without memory", Selector{Figure: FigurePeakRSS, Candidate: "Q4_0"}, func(p *Plan) { p.Memory = MemoryNone },
			[]string{`x.figure: peak_rss_mib is not measured: the plan's memory is "none"`}},
	} {
		q := *p
		if tc.edit != nil {
			tc.edit(&q)
		}
		var got []string
		for _, pr := range checkSelector(&q, "x", tc.s) {
			got = append(got, pr.Path+": "+pr.Msg)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestWaitsFor: on an incomplete ladder, a prediction about the pick, the runner-up or a
// pending candidate (on either side) waits; one about measured candidates does not; on a
// complete ladder nothing waits.
func TestWaitsFor(t *testing.T) {
	inc := Selection{Incomplete: true, Pending: []Pending{{Type: "Q4_0", Legs: []string{"kld/Q4_0"}}}}
	about := func(c string) Selector { return Selector{Figure: FigureKLDMean, Candidate: c} }
	for _, tc := range []struct {
		name string
		pr   Prediction
		sel  Selection
		want string
	}{
		{"selected", Prediction{About: about(CandidateSelected)}, inc, "waiting for the ladder to be complete (missing legs: kld/Q4_0)"},
		{"runner-up", Prediction{About: about(CandidateRunnerUp)}, inc, "waiting for the ladder to be complete (missing legs: kld/Q4_0)"},
		{"pending", Prediction{About: about("Q4_0")}, inc, "waiting for Q4_0 to be measured (missing legs: kld/Q4_0)"},
		{"than pending", Prediction{About: about("Q8_0"), Than: &Selector{Figure: FigureKLDMean, Candidate: "Q4_0"}}, inc, "waiting for Q4_0 to be measured (missing legs: kld/Q4_0)"},
		{"than runner-up", Prediction{About: about("Q8_0"), Than: &Selector{Figure: FigureKLDMean, Candidate: CandidateRunnerUp}}, inc, "waiting for the ladder to be complete (missing legs: kld/Q4_0)"},
		{"measured", Prediction{About: about("Q8_0"), Than: &Selector{Figure: FigureKLDMean, Candidate: "Q4_K_M"}}, inc, ""},
		{"complete", Prediction{About: about(CandidateSelected)}, Selection{Selected: "Q4_0"}, ""},
	} {
		if got := waitsFor(tc.pr, tc.sel); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// valueResult: Q8_0 measured with energy at tg@0 only (tg@512's is 0: not sampled), a peak
// RSS and a projection; Q4_0 with neither nor a KLD; Q4_0 selected, Q8_0 the runner-up.
func valueResult() *Result {
	rss := 123.5
	return &Result{
		Candidates: []Candidate{
			{Type: "Q8_0", FileBytes: 3 << 19, BitsPerWeight: 8.5, PeakRSSMiB: &rss, Projected: &Projection{MiB: 640, Of: "host", Line: "llama_params_fit: 640 MiB"},
				KLD: &KLD{Mean: 0.001, P99: 0.01, Max: 0.5, SameTopP: 0.98, PPLRatio: 1.001}},
			{Type: "Q4_0", FileBytes: 1 << 20},
		},
		Records: []Record{
			{Type: "Q8_0", SHA256: "abcdef0123456789", KLDLeg: "kld/Q8_0", KLDLines: []int{4, 5},
				Bench: []BenchCell{{Test: "tg", Depth: 0, Mean: 50, JPerToken: 0.25, Leg: "bench/Q8_0/d0", Row: 2}, {Test: "tg", Depth: 512, Mean: 40, Leg: "bench/Q8_0/d512", Row: 3}}},
			{Type: "Q4_0", SHA256: "0011223344556677", Bench: []BenchCell{{Test: "tg", Depth: 0, Mean: 90, Leg: "bench/Q4_0/d0", Row: 1}}},
		},
		Selection: Selection{Selected: "Q4_0", RunnerUp: "Q8_0"},
	}
}

// TestValue: every figure a selector reads, its source, and why it cannot be read.
func TestValue(t *testing.T) {
	res := valueResult()
	kldSrc := []string{"Q8_0 KLD: leg kld/Q8_0 lines [4 5]"}
	for _, tc := range []struct {
		s       Selector
		v       float64
		src     []string
		problem string
	}{
		{Selector{Figure: FigureSpeed, Candidate: "Q8_0", At: "tg@512"}, 40, []string{"Q8_0 tg@512: leg bench/Q8_0/d512 row 3"}, ""},
		{Selector{Figure: FigureSpeed, Candidate: CandidateSelected, At: "tg@0"}, 90, []string{"Q4_0 (selected) tg@0: leg bench/Q4_0/d0 row 1"}, ""},
		{Selector{Figure: FigureSpeed, Candidate: "Q4_0", At: "tg@512"}, 0, nil, "Q4_0 has no tg@512"},
		{Selector{Figure: FigureJPerToken, Candidate: CandidateRunnerUp, At: "tg@0"}, 0.25, []string{"Q8_0 (runner_up) tg@0 energy: leg bench/Q8_0/d0 row 2"}, ""},
		{Selector{Figure: FigureJPerToken, Candidate: "Q8_0", At: "tg@512"}, 0, nil, "Q8_0 has no energy at tg@512 (its leg was not sampled by an energy-measuring sampler)"},
		{Selector{Figure: FigureFileMiB, Candidate: "Q8_0"}, 1.5, []string{"Q8_0 file sha256 abcdef012345"}, ""},
		{Selector{Figure: FigureBits, Candidate: "Q8_0"}, 8.5, []string{"Q8_0 file sha256 abcdef012345"}, ""},
		{Selector{Figure: FigurePeakRSS, Candidate: "Q8_0"}, 123.5, []string{"Q8_0 llama-bench legs' peak RSS"}, ""},
		{Selector{Figure: FigurePeakRSS, Candidate: "Q4_0"}, 0, nil, "Q4_0 has no peak RSS"},
		{Selector{Figure: FigureProjected, Candidate: "Q8_0"}, 640, []string{"Q8_0 llama-fit-params: llama_params_fit: 640 MiB"}, ""},
		{Selector{Figure: FigureProjected, Candidate: "Q4_0"}, 0, nil, "Q4_0 has no memory projection"},
		{Selector{Figure: FigureKLDMean, Candidate: "Q8_0"}, 0.001, kldSrc, ""},
		{Selector{Figure: FigureKLDP99, Candidate: "Q8_0"}, 0.01, kldSrc, ""},
		{Selector{Figure: FigureKLDMax, Candidate: "Q8_0"}, 0.5, kldSrc, ""},
		{Selector{Figure: FigureSameTopP, Candidate: "Q8_0"}, 0.98, kldSrc, ""},
		{Selector{Figure: FigurePPLRatio, Candidate: "Q8_0"}, 1.001, kldSrc, ""},
		{Selector{Figure: "bogus", Candidate: "Q8_0"}, 0, nil, `figure "bogus" is not known`},
		{Selector{Figure: FigureKLDMean, Candidate: "Q4_0"}, 0, nil, "Q4_0 has no KL divergence"},
		{Selector{Figure: FigureKLDMean, Candidate: "Q2_K"}, 0, nil, "Q2_K is not a candidate of the result"},
	} {
		v, src, problem := value(tc.s, res)
		if v != tc.v || !slices.Equal(src, tc.src) || problem != tc.problem {
			t.Errorf("%v: %v %q %q, want %v %q %q", tc.s, v, src, problem, tc.v, tc.src, tc.problem)
		}
	}
	res.Selection = Selection{Selected: "Q8_0", Why: "only one passed"}
	if _, _, problem := value(Selector{Figure: FigureKLDMean, Candidate: CandidateRunnerUp}, res); problem != "no runner-up candidate: only one passed" {
		t.Errorf("no runner-up: %q", problem)
	}
	if v, _, _ := value(Selector{Figure: FigureKLDMean, Candidate: CandidateSelected}, res); v != 0.001 {
		t.Errorf("selected Q8_0: %v", v)
	}
	res.Selection = Selection{Why: "none passed"}
	if _, _, problem := value(Selector{Figure: FigureKLDMean, Candidate: CandidateSelected}, res); problem != "no selected candidate: none passed" {
		t.Errorf("none selected: %q", problem)
	}
}

// TestEvaluateWaitsOnlyWhenIncomplete: Evaluate gives a waiting prediction PENDING with why,
// and evaluates the rest.
func TestEvaluateWaitsOnlyWhenIncomplete(t *testing.T) {
	res := valueResult()
	preds := []Prediction{
		{ID: "P1", Kind: study.KindQuestion, About: Selector{Figure: FigureKLDMean, Candidate: CandidateSelected}},
		{ID: "P2", Kind: study.KindQuestion, About: Selector{Figure: FigureKLDMean, Candidate: "Q8_0"}},
	}
	vs := Evaluate(preds, res)
	if len(vs) != 2 || vs[0].Outcome != study.Unresolvable || vs[1].Outcome != study.Answered || *vs[1].Value != 0.001 {
		t.Errorf("complete: %+v", vs)
	}
	res.Selection = Selection{Incomplete: true, Pending: []Pending{{Type: "Q4_0", Legs: []string{"kld/Q4_0"}}}}
	vs = Evaluate(preds, res)
	if len(vs) != 2 || vs[0].Outcome != study.Pending || vs[0].Problem != "waiting for the ladder to be complete (missing legs: kld/Q4_0)" || vs[1].Outcome != study.Answered {
		t.Errorf("incomplete: %+v", vs)
	}
}

// TestValidateBoundaries: each checked field at its edge, one problem at a time. Every case
// starts from goodPlan, which validates clean.
func TestValidateBoundaries(t *testing.T) {
	base := ValidateOptions{Types: []string{"Q8_0", "Q4_K_M", "Q4_0", "IQ2_XS"}, ReferenceRead: true, ReferenceFileType: "MOSTLY_F16", CorpusTokens: 10000}
	withImatrix := func(ctx, chunks int) func(*Plan, *ValidateOptions) {
		return func(p *Plan, _ *ValidateOptions) {
			p.Imatrix = &Imatrix{Calibration: FileRef{"calib.txt", sha}, Ctx: ctx, Chunks: chunks}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*Plan, *ValidateOptions)
		want []string // every error, in order (nil: none)
	}{
		{"good", func(*Plan, *ValidateOptions) {}, nil},
		{"schema", func(p *Plan, _ *ValidateOptions) { p.Schema = "sparkbench.quant/v0" }, []string{`schema: "sparkbench.quant/v0": want "sparkbench.quant/v1"`}},
		{"blank name", func(p *Plan, _ *ValidateOptions) { p.Name = " \t" }, []string{"name: empty; give the study a name"}},
		{"no quants", func(p *Plan, _ *ValidateOptions) { p.Quants = nil }, []string{`quants: empty; list the quant types to try, e.g. ["Q8_0", "Q4_K_M", "Q4_0"]`}},
		{"blank quant", func(p *Plan, _ *ValidateOptions) { p.Quants[1] = " " }, []string{"quants[1]: empty; give a quant type"}},
		{"unknown types not checked without a list", func(p *Plan, o *ValidateOptions) { o.Types = nil; p.Quants = []string{"Q9_9"} }, nil},
		{"imatrix type with an imatrix", func(p *Plan, o *ValidateOptions) {
			withImatrix(16, 1)(p, o)
			p.Quants = append(p.Quants, "IQ2_XS")
		}, nil},
		{"imatrix ctx 16 and 1 chunk", withImatrix(16, 1), nil},
		{"imatrix ctx 15", withImatrix(15, 1), []string{"imatrix.ctx: 15: want at least 16 tokens per chunk, or leave the field out for the default 512"}},
		{"imatrix chunks 0", withImatrix(16, 0), []string{"imatrix.chunks: 0: want at least 1, or leave the field out for the default 16"}},
		{"calibration exactly long enough", func(p *Plan, o *ValidateOptions) { withImatrix(16, 3)(p, o); o.CalibrationTokens = 48 }, nil},
		{"calibration one token short", func(p *Plan, o *ValidateOptions) { withImatrix(16, 3)(p, o); o.CalibrationTokens = 47 },
			[]string{"imatrix.calibration: the calibration text has 47 tokens; ctx 16 x 3 chunks needs 48: give a longer text, or fewer chunks (at most 2)"}},
		{"corpus of one chunk needs two windows", func(p *Plan, o *ValidateOptions) { p.Quality.Ctx, p.Quality.Chunks = 16, 1; o.CorpusTokens = 31 },
			[]string{"quality.corpus: the corpus has 31 tokens; ctx 16 x 1 chunks needs 32: give a longer text, or fewer chunks (at most 1)"}},
		{"corpus exactly long enough", func(p *Plan, o *ValidateOptions) { o.CorpusTokens = 2560 }, nil},
		{"corpus not counted", func(p *Plan, o *ValidateOptions) { o.CorpusTokens = 0 }, nil},
		{"quality ctx 15", func(p *Plan, _ *ValidateOptions) { p.Quality.Ctx = 15 }, []string{"quality.ctx: 15: want at least 16 tokens of context, or leave the field out for the default 128"}},
		{"quality chunks 0", func(p *Plan, _ *ValidateOptions) { p.Quality.Chunks = 0 }, []string{"quality.chunks: 0: want at least 1, or leave the field out for the default 20"}},
		{"memory_ctx 0", func(p *Plan, _ *ValidateOptions) { p.MemoryCtx = 0 }, nil},
		{"memory unknown", func(p *Plan, _ *ValidateOptions) { p.Memory = "disk" }, []string{`memory: "disk": want "bench" (the largest peak RSS of the candidate's llama-bench legs) or "none"`}},
		{"memory none", func(p *Plan, _ *ValidateOptions) { p.Memory = MemoryNone }, nil},
		{"negative depth", func(p *Plan, _ *ValidateOptions) { p.Speed.Depths = []int{0, 512, -1} }, []string{"speed.depths[2]: -1: a depth is 0 or more"}},
		{"a depth twice", func(p *Plan, _ *ValidateOptions) { p.Speed.Depths = []int{0, 512, 0} }, []string{"speed.depths[2]: 0 is listed twice"}},
		{"cv gate 1", func(p *Plan, _ *ValidateOptions) { p.Speed.Gates.CVTG = 1 }, nil},
		{"cv gate above 1", func(p *Plan, _ *ValidateOptions) { p.Speed.Gates.CVPPDepth = 1.5 },
			[]string{"speed.gates.cv_pp_depth: 1.5: want a fraction in (0, 1] (0.05 = 5%), or leave the field out for the default 0.10"}},
		{"cv gate negative", func(p *Plan, _ *ValidateOptions) { p.Speed.Gates.CVPPD0 = -0.1 },
			[]string{"speed.gates.cv_pp_d0: -0.1: want a fraction in (0, 1] (0.05 = 5%), or leave the field out for the default 0.05"}},
		{"reps 1", func(p *Plan, _ *ValidateOptions) { p.Speed.Reps = 1 }, nil},
		{"tolerance 0", func(p *Plan, _ *ValidateOptions) { p.Rule.Tolerance = f(0) }, nil},
		{"tolerance just below 0.5", func(p *Plan, _ *ValidateOptions) { p.Rule.Tolerance = f(0.49) }, nil},
		{"tolerance negative", func(p *Plan, _ *ValidateOptions) { p.Rule.Tolerance = f(-0.01) },
			[]string{"rule.tolerance: -0.01: want a fraction from 0 to below 0.5 (0.01 = within 1% of the best counts as tied)"}},
		{"tie-break twice", func(p *Plan, _ *ValidateOptions) { p.Rule.TieBreak = []string{TieOrder, TieKLDMean, TieOrder} }, []string{"rule.tie_break[2]: order is listed twice"}},
		{"a maximum of 0", func(p *Plan, _ *ValidateOptions) {
			l := &p.Rule.Limits
			l.KLDMeanMax, l.KLDP99Max, l.PPLRatioMax, l.FileMiBMax, l.PeakRSSMiBMax = f(0), f(0), f(0), f(0), f(0)
			p.MemoryCtx, l.ProjectedMiBMax = 4096, f(0)
		}, []string{"rule.limits.kld_mean_max: 0: a maximum is above 0", "rule.limits.kld_p99_max: 0: a maximum is above 0", "rule.limits.ppl_ratio_max: 0: a maximum is above 0",
			"rule.limits.file_mib_max: 0: a maximum is above 0", "rule.limits.peak_rss_mib_max: 0: a maximum is above 0", "rule.limits.projected_mib_max: 0: a maximum is above 0"}},
		{"the smallest maxima", func(p *Plan, _ *ValidateOptions) {
			l := &p.Rule.Limits
			l.KLDMeanMax, l.KLDP99Max, l.PPLRatioMax, l.FileMiBMax, l.PeakRSSMiBMax = f(1e-9), f(1e-9), f(1e-9), f(1e-9), f(1e-9)
			p.MemoryCtx, l.ProjectedMiBMax = 4096, f(1e-9)
		}, nil},
		{"same top p 0", func(p *Plan, _ *ValidateOptions) { p.Rule.Limits.SameTopPMin = f(0) },
			[]string{"rule.limits.same_top_p_min: 0: a fraction above 0 and at most 1 (0.9 = the top token agrees 90% of the time)"}},
		{"same top p 1", func(p *Plan, _ *ValidateOptions) { p.Rule.Limits.SameTopPMin = f(1) }, nil},
		{"same top p above 1", func(p *Plan, _ *ValidateOptions) { p.Rule.Limits.SameTopPMin = f(1.01) },
			[]string{"rule.limits.same_top_p_min: 1.01: a fraction above 0 and at most 1 (0.9 = the top token agrees 90% of the time)"}},
		{"peak rss limit, memory measured", func(p *Plan, _ *ValidateOptions) { p.Rule.Limits.PeakRSSMiBMax = f(100) }, nil},
		{"memory none, no peak rss limit", func(p *Plan, _ *ValidateOptions) { p.Memory = MemoryNone; p.Rule.Limits.PeakRSSMiBMax = nil }, nil},
		{"projected limit with memory_ctx", func(p *Plan, _ *ValidateOptions) { p.MemoryCtx = 4096; p.Rule.Limits.ProjectedMiBMax = f(100) }, nil},
	} {
		p, o := goodPlan(), base
		tc.edit(p, &o)
		if got := errorsOf(Validate(p, o)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestValidateReferenceType: an unquantized reference passes; one that does not say its type
// is a warning; a quantized one an error; a header not read is not judged.
func TestValidateReferenceType(t *testing.T) {
	for _, tc := range []struct {
		read       bool
		ft         string
		errs, warn int
	}{
		{true, "ALL_F32", 0, 0}, {true, "MOSTLY_BF16", 0, 0}, {true, "", 0, 1}, {true, "MOSTLY_Q4_0", 1, 0}, {false, "MOSTLY_Q4_0", 0, 0},
	} {
		var errs, warn []string
		for _, pr := range Validate(goodPlan(), ValidateOptions{ReferenceRead: tc.read, ReferenceFileType: tc.ft}) {
			if pr.Severity == study.SevError {
				errs = append(errs, pr.Msg)
			} else {
				warn = append(warn, pr.Path+": "+pr.Msg)
			}
		}
		if len(errs) != tc.errs || len(warn) != tc.warn {
			t.Errorf("read %v, %q: errors %q warnings %q", tc.read, tc.ft, errs, warn)
		}
		if tc.warn == 1 && !strings.HasPrefix(warn[0], "reference.path: the model does not say its file type") {
			t.Errorf("warning %q", warn[0])
		}
	}
}

// TestTokensNeeded: ctx x chunks, at least two windows.
func TestTokensNeeded(t *testing.T) {
	for _, tc := range []struct{ ctx, chunks, want int }{{128, 20, 2560}, {128, 1, 256}, {128, 2, 256}, {16, 3, 48}} {
		if got := TokensNeeded(tc.ctx, tc.chunks); got != tc.want {
			t.Errorf("TokensNeeded(%d, %d) = %d, want %d", tc.ctx, tc.chunks, got, tc.want)
		}
	}
}
