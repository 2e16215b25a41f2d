package quant

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func f(v float64) *float64 { return &v }

func goodPlan() *Plan {
	p := &Plan{Schema: SchemaQuant, Name: "which quant", Reference: FileRef{"medium-llama-f16.gguf", sha},
		Quants: []string{"Q8_0", "Q4_K_M", "Q4_0"}, Speed: Speed{Depths: []int{0, 512}},
		Quality: Quality{Corpus: FileRef{"corpus.txt", sha}},
		Rule:    Rule{Maximize: "tg@512", Limits: Limits{KLDMeanMax: f(0.01)}}}
	p.Defaults()
	return p
}

func errorsOf(probs []study.Problem) []string {
	var out []string
	for _, p := range probs {
		if p.Severity == study.SevError {
			out = append(out, p.Path+": "+p.Msg)
		}
	}
	return out
}

func TestDecodeIsStrict(t *testing.T) {
	_, err := Decode("plan.json", []byte("{\n  \"schema\": \"sparkbench.quant/v1\",\n  \"quant\": [\"Q4_0\"]\n}"))
	var de *study.DecodeError
	if !errors.As(err, &de) || de.Line != 3 || !strings.Contains(de.Msg, `unknown field "quant"`) || !strings.Contains(de.Msg, "docs/quant.md") {
		t.Fatalf("want an unknown-field error at line 3, got %v", err)
	}
	p, err := Decode("plan.json", []byte(`{"schema":"sparkbench.quant/v1","name":"x","quants":["Q4_0"]}`))
	if err != nil || p.Quants[0] != "Q4_0" {
		t.Fatalf("%v %+v", err, p)
	}
}

func TestValidate(t *testing.T) {
	types := []string{"Q4_0", "Q4_1", "Q8_0", "Q4_K_M", "IQ4_NL"}
	if errs := errorsOf(Validate(goodPlan(), ValidateOptions{Types: types, ReferenceRead: true, ReferenceFileType: "MOSTLY_F16", CorpusTokens: 10000})); len(errs) > 0 {
		t.Fatalf("a good plan: %v", errs)
	}
	cases := []struct {
		name string
		edit func(*Plan, *ValidateOptions)
		want string
	}{
		{"unknown type lists the valid ones", func(p *Plan, _ *ValidateOptions) { p.Quants = append(p.Quants, "Q4_K_Z") },
			"quants[3]: Q4_K_Z is not a type this build's llama-quantize knows; it knows Q4_0, Q4_1, Q8_0, Q4_K_M, IQ4_NL"},
		{"lower case is refused with the right spelling", func(p *Plan, _ *ValidateOptions) { p.Quants[0] = "q8_0" }, `quants[0]: "q8_0": write the type as llama-quantize names it, Q8_0`},
		{"a type twice", func(p *Plan, _ *ValidateOptions) { p.Quants = append(p.Quants, "Q8_0") }, "quants[3]: Q8_0 is listed twice"},
		{"quantized reference", func(_ *Plan, o *ValidateOptions) { o.ReferenceFileType = "MOSTLY_Q8_0" }, "reference.path: the reference is already quantized (MOSTLY_Q8_0)"},
		{"corpus too short says how many tokens", func(_ *Plan, o *ValidateOptions) { o.CorpusTokens = 2000 },
			"quality.corpus: the corpus has 2000 tokens; ctx 128 x 20 chunks needs 2560: give a longer text, or fewer chunks (at most 15)"},
		{"maximize at a depth not measured", func(p *Plan, _ *ValidateOptions) { p.Rule.Maximize = "tg@4096" }, "rule.maximize: tg@4096: depth 4096 is not among speed.depths [0 512]"},
		{"maximize that does not parse", func(p *Plan, _ *ValidateOptions) { p.Rule.Maximize = "speed" }, `rule.maximize: "speed": want TEST@DEPTH`},
		{"memory limit with no memory leg", func(p *Plan, _ *ValidateOptions) { p.Memory = MemoryNone; p.Rule.Limits.PeakRSSMiBMax = f(100) },
			`rule.limits.peak_rss_mib_max: set, but memory is "none"`},
		{"same top p as a percent", func(p *Plan, _ *ValidateOptions) { p.Rule.Limits.SameTopPMin = f(90) }, "rule.limits.same_top_p_min: 90: a fraction"},
		{"unknown tie-break", func(p *Plan, _ *ValidateOptions) { p.Rule.TieBreak = []string{"speed"} }, `rule.tie_break[0]: "speed": want one of kld_mean, file_size, peak_rss, order`},
		{"tolerance too wide", func(p *Plan, _ *ValidateOptions) { p.Rule.Tolerance = f(0.5) }, "rule.tolerance: 0.5: want a fraction"},
		{"a type that needs an importance matrix, without one", func(p *Plan, o *ValidateOptions) {
			p.Quants = append(p.Quants, "IQ2_XS")
			o.Types = append(o.Types, "IQ2_XS")
		},
			"quants[3]: IQ2_XS needs an importance matrix (llama-quantize refuses it without one): add imatrix"},
		{"an importance matrix on a calibration text too short", func(p *Plan, o *ValidateOptions) {
			p.Imatrix = &Imatrix{Calibration: FileRef{"calib.txt", sha}, Ctx: 128, Chunks: 4}
			o.CalibrationTokens = 300
		}, "imatrix.calibration: the calibration text has 300 tokens; ctx 128 x 4 chunks needs 512"},
		{"an importance matrix with a tiny chunk", func(p *Plan, _ *ValidateOptions) {
			p.Imatrix = &Imatrix{Calibration: FileRef{"calib.txt", sha}, Ctx: 8, Chunks: 4}
		}, "imatrix.ctx: 8: want at least 16"},
		{"a projected-memory limit with no projection", func(p *Plan, _ *ValidateOptions) { p.Rule.Limits.ProjectedMiBMax = f(100) },
			"rule.limits.projected_mib_max: set, but memory_ctx is not"},
		{"a negative memory context", func(p *Plan, _ *ValidateOptions) { p.MemoryCtx = -1 }, "memory_ctx: -1: give the context size"},
		{"no depths", func(p *Plan, _ *ValidateOptions) { p.Speed.Depths = nil; p.Rule.Maximize = "tg@0" }, "speed.depths: empty"},
	}
	for _, c := range cases {
		p, o := goodPlan(), ValidateOptions{Types: types, ReferenceRead: true, ReferenceFileType: "MOSTLY_F16", CorpusTokens: 10000}
		c.edit(p, &o)
		errs := errorsOf(Validate(p, o))
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, c.want) }) {
			t.Errorf("%s: want %q among %v", c.name, c.want, errs)
		}
	}
	// A missing SHA-256 is the window's "fill it in at Register", by its code.
	p := goodPlan()
	p.Reference.SHA256 = ""
	probs := Validate(p, ValidateOptions{})
	if !slices.ContainsFunc(probs, func(pr study.Problem) bool { return pr.Code == study.ProblemUnhashed && pr.Path == "reference.sha256" }) {
		t.Fatalf("no unhashed problem: %v", probs)
	}
	p = goodPlan()
	if probs := Validate(p, ValidateOptions{CorpusTokens: 100}); !slices.ContainsFunc(probs, func(pr study.Problem) bool { return pr.Code == ProblemCorpusShort }) {
		t.Fatalf("no corpus_short code: %v", probs)
	}
}

