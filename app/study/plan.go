// Package study holds throughput study plans: their JSON form, validation with precise
// messages, expansion into llama-bench legs, predictions and their verdicts, registration,
// amendments, findings and the study's report, all through a notebook Recorder. It starts no
// process: files are read through the GGUF header reader and a caller-supplied hash lookup,
// and the run vocabulary comes from runner/vocab. Running a study's legs is app/study/studyrun.
package study

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sparkbench/app/analysis"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/energy"
	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/vocab"
)

// SchemaThroughput identifies version 1 of the throughput plan format (docs/plans.md).
const SchemaThroughput = "sparkbench.throughput/v1"

// Plan is a throughput study as the user declares it. Its canonical JSON's SHA-256 is the
// study's identity once registered.
type Plan struct {
	Schema        string         `json:"schema"`
	Name          string         `json:"name"`
	Description   string         `json:"description,omitempty"`
	Build         Build          `json:"build"`
	Models        []Model        `json:"models"`
	Axes          Axes           `json:"axes"`
	Split         Split          `json:"split,omitempty"`
	Repeatability *Repeatability `json:"repeatability,omitempty"`
	Canary        *Canary        `json:"canary,omitempty"`
	Gates         Gates          `json:"gates"`
	Conditions    []Condition    `json:"conditions,omitempty"`
	Bandwidth     *Bandwidth     `json:"bandwidth,omitempty"`
	Predictions   []Prediction   `json:"predictions,omitempty"`
	// Retries is how many more attempts a leg that ended without results (crashed, refused,
	// out of memory, timed out, …) gets on later runs; absent: DefaultRetries. Written only
	// when given, so plans without it keep their SHA-256.
	Retries *int `json:"retries,omitempty"`
	// KVQuality, when given, gates the KV cache quality check (docs/domain.md): a non-f16
	// cache type whose mean KLD from an f16 cache is above KLDMeanMax fails the gate. Written
	// only when given.
	KVQuality *KVQualityGate `json:"kv_quality,omitempty"`
	// Adaptive, when given, replaces the fixed axes.reps by adaptive repetitions with a
	// pre-registered stopping rule (docs/adaptive.md). Written only when given.
	Adaptive *Adaptive `json:"adaptive,omitempty"`
	// Telemetry, when given, samples the machine during each leg (interval_ms) and flags the
	// legs during which a machine-state gate fired (docs/telemetry.md). Written only when
	// given.
	Telemetry *energy.Plan `json:"telemetry,omitempty"`
	// RPCServers are ggml-rpc-servers the run starts on bench hosts over ssh and stops after
	// its legs (study.RPCServer); written only when given.
	RPCServers []RPCServer `json:"rpc_servers,omitempty"`

	// given lists the defaulted fields the plan file wrote (Decode fills it), so that Defaults
	// never replaces a value the user wrote, zero or empty as it may be: validation refuses it
	// with the allowed range instead.
	given map[string]bool
}

// defaultedFields are the JSON paths Defaults may fill ("[]" stands for every prediction).
var defaultedFields = []string{"split", "gates.cv_tg", "gates.cv_pp_depth", "gates.cv_pp_d0", "gates.on_cv",
	"axes.ubatch", "axes.batch", "axes.flash_attn", "axes.kv_types", "axes.ngl",
	"canary.n_prompt", "canary.n_gen", "canary.max_drop"}

// givenFields lists which defaulted fields a plan document writes (whatever their value).
func givenFields(data []byte) map[string]bool {
	out := GivenPaths(data, defaultedFields)
	if out == nil {
		return nil
	}
	var doc map[string]json.RawMessage
	_ = json.Unmarshal(data, &doc)
	var preds []map[string]json.RawMessage
	_ = json.Unmarshal(doc["predictions"], &preds)
	for i, pr := range preds {
		if _, ok := pr["noise_floor"]; ok {
			out[fmt.Sprintf("predictions[%d].noise_floor", i)] = true
		}
	}
	return out
}

// Given reports whether the plan file wrote the field (a path of defaultedFields, or
// "predictions[N].noise_floor").
func (p *Plan) Given(path string) bool { return p.given[path] }

// DefaultRetries is the retry limit of a plan that does not state one: a leg gets three
// attempts in all before a prediction that reads it is decided without it.
const DefaultRetries = 2

// MaxRetries bounds a plan's retries.
const MaxRetries = 100

// RetryLimit is the plan's retries, or DefaultRetries when it states none.
func (p *Plan) RetryLimit() int {
	if p.Retries == nil {
		return DefaultRetries
	}
	return *p.Retries
}

