package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// Fault matrix, the command line (issue 30: items 8, 10 and 12, and the vague answers made
// precise): help on every command group, a bare number as a study reference and as a study
// name, a model path llama-bench cannot open, impossible numbers given to analyze, a plan
// with a byte order mark, a file that is no llama.cpp log, a metric no study has, and a
// SIGHUP in the middle of a study run. Each case drives the real CLI and asserts the exit
// status, the exact message and, where nothing may be written, an unchanged notebook.

// TestFaultsCLIHelp: every command that takes a verb answers --help and -h with its usage on
// stdout, exit 0 (it said `unknown verb "--help"`, exit 2); `sparkbench --version` prints the
// version and `sparkbench -h` the command list (both printed the window's flags).
func TestFaultsCLIHelp(t *testing.T) {
	groups := []string{"capacity", "host", "analyze", "serving", "model", "quant", "finding",
		"study", "notebook", "log", "leg", "batched", "overview", "fleet"}
	for _, g := range groups {
		for _, h := range []string{"--help", "-h"} {
			t.Run(g+h, func(t *testing.T) {
				code, out, errOut := runCLI(g, h)
				if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage:\n  sparkbench "+g+" ") ||
					!strings.HasSuffix(out, "Each verb's flags: sparkbench "+g+" VERB --help\n") {
					t.Errorf("sparkbench %s %s: exit %d\nstdout %q\nstderr %q", g, h, code, out, errOut)
				}
			})
		}
	}
	t.Run("capacity usage names every verb", func(t *testing.T) {
		_, out, _ := runCLI("capacity", "--help")
		for _, v := range verbs["capacity"].list {
			if !strings.Contains(out, "\n  sparkbench capacity "+v+" ") {
				t.Errorf("capacity --help lacks the verb %s:\n%s", v, out)
			}
		}
	})
	t.Run("version", func(t *testing.T) {
		for _, f := range []string{"--version", "-version"} {
			code, out, errOut := runCLI(f)
			if code != 0 || errOut != "" || !regexp.MustCompile(`^sparkbench \S+ go\S+ \S+/\S+\n$`).MatchString(out) {
				t.Errorf("sparkbench %s: exit %d, stdout %q, stderr %q", f, code, out, errOut)
			}
		}
	})
	t.Run("top-level help", func(t *testing.T) {
		for _, f := range []string{"-h", "--help", "-help"} {
			code, out, errOut := runCLI(f)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "sparkbench — a workbench") ||
				!strings.Contains(out, "`sparkbench gui --help` the window's flags") {
				t.Errorf("sparkbench %s: exit %d, stdout %q, stderr %q", f, code, out, errOut)
			}
		}
	})
	t.Run("an unknown verb is still refused", func(t *testing.T) {
		if code, out, errOut := runCLI("capacity", "--halp"); code != 2 || out != "" || !strings.HasPrefix(errOut, "sparkbench capacity: unknown verb \"--halp\"") {
			t.Errorf("capacity --halp: exit %d, %q %q", code, out, errOut)
		}
	})
}

