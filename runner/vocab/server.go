package vocab

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Evidence is what llama-server's log says about the backend of its last model load: the
// device of every layer (shown at -v), the size of every model, KV, compute and output buffer
// per device (shown at -lv 4 and -v), the offloaded layer count, the memory breakdown table,
// the devices the log announces, and the candidate's marker regexes (runner/devlog reads them). llama-server loads a
// model twice by default (a dry fitting pass with 0.00 MiB buffers, then the real load), so
// only the last load block counts: from the last line holding "llama_model_loader: loaded meta
// data with" to the end of the log, the same block app/capacity's marker gate reads. A log
// without that line (a fragment) is one block from its first line, BlockLine 0, whose markers
// are not checked. runner/devlog scans it; runner/server uses that scanner (ScanEvidence).
type Evidence struct {
	Loads     int           `json:"loads"`      // load blocks seen (2 with the default fitting pass)
	BlockLine int           `json:"block_line"` // 1-based log line where the last block starts; 0: none
	Layers    []LayerDevice `json:"layers"`     // in log order; empty below -v
	Buffers   []Buffer      `json:"buffers"`
	Markers   []MarkerCheck `json:"markers"`
	// Omitted counts the lines of the block past MaxEvidenceEntries in each list (layers,
	// buffers, breakdown rows) and the devices past MaxEvidenceEntries in the whole log (a log
	// that floods them must not grow the scanner); 0, and absent from JSON, for a real log.
	Omitted int `json:"omitted,omitempty"`
	// Offloaded is the block's last "offloaded N/M layers to GPU" line (llama.cpp prints it
	// whenever the build has a GPU-capable backend, 0/M and on a CPU-only run too); nil: none.
	Offloaded *Offload `json:"offloaded,omitempty"`
	// Devices are the devices the whole log announces (backend init, device lists, "using
	// device" lines), one entry per device name in order of first mention; they are printed
	// before the load block, so they are not reset by it.
	Devices []LogDevice `json:"devices,omitempty"`
	// Breakdown is the block's last memory-breakdown table (common_memory_breakdown_print /
	// llama_memory_breakdown_print), one row per device or host buffer type. llama-server prints
	// it for the fitting pass (before the load block) and when it exits, so a live server's
	// evidence has none and a stopped one's has the table of the real load.
	Breakdown []BreakdownRow `json:"breakdown,omitempty"`
}

// Offload is "load_tensors: offloaded N/M layers to GPU" (llm_load_tensors: before 2025).
type Offload struct {
	Layers int `json:"layers"`
	Of     int `json:"of"`
	Line   int `json:"line"`
}

// LogDevice is one device a log names (Device is a line of --list-devices).
type LogDevice struct {
	// Name as llama.cpp names the device in buffer lines: CUDA0, ROCm0, Vulkan0, MTL0, HTP0,
	// RPC[host:port], CPU.
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"` // e.g. "NVIDIA GeForce RTX 4090"
	TotalMiB    float64 `json:"total_mib,omitempty"`   // when the log gives it
	FreeMiB     float64 `json:"free_mib,omitempty"`    // at the time of the line that gave it
	// Selected: a "using device NAME (…) - N MiB free" line, the model load took the device (not
	// proof that it holds anything: see DevicesUsed).
	Selected bool `json:"selected,omitempty"`
	Line     int  `json:"line"` // first line naming it
}

// BreakdownRow is one row of llama.cpp's memory breakdown table, e.g.
// "|   - Vulkan0 (llvmpipe …) |  2048 = 2048 + (   8 =     0 +       2 +       6) +          -8 |".
type BreakdownRow struct {
	Device      string `json:"device"`                // Vulkan0, CUDA1, MTL0, Host, CPU_REPACK, HTP0-REPACK …
	Description string `json:"description,omitempty"` // the parenthesised part: "llvmpipe (LLVM 15.0.6, 256 bits)"
	// MiB maps the table header's column names (total, free, self, model, context, compute,
	// unaccounted in the builds seen) to the row's figures; a host row has self, model,
	// context and compute only. nil when the row's figures did not fit the header.
	MiB  map[string]float64 `json:"mib"`
	Line int                `json:"line"`
}

