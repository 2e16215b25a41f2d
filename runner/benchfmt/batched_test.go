package benchfmt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func i64(v int64) *int64 { return &v }

// The outputs of the real tool (build 11669, tiny-llama-f16.gguf, -t 1 -npp 32 -ntg 8
// -npl 1,2,4 -c 512) in both formats: every row read, the settings line (md) or the settings
// on each row (jsonl) attached, and the values equal to the printed text.
func TestBatchedToolOutput(t *testing.T) {
	for _, c := range []struct {
		file   string
		format Format
	}{{"batched-md.stdout", FormatBatchedMD}, {"batched-jsonl.stdout", FormatBatchedJSONL}} {
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !IsBatchedOutput(data) {
			t.Errorf("%s: not recognised as llama-batched-bench output", c.file)
		}
		rows, format, err := ParseBatchedFile(c.file, data)
		if err != nil || format != c.format || len(rows) != 3 {
			t.Fatalf("%s: %d rows, format %s, %v", c.file, len(rows), format, err)
		}
		// the rows as printed, read back independently of the parser
		var printed [][]string
		for _, l := range strings.Split(string(data), "\n") {
			l = strings.TrimSpace(l)
			if c.format == FormatBatchedMD && strings.HasPrefix(l, "|") && !strings.Contains(l, "PP") && !strings.Contains(l, "---") {
				cells := strings.Split(strings.Trim(l, "|"), "|")
				for k := range cells {
					cells[k] = strings.TrimSpace(cells[k])
				}
				printed = append(printed, append([]string{""}, cells...))
			}
			if c.format == FormatBatchedJSONL && strings.HasPrefix(l, "{") {
				var m map[string]json.Number
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				printed = append(printed, []string{"", m["pp"].String(), m["tg"].String(), m["pl"].String(), m["n_kv"].String(),
					m["t_pp"].String(), m["speed_pp"].String(), m["t_tg"].String(), m["speed_tg"].String(), m["t"].String(), m["speed"].String()})
			}
		}
		if len(printed) != len(rows) {
			t.Fatalf("%s: %d printed rows, parsed %d", c.file, len(printed), len(rows))
		}
		for i, r := range rows {
			p := printed[i]
			got := []string{fmtI(r.PP), fmtI(r.TG), fmtI(r.B), fmtI(r.NKV)}
			for k, v := range got {
				if v != p[k+1] {
					t.Errorf("%s row %d column %d: %s, printed %s", c.file, i, k, v, p[k+1])
				}
			}
			for k, v := range []float64{r.TPP, r.SPP, r.TTG, r.STG, r.T, r.S} {
				if want := mustFloat(t, p[k+5]); v != want {
					t.Errorf("%s row %d column %d: %v, printed %v", c.file, i, k+4, v, want)
				}
			}
			if r.NThreads == nil || *r.NThreads != 1 || r.NKVMax == nil || r.FlashAttn == nil || r.NThreadsBatch == nil {
				t.Errorf("%s row %d: settings not attached: %+v", c.file, i, r.BatchedSettings)
			}
			if r.Line == 0 {
				t.Errorf("%s row %d: no source line", c.file, i)
			}
		}
		if rows[2].B != 4 || rows[2].NKV != 4*(32+8) {
			t.Errorf("%s: last row %+v, want B 4 and N_KV 160", c.file, rows[2])
		}
	}
}

func fmtI(v int64) string { b, _ := json.Marshal(v); return string(b) }

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// The published outputs (../shared/wild): the 2023 README table without a settings line, the
// 2026 GB10 and M2 Ultra runs with one, and the report whose 6 batched-bench tables sit beside
// llama-bench tables (ParseFile reads the latter, ParseBatchedFile the former).
func TestBatchedWildFiles(t *testing.T) {
	dir := wildDir(t)
	for _, c := range []struct {
		file      string
		rows      int
		settings  bool
		spot      int
		label     string
		stg, s    float64
		nkv       int64
		batchOnly bool
	}{
		{"batched-bench-README-llama7b-q8-2023.txt", 12, false, 5, "pp128+tg128 B32", 465.40, 670.96, 8192, true},
		{"batched-bench-cuda-gb10-dgxspark-gptoss20b-b7941-2026.txt", 18, true, 17, "pp8192+tg32 B32", 390.92, 4259.17, 263168, true},
		{"batched-bench-metal-m2ultra-gptoss20b-b7948-2026.txt", 18, true, 0, "pp512+tg32 B1", 130.45, 1181.81, 544, true},
		{"doc-bench-cuda-gb10-dgxspark-full-report-b7941-2026.md", 108, true, 107, "", 0, 0, 0, false},
	} {
		data, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := IsBatchedOutput(data); got != c.batchOnly {
			t.Errorf("%s: IsBatchedOutput %v, want %v", c.file, got, c.batchOnly)
		}
		rows, format, err := ParseBatchedFile(c.file, data)
		if err != nil || format != FormatBatchedMD || len(rows) != c.rows {
			t.Fatalf("%s: %d rows, %s, %v; want %d", c.file, len(rows), format, err, c.rows)
		}
		for _, r := range rows {
			if (r.NKVMax != nil) != c.settings {
				t.Errorf("%s line %d: settings %+v, want present=%v", c.file, r.Line, r.BatchedSettings, c.settings)
			}
		}
		r := rows[c.spot]
		if c.label != "" && (r.Label() != c.label || r.STG != c.stg || r.S != c.s || r.NKV != c.nkv) {
			t.Errorf("%s row %d: %s S_TG %v S %v N_KV %d; want %s %v %v %d", c.file, c.spot, r.Label(), r.STG, r.S, r.NKV, c.label, c.stg, c.s, c.nkv)
		}
		if c.settings && (*r.NKVMax != 270336 || *r.NUbatch != 2048 || *r.FlashAttn != 1 || r.IsTGSeparate == nil || *r.IsTGSeparate != 0) {
			t.Errorf("%s: settings %+v", c.file, r.BatchedSettings)
		}
	}
}

