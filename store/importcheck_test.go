package store

import (
	"errors"
	"reflect"
	"testing"

	"sparkbench/runner/benchfmt"
)

// Rows a live leg refuses (benchfmt.Result.Check) are refused by an import too: the whole
// request, with the file and line of the first bad row and why, and nothing is written —
// not the good file next to it either.
func TestFaultsImportRefusesRowsThatAreNotResults(t *testing.T) {
	n, _ := openTemp(t)
	prior := ImportFile{Name: "prior.jsonl", Data: benchTestdata(t, "bench-jsonl.stdout")}
	if _, err := n.ImportBenchOutput(ctx, ImportRequest{Files: []ImportFile{prior}}); err != nil {
		t.Fatal(err)
	}
	before := must[Stats](t)(n.Stats(ctx))
	good := `{"n_prompt": 64, "n_gen": 0, "n_depth": 0, "avg_ts": 288.3, "stddev_ts": 2.8, "samples_ts": [290.3, 286.3]}` + "\n"
	cases := []struct {
		name, file, data string
		line             int
		msg              string
	}{
		{"empty object", "x.jsonl", good + "{}\n", 2, "not a llama-bench result: no n_prompt, n_gen, avg_ts"},
		{"object of other fields", "x.jsonl", good + `{"not":"a bench row"}` + "\n", 2, "not a llama-bench result: no n_prompt, n_gen, avg_ts"},
		{"receipt rows.jsonl", "rows.jsonl", `{"seq":0,"status":"result","row":{"n_prompt":64,"n_gen":0,"avg_ts":288.3}}` + "\n", 1,
			`a receipt bundle's rows.jsonl line ({"seq","status","row"}), not llama-bench output: import llama-bench's own output (-o jsonl, json, csv, sql or md); a bundle is checked with sparkbench verify`},
		{"csv without avg_ts", "x.csv", "n_prompt,n_gen,n_depth,avg_ns\n64,0,0,221974437\n", 2, "not a llama-bench result: no avg_ts"},
		{"negative rate", "x.jsonl", good + `{"n_prompt": 64, "n_gen": 0, "avg_ts": -288.3}` + "\n", 2, "avg_ts is -288.3: a rate must be a number > 0 tokens/s"},
		{"zero rate", "x.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 0}` + "\n", 1, "avg_ts is 0: a rate must be a number > 0 tokens/s"},
		{"negative sample rate", "x.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 5, "samples_ts": [5, -1]}` + "\n", 1, "samples_ts[1] is -1: a rate must be a number > 0 tokens/s"},
		{"negative stddev", "x.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 5, "stddev_ts": -1}` + "\n", 1, "stddev_ts is -1: a standard deviation must be a number >= 0"},
		{"negative n_gen", "x.jsonl", `{"n_prompt": 0, "n_gen": -32, "avg_ts": 5}` + "\n", 1, "n_gen is -32: a token count cannot be negative"},
		{"negative n_depth", "x.jsonl", `{"n_prompt": 64, "n_gen": 0, "n_depth": -128, "avg_ts": 5}` + "\n", 1, "n_depth is -128: a token count cannot be negative"},
		{"no test", "x.jsonl", `{"n_prompt": 0, "n_gen": 0, "avg_ts": 5}` + "\n", 1, "n_prompt and n_gen are both 0: not a test llama-bench runs"},
		{"negative time", "x.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 5, "avg_ns": -1}` + "\n", 1, "avg_ns is -1: a time cannot be negative"},
		{"json array element", "x.json", "[\n" + `{"n_prompt": 64, "n_gen": 0, "avg_ts": 5},` + "\n" + `{"n_gen": 16, "avg_ts": 5}` + "\n]\n", 3, "not a llama-bench result: no n_prompt"},
		{"md negative rate", "x.md", "| model | test | t/s |\n| --- | --- | --: |\n| m | pp512 | 10.5 |\n| m | tg128 | -3.5 |\n", 4, "avg_ts is -3.5: a rate must be a number > 0 tokens/s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := n.ImportBenchOutput(ctx, ImportRequest{Study: "new", Files: []ImportFile{
				{Name: "good.jsonl", Data: benchTestdata(t, "bench-depth-jsonl.stdout")}, {Name: c.file, Data: []byte(c.data)}}})
			var pe *benchfmt.ParseError
			if !errors.As(err, &pe) || pe.File != c.file || pe.Line != c.line || pe.Msg != c.msg {
				t.Fatalf("got %v, want %s:%d: %s", err, c.file, c.line, c.msg)
			}
			if _, _, err := ParseImportFile(c.file, []byte(c.data)); err == nil || err.Error() != pe.Error() {
				t.Errorf("ParseImportFile: %v, want the same refusal", err)
			}
		})
	}
	if after := must[Stats](t)(n.Stats(ctx)); !reflect.DeepEqual(after.Tables, before.Tables) || after.JournalHead != before.JournalHead {
		t.Fatalf("a refused import wrote something: %v -> %v", before.Tables, after.Tables)
	}
	// The same checks pass every row of llama-bench's real output.
	for _, f := range importFiles {
		if _, _, err := ParseImportFile(f.name, benchTestdata(t, f.name)); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
}