// TestFaultsCLIAnalyzeImpossible: analyze refuses a negative depth, a rate not above 0 and a
// result that is not a finite number (it printed "crosses 70 at about -2", -180% and +Inf t/s,
// exit 0).
func TestFaultsCLIAnalyzeImpossible(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"negative depth", []string{"analyze", "crossing", "--line", "70", "--points", "-5:92,10:-3"},
			`sparkbench analyze crossing: --points item 1 "-5:92": depth -5 is negative; a depth counts the tokens already in the KV cache, 0 or more`},
		{"negative rate", []string{"analyze", "crossing", "--line", "70", "--points", "0:92,10:-3"},
			`sparkbench analyze crossing: --points item 2 "10:-3": rate -3 t/s is not above 0; a measured rate is positive`},
		{"slope of a negative rate", []string{"analyze", "slope", "--points", "0:-100,512:80"},
			`sparkbench analyze slope: --points item 1 "0:-100": rate -100 t/s is not above 0; a measured rate is positive`},
		{"slope of a zero rate", []string{"analyze", "slope", "--points", "0:100,512:0"},
			`sparkbench analyze slope: --points item 2 "512:0": rate 0 t/s is not above 0; a measured rate is positive`},
		{"infinite point", []string{"analyze", "slope", "--points", "0:100,512:inf"},
			`sparkbench analyze slope: --points item 2 "512:inf": (512, +Inf) is not a finite number`},
		{"infinite ceiling", []string{"analyze", "ceiling", "--bandwidth", "1e308", "--active-bytes", "1e-300"},
			"sparkbench analyze ceiling: the ceiling comes out as +Inf: the inputs are out of any real range (check their units)"},
		{"vanishing ceiling", []string{"analyze", "ceiling", "--bandwidth", "1e-300", "--active-bytes", "1e300"},
			"sparkbench analyze ceiling: the ceiling comes out as 0: the inputs are out of any real range (check their units)"},
		{"infinite bandwidth", []string{"analyze", "ceiling", "--bandwidth", "inf", "--active-bytes", "1e9"},
			"sparkbench analyze ceiling: --bandwidth must be a positive GB/s, e.g. --bandwidth 220"},
		{"negative observed", []string{"analyze", "ceiling", "--bandwidth", "220", "--active-bytes", "9e9", "--observed", "-3"},
			"sparkbench analyze ceiling: --observed must be a rate in t/s, 0 or more (e.g. --observed 21.5)"},
		{"infinite line", []string{"analyze", "crossing", "--line", "inf", "--points", "0:92,10:60"},
			"sparkbench analyze crossing: --line must be a positive t/s, e.g. --line 70"},
		{"a stray negative number", []string{"analyze", "slope", "--points", "0:100,512:80", "-3"},
			"sparkbench analyze slope: unexpected argument \"-3\": it takes flags only (see `sparkbench analyze slope --help`)"},
		{"a negative number for the window", []string{"-5"},
			"sparkbench: unexpected argument \"-5\": the window takes flags only (`sparkbench gui --help`); `sparkbench help` lists the commands"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 || out != "" || errOut != c.want+"\n" {
				t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant   %q", strings.Join(c.args, " "), code, out, errOut, c.want)
			}
		})
	}
	// The possible ones still answer.
	if code, out, _ := runCLI("analyze", "crossing", "--line", "70", "--points", "0:92,10:60"); code != 0 || out != "crosses 70 at about 7 (between 92@0 and 60@10)\n" {
		t.Errorf("a real crossing: %d %q", code, out)
	}
}

// cliPlan writes a one-model throughput plan named name for model.
func cliPlan(t *testing.T, dir, file, name, model string) string {
	t.Helper()
	plan := fmt.Sprintf("{\n  \"schema\": \"sparkbench.throughput/v1\",\n  \"name\": %q,\n  \"models\": [{\"id\": \"tiny\", \"path\": %q, \"sha256\": %q}],\n"+
		"  \"axes\": {\"depths\": [0], \"n_prompt\": [16], \"n_gen\": [4], \"reps\": 3, \"threads\": [1]}\n}\n", name, model, tinySHA)
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// renameStudy gives a study another name behind the store's back, as a notebook written
// before bare numbers were refused as names may hold one.
func renameStudy(t *testing.T, nb string, id int64, name string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+nb+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE studies SET name = ? WHERE id = ?", name, id); err != nil {
		t.Fatal(err)
	}
}

