package quantfmt

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Tensor is one tensor of a llama-quantize run, from its line
//
//	[  12/  75] blk.1.attn_k.weight - [ 512, 512, 1, 1], type = f16, converting to q4_0 .. size = 0.50 MiB -> 0.14 MiB
//
// A tensor copied as it is prints "size = 0.002 MiB" alone (To stays ""); --dry-run prints
// "size = 1.34 MiB -> 0.46 MiB (q5_0)". The tool prints the line's head before it quantizes
// the tensor and the sizes after; another message can come between (with --imatrix: "======
// … did not find weights for output.weight"), so the sizes may be on a later line (SizeLine).
type Tensor struct {
	Index      int     `json:"index"` // i of [i/N], 1-based
	Total      int     `json:"total"` // N
	Name       string  `json:"name"`
	Shape      []int64 `json:"shape"`
	From       string  `json:"from"`         // its type in the input: f16, f32, q8_0 …
	To         string  `json:"to,omitempty"` // the type written; "" when copied as it is
	SizeMiB    float64 `json:"size_mib"`     // before
	NewSizeMiB float64 `json:"new_size_mib"` // after (SizeMiB when copied)
	Sized      bool    `json:"sized"`        // the sizes were read (false: the run broke off at it)
	Line       int     `json:"line"`
	SizeLine   int     `json:"size_line,omitempty"` // the line of the sizes when not Line
}

// QuantizeStart is the tool's opening line: "quantizing 'IN' to 'OUT' as Q4_0 using 1
// threads", or with --dry-run "calculating quantization size for 'IN' as Q4_K_M using 1
// threads" ("using N threads" is absent when no thread count was given).
type QuantizeStart struct {
	Input   string `json:"input"`
	Output  string `json:"output,omitempty"`
	Type    string `json:"type"`
	Threads int    `json:"threads,omitempty"`
	DryRun  bool   `json:"dry_run,omitempty"`
	Line    int    `json:"line"`
}

// ModelSize is "model size  =    48.79 MiB (16.01 BPW)" (or "quant size …").
type ModelSize struct {
	MiB Figure `json:"mib"`
	BPW Figure `json:"bpw"`
}

// Fallback is a tensor whose row length the wanted type cannot take: "warning:
// blk.0.ffn_down.weight - ncols 1376 not divisible by 256 (required for type q6_K) -> falling
// back to q8_0".
type Fallback struct {
	Tensor string `json:"tensor"`
	Cols   int    `json:"cols"`
	Block  int    `json:"block"`
	Wanted string `json:"wanted"`
	Used   string `json:"used"`
	Line   int    `json:"line"`
}

// QuantizeOutput is everything a llama-quantize run printed that the parser reads.
type QuantizeOutput struct {
	Start          *QuantizeStart `json:"start,omitempty"`
	Total          int            `json:"total"` // N of the tensor lines; 0 before the first
	Tensors        []Tensor       `json:"tensors"`
	DroppedTensors int            `json:"dropped_tensors,omitempty"` // beyond MaxTensors, counted only
	Fallbacks      []Fallback     `json:"fallbacks,omitempty"`
	// FallbackTotal is "WARNING: 8 of 75 tensor(s) required fallback quantization" (0: none printed).
	FallbackTotal int        `json:"fallback_total,omitempty"`
	ModelSize     *ModelSize `json:"model_size,omitempty"`
	QuantSize     *ModelSize `json:"quant_size,omitempty"`
	QuantizeMs    *Figure    `json:"quantize_ms,omitempty"` // "quantize time = 168.48 ms"
	TotalMs       *Figure    `json:"total_ms,omitempty"`    // "total time = 168.48 ms"
	Failures      []ToolLine `json:"failures,omitempty"`
}

// MaxTensors bounds the tensors a QuantizeOutput keeps; later ones are counted.
const MaxTensors = 1 << 16

// Done is how many tensors were finished (their sizes read), those beyond MaxTensors included.
func (o *QuantizeOutput) Done() int {
	n := o.DroppedTensors
	for _, t := range o.Tensors {
		if t.Sized {
			n++
		}
	}
	return n
}

// Complete says the run printed what a finished quantization prints: every tensor of N with
// its sizes, the quant size line, and no failure.
func (o *QuantizeOutput) Complete() bool {
	return o.Total > 0 && o.Done() == o.Total && o.QuantSize != nil && len(o.Failures) == 0
}

// QuantizeEventKind says what one line added.
type QuantizeEventKind string

// The kinds of QuantizeEvent.
const (
	QuantizeNothing    QuantizeEventKind = ""
	QuantizeStarted    QuantizeEventKind = "start"       // the opening line
	QuantizeTensorLine QuantizeEventKind = "tensor"      // a tensor's line ([i/N]); Tensor.Sized says whether it finished on it
	QuantizeTensorDone QuantizeEventKind = "tensor_done" // a later line gave a tensor's sizes
	QuantizeFallback   QuantizeEventKind = "fallback"
	QuantizeSizes      QuantizeEventKind = "sizes" // model size, quant size or a time
	QuantizeFailure    QuantizeEventKind = "failure"
)