// Malformed input is refused at its line with what is wrong; nothing is returned.
func TestBatchedRefusals(t *testing.T) {
	header := "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n" +
		"|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n"
	row := "|   128 |    128 |    1 |    256 |    0.108 |  1186.64 |    3.079 |    41.57 |    3.187 |    80.32 |\n"
	good := `{"n_kv_max": 1024, "pp": 32, "tg": 8, "pl": 2, "n_kv": 80, "t_pp": 0.001687, "speed_pp": 37937.164062, "t_tg": 0.000637, "speed_tg": 25117.738281, "t": 0.002324, "speed": 34423.406250}`
	for _, c := range []struct{ name, data, want string }{
		{"cells.md", header + row + "|   128 |    128 |    2 |    512 |    0.198 |  1295.19 |    5.029 |    50.90 |    5.227 |\n", "f:4: llama-batched-bench row has 9 cells, the header has 10"},
		{"nkv.md", header + "|   128 |    128 |    2 |    500 |    0.198 |  1295.19 |    5.029 |    50.90 |    5.227 |    97.95 |\n", "f:3: N_KV 500 is neither B×(PP+TG) = 512 nor PP+B×TG = 384"},
		{"num.md", header + "|   128 |    128 |    1 |    256 |    0.108 |  abc |    3.079 |    41.57 |    3.187 |    80.32 |\n", `f:3: S_PP t/s "abc" is not a number`},
		{"b0.md", header + "|   128 |    128 |    0 |    0 |    0.108 |  1186.64 |    3.079 |    41.57 |    3.187 |    80.32 |\n", "f:3: B (parallel sequences) is 0"},
		{"neg.md", header + "|   128 |    128 |    1 |    256 |    -0.108 |  1186.64 |    3.079 |    41.57 |    3.187 |    80.32 |\n", "f:3: T_PP is -0.108"},
		{"zero.md", header + "|   128 |    128 |    1 |    256 |    0.108 |  1186.64 |    3.079 |    0.00 |    3.187 |    80.32 |\n", "f:3: S_TG is 0 with 128 tokens"},
		{"norows.md", "main: n_kv_max = 2048, n_batch = 2048\n\n" + header, "f:3: a llama-batched-bench table header with no rows"},
		{"nocol.md", "| PP | TG | B | N_KV | T_PP s |\n|---|---|---|---|---|\n| 1 | 1 | 1 | 2 | 0.1 |\n", `f:1: llama-batched-bench table without a "S_PP t/s" column`},
		{"none.txt", "hello\n", "f:1: no llama-batched-bench table"},
		{"json.jsonl", good + "\n" + `{"pp": 32, "tg": 8, "pl": 2, "n_kv": 80, "t_pp": 0.1 "speed_pp": 1}` + "\n", "f:2:"},
		{"field.jsonl", `{"pp": 32, "tg": 8, "pl": 2, "n_kv": 80}` + "\n", `f:1: no "t_pp": not a llama-batched-bench row`},
		{"int.jsonl", strings.Replace(good, `"pl": 2`, `"pl": 2.5`, 1) + "\n", `f:1: "pl": 2.5 is not an integer`},
		{"trail.jsonl", good + " x\n", "f:1:"},
	} {
		rows, _, err := ParseBatchedFile("f", []byte(c.data))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || rows != nil {
			t.Errorf("%s: %d rows, error %v; want %q", c.name, len(rows), err, c.want)
		}
	}
	// the 2023 settings line (mmq) keeps the unknown setting in Extra
	rows, _, err := ParseBatchedFile("f", []byte("main: n_kv_max = 16384, is_pp_shared = 0, n_gpu_layers = 99, mmq = 0, n_threads = 8, n_threads_batch = 8\n\n"+header+row))
	if err != nil || len(rows) != 1 || rows[0].Extra["mmq"] != "0" || *rows[0].NGPULayers != 99 || rows[0].NBatch != nil {
		t.Fatalf("2023 settings line: %+v %v", rows, err)
	}
}