// Build names the llama.cpp binaries folder; empty means the default search order.
type Build struct {
	Dir string `json:"dir,omitempty"`
	// Env are device visibility variables every leg runs with (e.g. GGML_VK_VISIBLE_DEVICES=0,
	// which ggml needs to use a Vulkan device of CPU type such as Mesa's llvmpipe); only the
	// names in DeviceEnvNames are accepted. Written only when given.
	Env map[string]string `json:"env,omitempty"`
	// LaunchWrapper is a program and its arguments every leg and canary is started under
	// (e.g. ["taskset", "-c", "0"]): the runner runs it with the leg's command line appended,
	// argv only (CheckLaunchWrapper). Written only when given.
	LaunchWrapper []string `json:"launch_wrapper,omitempty"`
}

// DeviceEnvNames are the environment variables a plan may set for its legs: they choose which
// devices a backend shows, and so where a run can go.
var DeviceEnvNames = []string{"CUDA_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
	"ONEAPI_DEVICE_SELECTOR", "ROCR_VISIBLE_DEVICES"}

// EnvList is the plan's Env as KEY=VALUE, sorted by key (nil when none).
func (b Build) EnvList() []string {
	if len(b.Env) == 0 {
		return nil
	}
	keys := make([]string, 0, len(b.Env))
	for k := range b.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + b.Env[k]
	}
	return out
}

// Model is one GGUF artefact of the study.
type Model struct {
	ID       string `json:"id"`   // short name used by legs and selectors, e.g. "qwen30b"
	Path     string `json:"path"` // relative paths are relative to the plan file's folder
	SHA256   string `json:"sha256"`
	Source   string `json:"source,omitempty"`   // where it came from, e.g. "unsloth/Qwen3-30B-A3B-GGUF"
	Revision string `json:"revision,omitempty"` // the source's revision
}

// Axes are llama-bench's parameters; every list is a sweep (the legs cover their product).
type Axes struct {
	Depths    []int    `json:"depths"`
	NPrompt   []int    `json:"n_prompt"`
	NGen      []int    `json:"n_gen"`
	Reps      int      `json:"reps"`
	Ubatch    []int    `json:"ubatch,omitempty"`
	Batch     []int    `json:"batch,omitempty"`
	FlashAttn []string `json:"flash_attn,omitempty"` // "on", "off", "auto"
	KV        []KVType `json:"kv_types,omitempty"`
	Threads   []int    `json:"threads,omitempty"`
	NGL       []int    `json:"ngl,omitempty"`
	ExtraArgs []string `json:"extra_args,omitempty"`

	// The device axes (docs/plans.md, "Devices"). Each is written only when given, so plans
	// without them keep their SHA-256, and llama-bench gets the flag only then.
	Devices         []string `json:"devices,omitempty"`          // -dev: one leg per value ("none", "auto", "Vulkan0", "CUDA0/CUDA1")
	SplitMode       []string `json:"split_mode,omitempty"`       // -sm: none, layer, row, tensor
	TensorSplit     []string `json:"tensor_split,omitempty"`     // -ts: "3/1" — one entry per device
	NCPUMoE         []int    `json:"n_cpu_moe,omitempty"`        // -ncmoe: MoE layers whose experts stay on the CPU
	OverrideTensors []string `json:"override_tensors,omitempty"` // -ot, one flag per value: "PATTERN=BUFT;…" or a preset (OverridePresets)
	NoKVOffload     []bool   `json:"no_kv_offload,omitempty"`    // -nkvo 0|1
	LoadMode        []string `json:"load_mode,omitempty"`        // -lm: auto, none, mmap, mlock, mmap+mlock, dio (the mmap axis)
	// RPC are ggml-rpc-server endpoints (host:port) every leg registers (--rpc); their devices
	// are then named RPC0, RPC1 … in the devices axis.
	RPC []string `json:"rpc,omitempty"`
}

// OverridePresets are named override_tensors values.
var OverridePresets = map[string]string{
	// every MoE expert tensor in host memory: attention and dense layers go to the device
	"experts_on_cpu": `\.ffn_(up|down|gate)_exps=CPU`,
}

// OverrideArg is an override_tensors value as llama-bench takes it (a preset expanded).
func OverrideArg(v string) string {
	if x, ok := OverridePresets[v]; ok {
		return x
	}
	return v
}

// NeedsDevices says whether checking the plan needs the build's device list: it sets a device
// axis or env, or asks for offload (-ngl other than 0 and the default -1).
func (p *Plan) NeedsDevices() bool {
	if p.Axes.HasDeviceAxes() || len(p.Build.Env) > 0 {
		return true
	}
	for _, n := range p.Axes.NGL {
		if n > 0 {
			return true
		}
	}
	return false
}

