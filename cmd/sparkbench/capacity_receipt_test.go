package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
)

// TestCapacityStudyReceiptAndPlots: a capacity study registered and run through the notebook
// gets its receipt from the journaled run folder (verify passes) and its charts from
// `plot STUDY`.
func TestCapacityStudyReceiptAndPlots(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := capacityStudyPlan(t, dir)
	nbPath := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCapacity("run", "1", "--notebook", nbPath); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	bundleDir := filepath.Join(dir, "receipt")
	code, out, errOut := runCLI("receipt", "1", "--out", bundleDir, "--notebook", nbPath)
	if code != 0 || !strings.Contains(out, "check it anywhere with `sparkbench verify") {
		t.Fatalf("receipt: %d\n%s\n%s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundleDir, "receipt.md"))
	if err != nil || !strings.Contains(string(md), "Capacity envelope") {
		t.Fatalf("receipt.md: %v\n%.400s", err, md)
	}
	if code, out, errOut := runCLI("verify", bundleDir); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
	for _, c := range [][]string{
		{"plot", "1", "--kind", "envelope", "--out", filepath.Join(dir, "env.png")},
		{"plot", "1", "--kind", "envelope", "--candidate", "moe", "--out", filepath.Join(dir, "env-moe.svg")},
		{"plot", "1", "--kind", "latency", "--out", filepath.Join(dir, "lat.png")},
		{"plot", "1", "--kind", "slots", "--out", filepath.Join(dir, "slots.pdf")},
	} {
		if code, out, errOut := runCLI(append(c, "--notebook", nbPath)...); code != 0 {
			t.Errorf("%v: %d %s %s", c, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI("plot", "1", "--kind", "depth", "--out", filepath.Join(dir, "d.png"), "--notebook", nbPath); code != 2 || !strings.Contains(errOut, "envelope, latency or slots") {
		t.Errorf("depth of a capacity study: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI("plot", "1", "--kind", "envelope", "--candidate", "nope", "--out", filepath.Join(dir, "x.png"), "--notebook", nbPath); code != 2 || !strings.Contains(errOut, `no candidate "nope"`) {
		t.Errorf("unknown candidate: %d %s", code, errOut)
	}
}
