package receipt

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/receipt/receipttest"
)

var update = flag.Bool("update", false, "rewrite testdata/throughput.*.golden.* from the fixture's raw files")

// The fixture testdata/throughput/ holds the raw files of a real throughput bundle (see its
// README): two tiny models at depths 0 and 128, a repeated leg, a memory bandwidth, an
// amendment, a deviation, a human verdict and a finding.
const fixtureDir = "testdata/throughput"

func loadFixture(t *testing.T) Files {
	t.Helper()
	files := Files{}
	err := filepath.WalkDir(fixtureDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(fixtureDir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func finished(t *testing.T) Files {
	t.Helper()
	files := loadFixture(t)
	if err := Finish(files); err != nil {
		t.Fatal(err)
	}
	return files
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		line, g, w := firstLine(got, want)
		t.Fatalf("%s differs at line %d:\n got  %q\n want %q\n(run go test ./app/receipt -run %s -update after checking the change)", name, line, g, w, t.Name())
	}
}

func TestThroughputReceiptIsPureAndGolden(t *testing.T) {
	a, b := finished(t), finished(t)
	for _, name := range a.Names() {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s: two assemblies of the same raw files differ", name)
		}
	}
	golden(t, "throughput.study.golden.json", a[FileStudy])
	golden(t, "throughput.receipt.golden.md", a[FileReceipt])
	wantPlots := []string{"plots/depth-pp.png", "plots/depth-pp.svg", "plots/depth-tg.png", "plots/depth-tg.svg", "plots/repeatability-tg.png", "plots/repeatability-tg.svg"}
	var plots []string
	for _, n := range a.Names() {
		if strings.HasPrefix(n, DirPlots) {
			plots = append(plots, n)
		}
	}
	if !slices.Equal(plots, wantPlots) {
		t.Errorf("plots %v, want %v", plots, wantPlots)
	}
	rep := Verify(a, VerifyOptions{})
	if !rep.OK() || rep.Chain.Entries != 38 || rep.Chain.StudyEntries != 38 {
		t.Fatalf("verify: %+v", rep)
	}
	md := string(a[FileReceipt])
	for _, want := range []string{
		"## Results by depth", "## Derived figures", "## Prediction scoreboard", "### Human verdicts", "## Amendments",
		"## Deviations", "## Findings", "## Legs", "## Methodology", "## Provenance and fingerprints", "## Redaction",
		"## Plots", "## Reproduce and compare", "## Boundary", "## Metric definitions",
		"| P1 | tiny generates faster than 1000 t/s with an empty KV cache | cell tg @ d0 of tiny | >= 800 | 23174 | HIT (amended) |",
		"DEVIATION: arm \"steep\"", "| F1 | tg falls by more than half from d0 to d128 on both models | tiny/d128, moe/d128 | P2 |",
		"| tg16 (#end) | 23655.75 ± 2452.09 | — |", "tiny is a toy model \\| the rate is plausible",
		"| ceiling of tiny (tensor\\_exact) | 84441 |", "| P4 | tiny's tg at d0 uses between 1% and 90% of the 50 GB/s ceiling",
		"Memory bandwidth: 50 GB/s entered", "written `~` in transcripts",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
}

func TestReceiptTablesAreWellFormedAndNumbersComeFromStudyJSON(t *testing.T) {
	files := finished(t)
	md, js := files[FileReceipt], files[FileStudy]
	tables, probs := receipttest.Tables(md)
	if len(probs) > 0 {
		t.Fatalf("malformed tables: %v", probs)
	}
	if len(tables) < 10 {
		t.Fatalf("%d tables, want every section's", len(tables))
	}
	nums := receipttest.Numbers(md)
	if bad := receipttest.CrossCheck(md, js); len(bad) > 0 || len(nums) < 150 {
		t.Fatalf("%d numbers; not in study.json: %v", len(nums), bad)
	}
	// The checks can fail: a changed figure and a broken row are caught.
	changed := bytes.Replace(md, []byte("62964.88 ± 2365.14"), []byte("62964.89 ± 2365.14"), 1)
	if bad := receipttest.CrossCheck(changed, js); len(bad) != 1 || !strings.Contains(bad[0], "62964.89") {
		t.Fatalf("changed figure: %v", bad)
	}
	broken := bytes.Replace(md, []byte("| tg16 (#end) | 23655.75 ± 2452.09 | — |"), []byte("| tg16 (#end) | 23655.75 ± 2452.09 |"), 1)
	if _, probs := receipttest.Tables(broken); len(probs) != 1 {
		t.Fatalf("broken row: %v", probs)
	}
}

// The Methodology's values are tied to the study.json fields they describe: a value changed
// to another number or name the study holds elsewhere (which the plain cross-check accepts)
// is caught, every optional line of the fixture is checked, and a needed line that no longer
// reads as expected is reported rather than silently skipped.
func TestCrossCheckTiesMethodologyToStudyJSON(t *testing.T) {
	files := finished(t)
	md, js := files[FileReceipt], files[FileStudy]
	if bad := receipttest.CrossCheck(md, js); len(bad) > 0 {
		t.Fatalf("the fixture's receipt: %v", bad)
	}
	for _, c := range []struct{ from, to, want string }{
		{"prompt `64` tokens", "prompt `16` tokens", "plan.axes.n_prompt"},
		{"`5` repetitions per test", "`1` repetitions per test", "plan.axes.reps"},
		{"Depths `0, 128`", "Depths `0, 16`", "plan.axes.depths"},
		{"micro-batch `512`", "micro-batch `2048`", "plan.axes.ubatch"},
		{"GPU layers `-1`", "GPU layers `1`", "plan.axes.ngl"},
		{"threads `1`.", "threads `16`.", "plan.axes.threads"},
		{"split `per_depth`", "split `combined`", "plan.split"},
		{"pp at depth 100.0%", "pp at depth 20.0%", "plan.gates.cv_pp_depth"},
		{"Canary: `tiny`", "Canary: `moe`", "plan.canary.model"},
		{"(prompt `64`, generation `16`)", "(prompt `16`, generation `16`)", "plan.canary.n_prompt"},
		{"more than 20.0% below", "more than 100.0% below", "plan.canary.max_drop"},
		{"leg `tiny/d0` again", "leg `moe/d0` again", "plan.repeatability.leg"},
		{"Memory bandwidth: 50 GB/s", "Memory bandwidth: 5 GB/s", "plan.bandwidth.gbs"},
	} {
		changed := bytes.Replace(md, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(changed, md) {
			t.Fatalf("the receipt has no %q", c.from)
		}
		bad := receipttest.CrossCheck(changed, js)
		if len(bad) == 0 || !strings.Contains(strings.Join(bad, "\n"), c.want) {
			t.Errorf("%q → %q: %v, want a problem naming %s", c.from, c.to, bad, c.want)
		}
	}
	// A number in a code span that study.json does not hold at all.
	changed := bytes.Replace(md, []byte("batch `2048`"), []byte("batch `4093`"), 1)
	if bad := receipttest.CrossCheck(changed, js); !strings.Contains(strings.Join(bad, "\n"), `"4093" (in `+"`4093`"+`) is not in study.json`) {
		t.Errorf("an unknown number in code: %v", bad)
	}
	// A needed line reworded: reported, not skipped.
	changed = bytes.Replace(md, []byte("- Depths `0, 128`;"), []byte("- Depth sweep `0, 128`;"), 1)
	if bad := receipttest.CrossCheck(changed, js); len(bad) != 1 || !strings.Contains(bad[0], "no line matches") {
		t.Errorf("a needed line reworded: %v", bad)
	}
}

func flip(b []byte) []byte {
	c := bytes.Clone(b)
	if len(c) == 0 {
		return []byte{'x'}
	}
	c[len(c)/2] ^= 0x01
	return c
}

func named(rep *VerifyReport, file string) bool {
	for _, p := range rep.Problems {
		if p.File == file || strings.HasPrefix(p.File, file) || file == FileSums && strings.Contains(p.What, FileSums) {
			return true
		}
	}
	return false
}

func TestVerifyNamesEveryChangedFile(t *testing.T) {
	files := finished(t)
	if rep := Verify(files, VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Fatalf("intact bundle: %v", rep.Problems)
	}
	for _, name := range files.Names() {
		bad := files.Clone()
		bad[name] = flip(files[name])
		rep := Verify(bad, VerifyOptions{HashPlots: true})
		if rep.OK() || !named(rep, name) {
			t.Errorf("flipping a byte of %s: problems %v do not name it", name, rep.Problems)
		}
	}
	// A plot re-rendered from study.json is compared too, not just hashed.
	bad := files.Clone()
	bad["plots/depth-tg.svg"] = flip(files["plots/depth-tg.svg"])
	bad[FileSums] = Sums(bad)
	rep := Verify(bad, VerifyOptions{})
	if rep.OK() || !named(rep, "plots/depth-tg.svg") {
		t.Fatalf("re-rendering: %v", rep.Problems)
	}
	// receipt.md and study.json: the first differing line is named.
	bad = files.Clone()
	bad[FileReceipt] = bytes.Replace(files[FileReceipt], []byte("| pp64 | 62964.88"), []byte("| pp64 | 62964.98"), 1)
	bad[FileSums] = Sums(bad)
	rep = Verify(bad, VerifyOptions{HashPlots: true})
	if len(rep.Problems) != 1 || rep.Problems[0].File != FileReceipt || rep.Problems[0].Line != 17 {
		t.Fatalf("edited receipt with fresh sums: %v", rep.Problems)
	}
}

// A change that keeps SHA256SUMS consistent is still caught against the journal's chain.
func TestVerifyCatchesConsistentTampering(t *testing.T) {
	files := finished(t)
	retouch := func(f Files) Files {
		out := f.Clone()
		delete(out, FileSums)
		return out
	}
	cases := []struct {
		name, file, want string
		edit             func([]byte) []byte
	}{
		{"reordered journal", FileJournal, "line 5", func(b []byte) []byte {
			l := bytes.Split(b, []byte("\n"))
			l[4], l[5] = l[5], l[4]
			return bytes.Join(l, []byte("\n"))
		}},
		{"changed journal payload", FileJournal, "hash does not match", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"reason":"the floor was meant to be conservative"`), []byte(`"reason":"the floor was meant to be generous!!"`), 1)
		}},
		{"leg class", "legs/003-tiny-d128/leg.json", "class", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"class":"ok"`), []byte(`"class":"crash"`), 1)
		}},
		{"row status", "legs/003-tiny-d128/rows.jsonl", "1 flagged, 0 discarded), the journal (entry 21) recorded", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"status":"result"`), []byte(`"status":"flagged"`), 1)
		}},
		{"dropped row", "legs/003-tiny-d128/rows.jsonl", "1 rows (1 result", func(b []byte) []byte {
			return b[:bytes.IndexByte(b, '\n')+1]
		}},
		{"plan", FilePlan, "hashes to", func(b []byte) []byte { return bytes.Replace(b, []byte(`"reps":5`), []byte(`"reps":6`), 1) }},
		{"notebook name", FileNotebook, "study.created", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`receipt fixture`), []byte(`receipt fixturE`), 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := retouch(files)
			edited := c.edit(files[c.file])
			if bytes.Equal(edited, files[c.file]) {
				t.Fatal("the edit changed nothing")
			}
			bad[c.file] = edited
			bad[FileSums] = Sums(bad)
			rep := Verify(bad, VerifyOptions{HashPlots: true})
			found := false
			for _, p := range rep.Problems {
				if strings.HasPrefix(p.File, c.file) && strings.Contains(p.String(), c.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want a problem naming %s with %q, got %v", c.file, c.want, rep.Problems)
			}
		})
	}
	// A leg removed from the bundle while its entries stay in the journal.
	bad := retouch(files)
	for _, n := range files.Names() {
		if strings.HasPrefix(n, "legs/004-moe-d0/") {
			delete(bad, n)
		}
	}
	bad[FileSums] = Sums(bad)
	if rep := Verify(bad, VerifyOptions{HashPlots: true}); !strings.Contains(strings.Join(problemTexts(rep), "\n"), "starts leg 4, which has no folder") {
		t.Fatalf("missing leg: %v", rep.Problems)
	}
}

func problemTexts(rep *VerifyReport) []string {
	var out []string
	for _, p := range rep.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestWalkChain(t *testing.T) {
	entries, err := ParseJournal(loadFixture(t)[FileJournal])
	if err != nil {
		t.Fatal(err)
	}
	s, err := WalkChain(entries, 1)
	if err != nil || s.FirstSeq != 1 || s.LastSeq != 38 || s.FirstPrevHash != strings.Repeat("0", 64) || s.LastHash != entries[37].Hash {
		t.Fatalf("%+v %v", s, err)
	}
	// An excerpt may start anywhere: it is anchored by its first prev_hash.
	if s, err := WalkChain(entries[10:20], 1); err != nil || s.FirstSeq != 11 || s.Entries != 10 {
		t.Fatalf("mid excerpt: %+v %v", s, err)
	}
	gap := append(slices.Clone(entries[:5]), entries[6:]...)
	if _, err := WalkChain(gap, 1); err == nil || !strings.Contains(err.Error(), "line 6: entry 7") {
		t.Fatalf("gap: %v", err)
	}
	changed := slices.Clone(entries)
	changed[3].At = strings.Replace(changed[3].At, "Z", "1Z", 1)
	if _, err := WalkChain(changed, 1); err == nil || !strings.Contains(err.Error(), "entry 4") {
		t.Fatalf("changed: %v", err)
	}
	nc := slices.Clone(entries)
	nc[2].Payload = append([]byte(" "), nc[2].Payload...)
	if _, err := WalkChain(nc, 1); err == nil || !strings.Contains(err.Error(), "not canonical") {
		t.Fatalf("non-canonical: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"receipt.md", "legs/001-a/leg.json", "plots/depth-tg.png", "a..b"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/", "a\\b", "C:x", "a\x00b", "a\nb", strings.Repeat("a", 513)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseSums(t *testing.T) {
	files := Files{"a.txt": []byte("a"), "b/c": []byte("")}
	s := Sums(files)
	lines, err := ParseSums(s)
	if err != nil || len(lines) != 2 || lines[0].Name != "a.txt" || lines[1].Name != "b/c" {
		t.Fatalf("%q: %v %v", s, lines, err)
	}
	for _, bad := range []string{"xyz  a\n", strings.Repeat("a", 64) + "  ../x\n", strings.Repeat("a", 64) + "  a\n" + strings.Repeat("b", 64) + "  a\n"} {
		if _, err := ParseSums([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