// QuantizeEvent is what one line added. Tensor is a copy of the tensor it was about.
type QuantizeEvent struct {
	Kind    QuantizeEventKind
	Tensor  *Tensor
	Failure *ToolLine
}

var (
	qStartRE    = regexp.MustCompile(`quantizing '(.*)' to '(.*)' as (\S+?)(?: using (\d+) threads?)?\s*$`)
	qDryStartRE = regexp.MustCompile(`calculating quantization size for '(.*)' as (\S+?)(?: using (\d+) threads?)?\s*$`)
	qTensorRE   = regexp.MustCompile(`^\[\s*(\d+)\s*/\s*(\d+)\s*\]\s+(\S+)\s+-\s+\[([^\]]*)\],\s*type\s*=\s*([^,\s]+),\s?(.*)$`)
	qRestRE     = regexp.MustCompile(`^\s*(?:converting to (\S+) \.\.\s?)?(?:size\s*=\s*(` + numPat + `)\s*MiB(?:\s*->\s*(` + numPat + `)\s*MiB(?:\s*\((\S+)\))?)?)?(.*)$`)
	qSizeRE     = regexp.MustCompile(`(model|quant) size\s*=\s*(` + numPat + `)\s*Mi?B\s*\(\s*(` + numPat + `)\s*BPW\s*\)`)
	qTimeRE     = regexp.MustCompile(`(quantize|total) time\s*=\s*(` + numPat + `)\s*ms`)
	qFallbackRE = regexp.MustCompile(`^warning:\s*(\S+)\s+-\s+ncols\s+(\d+)\s+not divisible by\s+(\d+)\s+\(required for type\s+(\S+)\)\s*->\s*falling back to\s+(\S+)`)
	qFallTotRE  = regexp.MustCompile(`WARNING:\s*(\d+) of (\d+) tensor\(s\) required fallback quantization`)
)

// QuantizeParser reads a llama-quantize run one output line at a time. The zero value is
// ready; it is not safe for concurrent use.
type QuantizeParser struct {
	out     QuantizeOutput
	pending int // index in out.Tensors of a tensor whose sizes have not come yet; -1 none
	started bool
}

// ParseQuantizeOutput reads a whole output (lines numbered from 1).
func ParseQuantizeOutput(text string) QuantizeOutput {
	var p QuantizeParser
	for i, l := range splitLines(text) {
		p.Line(i+1, l)
	}
	return p.Result()
}

// Result is what was read so far (a copy the parser no longer touches).
func (p *QuantizeParser) Result() QuantizeOutput {
	o := p.out
	o.Tensors = append([]Tensor(nil), o.Tensors...)
	if o.Tensors == nil {
		o.Tensors = []Tensor{}
	}
	o.Fallbacks = append([]Fallback(nil), o.Fallbacks...)
	o.Failures = append([]ToolLine(nil), o.Failures...)
	return o
}

// Line reads output line n (1-based, CR and ANSI removed) and says what it added.
func (p *QuantizeParser) Line(n int, text string) QuantizeEvent {
	if !p.started {
		p.started, p.pending = true, -1
	}
	_, text = splitLogPrefix(strings.TrimRight(text, "\r"))
	t := strings.TrimSpace(text)
	if t == "" {
		return QuantizeEvent{}
	}
	if m := qTensorRE.FindStringSubmatch(t); m != nil {
		return p.tensor(n, m)
	}
	if p.pending >= 0 && (strings.HasPrefix(t, "converting to ") || strings.HasPrefix(t, "size =") || strings.HasPrefix(t, "size=")) {
		tn := &p.out.Tensors[p.pending]
		rest := p.applyRest(tn, n, t)
		if tn.Sized {
			p.pending = -1
			cp := *tn
			return QuantizeEvent{Kind: QuantizeTensorDone, Tensor: &cp}
		}
		if f := p.failure(n, rest); f != nil {
			return QuantizeEvent{Kind: QuantizeFailure, Failure: f}
		}
		return QuantizeEvent{}
	}
	if ev, ok := p.other(n, t); ok {
		return ev
	}
	if f := p.failure(n, t); f != nil {
		return QuantizeEvent{Kind: QuantizeFailure, Failure: f}
	}
	return QuantizeEvent{}
}

