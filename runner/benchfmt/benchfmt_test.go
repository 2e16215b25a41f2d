package benchfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sparkbench/runner/sharedtest"
	"strconv"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func firstLine(b []byte) []byte {
	l, _ := nextLine(b)
	return l
}

func TestParseJSONLLineEveryField(t *testing.T) {
	r, err := ParseJSONLLine(firstLine(readTestdata(t, "bench-jsonl.stdout")))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{
		BuildCommit: "Debian", BuildNumber: 11669, CPUInfo: "AMD EPYC", GPUInfo: "", Backends: "CPU",
		ModelFilename: "/srv/models/tiny.gguf", ModelType: "llama ?B (guessed) all F32",
		ModelSize: 658176, ModelNParams: 164544, NBatch: 2048, NUbatch: 512, NThreads: 2,
		CPUMask: "0x0", CPUStrict: false, Poll: 50, TypeK: "f16", TypeV: "f16", NGPULayers: -1,
		NCPUMoE: 0, SplitMode: "layer", MainGPU: 0, NoKVOffload: false, FlashAttn: -1,
		Devices: "auto", TensorSplit: "0.00", TensorBuftOverrides: "none", LoadMode: "auto",
		LazyMode: "auto", Embeddings: false, NoOpOffload: 0, NoHost: false, Repack: true,
		FitTarget: 0, FitMinCtx: 0, NPrompt: 64, NGen: 0, NDepth: 0,
		TestTime: "2026-12-02T12:18:28Z", AvgNs: 221974437, StddevNs: 2176546,
		AvgTs: 288.335347, StddevTs: 2.827108,
		SamplesNs: []int64{220435459, 223513416}, SamplesTs: []float64{290.334, 286.336},
		Known: AllFields,
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got  %+v\nwant %+v", r, want)
	}
	if !r.Complete() || len(r.Missing()) != 0 {
		t.Fatalf("complete=%v missing=%v", r.Complete(), r.Missing())
	}
	if r.Kind() != KindPP || r.TestName() != "pp64" {
		t.Fatalf("kind %q test %q", r.Kind(), r.TestName())
	}
}