// TestSelectByHand: the rule's choice, worked by hand. Limits: mean KLD <= 0.01. Q2_K (KLD
// 0.05) is out. Of Q8_0 (100 t/s), Q5_0 (140), Q4_K_M (150) and Q4_0 (151), the best is 151;
// within 1% of it (>= 149.49): Q4_K_M and Q4_0; the first tie-break, the lower mean KLD, picks
// Q4_K_M (0.0014 < 0.0031). Without Q4_K_M the same rule picks Q4_0: the runner-up. On speed
// versus KLD, Q5_0 (140, 0.002) is beaten on both by Q4_K_M (150, 0.0014); the rest, Q2_K
// included, are the frontier.
func TestSelectByHand(t *testing.T) {
	mk := func(typ string, order int, tg, kld float64, mib int64) Candidate {
		return Candidate{Type: typ, Order: order, FileBytes: mib << 20, Speed: map[string]float64{"tg@512": tg, "tg@0": 2 * tg},
			KLD: &KLD{Mean: kld, P99: 10 * kld, SameTopP: 0.95, PPLRatio: 1.01}}
	}
	cands := []Candidate{mk("Q8_0", 0, 100, 0.0005, 27), mk("Q5_0", 1, 140, 0.002, 18), mk("Q4_K_M", 2, 150, 0.0014, 16), mk("Q4_0", 3, 151, 0.0031, 14), mk("Q2_K", 4, 200, 0.05, 10)}
	p := goodPlan()
	sel := Select(p.Rule, cands)
	if sel.Selected != "Q4_K_M" || sel.RunnerUp != "Q4_0" {
		t.Fatalf("selected %q, runner-up %q (%s)", sel.Selected, sel.RunnerUp, sel.Why)
	}
	if len(sel.Rejected) != 1 || sel.Rejected[0].Type != "Q2_K" || !slices.Equal(sel.Rejected[0].Codes, []string{FailKLDMean}) {
		t.Fatalf("rejected %+v", sel.Rejected)
	}
	if want := "Q4_K_M: tied on tg@512 within 1% with Q4_0, chosen by kld_mean > file_size > peak_rss > order"; sel.Why != want {
		t.Fatalf("why %q, want %q", sel.Why, want)
	}
	if !slices.Equal(sel.Frontier, []string{"Q8_0", "Q4_K_M", "Q4_0", "Q2_K"}) || !slices.Equal(sel.Dominated["Q5_0"], []string{"Q4_K_M"}) {
		t.Fatalf("frontier %v dominated %v", sel.Frontier, sel.Dominated)
	}
	// A file-size tie-break first picks the smaller Q4_0; a tolerance of 0 picks the fastest.
	r := p.Rule
	r.TieBreak = []string{TieFileSize}
	if s := Select(r, cands); s.Selected != "Q4_0" {
		t.Errorf("file_size first: %s", s.Selected)
	}
	r = p.Rule
	r.Tolerance = f(0)
	if s := Select(r, cands); s.Selected != "Q4_0" || !strings.HasPrefix(s.Why, "Q4_0: tg@512 151.00 t/s, the highest of the 4 candidates") {
		t.Errorf("tolerance 0: %s (%s)", s.Selected, s.Why)
	}
	// Every limit names its code; an unmeasured figure the rule needs rejects too.
	r = p.Rule
	r.Limits = Limits{KLDP99Max: f(0.02), SameTopPMin: f(0.96), PPLRatioMax: f(1.0), FileMiBMax: f(15), PeakRSSMiBMax: f(100)}
	s := Select(r, cands[3:4])
	want := []string{FailKLDP99, FailSameTopP, FailPPLRatio, FailMemoryMissing}
	if s.Selected != "" || !slices.Equal(s.Rejected[0].Codes, want) || !strings.HasPrefix(s.Why, "no candidate meets every limit") {
		t.Fatalf("codes %+v, want %v (%s)", s.Rejected, want, s.Why)
	}
	// The projected-memory limit: over it, and not projected.
	r = p.Rule
	r.Limits = Limits{ProjectedMiBMax: f(50)}
	big, none := cands[0], cands[1]
	big.Projected = &Projection{MiB: 81, Of: "host"}
	if s := Select(r, []Candidate{big, none}); len(s.Rejected) != 2 || !slices.Equal(s.Rejected[0].Codes, []string{FailProjected}) || !slices.Equal(s.Rejected[1].Codes, []string{FailProjectedMissing}) {
		t.Fatalf("projected: %+v", s.Rejected)
	}
	noSpeed := Candidate{Type: "Q3_K_M", Speed: map[string]float64{}}
	if s := Select(p.Rule, []Candidate{noSpeed}); !slices.Equal(s.Rejected[0].Codes, []string{FailSpeedMissing, FailKLDMissing}) {
		t.Fatalf("unmeasured: %+v", s.Rejected)
	}
}

