package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/overview"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamatest"
)

const tinyF16SHA = "051f36703c755992aa490c43c53f5fbe1dc59fd3aa00ab436f0cedb2df135354"

// writeOverviewPlan writes a two-model plan at depths 0 and 256 on the CPU (-ngl 0, -t 1),
// with an entered bandwidth of 20 GB/s so every model has a ceiling. pp512, not a pp of a
// millisecond, whose repetitions a busy machine spreads past even a 100% CV gate.
func writeOverviewPlan(t *testing.T, dir, name string, models [][3]string) string {
	t.Helper()
	var ms []string
	for _, m := range models {
		ms = append(ms, fmt.Sprintf(`{"id": %q, "path": %q, "sha256": %q}`, m[0], m[1], m[2]))
	}
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [%s],
  "axes": {"depths": [0, 256], "n_prompt": [512], "n_gen": [128], "reps": 3, "threads": [1], "ngl": [0]},
  "split": "per_depth",
  "bandwidth": {"gbs": 20},
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, name, strings.Join(ms, ", "))
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// exportedTG is a study's tg rows as `sparkbench export --format json` prints them (a code
// path of its own): by model file, then depth, the mean and the row's reference.
func exportedTG(t *testing.T, nb, id string) map[string]map[int64]overview.Cell {
	t.Helper()
	code, out, errOut := runCLI("export", id, "--format", "json", "--notebook", nb)
	var rows []struct {
		LegID    int64   `json:"leg_id"`
		LegLabel string  `json:"leg_label"`
		Seq      int64   `json:"seq"`
		NPrompt  int64   `json:"n_prompt"`
		NGen     int64   `json:"n_gen"`
		NDepth   int64   `json:"n_depth"`
		AvgTs    float64 `json:"avg_ts"`
		Model    string  `json:"model_filename"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("export %s: %d %s %s", id, code, out, errOut)
	}
	m := map[string]map[int64]overview.Cell{}
	for _, r := range rows {
		if r.NPrompt != 0 || r.NGen == 0 {
			continue
		}
		f := filepath.Base(r.Model)
		if m[f] == nil {
			m[f] = map[int64]overview.Cell{}
		}
		m[f][r.NDepth] = overview.Cell{Study: mustAtoi(t, id), Leg: r.LegLabel, Row: fmt.Sprintf("leg %d seq %d", r.LegID, r.Seq), Depth: r.NDepth, TS: r.AvgTs}
	}
	return m
}

// flaggedLegs lists the legs of the studies with a flagged row (`study show --json`).
func flaggedLegs(t *testing.T, nb string, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		code, js, errOut := runCLI("study", "show", id, "--notebook", nb, "--json")
		var rep struct {
			Legs []struct {
				Label   string `json:"label"`
				Flagged int    `json:"flagged"`
			} `json:"legs"`
		}
		if code != 0 || json.Unmarshal([]byte(js), &rep) != nil {
			t.Fatalf("study show %s: %d %s", id, code, errOut)
		}
		for _, l := range rep.Legs {
			if l.Flagged > 0 {
				out = append(out, "study "+id+" "+l.Label)
			}
		}
	}
	return out
}

// handActiveBytes is the tensor-exact bytes per token of docs/domain.md, summed here from
// the tensor table: every non-expert tensor, token_embd.weight as one row (whole when there
// is no output.weight), expert tensors times used / experts.
func handActiveBytes(t *testing.T, path string) float64 {
	t.Helper()
	f, err := gguf.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	tied := true
	for _, x := range f.Tensors {
		tied = tied && x.Name != "output.weight"
	}
	for _, x := range f.Tensors {
		size := float64(x.Size)
		switch {
		case strings.Contains(x.Name, "_exps"):
			size = size * float64(f.ExpertUsedCount) / float64(f.ExpertCount)
		case x.Name == "token_embd.weight" && !tied:
			size /= float64(x.Shape[1])
		}
		total += size
	}
	return total
}

// TestOverviewOnRealStudies runs two small studies on the real llama-bench (-t 1, depths 0 and
// 256): study A measures tiny-llama-f32 and tiny-moe-f32, study B tiny-llama-f32 again and
// tiny-llama-f16. The line is set halfway between B's tiny tg at 0 and at 256, so the two
// conventions differ there and the badge dies at depth 128. Expected values come from the
// rows as `export` prints them and the tensor tables, not from the overview's code.
func TestOverviewOnRealStudies(t *testing.T) {
	loc := llamatest.Binaries(t)
	f32, moe, f16 := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf"), llamatest.Model(t, "tiny-llama-f16.gguf")
	var dir, nb, a, b string
	var rowsA, rowsB map[string]map[int64]overview.Cell
	for attempt := 1; ; attempt++ {
		dir = t.TempDir()
		nb = filepath.Join(dir, "notebook.db")
		a = registerAndRun(t, nb, writeOverviewPlan(t, dir, "overview A", [][3]string{{"tiny", f32, tinySHA}, {"moe", moe, moeSHA}}), loc.Dir, true)
		b = registerAndRun(t, nb, writeOverviewPlan(t, dir, "overview B", [][3]string{{"tiny", f32, tinySHA}, {"f16", f16, tinyF16SHA}}), loc.Dir, true)
		// A row above even a 100% CV gate (a busy machine) is flagged and does not count, and a
		// busy machine can make tg at 256 no slower than at 0 (no line between them); the
		// expected values below read every exported row, so run again on fresh notebooks, and
		// fail after cvAttempts runs.
		why := ""
		if flagged := flaggedLegs(t, nb, a, b); len(flagged) > 0 {
			why = fmt.Sprintf("rows flagged by the CV gate: %v", flagged)
		} else {
			rowsA, rowsB = exportedTG(t, nb, a), exportedTG(t, nb, b)
			if tinyB := rowsB["tiny-llama-f32.gguf"]; !(tinyB[256].TS < tinyB[0].TS) {
				why = fmt.Sprintf("tg at 256 (%g) is not below tg at 0 (%g): no line lies between them", tinyB[256].TS, tinyB[0].TS)
			}
		}
		if why == "" {
			break
		}
		if attempt == cvAttempts {
			t.Fatalf("in each of %d runs (last: %s)", cvAttempts, why)
		}
		t.Logf("attempt %d of %d: %s; running again on fresh notebooks", attempt, cvAttempts, why)
	}
	tinyB := rowsB["tiny-llama-f32.gguf"]
	line := (tinyB[0].TS + tinyB[256].TS) / 2

	// The badge table.
	code, out, errOut := runCLI("overview", "badges", "--notebook", nb, "--line", fmt.Sprint(line), "--deep", "8192", "--json")
	var bt struct {
		Studies []overview.StudyEntry `json:"studies"`
		overview.BadgeTable
	}
	if code != 0 || json.Unmarshal([]byte(out), &bt) != nil {
		t.Fatalf("overview badges: %d %s %s", code, out, errOut)
	}
	want := []struct {
		model, file string
		study       string
		cells       map[int64]overview.Cell
		others      string
	}{{"f16", "tiny-llama-f16.gguf", b, rowsB["tiny-llama-f16.gguf"], "[]"}, {"moe", "tiny-moe-f32.gguf", a, rowsA["tiny-moe-f32.gguf"], "[]"},
		{"tiny", "tiny-llama-f32.gguf", b, tinyB, "[" + a + "]"}}
	if len(bt.Rows) != len(want) || len(bt.Unresolved) != 0 || len(bt.Studies) != 2 {
		t.Fatalf("badge table: %s", out)
	}
	for i, w := range want {
		r := bt.Rows[i]
		d0, deep := w.cells[0], w.cells[256]
		if r.Model != w.model || r.File != w.file || fmt.Sprint(r.Study) != w.study || r.D0 != d0 || r.Deep == nil || *r.Deep != deep ||
			r.Backend != "CPU" || r.Test != "tg128" || fmt.Sprint(r.OtherStudies) != w.others || !strings.Contains(r.DeepNote, "256 (asked 8192)") {
			t.Errorf("row %d: %+v\nwant d0 %+v deep %+v", i, r, d0, deep)
			continue
		}
		// Depth 8192 was asked and 256 measured: "both depths" is never earned from 256's value;
		// it is refused when depth 0 is under the line, else not measured at 8192.
		bothWord := "not earned"
		if d0.TS >= line {
			bothWord = "undecided: not measured at 8192 (nearest measured depth 256)"
		}
		if r.D0Only.Earned != (d0.TS >= line) || r.BothDepths.Earned || !r.D0Only.Decided || r.BothDepths.Decided != (d0.TS < line) || r.BothDepths.Word != bothWord {
			t.Errorf("%s badges: %+v / %+v (d0 %g, deep %g, line %g)", w.model, r.D0Only, r.BothDepths, d0.TS, deep.TS, line)
		}
		switch {
		case d0.TS < line:
			if r.Death.Kind != "below_at_d0" {
				t.Errorf("%s death %+v, want below at d0", w.model, r.Death)
			}
		case deep.TS < line:
			x := (d0.TS - line) / (d0.TS - deep.TS) * 256
			if r.Death.Kind != "crossed" || r.Death.Depth == nil || math.Abs(*r.Death.Depth-x) > 1e-9 || *r.Death.From != d0 || *r.Death.To != deep {
				t.Errorf("%s death %+v, want crossed at %g", w.model, r.Death, x)
			}
		default:
			if r.Death.Kind != "not_in_range" || r.Death.Depth != nil || !strings.Contains(r.Death.Text, "beyond the deepest measured depth") {
				t.Errorf("%s death %+v, want beyond the deepest depth", w.model, r.Death)
			}
		}
	}
	tiny := bt.Rows[2]
	if !tiny.D0Only.Earned || tiny.BothDepths.Earned || tiny.BothDepths.Decided || tiny.Death.Depth == nil || math.Abs(*tiny.Death.Depth-128) > 1e-6 {
		t.Errorf("tiny (line halfway): d0 only %v, both %v, death %v; want earned, not measured at 8192, 128", tiny.D0Only.Word, tiny.BothDepths.Word, tiny.Death.Text)
	}
	// Asked at the depth measured, the badge is decided there: tiny's 256 is under the line.
	code, out, errOut = runCLI("overview", "badges", "--notebook", nb, "--line", fmt.Sprint(line), "--deep", "256", "--json")
	var at256 overview.BadgeTable
	if code != 0 || json.Unmarshal([]byte(out), &at256) != nil || len(at256.Rows) != 3 {
		t.Fatalf("overview badges --deep 256: %d %s %s", code, out, errOut)
	}
	if b := at256.Rows[2].BothDepths; !b.Decided || b.Earned || b.Word != "not earned" || at256.Rows[2].DeepNote != "" {
		t.Errorf("tiny at --deep 256: %+v (%q)", b, at256.Rows[2].DeepNote)
	}

	out = checkLadder(t, nb, tinyB, rowsA["tiny-moe-f32.gguf"], rowsB["tiny-llama-f16.gguf"], f32, moe, f16)

	// Deterministic: the same bytes again; the text form names the rows.
	if _, again, _ := runCLI("overview", "constants", "--notebook", nb, "--json"); again != out {
		t.Errorf("overview constants --json differs between two runs")
	}
	_, text, _ := runCLI("overview", "badges", "--notebook", nb, "--line", fmt.Sprint(line))
	for _, s := range []string{tinyB[0].Row, tinyB[256].Row, "also measured in studies " + a, "nearest measured depth 256 (asked 8192)"} {
		if !strings.Contains(text, s) {
			t.Errorf("badges text lacks %q:\n%s", s, text)
		}
	}
	overviewImported(t, dir, nb, a, rowsA)
}

// checkLadder checks `overview constants --json` against efficiencies computed by hand and
// returns its output.
func checkLadder(t *testing.T, nb string, tinyB, moeA, f16B map[int64]overview.Cell, f32, moe, f16 string) string {
	t.Helper()
	// The constants ladder: efficiency = tg at 0 / (20 GB/s / active bytes), by hand.
	eff := func(c overview.Cell, path string) float64 { return c.TS / (20e9 / handActiveBytes(t, path)) }
	eTiny, eMoe, eF16 := eff(tinyB[0], f32), eff(moeA[0], moe), eff(f16B[0], f16)
	code, out, errOut := runCLI("overview", "constants", "--notebook", nb, "--json")
	var ld struct {
		Studies []overview.StudyEntry `json:"studies"`
		overview.Ladder
	}
	if code != 0 || json.Unmarshal([]byte(out), &ld) != nil {
		t.Fatalf("overview constants: %d %s %s", code, out, errOut)
	}
	if len(ld.Constants) != 2 || len(ld.Unresolved) != 0 {
		t.Fatalf("ladder: %s", out)
	}
	f32c, f16c := ld.Constants[0], ld.Constants[1]
	lo, hi := math.Min(eTiny, eMoe), math.Max(eTiny, eMoe)
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if f32c.Architecture != "llama" || f32c.Quant != "ALL_F32" || f32c.Backend != "CPU" || f32c.N != 2 || f32c.Models != 2 || f32c.Studies != 2 ||
		!close(f32c.Median, (eTiny+eMoe)/2) || !close(f32c.Mean, (eTiny+eMoe)/2) || !close(f32c.Min, lo) || !close(f32c.Max, hi) {
		t.Errorf("F32 constant %+v; want n 2, median %g, %g–%g", f32c, (eTiny+eMoe)/2, lo, hi)
	}
	if f16c.Quant != "MOSTLY_F16" || f16c.N != 1 || !close(f16c.Median, eF16) || f16c.Members[0].D0 != f16B[0] {
		t.Errorf("F16 constant %+v; want %g from %+v", f16c, eF16, f16B[0])
	}
	refs := map[string]bool{}
	for _, m := range f32c.Members {
		refs[m.D0.Row] = true
	}
	if !refs[tinyB[0].Row] || !refs[moeA[0].Row] {
		t.Errorf("F32 members cite %v, want %s and %s", refs, tinyB[0].Row, moeA[0].Row)
	}

	return out
}

// overviewImported: study A exported as a receipt and imported into a fresh notebook shows in
// the badge table flagged as imported, with the same rows' values (the plan's model paths are
// absolute, so the ladder reads the same files here and flags its members as imported).
func overviewImported(t *testing.T, dir, nb, a string, rowsA map[string]map[int64]overview.Cell) {
	t.Helper()
	bundle := filepath.Join(dir, "a.tar.gz")
	if code, out, errOut := runCLI("receipt", a, "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	nb2 := filepath.Join(dir, "home.db")
	if code, out, errOut := runCLI("import", bundle, "--notebook", nb2); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runCLI("overview", "badges", "--notebook", nb2, "--json")
	var bt struct {
		Studies []overview.StudyEntry `json:"studies"`
		overview.BadgeTable
	}
	if code != 0 || json.Unmarshal([]byte(out), &bt) != nil || len(bt.Rows) != 2 || len(bt.Studies) != 1 || !bt.Studies[0].Imported {
		t.Fatalf("imported badges: %d %s %s", code, out, errOut)
	}
	for _, r := range bt.Rows {
		if !r.Imported || r.ImportedFrom == "" || r.D0.TS != rowsA[r.File][0].TS || r.Deep == nil || r.Deep.TS != rowsA[r.File][256].TS {
			t.Errorf("imported row %+v", r)
		}
	}
	code, out, _ = runCLI("overview", "constants", "--notebook", nb2)
	if code != 0 || !strings.Contains(out, "; study 1 (imported) ") || !strings.Contains(out, "(1 imported)") {
		t.Errorf("imported constants: %d %s", code, out)
	}
}

// TestOverviewBadInput: options that are not numbers or not positive, a test that is not tg,
// an argument, a notebook without throughput results, a missing notebook.
func TestOverviewBadInput(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"badges", "--line", "0"}, 2, `--line "0": want a positive number`},
		{[]string{"badges", "--line", "-70"}, 2, `--line "-70": want a positive number`},
		{[]string{"badges", "--line", "fast"}, 2, `--line "fast": want a positive number`},
		{[]string{"badges", "--line", "NaN"}, 2, `--line "NaN": want a positive number`},
		{[]string{"badges", "--deep", "0"}, 2, `--deep "0": want a positive whole number`},
		{[]string{"badges", "--test", "pp512"}, 2, `test "pp512": want a token-generation test`},
		{[]string{"constants", "extra"}, 2, "takes no arguments"},
		{[]string{"nothing"}, 2, `unknown verb "nothing"`},
		{[]string{"badges"}, 2, "no such file"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(append(append([]string{"overview"}, c.args...), "--notebook", nb)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("overview %v: %d %q, want %d %q", c.args, code, errOut, c.code, c.want)
		}
	}
	// An empty notebook (a capacity plan's validation creates none: import an llama-bench
	// file, which makes a study without a plan).
	rows := filepath.Join(dir, "rows.jsonl")
	line := `{"build_commit":"abc","build_number":1,"model_filename":"m.gguf","model_type":"llama","n_prompt":0,"n_gen":16,"n_depth":0,"avg_ts":100,"stddev_ts":1,"samples_ts":[100]}`
	if err := os.WriteFile(rows, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI("import", rows, "--notebook", nb); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runCLI("overview", "badges", "--notebook", nb)
	if code != 1 || !strings.Contains(errOut, "no throughput results") || !strings.Contains(errOut, "left out (no registered plan") || out != "" {
		t.Errorf("notebook without plans: %d %q %q", code, out, errOut)
	}
	var buf bytes.Buffer
	if runCLIInto(&buf, "overview", "--help") != 0 || !strings.Contains(buf.String(), "overview badges") {
		t.Errorf("overview --help: %q", buf.String())
	}
}

func runCLIInto(w *bytes.Buffer, args ...string) int { return run(args, w, w) }
