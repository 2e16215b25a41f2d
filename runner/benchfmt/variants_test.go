package benchfmt

import (
	"errors"
	"strings"
	"testing"
)

// The variants of llama-bench output people publish (see ../shared/wild/SOURCES.md), each in a
// small hand-made file: what ParseFile reads and what it refuses.

func parseOK(t *testing.T, name, data string, want Format, rows int) []Result {
	t.Helper()
	got, format, err := ParseFile(name, []byte(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if format != want || len(got) != rows {
		t.Fatalf("%s: %s with %d rows, want %s with %d", name, format, len(got), want, rows)
	}
	for i := range got {
		if err := got[i].Check(); err != nil {
			t.Fatalf("%s row %d: %v", name, i, err)
		}
	}
	return got
}

func parseRefused(t *testing.T, name, data string, line int, msg string) {
	t.Helper()
	rows, _, err := ParseFile(name, []byte(data))
	if err == nil {
		for i := range rows {
			if err = rows[i].Check(); err != nil {
				err = &ParseError{File: name, Line: rows[i].Line, Msg: err.Error()}
				break
			}
		}
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: accepted (%d rows) or not a ParseError: %v", name, len(rows), err)
	}
	if pe.Line != line || !strings.Contains(pe.Msg, msg) {
		t.Fatalf("%s: %v; want line %d and %q", name, err, line, msg)
	}
}

const sqlCreateOld = "CREATE TABLE IF NOT EXISTS test (\n  build_commit TEXT,\n  model_type TEXT,\n  n_threads INTEGER,\n  f16_kv INTEGER,\n  n_prompt INTEGER,\n  n_gen INTEGER,\n  avg_ns INTEGER,\n  avg_ts REAL,\n  stddev_ts REAL\n);\n\n"

func TestSQLDump(t *testing.T) {
	ins := "INSERT INTO test (build_commit, model_type, n_threads, f16_kv, n_prompt, n_gen, avg_ns, avg_ts, stddev_ts) VALUES "
	data := sqlCreateOld +
		ins + "('3469684', 'llama 7B mostly Q4_0', '16', '1', '512', '0', '212693772', '2407.240204', '8.409634');\n" +
		ins + "('3469684', 'it''s 7B', '16', '1', '0', '128', '977925003', '130.891159', NULL);\n"
	rows := parseOK(t, "old.sql", data, FormatSQL, 2)
	r := rows[0]
	if r.Line != 13 || r.BuildCommit != "3469684" || r.NThreads != 16 || r.NPrompt != 512 || r.AvgTs != 2407.240204 || r.StddevTs != 8.409634 || r.AvgNs != 212693772 {
		t.Fatalf("row 0: %+v", r)
	}
	if string(r.Extra["f16_kv"]) != `"1"` {
		t.Fatalf("unknown column f16_kv: %s", r.Extra["f16_kv"])
	}
	if rows[1].ModelType != "it's 7B" || rows[1].Known.Has(FStddevTs) || rows[1].TestName() != "tg128" {
		t.Fatalf("row 1: %+v", rows[1])
	}

	// The newer table name, a log line before it, and no CREATE TABLE at all.
	newer := "llama_model_loader: loaded meta data\n" + strings.ReplaceAll(data, "test", "llama_bench")
	parseOK(t, "new.sql", newer, FormatSQL, 2)
	parseOK(t, "inserts.sql", ins+"('a', 'm', '4', '0', '0', '32', '1', '5.5', '0.1');\n", FormatSQL, 1)

	parseRefused(t, "count.sql", sqlCreateOld+ins+"('a', 'm', '4', '0', '0', '32', '1', '5.5');\n", 13, "8 values for 9 columns")
	parseRefused(t, "column.sql", sqlCreateOld+strings.Replace(ins, "f16_kv", "opencl", 1)+"('a', 'm', '4', '0', '0', '32', '1', '5.5', '0.1');\n", 13, "names column opencl")
	parseRefused(t, "table.sql", sqlCreateOld+strings.Replace(ins, "test", "other", 1)+"('a', 'm', '4', '0', '0', '32', '1', '5.5', '0.1');\n", 13, "creates no table other")
	parseRefused(t, "semi.sql", sqlCreateOld+ins+"('a', 'm', '4', '0', '0', '32', '1', '5.5', '0.1')\n"+ins+"('a');\n", 14, "expected ';'")
	parseRefused(t, "unclosed.sql", sqlCreateOld+ins+"('a, 'm');\n", 13, "expected ('value', …)")
	parseRefused(t, "type.sql", sqlCreateOld+ins+"('a', 'm', 'four', '0', '0', '32', '1', '5.5', '0.1');\n", 13, "n_threads")
	parseRefused(t, "drop.sql", sqlCreateOld+"DROP TABLE test;\n", 13, "expected CREATE TABLE or INSERT INTO")
}

const mdWild = "| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"

func TestMDBlockquoted(t *testing.T) {
	data := "> C:\\bench>llama-bench -m x.gguf\r\n> ggml_vulkan: Found 1 Vulkan devices:\r\n" +
		"> " + strings.ReplaceAll(mdWild, "\n", "\r\n> ") +
		"| llama 8B Q4_0 | 5.61 GiB | 8.03 B | Vulkan | 99 | pp1024 @ d1024 | 10616.78 ± 0.00 |\r\n> \r\n>> build: abc123 (7000)\r\n"
	rows := parseOK(t, "quoted.md", data, FormatMD, 1)
	if r := rows[0]; r.NDepth != 1024 || r.NPrompt != 1024 || r.AvgTs != 10616.78 || r.Backends != "Vulkan" || r.BuildNumber != 7000 || r.Line != 5 {
		t.Fatalf("%+v", r)
	}
}

func TestMDWithoutOuterPipes(t *testing.T) {
	data := "Results:\n\nmodel | size | params | backend | ngl | test | t/s\n-- | -- | -- | -- | -- | -- | --\n" +
		"llama 7B Q4_0 | 3.83 GiB | 7.24 B | Metal | 99 | pp 128 | 144.47 ± 0.22\n" +
		"llama 7B Q4_0 | 3.83 GiB | 7.24 B | Metal | 99 | tg 128 | 20.06 ± 0.66\n\nbuild: 3bdc4cd0 (2144)\n"
	rows := parseOK(t, "rendered.md", data, FormatMD, 2)
	if r := rows[1]; r.TestName() != "tg128" || r.AvgTs != 20.06 || r.NGPULayers != 99 || r.BuildCommit != "3bdc4cd0" || r.Line != 6 {
		t.Fatalf("%+v", r)
	}
	// Sniffed as md without the extension's help.
	parseOK(t, "rendered.txt", data, FormatMD, 2)
	// A log line with pipes is not a table.
	parseRefused(t, "log.txt", "ggml_vulkan: 0 = GPU | uma: 0 | fp16: 1\n", 1, "not llama-bench output")
}

func TestMDPromptGenColumns(t *testing.T) {
	data := "| model | backend | n_gpu_layers | n_prompt | n_gen | t/s |\n| ----- | ------- | ------------ | -------- | ----- | --- |\n" +
		"| LLaMA 7B mostly Q4_0 | CUDA | 99 | 512 | 0 | 2153.50 ± 24.75 |\n" +
		"| LLaMA 7B mostly Q4_0 | CUDA | 99 | 512 | 128 | 449.72 ± 1.27 |\n"
	rows := parseOK(t, "prerelease.md", data, FormatMD, 2)
	if rows[0].TestName() != "pp512" || rows[1].TestName() != "pp512+tg128" || rows[1].AvgTs != 449.72 || rows[1].NGPULayers != 99 {
		t.Fatalf("%+v", rows)
	}
	// Only one of the two is not enough.
	parseRefused(t, "half.md", "| model | n_prompt | t/s |\n| - | - | - |\n| m | 512 | 1.0 |\n", 1, "no test column")
}

func TestMDLogLinesBetweenRows(t *testing.T) {
	data := "ggml_vulkan: Found 1 Vulkan devices:\n" + mdWild +
		"llama_model_load_from_file_impl: using device RPC[10.0.2.233:50052] - 108000 MiB free\n" +
		"load_tensors: offloading 126 repeating layers to GPU\n" +
		"| llama 405B Q4_K - Medium | 226.37 GiB | 405.85 B | Vulkan,RPC | 150 | pp512 | 12.00 ± 0.10 |\n" +
		"llama_context: n_ctx = 640\n" +
		"| llama 405B Q4_K - Medium | 226.37 GiB | 405.85 B | Vulkan,RPC | 150 | tg128 | 1.50 ± 0.01 |\n" +
		"\nbuild: 1a2b3c4d (6100)\n"
	rows := parseOK(t, "verbose.txt", data, FormatMD, 2)
	if rows[0].Line != 6 || rows[1].Line != 8 || rows[1].Backends != "Vulkan,RPC" || rows[1].BuildNumber != 6100 {
		t.Fatalf("%+v", rows)
	}
	// Two tables with log lines between them stay two tables (different columns).
	two := mdWild + "| m | 1 MiB | 1 M | CPU | 0 | pp8 | 9.0 ± 0.1 |\nllama_perf: done\n" +
		"| model | backend | threads | test | t/s |\n| - | - | - | - | - |\n| m | CPU | 4 | tg8 | 3.0 ± 0.1 |\n"
	rows = parseOK(t, "two.md", two, FormatMD, 2)
	if rows[1].NThreads != 4 || rows[1].TestName() != "tg8" {
		t.Fatalf("%+v", rows[1])
	}
	// The output ends after the header: refused at the header's line.
	parseRefused(t, "fragment.txt", "$ llama-bench -v\n"+mdWild+"llama_model_load: loading\n", 2, "no result rows")
}

func TestMDBuildLineBeforeTable(t *testing.T) {
	data := "ggml_vulkan: Found 1 Vulkan devices:\nbuild: e598697d (4696)\n\n" + mdWild +
		"| llama 3B Q4_K - Medium | 1.87 GiB | 3.21 B | Vulkan | 99 | pp4096+tg128 | 182.59 ± 2.66 |\n"
	rows := parseOK(t, "before.md", data, FormatMD, 1)
	if r := rows[0]; r.BuildCommit != "e598697d" || r.BuildNumber != 4696 || r.Kind() != KindPG {
		t.Fatalf("%+v", r)
	}
	// A footer that belongs to the table before is not taken twice.
	two := mdWild + "| m | 1 MiB | 1 M | CPU | 0 | pp8 | 9.0 ± 0.1 |\n\nbuild: aaa (1)\n" + mdWild + "| m | 1 MiB | 1 M | CPU | 0 | tg8 | 3.0 ± 0.1 |\n"
	rows = parseOK(t, "two.md", two, FormatMD, 2)
	if rows[0].BuildCommit != "aaa" || rows[1].Known.Has(FBuildCommit) {
		t.Fatalf("%+v", rows)
	}
}

func TestCSVSplitPromptGenRates(t *testing.T) {
	data := "model_type,n_prompt,n_gen,avg_prompt_ns,stddev_prompt_ns,avg_prompt_ts,stddev_prompt_ts,avg_gen_ns,stddev_gen_ns,avg_gen_ts,stddev_gen_ts\n" +
		`"llama 1B","512","0","18599580","87220","27527.987050","128.945972","60","54","0.000000","0.000000"` + "\n" +
		`"llama 1B","0","128","0","0","0.000000","0.000000","273595440","4100226","467.926504","6.877051"` + "\n"
	rows := parseOK(t, "split.csv", data, FormatCSV, 2)
	if r := rows[0]; r.AvgTs != 27527.987050 || r.StddevTs != 128.945972 || r.AvgNs != 18599580 || r.StddevNs != 87220 {
		t.Fatalf("pp: %+v", r)
	}
	if r := rows[1]; r.AvgTs != 467.926504 || r.AvgNs != 273595440 || string(r.Extra["avg_gen_ts"]) != `"467.926504"` {
		t.Fatalf("tg: %+v", r)
	}
	// A pp+tg row has no single rate in that schema.
	parseRefused(t, "pg.csv", strings.Replace(data, `"0","128"`, `"512","128"`, 1), 3, "no avg_ts")
	// A row longer than the header says how much longer.
	parseRefused(t, "wide.csv", data+`"x","1","0","1","1","1","1","1","1","1","1","extra"`+"\n", 4, "row has 12 fields, the header has 11")
}

func TestJSONLDeviceLines(t *testing.T) {
	good := string(firstLine(readTestdata(t, "bench-jsonl.stdout")))
	data := "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: Radeon 8060S Graphics, gfx1151 (0x1151), VMM: no, Wave Size: 32\n" + good + "\n"
	rows := parseOK(t, "stderr.jsonl", data, FormatJSONL, 1)
	if rows[0].Line != 3 {
		t.Fatalf("line %d", rows[0].Line)
	}
	parseRefused(t, "device.jsonl", good+"\nDevice zero: x\n", 2, "expected a jsonl result object")
}

func TestBatchedBenchRefusedAsSuch(t *testing.T) {
	data := "main: n_kv_max = 270336, n_batch = 2048, n_ubatch = 2048\n\n" +
		"|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n" +
		"|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n" +
		"|   512 |     32 |    1 |    544 |    0.270 |  1895.57 |    0.399 |    80.13 |    0.669 |   812.60 |\n"
	parseRefused(t, "batched.txt", data, 3, "a llama-batched-bench table")
	// Beside a llama-bench table it is skipped, as any other table.
	parseOK(t, "report.md", data+"\n"+mdWild+"| m | 1 MiB | 1 M | CUDA | 99 | pp8 | 9.0 ± 0.1 |\n", FormatMD, 1)
}