// TestJSONLMatchesEncodingJSON checks every row of every jsonl sample against encoding/json.
func TestJSONLMatchesEncodingJSON(t *testing.T) {
	for _, name := range []string{"bench-jsonl.stdout", "bench-depth-jsonl.stdout", "bench-progress-jsonl.stdout", "tput-t2.stdout"} {
		data := readTestdata(t, name)
		rows, format, err := ParseFile(name, data)
		if err != nil || format != FormatJSONL {
			t.Fatalf("%s: format %q err %v", name, format, err)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(rows) != len(lines) {
			t.Fatalf("%s: %d rows for %d lines", name, len(rows), len(lines))
		}
		for i, line := range lines {
			compareWithEncodingJSON(t, line, &rows[i])
		}
	}
}

func compareWithEncodingJSON(t *testing.T, line []byte, r *Result) {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	for f := Field(0); f < NumFields; f++ {
		jv, ok := m[f.Name()]
		if !ok || jv == nil {
			if r.Known.Has(f) {
				t.Errorf("%s: known but absent", f)
			}
			continue
		}
		if !r.Known.Has(f) {
			t.Errorf("%s: present but not known", f)
			continue
		}
		got, _ := r.Value(f)
		if !sameValue(got, jv) {
			t.Errorf("%s: got %#v, encoding/json %#v", f, got, jv)
		}
		delete(m, f.Name())
	}
	for k, v := range m {
		raw, ok := r.Extra[k]
		if !ok {
			t.Errorf("extra %q lost", k)
			continue
		}
		var ev any
		_ = json.Unmarshal(raw, &ev)
		ej, _ := json.Marshal(ev)
		vj, _ := json.Marshal(v)
		if string(ej) != string(vj) {
			t.Errorf("extra %q: %s vs %s", k, ej, vj)
		}
	}
}

func sameValue(got, jv any) bool {
	switch g := got.(type) {
	case string:
		s, ok := jv.(string)
		return ok && s == g
	case int64:
		switch x := jv.(type) {
		case json.Number:
			f, err := x.Float64()
			return err == nil && f == float64(g)
		case bool:
			return (g == 1) == x
		}
	case bool:
		switch x := jv.(type) {
		case bool:
			return x == g
		case json.Number:
			return (x.String() == "1") == g
		}
	case float64:
		if n, ok := jv.(json.Number); ok {
			f, err := n.Float64()
			return err == nil && f == g
		}
	case []int64:
		l, ok := jv.([]any)
		if !ok || len(l) != len(g) {
			return false
		}
		for i := range l {
			if !sameValue(g[i], l[i]) {
				return false
			}
		}
		return true
	case []float64:
		l, ok := jv.([]any)
		if !ok || len(l) != len(g) {
			return false
		}
		for i := range l {
			if !sameValue(g[i], l[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func TestParseFileFormats(t *testing.T) {
	cases := []struct {
		file   string
		format Format
		tests  []string
		full   bool // every known field present
	}{
		{"bench-jsonl.stdout", FormatJSONL, []string{"pp64", "tg32"}, true},
		{"bench-json.stdout", FormatJSON, []string{"pp64", "tg32"}, true},
		{"bench-csv.stdout", FormatCSV, []string{"pp64", "tg32"}, false},
		{"bench-md.stdout", FormatMD, []string{"pp64", "tg32"}, false},
		{"bench-depth-jsonl.stdout", FormatJSONL, []string{"pp64", "tg32", "pp64 @ d128", "tg32 @ d128"}, true},
		{"bench-depth-md.stdout", FormatMD, []string{"pp64", "tg32", "pp64 @ d128", "tg32 @ d128"}, false},
		{"bench-oe-md-jsonl.stderr", FormatJSONL, []string{"pp64", "tg32"}, true},
		{"bench-md-under-pty.raw", FormatMD, []string{"pp64", "tg32"}, false},
		{"bench-verbose-md.stdout", FormatMD, []string{"pp64", "tg32"}, false},
		{"tput-md-t1-vs-t2.txt", FormatMD, []string{"pp64", "pp512", "tg32", "tg128", "pp64", "pp512", "tg32", "tg128", "pp64", "pp512", "tg32", "tg128"}, false},
		{"seed-style-llama-bench.md", FormatMD, []string{"pp512", "tg128", "pp512 @ d8192", "tg128 @ d8192", "pp512", "tg128", "pp512 @ d8192", "tg128 @ d8192"}, false},
		{"seed-style-hand.md", FormatMD, []string{"pp512", "tg128", "pp512 @ d8192", "tg128 @ d8192", "pp512", "tg128", "pp512 @ d8192", "tg128 @ d8192", "pp512", "tg128", "tg128 @ d8192", "pp512", "pp512 @ d8192"}, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			rows, format, err := ParseFile(c.file, readTestdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if format != c.format {
				t.Fatalf("format %q, want %q", format, c.format)
			}
			var tests []string
			for _, r := range rows {
				tests = append(tests, r.TestName())
				if r.Complete() != c.full {
					t.Errorf("line %d: complete=%v, want %v (missing %v)", r.Line, r.Complete(), c.full, r.Missing())
				}
				if r.Line <= 0 {
					t.Errorf("row without line: %+v", r)
				}
				if !r.Known.Has(FAvgTs) || !r.Known.Has(FNPrompt) || !r.Known.Has(FNGen) || !r.Known.Has(FNDepth) {
					t.Errorf("line %d: rate or test unknown", r.Line)
				}
			}
			if strings.Join(tests, ",") != strings.Join(c.tests, ",") {
				t.Fatalf("tests %q, want %q", tests, c.tests)
			}
		})
	}
}

// TestMDEqualsJSONLSameRun: `-o md -oe jsonl` printed the same run twice; the md import must
// equal the jsonl values to the md table's two decimals.
func TestMDEqualsJSONLSameRun(t *testing.T) {
	md, _, err := ParseFile("bench-oe-md-jsonl.stdout", readTestdata(t, "bench-oe-md-jsonl.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	jl, _, err := ParseFile("bench-oe-md-jsonl.stderr", readTestdata(t, "bench-oe-md-jsonl.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	if len(md) != len(jl) || len(md) != 2 {
		t.Fatalf("md %d rows, jsonl %d", len(md), len(jl))
	}
	for i := range md {
		m, j := md[i], jl[i]
		if m.TestName() != j.TestName() || m.ModelType != j.ModelType || m.Backends != j.Backends ||
			m.NThreads != j.NThreads || m.BuildCommit != j.BuildCommit || m.BuildNumber != j.BuildNumber {
			t.Errorf("row %d: md %+v\njsonl %+v", i, m, j)
		}
		if math.Abs(m.AvgTs-j.AvgTs) > 0.005 || math.Abs(m.StddevTs-j.StddevTs) > 0.005 {
			t.Errorf("row %d: md %.2f ± %.2f, jsonl %f ± %f", i, m.AvgTs, m.StddevTs, j.AvgTs, j.StddevTs)
		}
		if math.Abs(float64(m.ModelSize-j.ModelSize)) > 0.005*(1<<20) || math.Abs(float64(m.ModelNParams-j.ModelNParams)) > 0.005e6 {
			t.Errorf("row %d: size %d/%d params %d/%d", i, m.ModelSize, j.ModelSize, m.ModelNParams, j.ModelNParams)
		}
		for _, f := range []Field{FAvgNs, FSamplesTs, FModelFilename, FTestTime} {
			if m.Known.Has(f) {
				t.Errorf("md row claims to know %s", f)
			}
		}
	}
}

// TestCSVAndJSONAgreeWithJSONL: the three machine formats of one build carry the same
// configuration fields with the same values.
func TestCSVAndJSONAgreeWithJSONL(t *testing.T) {
	jl, _, err := ParseFile("j", readTestdata(t, "bench-jsonl.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bench-json.stdout", "bench-csv.stdout"} {
		rows, _, err := ParseFile(name, readTestdata(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			for f := Field(0); f < FTestTime; f++ {
				a, _ := r.Value(f)
				b, _ := jl[i].Value(f)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s row %d %s: %#v vs jsonl %#v", name, i, f, a, b)
				}
			}
			if r.AvgTs <= 0 || r.AvgNs <= 0 || !r.Known.Has(FStddevNs) {
				t.Errorf("%s row %d: measurements missing: %+v", name, i, r)
			}
		}
	}
	csvRows, _, _ := ParseFile("c", readTestdata(t, "bench-csv.stdout"))
	if got := csvRows[0].Missing(); !reflect.DeepEqual(got, []Field{FSamplesNs, FSamplesTs}) {
		t.Errorf("csv missing %v, want samples_ns and samples_ts", got)
	}
	if csvRows[0].AvgTs != 35972.635981 || csvRows[1].StddevNs != 8610552 || !csvRows[0].Repack || csvRows[0].FlashAttn != -1 {
		t.Errorf("csv values: %+v", csvRows[0])
	}
}

func TestSeedStyleTables(t *testing.T) {
	rows, _, err := ParseFile("seed-style-llama-bench.md", readTestdata(t, "seed-style-llama-bench.md"))
	if err != nil {
		t.Fatal(err)
	}
	r := rows[2]
	if r.TestName() != "pp512 @ d8192" || r.AvgTs != 561.10 || r.StddevTs != 6.78 || r.NDepth != 8192 || r.NPrompt != 512 {
		t.Fatalf("row 3: %+v", r)
	}
	if r.ModelType != "qwen3moe 30B.A3B Q4_K - Medium" || r.Backends != "Vulkan" || r.NGPULayers != 99 || r.FlashAttn != 1 {
		t.Fatalf("row 3 config: %+v", r)
	}
	if r.BuildCommit != "067de937" || r.BuildNumber != 6817 || !r.Known.Has(FBuildNumber) {
		t.Fatalf("build footer: %q %d", r.BuildCommit, r.BuildNumber)
	}
	if want := 17.28 * (1 << 30); math.Abs(float64(r.ModelSize)-want) > 1 || r.ModelNParams != 30530000000 {
		t.Fatalf("size %d params %d", r.ModelSize, r.ModelNParams)
	}
	if string(r.Extra["md_size"]) != `"17.28 GiB"` {
		t.Fatalf("md_size extra: %s", r.Extra["md_size"])
	}
	kv := rows[4]
	if kv.TypeK != "q8_0" || kv.TypeV != "q8_0" || !kv.Known.Has(FTypeK) || kv.Known.Has(FFlashAttn) {
		t.Fatalf("kv row: %+v", kv)
	}

	hand, _, err := ParseFile("seed-style-hand.md", readTestdata(t, "seed-style-hand.md"))
	if err != nil {
		t.Fatal(err)
	}
	if h := hand[4]; h.ModelType != "Qwen3.6-35B-A3B UD-Q4_K_XL" || h.AvgTs != 996.40 || h.StddevTs != 5.90 {
		t.Fatalf("bold cell: %+v", h)
	}
	if h := hand[10]; h.TestName() != "tg128 @ d8192" || h.AvgTs != 50.74 {
		t.Fatalf("dash cell should be skipped: %+v", h)
	}
	if h := hand[12]; h.AvgTs != 55.24 || h.StddevTs != 11.68 {
		t.Fatalf("+/- cell: %+v", h)
	}
}

func TestMalformedRefusedWithLine(t *testing.T) {
	good := string(firstLine(readTestdata(t, "bench-jsonl.stdout")))
	csvHead := string(firstLine(readTestdata(t, "bench-csv.stdout")))
	csvRow := strings.Split(string(readTestdata(t, "bench-csv.stdout")), "\n")[1]
	mdHead := "| model | size | params | backend | threads | test | t/s |\n| --- | ---: | ---: | --- | ---: | ---: | ---: |\n"
	cases := []struct {
		name, data string
		line       int
		msg        string
	}{
		{"empty.jsonl", "", 1, "empty file"},
		{"blank.md", "\n\n  \n", 1, "empty file"},
		{"prose.txt", "hello\nworld\n", 1, "not llama-bench output"},
		{"trunc.jsonl", good + "\n" + good[:200] + "\n", 2, ""},
		{"garbage.jsonl", good + "\n" + "this is not json\n" + good + "\n", 2, "expected a jsonl result object"},
		{"type.jsonl", strings.Replace(good, `"n_prompt": 64`, `"n_prompt": "64"`, 1), 1, "n_prompt"},
		{"float-int.jsonl", strings.Replace(good, `"avg_ns": 221974437`, `"avg_ns": 2.5`, 1), 1, "avg_ns"},
		{"trailing.jsonl", good + " x", 1, "after the result object"},
		{"unclosed.json", "[\n  {\"n_prompt\": 1,\n   \"avg_ts\": 2\n", 4, ""},
		{"badsep.json", "[\n{\"n_prompt\": 1}\n{\"n_prompt\": 2}]", 3, "expected ',' or ']'"},
		{"bad.csv", csvHead + "\n" + csvRow + "\n" + strings.Replace(csvRow, `"2048"`, `"lots"`, 1) + "\n", 3, "n_batch"},
		{"short.csv", csvHead + "\n" + csvRow + "\n\"Debian\",\"1\"\n", 3, "csv"},
		{"cells.md", mdHead + "| m | 1 MiB | 1 M | CPU | 2 | pp64 | 1.00 ± 0.10 |\n| m | 1 MiB | 1 M | CPU | pp64 | 1.00 ± 0.10 |\n", 4, "6 cells"},
		{"rate.md", mdHead + "| m | 1 MiB | 1 M | CPU | 2 | pp64 | fast |\n", 3, "t/s"},
		{"test.md", mdHead + "| m | 1 MiB | 1 M | CPU | 2 | pq64 | 1.00 ± 0.10 |\n", 3, "test"},
		{"size.md", mdHead + "| m | 1 MB/s | 1 M | CPU | 2 | pp64 | 1.00 ± 0.10 |\n", 3, "size"},
		{"nosep.md", "| model | test | t/s |\n| m | pp64 | 1.00 |\n", 2, "separator"},
		{"norate.md", "| model | test |\n| --- | --- |\n| m | pp64 |\n", 1, "no t/s column"},
		{"notables.md", "| a | b |\n| --- | --- |\n| 1 | 2 |\n", 0, "no llama-bench results"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, _, err := ParseFile(c.name, []byte(c.data))
			if err == nil {
				t.Fatalf("accepted: %d rows", len(rows))
			}
			if rows != nil {
				t.Fatalf("returned %d rows with the error", len(rows))
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("not a ParseError: %T %v", err, err)
			}
			if pe.File != c.name || pe.Line != c.line {
				t.Fatalf("error %q: want %s line %d", err, c.name, c.line)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q lacks %q", err, c.msg)
			}
			if c.line > 0 && !strings.HasPrefix(err.Error(), c.name+":"+strconv.Itoa(c.line)) {
				t.Fatalf("error %q does not start with file:line", err)
			}
		})
	}
}

func TestUnknownFieldsPreserved(t *testing.T) {
	line := []byte(`{"n_prompt": 512, "n_gen": 0, "avg_ts": 1.5, "future_field": {"a": [1, 2, "x"]}, "flash_attn": true, "vulkan": false}`)
	r, err := ParseJSONLLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Extra["future_field"]) != `{"a": [1, 2, "x"]}` || string(r.Extra["vulkan"]) != "false" {
		t.Fatalf("extra: %q", r.Extra)
	}
	if r.FlashAttn != 1 || !r.Known.Has(FFlashAttn) {
		t.Fatalf("bool flash_attn: %d", r.FlashAttn)
	}
	if r.Complete() || r.Known.Len() != 4 {
		t.Fatalf("known %d", r.Known.Len())
	}
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseJSONLLine(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(back.Extra["vulkan"], r.Extra["vulkan"]) || back.NPrompt != 512 || back.Known != r.Known {
		t.Fatalf("round trip: %+v", back)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	rows, _, err := ParseFile("x", readTestdata(t, "bench-depth-jsonl.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseJSONLLine(b)
		if err != nil {
			t.Fatal(err)
		}
		back.Line = r.Line
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip\n got %+v\nwant %+v", back, r)
		}
	}
}

func TestTestNames(t *testing.T) {
	cases := []struct {
		s       string
		p, g, d int64
		canon   string
	}{
		{"pp512", 512, 0, 0, "pp512"},
		{"tg128 @ d8192", 0, 128, 8192, "tg128 @ d8192"},
		{"pp512+tg128", 512, 128, 0, "pp512+tg128"},
		{"PP64 @d128", 64, 0, 128, "pp64 @ d128"},
		{"pg512,128", 512, 128, 0, "pp512+tg128"},
	}
	for _, c := range cases {
		p, g, d, err := ParseTestName(c.s)
		if err != nil || p != c.p || g != c.g || d != c.d {
			t.Errorf("%q: %d %d %d %v", c.s, p, g, d, err)
		}
		if got := TestName(p, g, d); got != c.canon {
			t.Errorf("%q: name %q want %q", c.s, got, c.canon)
		}
	}
	for _, bad := range []string{"", "pp", "tgx", "pp0", "pp5 @ dx", "xx512", "pp512+pp1"} {
		if _, _, _, err := ParseTestName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if KindOf(0, 32) != KindTG || KindOf(512, 128) != KindPG || KindOf(0, 0) != KindUnknown {
		t.Error("KindOf")
	}
}

// TestSharedSamples parses every llama-bench output under ../shared/llama-samples (when the
// checkout has it): every stdout of a successful bench run imports, every failed one is refused.
func TestSharedSamples(t *testing.T) {
	dir := sharedtest.Dir(t, "llama-samples")
	files, _ := filepath.Glob(filepath.Join(dir, "*bench*.stdout"))
	tput, _ := filepath.Glob(filepath.Join(dir, "tput-*.stdout"))
	files = append(files, tput...)
	if len(files) == 0 {
		t.Fatalf("no llama-bench stdout (*bench*.stdout, tput-*.stdout) in %s", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rows, format, err := ParseFile(filepath.Base(f), data)
		bad := strings.HasPrefix(filepath.Base(f), "bad-")
		switch {
		case bad && err == nil:
			t.Errorf("%s: accepted %d rows", f, len(rows))
		case !bad && err != nil:
			t.Errorf("%s: %v", f, err)
		case !bad:
			t.Logf("%s: %s, %d rows", filepath.Base(f), format, len(rows))
		}
	}
}

func TestParserAllocations(t *testing.T) {
	line := firstLine(readTestdata(t, "bench-jsonl.stdout"))
	var p Parser
	if _, err := p.ParseLine(line); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := p.ParseLine(line); err != nil {
			t.Fatal(err)
		}
	})
	// The two sample slices are the only allocations once the strings are interned.
	if allocs > 2 {
		t.Fatalf("%.1f allocations per line, want <= 2", allocs)
	}
}

func BenchmarkParseJSONLLine(b *testing.B) {
	line := firstLine(readTestdata(b, "bench-jsonl.stdout"))
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseJSONLLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParserParseLine(b *testing.B) {
	line := firstLine(readTestdata(b, "bench-jsonl.stdout"))
	var p Parser
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.ParseLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSONBaseline(b *testing.B) {
	line := firstLine(readTestdata(b, "bench-jsonl.stdout"))
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			b.Fatal(err)
		}
	}
}
