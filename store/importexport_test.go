package store

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sparkbench/runner/sharedtest"
	"strings"
	"testing"

	"sparkbench/runner/benchfmt"
)

var importFiles = []struct {
	name   string
	format benchfmt.Format
	rows   int
}{
	{"bench-jsonl.stdout", benchfmt.FormatJSONL, 2},
	{"bench-json.stdout", benchfmt.FormatJSON, 2},
	{"bench-csv.stdout", benchfmt.FormatCSV, 2},
	{"bench-md.stdout", benchfmt.FormatMD, 2},
	{"bench-depth-jsonl.stdout", benchfmt.FormatJSONL, 4},
	{"bench-depth-md.stdout", benchfmt.FormatMD, 4},
	{"bench-oe-md-jsonl.stdout", benchfmt.FormatMD, 2},
	{"bench-oe-md-jsonl.stderr", benchfmt.FormatJSONL, 2},
	{"bench-md-under-pty.raw", benchfmt.FormatMD, 2},
	{"tput-md-t1-vs-t2.txt", benchfmt.FormatMD, 12},
	{"seed-style-llama-bench.md", benchfmt.FormatMD, 8},
	{"seed-style-hand.md", benchfmt.FormatMD, 13},
}

func TestImportEveryFormat(t *testing.T) {
	n, _ := openTemp(t)
	var files []ImportFile
	for _, f := range importFiles {
		files = append(files, ImportFile{Name: "samples/" + f.name, Data: benchTestdata(t, f.name)})
	}
	res, err := n.ImportBenchOutput(ctx, ImportRequest{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range importFiles {
		r := res[i]
		if r.Format != f.format || r.Rows != f.rows || r.Duplicate || r.LegID == 0 || r.SHA256 != SHA256Hex(files[i].Data) {
			t.Errorf("%s: %+v", f.name, r)
			continue
		}
		// what the notebook holds equals what the parser read, field for field
		got := must[[]benchfmt.Result](t)(n.BenchRows(ctx, r.LegID))
		want := parseRows(t, f.name)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stored rows differ\n got %+v\nwant %+v", f.name, got[0], want[0])
		}
		leg := must[Leg](t)(n.Leg(ctx, r.LegID))
		var prov map[string]any
		json.Unmarshal(leg.Provenance, &prov)
		if leg.State != LegImported || leg.Kind != LegKindImported || prov["sha256"] != r.SHA256 || prov["file"] != "samples/"+f.name ||
			prov["format"] != string(f.format) || leg.Label != f.name {
			t.Errorf("%s: leg %+v provenance %v", f.name, leg, prov)
		}
	}
	// jsonl values equal an independent decode of the jsonl
	jl := res[0]
	got := must[[]benchfmt.Result](t)(n.BenchRows(ctx, jl.LegID))
	for i, line := range bytes.Split(bytes.TrimSpace(benchTestdata(t, "bench-jsonl.stdout")), []byte("\n")) {
		var m struct {
			AvgTs, StddevTs     float64
			AvgNs               int64
			SamplesTs           []float64
			NPrompt, NGen       int64
			ModelType, TestTime string
		}
		dec := map[string]any{}
		json.Unmarshal(line, &dec)
		b, _ := json.Marshal(map[string]any{"AvgTs": dec["avg_ts"], "StddevTs": dec["stddev_ts"], "AvgNs": dec["avg_ns"], "SamplesTs": dec["samples_ts"],
			"NPrompt": dec["n_prompt"], "NGen": dec["n_gen"], "ModelType": dec["model_type"], "TestTime": dec["test_time"]})
		json.Unmarshal(b, &m)
		g := got[i]
		if g.AvgTs != m.AvgTs || g.StddevTs != m.StddevTs || g.AvgNs != m.AvgNs || !reflect.DeepEqual(g.SamplesTs, m.SamplesTs) ||
			g.NPrompt != m.NPrompt || g.NGen != m.NGen || g.ModelType != m.ModelType || g.TestTime != m.TestTime {
			t.Errorf("row %d: stored %+v, jsonl %+v", i, g, m)
		}
	}
	// md and jsonl of the same run (-o md -oe jsonl) agree to the table's two decimals
	md := must[[]benchfmt.Result](t)(n.BenchRows(ctx, res[6].LegID))
	js := must[[]benchfmt.Result](t)(n.BenchRows(ctx, res[7].LegID))
	for i := range md {
		if math.Abs(md[i].AvgTs-js[i].AvgTs) > 0.005 || math.Abs(md[i].StddevTs-js[i].StddevTs) > 0.005 || md[i].TestName() != js[i].TestName() {
			t.Errorf("row %d: md %.2f ± %.2f %s, jsonl %f ± %f %s", i, md[i].AvgTs, md[i].StddevTs, md[i].TestName(), js[i].AvgTs, js[i].StddevTs, js[i].TestName())
		}
	}
	// the seed-style table's pp512 @ d8192 cell
	seed := must[[]benchfmt.Result](t)(n.BenchRows(ctx, res[10].LegID))
	if seed[2].TestName() != "pp512 @ d8192" || seed[2].AvgTs != 561.10 || seed[2].StddevTs != 6.78 {
		t.Errorf("seed table: %+v", seed[2])
	}
	// one leg.finished (state imported) per file, chain intact
	rep := must[VerifyReport](t)(n.Verify(ctx))
	if !rep.OK() || rep.LegsChecked != len(importFiles) {
		t.Fatalf("verify: %+v %v", rep, rep.Broken)
	}
	// a second import of the same bytes is recognised
	again := must[[]ImportResult](t)(n.ImportBenchOutput(ctx, ImportRequest{Files: files[:1]}))
	if !again[0].Duplicate || again[0].LegID != res[0].LegID {
		t.Fatalf("re-import: %+v", again[0])
	}
	if st := must[Stats](t)(n.Stats(ctx)); st.Tables["legs"] != int64(len(importFiles)) {
		t.Fatalf("legs after re-import: %d", st.Tables["legs"])
	}
	// imported models are searchable
	if hits := must[[]SearchHit](t)(n.Search(ctx, "qwen3moe", 5)); len(hits) == 0 || hits[0].Kind != "model" {
		t.Errorf("search: %+v", hits)
	}
	series := must[[]BenchSeries](t)(n.BenchSeries(ctx, res[0].StudyID, LegFilter{}))
	if len(series) == 0 {
		t.Fatal("no series from imported rows")
	}
}

// TestImportSharedSamples imports every successful llama-bench stdout under ../shared/llama-samples.
func TestImportSharedSamples(t *testing.T) {
	dir := sharedtest.Dir(t, "llama-samples")
	names, _ := filepath.Glob(filepath.Join(dir, "bench-*.stdout"))
	tput, _ := filepath.Glob(filepath.Join(dir, "tput-*.stdout"))
	names = append(names, tput...)
	if len(names) == 0 {
		t.Fatalf("no llama-bench stdout (bench-*.stdout, tput-*.stdout) in %s", dir)
	}
	n, _ := openTemp(t)
	var files []ImportFile
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ImportFile{Name: p, Data: b})
	}
	res, err := n.ImportBenchOutput(ctx, ImportRequest{Study: "shared", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range res {
		total += r.Rows
	}
	t.Logf("imported %d files, %d rows", len(res), total)
	// the bad-bench-* outputs (empty stdout) are refused
	bad, _ := filepath.Glob(filepath.Join(dir, "bad-bench-*.stdout"))
	for _, p := range bad {
		b, _ := os.ReadFile(p)
		if _, err := n.ImportBenchOutput(ctx, ImportRequest{Files: []ImportFile{{Name: p, Data: b}}}); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
}

func TestImportMalformedImportsNothing(t *testing.T) {
	n, _ := openTemp(t)
	good := ImportFile{Name: "good.jsonl", Data: benchTestdata(t, "bench-jsonl.stdout")}
	badMD := "| model | test | t/s |\n| --- | --- | --- |\n| m | pp512 | 1.0 ± 0.1 |\n| m | tg128 | fast |\n"
	cases := []struct {
		file ImportFile
		line int
	}{
		{ImportFile{Name: "bad.md", Data: []byte(badMD)}, 4},
		{ImportFile{Name: "trunc.jsonl", Data: append(benchTestdata(t, "bench-jsonl.stdout"), []byte(`{"n_prompt": 5, "avg_`)...)}, 3},
		{ImportFile{Name: "empty.csv", Data: nil}, 1},
	}
	for _, c := range cases {
		_, err := n.ImportBenchOutput(ctx, ImportRequest{Files: []ImportFile{good, c.file}})
		var pe *benchfmt.ParseError
		if !errors.As(err, &pe) || pe.File != c.file.Name || pe.Line != c.line {
			t.Errorf("%s: %v", c.file.Name, err)
		}
	}
	st := must[Stats](t)(n.Stats(ctx))
	if st.Tables["legs"] != 0 || st.Tables["studies"] != 0 || st.Tables["journal"] != 0 || st.Tables["bench_samples"] != 0 {
		t.Fatalf("something was imported: %+v", st.Tables)
	}
	// into a study of the wrong kind
	n.CreateStudy(ctx, Study{Name: "cap", Kind: StudyCapacity})
	if _, err := n.ImportBenchOutput(ctx, ImportRequest{Study: "cap", Files: []ImportFile{good}}); err == nil || !strings.Contains(err.Error(), "throughput") {
		t.Fatalf("capacity study: %v", err)
	}
}

func TestExportRoundTrip(t *testing.T) {
	n, _ := openTemp(t)
	res := must[[]ImportResult](t)(n.ImportBenchOutput(ctx, ImportRequest{Study: "orig", Files: []ImportFile{
		{Name: "a.jsonl", Data: benchTestdata(t, "bench-depth-jsonl.stdout")},
		{Name: "b.md", Data: benchTestdata(t, "seed-style-llama-bench.md")},
	}}))
	orig := must[[]benchfmt.Result](t)(n.StudyBenchRows(ctx, res[0].StudyID))
	for _, format := range []string{ExportCSV, ExportJSON} {
		var buf bytes.Buffer
		k, err := n.ExportStudy(ctx, &buf, res[0].StudyID, ExportOptions{Format: format})
		if err != nil || k != 12 {
			t.Fatalf("%s: %d rows, %v", format, k, err)
		}
		if format == ExportCSV {
			recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
			if err != nil || !reflect.DeepEqual(recs[0], BenchExportColumns) || len(recs) != 13 {
				t.Fatalf("csv header %v %v", recs[0], err)
			}
			if recs[1][0] != "orig" || recs[1][6] != "pp64" || recs[5][6] != "pp512" || recs[7][6] != "pp512 @ d8192" {
				t.Fatalf("csv rows %v / %v", recs[1][:8], recs[7][:8])
			}
		} else {
			var rows []map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rows); err != nil || len(rows) != 12 {
				t.Fatalf("json: %v", err)
			}
			if rows[6]["avg_ts"] != 561.1 || rows[6]["n_depth"] != 8192.0 || rows[6]["avg_ns"] != nil || rows[0]["samples_ts"] == nil {
				t.Fatalf("json row %v", rows[6])
			}
		}
		// the export is itself importable, and carries the same values
		back := must[[]ImportResult](t)(n.ImportBenchOutput(ctx, ImportRequest{Study: "again-" + format, Files: []ImportFile{{Name: "export." + format, Data: buf.Bytes()}}}))
		again := must[[]benchfmt.Result](t)(n.BenchRows(ctx, back[0].LegID))
		if len(again) != len(orig) {
			t.Fatalf("%s: %d rows back", format, len(again))
		}
		for i := range orig {
			for f := benchfmt.Field(0); f < benchfmt.NumFields; f++ {
				a, ka := orig[i].Value(f)
				b, kb := again[i].Value(f)
				if ka != kb || !reflect.DeepEqual(a, b) {
					t.Errorf("%s row %d %s: %v (%v) vs %v (%v)", format, i, f, a, ka, b, kb)
				}
			}
		}
	}
	if _, err := n.ExportStudy(ctx, &bytes.Buffer{}, res[0].StudyID, ExportOptions{Format: "xml"}); err == nil {
		t.Fatal("xml accepted")
	}
}
