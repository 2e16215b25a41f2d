package vocab

import (
	"fmt"
	"regexp"
	"time"
)

// Evidence is what llama-server's log says about the backend of its last model load: the
// device of every layer (shown at -v), the size of every model, KV, compute and output buffer
// per device (shown at -lv 4 and -v), and the candidate's marker regexes. llama-server loads a
// model twice by default (a dry fitting pass with 0.00 MiB buffers, then the real load), so
// only the last load block counts: from the last line holding "llama_model_loader: loaded meta
// data with" to the end of the log, the same block app/capacity's marker gate reads. runner/server scans it
// (ScanEvidence).
type Evidence struct {
	Loads     int           `json:"loads"`      // load blocks seen (2 with the default fitting pass)
	BlockLine int           `json:"block_line"` // 1-based log line where the last block starts; 0: none
	Layers    []LayerDevice `json:"layers"`     // in log order; empty below -v
	Buffers   []Buffer      `json:"buffers"`
	Markers   []MarkerCheck `json:"markers"`
	// Omitted counts layer and buffer lines of the block past MaxEvidenceEntries each (a log
	// that floods them must not grow the scanner); 0, and absent from JSON, for a real log.
	Omitted int `json:"omitted,omitempty"`
}

// MaxEvidenceEntries bounds Layers and Buffers each (a real model has at most a few hundred
// layers and a few buffers per device).
const MaxEvidenceEntries = 1 << 14

// LayerDevice is "load_tensors: layer N assigned to device DEV".
type LayerDevice struct {
	Layer  int    `json:"layer"`
	Device string `json:"device"`
}

// Buffer kinds.
const (
	BufferModel   = "model"   // load_tensors: CPU_Mapped model buffer size = … MiB
	BufferKV      = "kv"      // llama_kv_cache: CPU KV buffer size = … MiB
	BufferCompute = "compute" // sched_reserve: CPU compute buffer size = … MiB
	BufferOutput  = "output"  // llama_context: CPU  output buffer size = … MiB
)

// Buffer is one buffer size line of the last load block.
type Buffer struct {
	Kind   string  `json:"kind"`
	Device string  `json:"device"` // as llama.cpp names it: CPU, CPU_Mapped, CUDA0, Vulkan0, CPU_KLEIDIAI …
	MiB    float64 `json:"mib"`
	Line   int     `json:"line"`
}

// Markers are a candidate's backend markers: Go (RE2) regexes that must, or must not, match a
// line of the last load block.
type Markers struct {
	Must    []string `json:"must,omitempty"`
	MustNot []string `json:"must_not,omitempty"`
}

// MarkerCheck is one marker's outcome (the shape of app/capacity's MarkerCheck).
type MarkerCheck struct {
	Rule  string `json:"rule"` // "must" or "must_not"
	Regex string `json:"regex"`
	Found bool   `json:"found"`
	Line  int    `json:"line,omitempty"` // first matching line of the block
	Ok    bool   `json:"ok"`
}

// Failed lists the markers whose rule failed.
func (e Evidence) Failed() []MarkerCheck {
	var out []MarkerCheck
	for _, m := range e.Markers {
		if !m.Ok {
			out = append(out, m)
		}
	}
	return out
}

// MiB sums the buffers of one kind.
func (e Evidence) MiB(kind string) float64 {
	s := 0.0
	for _, b := range e.Buffers {
		if b.Kind == kind {
			s += b.MiB
		}
	}
	return s
}

// Attempt is one try at starting llama-server.
type Attempt struct {
	Port   int           `json:"port"`
	Argv   []string      `json:"argv"`
	Pid    int           `json:"pid"`
	Class  Class         `json:"class,omitempty"` // how it ended, when it did not become the server
	Reason string        `json:"reason,omitempty"`
	Took   time.Duration `json:"took"`
}

// RSS is a server lifetime's peak resident set size.
type RSS struct {
	KiB    int64  `json:"vmhwm_kib"`
	Source string `json:"source"` // "/proc/PID/status" (VmHWM, read just before the stop) or "wait4 rusage"
}

// SchemaQualityEvidence identifies one quality-guard run's outcome (one candidate at one slot
// count): runner/quality writes it, app/capacity reads it.
const SchemaQualityEvidence = "sparkbench.quality/v1"

// MarkerRule is one compiled marker: its rule ("must" or "must_not"), its regex as written and
// compiled.
type MarkerRule struct {
	Rule  string
	Regex string
	Re    *regexp.Regexp
}

// CompileMarkers compiles a candidate's markers, must before must_not, each in order; a regex
// that does not compile is named in the error.
func CompileMarkers(must, mustNot []string) ([]MarkerRule, error) {
	var out []MarkerRule
	for _, rule := range []struct {
		name string
		res  []string
	}{{"must", must}, {"must_not", mustNot}} {
		for _, expr := range rule.res {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("marker %q: %w", expr, err)
			}
			out = append(out, MarkerRule{Rule: rule.name, Regex: expr, Re: re})
		}
	}
	return out, nil
}
