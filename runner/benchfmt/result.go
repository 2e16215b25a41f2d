// Package benchfmt parses llama-bench output (-o jsonl, json, csv and md) into typed results.
//
// One Result is one llama-bench test row. Every field of the jsonl of llama.cpp build 11669 has
// a typed Go field; fields a newer build adds are kept verbatim in Extra so nothing is lost.
// Which fields the source actually carried is recorded in Known: md tables carry only a few
// (model, size, params, backend, the non-default parameters, test and t/s), so a row parsed
// from md has most fields unknown (zero value, bit clear in Known).
package benchfmt

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Kind says what a test measures: prompt processing, token generation, or both in one run.
type Kind string

// The kinds of llama-bench test.
const (
	KindPP      Kind = "pp" // n_prompt > 0, n_gen == 0
	KindTG      Kind = "tg" // n_gen > 0, n_prompt == 0
	KindPG      Kind = "pg" // both > 0 (-pg)
	KindUnknown Kind = ""
)

// Field identifies one known llama-bench field.
type Field uint8

// Known fields, in the order llama-bench prints them.
const (
	FBuildCommit Field = iota
	FBuildNumber
	FCPUInfo
	FGPUInfo
	FBackends
	FModelFilename
	FModelType
	FModelSize
	FModelNParams
	FNBatch
	FNUbatch
	FNThreads
	FCPUMask
	FCPUStrict
	FPoll
	FTypeK
	FTypeV
	FNGPULayers
	FNCPUMoE
	FSplitMode
	FMainGPU
	FNoKVOffload
	FFlashAttn
	FDevices
	FTensorSplit
	FTensorBuftOverrides
	FLoadMode
	FLazyMode
	FEmbeddings
	FNoOpOffload
	FNoHost
	FRepack
	FFitTarget
	FFitMinCtx
	FNPrompt
	FNGen
	FNDepth
	FTestTime
	FAvgNs
	FStddevNs
	FAvgTs
	FStddevTs
	FSamplesNs
	FSamplesTs
	NumFields // number of known fields
)

type fieldType uint8

const (
	tString fieldType = iota
	tInt
	tBool
	tFloat
	tIntList
	tFloatList
)

type fieldInfo struct {
	name string
	typ  fieldType
}

var fields = [NumFields]fieldInfo{
	FBuildCommit:         {"build_commit", tString},
	FBuildNumber:         {"build_number", tInt},
	FCPUInfo:             {"cpu_info", tString},
	FGPUInfo:             {"gpu_info", tString},
	FBackends:            {"backends", tString},
	FModelFilename:       {"model_filename", tString},
	FModelType:           {"model_type", tString},
	FModelSize:           {"model_size", tInt},
	FModelNParams:        {"model_n_params", tInt},
	FNBatch:              {"n_batch", tInt},
	FNUbatch:             {"n_ubatch", tInt},
	FNThreads:            {"n_threads", tInt},
	FCPUMask:             {"cpu_mask", tString},
	FCPUStrict:           {"cpu_strict", tBool},
	FPoll:                {"poll", tInt},
	FTypeK:               {"type_k", tString},
	FTypeV:               {"type_v", tString},
	FNGPULayers:          {"n_gpu_layers", tInt},
	FNCPUMoE:             {"n_cpu_moe", tInt},
	FSplitMode:           {"split_mode", tString},
	FMainGPU:             {"main_gpu", tInt},
	FNoKVOffload:         {"no_kv_offload", tBool},
	FFlashAttn:           {"flash_attn", tInt},
	FDevices:             {"devices", tString},
	FTensorSplit:         {"tensor_split", tString},
	FTensorBuftOverrides: {"tensor_buft_overrides", tString},
	FLoadMode:            {"load_mode", tString},
	FLazyMode:            {"lazy_mode", tString},
	FEmbeddings:          {"embeddings", tBool},
	FNoOpOffload:         {"no_op_offload", tInt},
	FNoHost:              {"no_host", tBool},
	FRepack:              {"repack", tBool},
	FFitTarget:           {"fit_target", tInt},
	FFitMinCtx:           {"fit_min_ctx", tInt},
	FNPrompt:             {"n_prompt", tInt},
	FNGen:                {"n_gen", tInt},
	FNDepth:              {"n_depth", tInt},
	FTestTime:            {"test_time", tString},
	FAvgNs:               {"avg_ns", tInt},
	FStddevNs:            {"stddev_ns", tInt},
	FAvgTs:               {"avg_ts", tFloat},
	FStddevTs:            {"stddev_ts", tFloat},
	FSamplesNs:           {"samples_ns", tIntList},
	FSamplesTs:           {"samples_ts", tFloatList},
}

