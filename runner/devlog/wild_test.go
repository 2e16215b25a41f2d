package devlog

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sparkbench/runner/sharedtest"
	"strconv"
	"strings"
	"testing"

	"sparkbench/runner/vocab"
)

// wildFolder is ../shared/wild beside the checkout: real logs other people published, read in
// place (never copied into the repository).
func wildFolder(t *testing.T) string {
	t.Helper()
	return sharedtest.Dir(t, "wild")
}

// samplesFolder is ../shared/llama-samples: this machine's llama.cpp output, verbatim.
func samplesFolder(t *testing.T) string {
	t.Helper()
	return sharedtest.Dir(t, "llama-samples")
}

func scanFile(t *testing.T, path string) Log {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ScanText(b, nil)
}

// logCase is what one real log must yield; a zero field is not checked, except that devices,
// buffers (count), breakdown rows and timings are compared in full when given.
type logCase struct {
	file      string
	loads     int
	offloaded string            // "N/M"; "-" for none
	devices   []vocab.LogDevice // in full
	buffers   int               // count
	buffer    vocab.Buffer      // one of them, exactly
	used      []string          // DevicesUsed, exactly
	peak      map[string]float64
	breakdown []vocab.BreakdownRow // in full
	timings   []Timing             // in full
}

func (c logCase) check(t *testing.T, l Log) {
	t.Helper()
	ev := l.Evidence
	if ev.Loads != c.loads {
		t.Errorf("loads %d, want %d", ev.Loads, c.loads)
	}
	n, of, ok := ev.OffloadedLayers()
	switch {
	case c.offloaded == "-" && ok:
		t.Errorf("offloaded %d/%d, want none", n, of)
	case c.offloaded != "-" && c.offloaded != "" && (!ok || c.offloaded != strconv.Itoa(n)+"/"+strconv.Itoa(of)):
		t.Errorf("offloaded %d/%d (%v), want %s", n, of, ok, c.offloaded)
	}
	if !reflect.DeepEqual(ev.Devices, c.devices) {
		t.Errorf("devices\n got %+v\nwant %+v", ev.Devices, c.devices)
	}
	if len(ev.Buffers) != c.buffers {
		t.Errorf("%d buffers, want %d: %+v", len(ev.Buffers), c.buffers, ev.Buffers)
	}
	if c.buffer != (vocab.Buffer{}) && !slices.Contains(ev.Buffers, c.buffer) {
		t.Errorf("no buffer %+v in %+v", c.buffer, ev.Buffers)
	}
	if got := ev.DevicesUsed(); !slices.Equal(got, c.used) {
		t.Errorf("devices used %q, want %q", got, c.used)
	}
	for dev, want := range c.peak {
		if got, ok := ev.PeakDeviceMiB(dev); !ok || !near(got, want) {
			t.Errorf("peak %s = %v (%v), want %v", dev, got, ok, want)
		}
	}
	if len(c.breakdown) > 0 || len(ev.Breakdown) > 0 {
		if !reflect.DeepEqual(ev.Breakdown, c.breakdown) {
			t.Errorf("breakdown\n got %+v\nwant %+v", ev.Breakdown, c.breakdown)
		}
	}
	if len(c.timings) > 0 || len(l.Timings) > 0 {
		if !reflect.DeepEqual(l.Timings, c.timings) {
			t.Errorf("timings\n got %+v\nwant %+v", l.Timings, c.timings)
		}
	}
	if ev.Omitted != 0 || l.TimingsOmitted != 0 {
		t.Errorf("omitted %d / %d in a real log", ev.Omitted, l.TimingsOmitted)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

func mib(kv ...any) map[string]float64 {
	m := map[string]float64{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = float64(kv[i+1].(int))
	}
	return m
}

// The figures below were read off each file by eye; SOURCES.md there says where each log
// comes from and which llama.cpp generation printed it.
var wildCases = []logCase{
	{file: "cli-log-cuda-2gpu-rtx4090-rtx5090-ot-b5622.log", loads: 1, offloaded: "49/49",
		devices: []vocab.LogDevice{
			{Name: "CUDA0", Description: "NVIDIA GeForce RTX 4090", FreeMiB: 9862, Selected: true, Line: 18},
			{Name: "CUDA1", Description: "NVIDIA GeForce RTX 5090", FreeMiB: 31518, Selected: true, Line: 19}},
		buffers: 9, buffer: vocab.Buffer{Kind: vocab.BufferKV, Device: "CUDA1", MiB: 1152, Line: 152},
		used: []string{"CPU", "CUDA0", "CUDA1"},
		// -ot keeps the experts on the CPU: CUDA1 holds 648.66 model + 1152 KV + 1080 compute.
		peak: map[string]float64{"CUDA1": 648.66 + 1152 + 1080, "CPU": 17447.91 + 0.58 + 36.01},
		timings: []Timing{{Source: "llama_perf", Line: 186, PromptTokens: 14, PromptMS: 149.75, PromptTPS: 93.49,
			GenTokens: 189, GenMS: 4173.56, GenTPS: 45.29, TotalMS: 4409.74, TotalTokens: 203}}},
	{file: "log-completion-hexagon-htp0-snapdragon-elided.log", offloaded: "17/17",
		devices: []vocab.LogDevice{{Name: "HTP0", Description: "Hexagon", Line: 5}},
		buffers: 3, buffer: vocab.Buffer{Kind: vocab.BufferModel, Device: "HTP0-REPACK", MiB: 504, Line: 12},
		used: []string{"CPU", "HTP0"},
		// The table: HTP0 self 0, HTP0-REPACK self 504 (both HTP0), Host 439.
		peak: map[string]float64{"HTP0": 504, "CPU": 439},
		breakdown: []vocab.BreakdownRow{
			{Device: "HTP0", Description: "Hexagon", Line: 23, MiB: mib("total", 2048, "free", 2048, "self", 0, "model", 0, "context", 0, "compute", 0, "unaccounted", 0)},
			{Device: "Host", Line: 24, MiB: mib("self", 439, "model", 225, "context", 136, "compute", 77)},
			{Device: "HTP0-REPACK", Line: 25, MiB: mib("self", 504, "model", 504, "context", 0, "compute", 0)}},
		timings: []Timing{{Source: "llama_perf", Line: 18, PromptTokens: 11, PromptMS: 80.76, PromptTPS: 136.21,
			GenTokens: 475, GenMS: 9210.59, GenTPS: 51.57, TotalMS: 9454.92, TotalTokens: 486}}},
	{file: "log-cuda-llm_load_tensors-old-naming-FRAGMENT-2024.log", offloaded: "33/33",
		buffers: 3, buffer: vocab.Buffer{Kind: vocab.BufferModel, Device: "CUDA0", MiB: 4155.99, Line: 14},
		used: []string{"CPU", "CUDA0"}, peak: map[string]float64{"CUDA0": 4155.99 + 1024}},
	{file: "log-cuda-load_tensors-CPU_Mapped-unicode-tokens-FRAGMENT-2025.log", offloaded: "49/49",
		buffers: 2, buffer: vocab.Buffer{Kind: vocab.BufferModel, Device: "CPU_Mapped", MiB: 417.66, Line: 13},
		used: []string{"CUDA0", "CPU"}, peak: map[string]float64{"CUDA0": 8148.38}},
	{file: "server-log-cpu-win-msvc-b5273-qwen3-30b.log", loads: 1, offloaded: "0/49",
		buffers: 4, buffer: vocab.Buffer{Kind: vocab.BufferCompute, Device: "CPU", MiB: 300.75, Line: 137},
		used: []string{"CPU"}, peak: map[string]float64{"CPU": 20713.44 + 0.58 + 384 + 300.75},
		timings: []Timing{{Source: "plain", Line: 264, PromptTokens: 20, PromptMS: 713.89, PromptTPS: 28.02,
			GenTokens: 48, GenMS: 3163.91, GenTPS: 15.17, TotalMS: 3877.80, TotalTokens: 68}}},
	{file: "server-log-cpu-win-ik_llama-fork-INFO-print_timings-b3667-2025.log", loads: 1, offloaded: "-",
		buffers: 4, buffer: vocab.Buffer{Kind: vocab.BufferOutput, Device: "CPU", MiB: 1.16, Line: 113},
		used: []string{"CPU"}, peak: map[string]float64{"CPU": 20713.44 + 384 + 1.16 + 304.75}},
	{file: "server-log-fragment-cuda-4gpu-mainline-load_tensors-CRLF-2025.log", offloaded: "62/62",
		buffers: 5, buffer: vocab.Buffer{Kind: vocab.BufferModel, Device: "CUDA3", MiB: 42786.36, Line: 6},
		used: []string{"CUDA0", "CUDA1", "CUDA2", "CUDA3", "CPU"}, peak: map[string]float64{"CUDA2": 21610.08}},
	{file: "server-log-metal-m2pro-MTL0-FRAGMENT-2026.log", offloaded: "66/66",
		devices: []vocab.LogDevice{{Name: "MTL0", Description: "Apple M2 Pro", Line: 23}},
		buffers: 2, buffer: vocab.Buffer{Kind: vocab.BufferModel, Device: "MTL0_Mapped", MiB: 14803.73, Line: 8},
		used: []string{"CPU", "MTL0"}, peak: map[string]float64{"MTL0": 14803.73}},
	{file: "server-log-INFO-print_timings-mainline-2024-FRAGMENT.log", offloaded: "-",
		timings: []Timing{{Source: "info_log", Line: 2, Task: "0", PromptTokens: 12, PromptMS: 15.62, PromptTPS: 768.49,
			GenTokens: 783, GenMS: 3194.22, GenTPS: 245.13, TotalMS: 3209.84}}},
	// Starts with the end of one generation and ends with the start of the next.
	{file: "server-log-oldjson-format-print_timings-macos-FRAGMENT-2024.log", offloaded: "-",
		timings: []Timing{{Source: "json_log", Line: 1, Task: "48", TotalMS: 1525.05},
			{Source: "json_log", Line: 6, Task: "50", PromptTokens: 406, PromptMS: 1327.23, PromptTPS: 305.90}}},
	{file: "server-timings-cuda-rtx3060-print_timing-3line-2025.log", offloaded: "-",
		timings: []Timing{{Source: "plain", Line: 1, PromptTokens: 971, PromptMS: 8734.21, PromptTPS: 111.17,
			GenTokens: 19, GenMS: 1075.76, GenTPS: 17.66, TotalMS: 9809.97, TotalTokens: 990}}},
	{file: "server-timings-textgen-webui-llamacpp-3line-2025.log", offloaded: "-",
		timings: []Timing{{Source: "plain", Line: 1, PromptTokens: 11, PromptMS: 992.40, PromptTPS: 11.08,
			GenTokens: 25, GenMS: 8627.28, GenTPS: 2.90, TotalMS: 9619.68, TotalTokens: 36}}},
	{file: "server-completion-timings-json-with-ellipsis-pr15827-2025.txt", offloaded: "-",
		timings: []Timing{{Source: "timings_json", Line: 6, CacheTokens: 236, PromptTokens: 1, PromptMS: 30.958,
			PromptTPS: 32.301828283480845, GenTokens: 35, GenMS: 661.064, GenTPS: 52.94494935437416}}},
	{file: "server-sse-chat-completions-stream-final-timings-mainline-b5517-2025.txt", offloaded: "-",
		timings: []Timing{{Source: "timings_json", Line: 14, PromptTokens: 13, PromptMS: 239.618,
			PromptTPS: 54.25301938919447, GenTokens: 50, GenMS: 680.938, GenTPS: 73.42812414639806}}},
	{file: "bench-md-vulkan-rpc-verbose-log-interleaved-FRAGMENT-2025.txt", offloaded: "-",
		devices: []vocab.LogDevice{
			{Name: "Vulkan0", Description: "Radeon 8060S Graphics (RADV GFX1151) (radv)", Line: 3},
			{Name: "RPC[10.0.2.233:50052]", Description: "RPC[10.0.2.233:50052]", FreeMiB: 108000, Selected: true, Line: 6},
			{Name: "RPC[10.0.2.209:50052]", Description: "RPC[10.0.2.209:50052]", FreeMiB: 108000, Selected: true, Line: 7},
			{Name: "RPC[10.0.2.242:50052]", Description: "RPC[10.0.2.242:50052]", FreeMiB: 108000, Selected: true, Line: 8},
			{Name: "RPC[10.0.2.223:50052]", Description: "RPC[10.0.2.223:50052]", FreeMiB: 108000, Selected: true, Line: 9}}},
	{file: "bench-md-rocm-strixhalo-gfx1151-vram-init-b9187-2026.log", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "ROCm0", Description: "AMD Radeon 8060S Graphics", TotalMiB: 126976, Line: 2}}},
	{file: "bench-jsonl-rocm-strixhalo-gfx1151-stderr-mixed-b6865-2025.jsonl", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "ROCm0", Description: "Radeon 8060S Graphics", Line: 4}}},
	{file: "bench-md-rocm-rpc-strixhalo-modelcol-overflow-b7085-2025.log", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "ROCm0", Description: "AMD Radeon Graphics", Line: 4}}},
	{file: "bench-md-rocm-rpc-strixhalo-pg-b6092-2025.md", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "ROCm0", Description: "Radeon 8060S Graphics", Line: 5}}},
	{file: "bench-md-cuda-rtx5070-win-powershell-b6457-2025.md", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "CUDA0", Description: "NVIDIA GeForce RTX 5070", Line: 5}}},
	// Two runs pasted one after the other: a one-GPU run, then a two-GPU run.
	{file: "bench-md-vulkan-2x-rx7900xtx-wrapped-2025.txt", offloaded: "-",
		devices: []vocab.LogDevice{
			{Name: "Vulkan0", Description: "AMD Radeon RX 7900 XTX (RADV NAVI31) (radv)", Line: 37},
			{Name: "Vulkan1", Description: "AMD Radeon RX 7900 XTX (RADV NAVI31) (radv)", Line: 58}}},
	{file: "bench-md-vulkan-2x-rx7900xtx-fa-sweep-wrapped-2025.txt", offloaded: "-",
		devices: []vocab.LogDevice{
			{Name: "Vulkan0", Description: "AMD Radeon RX 7900 XTX (RADV NAVI31) (radv)", Line: 31},
			{Name: "Vulkan1", Description: "AMD Radeon RX 7900 XTX (RADV NAVI31) (radv)", Line: 56}}},
	// Blockquoted and CRLF: a Vulkan run and a CUDA run of the same card.
	{file: "bench-md-vulkan-cuda-rtx5090-win-depth-sweep-r1-blockquoted-CRLF.md", offloaded: "-",
		devices: []vocab.LogDevice{
			{Name: "Vulkan0", Description: "NVIDIA GeForce RTX 5090 (NVIDIA)", Line: 3},
			{Name: "CUDA0", Description: "NVIDIA GeForce RTX 5090", Line: 47}}},
	{file: "bench-md-vulkan-radv-strixhalo-depth32768-b9187-2026.log", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "Vulkan0", Description: "AMD Radeon 8060S Graphics (RADV GFX1151) (radv)", Line: 2}}},
	{file: "bench-md-vulkan-rx580-riscv-p550-pg-b4696-2025.md", offloaded: "-",
		devices: []vocab.LogDevice{{Name: "Vulkan0", Description: "AMD Radeon RX 580 Series (RADV POLARIS10) (radv)", Line: 3}}},
	// "  Device 0: NVIDIA GeForce RTX 3090 Ti" without the "found 1 CUDA devices" line above it
	// (cut by the poster): which backend numbers it is unknown, so no device.
	{file: "bench-md-cuda-rtx3090ti-nkvo-b1786-2024.md", offloaded: "-"},
}

