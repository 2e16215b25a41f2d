package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
)

// A comparison prediction with "stats": "benchmath", on the real llama-bench (-t 1, five
// repetitions): judged on the two cells' repetitions (the Hodges–Lehmann interval of the
// difference against the tolerance, the Mann–Whitney U test beside it) in study show, its
// --json and the receipt, which verifies; a plan of three repetitions is warned at validation.
func TestStatsComparisonPredictionRealBench(t *testing.T) {
	llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "nb.db")
	pred := `, "predictions": [{"id": "C1", "text": "moe generates at least 1% of tiny's rate at d0", "kind": "comparison", "stats": "benchmath",
    "about": {"figure": "cell", "model": "moe", "test": "tg16", "depth": 0}, "op": ">=", "tolerance": 0.99,
    "than": {"figure": "cell", "model": "tiny", "test": "tg16", "depth": 0}}]`
	few := writePlan(t, dir, "stats few", tiny, moe, 3, 16, pred)
	if code, out, errOut := runCLI("study", "validate", few); code != 0 || !strings.Contains(out+errOut, "3 repetitions per cell give no 95% interval") {
		t.Errorf("three repetitions: %d %s %s", code, out, errOut)
	}
	file := writePlan(t, dir, "stats", tiny, moe, 5, 16, pred)
	code, out, errOut := runCLI("study", "run", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	vd := &scoreOf(t, nb, "C1").Verdict
	if vd.Outcome != study.Holds || !strings.Contains(vd.Detail, "Hodges–Lehmann interval, Mann-Whitney U p=") || vd.Value == nil || vd.Other == nil {
		t.Fatalf("C1: %+v", vd)
	}
	if md := receiptVerified(t, nb, dir); !strings.Contains(md, "Hodges–Lehmann interval") {
		t.Errorf("the receipt lacks the interval:\n%s", md)
	}
}

// TestProcessComparisonPredictionRealBench: a comparison judged on the processes ("stats":
// "process", issue 31) on an adaptive plan run by the real llama-bench: three chunks a cell are
// its processes, the verdict's interval is over their means (n=3+3 processes of m=3), HOLDS;
// the receipt says it was judged on the processes and verifies. The same claim on a fixed plan
// is warned at validation: one process per cell gives no interval.
func TestProcessComparisonPredictionRealBench(t *testing.T) {
	llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "nb.db")
	pred := `, "predictions": [{"id": "C1", "text": "moe generates at least 1% of tiny's rate at d0", "kind": "comparison", "stats": "process",
    "about": {"figure": "cell", "model": "moe", "test": "tg16", "depth": 0}, "op": ">=", "tolerance": 0.99,
    "than": {"figure": "cell", "model": "tiny", "test": "tg16", "depth": 0}}]`
	fixed := writePlan(t, dir, "process fixed", tiny, moe, 3, 16, pred)
	if code, out, errOut := runCLI("study", "validate", fixed); code != 0 || !strings.Contains(out+errOut, "gives no interval between processes: this comparison will be inconclusive") {
		t.Errorf("a fixed plan: %d %s %s", code, out, errOut)
	}
	adaptive := `, "adaptive": {"min_reps": 3, "max_reps": 9, "chunk_reps": 3, "targets": [{"test": "tg", "rel": 0.00001}], "order": "blocks", "seed": 3}` + pred
	file := writePlan(t, dir, "process adaptive", tiny, moe, 0, 16, adaptive)
	if code, out, errOut := runCLI("study", "run", file, "--notebook", nb); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	sc := scoreOf(t, nb, "C1")
	if sc.Verdict.Outcome != study.Holds || !strings.Contains(sc.Verdict.Detail, "95% interval over n=3+3 processes of m=3+3") ||
		!strings.Contains(sc.Expected, study.StatsJudgedProcesses) {
		t.Fatalf("C1: %+v", sc)
	}
	if md := receiptVerified(t, nb, dir); !strings.Contains(md, "**C1**, judged on the processes: ") {
		t.Errorf("the receipt lacks the processes' interval:\n%s", md)
	}
}

// scoreOf runs show --json of study 1 and returns prediction id's line of the scoreboard.
func scoreOf(t *testing.T, nb, id string) *study.ReportScore {
	t.Helper()
	code, js, _ := runCLI("study", "show", "1", "--notebook", nb, "--json")
	var rep study.Report
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil {
		t.Fatalf("show --json: %d %s", code, js)
	}
	for i := range rep.Scoreboard {
		if rep.Scoreboard[i].Prediction == id {
			return &rep.Scoreboard[i]
		}
	}
	t.Fatalf("no prediction %s in the scoreboard", id)
	return nil
}

// receiptVerified writes study 1's receipt, verifies it and returns its receipt.md.
func receiptVerified(t *testing.T, nb, dir string) string {
	t.Helper()
	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", "1", "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(md)
}
