package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/receipt"
	"sparkbench/app/receipt/receipttest"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/vocab"
)

// allowedCPU is the first CPU this test process may run on, from /proc/self/status.
func allowedCPU(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.FieldsFunc(strings.TrimSpace(v), func(r rune) bool { return r == ',' || r == '-' })[0]
		}
	}
	t.Fatal("no Cpus_allowed_list in /proc/self/status")
	return ""
}

// writeWrappedPlan is a one-leg plan of the tiny model (-t 1) with a canary, under wrapper
// (none when empty).
func writeWrappedPlan(t *testing.T, dir, name, model string, wrapper []string) string {
	t.Helper()
	build := "{}"
	if wrapper != nil {
		w, _ := json.Marshal(wrapper)
		build = fmt.Sprintf(`{"launch_wrapper": %s}`, w)
	}
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q, "build": %s,
  "models": [{"id": "m", "path": %q, "sha256": %q}],
  "axes": {"depths": [0], "n_prompt": [16], "n_gen": [8], "reps": 2, "threads": [1]},
  "split": "per_depth", "canary": {"model": "m", "max_drop": 0.95},
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, name, build, model, tinySHA)
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLaunchWrapperStudyReceipt: a study whose plan starts its legs under taskset -c CPU runs
// on the real llama-bench; study show, study.json and receipt.md give each leg's canonical
// command and the command it was launched as apart, with CPU affinity CPU read from
// llama-bench's process; sparkbench verify re-derives the bundle byte for byte. The same plan
// without the wrapper has no launch in study.json or receipt.md.
func TestLaunchWrapperStudyReceipt(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	cpu := allowedCPU(t)
	taskset, err := vocab.ResolveProgram("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is needed: %v", err)
	}
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	id := registerAndRun(t, nb, writeWrappedPlan(t, dir, "wrapped", tiny, []string{"taskset", "-c", cpu}), loc.Dir, true)
	if code, out, errOut := runCLI("study", "show", id, "--notebook", nb); code != 0 || !strings.Contains(out, "launch wrapper") ||
		!strings.Contains(out, "m/d0: "+taskset+" -c "+cpu+" · CPUs allowed "+cpu) {
		t.Errorf("study show: %d\n%s\n%s", code, out, errOut)
	}
	out := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", id, "--out", out, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI("verify", out); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
	var doc receipt.ThroughputStudy
	js, _ := os.ReadFile(filepath.Join(out, receipt.FileStudy))
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, receipt.FileReceipt))
	if !strings.Contains(string(md), "## Launch wrapper") || !strings.Contains(string(md), "under the launch wrapper `taskset -c "+cpu+"`") {
		t.Errorf("receipt.md has no launch wrapper section:\n%s", md)
	}
	if _, probs := receipttest.Tables(md); len(probs) > 0 {
		t.Errorf("receipt.md tables: %v", probs)
	}
	if bad := receipttest.CrossCheck(md, js); len(bad) > 0 {
		t.Errorf("receipt.md numbers not in study.json: %v", bad)
	}
	wrapped := 0
	for _, l := range doc.Legs {
		if l.ID == 0 {
			continue
		}
		if l.Launch == nil || l.Launch.Affinity == nil || l.Launch.Affinity.CPUs != cpu || l.Launch.Affinity.How != vocab.LaunchExec {
			t.Errorf("leg %s: launch %+v", l.Label, l.Launch)
			continue
		}
		wrapped++
		var rec receipt.LegRecord
		b, _ := os.ReadFile(filepath.Join(out, l.Dir, receipt.LegFile))
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(rec.Argv[0], "llama-bench") || strings.Join(l.Command, " ") != strings.Join(rec.Argv, " ") ||
			strings.Join(l.LaunchedAs, " ") != taskset+" -c "+cpu+" "+strings.Join(rec.Argv, " ") {
			t.Errorf("leg %s: command %q, launched as %q; leg.json argv %q", l.Label, l.Command, l.LaunchedAs, rec.Argv)
		}
		row := fmt.Sprintf("| `%s` | `%s` | `%s` |", strings.Join(rec.Argv, " "), strings.Join(l.LaunchedAs, " "), cpu)
		if !strings.Contains(string(md), row) {
			t.Errorf("receipt.md lacks the row %s", row)
		}
	}
	if wrapped != 2 { // the canary baseline and m/d0
		t.Errorf("%d wrapped legs in study.json; want 2", wrapped)
	}

	// The launch records are journal entries: an affinity changed in journal.jsonl, even with
	// SHA256SUMS re-made, breaks the chain.
	files, err := bundle.Read(out, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	bad := files.Clone()
	from := fmt.Sprintf(`"cpus_allowed_list":"%s"`, cpu)
	bad[receipt.FileJournal] = []byte(strings.Replace(string(bad[receipt.FileJournal]), from, `"cpus_allowed_list":"0-255"`, 1))
	if string(bad[receipt.FileJournal]) == string(files[receipt.FileJournal]) {
		t.Fatalf("journal.jsonl has no %s", from)
	}
	bad[receipt.FileSums] = receipt.Sums(bad)
	if rep := receipt.Verify(bad, receipt.VerifyOptions{HashPlots: true}); rep.OK() {
		t.Error("a changed affinity in journal.jsonl verified")
	}

	plain := registerAndRun(t, nb, writeWrappedPlan(t, dir, "plain", tiny, nil), loc.Dir, true)
	pb := filepath.Join(dir, "plain-receipt")
	if code, out, errOut := runCLI("receipt", plain, "--out", pb, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	pjs, _ := os.ReadFile(filepath.Join(pb, receipt.FileStudy))
	pmd, _ := os.ReadFile(filepath.Join(pb, receipt.FileReceipt))
	plan, _ := os.ReadFile(filepath.Join(pb, receipt.FilePlan))
	for _, s := range []string{`"launch"`, `"launched_as"`, `"command"`, "launch_wrapper"} {
		if strings.Contains(string(pjs), s) || strings.Contains(string(plan), s) {
			t.Errorf("an unwrapped study's study.json or plan.json has %s", s)
		}
	}
	if strings.Contains(string(pmd), "Launch wrapper") || strings.Contains(string(pmd), "Launched as") {
		t.Errorf("an unwrapped study's receipt.md has a launch wrapper section")
	}
}

// TestLaunchWrapperBadInputCLI: study validate refuses a wrapper that does not exist, one
// that is not executable and an empty one, each at its JSON path with what to do (exit 2);
// an executable wrapper outside the known list passes with a warning.
func TestLaunchWrapperBadInputCLI(t *testing.T) {
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	noexec := filepath.Join(dir, "pin-noexec")
	mine := filepath.Join(dir, "pin")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\nexec taskset -c 0 \"$@\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("#!/bin/sh\nexec taskset -c 0 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		wrapper []string
		code    int
		want    string
	}{
		{[]string{"sparkbench-no-such-wrapper", "-c", "0"}, 2, "build.launch_wrapper[0]: sparkbench-no-such-wrapper: not found on PATH; install it, or give its absolute path"},
		{[]string{noexec}, 2, "build.launch_wrapper[0]: " + noexec + ": not executable (mode -rw-r--r--); make it executable (chmod +x), or name another program"},
		{[]string{}, 2, "build.launch_wrapper: an empty list"},
		{[]string{"taskset", "", "0"}, 2, "build.launch_wrapper[1]: an empty string"},
		{[]string{"sg", "render", "-c"}, 2, "build.launch_wrapper[0]: sg: refused"},
		{[]string{mine}, 0, "build.launch_wrapper[0]: " + mine + " is not a known launch wrapper"},
		{[]string{"taskset", "-c", "0"}, 0, "  launch wrapper: taskset -c 0, each leg and canary started as it followed by the command line above"},
	}
	for i, c := range cases {
		file := writeWrappedPlan(t, dir, fmt.Sprintf("bad %d", i), tiny, c.wrapper)
		code, out, errOut := runCLI("study", "validate", file)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%q: exit %d\n%s\n%s\nwant exit %d saying %q", c.wrapper, code, out, errOut, c.code, c.want)
		}
	}
}
