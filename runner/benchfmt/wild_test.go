package benchfmt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/sharedtest"
)

// The llama-bench outputs other people published (../shared/wild, described in its
// SOURCES.md; read in place, never copied here). Every file that holds results parses with the
// row count, tests and configuration read off the file by eye; every malformed one is refused
// at its line. The expectations below were taken from the files' text, not from this parser.

// wildDir is the shared folder beside the checkout (or $SPARKBENCH_SHARED/wild): required
// under make test (sharedtest.Dir).
func wildDir(t *testing.T) string {
	t.Helper()
	return sharedtest.Dir(t, "wild")
}

// wildSpot is one row's expected values: its test label, rate and some configuration fields.
type wildSpot struct {
	row  int // index; -1 is the last row
	test string
	ts   float64
	cfg  map[Field]any
}

type wildFile struct {
	format Format
	rows   int
	spots  []wildSpot
}

type cfg = map[Field]any

var wildResults = map[string]wildFile{
	// -o sql
	"bench-sql-cuda-rtx3090ti-b1275-2023.sql": {FormatSQL, 2, []wildSpot{
		{0, "pp512", 2407.240204, cfg{FModelType: "llama 7B mostly Q4_0", FNGPULayers: int64(99), FNThreads: int64(16), FBuildNumber: int64(1275)}},
		{-1, "tg128", 130.891159, cfg{FAvgNs: int64(977925003)}}}},
	"bench-sql-cuda-rtx4080-b5163-2025.sql": {FormatSQL, 2, []wildSpot{
		{0, "pp512", 7324.546977, cfg{FBackends: "CUDA", FModelType: "qwen2 7B Q4_K - Medium", FNUbatch: int64(512), FTypeK: "f16", FNDepth: int64(0)}},
		{-1, "tg128", 120.346696, cfg{FNThreads: int64(8), FFlashAttn: int64(0)}}}},
	"bench-sql-cpu-openblas-s390x-b6321-ttft-fork.sql": {FormatSQL, 2, []wildSpot{
		{0, "pp512", 80.927655, cfg{FBackends: "BLAS", FCPUInfo: "OpenBLAS, CPU", FGPUInfo: "", FNThreads: int64(8)}},
		{-1, "tg128", 22.694063, cfg{FModelType: "granite 3B IQ4_XS - 4.25 bpw"}}}},
	"bench-sql-cuda-rtx4080-pr12874-fork-split-pp-tg-b5099-2025.sql": {FormatSQL, 2, []wildSpot{
		{0, "pp512", 27611.175041, cfg{FStddevTs: 195.547424, FAvgNs: int64(18543960), FBackends: "CUDA"}},
		{-1, "tg128", 466.867210, cfg{FStddevTs: 4.680900, FAvgNs: int64(274190080)}}}},
	// -o csv
	"bench-csv-cuda-rtx3090ti-b1275-2023.csv": {FormatCSV, 2, []wildSpot{
		{0, "pp512", 2413.341687, cfg{FModelType: "llama 7B mostly Q4_0", FNGPULayers: int64(99), FNThreads: int64(16)}},
		{-1, "tg128", 132.052051, nil}}},
	"bench-csv-cuda-rtx4080-b5163-2025.csv": {FormatCSV, 2, []wildSpot{
		{0, "pp512", 7285.676949, cfg{FBackends: "CUDA", FNUbatch: int64(512), FFlashAttn: int64(0), FTypeV: "f16"}},
		{-1, "tg128", 119.915244, nil}}},
	"bench-csv-cpu-openblas-s390x-b6321-ttft-fork.csv": {FormatCSV, 2, []wildSpot{
		{0, "pp512", 81.102409, cfg{FCPUInfo: "OpenBLAS, CPU", FGPUInfo: "", FBackends: "BLAS"}},
		{-1, "tg128", 23.230240, nil}}},
	"bench-csv-cuda-rtx4080-pr12874-fork-split-pp-tg-b5099-2025.csv": {FormatCSV, 2, []wildSpot{
		{0, "pp512", 27527.987050, cfg{FAvgNs: int64(18599580), FCPUInfo: "AMD Ryzen 7 7800X3D 8-Core Processor           "}},
		{-1, "tg128", 467.926504, cfg{FAvgNs: int64(273595440), FStddevTs: 6.877051}}}},
	// -o json
	"bench-json-cuda-rtx3090ti-b1275-2023.json": {FormatJSON, 2, []wildSpot{
		{0, "pp512", 2410.974041, cfg{FNThreads: int64(16), FNGPULayers: int64(99)}},
		{-1, "tg128", 130.965708, nil}}},
	"bench-json-cuda-rtx4080-b5163-2025.json": {FormatJSON, 2, []wildSpot{
		{0, "pp512", 7100.002165, cfg{FBackends: "CUDA", FFlashAttn: int64(0), FNDepth: int64(0)}},
		{-1, "tg128", 118.881588, nil}}},
	"bench-json-cpu-openblas-s390x-b6321-ttft-fork-trailingws.json": {FormatJSON, 2, []wildSpot{
		{0, "pp512", 81.581735, cfg{FBackends: "BLAS", FNThreads: int64(8)}},
		{-1, "tg128", 22.801434, nil}}},
	"bench-json-cpu-xeon-e5-2690v3-ik_llama-fork-b3599-CRLF-2025.json": {FormatJSON, 2, []wildSpot{
		{0, "pp512", 8.204253, cfg{FModelType: "deepseek2 671B IQ4_K_R4 - 4.5 bpw", FNThreads: int64(48), FBuildNumber: int64(3599)}},
		{-1, "tg128", 2.967723, nil}}},
	// -o jsonl
	"bench-jsonl-cuda-rtx4080-b5163-2025.jsonl": {FormatJSONL, 2, []wildSpot{
		{0, "pp512", 7263.609157, cfg{FBackends: "CUDA"}}, {-1, "tg128", 119.844681, nil}}},
	"bench-jsonl-cuda-rtx3090ti-b1275-README-handmade.jsonl": {FormatJSONL, 2, []wildSpot{
		{0, "pp512", 2410.974041, cfg{FNThreads: int64(16)}}, {-1, "tg128", 130.965708, nil}}},
	"bench-jsonl-cpu-openblas-s390x-b6321-ttft-fork.jsonl": {FormatJSONL, 2, []wildSpot{
		{0, "pp512", 81.427806, cfg{FBackends: "BLAS"}}, {-1, "tg128", 23.288635, nil}}},
	"bench-jsonl-rocm-strixhalo-gfx1151-stderr-mixed-b6865-2025.jsonl": {FormatJSONL, 6, []wildSpot{
		{0, "pp512", 5007.643797, cfg{FBackends: "ROCm", FFlashAttn: int64(1)}},
		{-1, "tg128 @ d4096", 142.840121, cfg{FNDepth: int64(4096)}}}},
	"bench-jsonl-rocm-strixhalo-gfx1151-depth-sweep-b6865-2025.jsonl": {FormatJSONL, 10, []wildSpot{
		{0, "pp512", 4703.284998, cfg{FFlashAttn: int64(1), FNThreads: int64(16)}},
		{-1, "tg128 @ d65536", 64.616239, nil}}},
	"bench-jsonl-rocm-strixhalo-ryzen-ai-max-prefill-curve-b9927-2026.jsonl": {FormatJSONL, 9, []wildSpot{
		{0, "pp2048", 336.073121, cfg{FNUbatch: int64(256), FFlashAttn: int64(1), FModelType: "qwen35 27B Q8_0"}},
		{-1, "pp2048 @ d65536", 141.745136, nil}}},
	"bench-jsonl-rocm-vulkan-rpc-strixhalo-harness-concat-b6097-2025.jsonl": {FormatJSONL, 370, []wildSpot{
		{0, "pp1", 47.000315, cfg{FBackends: "ROCm", FBuildNumber: int64(6097)}},
		{-1, "pp512", 1020.932746, cfg{FBackends: "Vulkan,RPC", FBuildNumber: int64(6118)}}}},
	// -o md
	"bench-md-cpu-arm-cix-cp8180-mib-b8664-2026.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 194.05, cfg{FBackends: "CPU", FNThreads: int64(12), FModelSize: int64(667083080)}},
		{-1, "pp4096+tg128", 99.85, nil}}},
	"bench-md-cpu-arm-radxa-dragon-q8b-2026.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 194.49, cfg{FNThreads: int64(8)}}, {-1, "pp4096+tg128", 116.17, nil}}},
	"bench-md-cpu-ik_llama-fork-modelcol-overflow-CRLF-2025.md": {FormatMD, 8, []wildSpot{
		{0, "pp512", 8.29, cfg{FModelType: "deepseek2 671B IQ4_K_R4 - 4.5 bpw", FNThreads: int64(16), FFlashAttn: int64(1)}},
		{-1, "tg128", 2.61, cfg{FNThreads: int64(48)}}}},
	"bench-md-cpu-x86-i5-4278u-b10334-2026.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 17.70, cfg{FNThreads: int64(2), FBuildCommit: "936918514", FBuildNumber: int64(10334)}},
		{-1, "pp4096+tg128", 12.14, nil}}},
	"bench-md-cuda-blas-multigpu-sm-row-layer-unknown-size-b4094-2024.md": {FormatMD, 4, []wildSpot{
		{0, "pp3", 3.09, cfg{FModelType: "llama ?B IQ4_XS - 4.25 bpw", FBackends: "CUDA,BLAS", FSplitMode: "layer", FNBatch: int64(1024), FNUbatch: int64(1024)}},
		{-1, "tg3", 1.96, cfg{FSplitMode: "row", FFlashAttn: int64(1)}}}},
	"bench-md-cuda-first-version-pr2626-2023.md": {FormatMD, 2, []wildSpot{
		{0, "pp512", 2242.06, cfg{FModelType: "LLaMA 7B mostly Q4_0", FNGPULayers: int64(99), FBackends: "CUDA"}},
		{-1, "tg128", 43.09, nil}}},
	"bench-md-cuda-prerelease-unaligned-pr2626-2023.md": {FormatMD, 3, []wildSpot{
		{0, "pp512", 2153.50, cfg{FNGPULayers: int64(99), FStddevTs: 24.75}},
		{1, "tg128", 128.65, nil},
		{-1, "pp512+tg128", 449.72, nil}}},
	"bench-md-cuda-gb10-dgxspark-mmap-dio-depth-b7941-2026.md": {FormatMD, 10, []wildSpot{
		{0, "pp2048", 4505.82, cfg{FNUbatch: int64(2048), FFlashAttn: int64(1), FNGPULayers: int64(99), FBuildNumber: int64(7941)}},
		{-1, "tg32 @ d32768", 61.65, cfg{FNDepth: int64(32768)}}}},
	"bench-md-cuda-gb10-nemotron-narrow-modelcol-b8268-2026.md": {FormatMD, 10, []wildSpot{
		{0, "pp2048", 768.84, cfg{FModelType: "nemotron 120B.A12B Q4_K", FNUbatch: int64(2048)}},
		{-1, "tg32 @ d32768", 19.45, nil}}},
	"bench-md-cuda-ik_llama-fork-type_k-type_v-2024.md": {FormatMD, 2, []wildSpot{
		{0, "pp8192", 4777.42, cfg{FTypeK: "q5_1", FTypeV: "q5_0", FFlashAttn: int64(1)}},
		{-1, "pp8192", 4757.62, cfg{FTypeK: "q8_0", FTypeV: "iq4_nl"}}}},
	"bench-md-cuda-qwen2-depth-README-2025.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 7340.20, cfg{FBackends: "CUDA"}}, {-1, "tg128 @ d512", 116.71, cfg{FNDepth: int64(512)}}}},
	"bench-md-cuda-rtx3090ti-nkvo-b1786-2024.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 4035.47, cfg{FNoKVOffload: false, FBuildCommit: "32d9f7d9", FBuildNumber: int64(1786)}},
		{-1, "tg128", 59.99, cfg{FNoKVOffload: true}}}},
	"bench-md-cuda-rtx5070-win-powershell-b6457-2025.md": {FormatMD, 2, []wildSpot{
		{0, "pp512", 378.46, cfg{FModelType: "qwen3moe 30B.A3B Q3_K - Medium", FBuildNumber: int64(6457)}},
		{-1, "tg128", 11.09, nil}}},
	"bench-md-metal-blas-macstudio-70b-mmap-b7315-2025.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 162.30, cfg{FBackends: "Metal,BLAS", FNThreads: int64(24), FFlashAttn: int64(1)}},
		{-1, "pp4096+tg128", 119.34, nil}}},
	"bench-md-metal-m2air-github-rendered-paste-2024.md": {FormatMD, 6, []wildSpot{
		{0, "pp128", 144.47, cfg{FBackends: "Metal", FNGPULayers: int64(99), FModelType: "llama 7B Q4_0"}},
		{-1, "tg512", 13.96, cfg{FStddevTs: 1.62}}}},
	"bench-md-metal-m2ultra-MTL-BLAS-depth-b7948-2026.md": {FormatMD, 10, []wildSpot{
		{0, "pp2048", 2713.40, cfg{FBackends: "MTL,BLAS", FNThreads: int64(16), FNUbatch: int64(2048)}},
		{-1, "tg32 @ d32768", 98.25, nil}}},
	"bench-md-metal-m2ultra-threads-pr2917-2023.md": {FormatMD, 6, []wildSpot{
		{0, "pp512", 629.07, cfg{FModelType: "LLaMA 7B mostly Q8_0", FNGPULayers: int64(1), FNThreads: int64(4)}},
		{-1, "tg128", 83.63, cfg{FModelType: "LLaMA 7B mostly Q4_1"}}}},
	"bench-md-qnn-fork-llama1b-2024.md": {FormatMD, 2, []wildSpot{
		{0, "pp512", 18.46, cfg{FBackends: "QNN"}}, {-1, "tg128", 0.70, nil}}},
	"bench-md-rocm-rpc-strixhalo-modelcol-overflow-b7085-2025.log": {FormatMD, 2, []wildSpot{
		{0, "pp512", 36.22, cfg{FModelType: "glm4moe 355B.A32B Q4_K - Medium", FBackends: "ROCm,RPC", FBuildNumber: int64(7085)}},
		{-1, "tg128", 8.71, nil}}},
	"bench-md-rocm-rpc-strixhalo-pg-b6092-2025.md": {FormatMD, 3, []wildSpot{
		{0, "pp512", 573.52, cfg{FBackends: "ROCm,RPC", FFlashAttn: int64(1)}},
		{-1, "pp512+tg128", 244.87, cfg{FBuildCommit: "c81de6e1"}}}},
	"bench-md-rocm-strixhalo-gfx1151-vram-init-b9187-2026.log": {FormatMD, 2, []wildSpot{
		{0, "pp512", 422.28, cfg{FBackends: "ROCm", FBuildNumber: int64(9187)}}, {-1, "tg128", 23.17, nil}}},
	"bench-md-sycl-arc-b70-gemma4-b8833-2026.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 759.09, cfg{FBackends: "SYCL"}}, {-1, "tg512", 18.05, nil}}},
	"bench-md-vulkan-2x-rx7900xtx-fa-sweep-wrapped-2025.txt": {FormatMD, 12, []wildSpot{
		{0, "pp512", 490.97, cfg{FFlashAttn: int64(0), FNGPULayers: int64(100), FBuildCommit: "34ce48d97"}},
		{3, "tg128", 129.07, cfg{FFlashAttn: int64(1)}},
		{-1, "tg128", 105.24, cfg{FBuildNumber: int64(7356)}}}},
	"bench-md-vulkan-2x-rx7900xtx-wrapped-2025.txt": {FormatMD, 6, []wildSpot{
		{0, "pp512", 3229.07, cfg{FNBatch: int64(512), FBuildNumber: int64(7361)}}, {-1, "tg128", 129.80, nil}}},
	"bench-md-vulkan-cuda-rtx5090-win-depth-sweep-r1-blockquoted-CRLF.md": {FormatMD, 45, []wildSpot{
		{0, "pp1024 @ d1024", 10616.78, cfg{FBackends: "Vulkan", FStddevTs: 0.0, FNDepth: int64(1024)}},
		{15, "pp1024 @ d1024", 6484.20, nil},
		{-1, "pp1024 @ d15360", 8134.32, cfg{FBackends: "CUDA"}}}},
	"bench-md-vulkan-radv-strixhalo-depth32768-b9187-2026.log": {FormatMD, 2, []wildSpot{
		{0, "pp2048 @ d32768", 109.96, cfg{FBackends: "Vulkan"}}, {-1, "tg32 @ d32768", 7.96, nil}}},
	// a whole Markdown document: an nvidia-smi box (a decoy table), 6 llama-bench tables of 10
	// rows, 6 llama-batched-bench tables (not llama-bench rows: ParseFile leaves them to
	// ParseBatchedTables, and the import takes both; store's TestImportReportKeepsItsBatchedTables)
	"doc-bench-cuda-gb10-dgxspark-full-report-b7941-2026.md": {FormatMD, 60, []wildSpot{
		{0, "pp2048", 4505.82, cfg{FModelType: "gpt-oss 20B MXFP4 MoE", FNUbatch: int64(2048), FBuildCommit: "11fb327bf"}},
		{-1, "tg32 @ d32768", 32.65, cfg{FModelType: "deepseek2 30B.A3B Q8_0", FBackends: "CUDA", FBuildNumber: int64(7941)}}}},
	"bench-md-vulkan-rx580-riscv-p550-pg-b4696-2025.md": {FormatMD, 4, []wildSpot{
		{0, "pp512", 346.76, cfg{FBackends: "Vulkan", FBuildCommit: "e598697d", FBuildNumber: int64(4696)}},
		{-1, "pp4096+tg128", 182.59, nil}}},
}

