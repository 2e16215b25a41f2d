package quant

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app/study"
)

// ValidateOptions are what a plan is checked against beyond its own text (each zero value:
// not checked).
type ValidateOptions struct {
	// Types are the quant types the build's llama-quantize lists.
	Types []string
	// ReferenceFileType is the reference's GGUF general.file_type name ("MOSTLY_F16",
	// "ALL_F32", "MOSTLY_Q4_0", …); ReferenceRead says the header was read at all.
	ReferenceFileType string
	ReferenceRead     bool
	// CorpusTokens is how many tokens the reference's tokenizer makes of the corpus, and
	// CalibrationTokens of the importance matrix's calibration text.
	CorpusTokens      int
	CalibrationTokens int
	// Hash hashes a file the plan names (relative to PlanDir), to check its SHA-256.
	Hash    study.HashFunc
	PlanDir string
}

// Problem codes a caller acts on.
const (
	// ProblemCorpusShort: the corpus has fewer tokens than the quality settings need.
	ProblemCorpusShort study.ProblemCode = "corpus_short"
)

// UnquantizedFileTypes are the reference file types a ladder starts from. A reference that is
// already quantized is refused: every candidate's KLD would be measured against a model that
// has already lost what quantization loses, so the ladder would understate every loss.
var UnquantizedFileTypes = []string{"ALL_F32", "MOSTLY_F16", "MOSTLY_BF16"}

var (
	maximizeRE = regexp.MustCompile(`^(pp|tg)@([0-9]+)$`)
)

type validator struct {
	p        *Plan
	opts     ValidateOptions
	problems []study.Problem
}

func (v *validator) errf(path, format string, a ...any) *study.Problem {
	v.problems = append(v.problems, study.Problem{Path: path, Severity: study.SevError, Msg: fmt.Sprintf(format, a...)})
	return &v.problems[len(v.problems)-1]
}

func (v *validator) warnf(path, format string, a ...any) {
	v.problems = append(v.problems, study.Problem{Path: path, Severity: study.SevWarning, Msg: fmt.Sprintf(format, a...)})
}

// Validate checks a plan (its defaults filled in) and returns every problem with its JSON path.
func Validate(p *Plan, opts ValidateOptions) []study.Problem {
	v := &validator{p: p, opts: opts}
	if p.Schema != SchemaQuant {
		v.errf("schema", "%q: want %q", p.Schema, SchemaQuant)
	}
	if strings.TrimSpace(p.Name) == "" {
		v.errf("name", "empty; give the study a name")
	} else if pr := study.NameProblem("name", p.Name); pr != nil {
		v.problems = append(v.problems, *pr)
	}
	v.checkFile("reference", p.Reference, "the reference model")
	v.checkReference()
	v.checkQuants()
	if im := p.Imatrix; im != nil {
		v.checkFile("imatrix.calibration", im.Calibration, "the calibration text")
		if im.Ctx < 16 {
			v.errf("imatrix.ctx", "%d: want at least 16 tokens per chunk, or leave the field out for the default 512", im.Ctx)
		}
		if im.Chunks < 1 {
			v.errf("imatrix.chunks", "%d: want at least 1, or leave the field out for the default 16", im.Chunks)
		}
		v.checkTokens("imatrix.calibration", "the calibration text", v.opts.CalibrationTokens, im.Ctx, im.Chunks)
	}
	if len(p.KVTypes) == 0 && p.Given("kv_types") {
		v.errf("kv_types", "an empty list; give at least one KV cache type (e.g. [{\"k\": \"q8_0\", \"v\": \"q8_0\"}]), or leave the field out for one candidate per quant on the f16 cache")
	}
	v.problems = append(v.problems, study.CheckKVTypes("kv_types", p.KVTypes)...)
	v.checkSpeed()
	v.checkQuality()
	if p.MemoryCtx < 0 {
		v.errf("memory_ctx", "%d: give the context size llama-fit-params projects memory at (e.g. 4096), or leave it out", p.MemoryCtx)
	}
	if p.Memory != MemoryBench && p.Memory != MemoryNone {
		v.errf("memory", "%q: want %q (the largest peak RSS of the candidate's llama-bench legs) or %q", p.Memory, MemoryBench, MemoryNone)
	}
	v.checkRule()
	v.checkPredictions()
	for _, pr := range p.Telemetry.Validate("telemetry") {
		v.errf(pr.Path, "%s", pr.Msg)
	}
	return v.problems
}

