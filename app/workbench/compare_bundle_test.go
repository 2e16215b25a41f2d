package workbench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
)

// comparisonFixture is a comparison of two adaptive studies (so benchmath: medians 703.78
// and 688.52 in the one shared cell) made as CompareStudies makes it, with the rows carried.
func comparisonFixture(t *testing.T) *ComparisonSet {
	t.Helper()
	models := []study.ComparedModel{{ID: "m", SHA256: strings.Repeat("ab", 32)}}
	side := func(id int64, samples ...float64) study.CompareSide {
		return study.CompareSide{Study: study.ComparedStudy{ID: id, Name: "s", Status: "complete", PlanSHA256: strings.Repeat("cd", 32), Models: models},
			Adaptive: true, Rows: []study.CompareRow{{Leg: "m/d0", Ref: "leg 1 row 1", Model: "m", Test: "tg32", Depth: 0, Config: "ub512 b2048 fa-off kv-f16/f16 t1 ngl0",
				SamplesTs: samples, Chunks: []int{3, 2}}}}
	}
	base := side(1, 703.78, 704.20, 703.50, 704.90, 702.80)
	nw := side(2, 688.52, 689.00, 688.30, 689.40, 687.90)
	set := &ComparisonSet{Schema: ComparisonSchema, Metric: "tg", Verdicts: []SharedVerdict{}, Notes: []string{},
		Options: &ComparisonOptions{Alpha: 0.05}, Sides: []study.CompareSide{base, nw}}
	c, err := study.CompareSides(base, nw, set.Options.compare())
	if err != nil {
		t.Fatal(err)
	}
	set.Studies = []study.ComparedStudy{c.Baseline, c.New}
	set.Pairs = []*study.StudyComparison{c}
	if m := c.Cells[0].Medians; m == nil || m.Base.Median != 703.78 || m.New.Median != 688.52 {
		t.Fatalf("fixture medians %+v", m)
	}
	return set
}

// forge changes comparison.json as edit says and re-makes comparison.md and SHA256SUMS with the
// program's own functions.
func forge(t *testing.T, files receipt.Files, edit func(*ComparisonSet)) {
	t.Helper()
	var set ComparisonSet
	if err := json.Unmarshal(files[FileComparison], &set); err != nil {
		t.Fatal(err)
	}
	edit(&set)
	b, err := canon.Marshal(&set)
	if err != nil {
		t.Fatal(err)
	}
	files[FileComparison] = b
	files[FileComparisonMD] = []byte(ComparisonMarkdown(&set))
	files[receipt.FileSums] = receipt.Sums(files)
}

// A comparison's receipt carries every study's rows; verify re-derives every cell from them. A
// cell changed to "+25.00% (p=0.001)" while its medians stay 703.78 vs 688.52, with comparison.md
// and SHA256SUMS re-made by the program's own functions, fails naming the cell and the figure,
// in comparison.json and in comparison.md.
func TestForgedComparisonCellFailsVerify(t *testing.T) {
	set := comparisonFixture(t)
	files, err := ComparisonFiles(set)
	if err != nil {
		t.Fatal(err)
	}
	v := writeAndVerify(t, files)
	if !v.OK() {
		t.Fatalf("the made receipt: %+v", v.Report.Problems)
	}
	text := strings.Join(VerifyText(v), "\n")
	if !strings.Contains(text, "checked every cell of 1 pair(s) (summaries, delta, interval, p, word) re-derived from the 2 rows comparison.json carries") ||
		!strings.Contains(text, "comparison.md re-made from comparison.json byte for byte, its figures as the rows comparison.json carries give them") {
		t.Errorf("verify of the made receipt:\n%s", text)
	}
	if !strings.Contains(text, "OK: every file matches SHA256SUMS, the derived files re-make byte for byte and the figures re-derive from the rows the bundle carries, except what is NOT CHECKED above") {
		t.Errorf("OK line of the made receipt:\n%s", text)
	}

	forge(t, files, func(s *ComparisonSet) {
		c := &s.Pairs[0].Cells[0]
		c.Word, c.P, c.Delta, c.Significant = "+25.00% (p=0.001)", new(0.001), 0.25, true
	})
	if !strings.Contains(string(files[FileComparisonMD]), "| 703.78 [") || !strings.Contains(string(files[FileComparisonMD]), "+25.00% (p=0.001)") {
		t.Fatalf("the forged comparison.md:\n%s", files[FileComparisonMD])
	}
	forged := filepath.Join(t.TempDir(), "forged")
	if err := bundle.Write(forged, files); err != nil {
		t.Fatal(err)
	}
	v, err = VerifyBundle(context.Background(), VerifyRequest{Path: forged})
	if err != nil {
		t.Fatal(err)
	}
	text = strings.Join(VerifyText(v), "\n")
	if v.OK() {
		t.Fatalf("a forged comparison verifies:\n%s", text)
	}
	for _, want := range []string{
		`DIFFERS comparison.json: pairs[0] (study 2 against study 1): cell tg32 @ d0 of m [ub512 b2048 fa-off kv-f16/f16 t1 ngl0]: cells[0].word is "+25.00% (p=0.001)", the rows give "-2.17%`,
		`cells[0].p is 0.001, the rows give 0.00793650`,
		`cells[0].delta is 0.25, the rows give -0.02168`,
		`DIFFERS comparison.md: differs from the one re-made from comparison.json (its figures as the rows it carries give them): line 12 has "| tg32 @ d0 of m [ub512 b2048 fa-off kv-f16/f16 t1 ngl0] | 703.78 [?] | 688.52 [?] | +25.00% (p=0.001) |", re-made gives "| tg32 @ d0 of m [ub512 b2048 fa-off kv-f16/f16 t1 ngl0] | 703.78 [?] | 688.52 [?] | -2.17% [-2.33%, -2.00%] (p=0.008 n=5+5) |"`,
		"FAILED: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("verify of the forged comparison lacks %q:\n%s", want, text)
		}
	}
}

