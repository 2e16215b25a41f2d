package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sparkbench/app/receipt/receipttest"
	"sparkbench/runner/llamatest"
)

// TestAdaptiveReceiptCLI runs an adaptive study on the real llama-bench (a target three
// chunks of three never meet), follows its progress lines, writes its receipt and verifies
// it: each chunk's line says its round and repetitions (never "leg 1/2" for every chunk), the
// bundle names the adaptive receipt rules, and receipt.md says how each cell ended, each
// round's order and that a value merges the chunks.
func TestAdaptiveReceiptCLI(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	id := registerAndRun(t, nb, writeAdaptivePlan(t, dir, "adaptive receipt", tiny, tinySHA, 5), loc.Dir, false)
	code, out, errOut := runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	var starts []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " started: ") {
			starts = append(starts, l[:strings.Index(l, " started: ")])
		}
	}
	// 2 legs (depths 0 and 64), 9 repetitions in chunks of 3: 3 rounds of 2 chunks.
	if len(starts) != 6 {
		t.Fatalf("%d chunks started, want 6:\n%s", len(starts), out)
	}
	for i, s := range starts {
		round, in := i/2+1, i%2+1
		want := []string{"round " + strconv.Itoa(round) + ", chunk " + strconv.Itoa(in) + "/2: leg m/d", " chunk " + strconv.Itoa(round) + " (reps " + strconv.Itoa(3*round-2) + "–" + strconv.Itoa(3*round) + " of at most 9)"}
		if !strings.HasPrefix(s, want[0]) || !strings.HasSuffix(s, want[1]) {
			t.Errorf("progress line %d: %q, want %q…%q", i+1, s, want[0], want[1])
		}
	}
	if strings.Contains(out, "leg 1/2") {
		t.Errorf("run output still counts plan legs per chunk:\n%s", out)
	}

	bundle := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", id, "--notebook", nb, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	ix, err := os.ReadFile(filepath.Join(bundle, "bundle.json"))
	if err != nil || !strings.Contains(string(ix), `"rules":4`) {
		t.Errorf("bundle.json %s (%v): want the receipt rules that say how adaptive cells and legs ended, and their processes", ix, err)
	}
	b, err := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"## Adaptive repetitions", "**Stopped at the maximum: precision not reached**",
		"| m/d0 | 3 | 9 | tg8 @ d0 |", "| m/d64 | 3 | 9 | tg8 @ d64 |", "precision not reached after 9 reps |", "| no target (9 reps) |",
		"- Round 1: m/d", "- Round 3: m/d", "Each value merges the cell's chunks", "- CV gates: not applied to the chunks",
		// issue 31, item 7: the unit in one line, and each cell's n and m
		"### Processes: the unit of replication", "95% intervals over 3 processes of 3 repetitions (one degree of freedom charged for the adaptive stop); between-process spread ",
		"| m tg8 @ d0 | 3 | 3 | ", "| m tg8 @ d64 | 3 | 3 | ",
		"the mean of the chunks' means ± the sd over every kept repetition of every chunk", "the mean being the mean of the chunks' means"} {
		if !strings.Contains(md, want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	sj, err := os.ReadFile(filepath.Join(bundle, "study.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sj), `"mean_sd":"mean ± sd: the mean of the cell's chunk means`) {
		t.Error("study.json's definitions do not say the mean is of the chunks' means")
	}
	if probs := receipttest.CrossCheck(b, sj); len(probs) > 0 {
		t.Errorf("numbers of receipt.md not in study.json: %q", probs)
	}
	if strings.Contains(md, "one llama-bench row") {
		t.Error("receipt.md labels a merged cell as one llama-bench row")
	}
}
