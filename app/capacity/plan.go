// Package capacity holds capacity and concurrency study plans (llama-server slots x client
// concurrency under SLO gates) and the pure assembly that turns a study's raw files (request
// records, peak RSS, server logs, quality evidence) into its result: per-cell metrics, gates
// with the exact failure codes of docs/domain.md, the selected operating point, derived figures
// and prediction verdicts; registration and the study's report through a notebook Recorder.
// Nothing here runs a process or touches a database: app/capacity/caprun drives llama-server,
// the load generator and the quality guard and writes the raw files, this package reads them.
// Formats: docs/capacity.md and docs/requests.md.
package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sparkbench/app/canon"
	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
)

// Plan schemas.
const (
	SchemaCapacity    = "sparkbench.capacity/v1"    // slots x clients grid
	SchemaConcurrency = "sparkbench.concurrency/v1" // the diagonal clients = slots, candidates as arms
)

// Pass names: forward visits candidates, slots and clients in plan order, reverse in reverse.
const (
	PassForward = "forward"
	PassReverse = "reverse"
)

// Defaults of docs/domain.md.
const (
	DefaultWarmups            = 4
	DefaultMeasured           = 8
	DefaultNPredict           = 64
	DefaultCtxPerSlot         = 2048
	DefaultCompletionRateMin  = 1.0
	DefaultGenRateSpreadMax   = 0.15
	DefaultE2EP95SpreadMax    = 0.20
	DefaultObjectiveTolerance = 0.01
	DefaultKneeThreshold      = 0.20
)

