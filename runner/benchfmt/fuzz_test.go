package benchfmt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func addSeedFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParseJSONLLine: never panics; what it accepts is valid JSON, agrees with encoding/json,
// and survives MarshalJSON -> ParseJSONLLine unchanged.
func FuzzParseJSONLLine(f *testing.F) {
	for _, n := range []string{"bench-jsonl.stdout", "bench-depth-jsonl.stdout", "tput-t2.stdout"} {
		b, _ := os.ReadFile(filepath.Join("testdata", n))
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"n_prompt": 1e3, "flash_attn": true, "x": {"y": [null]}, "samples_ts": []}`))
	f.Add([]byte(`{"model_type": "a\u00e9\"\\", "n_gen": -0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseJSONLLine(line)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if !json.Valid(bytes.TrimSpace(line)) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted %q, encoding/json says %v", line, err)
		}
		for fl := Field(0); fl < NumFields; fl++ {
			raw, ok := m[fl.Name()]
			if !ok || string(raw) == "null" || !r.Known.Has(fl) {
				continue
			}
			if fields[fl].typ == tString {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil || s != r.valueString(fl) {
					t.Fatalf("%s: %q vs encoding/json %q (%v)", fl, r.valueString(fl), s, err)
				}
			}
		}
		b, err := r.MarshalJSON()
		if err != nil {
			return // e.g. a float that overflowed to Inf is refused at parse time; nothing else
		}
		back, err := ParseJSONLLine(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		normalizeExtra(&r)
		normalizeExtra(&back)
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip\n got %+v\nwant %+v", back, r)
		}
	})
}

func (r *Result) valueString(f Field) string {
	v, _ := r.Value(f)
	s, _ := v.(string)
	return s
}

// normalizeExtra compacts raw extras so whitespace differences do not count.
func normalizeExtra(r *Result) {
	for k, v := range r.Extra {
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			r.Extra[k] = buf.Bytes()
		}
	}
}

func fuzzFile(t *testing.T, name string, data []byte) {
	rows, format, err := ParseFile(name, data)
	if err != nil {
		if _, ok := err.(*ParseError); !ok {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if rows != nil {
			t.Fatal("rows returned with an error")
		}
		return
	}
	if len(rows) == 0 || format == "" {
		t.Fatalf("ok with %d rows, format %q", len(rows), format)
	}
	for _, r := range rows {
		if r.Line < 1 {
			t.Fatalf("row without a line: %+v", r)
		}
		if _, err := r.MarshalJSON(); err != nil {
			t.Fatalf("accepted row cannot be written: %v", err)
		}
	}
}

func FuzzParseJSONFile(f *testing.F) {
	addSeedFiles(f, "bench-json.stdout")
	f.Add([]byte("[]"))
	f.Add([]byte("[{\"n_prompt\":1,\"n_gen\":0,\"avg_ts\":2}]"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFile(t, "f.json", data) })
}

func FuzzParseJSONLFile(f *testing.F) {
	addSeedFiles(f, "bench-jsonl.stdout")
	f.Add([]byte("load_backend: loaded CPU backend\r\n{\"n_prompt\": 64, \"n_gen\": 0, \"avg_ts\": 1.5, \"samples_ts\": [1, 2]}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFile(t, "f.jsonl", data) })
}

func FuzzParseCSVFile(f *testing.F) {
	addSeedFiles(f, "bench-csv.stdout")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFile(t, "f.csv", data) })
}

func FuzzParseMDFile(f *testing.F) {
	addSeedFiles(f, "bench-md.stdout", "bench-depth-md.stdout", "tput-md-t1-vs-t2.txt", "seed-style-llama-bench.md", "seed-style-hand.md")
	f.Add([]byte("> " + strings.ReplaceAll(mdWild, "\n", "\r\n> ") + "| m | 1 MiB | 1 M | CPU | 0 | pp8 @ d8 | 9.0 ± 0.1 |\r\n"))
	f.Add([]byte("model | n_prompt | n_gen | t/s\n-- | -- | -- | --\nm | 8 | 0 | 1.5\nlog: x\nm | 0 | 8 | 2.5\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFile(t, "f.md", data) })
}

func FuzzParseSQLFile(f *testing.F) {
	f.Add([]byte(sqlCreateOld + "INSERT INTO test (build_commit, model_type, n_threads, f16_kv, n_prompt, n_gen, avg_ns, avg_ts, stddev_ts) VALUES ('a', 'it''s', '16', '1', '512', '0', '1', '2.5', NULL);\n"))
	f.Add([]byte("INSERT INTO llama_bench (n_prompt, n_gen, avg_ts) VALUES ('0', '32', '5.5');\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFile(t, "f.sql", data) })
}
