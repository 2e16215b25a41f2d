package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// writeSmallPlan writes a one-model plan, one leg per depth, on the real llama-bench with -t 1
// (tests of a few milliseconds; CV gates opened as in writePlan).
func writeSmallPlan(t *testing.T, dir, name, model, sha string, depths string, reps int) string {
	t.Helper()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "m", "path": %q, "sha256": %q}],
  "axes": {"depths": [%s], "n_prompt": [16], "n_gen": [8], "reps": %d, "threads": [1]},
  "split": "per_depth",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, name, model, sha, depths, reps)
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runStudy is `sparkbench study run ARGS…` with the real llama-bench. When the run ends
// incomplete only because a CV gate flagged a leg — a tiny model's sub-millisecond passes read
// several times apart on a loaded 2-core machine, which is the machine, not the code under
// test — it runs the study again, as its own message tells a user to (each flagged leg gets
// its next attempt), at most twice more, saying so in the log. Any other outcome is returned
// as it is.
func runStudy(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"study", "run"}, args...)...)
	for i := 0; i < 2 && code == 1 && cvFlagOnly(out+errOut); i++ {
		t.Logf("study run %s ended incomplete on a CV gate (machine load); running it again", args[0])
		code, out, errOut = runCLI(append([]string{"study", "run"}, args...)...)
	}
	return code, out, errOut
}

// cvFlagOnly: a run's output says it ended incomplete and every leg left without results was
// flagged by a CV gate (nothing crashed, failed or changed).
func cvFlagOnly(s string) bool {
	if !strings.Contains(s, " incomplete: ") {
		return false
	}
	_, after, _ := strings.Cut(s, " incomplete: ")
	flagged := 0
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimSpace(line)
		if _, why, ok := strings.Cut(line, ": flagged: "); ok {
			if !strings.Contains(why, "% gate") || strings.Contains(why, "model:") {
				return false
			}
			flagged++
		} else if strings.Contains(line, "(attempt ") {
			return false // a leg left for another reason
		}
	}
	return flagged > 0
}

// registerAndRun registers a plan file and, when run, runs it; it returns the study id.
func registerAndRun(t *testing.T, nb, file, llamaDir string, run bool) string {
	t.Helper()
	code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register %s: %d %s %s", file, code, out, errOut)
	}
	id := registeredID(t, out)
	if run {
		if code, out, errOut := runStudy(t, id, "--notebook", nb, "--llama-dir", llamaDir); code != 0 {
			t.Fatalf("run %s: %d\n%s\n%s", id, code, out, errOut)
		}
	}
	return id
}

