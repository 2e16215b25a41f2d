package capacity

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/vocab"
)

// ValidateOptions says where relative paths start and how to hash files.
type ValidateOptions struct {
	PlanDir string
	// Hash returns a file's SHA-256; nil: model and prompt-plan files are neither opened nor
	// hashed (only the form of their references is checked), which is what assembly uses.
	Hash study.HashFunc
	// ServerFlags, when not nil, are the flags the llama-server that will run the plan
	// accepts (llamacpp.HelpFlags of ServerBinary): a server_flags argument that looks like a
	// flag and is not one of them is refused, naming it, instead of every server lifetime
	// failing to start.
	ServerFlags  map[string]bool
	ServerBinary string
}

// CheckServerFlags refuses every candidate's server_flags argument that is a flag (it starts
// with "-" and is not a negative number) the llama-server at bin does not list in its --help
// (known, from llamacpp.HelpFlags).
func CheckServerFlags(p *Plan, known map[string]bool, bin string) []study.Problem {
	var out []study.Problem
	for i, c := range p.Candidates {
		for j, f := range c.ServerFlags {
			if _, harness := serverControlled[flagName(f)]; harness {
				continue // refused by Validate with its own reason
			}
			if len(vocab.UnknownFlags([]string{f}, known)) == 0 {
				continue
			}
			out = append(out, study.Problem{Path: fmt.Sprintf("candidates[%d].server_flags[%d]", i, j), Severity: study.SevError,
				Msg: fmt.Sprintf("%q is not a flag of llama-server (%s --help does not list it; llama-server takes a flag's value as the next argument, not after '='): every server lifetime would fail to start; fix its spelling or remove it", f, bin)})
		}
	}
	return out
}

func flagName(f string) string {
	name, _, _ := strings.Cut(f, "=")
	return name
}