func TestWildLogs(t *testing.T) {
	dir := wildFolder(t)
	for _, c := range wildCases {
		t.Run(c.file, func(t *testing.T) {
			c.check(t, scanFile(t, filepath.Join(dir, c.file)))
		})
	}
}

// Every published file holding a device, buffer, offload, breakdown or timing line is in the
// table above: a new one added to the folder fails here until its figures are checked.
func TestWildLogsAllCovered(t *testing.T) {
	dir := wildFolder(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	probes := []string{"ggml_cuda_init", "Device 0:", "ggml_vulkan", "ggml_metal_init", "using device", "ggml-hex",
		"offloaded", "buffer size", "memory_breakdown", "eval time", `"timings"`, "device_info"}
	covered := map[string]bool{}
	for _, c := range wildCases {
		covered[c.file] = true
	}
	n := 0
	for _, f := range files {
		name := filepath.Base(f)
		if name == "SOURCES.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probes {
			if strings.Contains(string(b), p) {
				n++
				if !covered[name] {
					t.Errorf("%s holds %q but is not in wildCases", name, p)
				}
				break
			}
		}
	}
	if n != len(wildCases) {
		t.Errorf("%d files hold device or timing lines, wildCases has %d", n, len(wildCases))
	}
}

// This machine's build, verbatim (../shared/llama-samples/README.md).
func TestSamples(t *testing.T) {
	dir := samplesFolder(t)
	cases := []logCase{
		// -v: the fitting pass (a dry load), then the real load at line 349; four requests,
		// the streamed final chunk of one of them logged at -v; the table printed at exit.
		{file: "server-v.stderr.log", loads: 2, offloaded: "-",
			devices: []vocab.LogDevice{{Name: "CPU", Description: "AMD EPYC", TotalMiB: 24105, FreeMiB: 24105, Line: 21}},
			buffers: 4, buffer: vocab.Buffer{Kind: vocab.BufferKV, Device: "CPU", MiB: 0.5, Line: 525},
			used: []string{"CPU"}, peak: map[string]float64{"CPU": 3},
			breakdown: []vocab.BreakdownRow{{Device: "Host", Line: 2042, MiB: mib("self", 3, "model", 0, "context", 0, "compute", 2)}},
			timings: []Timing{
				{Source: "print_timing", Line: 1049, Task: "0", PromptTokens: 9, PromptMS: 2.41, PromptTPS: 3728.25, GenTokens: 16, GenMS: 5.08, GenTPS: 2955.08, TotalMS: 7.49, TotalTokens: 25},
				{Source: "print_timing", Line: 1449, Task: "17", PromptTokens: 9, PromptMS: 1.02, PromptTPS: 8832.19, GenTokens: 16, GenMS: 6.20, GenTPS: 2420.53, TotalMS: 7.22, TotalTokens: 25},
				{Source: "timings_json", Line: 1465, PromptTokens: 9, PromptMS: 1.019, PromptTPS: 8832.188420019627, GenTokens: 16, GenMS: 6.197, GenTPS: 2420.5260609972565},
				{Source: "print_timing", Line: 1772, Task: "34", PromptTokens: 9, PromptMS: 2.08, PromptTPS: 4326.92, GenTokens: 16, GenMS: 4.36, GenTPS: 3439.58, TotalMS: 6.44, TotalTokens: 25},
				{Source: "print_timing", Line: 1993, Task: "51", PromptTokens: 56, PromptMS: 3.06, PromptTPS: 18330.61, GenTokens: 8, GenMS: 1.76, GenTPS: 3966.01, TotalMS: 4.82, TotalTokens: 64}}},
		// The default level logs none of it.
		{file: "server-default.stderr.log", offloaded: "-"},
		// --log-jsonl: the table as a record, at the fitting pass and at exit.
		{file: "server-log-jsonl.stdout.log", offloaded: "-", used: []string{"CPU"}, peak: map[string]float64{"CPU": 8},
			breakdown: []vocab.BreakdownRow{{Device: "Host", Line: 11, MiB: mib("self", 8, "model", 0, "context", 2, "compute", 6)}}},
		// llama-bench -v: one load, a pp and a tg context; llama_perf with "inf tokens per second".
		{file: "bench-verbose-md.stderr", loads: 1, offloaded: "-",
			buffers: 7, buffer: vocab.Buffer{Kind: vocab.BufferCompute, Device: "CPU", MiB: 0.15, Line: 494},
			used: []string{"CPU"}, peak: map[string]float64{"CPU": 0.63 + 0.12 + 0.3 + 0.12 + 0.15},
			timings: []Timing{
				{Source: "llama_perf", Line: 335, PromptTokens: 192, GenTokens: 1, TotalMS: 11.41, TotalTokens: 193},
				{Source: "llama_perf", Line: 502, PromptTokens: 1, GenTokens: 65, TotalMS: 21.41, TotalTokens: 66}}},
		{file: "server-completion.http", offloaded: "-",
			timings: []Timing{{Source: "timings_json", Line: 8, PromptTokens: 9, PromptMS: 2.414, PromptTPS: 3728.251864125932, GenTokens: 16, GenMS: 5.076, GenTPS: 2955.0827423167852}}},
		{file: "server-completion-stream.sse.http", offloaded: "-",
			timings: []Timing{{Source: "timings_json", Line: 41, PromptTokens: 9, PromptMS: 1.019, PromptTPS: 8832.188420019627, GenTokens: 16, GenMS: 6.197, GenTPS: 2420.5260609972565}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			l := scanFile(t, filepath.Join(dir, c.file))
			c.check(t, l)
		})
	}
	// The log's print_timing and the response's timings are the same generation.
	l := scanFile(t, filepath.Join(dir, "server-v.stderr.log"))
	if a, b := l.Timings[1], l.Timings[2]; a.GenTokens != b.GenTokens || a.GenTPS != roundTo(b.GenTPS, 2) {
		t.Errorf("log %+v vs response %+v", a, b)
	}
}

func roundTo(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
