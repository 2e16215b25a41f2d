package main

import (
	"context"
	"path/filepath"
	"reflect"
	"regexp"
	"sparkbench/runner/sharedtest"
	"strconv"
	"strings"
	"testing"

	"sparkbench/store"
)

// The llama-bench outputs other people published, in ../shared/wild (beside the checkout, read
// in place; SOURCES.md says where each came from). runner/benchfmt's TestWildBenchFiles checks
// the parsed values file by file; this test takes them through the real command: every file
// that holds results imports with its row count, every malformed one is refused with
// file:line and the reason, and the notebook is left as it was.

// wildImportRows is the number of llama-bench rows in each result-bearing file (bench-*, and
// the doc-bench-* report whose 6 llama-bench tables hold 10 rows each),
// counted in the files (rows of the md tables, INSERTs, csv records, json objects).
var wildImportRows = map[string]struct {
	format string
	rows   int
}{
	"bench-csv-cpu-openblas-s390x-b6321-ttft-fork.csv":                       {"csv", 2},
	"bench-csv-cuda-rtx3090ti-b1275-2023.csv":                                {"csv", 2},
	"bench-csv-cuda-rtx4080-b5163-2025.csv":                                  {"csv", 2},
	"bench-csv-cuda-rtx4080-pr12874-fork-split-pp-tg-b5099-2025.csv":         {"csv", 2},
	"bench-json-cpu-openblas-s390x-b6321-ttft-fork-trailingws.json":          {"json", 2},
	"bench-json-cpu-xeon-e5-2690v3-ik_llama-fork-b3599-CRLF-2025.json":       {"json", 2},
	"bench-json-cuda-rtx3090ti-b1275-2023.json":                              {"json", 2},
	"bench-json-cuda-rtx4080-b5163-2025.json":                                {"json", 2},
	"bench-jsonl-cpu-openblas-s390x-b6321-ttft-fork.jsonl":                   {"jsonl", 2},
	"bench-jsonl-cuda-rtx3090ti-b1275-README-handmade.jsonl":                 {"jsonl", 2},
	"bench-jsonl-cuda-rtx4080-b5163-2025.jsonl":                              {"jsonl", 2},
	"bench-jsonl-rocm-strixhalo-gfx1151-depth-sweep-b6865-2025.jsonl":        {"jsonl", 10},
	"bench-jsonl-rocm-strixhalo-gfx1151-stderr-mixed-b6865-2025.jsonl":       {"jsonl", 6},
	"bench-jsonl-rocm-strixhalo-ryzen-ai-max-prefill-curve-b9927-2026.jsonl": {"jsonl", 9},
	"bench-jsonl-rocm-vulkan-rpc-strixhalo-harness-concat-b6097-2025.jsonl":  {"jsonl", 370},
	"bench-md-cpu-arm-cix-cp8180-mib-b8664-2026.md":                          {"md", 4},
	"bench-md-cpu-arm-radxa-dragon-q8b-2026.md":                              {"md", 4},
	"bench-md-cpu-ik_llama-fork-modelcol-overflow-CRLF-2025.md":              {"md", 8},
	"bench-md-cpu-x86-i5-4278u-b10334-2026.md":                               {"md", 4},
	"bench-md-cuda-blas-multigpu-sm-row-layer-unknown-size-b4094-2024.md":    {"md", 4},
	"bench-md-cuda-first-version-pr2626-2023.md":                             {"md", 2},
	"bench-md-cuda-gb10-dgxspark-mmap-dio-depth-b7941-2026.md":               {"md", 10},
	"bench-md-cuda-gb10-nemotron-narrow-modelcol-b8268-2026.md":              {"md", 10},
	"bench-md-cuda-ik_llama-fork-type_k-type_v-2024.md":                      {"md", 2},
	"bench-md-cuda-prerelease-unaligned-pr2626-2023.md":                      {"md", 3},
	"bench-md-cuda-qwen2-depth-README-2025.md":                               {"md", 4},
	"bench-md-cuda-rtx3090ti-nkvo-b1786-2024.md":                             {"md", 4},
	"bench-md-cuda-rtx5070-win-powershell-b6457-2025.md":                     {"md", 2},
	"bench-md-metal-blas-macstudio-70b-mmap-b7315-2025.md":                   {"md", 4},
	"bench-md-metal-m2air-github-rendered-paste-2024.md":                     {"md", 6},
	"bench-md-metal-m2ultra-MTL-BLAS-depth-b7948-2026.md":                    {"md", 10},
	"bench-md-metal-m2ultra-threads-pr2917-2023.md":                          {"md", 6},
	"bench-md-qnn-fork-llama1b-2024.md":                                      {"md", 2},
	"bench-md-rocm-rpc-strixhalo-modelcol-overflow-b7085-2025.log":           {"md", 2},
	"bench-md-rocm-rpc-strixhalo-pg-b6092-2025.md":                           {"md", 3},
	"bench-md-rocm-strixhalo-gfx1151-vram-init-b9187-2026.log":               {"md", 2},
	"bench-md-sycl-arc-b70-gemma4-b8833-2026.md":                             {"md", 4},
	"bench-md-vulkan-2x-rx7900xtx-fa-sweep-wrapped-2025.txt":                 {"md", 12},
	"bench-md-vulkan-2x-rx7900xtx-wrapped-2025.txt":                          {"md", 6},
	"bench-md-vulkan-cuda-rtx5090-win-depth-sweep-r1-blockquoted-CRLF.md":    {"md", 45},
	"bench-md-vulkan-radv-strixhalo-depth32768-b9187-2026.log":               {"md", 2},
	"bench-md-vulkan-rx580-riscv-p550-pg-b4696-2025.md":                      {"md", 4},
	"doc-bench-cuda-gb10-dgxspark-full-report-b7941-2026.md":                 {"md", 60},
	"bench-sql-cpu-openblas-s390x-b6321-ttft-fork.sql":                       {"sql", 2},
	"bench-sql-cuda-rtx3090ti-b1275-2023.sql":                                {"sql", 2},
	"bench-sql-cuda-rtx4080-b5163-2025.sql":                                  {"sql", 2},
	"bench-sql-cuda-rtx4080-pr12874-fork-split-pp-tg-b5099-2025.sql":         {"sql", 2},
}

