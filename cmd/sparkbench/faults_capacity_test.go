package main

// The capacity side of the fault matrix (issue 15): bad plans and faulty llama-servers
// through the real CLI, in process. Each case asserts the exit status, the message, and that
// the notebook's tables are unchanged where nothing should be written.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// faultPlan writes a one-candidate plan (P {1,2} x C {1}, one pass) for model, with flags.
func faultPlan(t *testing.T, dir, name, model string, flags []string, edit func(m map[string]any)) string {
	t.Helper()
	pp := filepath.Join(dir, "prompt-plan.json")
	if err := os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if flags == nil {
		flags = []string{}
	}
	m := map[string]any{
		"schema": "sparkbench.capacity/v1", "name": name,
		"candidates": []any{map[string]any{"id": "fake", "label": "fake", "model": map[string]any{"path": model, "sha256": capacitySHA(t, model)},
			"server_flags": flags}},
		"slots": []int{1, 2}, "clients": []int{1}, "passes": []string{"forward"},
		"warmups": 0, "measured": 1, "n_predict": 4, "ctx_per_slot": 128, "seed": 1,
		"prompt_plan": map[string]any{"path": "prompt-plan.json", "sha256": capacitySHA(t, pp)},
		"limits":      map[string]any{"ttft_ms_p95_max": 5000, "e2e_ms_p95_max": 20000, "peak_rss_mib_max": 8192},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeServerDir is a binaries folder whose llama-server answers --help and --version as the
// real one does and otherwise runs body (a POSIX sh fragment); llama-bench is the real one.
func fakeServerDir(t *testing.T, real, realBench, body string) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in --help|--version) exec %q \"$@\";; esac\n%s\n", real, body)
	if err := os.WriteFile(filepath.Join(dir, "llama-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realBench, filepath.Join(dir, "llama-bench")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func tablesUnchanged(t *testing.T, name, nb string, before store.Stats) {
	t.Helper()
	if after := notebookCounts(t, nb); !maps.Equal(after.Tables, before.Tables) || after.JournalHead != before.JournalHead {
		t.Errorf("%s: the notebook changed: %v -> %v", name, before.Tables, after.Tables)
	}
}

// TestFaultsCapacityRefused: plans that must be refused before anything runs (exit 2, the
// message naming the field, flag or key, the notebook untouched, no run folder).
// capacityRefusal is one case of TestFaultsCapacityRefused.
type capacityRefusal struct {
	name  string
	flags []string
	edit  func(m map[string]any)
	raw   string // the plan's bytes, when not built from flags and edit
	args  func(plan string) []string
	want  string // one exact line of stderr
}

func TestFaultsCapacityRefused(t *testing.T) {
	loc := llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	nb := filepath.Join(dir, "nb.db")
	good := faultPlan(t, dir, "good", model, []string{"-t", "1"}, nil)
	if code, out, errOut := runCLI("capacity", "register", good, "--notebook", nb); code != 0 {
		t.Fatalf("register the good plan: %d %s %s", code, out, errOut)
	}
	before := notebookCounts(t, nb)
	flagMsg := func(file, flag string, j int) string {
		return fmt.Sprintf("candidates[0].server_flags[%d]: %q is not a flag of llama-server (%s --help does not list it; llama-server takes a flag's value as the next argument, not after '='): every server lifetime would fail to start; fix its spelling or remove it", j, flag, loc.Server)
	}
	set := func(k string, v any) func(m map[string]any) { return func(m map[string]any) { m[k] = v } }
	limit := func(k string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["limits"].(map[string]any)[k] = v }
	}
	validate := func(plan string) []string { return []string{"capacity", "validate", plan} }
	register := func(plan string) []string { return []string{"capacity", "register", plan, "--notebook", nb} }
	runNB := func(plan string) []string {
		return []string{"capacity", "run", plan, "--notebook", nb, "--out", filepath.Join(dir, "never")}
	}
	runFree := func(plan string) []string {
		return []string{"capacity", "run", plan, "--no-notebook", "--out", filepath.Join(dir, "never")}
	}
	var cases []capacityRefusal
	// an unknown server flag, through every command that takes a plan
	for _, c := range []struct {
		name string
		args func(string) []string
		pre  string
	}{{"validate", validate, "error: "}, {"register", register, "sparkbench capacity register: plan refused: "},
		{"run --notebook", runNB, "sparkbench capacity register: plan refused: "}, {"run", runFree, "sparkbench capacity run: plan refused: "}} {
		cases = append(cases, capacityRefusal{name: c.name + " unknown flag", flags: []string{"-t", "1", "--no-such-flag", "1"}, args: c.args,
			want: c.pre + flagMsg("", "--no-such-flag", 2)})
	}
	cases = append(cases,
		capacityRefusal{name: "validate joined flag", flags: []string{"--threads=1"}, args: validate, want: "error: " + flagMsg("", "--threads=1", 0)},
		capacityRefusal{name: "register typo flag", flags: []string{"-t", "1", "--flash-atn", "on"}, args: register,
			want: "sparkbench capacity register: plan refused: " + flagMsg("", "--flash-atn", 2)},
	)
	// explicit values out of range: refused with the range, never the default
	for _, z := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"measured 0", set("measured", 0), "measured: 0: want 1 to 100000 measured requests per client level; or leave the field out for the default 8"},
		{"n_predict 0", set("n_predict", 0), "n_predict: 0: want at least 2 tokens per request (the inter-token latency needs two); or leave the field out for the default 64"},
		{"ctx_per_slot 0", set("ctx_per_slot", 0), "ctx_per_slot: 0: want a positive context per slot larger than n_predict (4), e.g. 2048; or leave the field out for the default 2048"},
		{"completion_rate_min 0", limit("completion_rate_min", 0), "limits.completion_rate_min: 0: want a fraction in (0, 1], e.g. 1.0; or leave the field out for the default 1"},
		{"knee_threshold 0", set("knee_threshold", 0), "knee_threshold: 0: want a positive gain per doubling in (0, 10], e.g. 0.2 for 20%; or leave the field out for the default 0.2"},
		{"passes []", set("passes", []string{}), "passes: empty; give forward and/or reverse"},
	} {
		cases = append(cases, capacityRefusal{name: "register " + z.name, flags: []string{"-t", "1"}, edit: z.edit, args: register, want: "sparkbench capacity register: refused: " + z.want})
	}
	// an unknown key is located at itself: "measured" is a field at the top, not in limits
	cases = append(cases, capacityRefusal{name: "validate unknown key", args: validate,
		raw:  "{\n  \"schema\": \"sparkbench.capacity/v1\",\n  \"measured\": 8,\n  \"limits\": {\"ttft_ms_p95_max\": 1,\n      \"measured\": 3}\n}\n",
		want: `unknown key.json:5:7: unknown field "measured"; check its spelling against docs/capacity.md`})

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) { refusedCase(t, i, c, dir, model, nb, before) })
	}
	t.Logf("capacity refusal matrix: %d cases", len(cases))
}