// FuzzParseBatchedFile: never panics; every row it returns passes Check and carries its line;
// a file it accepts parses the same twice.
func FuzzParseBatchedFile(f *testing.F) {
	for _, n := range []string{"batched-md.stdout", "batched-jsonl.stdout"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("| PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |\n|--|--|--|--|--|--|--|--|--|--|\n| 1 | 1 | 2 | 3 | 0.1 | 10 | 0.1 | 20 | 0.2 | 15 |\n"))
	f.Add([]byte(`{"pp": 1, "tg": 1, "pl": 1, "n_kv": 2, "t_pp": 1e-3, "speed_pp": 1e3, "t_tg": 1, "speed_tg": 1, "t": 1, "speed": 2, "new": [1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, format, err := ParseBatchedFile("fuzz", data)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error of type %T", err)
			}
			if rows != nil {
				t.Fatal("rows beside an error")
			}
			return
		}
		if len(rows) == 0 {
			t.Fatal("no rows and no error")
		}
		for _, r := range rows {
			if cerr := r.Check(); cerr != nil || r.Line < 1 {
				t.Fatalf("row %+v at line %d: %v", r, r.Line, cerr)
			}
		}
		again, format2, err := ParseBatchedFile("fuzz", bytes.Clone(data))
		if err != nil || format2 != format || len(again) != len(rows) {
			t.Fatalf("second parse differs: %v", err)
		}
	})
}

// GenRate by hand: the 2023 README's B=8, TG=128 row took T = 8.095 s: 1024 generated tokens
// / 8.095 s = 126.4978 tok/s (its S column, N_KV / T, is 252.99); T = 0 has no rate.
func TestBatchedGenRate(t *testing.T) {
	r := BatchedResult{PP: 128, TG: 128, B: 8, NKV: 2048, T: 8.095, S: 252.99}
	if g := r.GenRate(); g < 126.49783 || g > 126.49784 {
		t.Errorf("GenRate %v, want 126.4978", g)
	}
	if g := (&BatchedResult{B: 1, TG: 1}).GenRate(); g != 0 {
		t.Errorf("GenRate with T = 0: %v", g)
	}
}

// TestParseBatchedTablesOfAReport: the batched-bench tables of a document that also holds
// llama-bench tables are read, each row under its section's heading (a fenced "# …" line is
// not one) and with its own section's settings line only; a bad row is refused at its line; a
// document without such a table gives nothing.
func TestParseBatchedTablesOfAReport(t *testing.T) {
	doc := strings.Join([]string{
		"## System info", // 1
		"```bash",
		"# not a heading",
		"```",
		"## org/model-a-GGUF", // 5
		"main: n_kv_max = 4096, n_batch = 2048, n_ubatch = 512, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = -1, n_threads = 8, n_threads_batch = 8",
		"",
		"|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |",
		"|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|",
		"|   512 |     32 |    1 |    544 |    0.270 |  1895.57 |    0.399 |    80.13 |    0.669 |   812.60 |", // 10
		"",
		"| model | size | params | backend | ngl | test | t/s |",
		"| --- | ---: | ---: | --- | --: | ---: | ---: |",
		"| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg32 | 83.43 ± 0.59 |",
		"",
		"## org/model-b-GGUF", // 16
		"|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |",
		"|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|",
		"|   512 |     32 |    2 |   1088 |    0.230 |  4451.23 |    0.583 |   109.71 |    0.813 |  1337.56 |", // 19
	}, "\n")
	rows, err := ParseBatchedTables("report.md", []byte(doc))
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	a, b := rows[0], rows[1]
	if a.Line != 10 || a.Extra["md_heading"] != "org/model-a-GGUF" || a.NKVMax == nil || *a.NKVMax != 4096 || a.STG != 80.13 {
		t.Errorf("first row %+v (%v)", a, a.Extra)
	}
	if b.Line != 19 || b.Extra["md_heading"] != "org/model-b-GGUF" || b.NKVMax != nil || b.B != 2 {
		t.Errorf("second row %+v (%v): its section has no settings line", b, b.Extra)
	}
	// The llama-bench rows are ParseFile's, which skips the batched tables.
	bench, format, err := ParseFile("report.md", []byte(doc))
	if err != nil || format != FormatMD || len(bench) != 1 {
		t.Errorf("llama-bench rows: %d %s %v", len(bench), format, err)
	}
	bad := strings.Replace(doc, "|   512 |     32 |    2 |   1088 |", "|   512 |     32 |    2 |   1089 |", 1)
	if _, err := ParseBatchedTables("report.md", []byte(bad)); err == nil || !strings.Contains(err.Error(), "report.md:19: N_KV 1089") {
		t.Errorf("a bad row: %v", err)
	}
	none := "| model | test | t/s |\n| --- | --- | --- |\n| m | tg32 | 83.43 ± 0.59 |\n"
	if rows, err := ParseBatchedTables("plain.md", []byte(none)); rows != nil || err != nil {
		t.Errorf("no batched table: %v %v", rows, err)
	}
}
