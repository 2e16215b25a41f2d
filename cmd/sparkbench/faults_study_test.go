package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sparkbench/runner"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
)

// fakeBenchDir writes a llama-bench that runs the real one, except for the argument lists that
// contain every word of one of the triggers: those end as the trigger says ("segv": killed by
// SIGSEGV; "badarg": exit 1 with llama-bench's own complaint about an unknown argument).
func fakeBenchDir(t *testing.T, realBench string, triggers map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var cases strings.Builder
	for args, how := range triggers {
		action := "kill -SEGV $$"
		if how == "badarg" {
			action = `echo "error: invalid parameter for argument: --bogus" >&2; exit 1`
		}
		fmt.Fprintf(&cases, "  *%q*) %s ;;\n", args+" ", action)
	}
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in\n%s  *) ;;\nesac\nexec %q \"$@\"\n", cases.String(), realBench)
	if err := os.WriteFile(filepath.Join(dir, "llama-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// A build folder has llama-server too; these studies never start it.
	if err := os.Symlink(filepath.Join(filepath.Dir(realBench), "llama-server"), filepath.Join(dir, "llama-server")); err != nil {
		t.Fatal(err)
	}
	return dir
}

const retryPredictions = `,
  "predictions": [
    {"id": "P1", "text": "tiny tg slope to d256", "kind": "fork", "about": {"figure": "depth_slope", "model": "tiny", "test": "tg", "depth": 256},
     "arms": [{"name": "steep", "hi": -0.2}, {"name": "flat", "lo": -0.05}]},
    {"id": "P2", "text": "where does tiny tg cross 1e9?", "kind": "question", "about": {"figure": "crossing_depth", "model": "tiny", "test": "tg", "line": 1e9}},
    {"id": "P3", "text": "tiny tg at d128", "kind": "band", "about": {"figure": "cell", "model": "tiny", "test": "tg", "depth": 128}, "lo": 1},
    {"id": "P4", "text": "tiny efficiency at d128?", "kind": "question", "about": {"figure": "efficiency", "model": "tiny", "test": "tg", "convention": "tensor_exact", "depth": 128}}
  ],
  "bandwidth": {"gbs": 20}`

// The repro: a two-pass study whose llama-bench segfaults on one depth, then the
// real build. The first run must say incomplete and exit 1, with the crashed leg's predictions
// waiting (not UNRESOLVABLE for good); the second must re-run that leg as attempt 2, answer
// them, and say complete. A CV gate can flag a row of a millisecond-long test on a machine
// under load (a leg then ends with fewer results, which this test about crashes cannot tell
// from a bug): the scenario runs again from scratch, and fails after cvAttempts such runs.
func TestFaultsStudyCrashedLegIsRetried(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	var flagged string
	for attempt := 1; attempt <= cvAttempts; attempt++ {
		if flagged = crashThenFix(t, loc.Bench, loc.Dir, tiny, moe); flagged == "" {
			return
		}
		t.Logf("attempt %d of %d: %s; running the scenario again", attempt, cvAttempts, flagged)
	}
	t.Fatalf("the CV gate flagged a leg in each of %d runs (last: %s)", cvAttempts, flagged)
}

// crashThenFix is one run of TestFaultsStudyCrashedLegIsRetried's scenario; it returns why it
// could not judge (a leg the CV gate flagged), "" when it ran to the end.
func crashThenFix(t *testing.T, bench, llamaDir, tiny, moe string) (flagged string) {
	t.Helper()
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	file := writePlan(t, dir, "crash then fix", tiny, moe, 2, 32, retryPredictions) // tg32: less jitter than tg8 under load (a CV flag would end a leg without results)
	code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	id := registeredID(t, out)
	fake := fakeBenchDir(t, bench, map[string]string{"tiny-llama-f32.gguf -p 64 -n 32 -d 128": "segv"})

	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", fake)
	rep := showJSON(t, id, nb)
	for _, l := range rep.Legs {
		if l.Class == string(runner.ClassFlagged) {
			return fmt.Sprintf("leg %s was flagged by the CV gate: %s", l.Label, l.Reason)
		}
	}
	wantErr := []string{
		"sparkbench study run: study " + id + " incomplete: 1 of 6 legs have no results (6 run now, 1 verdict(s) journaled)",
		"  tiny/d128: crashed: killed by SIGSEGV (segmentation fault) (attempt 1; 2 more attempt(s) allowed)",
		"fix the cause, then `sparkbench study run " + id + "` runs tiny/d128 again; predictions that read it wait for it",
	}
	if code != 1 || !containsAll(errOut, wantErr) || strings.Contains(out, " complete:") {
		t.Fatalf("first run: exit %d, want 1 with %q\nstdout %s\nstderr %s", code, wantErr, out, errOut)
	}
	if rep.Study.Status != study.StatusIncomplete {
		t.Fatalf("status %q after a crashed leg", rep.Study.Status)
	}
	for _, s := range rep.Scoreboard {
		want := map[string]study.Outcome{"P1": study.Hit, "P2": study.Pending, "P3": study.Pending, "P4": study.Pending}[s.Prediction]
		if s.Verdict.Outcome != want {
			t.Errorf("after the crash %s is %s (%s), want %s", s.Prediction, s.Verdict.Outcome, s.Verdict.Problem, want)
		}
		if s.Prediction != "P1" && s.Recorded != nil {
			t.Errorf("%s journaled while its leg can be retried: %+v", s.Prediction, s.Recorded)
		}
	}
	if t.Failed() {
		t.Fatalf("the first run said:\n%s\n%s", out, errOut)
	}

	// The receipt of the incomplete study reads the legs as the engine does: it verifies, and
	// its scoreboard is show's (P2 and P3 wait for the retry).
	bundle := filepath.Join(dir, "receipt-incomplete")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	var inBundle study.Report
	if b, err := os.ReadFile(filepath.Join(bundle, "study.json")); err != nil || json.Unmarshal(b, &inBundle) != nil {
		t.Fatalf("study.json: %v", err)
	}
	if len(inBundle.Scoreboard) != 4 || len(rep.Scoreboard) != 4 {
		t.Fatalf("scoreboards: receipt %d, show %d predictions", len(inBundle.Scoreboard), len(rep.Scoreboard))
	}
	for i, s := range inBundle.Scoreboard {
		if s.Verdict.Outcome != rep.Scoreboard[i].Verdict.Outcome {
			t.Errorf("receipt says %s is %s, show says %s", s.Prediction, s.Verdict.Outcome, rep.Scoreboard[i].Verdict.Outcome)
		}
	}

	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", llamaDir)
	if code != 0 || !strings.Contains(out, "study "+id+" complete: 6/6 legs (1 run now, 5 before), 3 verdict(s) journaled") {
		t.Fatalf("second run: %d\n%s\n%s", code, out, errOut)
	}
	rep = showJSON(t, id, nb)
	var attempts []string
	for _, l := range rep.Legs {
		if l.PlanLeg == "tiny/d128" && l.Role == study.RoleLeg {
			attempts = append(attempts, fmt.Sprintf("%s %s counts=%v", l.Label, l.Class, l.Counts))
		}
	}
	if slices.Equal(attempts, []string{"tiny/d128 crashed counts=false", "tiny/d128 (attempt 2) flagged counts=true"}) {
		return "the retry tiny/d128 (attempt 2) was flagged by the CV gate"
	}
	if !slices.Equal(attempts, []string{"tiny/d128 crashed counts=false", "tiny/d128 (attempt 2) ok counts=true"}) {
		t.Fatalf("attempts %q", attempts)
	}
	for _, s := range rep.Scoreboard {
		if s.Verdict.Outcome == study.Pending || s.Verdict.Outcome == study.Unresolvable || s.Recorded == nil {
			t.Errorf("after the retry %s is %s (%s), journaled %+v", s.Prediction, s.Verdict.Outcome, s.Verdict.Problem, s.Recorded)
		}
	}
	if rep.Study.Status != study.StatusComplete {
		t.Fatalf("status %q after the retry", rep.Study.Status)
	}
	if code, out, errOut := runCLI("notebook", "verify", "--notebook", nb); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	return ""
}

// Total failure never exits 0 as complete: when every leg is refused, the run says incomplete,
// lists each leg, and exits 1; with the retries spent it says the legs are final and how to
// force one more attempt; --retry of a leg with results or of no leg is refused, writing nothing.
func TestFaultsStudyEveryLegFailingIsIncomplete(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	file := writePlan(t, dir, "all refused", tiny, moe, 2, 8, `, "retries": 0`)
	code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	id := registeredID(t, out)
	fake := fakeBenchDir(t, loc.Bench, map[string]string{"-p 64 -n 8": "badarg"})
	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", fake)
	if code != 1 || !strings.Contains(errOut, "study "+id+" incomplete: 6 of 6 legs have no results") ||
		!strings.Contains(errOut, "  moe/d256: bad_args") || !strings.Contains(errOut, "(attempt 1; 1 of 1 attempts failed: final, its predictions are decided without it)") ||
		!strings.Contains(errOut, "`sparkbench study run "+id+" --retry tiny/d0` forces one more attempt of tiny/d0") {
		t.Fatalf("every leg refused: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if rep := showJSON(t, id, nb); rep.Study.Status != study.StatusIncomplete || len(rep.Study.Incomplete) != 6 ||
		!strings.HasPrefix(rep.Study.Incomplete[0], "tiny/d0: bad_args") || !strings.HasSuffix(rep.Study.Incomplete[0], ", 1 of 1 attempts failed: final") {
		t.Fatalf("show: %+v", rep.Study)
	}
	if code, out, _ := runCLI("study", "show", id, "--notebook", nb); code != 0 || !strings.Contains(out, "study "+id+` "all refused": incomplete, 6/6 legs finished`) ||
		!strings.Contains(out, "\nno results: moe/d256: bad_args") {
		t.Fatalf("show text: %d %s", code, out)
	}
	// Nothing left to run: still incomplete, still exit 1, nothing run.
	code, _, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", fake)
	if code != 1 || !strings.Contains(errOut, "incomplete: 6 of 6 legs have no results (0 run now") {
		t.Fatalf("second run: %d %s", code, errOut)
	}
	before := notebookCounts(t, nb)
	for _, c := range []struct{ leg, want string }{
		{"tiny/d512", "sparkbench study run: --retry tiny/d512: not a leg of this study's plan; its legs are tiny/d0, tiny/d128, tiny/d256, moe/d0, moe/d128, moe/d256"},
	} {
		code, out, errOut := runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir, "--retry", c.leg)
		if code != 2 || strings.TrimSpace(errOut) != c.want || out != "" {
			t.Errorf("--retry %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.leg, code, out, errOut, c.want)
		}
	}
	if after := notebookCounts(t, nb); !maps.Equal(before.Tables, after.Tables) || before.JournalHead != after.JournalHead {
		t.Fatalf("a refused --retry wrote to the notebook: %v -> %v", before, after)
	}
	// Forced, on the real build: that leg gets results; the others stay final without.
	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir, "--retry", "tiny/d0")
	if code != 1 || !strings.Contains(errOut, "incomplete: 5 of 6 legs have no results (1 run now") {
		t.Fatalf("forced retry: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir, "--retry", "tiny/d0")
	if code != 2 || !strings.Contains(errOut, "--retry tiny/d0: the leg has results (tiny/d0 (attempt 2), attempt 2); only a leg that ended without results is retried") {
		t.Fatalf("retry of a leg with results: %d %s", code, errOut)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A plan whose extra_args has a flag the build's llama-bench rejects passed validate, and then
// every leg failed bad_args. Validate and register now refuse it, naming the flag, writing
// nothing; a flag the build knows passes.
func TestFaultsStudyExtraArgsCheckedAgainstTheBuild(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	good := writePlan(t, dir, "known extra flag", tiny, moe, 2, 8, "")
	if code, out, errOut := runCLI("study", "register", good, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	bad := writePlan(t, dir, "unknown extra flag", tiny, moe, 2, 8, "")
	raw, _ := os.ReadFile(bad)
	os.WriteFile(bad, []byte(strings.Replace(string(raw), `"threads": [1]`, `"threads": [1], "extra_args": ["--no-warmup", "--bogus-flag", "7"]`, 1)), 0o644)
	before := notebookCounts(t, nb)
	want := "axes.extra_args[1]: --bogus-flag is not a flag of this build's llama-bench (its --help does not list it); check the spelling, or the build (llama-bench --help)"
	code, out, errOut := runCLI("study", "validate", bad, "--llama-dir", loc.Dir)
	if code != 2 || !strings.Contains(errOut, bad+": error: "+want) || strings.Contains(errOut, "--no-warmup") {
		t.Fatalf("validate: exit %d\nstdout %s\nstderr %s\nwant %q", code, out, errOut, want)
	}
	t.Setenv("SPARKBENCH_LLAMA_DIR", loc.Dir)
	code, _, errOut = runCLI("study", "register", bad, "--notebook", nb)
	if code != 2 || strings.TrimSpace(errOut) != "sparkbench study register: refused: "+want {
		t.Fatalf("register: exit %d, stderr %q", code, errOut)
	}
	if after := notebookCounts(t, nb); !maps.Equal(before.Tables, after.Tables) || before.JournalHead != after.JournalHead {
		t.Fatalf("a refused plan wrote to the notebook: %v -> %v", before.Tables, after.Tables)
	}
	// Known flags only: valid.
	os.WriteFile(bad, []byte(strings.Replace(string(raw), `"threads": [1]`, `"threads": [1], "extra_args": ["--no-warmup"]`, 1)), 0o644)
	if code, out, errOut := runCLI("study", "validate", bad, "--llama-dir", loc.Dir); code != 0 {
		t.Fatalf("validate a known flag: %d %s %s", code, out, errOut)
	}
}

// The run's progress lines carry recorded text (a model path in the argv): a control character
// in it is shown escaped, never written raw to the terminal.
func TestFaultsStudyRunLinesEscapeControlCharacters(t *testing.T) {
	var b strings.Builder
	p := &runPrinter{w: &b}
	p.event(study.Event{Kind: study.EventLegStarted, Leg: "tiny/d0", Role: study.RoleLeg, Argv: []string{"llama-bench", "-m", "/m/\x1b[2Jx.gguf"},
		Progress: study.Progress{LegsTotal: 1, ETA: -1}})
	if out := b.String(); strings.ContainsRune(out, 0x1b) || !strings.Contains(out, `/m/\x1b[2Jx.gguf`) {
		t.Fatalf("progress line %q", out)
	}
}

// A plan file, a capacity plan, a quality case list or a notebook that is a named pipe is
// refused at once with what it is; nothing waits on it.
func TestFaultsPlanAndNotebookFIFOs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	want := fifo + " is a named pipe (FIFO), not a regular file; give the path of a file"
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"study", "validate", fifo}, 2, "sparkbench study validate: read plan: " + want},
		{[]string{"study", "register", fifo, "--notebook", filepath.Join(dir, "nb.db")}, 2, "sparkbench study register: read plan: " + want},
		{[]string{"capacity", "validate", fifo}, 2, want},
		{[]string{"plot", "--kind", "depth", "--data", fifo, "--out", filepath.Join(dir, "x.png")}, 2, "sparkbench plot: " + want},
		{[]string{"study", "show", "1", "--notebook", fifo}, 0, "open notebook " + fifo + ": is a named pipe (FIFO), not a regular file; pass --notebook with a notebook file (or a new file name)"},
	} {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			code, out, errOut := runCLIWithin(t, 20*time.Second, c.args...)
			if (c.code != 0 && code != c.code) || code == 0 || !strings.Contains(errOut, c.msg) || out != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, c.code, c.msg)
			}
		})
	}
}