// TestFaultsCLIStudyReferences (item 8): a bare number is an ID; a name that is a bare number
// is refused at registration for every kind, at its file:line:col; a notebook that already
// holds such a name (an older version registered it) refuses the ambiguous bare number,
// naming both studies, and reaches each by id:N or name:TEXT; a number that is not an ID says
// so. Nothing is written by a refusal.
func TestFaultsCLIStudyReferences(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	for i, name := range []string{"probe", "second", "third"} {
		code, out, errOut := runCLI("study", "register", cliPlan(t, dir, name+".json", name, tiny))
		if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("study %d %q registered", i+1, name)) {
			t.Fatalf("register %s: %d %q %q", name, code, out, errOut)
		}
	}
	// Study 3 is named "2", as an older version let a plan name it.
	renameStudy(t, nb, 3, "2")
	before := notebookCounts(t, nb)
	numeric := cliPlan(t, dir, "numeric.json", "2", tiny)
	signed := cliPlan(t, dir, "signed.json", "+7", tiny)

	refused := []struct {
		name string
		args []string
		want string
	}{
		{"ambiguous show", []string{"study", "show", "2"},
			`sparkbench study show: "2" is ambiguous: study 2 (second) has that ID and study 3 is named "2" (named before such names were refused); say id:2 or name:2; ` +
				"`sparkbench study register FILE` prints a new study's id"},
		{"ambiguous run", []string{"study", "run", "2"},
			`sparkbench study run: "2" is ambiguous: study 2 (second) has that ID and study 3 is named "2" (named before such names were refused); say id:2 or name:2; ` +
				"`sparkbench study register FILE` prints a new study's id"},
		{"ambiguous finding", []string{"finding", "add", "2", "--text", "a finding"},
			`sparkbench finding add: "2" is ambiguous: study 2 (second) has that ID and study 3 is named "2" (named before such names were refused); say id:2 or name:2; ` +
				"`sparkbench study register FILE` prints a new study's id"},
		{"negative id", []string{"study", "show", "-1"},
			`sparkbench study show: "-1" is not a study ID: study IDs are whole numbers from 1 (` + "`sparkbench study list` lists them); `sparkbench study register FILE` prints a new study's id"},
		{"negative id after a flag", []string{"study", "show", "--json", "-1"},
			`sparkbench study show: "-1" is not a study ID: study IDs are whole numbers from 1 (` + "`sparkbench study list` lists them); `sparkbench study register FILE` prints a new study's id"},
		{"zero id", []string{"study", "show", "0"},
			`sparkbench study show: "0" is not a study ID: study IDs are whole numbers from 1 (` + "`sparkbench study list` lists them); `sparkbench study register FILE` prints a new study's id"},
		{"no such id", []string{"study", "show", "9"},
			"sparkbench study show: no study has ID 9 in the notebook; `sparkbench study register FILE` prints a new study's id"},
		{"bad id:", []string{"study", "show", "id:x"},
			`sparkbench study show: "id:x": after id: give a study ID, a whole number from 1 (e.g. id:2); ` + "`sparkbench study register FILE` prints a new study's id"},
		{"register a numeric name", []string{"study", "register", numeric},
			"sparkbench study register: refused: " + numeric + `:3:11: name: the study name "2" is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. "probe 2")`},
		{"register a signed numeric name", []string{"study", "register", signed},
			"sparkbench study register: refused: " + signed + `:3:11: name: the study name "+7" is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. "probe +7")`},
		{"run a plan with a numeric name", []string{"run", numeric},
			"sparkbench study register: refused: " + numeric + `:3:11: name: the study name "2" is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. "probe 2")`},
		{"validate a numeric name", []string{"study", "validate", "--no-hash", numeric},
			numeric + `:3:11: error: name: the study name "2" is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. "probe 2")`},
		{"import rows into a numeric name", []string{"import", "--study", "5", benchSample(t, "bench-depth-jsonl.stdout")},
			`sparkbench import: the study name "5" is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. "probe 5"); nothing was imported`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 || out != "" || !containsLine(errOut, c.want) {
				t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant line %q", strings.Join(c.args, " "), code, out, errOut, c.want)
			}
			tablesUnchanged(t, c.name, nb, before)
		})
	}

	// Each study is reached by its ID, or explicitly by id:N or name:TEXT.
	for _, c := range []struct{ ref, want string }{
		{"id:2", `study 2 "second"`}, {"name:2", `study 3 "2"`}, {"3", `study 3 "2"`}, {"1", `study 1 "probe"`},
		{"probe", `study 1 "probe"`}, {"name:second", `study 2 "second"`},
	} {
		t.Run("show "+c.ref, func(t *testing.T) {
			code, out, errOut := runCLI("study", "show", c.ref)
			if code != 0 || !strings.HasPrefix(out, c.want+": registered") {
				t.Errorf("study show %s: exit %d, %q %q; want %s", c.ref, code, out, errOut, c.want)
			}
		})
	}
	// A bare number that is no ID but a name of an old notebook: refused, saying how to reach it.
	renameStudy(t, nb, 3, "7")
	t.Run("a number that is only a name", func(t *testing.T) {
		code, out, errOut := runCLI("study", "show", "7")
		want := `sparkbench study show: no study has ID 7, but study 3 is named "7" (named before such names were refused): a bare number is an ID; say name:7 or 3; ` +
			"`sparkbench study register FILE` prints a new study's id\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("exit %d, %q\n%q\nwant %q", code, out, errOut, want)
		}
	})
}