func (v *validator) checkFile(at string, f FileRef, what string) {
	v.problems = append(v.problems, study.CheckFileRef(at, f.Path, f.SHA256, what, v.opts.PlanDir, v.opts.Hash)...)
}

func (v *validator) checkReference() {
	if !v.opts.ReferenceRead {
		return
	}
	ft := v.opts.ReferenceFileType
	switch {
	case ft == "":
		v.warnf("reference.path", "the model does not say its file type (general.file_type); make sure it is F32, F16 or BF16: the ladder measures every quant against it")
	case !slices.Contains(UnquantizedFileTypes, ft):
		v.errf("reference.path", "the reference is already quantized (%s); give the F32, F16 or BF16 model it came from: KLD against a quantized reference understates every candidate's loss", ft)
	}
}

func (v *validator) checkQuants() {
	p := v.p
	if len(p.Quants) == 0 {
		v.errf("quants", "empty; list the quant types to try, e.g. [\"Q8_0\", \"Q4_K_M\", \"Q4_0\"]")
	}
	seen := map[string]bool{}
	for i, q := range p.Quants {
		at := fmt.Sprintf("quants[%d]", i)
		key := strings.ToUpper(strings.TrimSpace(q))
		switch {
		case key == "":
			v.errf(at, "empty; give a quant type")
			continue
		case seen[key]:
			v.errf(at, "%s is listed twice", q)
			continue
		case key != q:
			v.errf(at, "%q: write the type as llama-quantize names it, %s", q, key)
		}
		seen[key] = true
		if v.opts.Types != nil && !slices.ContainsFunc(v.opts.Types, func(t string) bool { return strings.EqualFold(t, key) }) {
			v.errf(at, "%s is not a type this build's llama-quantize knows; it knows %s", q, strings.Join(v.opts.Types, ", "))
		}
		if p.Imatrix == nil && slices.Contains(NeedImatrix, key) {
			v.errf(at, "%s needs an importance matrix (llama-quantize refuses it without one): add imatrix with a calibration text, or drop %s", key, key)
		}
	}
}

// NeedImatrix are the types llama-quantize refuses to make without an importance matrix.
var NeedImatrix = []string{"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S"}

func (v *validator) checkSpeed() {
	s := v.p.Speed
	if len(s.Depths) == 0 {
		v.errf("speed.depths", "empty; give the KV depths to measure at, e.g. [0, 512]")
	}
	seen := map[int]bool{}
	for i, d := range s.Depths {
		switch {
		case d < 0:
			v.errf(fmt.Sprintf("speed.depths[%d]", i), "%d: a depth is 0 or more", d)
		case seen[d]:
			v.errf(fmt.Sprintf("speed.depths[%d]", i), "%d is listed twice", d)
		}
		seen[d] = true
	}
	for _, g := range []struct {
		at  string
		val float64
		def string
	}{{"speed.gates.cv_tg", s.Gates.CVTG, "0.05"}, {"speed.gates.cv_pp_depth", s.Gates.CVPPDepth, "0.10"}, {"speed.gates.cv_pp_d0", s.Gates.CVPPD0, "0.05"}} {
		switch {
		case g.val == 0 && v.p.Given(g.at):
			v.errf(g.at, "0: want a fraction in (0, 1] (0.05 = 5%%), or leave the field out for the default %s", g.def)
		case g.val < 0 || g.val > 1:
			v.errf(g.at, "%g: want a fraction in (0, 1] (0.05 = 5%%), or leave the field out for the default %s", g.val, g.def)
		}
	}
	if msg := study.CheckOnCV(s.Gates.OnCV, v.p.Given("speed.gates.on_cv")); msg != "" {
		v.errf("speed.gates.on_cv", "%s", msg)
	}
	for _, f := range []struct {
		at  string
		val int
		def int
	}{{"speed.n_prompt", s.NPrompt, 512}, {"speed.n_gen", s.NGen, 128}, {"speed.reps", s.Reps, 5}, {"speed.threads", s.Threads, 1}} {
		if f.val < 1 {
			v.errf(f.at, "%d: want at least 1, or leave the field out for the default %d", f.val, f.def)
		}
	}
}

