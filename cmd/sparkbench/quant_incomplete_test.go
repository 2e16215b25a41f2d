package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sparkbench/app/quant"
	"sparkbench/runner/llamatest"
)

// fakeLadderBuild is a llama.cpp folder whose llama-bench crashes (SIGSEGV) on any argument
// list that holds crashOn and runs the real one otherwise; every other file of the real build
// is linked in, so a ladder quantizes and measures KLD with the real tools.
func fakeLadderBuild(t *testing.T, realDir, crashOn string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(realDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "llama-bench" {
			continue
		}
		if err := os.Symlink(filepath.Join(realDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in\n  *%q*) kill -SEGV $$ ;;\nesac\nexec %q \"$@\"\n", crashOn, filepath.Join(realDir, "llama-bench"))
	if err := os.WriteFile(filepath.Join(dir, "llama-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The repro: a llama-bench that crashes only at depth 512, the rule `maximize tg@0`.
// The ladder ends incomplete and selects nothing: the run exits 1 and says "incomplete, no
// selection" with the missing legs (never "selected"); show, its --json and the receipt say
// the same, and no candidate is rejected as speed_missing (both are pending); `quant handoff`
// refuses, naming the missing legs, and writes nothing. `study run ID` on the real build then
// resumes: only the two missing legs run (the KLD and the depth-0 speed are kept), the ladder
// completes and selects, and the hand-off is written.
func TestQuantIncompleteLadderSelectsNothingThenResumes(t *testing.T) {
	loc := llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")
	plan := filepath.Join(dir, "ladder.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{"schema": "sparkbench.quant/v1", "name": "crash at d512", "build": {},
  "reference": {"path": %q, "sha256": %q}, "quants": ["Q8_0", "Q4_0"],
  "speed": {"depths": [0, 512], "n_prompt": 32, "n_gen": 8, "reps": 2, "threads": 1, "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}},
  "quality": {"corpus": {"path": %q, "sha256": %q}, "ctx": 128, "chunks": 2},
  "rule": {"maximize": "tg@0"},
  "predictions": [{"id": "P1", "text": "how fast is the pick", "kind": "question", "about": {"figure": "speed", "candidate": "selected", "at": "tg@0"}}]}`,
		ref, mediumSHA, corpusPath(), corpusSHA)), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := fakeLadderBuild(t, loc.Dir, "-d 512 ")

	code, out, errOut := runCLI("study", "run", plan, "--notebook", nb, "--llama-dir", fake)
	const missing = "missing legs: bench/Q8_0/d512, bench/Q4_0/d512"
	if code != 1 || !strings.Contains(out, "study 1 incomplete:") || !strings.Contains(out, "incomplete, no selection: 2 of 2 candidates pending ("+missing+")") ||
		strings.Contains(out, "selected ") || !strings.Contains(errOut, "`sparkbench study run 1` measures what is missing") {
		t.Fatalf("first run: exit %d, want 1, incomplete and no selection\nstdout %s\nstderr %s", code, out, errOut)
	}

	code, js, errOut := runCLI("study", "show", "1", "--notebook", nb, "--json")
	var res quant.Result
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil {
		t.Fatalf("show --json: %d %s %s", code, js, errOut)
	}
	sel := res.Selection
	if sel.Selected != "" || sel.RunnerUp != "" || !sel.Incomplete || len(sel.Pending) != 2 || len(sel.Rejected) != 0 {
		t.Fatalf("show --json selection of an incomplete ladder: %+v", sel)
	}
	if len(res.Verdicts) != 1 || res.Verdicts[0].Outcome != "PENDING" {
		t.Errorf("the pick's prediction on an incomplete ladder: %+v", res.Verdicts)
	}
	code, text, _ := runCLI("study", "show", "1", "--notebook", nb)
	if code != 0 || !strings.Contains(text, "Incomplete, no selection: 2 candidate(s) pending ("+missing+"); `sparkbench study run 1` measures them.") ||
		strings.Contains(text, "Selected:") || strings.Contains(text, "speed_missing") {
		t.Errorf("show:\n%s", text)
	}

	cplan := filepath.Join(dir, "serve.json")
	code, out, errOut = runCLI("quant", "handoff", "1", "--out", cplan, "--notebook", nb)
	if code != 2 || !strings.Contains(errOut, "is incomplete, no selection: 2 candidate(s) pending ("+missing+"); `sparkbench study run 1` measures them") {
		t.Errorf("handoff of an incomplete ladder: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(cplan); err == nil {
		t.Fatal("an incomplete ladder handed off a capacity plan")
	}

	bundle := filepath.Join(dir, "receipt")
	if code, _, errOut := runCLI("receipt", "1", "--notebook", nb, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if !strings.Contains(string(md), "**Incomplete, no selection**: 2 of 2 candidates pending") || !strings.Contains(string(md), "- pending Q4_0: missing legs bench/Q4_0/d512") ||
		strings.Contains(string(md), "Selected:") || strings.Contains(string(md), "speed_missing") {
		t.Errorf("receipt.md of an incomplete ladder:\n%s", md)
	}

	// The resume: the real build measures the two missing legs only.
	code, out, errOut = runCLI("study", "run", "1", "--notebook", nb, "--llama-dir", loc.Dir)
	legs := regexp.MustCompile(`study 1 complete: (\d+) legs, 2 derived model\(s\) reused`).FindStringSubmatch(out)
	if code != 0 || legs == nil || legs[1] != "2" || !strings.Contains(out, "selected ") ||
		!strings.Contains(out, "Q8_0: kept from the last run: KLD, speed at 1 of 2 depths") || strings.Contains(out, "kld-base") {
		t.Fatalf("resume: exit %d, want 0, complete with 2 legs run\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, js, _ = runCLI("study", "show", "1", "--notebook", nb, "--json")
	res = quant.Result{}
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil || res.Selection.Selected == "" || res.Selection.Incomplete {
		t.Fatalf("show after the resume: %d %+v", code, res.Selection)
	}
	for _, c := range res.Candidates {
		if c.Speed["tg@0"] <= 0 || c.Speed["tg@512"] <= 0 || c.KLD == nil {
			t.Errorf("%s not measured in full after the resume: %+v", c.Type, c)
		}
	}
	if code, out, errOut := runCLI("quant", "handoff", "1", "--out", cplan, "--notebook", nb); code != 0 {
		t.Fatalf("handoff after the resume: %d %s %s", code, out, errOut)
	}
}

// Registering a ladder plan twice is the study it registered (the message the other kinds
// give, exit 0), never SQLite's UNIQUE error; a different plan under the same name is
// registered under the name with its plan's short hash.
func TestQuantRegisterTwice(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q8_0", "Q4_0"}, 2)
	code, out, errOut := runCLI("study", "register", plan, "--notebook", nb)
	if code != 0 || !strings.Contains(out, `study 1 "ladder test" registered`) {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI("study", "register", plan, "--notebook", nb)
	if code != 0 || !strings.Contains(out, `study 1 "ladder test": already registered with this plan (sha256 `) || strings.Contains(out+errOut, "UNIQUE") {
		t.Fatalf("register again: %d\n%s\n%s", code, out, errOut)
	}
	editPlan(t, plan, map[string]any{"quants": []string{"Q8_0"}, "predictions": nil})
	code, out, errOut = runCLI("study", "register", plan, "--notebook", nb)
	if code != 0 || !regexp.MustCompile(`study 2 "ladder test \[[0-9a-f]{12}\]" registered`).MatchString(out) || strings.Contains(out+errOut, "UNIQUE") {
		t.Fatalf("another plan under the same name: %d\n%s\n%s", code, out, errOut)
	}
}

// An explicit zero in a ladder plan is refused with its range through the CLI, never frozen as
// the default (speed.reps 0 was frozen as 5, quality.chunks 0 as 20).
func TestQuantExplicitZerosRefused(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q8_0"}, 2)
	editPlan(t, plan, map[string]any{
		"speed":   map[string]any{"depths": []int{0}, "reps": 0},
		"quality": map[string]any{"corpus": map[string]any{"path": corpusPath(), "sha256": corpusSHA}, "chunks": 0},
		"rule":    map[string]any{"maximize": "tg@0"}, "predictions": nil})
	code, out, errOut := runCLI("study", "register", plan, "--notebook", nb)
	for _, want := range []string{"speed.reps: 0: want at least 1, or leave the field out for the default 5", "quality.chunks: 0: want at least 1, or leave the field out for the default 20"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("register lacks %q", want)
		}
	}
	if code != 2 || t.Failed() {
		t.Fatalf("register of explicit zeros: exit %d, want 2\n%s\n%s", code, out, errOut)
	}
}
