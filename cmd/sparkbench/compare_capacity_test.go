package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
)

// compareCapacityPlan writes the acceptance plan cut down to one slot count (P1, which reads C1, and P3 kept)
// under name, with the client levels given, and returns its path.
func compareCapacityPlan(t *testing.T, dir, name string, clients []int) string {
	t.Helper()
	path := capacityStudyPlan(t, dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["name"] = name
	m["slots"] = []int{1}
	m["clients"] = clients
	preds := m["predictions"].([]any)
	m["predictions"] = []any{preds[0], preds[2]}
	if clients[0] != 1 { // P1 reads C1
		m["predictions"] = []any{preds[2]}
	}
	b, _ = json.MarshalIndent(m, "", "  ")
	out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// registerAndRunCapacity registers plan in the notebook and runs it on real llama-server.
func registerAndRunCapacity(t *testing.T, plan, nbPath, id string) {
	t.Helper()
	if code, stdout, stderr := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register %s: exit %d\n%s%s", plan, code, stdout, stderr)
	}
	if code, stdout, stderr := runCapacity("run", id, "--notebook", nbPath); code != 0 {
		t.Fatalf("run %s: exit %d\n%s%s", id, code, stdout, stderr)
	}
}

// Two capacity studies of the same candidates (two runs of one plan, renamed) compared end to
// end: the shared cells with each side's figures and the statistics of the throughput
// comparison, the shared verdicts; a study measured at other client levels shares no cell, and
// a throughput study is refused, each with the reason.
func TestCapacityCompareTwoRuns(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nbPath := filepath.Join(dir, "notebook.db")
	registerAndRunCapacity(t, compareCapacityPlan(t, dir, "cap A", []int{1, 2}), nbPath, "1")
	registerAndRunCapacity(t, compareCapacityPlan(t, dir, "cap B", []int{1, 2}), nbPath, "2")

	code, stdout, stderr := runCapacity("compare", "1", "2", "--notebook", nbPath, "--json")
	if code != 0 {
		t.Fatalf("compare --json: exit %d\n%s%s", code, stdout, stderr)
	}
	var c workbench.CapacityComparison
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	// 2 candidates x P1 x C{1,2}, matched by model and flags (the plans' names differ).
	if c.Schema != workbench.CapacityComparisonSchema || len(c.Studies) != 2 || c.MatchedBy != workbench.MatchByModelFlags || len(c.Cells) != 4 {
		t.Fatalf("comparison: %+v", c)
	}
	for _, cell := range c.Cells {
		if cell.Slots != 1 || len(cell.GenerationRate) != 2 || cell.GenerationRate[0] == nil || cell.GenerationRate[1] == nil ||
			len(cell.Pairs) != 1 || cell.Pairs[0].Study != 2 || cell.Candidates[0] != cell.Candidates[1] {
			t.Errorf("cell %+v", cell)
			continue
		}
		p := cell.Pairs[0]
		// 3 measured requests per level x 2 passes per study, every one completed
		for name, m := range map[string]int{"ttft": p.TTFTMs.Base.N + p.TTFTMs.New.N, "e2e": p.E2EMs.Base.N + p.E2EMs.New.N,
			"per-stream": p.PerStream.Base.N + p.PerStream.New.N} {
			if m != 12 {
				t.Errorf("%s/P%d/C%d %s: %d requests compared", cell.Candidate, cell.Slots, cell.Clients, name, m)
			}
		}
		if p.E2EMs.Test == "" || p.E2EMs.Alpha != 0.05 {
			t.Errorf("e2e comparison %+v", p.E2EMs)
		}
	}
	if len(c.Verdicts) != 2 || c.Verdicts[0].Prediction != "P1" || len(c.Verdicts[0].Words) != 2 {
		t.Errorf("verdicts %+v", c.Verdicts)
	}

	code, stdout, stderr = runCapacity("compare", "1", "2", "--notebook", nbPath)
	t.Logf("capacity compare 1 2:\n%s", stdout)
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range []string{`baseline: study 1 "cap A"`, `compared: study 2 "cap B"`, "candidates matched by " + workbench.MatchByModelFlags,
		"dense      1  1  2", "moe        1  2  2", "Hodges-Lehmann", "P1: study 1 ", c.Verdicts[0].Words[0],
		"These per-request figures are POOLED across passes"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("compare output lacks %q:\n%s", w, stdout)
		}
	}

	// The comparison's receipt: verify re-derives it byte for byte, and refuses it tampered.
	out := filepath.Join(dir, "capcompare")
	if code, stdout, stderr := runCapacity("compare", "1", "2", "--notebook", nbPath, "--out", out); code != 0 || !strings.Contains(stdout, "comparison receipt written to "+out) {
		t.Fatalf("compare --out: exit %d\n%s%s", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, workbench.FileComparisonMD))
	if err != nil || !strings.Contains(string(md), "| dense | 1 | 1 | 2 | ") || !strings.Contains(string(md), "- P1: study 1 ") ||
		!strings.Contains(string(md), "POOLED across passes") {
		t.Errorf("comparison.md (%v):\n%s", err, md)
	}
	// overlaid charts: slots along the diagonal (P1/C1 here), latency per candidate
	for _, png := range []string{"plots/slots.png", "plots/latency-dense.png", "plots/latency-moe.png"} {
		if b, err := os.ReadFile(filepath.Join(out, png)); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: %v", png, err)
		}
		if !strings.Contains(string(md), "]("+png+")") {
			t.Errorf("comparison.md does not show %s", png)
		}
	}
	var vo, ve bytes.Buffer
	if code := cmdVerify([]string{out}, &vo, &ve); code != 0 || !strings.Contains(vo.String(), "plots/latency-moe.png re-made from comparison.json byte for byte") {
		t.Fatalf("verify: exit %d\n%s%s", code, vo.String(), ve.String())
	}
	if err := os.WriteFile(filepath.Join(out, workbench.FileComparisonMD), append(md, "tampered\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	vo.Reset()
	ve.Reset()
	if code := cmdVerify([]string{out}, &vo, &ve); code == 0 || !strings.Contains(vo.String()+ve.String(), workbench.FileComparisonMD) {
		t.Errorf("tampered comparison.md verified: exit %d\n%s%s", code, vo.String(), ve.String())
	}

	// The window's compare service takes the same studies: the table and verdicts it shows.
	nbw, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := compareService{nbw}.Compare(context.Background(), []int64{1, 2}, ui.CompareOptions{})
	nbw.Close()
	if err != nil || len(wc.Cells) != 4 || wc.Cells[0][0] != "2 vs 1" || wc.Cells[0][1] != "dense P1/C1" ||
		!strings.Contains(wc.Cells[0][4], "TTFT ") || len(wc.Verdicts) != 2 || !strings.Contains(wc.Footer, "Hodges-Lehmann") {
		t.Errorf("window comparison: %v %+v", err, wc)
	}

	registerAndRunCapacity(t, compareCapacityPlan(t, dir, "cap C", []int{3}), nbPath, "3")
	code, _, stderr = runCapacity("compare", "1", "3", "--notebook", nbPath)
	if code != 2 || !strings.Contains(stderr, "the studies share no cell") || !strings.Contains(stderr, "study 1: candidates dense") ||
		!strings.Contains(stderr, "clients [1 2]") || !strings.Contains(stderr, "clients [3]") {
		t.Errorf("no shared cell: exit %d\n%s", code, stderr)
	}

	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := nb.CreateStudy(context.Background(), store.Study{Name: "a throughput study", Kind: store.StudyThroughput})
	nb.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCapacity("compare", "1", tp.Name, "--notebook", nbPath)
	if code != 2 || !strings.Contains(stderr, "is a throughput study: a capacity comparison takes capacity and concurrency studies only") {
		t.Errorf("throughput study: exit %d\n%s", code, stderr)
	}
}
