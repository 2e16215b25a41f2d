// Package devlog reads llama.cpp logs — llama-server, llama-cli, llama-completion and
// llama-bench -v, of every generation seen in published logs since 2023 — into device
// evidence and generation timings. It is pure: lines in, values out (no process, no file).
//
// What it reads, line by line (CR and ANSI colour sequences removed, each pattern unanchored,
// so a line glued to progress dots, a blockquote or a timestamp prefix still counts):
//
//   - load blocks: "llama_model_loader: loaded meta data with" starts one; only the last block
//     counts for layers, buffers, the offload count, the memory breakdown and the markers
//     (llama-server loads twice by default: a dry fitting pass, then the real load). Lines
//     before the first such line form block 0 (a log fragment), whose markers are not checked;
//   - layers: "load_tensors: layer N assigned to device DEV" (-v);
//   - buffers: model ("load_tensors: DEV model buffer size = X MiB", before 2025
//     "llm_load_tensors: DEV buffer size = X MiB"), KV ("llama_kv_cache…: DEV KV buffer
//     size"), compute ("sched_reserve:", "llama_context:", "llama_new_context_with_model:",
//     "llama_init_from_model: DEV compute buffer size"), output (same prefixes, "output buffer
//     size");
//   - offload: "offloaded N/M layers to GPU";
//   - memory breakdown: the "memory_breakdown_print: | memory breakdown [MiB] | …" header and
//     its "|   - DEV (description) | … |" rows, figures mapped to the header's column names, or
//     the --log-jsonl record {"type":"fit_memory_breakdown","data":{"unit":"MiB","rows":[…]}};
//   - devices, over the whole log: "ggml_cuda_init: found N CUDA|ROCm|MUSA devices" and its
//     "Device k:" lines (CUDAk, ROCmk …), "ggml_vulkan: k = NAME | …" (Vulkank),
//     "ggml_metal_init: found device: NAME" (MTL0), "ggml-hex: allocating new session: HTPk",
//     the device_info list "  - Vulkan0 : NAME (T MiB, F MiB free)", and "using device DEV
//     (NAME) - F MiB free" (Selected);
//   - timings, over the whole log: "prompt eval time = X ms / N tokens (… ms per token, T
//     tokens per second)", "eval time = …" ("generation eval time" in the 2024 server and the
//     ik_llama.cpp fork), "total time = X ms / N tokens", in every wrapping seen (slot
//     print_timing:, llama_perf_context_print:, llama_print_timings:, INFO [ print_timings],
//     the 2024 JSON log's "msg", the bare 3-line block), grouped per generation; and the
//     "timings" JSON object of a completion response or final SSE chunk (one line or several).
//
// Every list is capped at vocab.MaxEvidenceEntries (the rest counted in Evidence.Omitted or
// Log.TimingsOmitted), a JSON object being assembled at 64 lines / 16 KiB, a line read by
// ScanReader at 1 MiB: a log that floods or never ends a construct does not grow the scanner.
package devlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"sparkbench/runner/vocab"
)

// Timing is one generation's figures. A field is 0 when its line was not seen (a log cut in
// the middle of a block).
type Timing struct {
	// Source names the form: "print_timing" (llama-server slot lines), "llama_perf"
	// (llama_perf_context_print), "llama_print_timings" (llama-cli before 2024-09),
	// "info_log" (INFO [ print_timings]), "json_log" (2024 JSON log lines), "plain" (the bare
	// 3-line block), "timings_json" (a response's "timings" object).
	Source       string  `json:"source"`
	Line         int     `json:"line"`           // first line of the generation's block
	Task         string  `json:"task,omitempty"` // llama-server's task id when the line has one
	PromptTokens int     `json:"prompt_tokens"`
	PromptMS     float64 `json:"prompt_ms"`
	PromptTPS    float64 `json:"prompt_tps"`
	GenTokens    int     `json:"gen_tokens"`
	GenMS        float64 `json:"gen_ms"`
	GenTPS       float64 `json:"gen_tps"`
	TotalMS      float64 `json:"total_ms,omitempty"`
	TotalTokens  int     `json:"total_tokens,omitempty"`
	CacheTokens  int     `json:"cache_tokens,omitempty"` // timings JSON's cache_n
}