// wildImportBatched is the number of llama-batched-bench rows in each batched-bench-* file,
// counted in the files (table rows under | PP | TG | B | N_KV | …): they import as batched-bench
// rows, not llama-bench rows.
var wildImportBatched = map[string]int{
	"batched-bench-README-llama7b-q8-2023.txt":                  12,
	"batched-bench-cuda-gb10-dgxspark-gptoss20b-b7941-2026.txt": 18,
	"batched-bench-metal-m2ultra-gptoss20b-b7948-2026.txt":      18,
}

// wildImportRefused are the malformed bench-* files: the line and reason of the refusal.
var wildImportRefused = map[string]string{
	"bench-csv-cuda-rtx3090ti-b1275-README-edited-colmismatch.csv":          "2:1: csv: row has 27 fields, the header has 26",
	"bench-json-cuda-rtx4080-pr12874-fork-b5099-INVALID-missing-comma.json": `41:5: expected ',' or '}' after the value of "samples_prompt_ts", found '"'`,
	"bench-jsonl-cuda-rtx4080-pr12874-fork-b5099-INVALID.jsonl":             `1:1047: expected ',' or '}' after the value of "samples_prompt_ts", found '"'`,
	"bench-md-NEGATIVE-error-no-table-vulkan-rpc-2026.log":                  "1: not llama-bench output",
	"bench-md-vulkan-rpc-verbose-log-interleaved-FRAGMENT-2025.txt":         "4: a llama-bench table header with no result rows after it",
	"bench-sql-cuda-rtx3090ti-b1275-README-edited-colmismatch.sql":          "30: INSERT INTO test has 27 values for 26 columns",
}