var fieldByName = func() map[string]Field {
	m := make(map[string]Field, NumFields)
	for i := Field(0); i < NumFields; i++ {
		m[fields[i].name] = i
	}
	return m
}()

// Name is the field's llama-bench name (the jsonl key and csv column).
func (f Field) Name() string {
	if f >= NumFields {
		return fmt.Sprintf("field(%d)", f)
	}
	return fields[f].name
}

// String implements fmt.Stringer.
func (f Field) String() string { return f.Name() }

// FieldByName returns the known field with that llama-bench name.
func FieldByName(name string) (Field, bool) {
	f, ok := fieldByName[name]
	return f, ok
}

// FieldSet is a set of known fields.
type FieldSet uint64

// AllFields is the set of every known field (what a jsonl row of build 11669 carries).
const AllFields FieldSet = 1<<NumFields - 1

// Has reports whether f is in the set.
func (s FieldSet) Has(f Field) bool { return s&(1<<f) != 0 }

// With returns the set plus f.
func (s FieldSet) With(f Field) FieldSet { return s | 1<<f }

// Len is the number of fields in the set.
func (s FieldSet) Len() int { return bits.OnesCount64(uint64(s & AllFields)) }

// Fields lists the set's fields in llama-bench order.
func (s FieldSet) Fields() []Field {
	var out []Field
	for f := Field(0); f < NumFields; f++ {
		if s.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

// Result is one llama-bench test row.
type Result struct {
	BuildCommit         string
	BuildNumber         int64
	CPUInfo             string
	GPUInfo             string
	Backends            string
	ModelFilename       string
	ModelType           string
	ModelSize           int64 // bytes
	ModelNParams        int64
	NBatch              int64
	NUbatch             int64
	NThreads            int64
	CPUMask             string
	CPUStrict           bool
	Poll                int64
	TypeK               string
	TypeV               string
	NGPULayers          int64
	NCPUMoE             int64
	SplitMode           string
	MainGPU             int64
	NoKVOffload         bool
	FlashAttn           int64 // -1 auto, 0 off, 1 on (older builds wrote a bool: false=0, true=1)
	Devices             string
	TensorSplit         string
	TensorBuftOverrides string
	LoadMode            string
	LazyMode            string
	Embeddings          bool
	NoOpOffload         int64
	NoHost              bool
	Repack              bool
	FitTarget           int64
	FitMinCtx           int64
	NPrompt             int64
	NGen                int64
	NDepth              int64
	TestTime            string // as printed, e.g. 2026-12-02T12:18:28Z
	AvgNs               int64
	StddevNs            int64
	AvgTs               float64 // tokens per second, mean over repetitions
	StddevTs            float64
	SamplesNs           []int64
	SamplesTs           []float64

	// Extra holds fields this package does not know, verbatim (JSON sources) or as JSON
	// strings (csv and md cells), so a newer llama-bench loses nothing.
	Extra map[string]json.RawMessage
	// Known is the set of known fields the source carried. Fields outside it are zero and
	// mean "unknown", not "zero".
	Known FieldSet
	// Line is the 1-based line of the source where the row starts (0 when not from a file).
	Line int
}

// Complete reports whether every known field was present (a jsonl or json row of build 11669).
func (r *Result) Complete() bool { return r.Known&AllFields == AllFields }

// Missing lists the known fields the source did not carry.
func (r *Result) Missing() []Field { return (AllFields &^ r.Known).Fields() }

// Kind says whether the row is pp, tg or pg.
func (r *Result) Kind() Kind { return KindOf(r.NPrompt, r.NGen) }

// KindOf classifies a test by its prompt and generation lengths.
func KindOf(nPrompt, nGen int64) Kind {
	switch {
	case nPrompt > 0 && nGen == 0:
		return KindPP
	case nGen > 0 && nPrompt == 0:
		return KindTG
	case nPrompt > 0 && nGen > 0:
		return KindPG
	}
	return KindUnknown
}

// TestName is llama-bench's test label: pp512, tg128, pp512+tg128, with " @ d8192" appended
// when the KV cache held tokens before the test.
func (r *Result) TestName() string { return TestName(r.NPrompt, r.NGen, r.NDepth) }

// TestName builds the label for the given lengths.
func TestName(nPrompt, nGen, nDepth int64) string {
	var b []byte
	switch KindOf(nPrompt, nGen) {
	case KindPP:
		b = strconv.AppendInt(append(b, "pp"...), nPrompt, 10)
	case KindTG:
		b = strconv.AppendInt(append(b, "tg"...), nGen, 10)
	case KindPG:
		b = strconv.AppendInt(append(b, "pp"...), nPrompt, 10)
		b = strconv.AppendInt(append(b, "+tg"...), nGen, 10)
	default:
		b = append(b, "empty"...)
	}
	if nDepth > 0 {
		b = strconv.AppendInt(append(b, " @ d"...), nDepth, 10)
	}
	return string(b)
}

// ParseTestName reads a test label ("pp512", "tg128 @ d8192", "pp512+tg128", "pg512,128")
// back into its lengths. Spaces around "@" and "+" are optional and case is ignored.
func ParseTestName(s string) (nPrompt, nGen, nDepth int64, err error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, 0, 0, fmt.Errorf("empty test name")
	}
	if at := strings.IndexByte(t, '@'); at >= 0 {
		d := strings.TrimSpace(t[at+1:])
		d = strings.TrimPrefix(d, "d")
		nDepth, err = parseTestInt(d)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("test %q: depth: %v", s, err)
		}
		t = strings.TrimSpace(t[:at])
	}
	switch {
	case strings.HasPrefix(t, "pg"): // llama-bench -pg older label: pg512,128
		a, b, ok := strings.Cut(t[2:], ",")
		if !ok {
			return 0, 0, 0, fmt.Errorf("test %q: pg needs pp,tg", s)
		}
		if nPrompt, err = parseTestInt(a); err == nil {
			nGen, err = parseTestInt(b)
		}
	case strings.HasPrefix(t, "pp"):
		a, b, ok := strings.Cut(t[2:], "+")
		nPrompt, err = parseTestInt(a)
		if err == nil && ok {
			b = strings.TrimSpace(b)
			if !strings.HasPrefix(b, "tg") {
				return 0, 0, 0, fmt.Errorf("test %q: expected tgN after +", s)
			}
			nGen, err = parseTestInt(b[2:])
		}
	case strings.HasPrefix(t, "tg"):
		nGen, err = parseTestInt(t[2:])
	default:
		return 0, 0, 0, fmt.Errorf("test %q: expected ppN, tgN or ppN+tgN, optionally with \" @ dN\"", s)
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("test %q: %v", s, err)
	}
	if nPrompt == 0 && nGen == 0 {
		return 0, 0, 0, fmt.Errorf("test %q: no tokens", s)
	}
	return nPrompt, nGen, nDepth, nil
}

func parseTestInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a token count", s)
	}
	return v, nil
}
