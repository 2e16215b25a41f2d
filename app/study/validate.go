package study

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sparkbench/app/textsafe"
	"sparkbench/runner/gguf"
	"sparkbench/runner/vocab"
)

// Severity of a validation problem: errors refuse the plan, warnings are shown.
type Severity string

const (
	SevError   Severity = "error"
	SevWarning Severity = "warning"
)

// Problem is one precise validation message, located by a JSON path such as "axes.depths[2]".
type Problem struct {
	Path     string   `json:"path"`
	Severity Severity `json:"severity"`
	Msg      string   `json:"message"`
	// Code names a problem a caller acts on, instead of matching its words (not in JSON).
	Code ProblemCode `json:"-"`
}

// ProblemCode names a kind of problem.
type ProblemCode string

// ProblemUnhashed: a file the plan names (a model; for capacity plans also the prompt plan or
// the quality cases) has no SHA-256 in it yet; registering from the window hashes it (models
// through the notebook's cache) and fills it in.
const ProblemUnhashed ProblemCode = "unhashed"

// ProblemPlaced: a value the person wrote that can never work as written (a model path with a
// comma, a name that is a bare number); a caller that has the plan file says where it is in
// it (jsonlex.PathOffset: file:line:col).
const ProblemPlaced ProblemCode = "placed"

