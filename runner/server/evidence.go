package server

import (
	"fmt"
	"regexp"
	"strconv"
)

// Evidence is what llama-server's log says about the backend of its last model load: the
// device of every layer (shown at -v), the size of every model, KV, compute and output buffer
// per device (shown at -lv 4 and -v), and the candidate's marker regexes. llama-server loads a
// model twice by default (a dry fitting pass with 0.00 MiB buffers, then the real load), so
// only the last load block counts: from the last line holding "llama_model_loader: loaded meta
// data with" to the end of the log, the same block app/capacity's marker gate reads.
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

var (
	loadStartRE = regexp.MustCompile(`llama_model_loader: loaded meta data with`)
	layerRE     = regexp.MustCompile(`load_tensors: layer\s+(\d+) assigned to device ([^\s,]+)`)
	bufferREs   = []struct {
		kind string
		re   *regexp.Regexp
	}{
		{BufferModel, regexp.MustCompile(`load_tensors:\s+(\S+) model buffer size =\s*([0-9.]+) MiB`)},
		{BufferKV, regexp.MustCompile(`llama_kv_cache:\s+(\S+) KV buffer size =\s*([0-9.]+) MiB`)},
		{BufferCompute, regexp.MustCompile(`sched_reserve:\s+(\S+) compute buffer size =\s*([0-9.]+) MiB`)},
		{BufferOutput, regexp.MustCompile(`llama_context:\s+(\S+)\s+output buffer size =\s*([0-9.]+) MiB`)},
	}
)

// evidenceScanner builds Evidence line by line, keeping nothing but the current block's
// findings (a new load block starts them over).
type evidenceScanner struct {
	markers []compiledMarker
	ev      Evidence
}

type compiledMarker struct {
	rule string
	src  string
	re   *regexp.Regexp
}

func newEvidenceScanner(m Markers) (*evidenceScanner, error) {
	s := &evidenceScanner{}
	for _, rule := range []struct {
		name string
		res  []string
	}{{"must", m.Must}, {"must_not", m.MustNot}} {
		for _, expr := range rule.res {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("marker %q: %w", expr, err)
			}
			s.markers = append(s.markers, compiledMarker{rule.name, expr, re})
		}
	}
	s.reset(0)
	return s, nil
}

func (s *evidenceScanner) reset(line int) {
	s.ev.BlockLine = line
	s.ev.Omitted = 0
	s.ev.Layers = []LayerDevice{}
	s.ev.Buffers = []Buffer{}
	s.ev.Markers = make([]MarkerCheck, len(s.markers))
	for i, m := range s.markers {
		s.ev.Markers[i] = MarkerCheck{Rule: m.rule, Regex: m.src, Ok: m.rule == "must_not"}
	}
}

// observe feeds log line n (1-based, ANSI and CR removed).
func (s *evidenceScanner) observe(n int, line string) {
	if loadStartRE.MatchString(line) {
		s.ev.Loads++
		s.reset(n)
	}
	if s.ev.BlockLine == 0 {
		return // markers and buffers only count inside a load block
	}
	for i, m := range s.markers {
		c := &s.ev.Markers[i]
		if !c.Found && m.re.MatchString(line) {
			c.Found, c.Line = true, n
			c.Ok = m.rule == "must"
		}
	}
	if m := layerRE.FindStringSubmatch(line); m != nil {
		if len(s.ev.Layers) >= MaxEvidenceEntries {
			s.ev.Omitted++
			return
		}
		l, _ := strconv.Atoi(m[1])
		s.ev.Layers = append(s.ev.Layers, LayerDevice{Layer: l, Device: m[2]})
		return
	}
	for _, b := range bufferREs {
		if m := b.re.FindStringSubmatch(line); m != nil {
			if len(s.ev.Buffers) >= MaxEvidenceEntries {
				s.ev.Omitted++
				return
			}
			mib, _ := strconv.ParseFloat(m[2], 64)
			s.ev.Buffers = append(s.ev.Buffers, Buffer{Kind: b.kind, Device: m[1], MiB: mib, Line: n})
			return
		}
	}
}

// evidence is a copy of what was found so far.
func (s *evidenceScanner) evidence() Evidence {
	e := s.ev
	e.Layers = append([]LayerDevice{}, e.Layers...)
	e.Buffers = append([]Buffer{}, e.Buffers...)
	e.Markers = append([]MarkerCheck{}, e.Markers...)
	return e
}

// ScanEvidence reads the evidence of a whole log (lines split on \n; trailing \r and ANSI
// colour sequences removed).
func ScanEvidence(log []byte, m Markers) (Evidence, error) {
	s, err := newEvidenceScanner(m)
	if err != nil {
		return Evidence{}, err
	}
	n := 0
	for start := 0; start < len(log); {
		end := start
		for end < len(log) && log[end] != '\n' {
			end++
		}
		n++
		s.observe(n, cleanLine(log[start:end]))
		start = end + 1
	}
	return s.evidence(), nil
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

func cleanLine(b []byte) string {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return ansiRE.ReplaceAllString(string(b), "")
}
