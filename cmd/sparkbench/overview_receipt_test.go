package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/overview"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
)

// TestOverviewReceipt: `overview receipt` writes the notebook's badge table and constants
// ladder as a receipt (overview.json, overview.md, SHA256SUMS) holding the same tables the
// `overview badges|constants --json` verbs print, every value with its study, leg and row;
// `sparkbench verify` re-makes overview.md from overview.json byte for byte and refuses an
// edited copy; bad input is refused with what to do.
func TestOverviewReceipt(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	f32 := llamatest.Model(t, "tiny-llama-f32.gguf")
	if code, _, errOut := runCLI("overview", "receipt", "--notebook", nb, "--out", filepath.Join(dir, "empty")); code != 2 {
		t.Errorf("an empty notebook: %d %q, want 2", code, errOut)
	}
	registerAndRun(t, nb, writeOverviewPlan(t, dir, "overview receipt", [][3]string{{"tiny", f32, tinySHA}}), loc.Dir, true)
	if code, _, errOut := runCLI("overview", "receipt", "--notebook", nb); code != 2 || !strings.Contains(errOut, "--out DIR|FILE.tar.gz is required") {
		t.Errorf("no --out: %d %q", code, errOut)
	}
	out := filepath.Join(dir, "overview-receipt")
	code, stdout, errOut := runCLI("overview", "receipt", "--notebook", nb, "--out", out, "--line", "50")
	if code != 0 || !strings.Contains(stdout, "check it anywhere with `sparkbench verify") {
		t.Fatalf("overview receipt: %d\n%s\n%s", code, stdout, errOut)
	}
	if code, stdout, errOut := runCLI("verify", out); code != 0 || !strings.Contains(stdout+errOut, "overview.md re-made from overview.json byte for byte") {
		t.Fatalf("verify: %d\n%s\n%s", code, stdout, errOut)
	}
	var r workbench.OverviewReceipt
	b, _ := os.ReadFile(filepath.Join(out, workbench.FileOverview))
	if err := json.Unmarshal(b, &r); err != nil || r.Overview == nil || r.Machine == "" {
		t.Fatalf("overview.json: %v %+v", err, r)
	}
	_, badgesJSON, _ := runCLI("overview", "badges", "--notebook", nb, "--line", "50", "--json")
	var bt struct {
		Studies []overview.StudyEntry `json:"studies"`
		overview.BadgeTable
	}
	if err := json.Unmarshal([]byte(badgesJSON), &bt); err != nil || len(bt.Rows) == 0 || !reflect.DeepEqual(bt.Rows, r.Overview.Badges.Rows) {
		t.Errorf("the receipt's badge rows differ from overview badges --json (%v)", err)
	}
	_, badgesText, _ := runCLI("overview", "badges", "--notebook", nb, "--line", "50")
	_, ladderText, _ := runCLI("overview", "constants", "--notebook", nb)
	md, _ := os.ReadFile(filepath.Join(out, workbench.FileOverviewMD))
	if !strings.Contains(string(md), badgesText) || !strings.Contains(string(md), ladderText) {
		t.Errorf("overview.md does not hold the CLI's tables:\n%s", md)
	}
	// The badge table is re-derived from the rows the receipt carries: a badge's d0 value
	// forged, overview.md and SHA256SUMS re-made with the program's own functions, is refused,
	// naming the figure.
	if code, stdout, errOut := runCLI("verify", out); code != 0 || !strings.Contains(stdout, "the badge table re-derived, and the ") {
		t.Errorf("verify does not say it re-derived the badges: %d\n%s%s", code, stdout, errOut)
	}
	forged := r
	fo := *r.Overview
	forged.Overview = &fo
	fo.Badges.Rows = slices.Clone(r.Overview.Badges.Rows)
	realTS := fo.Badges.Rows[0].D0.TS
	fo.Badges.Rows[0].D0.TS = realTS*1.25 + 1
	ff, err := workbench.OverviewFiles(&forged)
	if err != nil {
		t.Fatal(err)
	}
	fdir := filepath.Join(dir, "forged-overview")
	if err := bundle.Write(fdir, ff); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := runCLI("verify", fdir); code != 1 || !strings.Contains(stdout, "DIFFERS overview.json: badge row "+fo.Badges.Rows[0].Model+" (") ||
		!strings.Contains(stdout, "badges.rows[0].d0.ts is ") || !strings.Contains(stdout, "DIFFERS overview.md: ") {
		t.Errorf("a forged badge value: verify %d\n%s%s", code, stdout, errOut)
	}
	// An edited overview.md: refused, naming it.
	if err := os.WriteFile(filepath.Join(out, workbench.FileOverviewMD), append(md, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := runCLI("verify", out); code == 0 || !strings.Contains(stdout+errOut, workbench.FileOverviewMD) {
		t.Errorf("an edited overview.md: verify %d\n%s%s", code, stdout, errOut)
	}
}