// IsBareNumber reports whether s is a whole number as a reference to a study reads it (digits,
// with a sign or not): an ID, so never a study's name (store.FindStudy).
func IsBareNumber(s string) bool {
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// NumericNameMsg is why a study name that is a bare number is refused, for every kind.
func NumericNameMsg(name string) string {
	return fmt.Sprintf("the study name %q is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. \"probe %s\")", name, name)
}

// NameProblem is the problem of a plan's study name that is a bare number (path is the name's
// field), or nil.
func NameProblem(path, name string) *Problem {
	if !IsBareNumber(strings.TrimSpace(name)) {
		return nil
	}
	return &Problem{Path: path, Severity: SevError, Msg: NumericNameMsg(strings.TrimSpace(name)), Code: ProblemPlaced}
}

// ModelPathProblem is the problem of a model path that llama-bench cannot open (path is its
// field, file the path as resolved), or nil: llama-bench splits -m on commas, so a file whose
// path holds one can never be run.
func ModelPathProblem(path, file string) *Problem {
	before, _, comma := strings.Cut(file, ",")
	if !comma {
		return nil
	}
	return &Problem{Path: path, Severity: SevError, Code: ProblemPlaced,
		Msg: fmt.Sprintf("%s contains a comma, and llama-bench splits -m on commas (it would try to open %s): rename the file, or the folder, without one", file, before)}
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s: %s", p.Severity, p.Path, p.Msg) }

// ValidationError carries every error-level problem of a plan.
type ValidationError struct {
	File     string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var lines []string
	for _, p := range e.Problems {
		if p.Severity == SevError {
			lines = append(lines, p.Path+": "+p.Msg)
		}
	}
	return fmt.Sprintf("%s: plan refused (%d problem(s)): %s", e.File, len(lines), strings.Join(lines, "; "))
}

// HashFunc returns a model file's SHA-256 (hex); callers pass a cached, streaming hasher.
type HashFunc func(path string) (string, error)

// ValidateOptions says where relative paths start and how to hash models.
type ValidateOptions struct {
	PlanDir string
	Hash    HashFunc // nil: hashes are not checked (only their form)
	// BenchFlags are the flags the build's llama-bench lists in its --help
	// (llamacpp.HelpFlags); nil: extra_args are not checked against a build.
	BenchFlags map[string]bool
	// Devices are the build's devices as listed with the plan's env and endpoints
	// (studyrun.ListBuildDevices); nil: the device axes are checked by their form only.
	Devices *BuildDevices
	// History is the notebook's past measurements of each model (by model ID): the
	// repetition planner's CVs (nil: no history, no planner warnings: an adaptive target
	// max_reps cannot meet, a band prediction narrower than the plan resolves).
	History map[string]BenchHistory
}

// ModelInfo is what validation learned about a model file.
type ModelInfo struct {
	Path          string
	ContextLength uint64
	Header        *gguf.File
	SHA256        string // computed ("" when not hashed)
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// kvTypeNames are the KV-cache types llama-bench accepts for -ctk/-ctv.
var kvTypeNames = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range KVTypeNames() {
		m[t] = true
	}
	return m
}()

// flags the plan controls: extra_args must not set them.
var controlledFlags = map[string]string{
	"-m": "models", "--model": "models", "-o": "(always jsonl)", "--output": "(always jsonl)",
	"-p": "axes.n_prompt", "--n-prompt": "axes.n_prompt", "-n": "axes.n_gen", "--n-gen": "axes.n_gen",
	"-d": "axes.depths", "--n-depth": "axes.depths", "-r": "axes.reps", "--repetitions": "axes.reps",
	"-b": "axes.batch", "--batch-size": "axes.batch", "-ub": "axes.ubatch", "--ubatch-size": "axes.ubatch",
	"-fa": "axes.flash_attn", "--flash-attn": "axes.flash_attn", "-ctk": "axes.kv_types", "--cache-type-k": "axes.kv_types",
	"-ctv": "axes.kv_types", "--cache-type-v": "axes.kv_types", "-t": "axes.threads", "--threads": "axes.threads",
	"-ngl": "axes.ngl", "--n-gpu-layers": "axes.ngl",
	"-dev": "axes.devices", "--device": "axes.devices", "-sm": "axes.split_mode", "--split-mode": "axes.split_mode",
	"-ts": "axes.tensor_split", "--tensor-split": "axes.tensor_split", "-ncmoe": "axes.n_cpu_moe", "--n-cpu-moe": "axes.n_cpu_moe",
	"-ot": "axes.override_tensors", "--override-tensor": "axes.override_tensors", "-nkvo": "axes.no_kv_offload",
	"--no-kv-offload": "axes.no_kv_offload", "-lm": "axes.load_mode", "--load-mode": "axes.load_mode",
	"-rpc": "axes.rpc", "--rpc": "axes.rpc",
}

// Validate checks a plan (after Defaults) and returns every problem, errors and warnings, plus
// what it read of each model. Nothing is written anywhere.
func Validate(p *Plan, opts ValidateOptions) ([]Problem, map[string]ModelInfo) {
	v := &validator{p: p, opts: opts, models: map[string]ModelInfo{}}
	v.run()
	return v.problems, v.models
}

// CheckBenchFlags refuses every flag in axes.extra_args that the build's llama-bench does not
// list in its --help (known; nil checks nothing): each leg would otherwise end bad_args.
func CheckBenchFlags(p *Plan, known map[string]bool) []Problem {
	if known == nil {
		return nil
	}
	var out []Problem
	for i, arg := range p.Axes.ExtraArgs {
		if _, controlled := controlledFlags[arg]; controlled {
			continue // reported as set by the plan
		}
		if len(vocab.UnknownFlags([]string{arg}, known)) > 0 {
			out = append(out, Problem{Path: fmt.Sprintf("axes.extra_args[%d]", i), Severity: SevError,
				Msg: fmt.Sprintf("%s is not a flag of this build's llama-bench (its --help does not list it); check the spelling, or the build (llama-bench --help)", arg)})
		}
	}
	return out
}

// Errors filters error-level problems.
func Errors(ps []Problem) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Severity == SevError {
			out = append(out, p)
		}
	}
	return out
}

type validator struct {
	p        *Plan
	opts     ValidateOptions
	problems []Problem
	models   map[string]ModelInfo
	modelIDs map[string]bool
	legs     map[string]bool
}