// Self is the row's "self" figure (the memory this process holds there), or, without that
// column, model + context + compute.
func (r BreakdownRow) Self() (float64, bool) {
	if v, ok := r.MiB["self"]; ok {
		return v, true
	}
	sum, any := 0.0, false
	for _, c := range []string{"model", "context", "compute"} {
		if v, ok := r.MiB[c]; ok {
			sum, any = sum+v, true
		}
	}
	return sum, any
}

// OffloadedLayers is the block's "offloaded N/M layers to GPU"; ok is false when the log has
// no such line in the block.
func (e Evidence) OffloadedLayers() (n, of int, ok bool) {
	if e.Offloaded == nil {
		return 0, 0, false
	}
	return e.Offloaded.Layers, e.Offloaded.Of, true
}

// DeviceOf maps a buffer type or breakdown row name to the device holding it: host buffer
// types (CPU, CPU_Mapped, CPU_REPACK, CPU_KLEIDIAI, CUDA_Host, Vulkan_Host …, the breakdown's
// Host row) to "CPU"; MTL0_Mapped to MTL0; HTP0-REPACK to HTP0; a device name to itself.
func DeviceOf(name string) string {
	switch {
	case name == "Host" || strings.HasPrefix(name, "CPU") || strings.HasSuffix(name, "_Host"):
		return "CPU"
	}
	for _, suffix := range []string{"_Mapped", "-REPACK", "_REPACK"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && base != "" {
			return base
		}
	}
	return name
}

// DevicesUsed lists the devices (DeviceOf names: "CPU" for host memory) that hold memory in the
// last load block: a buffer line above 0 MiB, or a breakdown row whose self figure is above 0;
// in order of first appearance, buffers before breakdown rows. A device the log only announces
// or selects ("using device") is not in it.
func (e Evidence) DevicesUsed() []string {
	var out []string
	add := func(name string) {
		d := DeviceOf(name)
		if d == "" || slices.Contains(out, d) {
			return
		}
		out = append(out, d)
	}
	for _, b := range e.Buffers {
		if b.MiB > 0 {
			add(b.Device)
		}
	}
	for _, r := range e.Breakdown {
		if v, ok := r.Self(); ok && v > 0 {
			add(r.Device)
		}
	}
	return out
}

// PeakDeviceMiB is the memory a device (a DevicesUsed name: Vulkan0, CUDA1, CPU …) holds in the
// last load block: from the memory breakdown table when the block has one (the sum of the self
// figures of the rows DeviceOf maps to the device, e.g. Host and CPU_REPACK for "CPU"),
// otherwise the sum of the device's buffer lines (model, KV, compute, output). ok is false when
// neither names the device. The breakdown rounds to whole MiB and does not count a
// memory-mapped model (CPU_Mapped), the buffer lines do.
func (e Evidence) PeakDeviceMiB(device string) (mib float64, ok bool) {
	for _, r := range e.Breakdown {
		if DeviceOf(r.Device) != device {
			continue
		}
		if v, has := r.Self(); has {
			mib, ok = mib+v, true
		}
	}
	if ok {
		return mib, true
	}
	for _, b := range e.Buffers {
		if DeviceOf(b.Device) == device {
			mib, ok = mib+b.MiB, true
		}
	}
	return mib, ok
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
	// Launch: an attempt started under a launch wrapper (Argv stays llama-server's own
	// command line); absent otherwise, so an unwrapped attempt's JSON is unchanged.
	Launch *Launch `json:"launch,omitempty"`
	// Via: an attempt on a bench host, the local ssh command line that ran Argv there; absent
	// otherwise.
	Via []string `json:"via,omitempty"`
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