var (
	idRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// serverControlled are the llama-server flags a candidate's server_flags may not set: the
// harness sets them per server lifetime (only they may differ between a candidate's
// configurations) or from the candidate's model.
var serverControlled = map[string]string{
	"-np": "slots", "--parallel": "slots",
	"-c": "ctx_per_slot (the harness passes --ctx-size = ctx_per_slot x P)", "--ctx-size": "ctx_per_slot (the harness passes --ctx-size = ctx_per_slot x P)",
	"--port": "the harness (a free local port per server)", "--host": "the harness (127.0.0.1)",
	"-m": "candidates[].model", "--model": "candidates[].model",
}

// verbosityFlags raise llama-server's log level so the load block (and its markers) is logged.
var verbosityFlags = []string{"-lv", "--log-verbosity", "-v", "--verbose", "--log-verbose"}

// Validate checks a plan (after Defaults) and returns every problem, errors and warnings.
func Validate(p *Plan, opts ValidateOptions) []study.Problem {
	v := &validator{p: p, opts: opts, ids: map[string]bool{}}
	v.run()
	return v.problems
}

type validator struct {
	p        *Plan
	opts     ValidateOptions
	problems []study.Problem
	ids      map[string]bool
}

func (v *validator) errf(path, format string, a ...any) {
	v.problems = append(v.problems, study.Problem{Path: path, Severity: study.SevError, Msg: fmt.Sprintf(format, a...)})
}

func (v *validator) warnf(path, format string, a ...any) {
	v.problems = append(v.problems, study.Problem{Path: path, Severity: study.SevWarning, Msg: fmt.Sprintf(format, a...)})
}

func (v *validator) run() {
	p := v.p
	if p.Schema != SchemaCapacity && p.Schema != SchemaConcurrency {
		v.errf("schema", "%q is not a capacity plan schema; want %q or %q", p.Schema, SchemaCapacity, SchemaConcurrency)
	}
	if strings.TrimSpace(p.Name) == "" {
		v.errf("name", "empty; give the study a name")
	} else if pr := study.NameProblem("name", p.Name); pr != nil {
		v.problems = append(v.problems, *pr)
	}
	v.checkText()
	v.checkCandidates()
	v.checkGrid()
	v.checkRequests()
	v.checkFile("prompt_plan", p.PromptPlan, "the prompt plan")
	if q := p.QualityCases; q != nil {
		if !p.Limits.QualityGated() {
			v.errf("quality_cases", "given, but the plan has no quality gate (limits.quality_floor / quality_retention_min): add the gate or drop the case list")
		} else {
			v.checkFile("quality_cases", *q, "the quality guard's case list")
		}
	}
	v.checkLimits()
	v.checkKVQuality()
	v.checkServing()
	v.checkTelemetry()
	v.checkRPC()
	if !(p.KneeThreshold > 0 && p.KneeThreshold <= 10) {
		v.errf("knee_threshold", "%g: want a positive gain per doubling in (0, 10], e.g. 0.2 for 20%%%s", p.KneeThreshold, orOmit(DefaultKneeThreshold))
	}
	v.checkPredictions()
	if v.opts.ServerFlags != nil {
		v.problems = append(v.problems, CheckServerFlags(p, v.opts.ServerFlags, v.opts.ServerBinary)...)
	}
}

// checkText refuses control characters in the plan's free text: it reaches terminals and
// receipts.
func (v *validator) checkText() {
	p := v.p
	check := func(path, s string, line bool) {
		if pr := study.TextProblem(path, s, line); pr != nil {
			v.problems = append(v.problems, *pr)
		}
	}
	check("name", p.Name, true)
	check("description", p.Description, false)
	check("arm_axis", p.ArmAxis, true)
	for i, c := range p.Candidates {
		check(fmt.Sprintf("candidates[%d].label", i), c.Label, true)
		check(fmt.Sprintf("candidates[%d].arm", i), c.Arm, true)
	}
	for i, pr := range p.Predictions {
		check(fmt.Sprintf("predictions[%d].text", i), pr.Text, false)
	}
}

func (v *validator) checkCandidates() {
	p := v.p
	if len(p.Candidates) == 0 {
		v.errf("candidates", "empty; list at least one candidate (a model and its server flags)")
	}
	arms := map[string]string{}
	configs := map[string]string{}
	for i, c := range p.Candidates {
		at := fmt.Sprintf("candidates[%d]", i)
		switch {
		case !idRE.MatchString(c.ID):
			v.errf(at+".id", "%q: want 1-64 letters, digits, '.', '_' or '-' (it names files: PASS/%s/pP)", c.ID, c.ID)
		case v.ids[c.ID]:
			v.errf(at+".id", "%q is used twice; candidate IDs must be unique", c.ID)
		}
		v.ids[c.ID] = true
		if strings.TrimSpace(c.Label) == "" {
			v.errf(at+".label", "empty; give the candidate a label for the receipt, e.g. \"Q8 generic reference\"")
		}
		v.checkFile(at+".model", c.Model, "the GGUF model")
		for j, f := range c.ServerFlags {
			name, _, _ := strings.Cut(f, "=")
			if owner, bad := serverControlled[name]; bad {
				v.errf(fmt.Sprintf("%s.server_flags[%d]", at, j), "%q is set by %s; only --parallel, the formula-bound --ctx-size and the port may differ between a candidate's configurations: remove it", f, owner)
			}
			if f == "" {
				v.errf(fmt.Sprintf("%s.server_flags[%d]", at, j), "empty argument")
			}
		}
		key := c.Model.Path + "\x00" + strings.Join(c.ServerFlags, "\x00") + rpcKey(c)
		if other, dup := configs[key]; dup {
			v.warnf(at, "same model and server flags as candidate %q: the two measure the same configuration", other)
		}
		configs[key] = c.ID
		v.checkMarkers(at+".markers", c)
		if p.Concurrency() {
			switch {
			case strings.TrimSpace(c.Arm) == "":
				v.errf(at+".arm", "empty; in a concurrency plan every candidate is an arm: give the value of %s it runs with", orDefault(p.ArmAxis, "arm_axis"))
			case arms[c.Arm] != "":
				v.errf(at+".arm", "%q is already candidate %q's arm; arms must differ", c.Arm, arms[c.Arm])
			}
			arms[c.Arm] = c.ID
		} else if c.Arm != "" {
			v.errf(at+".arm", "arms belong to concurrency plans (%s); remove it or change the schema", SchemaConcurrency)
		}
	}
	if p.Concurrency() && strings.TrimSpace(p.ArmAxis) == "" {
		v.errf("arm_axis", "empty; name what the arms vary, e.g. \"kv_cache_type\"")
	}
	if !p.Concurrency() && p.ArmAxis != "" {
		v.errf("arm_axis", "arms belong to concurrency plans (%s); remove it or change the schema", SchemaConcurrency)
	}
}

func (v *validator) checkMarkers(at string, c Candidate) {
	seen := map[string]string{}
	for _, list := range []struct {
		name string
		res  []string
	}{{"must", c.Markers.Must}, {"must_not", c.Markers.MustNot}} {
		for j, re := range list.res {
			path := fmt.Sprintf("%s.%s[%d]", at, list.name, j)
			if strings.TrimSpace(re) == "" {
				v.errf(path, "empty regular expression; it would match every line")
				continue
			}
			if _, err := regexp.Compile(re); err != nil {
				v.errf(path, "%q is not a regular expression (Go RE2 syntax): %v", re, err)
				continue
			}
			if other, dup := seen[re]; dup {
				if other != list.name {
					v.errf(path, "%q is listed under both must and must_not: the gate could never pass", re)
				} else {
					v.errf(path, "%q is listed twice", re)
				}
			}
			seen[re] = list.name
		}
	}
	if len(seen) > 0 && !slices.ContainsFunc(c.ServerFlags, func(f string) bool {
		name, _, _ := strings.Cut(f, "=")
		return slices.Contains(verbosityFlags, name)
	}) {
		v.warnf(at, "markers are read from the model-load lines, which llama-server logs only at info level: the runner must start the server with -lv 4 (or -v), or the required markers will be missing")
	}
}

func (v *validator) checkFile(at string, f FileRef, what string) {
	v.problems = append(v.problems, study.CheckFileRef(at, f.Path, f.SHA256, what, v.opts.PlanDir, v.opts.Hash)...)
}

func (v *validator) checkGrid() {
	p := v.p
	v.increasing("slots", p.Slots, "slot count (--parallel)")
	if p.Concurrency() {
		if len(p.Clients) > 0 {
			v.errf("clients", "a concurrency plan runs the diagonal clients = slots; remove clients (or use %s for a grid)", SchemaCapacity)
		}
	} else {
		v.increasing("clients", p.Clients, "client count")
	}
	if len(p.Passes) == 0 {
		v.errf("passes", "empty; give forward and/or reverse")
	}
	seen := map[string]bool{}
	for i, ps := range p.Passes {
		at := fmt.Sprintf("passes[%d]", i)
		if ps != PassForward && ps != PassReverse {
			v.errf(at, "%q: want %q or %q", ps, PassForward, PassReverse)
		} else if seen[ps] {
			v.errf(at, "%q is listed twice", ps)
		}
		seen[ps] = true
	}
	if len(p.Passes) == 1 {
		v.warnf("passes", "one pass: order effects are not counterbalanced and both spread gates read 0")
	}
}

func (v *validator) increasing(at string, xs []int, what string) {
	if len(xs) == 0 {
		v.errf(at, "empty; give at least one %s", what)
		return
	}
	for i, x := range xs {
		if x < 1 || x > 4096 {
			v.errf(fmt.Sprintf("%s[%d]", at, i), "%d: want a %s from 1 to 4096", x, what)
		} else if i > 0 && x <= xs[i-1] {
			v.errf(fmt.Sprintf("%s[%d]", at, i), "%d after %d: list each %s once, in increasing order (the forward pass visits them in this order)", x, xs[i-1], what)
		}
	}
}

func (v *validator) checkRequests() {
	p := v.p
	if w := p.WarmupCount(); w < 0 || w > 1000 {
		v.errf("warmups", "%d: want 0 to 1000 warmup requests per client level", w)
	}
	if p.Measured < 1 || p.Measured > 100000 {
		v.errf("measured", "%d: want 1 to 100000 measured requests per client level%s", p.Measured, orOmit(DefaultMeasured))
	} else if p.Measured < 2 {
		v.warnf("measured", "one measured request per client level: every percentile is that one request")
	}
	if !p.Concurrency() {
		for i, c := range p.Clients {
			if c > p.Measured && p.Measured > 0 {
				v.warnf(fmt.Sprintf("clients[%d]", i), "%d clients but only %d measured requests: some clients send none, so the level never reaches %d concurrent requests", c, p.Measured, c)
			}
		}
	}
	if p.NPredict < 2 {
		v.errf("n_predict", "%d: want at least 2 tokens per request (the inter-token latency needs two)%s", p.NPredict, orOmit(DefaultNPredict))
	}
	if p.CtxPerSlot < 1 {
		v.errf("ctx_per_slot", "%d: want a positive context per slot larger than n_predict (%d), e.g. 2048%s", p.CtxPerSlot, p.NPredict, orOmit(DefaultCtxPerSlot))
	} else if p.NPredict > 0 && p.CtxPerSlot <= p.NPredict {
		v.errf("ctx_per_slot", "%d leaves no room for the prompt beside n_predict %d; raise it", p.CtxPerSlot, p.NPredict)
	}
	if p.Seed < 0 {
		v.errf("seed", "%d: a negative seed means a random one in llama-server; give a fixed seed >= 0", p.Seed)
	}
}

func (v *validator) checkLimits() {
	l := v.p.Limits
	positive := func(name string, x float64, example string) {
		if !(x > 0) || math.IsInf(x, 0) {
			v.errf("limits."+name, "%g: want a positive limit, e.g. %s", x, example)
		}
	}
	positive("ttft_ms_p95_max", l.TTFTMsP95Max, "1500 (ms)")
	positive("e2e_ms_p95_max", l.E2EMsP95Max, "6500 (ms)")
	positive("peak_rss_mib_max", l.PeakRSSMiBMax, "4096 (MiB)")
	if l.MaxDeviceMiB < 0 || math.IsInf(l.MaxDeviceMiB, 0) || math.IsNaN(l.MaxDeviceMiB) {
		v.errf("limits.max_device_mib", "%g: want a positive limit in MiB, e.g. 2048, or leave it out for no device memory gate", l.MaxDeviceMiB)
	}
	v.problems = append(v.problems, study.CheckLaunchWrapper("build.launch_wrapper", v.p.Build.LaunchWrapper)...)
	for k := range v.p.Build.Env {
		if !slices.Contains(study.DeviceEnvNames, k) {
			v.errf("build.env."+k, "not a device visibility variable; a plan may set %s", strings.Join(study.DeviceEnvNames, ", "))
		}
	}
	if !(l.CompletionRateMin > 0 && l.CompletionRateMin <= 1) {
		v.errf("limits.completion_rate_min", "%g: want a fraction in (0, 1], e.g. 1.0%s", l.CompletionRateMin, orOmit(DefaultCompletionRateMin))
	}
	if !(l.GenRateSpreadMax > 0 && l.GenRateSpreadMax <= 10) {
		v.errf("limits.generation_rate_spread_max", "%g: want a positive fraction in (0, 10], e.g. 0.15 for 15%%%s", l.GenRateSpreadMax, orOmit(DefaultGenRateSpreadMax))
	}
	if !(l.E2EP95SpreadMax > 0 && l.E2EP95SpreadMax <= 10) {
		v.errf("limits.e2e_p95_spread_max", "%g: want a positive fraction in (0, 10], e.g. 0.20 for 20%%%s", l.E2EP95SpreadMax, orOmit(DefaultE2EP95SpreadMax))
	}
	if !(l.ObjectiveTolerance > 0 && l.ObjectiveTolerance < 0.5) {
		v.errf("limits.objective_tolerance", "%g: want a fraction in (0, 0.5), e.g. 0.01 for 1%%%s", l.ObjectiveTolerance, orOmit(DefaultObjectiveTolerance))
	}
	if f := l.QualityFloor; f != nil && !(*f >= 0 && *f <= 1) {
		v.errf("limits.quality_floor", "%g: want a score fraction in [0, 1], e.g. 0.8 for 80%% of the cases", *f)
	}
	if r := l.QualityRetentionMin; r != nil && !(*r > 0 && *r <= 2) {
		v.errf("limits.quality_retention_min", "%g: want a fraction of the reference's score, e.g. 0.95", *r)
	}
	if l.QualityReference == "" && v.p.given.qualityReference && l.QualityGated() {
		v.errf("limits.quality_reference", "empty; name the candidate retention is measured against (a candidate ID), or leave the field out for the first candidate")
	}
	if l.QualityReference != "" {
		if !l.QualityGated() {
			v.errf("limits.quality_reference", "set without quality_floor or quality_retention_min: the plan has no quality gate")
		} else if !v.ids[l.QualityReference] {
			v.errf("limits.quality_reference", "%q is not a candidate ID of this plan", l.QualityReference)
		}
	}
}

// Errors filters error-level problems.
func Errors(ps []study.Problem) []study.Problem { return study.Errors(ps) }

// orOmit is the hint of a refused field that has a default.
func orOmit(def any) string { return fmt.Sprintf("; or leave the field out for the default %v", def) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