func (v *validator) errf(path, format string, a ...any) {
	v.problems = append(v.problems, Problem{Path: path, Severity: SevError, Msg: fmt.Sprintf(format, a...)})
}

func (v *validator) warnf(path, format string, a ...any) {
	v.problems = append(v.problems, Problem{Path: path, Severity: SevWarning, Msg: fmt.Sprintf(format, a...)})
}

func (v *validator) run() {
	p := v.p
	if p.Schema != SchemaThroughput {
		v.errf("schema", "%q is not a throughput plan schema; want %q", p.Schema, SchemaThroughput)
	}
	if strings.TrimSpace(p.Name) == "" {
		v.errf("name", "empty; give the study a name")
	} else if pr := NameProblem("name", p.Name); pr != nil {
		v.problems = append(v.problems, *pr)
	}
	v.checkText()
	v.problems = append(v.problems, CheckLaunchWrapper("build.launch_wrapper", p.Build.LaunchWrapper)...)
	v.checkKVQuality()
	for _, pr := range v.p.Telemetry.Validate("telemetry") {
		v.errf(pr.Path, "%s", pr.Msg)
	}
	v.checkModels()
	v.checkAxes()
	v.checkDevices()
	if v.opts.Devices != nil {
		v.problems = append(v.problems, CheckDevices(v.p, *v.opts.Devices)...)
	}
	switch p.Split {
	case SplitCombined, SplitPerDepth, SplitCombinedModel:
	default:
		v.errf("split", "%q is not a split; want %q, %q or %q", p.Split, SplitCombined, SplitPerDepth, SplitCombinedModel)
	}
	v.checkGates()
	if r := p.Retries; r != nil && (*r < 0 || *r > MaxRetries) {
		v.errf("retries", "%d: want 0 to %d more attempts for a leg that ended without results (leave it out for %d)", *r, MaxRetries, DefaultRetries)
	}
	if len(Errors(v.problems)) == 0 {
		legs, err := Expand(p, v.opts.PlanDir)
		if err != nil {
			v.errf("repeatability.leg", "%v", err)
		}
		v.legs = map[string]bool{}
		for _, l := range legs {
			v.legs[l.ID] = true
		}
	}
	v.checkRepeatability()
	v.checkCanary()
	v.checkConditions()
	v.checkBandwidth()
	v.checkPredictions()
	v.checkAdaptive()
	v.checkResolution()
}

// TextProblem is the error of a plan's free-text field that holds a control character (or is
// not UTF-8); nil when it is clean. oneLine refuses tab and newline too.
func TextProblem(path, s string, oneLine bool) *Problem {
	err := textsafe.Check(path, s)
	if oneLine {
		err = textsafe.CheckLine(path, s)
	}
	if err == nil {
		return nil
	}
	return &Problem{Path: path, Severity: SevError, Msg: err.Error()}
}

// checkText refuses control characters in the plan's free text: it is printed to terminals
// and into receipts.
func (v *validator) checkText() {
	p := v.p
	check := func(path, s string, line bool) {
		if pr := TextProblem(path, s, line); pr != nil {
			v.problems = append(v.problems, *pr)
		}
	}
	check("name", p.Name, true)
	check("description", p.Description, false)
	for i, m := range p.Models {
		check(fmt.Sprintf("models[%d].source", i), m.Source, true)
		check(fmt.Sprintf("models[%d].revision", i), m.Revision, true)
	}
	for i, c := range p.Conditions {
		check(fmt.Sprintf("conditions[%d].text", i), c.Text, false)
	}
	for i, pr := range p.Predictions {
		check(fmt.Sprintf("predictions[%d].text", i), pr.Text, false)
	}
}

