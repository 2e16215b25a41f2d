package receipt

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/receipt/receipttest"
)

// adaptiveFixture reads testdata/adaptive's raw files (an adaptive bundle written before
// receipts said how adaptive cells ended; README.md there).
func adaptiveFixture(t *testing.T) Files {
	t.Helper()
	files := Files{}
	root := filepath.Join("testdata", "adaptive")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOlderAdaptiveBundleStillVerifies: the raw files of an adaptive bundle written by the
// version before (no receipt rules in bundle.json) re-make the receipt.md and study.json that
// version wrote, byte for byte: what verify compares.
func TestOlderAdaptiveBundleStillVerifies(t *testing.T) {
	files := adaptiveFixture(t)
	js, md, err := Assemble(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  []byte
	}{{"adaptive.v1.receipt.md", md}, {"adaptive.v1.study.json", js}} {
		want, err := os.ReadFile(filepath.Join("testdata", c.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.got, want) {
			line, g, w := firstLine(c.got, want)
			t.Errorf("%s: re-made from an older bundle's raw files, differs at line %d:\n got  %q\n want %q", c.name, line, g, w)
		}
	}
	if err := Finish(files); err != nil {
		t.Fatal(err)
	}
	if rep := Verify(files, VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Errorf("verify: %v", rep.Problems)
	}
}

// withRules is the fixture's raw files with bundle.json naming rules n (0: none), finished.
func withRules(t *testing.T, n int) Files {
	t.Helper()
	files := adaptiveFixture(t)
	ix := `{"kind":"throughput","schema":"sparkbench.bundle/v1","sparkbench":"sparkbench 0.1.0 go1.26.8 linux/amd64"}`
	if n != 0 {
		ix = fmt.Sprintf(`{"kind":"throughput","rules":%d,"schema":"sparkbench.bundle/v1","sparkbench":"sparkbench 0.1.0 go1.26.8 linux/amd64"}`, n)
	}
	files[FileIndex] = []byte(ix + "\n")
	if err := Finish(files); err != nil {
		t.Fatal(err)
	}
	return files
}

// TestAdaptiveReceiptSaysHowEachCellEnded: an adaptive bundle written under RulesAdaptiveCells
// says, in receipt.md, how each cell ended ("precision not reached"), the warm-up repetitions
// dropped, each round's order, that a result merges the chunks (not "one llama-bench row"),
// the adaptive repetitions and that the CV gates were off; every number comes from study.json
// and the bundle verifies; an edited end fails verify naming receipt.md.
func TestAdaptiveReceiptSaysHowEachCellEnded(t *testing.T) {
	files := withRules(t, RulesAdaptiveCells)
	md := string(files[FileReceipt])
	for _, want := range []string{
		"## Adaptive repetitions",
		"Rule, registered with the plan: 3 to 6 reps in chunks of 3 until tg ±0.001%, pp ±0.001% (95% CI of the mean); blocks order, seed 19; warm-up: up to 1 leading rep(s) per chunk more than 0.1% below the rest's median dropped.",
		"**Stopped at the maximum: precision not reached**",
		"| Leg | Chunks | Reps | Cell | Kept | Warm-up dropped | 95% CI of the mean | Target | Ended |",
		"| tiny/d0 | 2 | 6 | pp16 @ d0 | 5 | 1 | ±67.28% | ±0.001% | precision not reached after 6 reps |",
		"| tiny/d0 | 2 | 6 | tg8 @ d0 | 4 | 2 | ±7.36% | ±0.001% | precision not reached after 6 reps |",
		"| tiny/d64 | 2 | 6 | tg8 @ d64 | 5 | 1 | ±66.48% | ±0.001% | precision not reached after 6 reps |",
		"- Round 1: tiny/d0 → tiny/d64", "- Round 2: tiny/d0 → tiny/d64",
		"Each value merges the cell's chunks, one llama-bench process each: mean ± sd over every kept repetition of every chunk",
		"mean ± sd over the kept repetitions of every chunk (adaptive repetitions)",
		"adaptive repetitions: `3` to `6` per test, in chunks",
		"- CV gates: not applied to the chunks",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	for _, never := range []string{"Each value is one llama-bench row", "`0` repetitions per test", "a test above its gate is flagged"} {
		if strings.Contains(md, never) {
			t.Errorf("receipt.md still says %q", never)
		}
	}
	if js := string(files[FileStudy]); !strings.Contains(js, `"adaptive_ci":`) || !strings.Contains(js, `"cv_gate":"the CV gates are not applied to an adaptive plan's chunks`) {
		t.Error("study.json's definitions lack the adaptive ones")
	}
	if !strings.Contains(md, "- `cv_gate`: the CV gates are not applied to an adaptive plan's chunks") {
		t.Error("receipt.md's definitions still say a chunk's CV gate halts its leg")
	}
	tables, probs := receipttest.Tables(files[FileReceipt])
	if len(probs) > 0 || len(tables) < 5 {
		t.Fatalf("tables %d, problems %v", len(tables), probs)
	}
	if bad := receipttest.CrossCheck(files[FileReceipt], files[FileStudy]); len(bad) > 0 {
		t.Errorf("numbers not in study.json: %v", bad)
	}
	if rep := Verify(files, VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
	// A receipt.md that says a cell met its target, its sums re-made, fails verify.
	forged := Files{}
	for k, v := range files {
		forged[k] = v
	}
	forged[FileReceipt] = bytes.Replace(files[FileReceipt], []byte("| ±7.36% | ±0.001% | precision not reached after 6 reps |"), []byte("| ±7.36% | ±0.001% | met after 6 reps |"), 1)
	forged[FileSums] = Sums(forged)
	rep := Verify(forged, VerifyOptions{HashPlots: true})
	if rep.OK() || rep.Problems[0].File != FileReceipt {
		t.Errorf("a forged end verified: %+v", rep.Problems)
	}
	// The same raw files without the rules re-make the older receipt, which says none of it.
	old := withRules(t, 0)
	if strings.Contains(string(old[FileReceipt]), "## Adaptive repetitions") || !bytes.Equal(old[FileStudy], mustRead(t, "adaptive.v1.study.json")) {
		t.Error("without rules, the older receipt is not what it was")
	}
}

// TestUnknownReceiptRulesRefused: a bundle.json naming rules this version does not know is
// refused, saying which it knows and who wrote it.
func TestUnknownReceiptRulesRefused(t *testing.T) {
	files := adaptiveFixture(t)
	files[FileIndex] = []byte(`{"kind":"throughput","rules":5,"schema":"sparkbench.bundle/v1","sparkbench":"sparkbench 9.9"}` + "\n")
	_, _, err := Assemble(files)
	if err == nil || !strings.Contains(err.Error(), `bundle.json: rules 5: this sparkbench knows the first (no "rules") and [2 3 4] for a throughput bundle; sparkbench 9.9 wrote it`) {
		t.Errorf("rules 5: %v", err)
	}
	files[FileIndex] = []byte(`{"kind":"capacity","rules":2,"schema":"sparkbench.bundle/v1","sparkbench":"sparkbench 9.9","capacity":{"plan":"plan.json","requests":{},"rss":{},"server_logs":{}}}` + "\n")
	if _, err := ReadIndex(files); err == nil || !strings.Contains(err.Error(), `knows only the first (no "rules") for a capacity bundle`) {
		t.Errorf("capacity rules 2: %v", err)
	}
}

// TestThroughputRulesFollowThePlan: a bundle written now names the newest rules, adaptive
// plan or not (RulesLegReasons holds RulesAdaptiveCells' statements for an adaptive plan); a
// plan that does not decode gets none.
func TestThroughputRulesFollowThePlan(t *testing.T) {
	if got := ThroughputRules(adaptiveFixture(t)[FilePlan]); got != RulesProcessCells {
		t.Errorf("adaptive plan: rules %d", got)
	}
	if got := ThroughputRules(mustRead(t, filepath.Join("throughput", FilePlan))); got != RulesProcessCells {
		t.Errorf("fixed plan: rules %d", got)
	}
	if got := ThroughputRules([]byte("{")); got != 0 {
		t.Errorf("a plan that does not decode: rules %d", got)
	}
}

// The adaptive fixture (every leg ok) re-made under RulesLegReasons verifies and is the
// receipt RulesAdaptiveCells makes, byte for byte: no leg to explain, and its cells said as
// before. (A receipt with legs to explain: TestCVGateCountsWithItsFlagRealBench.)
func TestLegReasonRulesKeepAnAllOkReceipt(t *testing.T) {
	files := withRules(t, RulesLegReasons)
	if rep := Verify(files, VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Fatalf("adaptive under rules %d: %v", RulesLegReasons, rep.Problems)
	}
	two := withRules(t, RulesAdaptiveCells)
	if !bytes.Equal(files[FileReceipt], two[FileReceipt]) {
		t.Errorf("an all-ok adaptive receipt differs between rules %d and %d", RulesAdaptiveCells, RulesLegReasons)
	}
}

// TestProcessCellsRules (issue 31, item 7): a bundle written under RulesProcessCells states
// each cell at the process level, in study.json (results[].processes: n, m, the interval over
// processes or none) and in receipt.md (the model in one line, a table of n, m, interval and
// spreads), verifies, and verify re-derives those figures from the rows: an edited interval
// fails it. The same raw files under the rules before say none of it.
func TestProcessCellsRules(t *testing.T) {
	fixed := loadFixture(t)
	fixed[FileIndex] = []byte(`{"kind":"throughput","rules":4,"schema":"sparkbench.bundle/v1","sparkbench":"sparkbench 0.1.0 go1.26.8 linux/amd64"}` + "\n")
	if err := Finish(fixed); err != nil {
		t.Fatal(err)
	}
	md, js := string(fixed[FileReceipt]), string(fixed[FileStudy])
	for _, want := range []string{
		"### Processes: the unit of replication",
		"one process of 5 repetitions per cell: point estimates, no intervals; within-process spread ",
		"| Cell | n processes | m reps each | Mean of process means | 95% CI over processes | Between-process spread | Within-process spread |",
		"| tiny tg16 @ d0 | 1 | 5 | 23173.80 | point estimate (one process) | not measured | 7.80% |",
		"| point estimate (one process) | not measured |",
		"- **P1**, at the process level: n=1 m=5, no interval over processes (a point estimate): the verdict rests on one value",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("receipt.md under rules 4 lacks %q", want)
		}
	}
	if !strings.Contains(js, `"processes":{"between_cv":null,"half_width":null,"hi_ts":null,"lo_ts":null,"m":"5","mean_ts":`) || !strings.Contains(js, `"process_interval":`) {
		t.Errorf("study.json under rules 4 does not state the cells' processes")
	}
	if rep := Verify(fixed, VerifyOptions{}); !rep.OK() {
		t.Fatalf("rules 4: %v", rep.Problems)
	}
	// an edited figure of the process table does not verify
	forged := maps.Clone(fixed)
	forged[FileStudy] = []byte(strings.Replace(js, `"m":"5"`, `"m":"50"`, 1))
	forged[FileSums] = Sums(forged)
	if rep := Verify(forged, VerifyOptions{}); rep.OK() {
		t.Error("a study.json whose m was edited verifies")
	}
	// the adaptive fixture: two chunks after an adaptive stop have no interval, and say so
	ad := withRules(t, RulesProcessCells)
	if !strings.Contains(string(ad[FileReceipt]), "| none (fewer than 3 processes after an adaptive stop) |") {
		t.Errorf("adaptive cells under rules 4:\n%s", ad[FileReceipt])
	}
	if rep := Verify(ad, VerifyOptions{}); !rep.OK() {
		t.Fatalf("adaptive under rules 4: %v", rep.Problems)
	}
	three := withRules(t, RulesLegReasons)
	if strings.Contains(string(three[FileReceipt]), "Processes: the unit") || strings.Contains(string(three[FileStudy]), `"processes":{`) ||
		strings.Contains(string(three[FileReceipt]), "at the process level") {
		t.Error("rules 3 state the processes: an older bundle would not re-make as it was")
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