// TestStudyCompareCLI runs two small studies of the same model on the real llama-bench and
// compares them with `study compare`: every cell's means, delta and "~" trace back to the
// stored rows it names; a study of another model file and a study with 2 repetitions are
// refused with their reasons.
func TestStudyCompareCLI(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	base := registerAndRun(t, nb, writeSmallPlan(t, dir, "compare base", tiny, tinySHA, "0, 128", 3), loc.Dir, true)
	// The same cells in a plan named differently (another study), with 4 repetitions.
	nw := registerAndRun(t, nb, writeSmallPlan(t, dir, "compare new", tiny, tinySHA, "0, 128", 4), loc.Dir, true)

	if code, out, errOut := runCLI("study", "show", nw, "--notebook", nb); code != 0 ||
		!strings.Contains(out, "the unit is the llama-bench process: each cell above is one process of 4 repetitions, and ± is the spread within it,") {
		t.Errorf("show of a fixed study: %d\n%s%s", code, out, errOut)
	}
	// The default compares processes: each cell of these fixed-repetition studies is one
	// llama-bench process a side, so each is a point estimate with no interval, said so.
	code, out, errOut := runCLI("study", "compare", base, nw, "--notebook", nb, "--json")
	var pc study.StudyComparison
	if code != 0 || json.Unmarshal([]byte(out), &pc) != nil || pc.Stats != study.StatsProcess || len(pc.Cells) != 4 {
		t.Fatalf("compare --json (default): %d %s %s", code, out, errOut)
	}
	for _, cc := range pc.Cells {
		if cc.P != nil || cc.Significant || cc.Baseline.N != 1 || cc.New.N != 1 || cc.Processes == nil || cc.Processes.Base.MMin != 3 || cc.Processes.New.MMin != 4 ||
			!strings.HasPrefix(cc.Word, "? no interval (n=1+1 processes, m=3+4: ") {
			t.Errorf("%s by default: %+v %q", cc.Label(), cc.Baseline, cc.Word)
		}
	}
	code, out, _ = runCLI("study", "compare", base, nw, "--notebook", nb)
	for _, want := range []string{"(1 process of 3)", "(1 process of 4)", "the unit is the llama-bench process", "? when a side has one process"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("compare text (default) lacks %q:\n%s", want, out)
		}
	}

	// Welch on the repetitions, asked for: every cell's means, delta and "~" trace back to
	// the stored rows.
	code, out, errOut = runCLI("study", "compare", base, nw, "--notebook", nb, "--json", "--stats", "welch")
	var c study.StudyComparison
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
		t.Fatalf("compare --json: %d %s %s", code, out, errOut)
	}
	if c.Baseline.ID != mustAtoi(t, base) || c.New.ID != mustAtoi(t, nw) || c.Alpha != 0.05 || len(c.Cells) != 4 || len(c.OnlyBaseline)+len(c.OnlyNew) != 0 {
		t.Fatalf("comparison: %+v", c)
	}
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	row := func(ref string) benchfmt.Result {
		t.Helper()
		leg, seq, err := study.ParseRowRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := n.BenchRows(context.Background(), leg)
		if err != nil || int(seq) >= len(rows) {
			t.Fatalf("%s: %d rows, %v", ref, len(rows), err)
		}
		return rows[seq]
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	tests := map[string]int{}
	for _, cc := range c.Cells {
		b, w := row(cc.BaselineSource), row(cc.NewSource)
		tests[cc.Test]++
		if cc.ModelSHA256 != tinySHA || cc.Model != "m" || b.NDepth != cc.Depth || w.NDepth != cc.Depth ||
			b.TestName() != w.TestName() || len(b.SamplesTs) != 3 || len(w.SamplesTs) != 4 {
			t.Errorf("%s: rows %s and %s do not match the cell", cc.Label(), cc.BaselineSource, cc.NewSource)
			continue
		}
		bm, nm := mean(b.SamplesTs), mean(w.SamplesTs)
		if cc.Baseline.N != 3 || cc.New.N != 4 || math.Abs(cc.Baseline.Mean-bm) > 1e-9*bm || math.Abs(cc.New.Mean-nm) > 1e-9*nm ||
			math.Abs(cc.Delta-(nm/bm-1)) > 1e-9 || !(cc.Baseline.Lo < bm && bm < cc.Baseline.Hi) {
			t.Errorf("%s: summaries %+v %+v delta %v; recomputed means %v %v", cc.Label(), cc.Baseline, cc.New, cc.Delta, bm, nm)
		}
		if cc.P == nil || (*cc.P < c.Alpha) != cc.Significant || cc.Significant == strings.HasPrefix(cc.Word, "~ ") || !strings.HasSuffix(cc.Word, " n=3+4)") {
			t.Errorf("%s: p %v significant %v word %q", cc.Label(), cc.P, cc.Significant, cc.Word)
		}
		t.Logf("%s: %.1f vs %.1f t/s: %s", cc.Label(), cc.Baseline.Mean, cc.New.Mean, cc.Word)
	}
	if tests["pp16"] != 2 || tests["tg8"] != 2 {
		t.Errorf("cells by test: %v", tests)
	}

	code, out, _ = runCLI("study", "compare", base, nw, "--notebook", nb, "--stats", "welch")
	for _, want := range []string{"baseline  study " + base + ` "compare base" (complete)`, "new       study " + nw + ` "compare new"`,
		"config    ub512 b2048 fa-auto kv-f16/f16 t1 ngl-1", "baseline t/s", "tg8", "d128", "n=3+4)", "Welch's two-sided t-test"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("compare text lacks %q:\n%s", want, out)
		}
	}

	// Three studies and a receipt: each compared with the baseline as the window does, the
	// receipt re-derived by verify from the rows it carries, with the process-level rules.
	third := registerAndRun(t, nb, writeSmallPlan(t, dir, "compare third", tiny, tinySHA, "0, 128", 3), loc.Dir, true)
	rc := filepath.Join(dir, "cmp-receipt")
	code, out, errOut = runCLI("study", "compare", base, nw, third, "--notebook", nb, "--out", rc)
	if code != 0 || strings.Count(out, "baseline  study "+base) != 2 || !strings.Contains(out, "new       study "+third) ||
		!strings.Contains(out, "wrote "+rc+": 2 studies compared with study "+base) {
		t.Fatalf("compare three --out: %d\n%s%s", code, out, errOut)
	}
	cj, err := os.ReadFile(filepath.Join(rc, "comparison.json"))
	if err != nil || !strings.Contains(string(cj), `"rules":3`) || !strings.Contains(string(cj), `"stats":"process"`) {
		t.Fatalf("comparison.json: %v\n%.400s", err, cj)
	}
	if code, out, errOut := runCLI("verify", rc); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify the comparison receipt: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI("study", "compare", base, nw, base, "--notebook", nb); code != 2 || !strings.Contains(errOut, "chosen twice") {
		t.Errorf("a study twice: %d %q", code, errOut)
	}

	// Another model file (registered, never run): refused before any row is read.
	other := registerAndRun(t, nb, writeSmallPlan(t, dir, "compare moe", moe, moeSHA, "0", 3), loc.Dir, false)
	code, out, errOut = runCLI("study", "compare", base, other, "--notebook", nb)
	if code != 2 || out != "" || !strings.Contains(errOut, "refused: the studies measure different model files") ||
		!strings.Contains(errOut, "m (sha256 "+tinySHA+")") || !strings.Contains(errOut, "m (sha256 "+moeSHA+")") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("different models: %d %q %q", code, out, errOut)
	}
	// Two repetitions: no interval, no p-value. Every cell the study has a result for is
	// named (a busy machine can make the CV gate flag one of two reps: that row is no result).
	// Under heavy load both cells can be flagged (two reps can spread past even a 100% gate):
	// such a study has nothing to compare, so another is run, up to three.
	var two string
	results := 0
	for attempt := 1; attempt <= 3 && results == 0; attempt++ {
		two = registerAndRun(t, nb, writeSmallPlan(t, dir, fmt.Sprintf("compare two reps %d", attempt), tiny, tinySHA, "0", 2), loc.Dir, true)
		rows, err := (store.StudyRecorder{N: n}).Rows(context.Background(), int64(mustAtoi(t, two)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Status == "result" {
				results++
			}
		}
		if results == 0 {
			t.Logf("study %s (two reps) has no result row: running another", two)
		}
	}
	code, out, errOut = runCLI("study", "compare", base, two, "--notebook", nb, "--json")
	if results == 0 || code != 2 || out != "" || !strings.Contains(errOut, "refused: need >= 3 reps per cell") ||
		!strings.Contains(errOut, fmt.Sprintf("%d cell(s) have fewer", results)) || !strings.Contains(errOut, "new 2 (leg ") {
		t.Errorf("two reps (%d result rows): %d %q %q", results, code, out, errOut)
	}
	if results == 2 && !strings.Contains(errOut, "tg8 @ d0 of m") {
		t.Errorf("two reps: the tg8 cell is not named: %q", errOut)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"study", "compare", base, "--notebook", nb}, "want two or more study ids"},
		{[]string{"study", "compare", base, base, "--notebook", nb}, "both the baseline and the new study"},
		{[]string{"study", "compare", base, "99", "--notebook", nb}, `no study has ID 99`},
		{[]string{"study", "compare", base, nw, "--alpha", "1.5", "--notebook", nb}, "--alpha 1.5"},
	} {
		if code, _, errOut := runCLI(bad.args...); code != 2 || !strings.Contains(errOut, bad.want) {
			t.Errorf("%v: %d %q (want %q)", bad.args, code, errOut, bad.want)
		}
	}
}