// other reads the opening line, fallbacks, sizes and times.
func (p *QuantizeParser) other(n int, t string) (QuantizeEvent, bool) {
	if m := qStartRE.FindStringSubmatch(t); m != nil && p.out.Start == nil {
		p.out.Start = &QuantizeStart{Input: m[1], Output: m[2], Type: m[3], Threads: max(atoi(m[4]), 0), Line: n}
		return QuantizeEvent{Kind: QuantizeStarted}, true
	}
	if m := qDryStartRE.FindStringSubmatch(t); m != nil && p.out.Start == nil {
		p.out.Start = &QuantizeStart{Input: m[1], Type: m[2], Threads: max(atoi(m[3]), 0), DryRun: true, Line: n}
		return QuantizeEvent{Kind: QuantizeStarted}, true
	}
	if m := qFallbackRE.FindStringSubmatch(t); m != nil {
		if len(p.out.Fallbacks) < MaxTensors {
			p.out.Fallbacks = append(p.out.Fallbacks, Fallback{Tensor: m[1], Cols: atoi(m[2]), Block: atoi(m[3]), Wanted: m[4], Used: m[5], Line: n})
		}
		return QuantizeEvent{Kind: QuantizeFallback}, true
	}
	if m := qFallTotRE.FindStringSubmatch(t); m != nil {
		p.out.FallbackTotal = max(atoi(m[1]), 0)
		return QuantizeEvent{Kind: QuantizeSizes}, true
	}
	if m := qSizeRE.FindStringSubmatch(t); m != nil {
		mib, ok1 := parseNum(m[2])
		bpw, ok2 := parseNum(m[3])
		if ok1 && ok2 {
			s := &ModelSize{MiB: Figure{Value: mib, Line: n}, BPW: Figure{Value: bpw, Line: n}}
			if m[1] == "model" {
				p.out.ModelSize = s
			} else {
				p.out.QuantSize = s
			}
			return QuantizeEvent{Kind: QuantizeSizes}, true
		}
	}
	if m := qTimeRE.FindStringSubmatch(t); m != nil {
		if v, ok := parseNum(m[2]); ok {
			f := &Figure{Value: v, Line: n}
			if m[1] == "quantize" {
				p.out.QuantizeMs = f
			} else {
				p.out.TotalMs = f
			}
			return QuantizeEvent{Kind: QuantizeSizes}, true
		}
	}
	return QuantizeEvent{}, false
}

func (p *QuantizeParser) tensor(n int, m []string) QuantizeEvent {
	tn := Tensor{Index: max(atoi(m[1]), 0), Total: max(atoi(m[2]), 0), Name: m[3], From: m[5], Line: n}
	for _, d := range strings.Split(m[4], ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
		if err != nil {
			tn.Shape = nil
			break
		}
		tn.Shape = append(tn.Shape, v)
	}
	if tn.Total > 0 {
		p.out.Total = tn.Total
	}
	rest := p.applyRest(&tn, n, m[6])
	if len(p.out.Tensors) >= MaxTensors {
		if tn.Sized {
			p.out.DroppedTensors++
		}
		p.pending = -1
	} else {
		p.out.Tensors = append(p.out.Tensors, tn)
		p.pending = -1
		if !tn.Sized {
			p.pending = len(p.out.Tensors) - 1
		}
	}
	if f := p.failure(n, rest); f != nil {
		p.pending = -1
		return QuantizeEvent{Kind: QuantizeFailure, Tensor: &tn, Failure: f}
	}
	return QuantizeEvent{Kind: QuantizeTensorLine, Tensor: &tn}
}

// applyRest reads "converting to X .. size = A MiB -> B MiB" (or a part of it) into tn and
// returns what follows it.
func (p *QuantizeParser) applyRest(tn *Tensor, n int, rest string) string {
	m := qRestRE.FindStringSubmatch(rest)
	if m == nil {
		return rest
	}
	if m[1] != "" {
		tn.To = m[1]
	}
	if m[2] != "" {
		size, ok := parseNum(m[2])
		if ok && !math.IsNaN(size) && !math.IsInf(size, 0) {
			tn.SizeMiB, tn.NewSizeMiB, tn.Sized = size, size, true
			if m[3] != "" {
				if v, ok := parseNum(m[3]); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
					tn.NewSizeMiB = v
				}
				if m[4] != "" {
					tn.To = m[4]
				}
			}
			if n != tn.Line {
				tn.SizeLine = n
			}
		}
	}
	return m[5]
}

// failure records a line that says the quantization failed.
func (p *QuantizeParser) failure(n int, t string) *ToolLine {
	t = strings.TrimSpace(t)
	if t == "" {
		return nil
	}
	l := strings.ToLower(t)
	if !(strings.Contains(l, "failed to quantize") || strings.Contains(l, "invalid ftype") ||
		strings.HasPrefix(l, "error") || strings.Contains(l, ": error") ||
		strings.Contains(l, "failed to load imatrix") || strings.Contains(l, "requires an importance matrix")) {
		return nil
	}
	p.out.Failures = appendLine(p.out.Failures, n, t)
	f := ToolLine{Line: n, Text: clipText(t)}
	return &f
}

// splitLines splits text at LF, dropping each line's CR.
func splitLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