// A comparison made before comparisons carried their rows still verifies by the rules it was
// made with, and verify says it checked self-consistency only: even a forged cell passes, and
// the output never claims more.
func TestOldLayoutComparisonSaysSelfConsistencyOnly(t *testing.T) {
	set := comparisonFixture(t)
	set.Sides, set.Options = nil, nil
	files, err := ComparisonFiles(set)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(files[FileComparison]), `"sides"`) {
		t.Fatalf("old layout carries sides: %s", files[FileComparison])
	}
	forge(t, files, func(s *ComparisonSet) { s.Pairs[0].Cells[0].Word = "+25.00% (p=0.001)" })
	rep := VerifyComparison(files)
	text := strings.Join(VerifyText(&Verification{Path: "old", Files: files, Report: rep}), "\n")
	if !rep.OK() || !strings.Contains(text, "NOT CHECKED comparison.json: an old-layout comparison (made before comparisons carried their rows): its cells, deltas and p-values were checked for self-consistency only") ||
		!strings.Contains(text, "OK, self-consistency only:") || strings.Contains(text, "OK: every file") || strings.Contains(text, "re-derived from the") {
		t.Errorf("old layout:\n%s", text)
	}
}

// The comparison rules' mark: a receipt made now records "rules": 2 and its auto is re-derived
// as the process-level statistics; a receipt without the mark (made before) is re-derived under
// the old auto (here benchmath: the studies are adaptive), so old bundles verify as they were
// made, and a receipt whose mark and figures disagree does not verify.
func TestComparisonRulesMark(t *testing.T) {
	old := comparisonFixture(t) // no mark: the old rules
	if old.Pairs[0].Stats != study.StatsBenchmath {
		t.Fatalf("old-rules fixture compared by %q", old.Pairs[0].Stats)
	}
	verify := func(set *ComparisonSet) (bool, string) {
		t.Helper()
		files, err := ComparisonFiles(set)
		if err != nil {
			t.Fatal(err)
		}
		v := writeAndVerify(t, files)
		return v.OK(), strings.Join(VerifyText(v), "\n")
	}
	if ok, text := verify(old); !ok {
		t.Fatalf("an old-rules comparison does not verify:\n%s", text)
	}

	now := comparisonFixture(t)
	now.Options.Rules = CompareRulesProcess
	c, err := study.CompareSides(now.Sides[0], now.Sides[1], now.Options.compare())
	if err != nil {
		t.Fatal(err)
	}
	now.Pairs = []*study.StudyComparison{c}
	if c.Stats != study.StatsProcess || c.Cells[0].Processes == nil || c.Cells[0].Processes.Base.N != 2 {
		t.Fatalf("a comparison made now: %+v", c)
	}
	if ok, text := verify(now); !ok {
		t.Fatalf("a comparison made now does not verify:\n%s", text)
	}
	// Rules 3: a side with adaptive repetitions compares its first processes at equal counts.
	stopped := comparisonFixture(t)
	stopped.Options.Rules = CompareRulesStopped
	stopped.Sides[1].Rows[0].SamplesTs = append(stopped.Sides[1].Rows[0].SamplesTs, 640, 641, 639)
	stopped.Sides[1].Rows[0].Chunks = []int{3, 2, 3}
	sc, err := study.CompareSides(stopped.Sides[0], stopped.Sides[1], stopped.Options.compare())
	if err != nil {
		t.Fatal(err)
	}
	stopped.Pairs = []*study.StudyComparison{sc}
	if p := sc.Cells[0].Processes; p == nil || p.New.N != 2 || p.NewOf != 3 || p.BaseOf != 2 {
		t.Fatalf("rules 3 compare 2+2 of 2+3 processes: %+v", p)
	}
	if ok, text := verify(stopped); !ok {
		t.Fatalf("a rules-3 comparison does not verify:\n%s", text)
	}
	// The same rows under rules 2 read every process: the held figures differ.
	asTwo := *stopped
	opts := *stopped.Options
	opts.Rules = CompareRulesProcess
	asTwo.Options = &opts
	if ok, text := verify(&asTwo); ok || !strings.Contains(text, "DIFFERS comparison.json") {
		t.Fatalf("rules-3 figures under rules 2 verify:\n%s", text)
	}
	future := *stopped
	fo := *stopped.Options
	fo.Rules = CompareRulesStopped + 1
	future.Options = &fo
	if ok, text := verify(&future); ok || !strings.Contains(text, "options.rules 4: this sparkbench knows comparison rules up to 3") {
		t.Fatalf("unknown rules verify:\n%s", text)
	}
	// The process-level figures under no mark: re-derived as benchmath, they differ.
	forged := comparisonFixture(t)
	forged.Pairs = now.Pairs
	if ok, text := verify(forged); ok || !strings.Contains(text, "DIFFERS comparison.json") {
		t.Fatalf("figures of the new rules under no mark verify:\n%s", text)
	}
}

// writeAndVerify writes a comparison's files as a bundle folder and verifies it.
func writeAndVerify(t *testing.T, files receipt.Files) *Verification {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cmp")
	if err := bundle.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	v, err := VerifyBundle(context.Background(), VerifyRequest{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