func (v *validator) checkModels() {
	p := v.p
	v.modelIDs = map[string]bool{}
	if len(p.Models) == 0 {
		v.errf("models", "empty; list at least one GGUF model")
	}
	seenPath := map[string]string{}
	for i, m := range p.Models {
		at := fmt.Sprintf("models[%d]", i)
		if !idRE.MatchString(m.ID) {
			v.errf(at+".id", "%q: want 1-64 letters, digits, '.', '_' or '-'", m.ID)
		} else if v.modelIDs[m.ID] {
			v.errf(at+".id", "%q is used twice; model IDs must be unique", m.ID)
		}
		v.modelIDs[m.ID] = true
		if m.Path == "" {
			v.errf(at+".path", "empty; give the GGUF file's path")
			continue
		}
		path := ResolvePath(v.opts.PlanDir, m.Path)
		if pr := ModelPathProblem(at+".path", path); pr != nil {
			v.problems = append(v.problems, *pr)
			continue
		}
		if other, dup := seenPath[path]; dup {
			v.errf(at+".path", "%s is already model %q: duplicate legs", path, other)
		}
		seenPath[path] = m.ID
		st, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			v.errf(at+".path", "%s does not exist; check the path (relative paths start at the plan's folder)", path)
			continue
		case err != nil:
			v.errf(at+".path", "%v", err)
			continue
		case st.IsDir():
			v.errf(at+".path", "%s is a folder; give the .gguf file", path)
			continue
		}
		h, err := gguf.ReadFile(path)
		if err != nil {
			v.errf(at+".path", "%v", err)
			continue
		}
		info := ModelInfo{Path: path, ContextLength: h.ContextLength, Header: h}
		switch {
		case m.SHA256 == "":
			v.errf(at+".sha256", "model %q is unhashed; run `sparkbench model verify %s` and put the SHA-256 here (from the source, if it publishes one)", m.ID, m.Path)
			v.problems[len(v.problems)-1].Code = ProblemUnhashed
		case !hexRE.MatchString(m.SHA256):
			v.errf(at+".sha256", "%q is not a SHA-256 (want 64 lowercase hex digits)", m.SHA256)
		case v.opts.Hash != nil:
			got, err := v.opts.Hash(path)
			if err != nil {
				v.errf(at+".sha256", "hash %s: %v", path, err)
				break
			}
			info.SHA256 = got
			if got != m.SHA256 {
				v.errf(at+".sha256", "MISMATCH: %s hashes to %s, the plan expects %s; the file differs from the one you registered: download it again, or fix the expected hash", path, got, m.SHA256)
			}
		}
		v.models[m.ID] = info
	}
}