// refusedCase runs one case of TestFaultsCapacityRefused: refused with its exact line, nothing
// written.
func refusedCase(t *testing.T, i int, c capacityRefusal, dir, model, nb string, before store.Stats) {
	{
		var plan string
		if c.raw != "" {
			plan = filepath.Join(dir, "unknown key.json")
			if err := os.WriteFile(plan, []byte(c.raw), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			plan = faultPlan(t, dir, fmt.Sprintf("refused-%d", i), model, c.flags, c.edit)
		}
		want := c.want
		if strings.HasPrefix(want, "error: ") { // validate and register print problems as FILE: error: PATH: MSG
			want = plan + ": " + want
		}
		if strings.HasPrefix(want, "unknown key.json") {
			want = "sparkbench capacity validate: " + filepath.Join(dir, want)
		}
		code, out, errOut := runCLI(c.args(plan)...)
		if code != 2 || !containsLine(errOut, want) {
			t.Errorf("%s: exit %d, stdout %q\nstderr %q\nwant line %q", c.name, code, out, errOut, want)
		}
		tablesUnchanged(t, c.name, nb, before)
		if _, err := os.Stat(filepath.Join(dir, "never")); err == nil {
			t.Fatalf("%s: a run folder was made", c.name)
		}
	}
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestFaultsCapacityRunFlags: `capacity run` has one flag set for an id and a plan file, and its
// --help documents every flag.
func TestFaultsCapacityRunFlags(t *testing.T) {
	code, out, errOut := runCLI("capacity", "run", "--help")
	if code != 0 || out != "" {
		t.Fatalf("--help: exit %d, stdout %q", code, out)
	}
	for _, f := range []string{"-notebook", "-fresh", "-resume", "-out", "-llama-dir", "-quality-cases", "-start-timeout", "-request-timeout", "-grace", "-json"} {
		if !strings.Contains(errOut, "\n  "+f+" ") && !strings.Contains(errOut, "\n  "+f+"\n") {
			t.Errorf("--help does not document %s:\n%s", f, errOut)
		}
	}
	if !strings.HasPrefix(errOut, "usage: sparkbench "+capacityRunUsage+"\n") {
		t.Errorf("--help starts %q", errOut)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	nb := filepath.Join(dir, "nb.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		// a plan file takes --fresh (it always starts a new folder unless --resume)
		{[]string{missing, "--fresh"}, "sparkbench capacity run: read plan: open " + missing + ": no such file or directory"},
		{[]string{missing, "--fresh", "--resume", dir}, "sparkbench capacity run: --fresh starts a new run folder and --resume continues one: give one of them"},
		// an id takes --resume only to say what it does instead
		{[]string{"7", "--resume", dir, "--notebook", nb}, "sparkbench capacity run: --resume DIR resumes a notebook-free run folder of a plan file; a study resumes its own last run folder (`sparkbench capacity run ID`), and --fresh starts a new one"},
		{[]string{"7", "--out", dir, "--resume", dir}, "sparkbench capacity run: give --out (a new run folder) or --resume (an existing one), not both"},
		{[]string{}, "sparkbench capacity run: want one study id (or name) or one plan file: `sparkbench " + capacityRunUsage + "`"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(append([]string{"capacity", "run"}, c.args...)...)
			if code != 2 || !containsLine(errOut, c.want) {
				t.Errorf("%v: exit %d, stderr %q\nwant line %q", c.args, code, errOut, c.want)
			}
		})
	}
	if _, err := os.Stat(nb); err == nil {
		t.Error("a refused run opened the notebook")
	}
}

// TestFaultsCapacityFaultyServers: a llama-server that exits 1 at start, segfaults, reports it
// could not bind, or hangs ignoring SIGTERM: every lifetime is recorded as failed with its
// reason, the run goes on to the next one, and ends incomplete (exit 1) listing them, both
// notebook-free (run.json's incomplete) and through the notebook (status incomplete, the
// capacity.incomplete entry, no assembled result, no verdict).
func TestFaultsCapacityFaultyServers(t *testing.T) {
	loc := llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	bind := `port=""; while [ $# -gt 0 ]; do [ "$1" = --port ] && port=$2; shift; done
echo "0.00.027.858 E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: $port" >&2
echo "0.00.028.039 E srv  llama_server: exiting due to HTTP server error" >&2
exit 1`
	cases := []struct {
		name, body string
		reason     string // in each lifetime's reason
		class      string
	}{
		{"exit 1", "echo 'error: injected start failure' >&2; exit 1", "llama-server did not become healthy: llama-server exited during start-up: ", "failed"},
		{"segfault", "kill -SEGV $$", "llama-server did not become healthy: llama-server exited during start-up: ", "crashed"},
		{"bind failure", bind, "llama-server did not become healthy: port in use on 3 attempts (last ", "failed"},
		{"hang", "trap '' TERM; while :; do sleep 1; done", "llama-server did not become healthy: /health did not answer 200 within 1s", "timeout"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin := fakeServerDir(t, loc.Server, loc.Bench, c.body)
			plan := faultPlan(t, dir, fmt.Sprintf("faulty-%d", i), model, []string{"-t", "1"}, nil)
			common := []string{"--llama-dir", bin, "--start-timeout", "1s", "--grace", "200ms"}
			// notebook-free
			out := filepath.Join(dir, fmt.Sprintf("free-%d", i))
			code, stdout, errOut := runCLI(append([]string{"capacity", "run", plan, "--no-notebook", "--out", out}, common...)...)
			checkIncomplete(t, "notebook-free", code, stdout, errOut, c.reason, "sparkbench capacity run: incomplete: 2 of 2 server lifetimes ended without results: forward/fake/p1 (")
			if strings.Contains(errOut, capacity.RunRSSFile) {
				t.Errorf("the message is about %s: %s", capacity.RunRSSFile, errOut)
			}
			var rep capacity.RunReport
			if err := json.Unmarshal(readFileT(t, filepath.Join(out, capacity.RunManifestFile)), &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Incomplete) != 2 || rep.Incomplete[0].Key != "forward/fake/p1" || rep.Incomplete[1].Key != "forward/fake/p2" ||
				rep.Incomplete[0].Class != c.class || !strings.HasPrefix(rep.Incomplete[1].Reason, c.reason) || !strings.HasPrefix(rep.Error, "incomplete: ") {
				t.Errorf("run.json: incomplete %+v error %q", rep.Incomplete, rep.Error)
			}
			// through the notebook
			nb := filepath.Join(dir, fmt.Sprintf("nb-%d.db", i))
			code, stdout, errOut = runCLI(append([]string{"capacity", "run", plan, "--notebook", nb, "--out", filepath.Join(dir, fmt.Sprintf("nb-run-%d", i))}, common...)...)
			checkIncomplete(t, "notebook", code, stdout, errOut, c.reason, "sparkbench capacity run: study 1 incomplete: 2 of 2 server lifetimes ended without results: forward/fake/p1 (")
			checkIncompleteStudy(t, nb, 2)
		})
	}
}

func readFileT(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkIncomplete(t *testing.T, how string, code int, stdout, errOut, reason, first string) {
	t.Helper()
	t.Logf("%s: exit %d, stderr:\n%s", how, code, errOut)
	if code != 1 {
		t.Errorf("%s: exit %d, want 1\n%s", how, code, errOut)
	}
	var line string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, first) {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, first+reason) || !strings.Contains(line, "; forward/fake/p2 ("+reason) {
		t.Errorf("%s: no incomplete line %q…%q in\n%s", how, first, reason, errOut)
	}
	if strings.Contains(stdout+errOut, "complete, ") || strings.Contains(errOut, "halted") {
		t.Errorf("%s: said complete or halted:\n%s\n%s", how, stdout, errOut)
	}
}

// checkIncompleteStudy: the study's status is incomplete, its capacity.incomplete entry lists
// the lifetimes, and nothing assembled or decided is journaled.
func checkIncompleteStudy(t *testing.T, nbPath string, lifetimes int) {
	t.Helper()
	nb, err := store.OpenWith(nbPath, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	st, err := nb.Study(t.Context(), 1)
	if err != nil || st.Status != store.StatusIncomplete {
		t.Errorf("study status %q (%v), want incomplete", st.Status, err)
	}
	if n := countJournal(t, nb, 1, capacity.NoteIncomplete); n != 1 {
		t.Errorf("%d %s entries", n, capacity.NoteIncomplete)
	}
	for _, k := range []string{capacity.NoteAssembled, "verdict"} {
		if n := countJournal(t, nb, 1, k); n != 0 {
			t.Errorf("%d %s entries in an incomplete study", n, k)
		}
	}
	es, _ := nb.Journal(t.Context(), 1, 0, 0)
	for _, e := range es {
		if e.Kind == capacity.NoteIncomplete {
			var n struct {
				Lifetimes []capacity.IncompleteLifetime `json:"lifetimes"`
			}
			if json.Unmarshal(e.Payload, &n) != nil || len(n.Lifetimes) != lifetimes {
				t.Errorf("%s payload %s", capacity.NoteIncomplete, e.Payload)
			}
		}
	}
}

// TestFaultsCapacityRealServerIncomplete: on the real llama-server, one candidate serves and one
// cannot load its model. The run ends incomplete (exit 1) naming the broken lifetimes; the
// study.json assembled from the rest is for inspection only (nothing journaled as assembled,
// no verdict); the next `capacity run ID` keeps the lifetime with results and measures the
// broken ones again, and is incomplete again.
func TestFaultsCapacityRealServerIncomplete(t *testing.T) {
	loc := llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	broken := filepath.Join(dir, "broken.gguf")
	if err := os.WriteFile(broken, []byte("not a model at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := faultPlan(t, dir, "real-incomplete", model, []string{"-t", llamatest.Threads}, func(m map[string]any) {
		m["slots"] = []int{1}
		c := m["candidates"].([]any)
		c[0].(map[string]any)["id"] = "dense"
		c = append(c, map[string]any{"id": "broken", "label": "broken", "model": map[string]any{"path": broken, "sha256": capacitySHA(t, broken)},
			"server_flags": []string{"-t", llamatest.Threads}})
		m["candidates"] = c
		m["predictions"] = []any{map[string]any{"id": "P1", "text": "dense generates", "kind": "band",
			"about": map[string]any{"figure": "cell_rate", "candidate": "dense", "slots": 1, "clients": 1}, "lo": 0}}
	})
	nb := filepath.Join(dir, "nb.db")
	code, stdout, errOut := runCLI("capacity", "run", plan, "--notebook", nb, "--llama-dir", loc.Dir, "--out", filepath.Join(dir, "run"))
	first := "sparkbench capacity run: study 1 incomplete: 1 of 2 server lifetimes ended without results: forward/broken/p1 (llama-server did not become healthy: llama-server exited during start-up: "
	if code != 1 || !strings.Contains(errOut, first) || !strings.Contains(errOut, "invalid magic characters") ||
		!containsLine(errOut, "sparkbench capacity run: fix the cause, then `sparkbench capacity run 1` measures those lifetimes again (--fresh starts over in a new run folder)") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "run", capacity.RunStudyFile)); err != nil {
		t.Errorf("no study.json for inspection: %v", err)
	}
	checkIncompleteStudy(t, nb, 1)
	// Run again: the dense lifetime is kept, the broken one measured again (still broken).
	code, stdout, errOut = runCLI("capacity", "run", "1", "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 1 || !strings.Contains(errOut, first) || !strings.Contains(errOut, "(resumed: 1 kept from before)") {
		t.Fatalf("second run: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
}

// The window's capacity Register refuses server_flags its build's llama-server does not know,
// before anything is written.
func TestFaultsWindowCapacityRegisterChecksServerFlags(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb, err := store.Open(filepath.Join(dir, "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	p, err := capacity.Load(faultPlan(t, dir, "window", llamatest.Model(t, "tiny-llama-f32.gguf"), []string{"-t", "1", "--no-such-flag"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	svc := capacityService{nb: nb, llamaDir: loc.Dir, dataDir: filepath.Join(dir, "data")}
	_, err = svc.RegisterCapacity(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), `candidates[0].server_flags[2]: "--no-such-flag" is not a flag of llama-server`) {
		t.Fatalf("register: %v", err)
	}
	if st, _ := nb.Stats(context.Background()); st.Tables["studies"] != 0 {
		t.Fatalf("a refused plan was registered: %v", st.Tables)
	}
}