// writeAdaptivePlan writes a one-model adaptive plan on the real llama-bench with -t 1: a
// target no run of a few repetitions meets, so every leg runs its 9 repetitions in 3 chunks.
func writeAdaptivePlan(t *testing.T, dir, name, model, sha string, seed int) string {
	t.Helper()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "m", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 64], "n_prompt": [16], "n_gen": [8], "threads": [1]},
  "split": "per_depth",
  "adaptive": {"min_reps": 3, "max_reps": 9, "chunk_reps": 3, "targets": [{"test": "tg", "rel": 0.00001}],
    "order": "blocks", "seed": %d}
}`, name, model, sha, seed)
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStudyCompareBenchmathCLI runs two adaptive studies of the same model on the real
// llama-bench and compares them: their processes by default (each chunk one), benchmath on
// request (medians with their intervals, the
// difference's interval, the test named, "~" when not significant), Welch on request, the A/A
// control of both and of one study alone, bad statistics refused.
func TestStudyCompareBenchmathCLI(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	base := registerAndRun(t, nb, writeAdaptivePlan(t, dir, "adaptive base", tiny, tinySHA, 1), loc.Dir, true)
	nw := registerAndRun(t, nb, writeAdaptivePlan(t, dir, "adaptive new", tiny, tinySHA, 2), loc.Dir, true)

	// show says what its ± is: the cells ran as 3 processes of 3 repetitions.
	if code, out, errOut := runCLI("study", "show", base, "--notebook", nb); code != 0 ||
		!strings.Contains(out, "the unit is the llama-bench process: each cell above ran as 3 processes (its chunks), 9 repetitions in all") {
		t.Errorf("show of an adaptive study: %d\n%s%s", code, out, errOut)
	}
	// --json states each cell's processes: 3 chunks of 3, the stop charged, the spreads
	if code, out, errOut := runCLI("study", "show", base, "--notebook", nb, "--json"); code != 0 {
		t.Errorf("show --json: %d %s", code, errOut)
	} else {
		var rep study.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) != 4 || !strings.HasPrefix(rep.Processes, "95% intervals over 3 processes of 3 repetitions") {
			t.Fatalf("show --json: %v %.300s", err, out)
		}
		for _, c := range rep.Results {
			if u := c.Unit; u == nil || u.N != 3 || u.M != "3" || !u.Stopped || u.Lo == nil || u.BetweenCV == nil {
				t.Errorf("show --json cell %s d%d: %+v", c.Test, c.Depth, u)
			}
		}
	}
	// The default: the chunks are the cells' processes (3 of 3 repetitions a side), compared
	// by their means; the A/A control needs 2 processes a half, so 3 leave it untestable.
	code, out, errOut := runCLI("study", "compare", base, nw, "--notebook", nb, "--json", "--aa")
	var pc study.StudyComparison
	if code != 0 || json.Unmarshal([]byte(out), &pc) != nil || pc.Stats != study.StatsProcess || len(pc.Cells) != 4 || pc.AA == nil {
		t.Fatalf("compare --json (default): %d %s %s", code, out, errOut)
	}
	for _, cc := range pc.Cells {
		p := cc.Processes
		if p == nil || p.Base.N != 3 || p.New.N != 3 || p.Base.MString() != "3" || cc.P == nil || cc.Significant != (*cc.P < pc.Alpha) ||
			!strings.HasSuffix(cc.Word, " n=3+3 processes, m=3+3)") || cc.Baseline.N != 3 || !p.Base.Between || p.BaseOf != 3 || p.NewOf != 3 {
			t.Errorf("%s by default: %+v %q", cc.Label(), p, cc.Word)
		}
		t.Logf("%s (processes): %s", cc.Label(), cc.Word)
	}
	if pc.AA.Tested != 0 || len(pc.AA.Untestable) != 8 || !strings.Contains(pc.AA.Untestable[0], "3 process(es): the halves are alternate processes, 2 each at least") {
		t.Errorf("A/A by default: %+v", pc.AA)
	}

	code, out, errOut = runCLI("study", "compare", base, nw, "--notebook", nb, "--json", "--aa", "--stats", "benchmath")
	var c study.StudyComparison
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
		t.Fatalf("compare --json: %d %s %s", code, out, errOut)
	}
	if c.Stats != study.StatsBenchmath || len(c.Cells) != 4 || c.AA == nil || c.AA.Stats != study.StatsBenchmath {
		t.Fatalf("comparison: %+v", c)
	}
	for _, cc := range c.Cells {
		m := cc.Medians
		if m == nil || m.Base.N != 9 || m.New.N != 9 || cc.Significant != (*cc.P < c.Alpha) || cc.Significant == strings.HasPrefix(cc.Word, "~") ||
			!strings.HasSuffix(cc.Word, " n=9+9)") || m.ShiftLo == nil || cc.DeltaLo != *m.ShiftLo || cc.DeltaHi != *m.ShiftHi {
			t.Errorf("%s: %+v medians %+v", cc.Label(), cc, m)
		}
		t.Logf("%s: %s", cc.Label(), cc.Word)
	}
	// The A/A control: 4 cells a study, odd chunks (6 reps) against even (3).
	if c.AA.Tested != 8 || len(c.AA.Untestable) != 0 || c.AA.Rate == nil {
		t.Errorf("A/A: %+v", c.AA)
	}
	for _, x := range c.AA.Cells {
		if x.Split != "odd against even chunks (3 chunks)" || !strings.HasSuffix(x.Word, " n=6+3)") {
			t.Errorf("A/A cell %+v", x)
		}
	}

	code, out, _ = runCLI("study", "compare", base, nw, "--notebook", nb, "--aa", "--stats", "benchmath")
	for _, want := range []string{"baseline t/s", "] (p=", "Hodges-Lehmann 95% interval of the difference, test Mann-Whitney U",
		"A/A control (Mann-Whitney U, alpha 0.05)", "odd against even chunks (3 chunks)", c.AA.Words()} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("compare text lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI("study", "compare", base, nw, "--notebook", nb, "--stats", "welch")
	if code != 0 || !strings.Contains(out, "Welch's two-sided t-test") || strings.Contains(out, "Mann-Whitney") {
		t.Errorf("--stats welch:\n%s", out)
	}
	code, out, _ = runCLI("study", "compare", "--aa", base, "--notebook", nb, "--stats", "benchmath")
	if code != 0 || !strings.Contains(out, `study `+base+` "adaptive base"`) || strings.Count(out, "odd against even chunks") != 4 ||
		!strings.Contains(out, "A/A control: ") {
		t.Errorf("--aa alone:\n%s", out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"study", "compare", base, nw, "--stats", "ttest", "--notebook", nb}, `--stats: statistics "ttest"`},
		{[]string{"study", "compare", base, "--notebook", nb}, "(or one with --aa)"},
	} {
		if code, _, errOut := runCLI(bad.args...); code != 2 || !strings.Contains(errOut, bad.want) {
			t.Errorf("%v: %d %q (want %q)", bad.args, code, errOut, bad.want)
		}
	}
}

// cvFlagOnly retries only what the machine's load explains: the run summaries below are the
// real CLI's words.
func TestCVFlagOnlyReadsTheRunSummary(t *testing.T) {
	cv := "sparkbench study run: study 1 incomplete: 1 of 2 legs have no results (2 run now, 0 verdict(s) journaled)\n" +
		"  m/d16: flagged: pp16 @ d16: CV 111.8% above the 100.0% gate (avg 15178.45 ± 16964.14 t/s over 2 repetitions) (attempt 2; 1 more attempt(s) allowed)\n" +
		"fix the cause, then `sparkbench study run 1` runs m/d16 again; predictions that read it wait for it\n"
	crash := strings.Replace(cv, "flagged: pp16 @ d16: CV 111.8% above the 100.0% gate (avg 15178.45 ± 16964.14 t/s over 2 repetitions)", "crashed: killed by SIGSEGV", 1)
	both := strings.Replace(cv, "fix the cause", "  m/d0: crashed: killed by SIGSEGV (attempt 1; 2 more attempt(s) allowed)\nfix the cause", 1)
	model := strings.Replace(cv, "pp16 @ d16: CV", "model:changed: CV", 1)
	for _, c := range []struct {
		s    string
		want bool
	}{{cv, true}, {crash, false}, {both, false}, {model, false}, {"study 1 complete", false}} {
		if got := cvFlagOnly(c.s); got != c.want {
			t.Errorf("cvFlagOnly = %v, want %v:\n%s", got, c.want, c.s)
		}
	}
}