func (v *validator) checkAxes() {
	a := v.p.Axes
	// A list the file wrote empty is not replaced by its default (Defaults fills only absent
	// fields): it is refused, saying what leaving it out would mean.
	for _, l := range []struct {
		path, def string
		n         int
	}{{"axes.ubatch", "[512]", len(a.Ubatch)}, {"axes.batch", "[2048]", len(a.Batch)}, {"axes.flash_attn", `["auto"]`, len(a.FlashAttn)},
		{"axes.kv_types", `[{"k":"f16","v":"f16"}]`, len(a.KV)}, {"axes.ngl", "[-1]", len(a.NGL)}} {
		if l.n == 0 && v.p.Given(l.path) {
			v.errf(l.path, "an empty list; give at least one value, or leave the field out for the default %s", l.def)
		}
	}
	intList := func(name string, xs []int, min int, required bool) {
		at := "axes." + name
		if len(xs) == 0 {
			if required {
				v.errf(at, "empty axis; give at least one value")
			}
			return
		}
		seen := map[int]bool{}
		for i, x := range xs {
			if x < min {
				v.errf(fmt.Sprintf("%s[%d]", at, i), "%d is below the minimum %d", x, min)
			}
			if seen[x] {
				v.errf(fmt.Sprintf("%s[%d]", at, i), "%d is listed twice: duplicate legs", x)
			}
			seen[x] = true
		}
	}
	intList("depths", a.Depths, 0, true)
	intList("n_prompt", a.NPrompt, 0, true)
	intList("n_gen", a.NGen, 0, true)
	intList("ubatch", a.Ubatch, 1, true)
	intList("batch", a.Batch, 1, true)
	intList("threads", a.Threads, 1, false)
	intList("ngl", a.NGL, -1, true)
	if len(a.NPrompt) > 0 && len(a.NGen) > 0 && maxInt(a.NPrompt) == 0 && maxInt(a.NGen) == 0 {
		v.errf("axes", "n_prompt and n_gen are all 0: there is no test to run")
	}
	if v.p.Adaptive != nil {
		if a.Reps != 0 {
			v.warnf("axes.reps", "%d is not used: adaptive.min_reps to adaptive.max_reps decide the repetitions; leave it out", a.Reps)
		}
	} else if a.Reps < 1 || a.Reps > 1000 {
		v.errf("axes.reps", "%d: want 1 to 1000 repetitions", a.Reps)
	} else if a.Reps < 3 {
		v.warnf("axes.reps", "%d repetitions give no confidence interval; use at least 3", a.Reps)
	}
	if len(a.FlashAttn) == 0 {
		v.errf("axes.flash_attn", "empty axis; give on, off or auto")
	}
	seenFA := map[string]bool{}
	for i, f := range a.FlashAttn {
		if f != "on" && f != "off" && f != "auto" {
			v.errf(fmt.Sprintf("axes.flash_attn[%d]", i), "%q: want on, off or auto", f)
		}
		if seenFA[f] {
			v.errf(fmt.Sprintf("axes.flash_attn[%d]", i), "%q is listed twice: duplicate legs", f)
		}
		seenFA[f] = true
	}
	v.problems = append(v.problems, CheckKVTypes("axes.kv_types", a.KV)...)
	for i, arg := range a.ExtraArgs {
		if owner, ok := controlledFlags[arg]; ok {
			v.errf(fmt.Sprintf("axes.extra_args[%d]", i), "%s is set by the plan (%s); remove it from extra_args", arg, owner)
		}
	}
	v.problems = append(v.problems, CheckBenchFlags(v.p, v.opts.BenchFlags)...)
	// ubatch larger than every prompt cannot fill (the seed's untestable ubatch sweep).
	// A single ubatch larger than the prompt is llama-bench's normal default (512 with -p 64).
	if maxP := maxInt(a.NPrompt); maxP > 0 && len(a.Ubatch) > 1 {
		for i, ub := range a.Ubatch {
			if ub > maxP {
				v.warnf(fmt.Sprintf("axes.ubatch[%d]", i), "ubatch %d is larger than the longest prompt (%d tokens): it cannot fill, so this sweep point measures nothing new; raise n_prompt to at least %d", ub, maxP, ub)
			}
		}
	}
	// Depth plus the longest test must fit every model's context.
	if len(a.Depths) > 0 {
		need := maxInt(a.Depths) + max(maxInt(a.NPrompt), maxInt(a.NGen))
		for _, m := range v.p.Models {
			info, ok := v.models[m.ID]
			if ok && info.ContextLength > 0 && uint64(need) > info.ContextLength {
				v.errf("axes.depths", "depth %d + test %d = %d tokens exceeds model %q's context length %d; drop the deeper depths for this model",
					maxInt(a.Depths), need-maxInt(a.Depths), need, m.ID, info.ContextLength)
			}
		}
	}
}

func (v *validator) checkGates() {
	g := v.p.Gates
	for _, c := range []struct {
		name string
		val  float64
	}{{"cv_tg", g.CVTG}, {"cv_pp_depth", g.CVPPDepth}, {"cv_pp_d0", g.CVPPD0}} {
		if !(c.val > 0 && c.val <= 1) {
			v.errf("gates."+c.name, "%g: want a fraction in (0, 1], e.g. 0.05 for 5%%", c.val)
		}
	}
	if msg := CheckOnCV(g.OnCV, v.p.given["gates.on_cv"]); msg != "" {
		v.errf("gates.on_cv", "%s", msg)
	}
}

