package quant

import (
	"sparkbench/app/canon"
	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner/jsonlex"
)

// SchemaQuant identifies a quantization ladder plan.
const SchemaQuant = "sparkbench.quant/v1"

// Plan is a quantization ladder: which quant of the reference model to use, chosen by a rule
// registered before anything runs.
type Plan struct {
	Schema      string      `json:"schema"`
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Build       study.Build `json:"build"`
	// Reference is the unquantized model every candidate is made from and compared with
	// (F32, F16 or BF16).
	Reference FileRef `json:"reference"`
	// Quants are the llama-quantize types to try, in the plan's order (the tie-break's last
	// word), e.g. Q8_0, Q4_K_M, Q4_0.
	Quants []string `json:"quants"`
	// Imatrix, when given, makes an importance matrix from a calibration text (llama-imatrix)
	// and quantizes every candidate with it.
	Imatrix *Imatrix `json:"imatrix,omitempty"`
	// KVTypes, when given, are the KV cache types (-ctk/-ctv) every quant is tried with: each
	// (quant, KV type) pair is a candidate, its KLD measured against the reference's f16-cache
	// logits and its speed with that cache (docs/quant.md). None: one candidate per quant, on
	// llama.cpp's default f16 cache.
	KVTypes []study.KVType `json:"kv_types,omitempty"`
	Speed   Speed          `json:"speed"`
	Quality Quality        `json:"quality"`
	// Memory is how a candidate's peak memory is measured: "bench" (the largest peak RSS of
	// its llama-bench legs, which load it and fill the KV cache to the deepest depth) or
	// "none" (default "bench").
	Memory string `json:"memory,omitempty"`
	// MemoryCtx, when set, also asks llama-fit-params for each candidate's projected memory at
	// this context size: device memory on a build with a GPU (or other device), host memory on
	// a CPU-only build (0: no projection).
	MemoryCtx int  `json:"memory_ctx,omitempty"`
	Rule      Rule `json:"rule"`
	// Telemetry, when given, samples the machine during each candidate's llama-bench legs
	// (interval_ms) and applies the machine-state gates to them, as a throughput plan's block
	// does (docs/telemetry.md): each bench cell gains its Joules per token. Written only when
	// given.
	Telemetry *energy.Plan `json:"telemetry,omitempty"`
	// Predictions are registered with the plan, before anything runs, on the ladder's figures
	// (docs/quant.md): a band, fork, comparison or question about a candidate's speed, KLD,
	// size or memory, or about the one the rule selects.
	Predictions []Prediction `json:"predictions,omitempty"`

	// given lists the defaulted fields the plan file wrote (Decode fills it), so that Defaults
	// never replaces a value the user wrote, zero or empty as it may be: validation refuses it
	// with the allowed range instead.
	given map[string]bool
}

// defaultedFields are the JSON paths Defaults may fill, or that a run would otherwise read as
// "the default" when zero or empty (the CV gates, kv_types).
var defaultedFields = []string{"imatrix.ctx", "imatrix.chunks", "speed.n_prompt", "speed.n_gen", "speed.reps", "speed.threads",
	"speed.gates.cv_tg", "speed.gates.cv_pp_depth", "speed.gates.cv_pp_d0", "speed.gates.on_cv", "quality.ctx", "quality.chunks", "memory",
	"rule.tie_break", "kv_types"}

// Given reports whether the plan file wrote the field (a path of defaultedFields).
func (p *Plan) Given(path string) bool { return p.given[path] }

// FileRef is a file the plan names and its SHA-256 (relative paths start at the plan's folder).
type FileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Imatrix is the importance matrix's calibration text, the tokens per chunk (-c) and how many
// chunks of it are read (--chunks); llama-imatrix measures it on the reference.
type Imatrix struct {
	Calibration FileRef `json:"calibration"`
	Ctx         int     `json:"ctx,omitempty"`    // default 512
	Chunks      int     `json:"chunks,omitempty"` // default 16
}

// Speed are the llama-bench axes every candidate is measured on.
type Speed struct {
	Depths  []int `json:"depths"`
	NPrompt int   `json:"n_prompt,omitempty"` // default 512
	NGen    int   `json:"n_gen,omitempty"`    // default 128
	Reps    int   `json:"reps,omitempty"`     // default 5
	Threads int   `json:"threads,omitempty"`  // default 1
	// Gates are the CV limits that flag a speed leg (run again, up to three times), as in a
	// throughput plan (defaults: tg 5%, pp at depth 10%, pp at depth 0 5%).
	Gates study.Gates `json:"gates,omitempty"`
}

// Quality is the KL-divergence measurement against the reference's logits: the corpus, the
// context length (-c) and the number of chunks (--chunks).
type Quality struct {
	Corpus FileRef `json:"corpus"`
	Ctx    int     `json:"ctx,omitempty"`    // default 128
	Chunks int     `json:"chunks,omitempty"` // default 20
}