// The window's Register refuses a plan whose extra_args its build does not know, writing
// nothing (no plan file, no notebook row).
func TestFaultsWindowRegisterChecksExtraArgs(t *testing.T) {
	loc := llamatest.Binaries(t)
	nb, tmp, _ := tempNotebook(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	p, err := study.Load(writePlan(t, tmp, "window plan", tiny, moe, 2, 8, ""))
	if err != nil {
		t.Fatal(err)
	}
	p.Axes.ExtraArgs = []string{"--bogus-flag"}
	svc := studyService{nb: nb, llamaDir: loc.Dir, dataDir: filepath.Join(tmp, "data")}
	_, err = svc.Register(context.Background(), p)
	var ref *study.RefusedError
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "axes.extra_args[0]: --bogus-flag is not a flag of this build's llama-bench") {
		t.Fatalf("register: %v", err)
	}
	if st, _ := nb.Stats(context.Background()); st.Tables["studies"] != 0 {
		t.Fatalf("a refused plan was registered: %v", st.Tables)
	}
	if _, err := os.Stat(filepath.Join(tmp, "data", "plans")); err == nil {
		if left, _ := os.ReadDir(filepath.Join(tmp, "data", "plans")); len(left) != 0 {
			t.Fatalf("a refused plan left a file: %v", left)
		}
	}
}