// wildRefused are the malformed files: the line and a piece of the reason.
var wildRefused = map[string]struct {
	line int
	msg  string
}{
	"bench-sql-cuda-rtx3090ti-b1275-README-edited-colmismatch.sql":          {30, "27 values for 26 columns"},
	"bench-csv-cuda-rtx3090ti-b1275-README-edited-colmismatch.csv":          {2, "row has 27 fields, the header has 26"},
	"bench-json-cuda-rtx4080-pr12874-fork-b5099-INVALID-missing-comma.json": {41, `after the value of "samples_prompt_ts"`},
	"bench-jsonl-cuda-rtx4080-pr12874-fork-b5099-INVALID.jsonl":             {1, `after the value of "samples_prompt_ts"`},
	"bench-md-NEGATIVE-error-no-table-vulkan-rpc-2026.log":                  {1, "not llama-bench output"},
	"bench-md-vulkan-rpc-verbose-log-interleaved-FRAGMENT-2025.txt":         {4, "no result rows"},
	// llama-batched-bench output: not llama-bench results, refused as what it is
	"batched-bench-README-llama7b-q8-2023.txt":                  {1, "a llama-batched-bench table"},
	"batched-bench-cuda-gb10-dgxspark-gptoss20b-b7941-2026.txt": {3, "a llama-batched-bench table"},
	"batched-bench-metal-m2ultra-gptoss20b-b7948-2026.txt":      {3, "a llama-batched-bench table"},
}

