package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
)

// TestOneRunVerbRunsAnyPlan: a plan file of any kind, given to `capacity run`, `study run` or
// `run`, is registered in the notebook and run as a study, so that `receipt NAME` finds it (the
// README's serving line, then its receipt line, as written: no --notebook, the default one);
// the notebook-free capacity run needs --no-notebook and leaves the notebook alone.
func TestOneRunVerbRunsAnyPlan(t *testing.T) {
	loc := llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("SPARKBENCH_NOTEBOOK", "")
	nb := filepath.Join(dir, "data", "sparkbench", "notebook.db")
	capPlan := smallCapacityPlan(t, dir, "one verb capacity")
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	tpPlan := writeSmallPlan(t, dir, "one verb throughput", model, capacitySHA(t, model), "0", 2)

	// The notebook-free run: only with --no-notebook, and the notebook stays unopened.
	free := filepath.Join(dir, "free-run")
	if code, out, errOut := runCLI("capacity", "run", capPlan, "--no-notebook", "--out", free, "--llama-dir", loc.Dir); code != 0 {
		t.Fatalf("capacity run --no-notebook: %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(free, "study.json")); err != nil {
		t.Errorf("the notebook-free run wrote no study.json: %v", err)
	}
	if _, err := os.Stat(nb); !os.IsNotExist(err) {
		t.Fatalf("capacity run --no-notebook created the notebook (%v)", err)
	}

	// capacity run PLAN: registered in the default notebook, run; the receipt finds it by name.
	code, out, errOut := runCLI("capacity", "run", capPlan, "--llama-dir", loc.Dir)
	if code != 0 || !strings.Contains(out+errOut, `study 1 "one verb capacity" registered (capacity)`) {
		t.Fatalf("capacity run PLAN: %d\n%s%s", code, out, errOut)
	}
	rdir := filepath.Join(dir, "receipt-cap")
	if code, out, errOut := runCLI("receipt", "one verb capacity", "--out", rdir); code != 0 {
		t.Fatalf("receipt NAME after capacity run PLAN: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI("verify", rdir); code != 0 {
		t.Fatalf("verify: %d\n%s%s", code, out, errOut)
	}

	// capacity run of a throughput plan runs it as the throughput study it is.
	code, out, errOut = runCLI("capacity", "run", tpPlan, "--llama-dir", loc.Dir)
	if code != 0 || !strings.Contains(out+errOut, `study 2 "one verb throughput" registered`) {
		t.Fatalf("capacity run THROUGHPUT-PLAN: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI("study", "show", "one verb throughput"); code != 0 || !strings.Contains(out, "complete") {
		t.Fatalf("study show after capacity run of a throughput plan: %d\n%s%s", code, out, errOut)
	}

	// study run of a capacity plan (the same plan again: its study, which is complete) and of a
	// capacity study by id; run of either kind by id or file. A complete capacity study answers
	// as `capacity run` does (exit 1, "the study is complete"), a complete throughput study as
	// `study run` does (exit 0).
	capDone := "sparkbench capacity run: study 1 (one verb capacity): the study is complete"
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"study", "run", capPlan, "--llama-dir", loc.Dir}, 1, capDone},
		{[]string{"study", "run", "1"}, 1, capDone},
		{[]string{"run", "1"}, 1, capDone},
		{[]string{"run", capPlan}, 1, capDone},
		{[]string{"run", "2"}, 0, "complete"},
		{[]string{"run", tpPlan}, 0, "complete"},
		{[]string{"capacity", "run", "2"}, 0, "complete"},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s: exit %d, want %d and %q\n%s%s", strings.Join(c.args, " "), code, c.code, c.want, out, errOut)
		}
		if strings.Contains(out+errOut, "registered (") {
			t.Errorf("%s registered a second study:\n%s%s", strings.Join(c.args, " "), out, errOut)
		}
	}
	if code, out, errOut := runCLI("study", "show", "3"); code == 0 {
		t.Errorf("a third study exists after running the two plans again:\n%s%s", out, errOut)
	}

	// Refusals: --no-notebook with --notebook; --no-notebook with a study.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"capacity", "run", capPlan, "--no-notebook", "--notebook", nb}, "--no-notebook runs a plan file without a notebook and --notebook names the one to run it in: give one of them"},
		{[]string{"capacity", "run", "1", "--no-notebook"}, `--no-notebook runs a plan file; "1" is not one`},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d %q, want 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}
