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
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
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

// Value returns a known field's value as a Go value (string, int64, bool, float64, []int64,
// []float64) and whether the source carried it.
func (r *Result) Value(f Field) (any, bool) {
	known := r.Known.Has(f)
	switch f {
	case FBuildCommit:
		return r.BuildCommit, known
	case FBuildNumber:
		return r.BuildNumber, known
	case FCPUInfo:
		return r.CPUInfo, known
	case FGPUInfo:
		return r.GPUInfo, known
	case FBackends:
		return r.Backends, known
	case FModelFilename:
		return r.ModelFilename, known
	case FModelType:
		return r.ModelType, known
	case FModelSize:
		return r.ModelSize, known
	case FModelNParams:
		return r.ModelNParams, known
	case FNBatch:
		return r.NBatch, known
	case FNUbatch:
		return r.NUbatch, known
	case FNThreads:
		return r.NThreads, known
	case FCPUMask:
		return r.CPUMask, known
	case FCPUStrict:
		return r.CPUStrict, known
	case FPoll:
		return r.Poll, known
	case FTypeK:
		return r.TypeK, known
	case FTypeV:
		return r.TypeV, known
	case FNGPULayers:
		return r.NGPULayers, known
	case FNCPUMoE:
		return r.NCPUMoE, known
	case FSplitMode:
		return r.SplitMode, known
	case FMainGPU:
		return r.MainGPU, known
	case FNoKVOffload:
		return r.NoKVOffload, known
	case FFlashAttn:
		return r.FlashAttn, known
	case FDevices:
		return r.Devices, known
	case FTensorSplit:
		return r.TensorSplit, known
	case FTensorBuftOverrides:
		return r.TensorBuftOverrides, known
	case FLoadMode:
		return r.LoadMode, known
	case FLazyMode:
		return r.LazyMode, known
	case FEmbeddings:
		return r.Embeddings, known
	case FNoOpOffload:
		return r.NoOpOffload, known
	case FNoHost:
		return r.NoHost, known
	case FRepack:
		return r.Repack, known
	case FFitTarget:
		return r.FitTarget, known
	case FFitMinCtx:
		return r.FitMinCtx, known
	case FNPrompt:
		return r.NPrompt, known
	case FNGen:
		return r.NGen, known
	case FNDepth:
		return r.NDepth, known
	case FTestTime:
		return r.TestTime, known
	case FAvgNs:
		return r.AvgNs, known
	case FStddevNs:
		return r.StddevNs, known
	case FAvgTs:
		return r.AvgTs, known
	case FStddevTs:
		return r.StddevTs, known
	case FSamplesNs:
		return r.SamplesNs, known
	case FSamplesTs:
		return r.SamplesTs, known
	}
	return nil, false
}

func (r *Result) setString(f Field, v string) {
	switch f {
	case FBuildCommit:
		r.BuildCommit = v
	case FCPUInfo:
		r.CPUInfo = v
	case FGPUInfo:
		r.GPUInfo = v
	case FBackends:
		r.Backends = v
	case FModelFilename:
		r.ModelFilename = v
	case FModelType:
		r.ModelType = v
	case FCPUMask:
		r.CPUMask = v
	case FTypeK:
		r.TypeK = v
	case FTypeV:
		r.TypeV = v
	case FSplitMode:
		r.SplitMode = v
	case FDevices:
		r.Devices = v
	case FTensorSplit:
		r.TensorSplit = v
	case FTensorBuftOverrides:
		r.TensorBuftOverrides = v
	case FLoadMode:
		r.LoadMode = v
	case FLazyMode:
		r.LazyMode = v
	case FTestTime:
		r.TestTime = v
	default:
		panic("benchfmt: setString on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

func (r *Result) setInt(f Field, v int64) {
	switch f {
	case FBuildNumber:
		r.BuildNumber = v
	case FModelSize:
		r.ModelSize = v
	case FModelNParams:
		r.ModelNParams = v
	case FNBatch:
		r.NBatch = v
	case FNUbatch:
		r.NUbatch = v
	case FNThreads:
		r.NThreads = v
	case FPoll:
		r.Poll = v
	case FNGPULayers:
		r.NGPULayers = v
	case FNCPUMoE:
		r.NCPUMoE = v
	case FMainGPU:
		r.MainGPU = v
	case FFlashAttn:
		r.FlashAttn = v
	case FNoOpOffload:
		r.NoOpOffload = v
	case FFitTarget:
		r.FitTarget = v
	case FFitMinCtx:
		r.FitMinCtx = v
	case FNPrompt:
		r.NPrompt = v
	case FNGen:
		r.NGen = v
	case FNDepth:
		r.NDepth = v
	case FAvgNs:
		r.AvgNs = v
	case FStddevNs:
		r.StddevNs = v
	default:
		panic("benchfmt: setInt on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

func (r *Result) setBool(f Field, v bool) {
	switch f {
	case FCPUStrict:
		r.CPUStrict = v
	case FNoKVOffload:
		r.NoKVOffload = v
	case FEmbeddings:
		r.Embeddings = v
	case FNoHost:
		r.NoHost = v
	case FRepack:
		r.Repack = v
	default:
		panic("benchfmt: setBool on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

func (r *Result) setFloat(f Field, v float64) {
	switch f {
	case FAvgTs:
		r.AvgTs = v
	case FStddevTs:
		r.StddevTs = v
	default:
		panic("benchfmt: setFloat on " + f.Name())
	}
	r.Known = r.Known.With(f)
}

// MarshalJSON writes the row as llama-bench does (known fields present in the source, in
// llama-bench's order, then Extra sorted by key), so ParseJSONLLine reads it back unchanged.
func (r Result) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the row's JSON object (see MarshalJSON) to b.
func (r *Result) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	for f := Field(0); f < NumFields; f++ {
		if !r.Known.Has(f) {
			continue
		}
		sep()
		b = appendJSONString(b, fields[f].name)
		b = append(b, ':')
		v, _ := r.Value(f)
		switch x := v.(type) {
		case string:
			b = appendJSONString(b, x)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case bool:
			b = strconv.AppendBool(b, x)
		case float64:
			var err error
			if b, err = appendJSONFloat(b, x, f); err != nil {
				return nil, err
			}
		case []int64:
			b = append(b, '[')
			for i, n := range x {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, n, 10)
			}
			b = append(b, ']')
		case []float64:
			b = append(b, '[')
			for i, n := range x {
				if i > 0 {
					b = append(b, ',')
				}
				var err error
				if b, err = appendJSONFloat(b, n, f); err != nil {
					return nil, err
				}
			}
			b = append(b, ']')
		}
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := r.Extra[k]
		if !json.Valid(raw) {
			return nil, fmt.Errorf("benchfmt: extra field %q holds invalid JSON", k)
		}
		sep()
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = append(b, raw...)
	}
	return append(b, '}'), nil
}

func appendJSONFloat(b []byte, v float64, f Field) ([]byte, error) {
	if v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308 {
		return nil, fmt.Errorf("benchfmt: %s is %v, which JSON cannot hold", f.Name(), v)
	}
	// The shortest representation that round-trips, as encoding/json writes it.
	nb, _ := json.Marshal(v)
	return append(b, nb...), nil
}

// appendJSONString writes s as a JSON string without HTML escaping; invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