// wildBenchFiles lists the llama-bench files of the wild folder (bench-*, doc-bench-*) and the
// llama-batched-bench ones (batched-bench-*).
func wildBenchFiles(t *testing.T) []string {
	dir := wildDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "bench-*"))
	docs, _ := filepath.Glob(filepath.Join(dir, "doc-bench-*"))
	batched, _ := filepath.Glob(filepath.Join(dir, "batched-bench-*"))
	files = append(append(files, docs...), batched...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no bench-* files: %v", err)
	}
	return files
}

func TestWildBenchFiles(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range wildBenchFiles(t) {
		base := filepath.Base(path)
		seen[base] = true
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows, format, err := ParseFile(base, data)
		if err == nil {
			for i := range rows {
				if cerr := rows[i].Check(); cerr != nil {
					err = &ParseError{File: base, Line: rows[i].Line, Msg: cerr.Error()}
					break
				}
			}
		}
		if bad, ok := wildRefused[base]; ok {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != bad.line || !strings.Contains(pe.Msg, bad.msg) ||
				!strings.HasPrefix(err.Error(), base+":") {
				t.Errorf("%s: %v (%d rows); want refused at line %d with %q", base, err, len(rows), bad.line, bad.msg)
			}
			continue
		}
		want, ok := wildResults[base]
		if !ok {
			t.Errorf("%s: a bench file this test does not know (%s, %d rows, %v): add its expectations", base, format, len(rows), err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", base, err)
			continue
		}
		if format != want.format || len(rows) != want.rows {
			t.Errorf("%s: %s with %d rows, want %s with %d", base, format, len(rows), want.format, want.rows)
			continue
		}
		for _, s := range want.spots {
			i := s.row
			if i < 0 {
				i = len(rows) - 1
			}
			r := &rows[i]
			if r.TestName() != s.test || r.AvgTs != s.ts {
				t.Errorf("%s row %d (line %d): %s at %v t/s, want %s at %v", base, i, r.Line, r.TestName(), r.AvgTs, s.test, s.ts)
			}
			for f, v := range s.cfg {
				if got, known := r.Value(f); !known || got != v {
					t.Errorf("%s row %d: %s = %#v (known %v), want %#v", base, i, f, got, known, v)
				}
			}
		}
	}
	for name := range wildResults {
		if !seen[name] {
			t.Errorf("%s: expected in the wild folder, not there", name)
		}
	}
	for name := range wildRefused {
		if !seen[name] {
			t.Errorf("%s: expected in the wild folder, not there", name)
		}
	}
}