// TestFaultsCLINumericNameEveryKind: a capacity plan and a quantization ladder named by a bare
// number are refused as a throughput plan is, at the name's line and column.
func TestFaultsCLINumericNameEveryKind(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	if code, _, errOut := runCLI("study", "register", cliPlan(t, dir, "probe.json", "probe", tiny)); code != 0 {
		t.Fatalf("register: %s", errOut)
	}
	before := notebookCounts(t, nb)
	capPlan := faultPlan(t, dir, "cap", tiny, nil, func(m map[string]any) { m["name"] = "12" })
	quant, err := os.ReadFile(filepath.Join(llamatest.RepoRoot(), "docs", "examples", "quant-ladder.json"))
	if err != nil {
		t.Fatal(err)
	}
	quantPlan := filepath.Join(dir, "quant.json")
	if err := os.WriteFile(quantPlan, regexp.MustCompile(`"name": "[^"]*"`).ReplaceAll(quant, []byte(`"name": "0042"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	ql, qc := lineColOf(t, quantPlan, `"0042"`)
	cl, cc := lineColOf(t, capPlan, `"12"`)
	msg := func(name string) string {
		return `name: the study name "` + name + `" is a bare number, which every command reads as a study ID; give the study a name with a letter in it (e.g. "probe ` + name + `")`
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"capacity register", []string{"capacity", "register", capPlan}, fmt.Sprintf("sparkbench capacity register: refused: %s:%d:%d: %s", capPlan, cl, cc, msg("12"))},
		{"capacity validate", []string{"capacity", "validate", "--no-hash", capPlan}, fmt.Sprintf("%s:%d:%d: error: %s", capPlan, cl, cc, msg("12"))},
		{"quant validate", []string{"study", "validate", "--no-hash", quantPlan}, fmt.Sprintf("%s:%d:%d: error: %s", quantPlan, ql, qc, msg("0042"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 || !containsLine(errOut, c.want) {
				t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant line %q", strings.Join(c.args, " "), code, out, errOut, c.want)
			}
			tablesUnchanged(t, c.name, nb, before)
		})
	}
}

// lineColOf is the 1-based line and column where s first occurs in the file.
func lineColOf(t *testing.T, file, s string) (int, int) {
	t.Helper()
	b := readFileT(t, file)
	i := bytes.Index(b, []byte(s))
	if i < 0 {
		t.Fatalf("%s holds no %s", file, s)
	}
	line := 1 + bytes.Count(b[:i], []byte("\n"))
	return line, i - bytes.LastIndexByte(b[:i], '\n')
}

// TestFaultsCLIModelPathComma (item 10): a model whose path holds a comma is refused when the
// plan is checked, at the path's line and column (llama-bench would split it: "failed to open
// GGUF file '…/a'").
func TestFaultsCLIModelPathComma(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	if code, _, errOut := runCLI("study", "register", cliPlan(t, dir, "probe.json", "probe", tiny)); code != 0 {
		t.Fatalf("register: %s", errOut)
	}
	before := notebookCounts(t, nb)
	folder := filepath.Join(dir, "a,b")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(folder, "tiny.gguf")
	if err := os.WriteFile(model, readFileT(t, tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := cliPlan(t, dir, "comma.json", "comma", model)
	msg := fmt.Sprintf("models[0].path: %s contains a comma, and llama-bench splits -m on commas (it would try to open %s): rename the file, or the folder, without one", model, filepath.Join(dir, "a"))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"register", []string{"study", "register", plan}, "sparkbench study register: refused: " + plan + ":4:37: " + msg},
		{"run", []string{"study", "run", plan}, "sparkbench study register: refused: " + plan + ":4:37: " + msg},
		{"validate", []string{"study", "validate", plan}, plan + ":4:37: error: " + msg},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 || !containsLine(errOut, c.want) {
				t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant line %q", strings.Join(c.args, " "), code, out, errOut, c.want)
			}
			tablesUnchanged(t, c.name, nb, before)
		})
	}
}

// TestFaultsCLIPlanBOM: a plan saved with a UTF-8 byte order mark is refused naming the BOM
// (it said "invalid character 'ï' looking for beginning of value"), for every kind's plan.
func TestFaultsCLIPlanBOM(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	if code, _, errOut := runCLI("study", "register", cliPlan(t, dir, "probe.json", "probe", tiny)); code != 0 {
		t.Fatalf("register: %s", errOut)
	}
	before := notebookCounts(t, nb)
	bom := func(src, name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, append([]byte("\xef\xbb\xbf"), readFileT(t, src)...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	through := bom(cliPlan(t, dir, "other.json", "other", tiny), "bom.json")
	capPlan := bom(faultPlan(t, dir, "cap", tiny, nil, nil), "cap-bom.json")
	const why = ":1:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON does not allow; save it as UTF-8 without a BOM"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"study register", []string{"study", "register", through}, "sparkbench study register: " + through + why},
		{"capacity register", []string{"capacity", "register", capPlan}, "sparkbench capacity register: " + capPlan + why},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 || out != "" || errOut != c.want+"\n" {
				t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant   %q", strings.Join(c.args, " "), code, out, errOut, c.want)
			}
			tablesUnchanged(t, c.name, nb, before)
		})
	}
}

// TestFaultsCLILogInspectNotALog: `log inspect` of a file with no llama.cpp line says so,
// exit 2 (it printed "devices: none named", exit 0, as if a log had named none).
func TestFaultsCLILogInspectNotALog(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n192.168.1.5\tbench\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"log", "inspect", hosts}, {"log", "inspect", "--json", hosts}} {
		code, out, errOut := runCLI(args...)
		want := "sparkbench log inspect: " + hosts + ": found no llama.cpp log in its 3 lines (no model load block, device, buffer, offload or timing line); give the log of a llama-server, llama-cli or llama-bench -v run\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("%v: exit %d, stdout %q\nstderr %q\nwant   %q", args, code, out, errOut, want)
		}
	}
}

// TestFaultsCLIRunNotebook: on a notebook that ran a study on the real llama-bench, `plot
// --metric bogus` lists the metrics (it said "no bogus results yet"), and an overview bundle
// given to `import` is refused naming its kind (it said "bundle.json is missing from the
// bundle"); neither writes anything.
func TestFaultsCLIRunNotebook(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	// The plan TestOverviewReceipt runs (long enough tests, gates at 100%: a result under load).
	id := registerAndRun(t, nb, writeOverviewPlan(t, dir, "cli faults", [][3]string{{"tiny", llamatest.Model(t, "tiny-llama-f32.gguf"), tinySHA}}), loc.Dir, true)
	var tests []string
	for _, c := range showJSON(t, id, nb).Results {
		if !slices.Contains(tests, c.Test) {
			tests = append(tests, c.Test)
		}
	}
	slices.Sort(tests)
	have := strings.Join(tests, ", ")
	if have == "" {
		have = "none yet"
	}
	before := notebookCounts(t, nb)
	chart := filepath.Join(dir, "chart.png")
	t.Run("plot --metric bogus", func(t *testing.T) {
		code, stdout, errOut := runCLI("plot", id, "--kind", "depth", "--metric", "bogus", "--out", chart)
		want := fmt.Sprintf("sparkbench plot: --metric \"bogus\" is not a metric of study %s: give tg, pp or pg (every test of that kind) or one of its tests (%s)\n", id, have)
		if code != 2 || stdout != "" || errOut != want {
			t.Errorf("exit %d, stdout %q\nstderr %q\nwant   %q", code, stdout, errOut, want)
		}
		if _, err := os.Stat(chart); !os.IsNotExist(err) {
			t.Errorf("a chart was written: %v", err)
		}
		tablesUnchanged(t, "plot", nb, before)
	})
	t.Run("import an overview bundle", func(t *testing.T) {
		bundle := filepath.Join(dir, "overview")
		if code, _, errOut := runCLI("overview", "receipt", "--out", bundle); code != 0 {
			t.Fatalf("overview receipt: %d %s", code, errOut)
		}
		before := notebookCounts(t, nb)
		code, stdout, errOut := runCLI("import", bundle)
		want := "sparkbench import: " + bundle + ": an overview bundle (the figures across a notebook's studies, from `sparkbench overview receipt`) is not a study: " +
			"only throughput, capacity and quantization ladder study bundles are imported as studies; keep it and check it with `sparkbench verify`; nothing was imported\n"
		if code != 2 || stdout != "" || errOut != want {
			t.Errorf("exit %d, stdout %q\nstderr %q\nwant   %q", code, stdout, errOut, want)
		}
		tablesUnchanged(t, "import overview", nb, before)
	})
}

// TestFaultsStudyRunSIGHUP: a SIGHUP (the terminal or ssh session closed) in the middle of a
// leg stops `study run` as Ctrl-C does: the leg is recorded as interrupted, the run halted
// with its record and a message, no llama-bench left behind, and the next run resumes. It
// exited 129 silently and left the study "running".
func TestFaultsStudyRunSIGHUP(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	// A llama-bench that sleeps before each leg (its flag and device queries go straight to
	// the real one): the signal lands while a leg runs. The sleep's odd argument marks it, so
	// a leftover is found by its command line.
	fake := filepath.Join(dir, "bin")
	if err := os.Mkdir(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" -m \"*) sleep 31.4159 ;; esac\nexec %q \"$@\"\n", loc.Bench)
	if err := os.WriteFile(filepath.Join(fake, "llama-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loc.Server, filepath.Join(fake, "llama-server")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("study", "register", cliPlan(t, dir, "hup.json", "hup", tiny), "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s", code, errOut)
	}
	id := registeredID(t, out)

	cmd := exec.Command(os.Args[0], "-test.run=^TestStudyHelperProcess$")
	cmd.Env = append(os.Environ(), studyHelperEnv+"="+strings.Join([]string{"study", "run", id, "--notebook", nb, "--llama-dir", fake}, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr bytes.Buffer
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var seen []string
	sent := false
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), "leg 1/1 tiny started: ") {
			time.Sleep(300 * time.Millisecond) // the leg's process group is up
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			sent = true
			break
		}
	}
	rest, _ := io.ReadAll(stdout)
	seen = append(seen, strings.Split(strings.TrimSpace(string(rest)), "\n")...)
	err = cmd.Wait()
	if !sent {
		t.Fatalf("the leg never started:\n%s\n%s", strings.Join(seen, "\n"), childErr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1 (stopped)\nstdout %s\nstderr %s", err, strings.Join(seen, "\n"), childErr.String())
	}
	want := "sparkbench study run: study stopped before its last leg: stopped by the user during tiny; run `sparkbench study run " + id + "` to resume at the first unfinished leg\n"
	if childErr.String() != want {
		t.Errorf("stderr %q\nwant   %q", childErr.String(), want)
	}
	if !containsLine(strings.Join(seen, "\n"), "halted: stopped by the user during tiny") {
		t.Errorf("stdout does not say the run halted:\n%s", strings.Join(seen, "\n"))
	}
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := n.Study(context.Background(), mustAtoi(t, id))
	if err != nil {
		t.Fatal(err)
	}
	legs, err := store.StudyRecorder{N: n}.Legs(context.Background(), s.ID)
	n.Close()
	if err != nil {
		t.Fatal(err)
	}
	// As after Ctrl-C: the leg ended stopped by the user (its llama-bench sent SIGTERM), no rows.
	if s.Status != store.StatusHalted || len(legs) != 1 || legs[0].Class != "stopped_by_user" || legs[0].Signal != "SIGTERM (terminated)" || legs[0].Rows != 0 {
		t.Errorf("after SIGHUP: study %s, legs %+v; want halted with one leg stopped by the user", s.Status, legs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for sleeperLeft(fake) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if sleeperLeft(fake) {
		t.Error("the stopped leg's llama-bench is still alive")
	}
}

// sleeperLeft reports whether a live process of TestFaultsStudyRunSIGHUP's fake llama-bench
// (the script in fake, or its sleep) is left.
func sleeperLeft(fake string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(fake)) && !bytes.Contains(b, []byte("sleep\x0031.4159")) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); !bytes.Contains(st, []byte(") Z ")) {
			return true
		}
	}
	return false
}