// TestEstimateBytesIsAnUpperBound: the estimate from the generated medium F16 model's size is
// at least what this project's llama-quantize wrote for each type (sizes measured here: make
// models), and at most twice it.
func TestEstimateBytesIsAnUpperBound(t *testing.T) {
	const f16 = 51169952
	for typ, got := range map[string]int64{"Q8_0": 27205504, "Q4_K_M": 16490272, "Q4_0": 14458656} {
		est, ok := EstimateBytes(f16, "MOSTLY_F16", typ)
		if !ok || est < got || est > 2*got {
			t.Errorf("%s: estimate %d for a file of %d", typ, est, got)
		}
	}
	if _, ok := EstimateBytes(f16, "MOSTLY_Q8_0", "Q4_0"); ok {
		t.Error("a quantized reference has no estimate")
	}
}

func TestCacheKey(t *testing.T) {
	k := CacheKey(sha, "Q4_0", "", "build-1")
	if k != CacheKey(sha, "q4_0", "", "build-1") || len(k) != 64 {
		t.Fatalf("key %q is not stable", k)
	}
	for _, other := range []string{CacheKey(sha, "Q8_0", "", "build-1"), CacheKey(sha, "Q4_0", sha, "build-1"), CacheKey(sha, "Q4_0", "", "build-2"), CacheKey(strings.Repeat("1", 64), "Q4_0", "", "build-1")} {
		if other == k {
			t.Fatal("a different recipe has the same key")
		}
	}
}