// Log is everything a log says.
type Log struct {
	Evidence       vocab.Evidence `json:"evidence"`
	Timings        []Timing       `json:"timings"`
	TimingsOmitted int            `json:"timings_omitted,omitempty"`
	Lines          int            `json:"lines"`
}

var (
	loadStartRE = regexp.MustCompile(`llama_model_loader: loaded meta data with`)
	layerRE     = regexp.MustCompile(`load_tensors: layer\s+(\d+) assigned to device ([^\s,]+)`)
	bufferREs   = []struct {
		kind string
		re   *regexp.Regexp
	}{
		{vocab.BufferModel, regexp.MustCompile(`load_tensors:\s+(\S+) (?:model )?buffer size =\s*([0-9.]+) MiB`)},
		{vocab.BufferKV, regexp.MustCompile(`llama_kv_cache\w*:\s+(\S+) KV buffer size =\s*([0-9.]+) MiB`)},
		{vocab.BufferCompute, regexp.MustCompile(`(?:sched_reserve|llama_context|llama_new_context_with_model|llama_init_from_model):\s+(\S+) compute buffer size =\s*([0-9.]+) MiB`)},
		{vocab.BufferOutput, regexp.MustCompile(`(?:llama_context|llama_new_context_with_model|llama_init_from_model):\s+(\S+)\s+output buffer size =\s*([0-9.]+) MiB`)},
	}
	offloadRE = regexp.MustCompile(`offloaded (\d+)/(\d+) layers to GPU`)

	breakdownHeadRE = regexp.MustCompile(`memory_breakdown_print: \|\s*memory breakdown \[MiB\]\s*\|(.*)\|`)
	breakdownRowRE  = regexp.MustCompile(`memory_breakdown_print: \|\s*-\s*(.*?)\s*\|(.*)\|`)
	numberRE        = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?`)

	foundRE      = regexp.MustCompile(`ggml_cuda_init: found (\d+) (\w+) devices`)
	cudaDevRE    = regexp.MustCompile(`(?:^|\s)Device (\d+): ([^,]+)(.*)$`)
	vramRE       = regexp.MustCompile(`VRAM: (\d+) MiB`)
	vulkanDevRE  = regexp.MustCompile(`ggml_vulkan: (\d+) = ([^|]*?)\s*(?:\||$)`)
	metalDevRE   = regexp.MustCompile(`ggml_metal_init: found device: (.+?)\s*$`)
	hexDevRE     = regexp.MustCompile(`ggml-hex: allocating new session: (HTP\d+)`)
	infoDevRE    = regexp.MustCompile(`\s-\s+(\S+)\s*:\s(.*)\((\d+) MiB, (\d+) MiB free\)`)
	usingDevRE   = regexp.MustCompile(`using device (\S+) \((.*)\) - (\d+) MiB free`)
	promptRE     = regexp.MustCompile(`(prompt eval|generation eval|eval) time\s*=\s*([0-9.]+)\s*ms\s*/\s*(\d+)\s*(?:tokens|runs)(?:\s*\(\s*[0-9.]+\s*ms per token,\s*([0-9.]+)\s*tokens per second\))?`)
	totalRE      = regexp.MustCompile(`total time\s*=\s*([0-9.]+)\s*ms(?:\s*/\s*(\d+)\s*tokens)?`)
	taskRE       = regexp.MustCompile(`(?:\| task |id_task=|"task_id":)(-?\d+)`)
	timingsKeyRE = regexp.MustCompile(`"timings"\s*:\s*\{`)
	ansiRE       = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")
)

// Limits of a "timings" JSON object spread over lines.
const (
	maxObjectLines = 64
	maxObjectBytes = 16 << 10
	// MaxLineBytes is the longest line ScanReader keeps (the rest of a longer line is dropped).
	MaxLineBytes = 1 << 20
)

// Scanner reads a log line by line. Not safe for concurrent use.
type Scanner struct {
	markers []vocab.MarkerRule
	ev      vocab.Evidence // the current block's findings, Devices aside
	lines   int
	inBlock bool // a load line was seen: markers count

	devices    []vocab.LogDevice
	deviceAt   map[string]int
	devOmitted int
	pendingDev string // "CUDA", "ROCm" … after "found N X devices", until a line that is no "Device k:"
	pendingN   int

	cols []string // the current breakdown table's header

	timings    []Timing
	timOmitted int
	open       []*Timing // the generations whose lines are being read, oldest first
	obj        []byte    // a "timings" object spread over lines
	objLine    int
	objLines   int
}

// NewScanner returns a scanner checking the given markers (vocab.CompileMarkers) in the last
// load block.
func NewScanner(markers []vocab.MarkerRule) *Scanner {
	s := &Scanner{markers: markers, deviceAt: map[string]int{}}
	s.reset(0)
	return s
}

func (s *Scanner) reset(line int) {
	s.ev.BlockLine = line
	s.ev.Omitted = 0
	s.ev.Layers = []vocab.LayerDevice{}
	s.ev.Buffers = []vocab.Buffer{}
	s.ev.Offloaded = nil
	s.ev.Breakdown = nil
	s.cols = nil
	s.ev.Markers = make([]vocab.MarkerCheck, len(s.markers))
	for i, m := range s.markers {
		s.ev.Markers[i] = vocab.MarkerCheck{Rule: m.Rule, Regex: m.Regex, Ok: m.Rule == "must_not"}
	}
}

// Feed reads the next line (numbered from 1).
func (s *Scanner) Feed(line string) { s.Line(s.lines+1, line) }

// Line reads line n (1-based; the caller's numbering, e.g. one log over several processes).
// A trailing CR and ANSI colour sequences are removed.
func (s *Scanner) Line(n int, line string) {
	if n > s.lines {
		s.lines = n
	}
	line = Clean(line)
	s.objectLine(n, line)
	s.deviceLine(n, line)
	s.timingLine(n, line)
	s.blockLine(n, line)
}

// Clean removes a trailing CR and ANSI colour sequences.
func Clean(line string) string {
	line = strings.TrimSuffix(line, "\r")
	if strings.IndexByte(line, 0x1b) >= 0 {
		line = ansiRE.ReplaceAllString(line, "")
	}
	return line
}

func (s *Scanner) blockLine(n int, line string) {
	if loadStartRE.MatchString(line) {
		s.ev.Loads++
		s.inBlock = true
		s.reset(n)
	}
	if s.inBlock {
		for i, m := range s.markers {
			c := &s.ev.Markers[i]
			if !c.Found && m.Re.MatchString(line) {
				c.Found, c.Line = true, n
				c.Ok = m.Rule == "must"
			}
		}
	}
	switch {
	case strings.Contains(line, "assigned to device"):
		if m := layerRE.FindStringSubmatch(line); m != nil {
			if len(s.ev.Layers) >= vocab.MaxEvidenceEntries {
				s.ev.Omitted++
				return
			}
			l := count(m[1])
			s.ev.Layers = append(s.ev.Layers, vocab.LayerDevice{Layer: l, Device: m[2]})
		}
	case strings.Contains(line, "buffer size ="):
		for _, b := range bufferREs {
			if m := b.re.FindStringSubmatch(line); m != nil {
				if len(s.ev.Buffers) >= vocab.MaxEvidenceEntries {
					s.ev.Omitted++
					return
				}
				mib := num(m[2])
				s.ev.Buffers = append(s.ev.Buffers, vocab.Buffer{Kind: b.kind, Device: m[1], MiB: mib, Line: n})
				return
			}
		}
	case strings.Contains(line, "offloaded "):
		if m := offloadRE.FindStringSubmatch(line); m != nil {
			s.ev.Offloaded = &vocab.Offload{Layers: count(m[1]), Of: count(m[2]), Line: n}
		}
	case strings.Contains(line, "memory_breakdown_print:"):
		s.breakdownLine(n, line)
	case strings.HasPrefix(line, `{"type":"fit_memory_breakdown"`):
		s.breakdownRecord(n, line)
	}
}

// breakdownRecord reads the --log-jsonl form of the table: {"type":"fit_memory_breakdown",
// "data":{"unit":"MiB","rows":[{"kind":"host","name":"Host","self":8,…}]}}.
func (s *Scanner) breakdownRecord(n int, line string) {
	var rec struct {
		Data struct {
			Unit string                       `json:"unit"`
			Rows []map[string]json.RawMessage `json:"rows"`
		} `json:"data"`
	}
	if json.Unmarshal([]byte(line), &rec) != nil || rec.Data.Unit != "MiB" {
		return
	}
	s.cols = nil
	s.ev.Breakdown = []vocab.BreakdownRow{}
	for _, r := range rec.Data.Rows {
		if len(s.ev.Breakdown) >= vocab.MaxEvidenceEntries {
			s.ev.Omitted++
			continue
		}
		row := vocab.BreakdownRow{MiB: map[string]float64{}, Line: n}
		for k, v := range r {
			var f float64
			var str string
			switch {
			case json.Unmarshal(v, &f) == nil:
				row.MiB[k] = f // finite: encoding/json refuses what overflows a float64
			case k == "name" && json.Unmarshal(v, &str) == nil:
				row.Device = str
			case k == "description" && json.Unmarshal(v, &str) == nil:
				row.Description = str
			}
		}
		s.ev.Breakdown = append(s.ev.Breakdown, row)
	}
}

func (s *Scanner) breakdownLine(n int, line string) {
	if m := breakdownHeadRE.FindStringSubmatch(line); m != nil {
		s.cols = strings.Fields(m[1])
		s.ev.Breakdown = []vocab.BreakdownRow{}
		return
	}
	m := breakdownRowRE.FindStringSubmatch(line)
	if m == nil || s.cols == nil {
		return
	}
	if len(s.ev.Breakdown) >= vocab.MaxEvidenceEntries {
		s.ev.Omitted++
		return
	}
	name, desc, _ := strings.Cut(m[1], " ")
	desc = strings.TrimSpace(desc)
	if strings.HasPrefix(desc, "(") && strings.HasSuffix(desc, ")") {
		desc = desc[1 : len(desc)-1]
	}
	row := vocab.BreakdownRow{Device: name, Description: desc, Line: n}
	var nums []float64
	for _, f := range numberRE.FindAllString(m[2], -1) {
		nums = append(nums, num(f))
	}
	cols := s.cols
	if len(nums) != len(cols) {
		// A host row: "self = model + context + compute" under those four columns.
		i := indexOf(cols, "self")
		if len(nums) != 4 || i < 0 || i+4 > len(cols) {
			cols = nil
		} else {
			cols = cols[i : i+4]
		}
	}
	if cols != nil {
		row.MiB = make(map[string]float64, len(cols))
		for i, c := range cols {
			row.MiB[c] = nums[i]
		}
	}
	s.ev.Breakdown = append(s.ev.Breakdown, row)
}

// num is a figure of a line; 0 when it does not parse or overflows (JSON has no infinity).
func num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

// count is a whole number of a line; 0 when it does not parse.
func count(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return v
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// device records what a line says about a device, merging it into the first entry of that name.
func (s *Scanner) device(d vocab.LogDevice) {
	if d.Name == "" {
		return
	}
	i, ok := s.deviceAt[d.Name]
	if !ok {
		if len(s.devices) >= vocab.MaxEvidenceEntries {
			s.devOmitted++
			return
		}
		s.deviceAt[d.Name] = len(s.devices)
		s.devices = append(s.devices, d)
		return
	}
	e := &s.devices[i]
	if e.Description == "" {
		e.Description = d.Description
	}
	if d.TotalMiB > 0 {
		e.TotalMiB = d.TotalMiB
	}
	if d.FreeMiB > 0 {
		e.FreeMiB = d.FreeMiB
	}
	e.Selected = e.Selected || d.Selected
}

func (s *Scanner) deviceLine(n int, line string) {
	if s.pendingDev != "" {
		if m := cudaDevRE.FindStringSubmatch(line); m != nil {
			d := vocab.LogDevice{Name: s.pendingDev + m[1], Description: strings.TrimSpace(m[2]), Line: n}
			if v := vramRE.FindStringSubmatch(m[3]); v != nil {
				d.TotalMiB = num(v[1])
			}
			s.device(d)
			if s.pendingN--; s.pendingN <= 0 {
				s.pendingDev = ""
			}
			return
		}
		s.pendingDev = ""
	}
	switch {
	case strings.Contains(line, "ggml_cuda_init: found "):
		if m := foundRE.FindStringSubmatch(line); m != nil {
			s.pendingDev = m[2]
			s.pendingN, _ = strconv.Atoi(m[1])
			if s.pendingN <= 0 || s.pendingN > 1024 {
				s.pendingDev = ""
			}
		}
	case strings.Contains(line, "ggml_vulkan: "):
		if m := vulkanDevRE.FindStringSubmatch(line); m != nil {
			s.device(vocab.LogDevice{Name: "Vulkan" + m[1], Description: m[2], Line: n})
		}
	case strings.Contains(line, "ggml_metal_init: found device: "):
		if m := metalDevRE.FindStringSubmatch(line); m != nil {
			s.device(vocab.LogDevice{Name: "MTL0", Description: m[1], Line: n})
		}
	case strings.Contains(line, "ggml-hex: allocating new session: "):
		if m := hexDevRE.FindStringSubmatch(line); m != nil {
			s.device(vocab.LogDevice{Name: m[1], Description: "Hexagon", Line: n})
		}
	case strings.Contains(line, "using device "):
		if m := usingDevRE.FindStringSubmatch(line); m != nil {
			free := num(m[3])
			s.device(vocab.LogDevice{Name: m[1], Description: trimID(m[2]), FreeMiB: free, Selected: true, Line: n})
		}
	case strings.Contains(line, " MiB free)"):
		if m := infoDevRE.FindStringSubmatch(line); m != nil {
			total, free := num(m[3]), num(m[4])
			s.device(vocab.LogDevice{Name: m[1], Description: strings.TrimSpace(m[2]), TotalMiB: total, FreeMiB: free, Line: n})
		}
	}
}

// trimID drops the id part newer builds add after the name: "llvmpipe (…)) (unknown id" →
// "llvmpipe (…)".
func trimID(desc string) string {
	i := strings.LastIndex(desc, ") (")
	if i < 0 {
		return desc
	}
	left := desc[:i+1]
	if strings.Count(left, "(") == strings.Count(left, ")") && !strings.Contains(desc[i+3:], "(") {
		return left
	}
	return desc
}

// Evidence is a copy of the evidence found so far.
func (s *Scanner) Evidence() vocab.Evidence {
	e := s.ev
	e.Layers = append([]vocab.LayerDevice{}, e.Layers...)
	e.Buffers = append([]vocab.Buffer{}, e.Buffers...)
	e.Markers = append([]vocab.MarkerCheck{}, e.Markers...)
	if e.Breakdown != nil {
		e.Breakdown = append([]vocab.BreakdownRow{}, e.Breakdown...)
	}
	if len(s.devices) > 0 {
		e.Devices = append([]vocab.LogDevice{}, s.devices...)
	}
	e.Omitted += s.devOmitted
	return e
}

// Timings are the generations read so far, the one being read included.
func (s *Scanner) Timings() []Timing {
	out := append([]Timing{}, s.timings...)
	for _, t := range s.open {
		out = append(out, *t)
	}
	return out
}

// Result is everything read so far.
func (s *Scanner) Result() Log {
	return Log{Evidence: s.Evidence(), Timings: s.Timings(), TimingsOmitted: s.timOmitted, Lines: s.lines}
}

// ScanText reads a whole log held in memory (lines split on \n).
func ScanText(text []byte, markers []vocab.MarkerRule) Log {
	s := NewScanner(markers)
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte{'\n'})
		s.Feed(string(line))
		text = rest
	}
	return s.Result()
}

// ScanReader reads a log from r; a line longer than MaxLineBytes is cut there (the rest of it
// skipped, the line counted once).
func ScanReader(r io.Reader, markers []vocab.MarkerRule) (Log, error) {
	s := NewScanner(markers)
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
			if len(line) > MaxLineBytes {
				line, long = line[:MaxLineBytes], true
			}
		}
		switch {
		case err == nil:
			s.Feed(string(bytes.TrimSuffix(line, []byte{'\n'})))
			line, long = line[:0], false
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				s.Feed(string(line))
			}
			return s.Result(), nil
		default:
			return s.Result(), err
		}
	}
}