// HasDeviceAxes reports whether the plan sets any device axis.
func (a Axes) HasDeviceAxes() bool {
	return len(a.Devices)+len(a.SplitMode)+len(a.TensorSplit)+len(a.NCPUMoE)+len(a.OverrideTensors)+
		len(a.NoKVOffload)+len(a.LoadMode)+len(a.RPC) > 0
}

// KVType is one KV-cache type pair (-ctk/-ctv).
type KVType struct {
	K string `json:"k"`
	V string `json:"v"`
}

// KVQualityGate is the limit a cheaper KV cache type's quality must meet.
type KVQualityGate struct {
	KLDMeanMax float64 `json:"kld_mean_max"`
}

// Split says how the sweep becomes legs (llama-bench invocations).
type Split string

const (
	SplitCombined      Split = "combined"        // one leg per model with every depth (-d 0,2048,…)
	SplitPerDepth      Split = "per_depth"       // one leg per model and depth (memory-edge safe)
	SplitCombinedModel Split = "combined_models" // one leg with every model and depth
)

// Repeatability repeats one canonical leg at the start, middle and/or end of the study.
type Repeatability struct {
	Leg string   `json:"leg"` // a leg ID from the expansion, e.g. "tiny/d0"
	At  []string `json:"at"`  // "start", "middle", "end"
}

// Canary is the short bench run after a crash before the queue continues.
type Canary struct {
	Model      string  `json:"model"`       // a model ID
	NPrompt    int     `json:"n_prompt"`    // default 64
	NGen       int     `json:"n_gen"`       // default 16
	BaselineTG float64 `json:"baseline_tg"` // t/s; 0: the first canary run sets it
	MaxDrop    float64 `json:"max_drop"`    // fraction below baseline that fails (default 0.2)
}

// Gates are the CV limits (fractions) that flag a test, and what a flag does to its leg.
type Gates struct {
	CVTG      float64 `json:"cv_tg,omitempty"`       // default 0.05
	CVPPDepth float64 `json:"cv_pp_depth,omitempty"` // pp at depth > 0, default 0.10
	CVPPD0    float64 `json:"cv_pp_d0,omitempty"`    // default 0.05
	// OnCV is what a CV flag does: "halt" (the default when left out: the flagged process's
	// row and those after it do not count, the leg halts and is run again — unattended anomaly
	// detection) or "count" (the row counts with its flag and the leg goes on — precision
	// studies, where the spread between processes is what the statistics measure). Left out, it
	// is not written into the frozen plan, so plans registered before it keep their SHA-256.
	OnCV string `json:"on_cv,omitempty"`
}

// What a CV flag does to its leg (Gates.OnCV).
const (
	OnCVHalt  = "halt"
	OnCVCount = "count"
)

// CountsFlagged reports whether a CV-flagged row counts as a result (on_cv "count").
func (g Gates) CountsFlagged() bool { return g.OnCV == OnCVCount }

// Limit is the CV gate of a test ("pp64", "tg32", "pp64+tg16") at a depth, as the runner
// applies it: pp gates for prompt processing alone, the tg gate for the rest, the runner's
// default where the limit is zero (a quant plan's gates are not filled in).
func (g Gates) Limit(test string, depth int64) float64 {
	pick := func(v, def float64) float64 {
		if v <= 0 {
			return def
		}
		return v
	}
	if strings.HasPrefix(test, "pp") && !strings.Contains(test, "+") {
		if depth > 0 {
			return pick(g.CVPPDepth, vocab.DefaultCVPPDepth)
		}
		return pick(g.CVPPD0, vocab.DefaultCVPP)
	}
	return pick(g.CVTG, vocab.DefaultCVTG)
}

// Condition is a declared circumstance (e.g. "download running") for some or all legs.
type Condition struct {
	Text string   `json:"text"`
	Legs []string `json:"legs,omitempty"` // leg IDs; empty means the whole study
}

// Bandwidth is the memory bandwidth for ceilings: entered (GB/s) or measured at run time.
type Bandwidth struct {
	GBs     float64 `json:"gbs,omitempty"`
	Measure bool    `json:"measure,omitempty"`
}