// TokensNeeded is how many corpus tokens llama-perplexity needs for chunks chunks of ctx
// tokens: each chunk is a window of ctx tokens, and the tool refuses a text of fewer than two
// windows whatever the chunks.
func TokensNeeded(ctx, chunks int) int { return ctx * max(chunks, 2) }

func (v *validator) checkQuality() {
	q := v.p.Quality
	v.checkFile("quality.corpus", q.Corpus, "the quality corpus")
	if q.Ctx < 16 {
		v.errf("quality.ctx", "%d: want at least 16 tokens of context, or leave the field out for the default 128", q.Ctx)
	}
	if q.Chunks < 1 {
		v.errf("quality.chunks", "%d: want at least 1, or leave the field out for the default 20", q.Chunks)
	}
	v.checkTokens("quality.corpus", "the corpus", v.opts.CorpusTokens, q.Ctx, q.Chunks)
}

// checkTokens refuses a text (what, at JSON path at) of n tokens (0: not counted) that is
// shorter than ctx × chunks tokens, saying how many chunks it can hold.
func (v *validator) checkTokens(at, what string, n, ctx, chunks int) {
	if n <= 0 || ctx < 16 || chunks < 1 {
		return
	}
	if need := TokensNeeded(ctx, chunks); n < need {
		v.errf(at, "%s has %d tokens; ctx %d x %d chunks needs %d: give a longer text, or fewer chunks (at most %d)",
			what, n, ctx, chunks, need, n/ctx).Code = ProblemCorpusShort
	}
}

func (v *validator) checkRule() {
	r := v.p.Rule
	if m := maximizeRE.FindStringSubmatch(r.Maximize); m == nil {
		v.errf("rule.maximize", "%q: want TEST@DEPTH, e.g. tg@512 or pp@0", r.Maximize)
	} else if d, _ := strconv.Atoi(m[2]); !slices.Contains(v.p.Speed.Depths, d) {
		v.errf("rule.maximize", "%s: depth %d is not among speed.depths %v", r.Maximize, d, v.p.Speed.Depths)
	}
	if t := r.Tolerance; t != nil && (*t < 0 || *t >= 0.5) {
		v.errf("rule.tolerance", "%g: want a fraction from 0 to below 0.5 (0.01 = within 1%% of the best counts as tied)", *t)
	}
	if len(r.TieBreak) == 0 && v.p.Given("rule.tie_break") {
		v.errf("rule.tie_break", "an empty list; give the chain (e.g. [%q, %q]), or leave the field out for the default %s", TieKLDMean, TieOrder, strings.Join(DefaultTieBreak, ", "))
	}
	seen := map[string]bool{}
	for i, k := range r.TieBreak {
		at := fmt.Sprintf("rule.tie_break[%d]", i)
		switch {
		case !slices.Contains(DefaultTieBreak, k):
			v.errf(at, "%q: want one of %s", k, strings.Join(DefaultTieBreak, ", "))
		case seen[k]:
			v.errf(at, "%s is listed twice", k)
		}
		seen[k] = true
	}
	l := r.Limits
	for _, f := range []struct {
		at  string
		val *float64
	}{{"kld_mean_max", l.KLDMeanMax}, {"kld_p99_max", l.KLDP99Max}, {"ppl_ratio_max", l.PPLRatioMax}, {"file_mib_max", l.FileMiBMax}, {"peak_rss_mib_max", l.PeakRSSMiBMax}, {"projected_mib_max", l.ProjectedMiBMax}} {
		if f.val != nil && *f.val <= 0 {
			v.errf("rule.limits."+f.at, "%g: a maximum is above 0", *f.val)
		}
	}
	if m := l.SameTopPMin; m != nil && (*m <= 0 || *m > 1) {
		v.errf("rule.limits.same_top_p_min", "%g: a fraction above 0 and at most 1 (0.9 = the top token agrees 90%% of the time)", *m)
	}
	if l.ProjectedMiBMax != nil && v.p.MemoryCtx == 0 {
		v.errf("rule.limits.projected_mib_max", "set, but memory_ctx is not: nothing would project it; set memory_ctx (e.g. 4096) or drop the limit")
	}
	if l.PeakRSSMiBMax != nil && v.p.Memory == MemoryNone {
		v.errf("rule.limits.peak_rss_mib_max", "set, but memory is %q: nothing would measure it; set memory to %q or drop the limit", MemoryNone, MemoryBench)
	}
}
