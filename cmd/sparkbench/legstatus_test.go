package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/llamatest"
)

// A leg whose first row trips a gate kept no results: the run must not read it as complete.
// The plan's CV gates are closed to a billionth, so the first row of every attempt (pp, two
// repetitions that never time alike to the nanosecond) is flagged and the leg keeps 0 of 2
// rows: the run exits 1 as incomplete with a retry left. The next run's attempt is flagged
// too: the leg is final without results (retries 1), the study still incomplete, exit 1, and
// `study show` says so.
func TestLegFlaggedOnItsFirstRowIsIncomplete(t *testing.T) {
	llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	plan := filepath.Join(dir, "flagged.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "flagged on its first row",
  "models": [{"id": "tiny", "path": %q, "sha256": %q}],
  "axes": {"depths": [0], "n_prompt": [64], "n_gen": [8], "reps": 2, "threads": [1]},
  "gates": {"cv_tg": 1e-9, "cv_pp_depth": 1e-9, "cv_pp_d0": 1e-9},
  "retries": 1
}`, tiny, tinySHA)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("study", "run", plan, "--notebook", nb)
	if code != 1 || strings.Contains(out, " complete:") || !strings.Contains(errOut, "incomplete: 1 of 1 legs have no results") ||
		!strings.Contains(errOut, "(attempt 1; 1 more attempt(s) allowed)") {
		t.Fatalf("run: exit %d, want 1 and incomplete with a retry left\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = runCLI("study", "run", "1", "--notebook", nb)
	if code != 1 || strings.Contains(out, " complete:") || !strings.Contains(errOut, "incomplete: 1 of 1 legs have no results") {
		t.Fatalf("second run: exit %d, want 1 and incomplete\nstdout %s\nstderr %s", code, out, errOut)
	}
	rep := showJSON(t, "1", nb)
	if rep.Study.Status != study.StatusIncomplete {
		t.Fatalf("status %q after a leg that kept no rows", rep.Study.Status)
	}
	flagged := 0
	for _, l := range rep.Legs {
		if l.Class != string(runner.ClassFlagged) || l.Results != 0 {
			t.Errorf("leg %s: class %s with %d results; want flagged, 0 kept", l.Label, l.Class, l.Results)
		}
		flagged++
	}
	if flagged != 2 {
		t.Errorf("%d attempts recorded, want 2 (retries 1)\n%s\n%s", flagged, out, errOut)
	}
}