// Defaults fills what the user may leave out. It is applied before validation and before
// hashing, so the registered plan states every value it ran with.
func (p *Plan) Defaults() {
	unset := func(path string) bool { return !p.given[path] }
	if p.Split == "" && unset("split") {
		p.Split = SplitCombined
	}
	if p.Gates.CVTG == 0 && unset("gates.cv_tg") {
		p.Gates.CVTG = 0.05
	}
	if p.Gates.CVPPDepth == 0 && unset("gates.cv_pp_depth") {
		p.Gates.CVPPDepth = 0.10
	}
	if p.Gates.CVPPD0 == 0 && unset("gates.cv_pp_d0") {
		p.Gates.CVPPD0 = 0.05
	}
	a := &p.Axes
	if len(a.Ubatch) == 0 && unset("axes.ubatch") {
		a.Ubatch = []int{512}
	}
	if len(a.Batch) == 0 && unset("axes.batch") {
		a.Batch = []int{2048}
	}
	if len(a.FlashAttn) == 0 && unset("axes.flash_attn") {
		a.FlashAttn = []string{"auto"}
	}
	if len(a.KV) == 0 && unset("axes.kv_types") {
		a.KV = []KVType{{"f16", "f16"}}
	}
	if len(a.NGL) == 0 && unset("axes.ngl") {
		a.NGL = []int{-1}
	}
	if c := p.Canary; c != nil {
		if c.NPrompt == 0 && unset("canary.n_prompt") {
			c.NPrompt = 64
		}
		if c.NGen == 0 && unset("canary.n_gen") {
			c.NGen = 16
		}
		if c.MaxDrop == 0 && unset("canary.max_drop") {
			c.MaxDrop = 0.2
		}
	}
	if ad := p.Adaptive; ad != nil {
		if ad.Unit == "" && unset("adaptive.unit") {
			ad.Unit = UnitProcess
		}
		if ad.Unit == UnitProcess && ad.MinProcesses == 0 && unset("adaptive.min_processes") {
			ad.MinProcesses = analysis.DefaultMinProcesses
		}
	}
	for i := range p.Predictions {
		if p.Predictions[i].Kind == KindBand && p.Predictions[i].NoiseFloor == 0 && unset(fmt.Sprintf("predictions[%d].noise_floor", i)) {
			p.Predictions[i].NoiseFloor = DefaultNoiseFloor
		}
	}
}

// SHA256 is the plan's identity: the SHA-256 of its canonical JSON, and those bytes.
func (p *Plan) SHA256() (string, []byte, error) { return canon.SHA256(p) }

// DecodeError locates a JSON problem in a plan file.
type DecodeError struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Decode reads a plan strictly: unknown fields (a typo such as "depth" for "depths"), trailing
// data, a key given twice and bytes that are not UTF-8 are errors with file, line and column.
func Decode(name string, data []byte) (*Plan, error) {
	var p Plan
	if e := jsonlex.DecodeStrict(data, &p, jsonlex.Input); e != nil {
		return nil, decodeError(name, data, e)
	}
	p.given = givenFields(data)
	return &p, nil
}

// MaxPlanBytes bounds a plan file (plans are a few KiB; this refuses a wrong file, not a plan).
const MaxPlanBytes = 16 << 20

// Load reads and decodes a plan file: a regular file (a named pipe or a device is refused,
// never waited on) of at most MaxPlanBytes.
func Load(path string) (*Plan, error) {
	data, err := fsread.ReadFile(path, MaxPlanBytes, "a plan")
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return Decode(path, data)
}

// decodeError words a strict decode's refusal of a plan, placed at its line and column.
func decodeError(name string, data []byte, e *jsonlex.StrictError) error {
	at := func(off int64, msg string) error {
		l, c := jsonlex.LineCol(data, off)
		return &DecodeError{name, l, c, msg}
	}
	if msg, ok := jsonlex.InputDetail(data, e); ok {
		return at(e.Offset, msg)
	}
	switch e.Kind {
	case jsonlex.StrictEmpty:
		return &DecodeError{name, 1, 1, "empty file; a plan is a JSON object (see docs/plans.md)"}
	case jsonlex.StrictUnclosed:
		return at(e.Offset, "the JSON ends before the plan object is closed")
	case jsonlex.StrictUnknown:
		// The decoder reports the key after reading the whole plan: find the key itself.
		off := e.Offset
		if o, key, ok := canon.UnknownKeyOffset(data, reflect.TypeFor[Plan]()); ok && fmt.Sprintf("%q", key) == e.Field {
			off = o
		}
		return at(off, "unknown field "+e.Field+"; check its spelling against docs/plans.md")
	case jsonlex.StrictType:
		if msg, ok := seedTypeError(e); ok {
			return at(e.Offset, msg)
		}
	case jsonlex.StrictTrailing:
		return at(e.Offset, "trailing data after the plan object; a plan file holds exactly one JSON object")
	}
	return at(e.Offset, e.Detail())
}