// wildImportReportBatched is the number of llama-batched-bench rows beside the llama-bench
// tables of the doc-bench-* report (6 tables of 18 rows, counted in the file): they import
// with the report's llama-bench rows, into the same leg, each under its section's heading.
var wildImportReportBatched = map[string]int{"doc-bench-cuda-gb10-dgxspark-full-report-b7941-2026.md": 108}

// wildFolder is the shared reference folder (../shared/wild beside the checkout, or
// $SPARKBENCH_SHARED/wild): required under make test (sharedtest.Dir).
func wildFolder(t *testing.T) string {
	t.Helper()
	return sharedtest.Dir(t, "wild")
}

func TestWildImportEveryBenchFile(t *testing.T) {
	dir := wildFolder(t)
	files, _ := filepath.Glob(filepath.Join(dir, "bench-*"))
	docs, _ := filepath.Glob(filepath.Join(dir, "doc-bench-*")) // a report with llama-bench tables
	batched, _ := filepath.Glob(filepath.Join(dir, "batched-bench-*"))
	files = append(append(files, docs...), batched...)
	var good, bad, batchedGood []string
	for _, f := range files {
		base := filepath.Base(f)
		_, isGood := wildImportRows[base]
		_, isBad := wildImportRefused[base]
		_, isBatched := wildImportBatched[base]
		switch {
		case isGood:
			good = append(good, f)
		case isBad:
			bad = append(bad, f)
		case isBatched:
			batchedGood = append(batchedGood, f)
		default:
			t.Errorf("%s: a bench file this test does not know: say whether it imports", base)
		}
	}
	if len(good) != len(wildImportRows) || len(bad) != len(wildImportRefused) || len(batchedGood) != len(wildImportBatched) {
		t.Fatalf("found %d result-bearing, %d batched-bench and %d malformed files, want %d, %d and %d", len(good), len(batchedGood), len(bad),
			len(wildImportRows), len(wildImportBatched), len(wildImportRefused))
	}

	nb := filepath.Join(t.TempDir(), "notebook.db")
	code, out, errOut := runCLI(append(append([]string{"import", "--study", "wild", "--notebook", nb}, good...), batchedGood...)...)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	// "imported F: FORMAT, N rows (TESTS) as leg L of study "wild", sha256 …"
	line := regexp.MustCompile(`(?m)^imported (\S+): ([\w-]+), (\d+) rows? \(.*\) as leg (\d+) of study "wild", sha256 [0-9a-f]{64}$`)
	// A report with both kinds of tables: "imported F: md, N llama-bench rows (…) and M
	// llama-batched-bench rows (…) as leg L …".
	mixed := regexp.MustCompile(`(?m)^imported (\S+): (md), (\d+) llama-bench rows? \(.*\) and (\d+) llama-batched-bench rows? \((pp.*)\) as leg (\d+) of study "wild", sha256 [0-9a-f]{64}$`)
	got := map[string]bool{}
	legs := map[string]int64{}
	batchedLegs := map[string]int64{}
	total, batchedTotal := 0, 0
	for _, m := range mixed.FindAllStringSubmatch(out, -1) {
		base := filepath.Base(m[1])
		n, _ := strconv.Atoi(m[3])
		nb, _ := strconv.Atoi(m[4])
		got[base] = true
		if want := wildImportRows[base]; n != want.rows || nb != wildImportReportBatched[base] || nb == 0 {
			t.Errorf("%s: imported %d llama-bench and %d batched-bench rows, want %d and %d", base, n, nb, want.rows, wildImportReportBatched[base])
		}
		legs[base], _ = strconv.ParseInt(m[6], 10, 64)
		total += n
		batchedTotal += nb
	}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		base := filepath.Base(m[1])
		n, _ := strconv.Atoi(m[3])
		got[base] = true
		if want, ok := wildImportBatched[base]; ok {
			if m[2] != "batched-md" || n != want {
				t.Errorf("%s: imported as %s with %d rows, want batched-md with %d", base, m[2], n, want)
			}
			batchedLegs[base], _ = strconv.ParseInt(m[4], 10, 64)
			batchedTotal += n
			continue
		}
		want := wildImportRows[base]
		if m[2] != want.format || n != want.rows {
			t.Errorf("%s: imported as %s with %d rows, want %s with %d", base, m[2], n, want.format, want.rows)
		}
		legs[base], _ = strconv.ParseInt(m[4], 10, 64)
		total += n
	}
	for _, f := range append(append([]string{}, good...), batchedGood...) {
		if !got[filepath.Base(f)] {
			t.Errorf("%s: no import line in\n%s", filepath.Base(f), out)
		}
	}
	if strings.Contains(out, "skipped") {
		t.Errorf("a file was taken for a duplicate:\n%s", out)
	}

	// What the notebook holds: every row, and a few values read back from it.
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stored := 0
	for base, leg := range legs {
		rows, err := n.BenchRows(ctx, leg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != wildImportRows[base].rows {
			t.Errorf("%s: leg %d holds %d rows, want %d", base, leg, len(rows), wildImportRows[base].rows)
		}
		stored += len(rows)
	}
	spots := []struct {
		file    string
		row     int
		test    string
		ts      float64
		backend string
	}{
		{"bench-sql-cuda-rtx3090ti-b1275-2023.sql", 0, "pp512", 2407.240204, ""},
		{"bench-sql-cuda-rtx4080-pr12874-fork-split-pp-tg-b5099-2025.sql", 1, "tg128", 466.867210, "CUDA"},
		{"bench-md-vulkan-cuda-rtx5090-win-depth-sweep-r1-blockquoted-CRLF.md", 44, "pp1024 @ d15360", 8134.32, "CUDA"},
		{"bench-md-metal-m2air-github-rendered-paste-2024.md", 5, "tg512", 13.96, "Metal"},
		{"bench-md-cuda-prerelease-unaligned-pr2626-2023.md", 2, "pp512+tg128", 449.72, "CUDA"},
		{"doc-bench-cuda-gb10-dgxspark-full-report-b7941-2026.md", 59, "tg32 @ d32768", 32.65, "CUDA"},
		{"bench-jsonl-rocm-strixhalo-gfx1151-stderr-mixed-b6865-2025.jsonl", 5, "tg128 @ d4096", 142.840121, "ROCm"},
		{"bench-csv-cuda-rtx4080-pr12874-fork-split-pp-tg-b5099-2025.csv", 0, "pp512", 27527.987050, "CUDA"},
	}
	for _, s := range spots {
		rows, err := n.BenchRows(ctx, legs[s.file])
		if err != nil || len(rows) <= s.row {
			t.Errorf("%s: %d rows, %v", s.file, len(rows), err)
			continue
		}
		r := rows[s.row]
		if r.TestName() != s.test || r.AvgTs != s.ts || r.Backends != s.backend {
			t.Errorf("%s row %d in the notebook: %s, %v t/s, backend %q; want %s, %v, %q", s.file, s.row, r.TestName(), r.AvgTs, r.Backends, s.test, s.ts, s.backend)
		}
	}
	// The batched-bench files: every row, as batched-bench rows only, and a few values.
	batchedStored := 0
	for base, leg := range batchedLegs {
		rows, err := n.BatchedRows(ctx, leg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != wildImportBatched[base] {
			t.Errorf("%s: leg %d holds %d batched-bench rows, want %d", base, leg, len(rows), wildImportBatched[base])
		}
		if b, _ := n.BenchRows(ctx, leg); len(b) != 0 {
			t.Errorf("%s: leg %d holds %d llama-bench rows", base, leg, len(b))
		}
		batchedStored += len(rows)
	}
	batchedSpots := []struct {
		file         string
		row          int
		pp, tg, b    int64
		sTG, s, tPP  float64
		nKVMax, nThr int64 // 0: the file prints no settings line
	}{
		{"batched-bench-README-llama7b-q8-2023.txt", 3, 128, 128, 8, 139.43, 252.99, 0.751, 0, 0},
		{"batched-bench-cuda-gb10-dgxspark-gptoss20b-b7941-2026.txt", 17, 8192, 32, 32, 390.92, 4259.17, 59.169, 270336, 20},
		{"batched-bench-metal-m2ultra-gptoss20b-b7948-2026.txt", 6, 4096, 32, 1, 95.72, 2188.00, 1.552, 270336, 16},
	}
	for _, s := range batchedSpots {
		rows, err := n.BatchedRows(ctx, batchedLegs[s.file])
		if err != nil || len(rows) <= s.row {
			t.Errorf("%s: %d rows, %v", s.file, len(rows), err)
			continue
		}
		r := rows[s.row]
		var nKVMax, nThr int64
		if r.NKVMax != nil && r.NThreads != nil {
			nKVMax, nThr = *r.NKVMax, *r.NThreads
		}
		if r.PP != s.pp || r.TG != s.tg || r.B != s.b || r.STG != s.sTG || r.S != s.s || r.TPP != s.tPP || nKVMax != s.nKVMax || nThr != s.nThr ||
			r.LegState != "imported" {
			t.Errorf("%s row %d in the notebook: %+v (%s); want PP %d TG %d B %d S_TG %v S %v T_PP %v n_kv_max %d n_threads %d",
				s.file, s.row, r.BatchedResult, r.LegState, s.pp, s.tg, s.b, s.sTG, s.s, s.tPP, s.nKVMax, s.nThr)
		}
	}
	for base, want := range wildImportReportBatched {
		rows, err := n.BatchedRows(ctx, legs[base])
		if err != nil || len(rows) != want {
			t.Errorf("%s: leg %d holds %d batched-bench rows (%v), want %d", base, legs[base], len(rows), err, want)
			continue
		}
		if r := rows[17]; r.Extra["md_heading"] != "ggml-org/gpt-oss-20b-GGUF" || r.PP != 8192 || r.B != 32 || r.STG != 390.92 {
			t.Errorf("%s batched row 17: %+v %v", base, r.BatchedResult, r.Extra)
		}
		batchedStored += len(rows)
	}
	n.Close()
	if stored != total || total != 654 {
		t.Errorf("notebook holds %d rows, the import said %d, the files hold 654", stored, total)
	}
	if batchedStored != batchedTotal || batchedTotal != 48+108 {
		t.Errorf("notebook holds %d batched-bench rows, the import said %d, the files hold 48 (and the report 108)", batchedStored, batchedTotal)
	}

	// Every malformed file is refused with file:line: reason, alone and beside a good file,
	// and nothing is written.
	before := notebookCounts(t, nb)
	if before.Tables["legs"] != int64(len(good)+len(batchedGood)) || before.Tables["batched_samples"] != 48+108 {
		t.Errorf("%d legs and %d batched-bench rows after the import, want %d and 156", before.Tables["legs"], before.Tables["batched_samples"], len(good)+len(batchedGood))
	}
	for _, f := range bad {
		base := filepath.Base(f)
		for _, args := range [][]string{{f}, {good[0], f}} {
			code, out, errOut := runCLI(append([]string{"import", "--study", "wild2", "--notebook", nb}, args...)...)
			want := "sparkbench import: " + f + ":" + wildImportRefused[base]
			if code != 2 || out != "" || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "nothing was imported") ||
				strings.Count(errOut, "\n") != 1 {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and %q", base, code, out, errOut, want)
			}
		}
	}
	if after := notebookCounts(t, nb); !reflect.DeepEqual(before.Tables, after.Tables) || before.JournalHead != after.JournalHead {
		t.Errorf("refused imports changed the notebook: %v -> %v", before.Tables, after.Tables)
	}
}
