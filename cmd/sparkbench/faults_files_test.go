package main

import (
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/canon"
	"sparkbench/runner/benchfmt"
	"sparkbench/store"
)

// Fault matrix, files (issue 15, defects 4 and 5): junk given to `sparkbench import` (rows a
// live leg refuses, a receipt's own rows.jsonl, a csv without avg_ts, impossible values), and
// named pipes, devices, sockets and oversized files given where a file is read (import, model
// inspect, model verify, study validate's model path, verify's bundle). Each case drives the
// real CLI in-process, in a goroutine with a 20 s limit (a FIFO opened for a blocking read
// waits for a writer forever, so a regression fails instead of hanging), and asserts the exit
// status, the exact message, an empty stdout, and that every table of the notebook (which
// already holds an import) and the journal head are unchanged.

// runCLIWithin is runCLI bounded by limit: the test fails if the command has not returned.
func runCLIWithin(t *testing.T, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(args...)
		done <- result{code, out, errOut}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.code, r.out, r.errOut
	case <-timer.C:
		t.Fatalf("sparkbench %s: no answer after %s (blocked on a read?)", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}

func TestFaultMatrixFiles(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb) // every command, with or without --notebook, uses this one
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The notebook already holds an import, so "unchanged" is not "empty".
	goodJSONL := benchSample(t, "bench-depth-jsonl.stdout")
	if code, out, errOut := runCLI("import", goodJSONL); code != 0 {
		t.Fatalf("import the good file: %d %s %s", code, out, errOut)
	}

	// Junk llama-bench output (defect 4).
	row := `{"n_prompt": 64, "n_gen": 0, "n_depth": 0, "avg_ts": 288.3, "stddev_ts": 2.8, "samples_ts": [290.3, 286.3]}` + "\n"
	emptyObj := write("empty-object.jsonl", row+"{}\n")
	notBench := write("not-bench.jsonl", `{"not":"a bench row"}`+"\n")
	rows, _, err := benchfmt.ParseFile(goodJSONL, mustRead(t, goodJSONL))
	if err != nil {
		t.Fatal(err)
	}
	var receiptRows []byte
	for i := range rows {
		b, err := rows[i].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		receiptRows = canon.AppendRowLine(receiptRows, int64(i), "result", b)
	}
	receipt := write("rows.jsonl", string(receiptRows))
	csvNoRate := write("no-avg-ts.csv", "n_prompt,n_gen,n_depth,avg_ns,stddev_ns\n64,0,0,221974437,2176546\n0,32,0,38995310,8610552\n")
	csvNegGen := write("neg-gen.csv", "n_prompt,n_gen,n_depth,avg_ts\n64,0,0,288.3\n0,-32,0,841.1\n")
	negRate := write("neg-rate.jsonl", row+`{"n_prompt": 0, "n_gen": 32, "avg_ts": -841.1}`+"\n")
	zeroRate := write("zero-rate.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 0}`+"\n")
	negPrompt := write("neg-prompt.jsonl", `{"n_prompt": -64, "n_gen": 0, "avg_ts": 288.3}`+"\n")
	negDepth := write("neg-depth.jsonl", `{"n_prompt": 64, "n_gen": 0, "n_depth": -128, "avg_ts": 288.3}`+"\n")
	negSample := write("neg-sample.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 288.3, "samples_ts": [290.3, -286.3]}`+"\n")
	negStddev := write("neg-stddev.jsonl", `{"n_prompt": 64, "n_gen": 0, "avg_ts": 288.3, "stddev_ts": -2.8}`+"\n")
	noTest := write("no-test.jsonl", `{"n_prompt": 0, "n_gen": 0, "avg_ts": 288.3}`+"\n")
	jsonNoPrompt := write("no-prompt.json", "[\n"+strings.TrimSuffix(row, "\n")+",\n"+`{"n_gen": 32, "avg_ts": 841.1}`+"\n]\n")
	mdNegRate := write("neg-rate.md", "| model | test | t/s |\n| --- | --- | --: |\n| tiny | pp512 | 561.10 ± 6.78 |\n| tiny | tg128 | -38.2 ± 0.5 |\n")
	goodJSON := benchSample(t, "bench-json.stdout")

	// Files that are not regular files (defect 5).
	fifo := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fifoModel := filepath.Join(dir, "model.gguf")
	if err := syscall.Mkfifo(fifoModel, 0o600); err != nil {
		t.Fatal(err)
	}
	linkToFIFO := filepath.Join(dir, "link-to-pipe.gguf")
	if err := os.Symlink(fifoModel, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	fifoBundle := filepath.Join(dir, "bundle.tar.gz")
	if err := syscall.Mkfifo(fifoBundle, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	huge := filepath.Join(dir, "huge.jsonl") // sparse: no disk used
	if f, err := os.Create(huge); err != nil || f.Truncate(store.MaxImportBytes+1) != nil || f.Close() != nil {
		t.Fatalf("sparse file: %v", err)
	}
	bundleWithFIFO := filepath.Join(dir, "bundle-dir")
	if err := os.MkdirAll(filepath.Join(bundleWithFIFO, "legs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("bundle-dir/receipt.md", "# r\n")
	if err := syscall.Mkfifo(filepath.Join(bundleWithFIFO, "legs", "rows.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := func(model string) string {
		b, err := json.Marshal(map[string]any{
			"schema": "sparkbench.throughput/v1", "name": "fifo model",
			"models": []any{map[string]any{"id": "tiny", "path": model, "sha256": tinySHA}},
			"axes":   map[string]any{"depths": []any{0}, "n_prompt": []any{64}, "n_gen": []any{32}, "reps": 3, "threads": []any{1}},
			"split":  "per_depth",
		})
		if err != nil {
			t.Fatal(err)
		}
		return write("plan-"+filepath.Base(model)+".json", string(b))
	}
	fifoPlan, linkPlan := plan(fifoModel), plan(linkToFIFO)

	const fixFile = "; nothing was imported: fix that file or leave it out, and run again\n"
	const noRow = "not a llama-bench result: no "
	cases := []struct {
		name string
		args []string
		code int
		want string // the whole of stderr, or (for study validate) the line that must be in it
	}{
		{"import a jsonl with an empty object line", []string{"import", emptyObj}, 2,
			"sparkbench import: " + emptyObj + ":2: " + noRow + "n_prompt, n_gen, avg_ts" + fixFile},
		{"import an object that is not a bench row", []string{"import", notBench}, 2,
			"sparkbench import: " + notBench + ":1: " + noRow + "n_prompt, n_gen, avg_ts" + fixFile},
		{"import a receipt bundle's rows.jsonl", []string{"import", receipt}, 2,
			"sparkbench import: " + receipt + `:1: a receipt bundle's rows.jsonl line ({"seq","status","row"}), not llama-bench output: ` +
				"import llama-bench's own output (-o jsonl, json, csv, sql or md); a bundle is checked with sparkbench verify" + fixFile},
		{"import a csv without avg_ts", []string{"import", csvNoRate}, 2,
			"sparkbench import: " + csvNoRate + ":2: " + noRow + "avg_ts" + fixFile},
		{"import a csv with a negative n_gen", []string{"import", csvNegGen}, 2,
			"sparkbench import: " + csvNegGen + ":3: n_gen is -32: a token count cannot be negative" + fixFile},
		{"import a negative rate", []string{"import", negRate}, 2,
			"sparkbench import: " + negRate + ":2: avg_ts is -841.1: a rate must be a number > 0 tokens/s" + fixFile},
		{"import a zero rate", []string{"import", zeroRate}, 2,
			"sparkbench import: " + zeroRate + ":1: avg_ts is 0: a rate must be a number > 0 tokens/s" + fixFile},
		{"import a negative n_prompt", []string{"import", negPrompt}, 2,
			"sparkbench import: " + negPrompt + ":1: n_prompt is -64: a token count cannot be negative" + fixFile},
		{"import a negative n_depth", []string{"import", negDepth}, 2,
			"sparkbench import: " + negDepth + ":1: n_depth is -128: a token count cannot be negative" + fixFile},
		{"import a negative sample rate", []string{"import", negSample}, 2,
			"sparkbench import: " + negSample + ":1: samples_ts[1] is -286.3: a rate must be a number > 0 tokens/s" + fixFile},
		{"import a negative stddev", []string{"import", negStddev}, 2,
			"sparkbench import: " + negStddev + ":1: stddev_ts is -2.8: a standard deviation must be a number >= 0" + fixFile},
		{"import a row that is no test", []string{"import", noTest}, 2,
			"sparkbench import: " + noTest + ":1: n_prompt and n_gen are both 0: not a test llama-bench runs" + fixFile},
		{"import a json array with a row without n_prompt", []string{"import", jsonNoPrompt}, 2,
			"sparkbench import: " + jsonNoPrompt + ":3: " + noRow + "n_prompt" + fixFile},
		{"import an md table with a negative rate", []string{"import", mdNegRate}, 2,
			"sparkbench import: " + mdNegRate + ":4: avg_ts is -38.2: a rate must be a number > 0 tokens/s" + fixFile},
		{"import a good file with a junk one: neither", []string{"import", "--study", "both", goodJSON, emptyObj}, 2,
			"sparkbench import: " + emptyObj + ":2: " + noRow + "n_prompt, n_gen, avg_ts" + fixFile},
		{"import a named pipe", []string{"import", fifo}, 2,
			"sparkbench import: " + fifo + " is a named pipe (FIFO), not a regular file; give the path of a file; nothing was imported\n"},
		{"import a named pipe after a good file", []string{"import", goodJSON, fifo}, 2,
			"sparkbench import: " + fifo + " is a named pipe (FIFO), not a regular file; give the path of a file; nothing was imported\n"},
		{"import a character device", []string{"import", "/dev/zero"}, 2,
			"sparkbench import: /dev/zero is a character device, not a regular file; give the path of a file; nothing was imported\n"},
		{"import a unix socket", []string{"import", sock}, 2,
			"sparkbench import: " + sock + " is a socket, not a regular file; give the path of a file; nothing was imported\n"},
		{"import a file over the size limit", []string{"import", huge}, 2,
			"sparkbench import: " + huge + " is 268435457 bytes, more than the 268435456-byte limit for llama-bench output; give a smaller file (split it); nothing was imported\n"},
		{"model inspect a named pipe", []string{"model", "inspect", fifoModel}, 2,
			"sparkbench model inspect: " + fifoModel + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file\n"},
		{"model inspect a link to a named pipe", []string{"model", "inspect", linkToFIFO}, 2,
			"sparkbench model inspect: " + linkToFIFO + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file\n"},
		{"model inspect a character device", []string{"model", "inspect", "/dev/zero"}, 2,
			"sparkbench model inspect: /dev/zero: is a character device, not a regular file; give the path of a .gguf model file\n"},
		{"model inspect a unix socket", []string{"model", "inspect", sock}, 2,
			"sparkbench model inspect: " + sock + ": is a socket, not a regular file; give the path of a .gguf model file\n"},
		{"model verify a named pipe", []string{"model", "verify", fifoModel}, 2,
			"sparkbench model verify: " + fifoModel + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file\n"},
		{"study validate a plan whose model is a named pipe", []string{"study", "validate", fifoPlan}, 2,
			"models[0].path: " + fifoModel + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file\n"},
		{"study validate a plan whose model links to a named pipe", []string{"study", "validate", linkPlan}, 2,
			"models[0].path: " + linkToFIFO + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file\n"},
		{"verify a named pipe", []string{"verify", fifoBundle}, 2,
			"sparkbench verify: " + fifoBundle + ": refused: a named pipe (FIFO), not a folder or a regular file; give a bundle folder or a .tar.gz\n"},
		{"verify --extract from a named pipe", []string{"verify", "--extract", filepath.Join(dir, "out"), fifoBundle}, 2,
			"sparkbench verify: " + fifoBundle + ": refused: a named pipe (FIFO), not a folder or a regular file; give a bundle folder or a .tar.gz\n"},
		{"verify a character device", []string{"verify", "/dev/zero"}, 2,
			"sparkbench verify: /dev/zero: refused: a character device, not a folder or a regular file; give a bundle folder or a .tar.gz\n"},
		{"verify a unix socket", []string{"verify", sock}, 2,
			"sparkbench verify: " + sock + ": refused: a socket, not a folder or a regular file; give a bundle folder or a .tar.gz\n"},
		{"verify a bundle folder holding a named pipe", []string{"verify", bundleWithFIFO}, 2,
			"sparkbench verify: " + bundleWithFIFO + `: refused: entry "legs/rows.jsonl": not a plain file (p---------)` + "\n"},
	}
	before := notebookCounts(t, nb)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLIWithin(t, 20*time.Second, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, c.code, out, errOut)
			}
			if c.args[0] == "study" {
				if !strings.Contains(errOut+out, c.want) {
					t.Errorf("output lacks %q:\nstdout %q\nstderr %q", c.want, out, errOut)
				}
			} else {
				if errOut != c.want {
					t.Errorf("stderr\n got %q\nwant %q", errOut, c.want)
				}
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
			}
			after := notebookCounts(t, nb)
			if !maps.Equal(after.Tables, before.Tables) || after.JournalHead != before.JournalHead {
				t.Errorf("the notebook changed:\nbefore %v %s\nafter  %v %s", before.Tables, before.JournalHead, after.Tables, after.JournalHead)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("verify --extract of a named pipe created its target: %v", err)
	}
	t.Logf("%d cases", len(cases))
}

// Links to regular files still work wherever a file is read: import, model inspect, model
// verify and verify of a .tar.gz bundle.
func TestLinksToRegularFilesStillRead(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	link := func(target, name string) string {
		abs, err := filepath.Abs(target)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.Symlink(abs, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonl := link(benchSample(t, "bench-depth-jsonl.stdout"), "bench.jsonl")
	code, out, errOut := runCLIWithin(t, 60*time.Second, "import", jsonl)
	if code != 0 || !strings.Contains(out, "imported "+jsonl+": jsonl, 4 rows (pp64, tg32, pp64 @ d128, tg32 @ d128) as leg 1") {
		t.Fatalf("import through a link: %d %q %q", code, out, errOut)
	}
	model := link(filepath.Join("..", "..", "testdata", "models", "tiny-llama-f32.gguf"), "tiny.gguf")
	if code, out, errOut := runCLIWithin(t, 60*time.Second, "model", "inspect", model); code != 0 || !strings.Contains(out, "llama") {
		t.Fatalf("model inspect through a link: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCLIWithin(t, 60*time.Second, "model", "verify", model, "--expect", tinySHA); code != 0 || !strings.Contains(out, "VERIFIED") {
		t.Fatalf("model verify through a link: %d %q %q", code, out, errOut)
	}
}