// Rule is the pre-registered decision rule: among the candidates within every limit, the one
// with the highest Maximize figure, any within Tolerance of the best counting as tied, ties
// broken by TieBreak in order.
type Rule struct {
	// Maximize names the speed figure: TEST@DEPTH, e.g. tg@512 or pp@0.
	Maximize  string   `json:"maximize"`
	Limits    Limits   `json:"limits"`
	Tolerance *float64 `json:"tolerance,omitempty"` // relative, default 0.01
	// TieBreak is the chain after the speed tie (default kld_mean, file_size, peak_rss, order).
	TieBreak []string `json:"tie_break,omitempty"`
}

// Limits a candidate must meet (nil: no limit).
type Limits struct {
	KLDMeanMax    *float64 `json:"kld_mean_max,omitempty"`
	KLDP99Max     *float64 `json:"kld_p99_max,omitempty"`
	SameTopPMin   *float64 `json:"same_top_p_min,omitempty"` // a fraction: 0.9 = 90%
	PPLRatioMax   *float64 `json:"ppl_ratio_max,omitempty"`
	FileMiBMax    *float64 `json:"file_mib_max,omitempty"`
	PeakRSSMiBMax *float64 `json:"peak_rss_mib_max,omitempty"`
	// ProjectedMiBMax limits llama-fit-params's projection at memory_ctx.
	ProjectedMiBMax *float64 `json:"projected_mib_max,omitempty"`
}

// Tie-break keys.
const (
	TieKLDMean  = "kld_mean"
	TieFileSize = "file_size"
	TiePeakRSS  = "peak_rss"
	TieOrder    = "order"
)

// DefaultTieBreak is the chain a rule without tie_break uses.
var DefaultTieBreak = []string{TieKLDMean, TieFileSize, TiePeakRSS, TieOrder}

// Memory modes.
const (
	MemoryBench = "bench"
	MemoryNone  = "none"
)

// Arm is one candidate of a plan: a quant type, and the KV cache type it runs with (nil: the
// default f16 cache of a plan without kv_types).
type Arm struct {
	Quant string
	KV    *study.KVType
}

// Label names a candidate: the quant type, and its KV cache type when the plan lists any
// (Q4_0/kv:q8_0; Q4_0/kv:q8_0,q4_0 when K and V differ).
func (a Arm) Label() string { return armLabel(a.Quant, a.KV) }

func armLabel(quant string, kv *study.KVType) string {
	switch {
	case kv == nil:
		return quant
	case kv.K == kv.V:
		return quant + "/kv:" + kv.K
	}
	return quant + "/kv:" + kv.K + "," + kv.V
}

// Arms are the plan's candidates in order: each quant (in the plan's order) with each KV type.
func (p *Plan) Arms() []Arm {
	var out []Arm
	for _, q := range p.Quants {
		if len(p.KVTypes) == 0 {
			out = append(out, Arm{Quant: q})
			continue
		}
		for i := range p.KVTypes {
			out = append(out, Arm{Quant: q, KV: &p.KVTypes[i]})
		}
	}
	return out
}

// Labels are the plan's candidates' labels, in order.
func (p *Plan) Labels() []string {
	var out []string
	for _, a := range p.Arms() {
		out = append(out, a.Label())
	}
	return out
}

// Defaults fills what the plan left out. A field the plan file wrote is kept as written, zero
// or empty as it may be (Validate refuses it with its allowed range).
func (p *Plan) Defaults() {
	set := func(path string, v *int, d int) {
		if *v == 0 && !p.given[path] {
			*v = d
		}
	}
	if p.Imatrix != nil {
		set("imatrix.ctx", &p.Imatrix.Ctx, 512)
		set("imatrix.chunks", &p.Imatrix.Chunks, 16)
	}
	s := &p.Speed
	set("speed.n_prompt", &s.NPrompt, 512)
	set("speed.n_gen", &s.NGen, 128)
	set("speed.reps", &s.Reps, 5)
	set("speed.threads", &s.Threads, 1)
	set("quality.ctx", &p.Quality.Ctx, 128)
	set("quality.chunks", &p.Quality.Chunks, 20)
	if p.Memory == "" && !p.given["memory"] {
		p.Memory = MemoryBench
	}
	if p.Rule.Tolerance == nil {
		t := 0.01
		p.Rule.Tolerance = &t
	}
	if len(p.Rule.TieBreak) == 0 && !p.given["rule.tie_break"] {
		p.Rule.TieBreak = append([]string(nil), DefaultTieBreak...)
	}
}

// SHA256 is the plan's identity: the SHA-256 of its canonical JSON, and that JSON.
func (p *Plan) SHA256() (string, []byte, error) { return canon.SHA256(p) }

// Decode reads a plan strictly: unknown fields and trailing data are errors with file, line
// and column.
func Decode(name string, data []byte) (*Plan, error) {
	var p Plan
	if err := study.DecodeFileStrict(name, data, &p, "a plan file holds exactly one JSON object", "docs/quant.md", jsonlex.Input); err != nil {
		return nil, err
	}
	p.given = study.GivenPaths(data, defaultedFields)
	return &p, nil
}
