// Package capacity holds capacity and concurrency study plans (llama-server slots x client
// concurrency under SLO gates) and the pure assembly that turns a study's raw files (request
// records, peak RSS, server logs, quality evidence) into its result: per-cell metrics, gates
// with the exact failure codes of docs/DOMAIN.md, the selected operating point, derived figures
// and prediction verdicts. Nothing here runs a process or touches a database; the runner writes
// the raw files, this package reads them. Formats: docs/capacity.md and docs/requests.md.
package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/study"
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

// Defaults of docs/DOMAIN.md.
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
	// KneeThreshold is the gain per doubling below which the knee is declared (default 0.2).
	KneeThreshold float64      `json:"knee_threshold"`
	Predictions   []Prediction `json:"predictions,omitempty"`
}

// Build names the llama.cpp binaries folder; empty means the default search order.
type Build struct {
	Dir string `json:"dir,omitempty"`
}

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
}

// Markers are regular expressions (Go RE2 syntax) matched line by line against the last model
// load block of every server log of the candidate.
type Markers struct {
	Must    []string `json:"must,omitempty"`
	MustNot []string `json:"must_not,omitempty"`
}

// Limits are the predeclared SLO, stability, resource and quality limits.
type Limits struct {
	TTFTMsP95Max       float64 `json:"ttft_ms_p95_max"`
	E2EMsP95Max        float64 `json:"e2e_ms_p95_max"`
	CompletionRateMin  float64 `json:"completion_rate_min"` // default 1.0
	PeakRSSMiBMax      float64 `json:"peak_rss_mib_max"`
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
// the registered plan states every value it ran with.
func (p *Plan) Defaults() {
	if len(p.Passes) == 0 {
		p.Passes = []string{PassForward, PassReverse}
	}
	if p.Warmups == nil {
		w := DefaultWarmups
		p.Warmups = &w
	}
	if p.Measured == 0 {
		p.Measured = DefaultMeasured
	}
	if p.NPredict == 0 {
		p.NPredict = DefaultNPredict
	}
	if p.CtxPerSlot == 0 {
		p.CtxPerSlot = DefaultCtxPerSlot
	}
	if p.KneeThreshold == 0 {
		p.KneeThreshold = DefaultKneeThreshold
	}
	l := &p.Limits
	if l.CompletionRateMin == 0 {
		l.CompletionRateMin = DefaultCompletionRateMin
	}
	if l.GenRateSpreadMax == 0 {
		l.GenRateSpreadMax = DefaultGenRateSpreadMax
	}
	if l.E2EP95SpreadMax == 0 {
		l.E2EP95SpreadMax = DefaultE2EP95SpreadMax
	}
	if l.ObjectiveTolerance == 0 {
		l.ObjectiveTolerance = DefaultObjectiveTolerance
	}
	if l.QualityGated() && l.QualityReference == "" && len(p.Candidates) > 0 {
		l.QualityReference = p.Candidates[0].ID
	}
	for i := range p.Candidates {
		if p.Candidates[i].ServerFlags == nil {
			p.Candidates[i].ServerFlags = []string{}
		}
	}
	for i := range p.Predictions {
		if p.Predictions[i].Kind == study.KindBand && p.Predictions[i].NoiseFloor == 0 {
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
	if err := decodeStrict(name, data, &p, "a plan file holds exactly one JSON object", "docs/capacity.md"); err != nil {
		return nil, err
	}
	return &p, nil
}

// Load reads and decodes a plan file.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return Decode(path, data)
}

// decodeStrict decodes exactly one JSON value into v with unknown fields refused.
func decodeStrict(name string, data []byte, v any, oneValue, doc string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(name, data, dec, err, doc)
	}
	if _, err := dec.Token(); err != io.EOF {
		l, c := lineCol(data, dec.InputOffset())
		return &study.DecodeError{File: name, Line: l, Col: c, Msg: "trailing data after the JSON object; " + oneValue}
	}
	return nil
}

func decodeError(name string, data []byte, dec *json.Decoder, err error, doc string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		l, c := lineCol(data, syn.Offset)
		return &study.DecodeError{File: name, Line: l, Col: c, Msg: "invalid JSON: " + syn.Error()}
	case errors.As(err, &typ):
		l, c := lineCol(data, typ.Offset)
		return &study.DecodeError{File: name, Line: l, Col: c, Msg: fmt.Sprintf("%s: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)}
	case errors.Is(err, io.EOF):
		return &study.DecodeError{File: name, Line: 1, Col: 1, Msg: "empty file; want a JSON object (see " + doc + ")"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		l, c := lineCol(data, int64(len(data)))
		return &study.DecodeError{File: name, Line: l, Col: c, Msg: "the JSON ends before the object is closed"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		// The decoder reports the end of the object; point at the key itself where it can be
		// found (its first occurrence as a key).
		off := dec.InputOffset()
		if loc := regexp.MustCompile(regexp.QuoteMeta(field) + `\s*:`).FindIndex(data); loc != nil {
			off = int64(loc[0])
		}
		l, c := lineCol(data, off)
		return &study.DecodeError{File: name, Line: l, Col: c, Msg: "unknown field " + field + "; check its spelling against " + doc}
	}
	l, c := lineCol(data, dec.InputOffset())
	return &study.DecodeError{File: name, Line: l, Col: c, Msg: err.Error()}
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