// CheckOnCV says what is wrong with a plan's on_cv value ("" when nothing is); given: the
// field is written in the file (an explicit "" is refused, not read as the default).
func CheckOnCV(val string, given bool) string {
	switch {
	case val == OnCVHalt || val == OnCVCount:
		return ""
	case val == "" && !given:
		return ""
	}
	return fmt.Sprintf("%q: want %q (a flagged process halts its leg, the default) or %q (it counts with its flag)", val, OnCVHalt, OnCVCount)
}

func (v *validator) checkRepeatability() {
	r := v.p.Repeatability
	if r == nil {
		return
	}
	if len(r.At) == 0 {
		v.errf("repeatability.at", "empty; give start, middle and/or end")
	}
	seen := map[string]bool{}
	for i, at := range r.At {
		if at != "start" && at != "middle" && at != "end" {
			v.errf(fmt.Sprintf("repeatability.at[%d]", i), "%q: want start, middle or end", at)
		}
		if seen[at] {
			v.errf(fmt.Sprintf("repeatability.at[%d]", i), "%q is listed twice", at)
		}
		seen[at] = true
	}
}

func (v *validator) checkCanary() {
	c := v.p.Canary
	if c == nil {
		return
	}
	if !v.modelIDs[c.Model] {
		v.errf("canary.model", "%q is not a model ID of this plan", c.Model)
	}
	if c.NPrompt < 1 || c.NGen < 1 {
		v.errf("canary", "n_prompt and n_gen must be at least 1")
	}
	if !(c.MaxDrop > 0 && c.MaxDrop < 1) {
		v.errf("canary.max_drop", "%g: want a fraction in (0, 1)", c.MaxDrop)
	}
	if c.BaselineTG < 0 {
		v.errf("canary.baseline_tg", "%g: want 0 (set by the first canary) or a positive t/s", c.BaselineTG)
	}
}

func (v *validator) checkConditions() {
	for i, c := range v.p.Conditions {
		if strings.TrimSpace(c.Text) == "" {
			v.errf(fmt.Sprintf("conditions[%d].text", i), "empty; say what the condition is")
		}
		for j, l := range c.Legs {
			if v.legs != nil && !v.legs[l] {
				v.errf(fmt.Sprintf("conditions[%d].legs[%d]", i, j), "%q is not a leg of this plan", l)
			}
		}
	}
}

func (v *validator) checkBandwidth() {
	b := v.p.Bandwidth
	if b == nil {
		return
	}
	if b.Measure && b.GBs != 0 {
		v.errf("bandwidth", "give either gbs or measure, not both")
	} else if !b.Measure && !(b.GBs > 0 && b.GBs < 100000) {
		v.errf("bandwidth.gbs", "%g: want a positive GB/s (or \"measure\": true)", b.GBs)
	}
}

var testRE = regexp.MustCompile(`^(pp|tg|pg)(\d*)$`)

// checkKVQuality checks the KV quality gate: a mean KLD limit above 0, on a plan that has a
// cache type other than f16 to check.
func (v *validator) checkKVQuality() {
	g := v.p.KVQuality
	if g == nil {
		return
	}
	if g.KLDMeanMax <= 0 || g.KLDMeanMax > 1 {
		v.errf("kv_quality.kld_mean_max", "%g: want a mean KL divergence above 0 and at most 1 (e.g. 0.01)", g.KLDMeanMax)
	}
	for _, kv := range v.p.Axes.KV {
		if kv != (KVType{K: "f16", V: "f16"}) {
			return
		}
	}
	v.warnf("kv_quality", "the plan measures only f16 KV caches: there is nothing for the gate to check; add a cheaper type to axes.kv_types, or drop kv_quality")
}