// Plan is a capacity (or concurrency) study as the user declares it. Its canonical JSON's
// SHA-256, after Defaults, is the study's identity.
type Plan struct {
	Schema      string `json:"schema"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Build       Build  `json:"build,omitzero"`
	// ArmAxis names what the arms of a concurrency plan vary, e.g. "kv_cache_type".
	ArmAxis    string      `json:"arm_axis,omitempty"`
	Candidates []Candidate `json:"candidates"`
	Slots      []int       `json:"slots"`             // P, strictly increasing
	Clients    []int       `json:"clients,omitempty"` // C, strictly increasing; concurrency: omitted (= slots)
	Passes     []string    `json:"passes"`            // default ["forward", "reverse"]
	Warmups    *int        `json:"warmups"`           // per client level, discarded; default 4
	Measured   int         `json:"measured"`          // per client level; default 8
	NPredict   int         `json:"n_predict"`         // default 64 (ignore_eos)
	CtxPerSlot int         `json:"ctx_per_slot"`      // --ctx-size = ctx_per_slot x P; default 2048
	Seed       int64       `json:"seed"`              // sampling seed of every request (temperature 0)
	PromptPlan FileRef     `json:"prompt_plan"`
	// QualityCases is the quality guard's case list (runner/quality, sparkbench.quality-cases/v1):
	// part of the plan's identity, so the cases a study was judged by are frozen with it.
	// Required with a quality gate unless given to `capacity run --quality-cases`.
	QualityCases *FileRef `json:"quality_cases,omitempty"`
	Limits       Limits   `json:"limits"`
	// KVQuality, when given, gates the KV cache quality check of the plan's KV arms (KVArms):
	// an arm whose mean KLD from an f16 cache on its model is above KLDMeanMax fails with
	// study.GateKLDAboveMax (the throughput plan's kv_quality). Written only when given.
	KVQuality *study.KVQualityGate `json:"kv_quality,omitempty"`
	// KneeThreshold is the gain per doubling below which the knee is declared (default 0.2).
	KneeThreshold float64      `json:"knee_threshold"`
	Predictions   []Prediction `json:"predictions,omitempty"`
	// Serving, when given, adds open-loop probes (arrival process, offered rates, max-rate
	// search, SLO and goodput) to every server lifetime (docs/serving.md). Written only when
	// given: a closed-loop plan keeps its bytes and hash.
	Serving *Serving `json:"serving,omitempty"`
	// Telemetry, when given, samples each server lifetime (interval_ms) and applies the
	// machine-state gates to each cell's window (docs/telemetry.md). Written only when given.
	Telemetry *energy.Plan `json:"telemetry,omitempty"`
	// RPCServers are ggml-rpc-servers the run starts on bench hosts over ssh before the first
	// server lifetime and stops after the last (the throughput plan's rpc_servers, docs/fleet.md
	// "RPC topologies"); a candidate with rpc set offloads to them (--rpc). Written only when
	// given.
	RPCServers []study.RPCServer `json:"rpc_servers,omitempty"`

	// given records which defaulted fields the plan's JSON wrote (Decode): Defaults fills
	// only the others, so a written value (0 included) is kept and judged by Validate.
	given given
}

// given says which fields with a default a decoded plan wrote with a value (a key whose
// value is null counts as left out). A plan built in code has none, so there a zero value
// means "use the default".
type given struct {
	passes, warmups, measured, nPredict, ctxPerSlot, kneeThreshold bool
	completionRateMin, genRateSpreadMax, e2eP95SpreadMax           bool
	objectiveTolerance, qualityReference                           bool
	noiseFloor                                                     []bool // per prediction
	serving                                                        servingGiven
}

// planKeys is the shape given is read from: the raw value of each defaulted key.
type planKeys struct {
	Passes        json.RawMessage `json:"passes"`
	Warmups       json.RawMessage `json:"warmups"`
	Measured      json.RawMessage `json:"measured"`
	NPredict      json.RawMessage `json:"n_predict"`
	CtxPerSlot    json.RawMessage `json:"ctx_per_slot"`
	KneeThreshold json.RawMessage `json:"knee_threshold"`
	Limits        struct {
		CompletionRateMin  json.RawMessage `json:"completion_rate_min"`
		GenRateSpreadMax   json.RawMessage `json:"generation_rate_spread_max"`
		E2EP95SpreadMax    json.RawMessage `json:"e2e_p95_spread_max"`
		ObjectiveTolerance json.RawMessage `json:"objective_tolerance"`
		QualityReference   json.RawMessage `json:"quality_reference"`
	} `json:"limits"`
	Predictions []struct {
		NoiseFloor json.RawMessage `json:"noise_floor"`
	} `json:"predictions"`
	Serving struct {
		MaxInFlight     json.RawMessage `json:"max_in_flight"`
		ScheduleSlackMs json.RawMessage `json:"schedule_slack_ms"`
		SLO             struct {
			Percentile        json.RawMessage `json:"percentile"`
			CompletionRateMin json.RawMessage `json:"completion_rate_min"`
		} `json:"slo"`
	} `json:"serving"`
}

func written(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// readGiven reads which defaulted fields data (a plan that decoded) writes.
func readGiven(data []byte) (given, error) {
	var k planKeys
	if err := json.Unmarshal(data, &k); err != nil {
		return given{}, err
	}
	g := given{
		passes: written(k.Passes), warmups: written(k.Warmups), measured: written(k.Measured),
		nPredict: written(k.NPredict), ctxPerSlot: written(k.CtxPerSlot), kneeThreshold: written(k.KneeThreshold),
		completionRateMin: written(k.Limits.CompletionRateMin), genRateSpreadMax: written(k.Limits.GenRateSpreadMax),
		e2eP95SpreadMax: written(k.Limits.E2EP95SpreadMax), objectiveTolerance: written(k.Limits.ObjectiveTolerance),
		qualityReference: written(k.Limits.QualityReference),
		serving: servingGiven{maxInFlight: written(k.Serving.MaxInFlight), slack: written(k.Serving.ScheduleSlackMs),
			percentile: written(k.Serving.SLO.Percentile), completion: written(k.Serving.SLO.CompletionRateMin)},
	}
	for _, pr := range k.Predictions {
		g.noiseFloor = append(g.noiseFloor, written(pr.NoiseFloor))
	}
	return g, nil
}

// noiseFloorGiven says whether prediction i's noise_floor was written.
func (g given) noiseFloorGiven(i int) bool { return i < len(g.noiseFloor) && g.noiseFloor[i] }

// Build names the llama.cpp binaries folder; empty means the default search order.
type Build struct {
	Dir string `json:"dir,omitempty"`
	// Env are device visibility variables every server runs with (study.DeviceEnvNames, e.g.
	// GGML_VK_VISIBLE_DEVICES=0 for Mesa's llvmpipe); written only when given.
	Env map[string]string `json:"env,omitempty"`
	// LaunchWrapper: every llama-server starts under it, as a throughput plan's legs do
	// (study.Build.LaunchWrapper, study.CheckLaunchWrapper); written only when given.
	LaunchWrapper []string `json:"launch_wrapper,omitempty"`
}

// EnvList is Env as sorted KEY=VALUE pairs.
func (b Build) EnvList() []string { return study.Build{Env: b.Env}.EnvList() }

// FileRef is a file the study depends on, with its expected SHA-256.
type FileRef struct {
	Path   string `json:"path"` // relative paths start at the plan's folder
	SHA256 string `json:"sha256"`
}

// Candidate is one deployment configuration: a model and its server flags. Only --parallel,
// the formula-bound --ctx-size and the port differ between its server lifetimes.
type Candidate struct {
	ID    string  `json:"id"`    // short name used in file keys: forward/ID/p4
	Label string  `json:"label"` // e.g. "Q8 generic reference"
	Role  string  `json:"role,omitempty"`
	Arm   string  `json:"arm,omitempty"` // concurrency: the arm's value, e.g. "q8_0"
	Model FileRef `json:"model"`
	// ServerFlags are llama-server arguments besides -m, --parallel, --ctx-size, --port, --host.
	ServerFlags []string `json:"server_flags"`
	Markers     Markers  `json:"markers,omitzero"`
	// RPC: the candidate's servers register every one of the plan's rpc_servers as a device
	// (the run adds --rpc ENDPOINT,… to its server flags) and must show them in their logs (the
	// RPC evidence gate). Written only when set.
	RPC bool `json:"rpc,omitempty"`
}

// Markers are regular expressions (Go RE2 syntax) matched line by line against the last model
// load block of every server log of the candidate.
type Markers struct {
	Must    []string `json:"must,omitempty"`
	MustNot []string `json:"must_not,omitempty"`
}

// Limits are the predeclared SLO, stability, resource and quality limits.
type Limits struct {
	TTFTMsP95Max      float64 `json:"ttft_ms_p95_max"`
	E2EMsP95Max       float64 `json:"e2e_ms_p95_max"`
	CompletionRateMin float64 `json:"completion_rate_min"` // default 1.0
	PeakRSSMiBMax     float64 `json:"peak_rss_mib_max"`
	// MaxDeviceMiB, when set, is the device memory gate: every server lifetime must show its
	// layers on a device (offloaded as many as -ngl asked, a device other than the CPU holding
	// memory) and the device's peak memory (the server log's memory breakdown, else its buffer
	// lines) must stay at or below it. Written only when given.
	MaxDeviceMiB       float64 `json:"max_device_mib,omitempty"`
	GenRateSpreadMax   float64 `json:"generation_rate_spread_max"` // default 0.15
	E2EP95SpreadMax    float64 `json:"e2e_p95_spread_max"`         // default 0.20
	ObjectiveTolerance float64 `json:"objective_tolerance"`        // default 0.01
	// Quality gate: enabled when either bound is set; evidence is then required per
	// (candidate, P). Retention is measured against QualityReference (default: first candidate).
	QualityFloor        *float64 `json:"quality_floor,omitempty"`
	QualityRetentionMin *float64 `json:"quality_retention_min,omitempty"`
	QualityReference    string   `json:"quality_reference,omitempty"`
}

// QualityGated says whether the plan declares a quality gate.
func (l Limits) QualityGated() bool { return l.QualityFloor != nil || l.QualityRetentionMin != nil }

// Concurrency says whether the plan is a concurrency study (the diagonal clients = slots).
func (p *Plan) Concurrency() bool { return p.Schema == SchemaConcurrency }

// ClientLevels is the list of client counts measured by the server with slots P: the plan's
// clients, or just P for a concurrency plan.
func (p *Plan) ClientLevels(slots int) []int {
	if p.Concurrency() {
		return []int{slots}
	}
	return p.Clients
}

// Defaults fills what the user may leave out. It is applied before validation and hashing, so
// the registered plan states every value it ran with. A field a decoded plan wrote is never
// replaced, whatever its value (0, [] or ""): Validate refuses it when out of range. In a plan
// built in code a zero value means the default.
func (p *Plan) Defaults() {
	g := p.given
	if len(p.Passes) == 0 && !g.passes {
		p.Passes = []string{PassForward, PassReverse}
	}
	if p.Warmups == nil {
		w := DefaultWarmups
		p.Warmups = &w
	}
	if p.Measured == 0 && !g.measured {
		p.Measured = DefaultMeasured
	}
	if p.NPredict == 0 && !g.nPredict {
		p.NPredict = DefaultNPredict
	}
	if p.CtxPerSlot == 0 && !g.ctxPerSlot {
		p.CtxPerSlot = DefaultCtxPerSlot
	}
	if p.KneeThreshold == 0 && !g.kneeThreshold {
		p.KneeThreshold = DefaultKneeThreshold
	}
	l := &p.Limits
	if l.CompletionRateMin == 0 && !g.completionRateMin {
		l.CompletionRateMin = DefaultCompletionRateMin
	}
	if l.GenRateSpreadMax == 0 && !g.genRateSpreadMax {
		l.GenRateSpreadMax = DefaultGenRateSpreadMax
	}
	if l.E2EP95SpreadMax == 0 && !g.e2eP95SpreadMax {
		l.E2EP95SpreadMax = DefaultE2EP95SpreadMax
	}
	if l.ObjectiveTolerance == 0 && !g.objectiveTolerance {
		l.ObjectiveTolerance = DefaultObjectiveTolerance
	}
	if l.QualityGated() && l.QualityReference == "" && !g.qualityReference && len(p.Candidates) > 0 {
		l.QualityReference = p.Candidates[0].ID
	}
	for i := range p.Candidates {
		if p.Candidates[i].ServerFlags == nil {
			p.Candidates[i].ServerFlags = []string{}
		}
	}
	if p.Serving != nil {
		p.Serving.defaults(g.serving)
	}
	for i := range p.Predictions {
		if p.Predictions[i].Kind == study.KindBand && p.Predictions[i].NoiseFloor == 0 && !g.noiseFloorGiven(i) {
			p.Predictions[i].NoiseFloor = study.DefaultNoiseFloor
		}
	}
}

// WarmupCount is the number of warmup requests per client level (after Defaults).
func (p *Plan) WarmupCount() int {
	if p.Warmups == nil {
		return DefaultWarmups
	}
	return *p.Warmups
}

// SHA256 is the plan's identity: the SHA-256 of its canonical JSON, and those bytes.
func (p *Plan) SHA256() (string, []byte, error) { return canon.SHA256(p) }

// Candidate returns the candidate with the given ID.
func (p *Plan) Candidate(id string) (Candidate, bool) {
	for _, c := range p.Candidates {
		if c.ID == id {
			return c, true
		}
	}
	return Candidate{}, false
}

// Decode reads a plan strictly: unknown fields and trailing data are errors with file, line
// and column (a *study.DecodeError).
func Decode(name string, data []byte) (*Plan, error) {
	var p Plan
	if err := study.DecodeFileStrict(name, data, &p, "a plan file holds exactly one JSON object", "docs/capacity.md", jsonlex.Input); err != nil {
		return nil, err
	}
	g, err := readGiven(data)
	if err != nil { // cannot happen: the same bytes decoded strictly
		return nil, &study.DecodeError{File: name, Line: 1, Col: 1, Msg: err.Error()}
	}
	p.given = g
	return &p, nil
}

// Load reads and decodes a plan file.
func Load(path string) (*Plan, error) {
	data, err := fsread.ReadFile(path, study.MaxPlanBytes, "a plan")
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return Decode(path, data)
}
