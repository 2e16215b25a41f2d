package study

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/vocab"
)

func cmpRow(model, test string, depth int64, config string, xs ...float64) CompareRow {
	return CompareRow{Leg: model + "/leg", Ref: "ref " + model + " " + test + " " + config, Model: model, Test: test, Depth: depth, Config: config, SamplesTs: xs}
}

func cmpSide(id int64, models []ComparedModel, rows ...CompareRow) CompareSide {
	return CompareSide{Study: ComparedStudy{ID: id, Name: "s", Models: models}, Rows: rows}
}

func labels(cs []CellComparison) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Label())
	}
	return out
}

// TestCompareSidesCellByCell: the cells both studies measured, in the baseline plan's model
// order, then by test, configuration and depth; each with Welch's comparison at the level;
// the cells one side alone measured named apart.
func TestCompareSidesCellByCell(t *testing.T) {
	same, up := []float64{100, 101, 99}, []float64{110, 111, 109}
	base := cmpSide(1, []ComparedModel{{"A", "aa"}, {"B", "bb"}},
		cmpRow("B", "tg32", 0, "x", same...),
		cmpRow("A", "tg32", 128, "x", same...),
		cmpRow("A", "tg32", 0, "x", same...),
		cmpRow("A", "pp64", 0, "x", same...),
		cmpRow("A", "tg32", 0, "w", same...),
		cmpRow("A", "tg32", 512, "x", same...))
	nw := cmpSide(2, []ComparedModel{{"B", "bb"}, {"A2", "aa"}},
		cmpRow("A2", "tg32", 0, "x", up...),
		cmpRow("A2", "tg32", 128, "x", 100, 99, 101),
		cmpRow("A2", "pp64", 0, "x", same...),
		cmpRow("A2", "tg32", 0, "w", same...),
		cmpRow("B", "tg32", 0, "x", up...),
		cmpRow("B", "tg32", 64, "x", up...))
	c, err := CompareSides(base, nw, CompareOptions{Stats: StatsWelch})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pp64 @ d0 of A [x]", "tg32 @ d0 of A [w]", "tg32 @ d0 of A [x]", "tg32 @ d128 of A [x]", "tg32 @ d0 of B [x]"}
	if got := labels(c.Cells); !reflect.DeepEqual(got, want) {
		t.Fatalf("cells %q, want %q", got, want)
	}
	if !reflect.DeepEqual(c.OnlyBaseline, []string{"tg32 @ d512 of A [x]"}) || !reflect.DeepEqual(c.OnlyNew, []string{"tg32 @ d64 of B [x]"}) {
		t.Errorf("only baseline %q, only new %q", c.OnlyBaseline, c.OnlyNew)
	}
	if c.Alpha != DefaultAlpha || c.Stats != "" || len(c.Notes) != 0 || c.AA != nil {
		t.Errorf("alpha %g stats %q notes %q aa %v", c.Alpha, c.Stats, c.Notes, c.AA)
	}
	faster := c.Cells[2]
	if faster.NewModel != "A2" || faster.ModelSHA256 != "aa" || faster.BaselineSource != "ref A tg32 x" || faster.NewSource != "ref A2 tg32 x" {
		t.Errorf("cell names %+v", faster)
	}
	if !faster.Significant || math.Abs(faster.Delta-0.1) > 1e-12 || faster.P == nil || *faster.P >= 0.01 ||
		!strings.HasPrefix(faster.Word, "+10.00% (p=") || faster.Medians != nil || faster.Baseline.Mean != 100 || faster.New.Mean != 110 ||
		!(faster.DeltaLo < 0.1 && faster.DeltaLo > 0.05 && faster.DeltaHi > 0.1 && faster.DeltaHi < 0.15) {
		t.Errorf("a 10%% faster cell: %+v (p %v)", faster, faster.P)
	}
	flat := c.Cells[3]
	if flat.Significant || flat.Delta != 0 || flat.P == nil || *flat.P != 1 || flat.Word != "~ (p=1.000 n=3+3)" {
		t.Errorf("an unchanged cell: %+v", flat)
	}
}

// TestCompareSidesAlpha: a level outside (0, 1) is the default one; one inside is kept and
// decides significance.
func TestCompareSidesAlpha(t *testing.T) {
	base := cmpSide(1, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", 100, 102, 98))
	nw := cmpSide(2, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", 103, 105, 101))
	for _, c := range []struct {
		alpha, want float64
		sig         bool
	}{{0, DefaultAlpha, false}, {-0.1, DefaultAlpha, false}, {1, DefaultAlpha, false}, {1.5, DefaultAlpha, false}, {0.2, 0.2, true}, {0.999, 0.999, true}} {
		got, err := CompareSides(base, nw, CompareOptions{Alpha: c.alpha, Stats: StatsWelch})
		if err != nil {
			t.Fatal(err)
		}
		if got.Alpha != c.want || got.Cells[0].Significant != c.sig {
			t.Errorf("alpha %g: compared at %g, significant %v (p %v); want %g, %v", c.alpha, got.Alpha, got.Cells[0].Significant, *got.Cells[0].P, c.want, c.sig)
		}
	}
}

// TestCompareSidesBenchmath: benchmath compares medians; StatsAuto picks it when a side is
// adaptive; a count at which the U test cannot reach alpha warns.
func TestCompareSidesBenchmath(t *testing.T) {
	base := cmpSide(1, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", 100, 101, 99, 100.5, 99.5), cmpRow("A", "pp64", 0, "x", 100, 101, 99))
	nw := cmpSide(2, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", 110, 111, 109, 110.5, 109.5), cmpRow("A", "pp64", 0, "x", 110, 111, 109))
	for _, c := range []struct {
		stats      string
		adaptive   [2]bool
		benchmath  bool
		wantStats  string
		wantMedian bool
		oldAuto    bool
	}{
		{StatsBenchmath, [2]bool{}, true, StatsBenchmath, true, false},
		{StatsAuto, [2]bool{false, true}, true, StatsBenchmath, true, true},
		{"", [2]bool{true, false}, true, StatsBenchmath, true, true},
		{StatsAuto, [2]bool{}, false, "", false, true},
		{StatsWelch, [2]bool{true, true}, false, "", false, false},
		{StatsAuto, [2]bool{false, true}, false, StatsProcess, false, false},
	} {
		b, n := base, nw
		b.Adaptive, n.Adaptive = c.adaptive[0], c.adaptive[1]
		got, err := CompareSides(b, n, CompareOptions{Stats: c.stats, OldAuto: c.oldAuto})
		if err != nil {
			t.Fatal(err)
		}
		if got.Stats != c.wantStats || (got.Cells[0].Medians != nil) != c.wantMedian {
			t.Errorf("%q adaptive %v: stats %q medians %v", c.stats, c.adaptive, got.Stats, got.Cells[0].Medians)
		}
	}
	got, err := CompareSides(base, nw, CompareOptions{Stats: StatsBenchmath})
	if err != nil {
		t.Fatal(err)
	}
	pp, tg := got.Cells[0], got.Cells[1]
	if pp.Test != "pp64" || tg.Test != "tg32" {
		t.Fatalf("cells %q", labels(got.Cells))
	}
	// 5 against 5 apart: p = 2/252, significant; the shift's interval brackets +10%.
	m := tg.Medians
	if !tg.Significant || tg.P == nil || math.Abs(*tg.P-2.0/252) > 1e-9 || math.Abs(tg.Delta-0.1) > 1e-12 ||
		tg.Baseline.Mean != 100 || tg.New.Mean != 110 || tg.Baseline.N != 5 ||
		m.ShiftLo == nil || tg.DeltaLo != *m.ShiftLo || tg.DeltaHi != *m.ShiftHi || !(tg.DeltaLo < 0.1 && tg.DeltaHi > 0.1 && tg.DeltaLo > 0.05) ||
		tg.Word != m.String() || !strings.HasPrefix(tg.Word, "+10.00% [") {
		t.Errorf("5+5 apart: %+v medians %+v", tg, m)
	}
	for _, w := range m.Warnings {
		if strings.Contains(w, "cannot reach") {
			t.Errorf("5+5 can reach p < 0.05 (smallest p 0.008): %q", w)
		}
	}
	// 3 against 3: the smallest p is 0.1: never significant, and said so; no interval.
	if pp.Significant || pp.P == nil || math.Abs(*pp.P-0.1) > 1e-9 || !strings.HasPrefix(pp.Word, "~ (p=0.100 n=3+3)") ||
		pp.DeltaLo != pp.Delta || pp.DeltaHi != pp.Delta || math.Abs(pp.Delta-0.1) > 1e-12 ||
		!strings.Contains(strings.Join(pp.Medians.Warnings, "\n"), "n=3+3: the Mann-Whitney test cannot reach p < 0.05 at these counts (its smallest p is 0.100)") {
		t.Errorf("3+3: %+v warnings %q", pp, pp.Medians.Warnings)
	}
	// At alpha equal to the smallest p, it still cannot be reached (p < alpha is the test).
	alpha := analysis.MinPValueU(5, 5)
	got, err = CompareSides(base, nw, CompareOptions{Stats: StatsBenchmath, Alpha: alpha})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(got.Cells[1].Medians.Warnings, "\n"), "n=5+5: the Mann-Whitney test cannot reach") {
		t.Errorf("5+5 at alpha = its smallest p: %q", got.Cells[1].Medians.Warnings)
	}
}

func TestResolveStats(t *testing.T) {
	ad, fixed := ComparedStudy{Adaptive: true}, ComparedStudy{}
	for _, c := range []struct {
		stats   string
		oldAuto bool
		sides   []ComparedStudy
		want    string
	}{
		{StatsBenchmath, false, []ComparedStudy{fixed}, StatsBenchmath},
		{StatsWelch, false, []ComparedStudy{ad}, StatsWelch},
		{StatsProcess, true, []ComparedStudy{ad}, StatsProcess},
		// auto is the process-level statistics, whatever the studies…
		{StatsAuto, false, []ComparedStudy{fixed, fixed}, StatsProcess},
		{StatsAuto, false, []ComparedStudy{fixed, ad}, StatsProcess},
		{"", false, nil, StatsProcess},
		// …but a receipt made under the old rules is re-derived under them
		{StatsAuto, true, []ComparedStudy{fixed, fixed}, StatsWelch},
		{StatsAuto, true, []ComparedStudy{fixed, ad}, StatsBenchmath},
		{"", true, []ComparedStudy{ad, fixed}, StatsBenchmath},
		{"", true, nil, StatsWelch},
	} {
		if got := resolveStats(c.stats, c.oldAuto, c.sides...); got != c.want {
			t.Errorf("resolveStats(%q, old %v, %v) = %q, want %q", c.stats, c.oldAuto, c.sides, got, c.want)
		}
	}
	for _, s := range []string{"", StatsAuto, StatsProcess, StatsBenchmath, StatsWelch} {
		if err := CheckStats(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if err := CheckStats("ttest"); err == nil || !strings.Contains(err.Error(), `statistics "ttest": want auto`) {
		t.Errorf("unknown statistics: %v", err)
	}
}

// TestCompareSidesRefusals: each refusal says why, and wraps ErrNotComparable.
func TestCompareSidesRefusals(t *testing.T) {
	three := []float64{100, 101, 99}
	a := []ComparedModel{{"A", "aa"}}
	cases := []struct {
		name      string
		base, new CompareSide
		o         CompareOptions
		want      string
		notComp   bool
	}{
		{"unknown statistics", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...)), cmpSide(2, a, cmpRow("A", "tg32", 0, "x", three...)), CompareOptions{Stats: "median"},
			`statistics "median"`, false},
		{"one study twice", cmpSide(3, a, cmpRow("A", "tg32", 0, "x", three...)), cmpSide(3, a, cmpRow("A", "tg32", 0, "x", three...)), CompareOptions{},
			"study 3 is both the baseline and the new study", true},
		{"baseline cell twice", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...), cmpRow("A", "tg32", 0, "x", three...)), cmpSide(2, a, cmpRow("A", "tg32", 0, "x", three...)), CompareOptions{},
			"study 1 measured tg32 @ d0 of A [x] twice", true},
		{"new cell twice", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...)), cmpSide(2, a, cmpRow("A", "tg32", 0, "x", three...), cmpRow("A", "tg32", 0, "x", three...)), CompareOptions{},
			"study 2 measured tg32 @ d0 of A [x] twice", true},
		{"different files", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...)), cmpSide(2, []ComparedModel{{"A", "zz"}, {"B", "bb"}}, cmpRow("A", "tg32", 0, "x", three...)), CompareOptions{},
			"the studies measure different model files: baseline study 1 has A (sha256 aa); new study 2 has A (sha256 zz), B (sha256 bb)", true},
		{"no models", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...)), cmpSide(2, nil), CompareOptions{},
			"new study 2 has no models", true},
		{"too few on the new side", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...), cmpRow("A", "pp64", 0, "x", three...)), cmpSide(2, a, cmpRow("A", "tg32", 0, "x", 1, 2), cmpRow("A", "pp64", 0, "x", three...)), CompareOptions{},
			"need >= 3 reps per cell on both sides for a confidence interval and a p-value; 1 cell(s) have fewer: tg32 @ d0 of A [x]: baseline 3 rep(s) (ref A tg32 x), new 2 (ref A tg32 x)", true},
		{"too few on the baseline side", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", 1, 2)), cmpSide(2, a, cmpRow("A", "tg32", 0, "x", three...)), CompareOptions{},
			"1 cell(s) have fewer: tg32 @ d0 of A [x]: baseline 2 rep(s)", true},
		{"no shared cell", cmpSide(1, a, cmpRow("A", "tg32", 0, "x", three...)), cmpSide(2, a, cmpRow("A", "tg32", 128, "x", three...)), CompareOptions{},
			"the studies share model files but no measured cell (same test, depth and configuration): baseline study 1 has 1 result cell(s), new study 2 has 1", true},
	}
	for _, c := range cases {
		got, err := CompareSides(c.base, c.new, c.o)
		if err == nil || got != nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrNotComparable) != c.notComp {
			t.Errorf("%s: %v, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// TestCompareSidesNotesAFileChange: a model ID whose file differs is named in the notes; the
// model shared by file is compared.
func TestCompareSidesNotesAFileChange(t *testing.T) {
	three := []float64{100, 101, 99}
	base := cmpSide(1, []ComparedModel{{"A", "aa"}, {"B", "bb"}}, cmpRow("A", "tg32", 0, "x", three...), cmpRow("B", "tg32", 0, "x", three...))
	nw := cmpSide(2, []ComparedModel{{"A", "a2"}, {"B", "bb"}}, cmpRow("A", "tg32", 0, "x", three...), cmpRow("B", "tg32", 0, "x", three...))
	c, err := CompareSides(base, nw, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Notes, []string{"model A is a different file in each plan (baseline sha256 aa, new a2): its cells are not compared"}) ||
		!reflect.DeepEqual(labels(c.Cells), []string{"tg32 @ d0 of B [x]"}) || !reflect.DeepEqual(c.OnlyBaseline, []string{"tg32 @ d0 of A [x]"}) {
		t.Errorf("notes %q cells %q only baseline %q", c.Notes, labels(c.Cells), c.OnlyBaseline)
	}
}

func TestAAHalves(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	cases := []struct {
		xs     []float64
		chunks []int
		a, b   []float64
		how    string
	}{
		{xs, []int{3, 3, 3}, []float64{1, 2, 3, 7, 8, 9}, []float64{4, 5, 6}, "odd against even chunks (3 chunks)"},
		{xs[:5], []int{2, 3}, []float64{1, 2}, []float64{3, 4, 5}, "odd against even chunks (2 chunks)"},
		{xs[:6], []int{6}, []float64{1, 2, 3}, []float64{4, 5, 6}, "first half against second half of the repetitions (one process)"},
		{xs[:5], nil, []float64{1, 2}, []float64{3, 4, 5}, "first half against second half of the repetitions (one process)"},
	}
	for _, c := range cases {
		a, b, how := AAHalves(c.xs, c.chunks)
		if !reflect.DeepEqual(a, c.a) || !reflect.DeepEqual(b, c.b) || how != c.how {
			t.Errorf("AAHalves(%v, %v) = %v, %v, %q; want %v, %v, %q", c.xs, c.chunks, a, b, how, c.a, c.b, c.how)
		}
	}
}

// TestAAControl: each cell against itself; a half-split that moved is a false positive; cells
// too small to split, or (benchmath) too small for the U test to reach alpha, are left out.
func TestAAControl(t *testing.T) {
	side := CompareSide{Study: ComparedStudy{ID: 7, Models: []ComparedModel{{"A", "aa"}}}, Rows: []CompareRow{
		cmpRow("A", "tg32", 0, "drift", 100, 101, 110, 111),
		cmpRow("A", "tg32", 1, "flat", 100, 101, 101, 100),
		cmpRow("A", "tg32", 2, "three", 100, 101, 102),
		{Model: "A", Test: "tg32", Depth: 3, Config: "chunks", Ref: "r", SamplesTs: []float64{100, 101, 102}, Chunks: []int{2, 1}},
	}}
	_, cells, keys, err := sideCells(side)
	if err != nil {
		t.Fatal(err)
	}
	c := newAAControl(StatsWelch, DefaultAlpha)
	c.add(7, cells, keys)
	c.finish()
	if len(c.Cells) != 2 || c.Tested != 2 || c.FalsePositives != 1 || c.Rate == nil || *c.Rate != 0.5 {
		t.Fatalf("A/A: %+v", c)
	}
	if d := c.Cells[0]; d.Cell != "tg32 @ d0 of A [drift]" || !d.Significant || d.Study != 7 || math.Abs(d.Delta-10.0/100.5) > 1e-12 || d.P == nil ||
		d.Split != "first half against second half of the repetitions (one process)" || d.Source != "ref A tg32 drift" {
		t.Errorf("drifting cell %+v", d)
	}
	if f := c.Cells[1]; f.Significant || f.Delta != 0 {
		t.Errorf("flat cell %+v", f)
	}
	want := []string{"study 7 tg32 @ d3 of A [chunks]: 2+1 repetitions after the split; each half needs 2",
		"study 7 tg32 @ d2 of A [three]: 1+2 repetitions after the split; each half needs 2"}
	if !reflect.DeepEqual(c.Untestable, want) {
		t.Errorf("untestable %q", c.Untestable)
	}
	if w := c.Words(); w != "A/A control: 1 of 2 cells significant at alpha = 0.05 (false-positive rate 50.0%; expected at most 5%)" {
		t.Errorf("words %q", w)
	}

	// Benchmath: 2+2 and 3+3 halves cannot reach p < 0.05; 4+4 can. At alpha equal to the
	// smallest p of 4+4, it cannot.
	side.Rows = []CompareRow{cmpRow("A", "tg32", 0, "six", 1, 2, 3, 4, 5, 6), cmpRow("A", "tg32", 0, "eight", 1, 2, 3, 4, 5, 6, 7, 8)}
	_, cells, keys, _ = sideCells(side)
	c = newAAControl(StatsBenchmath, DefaultAlpha)
	c.add(7, cells, keys)
	c.finish()
	if c.Tested != 1 || c.Cells[0].Cell != "tg32 @ d0 of A [eight]" || !c.Cells[0].Significant || c.FalsePositives != 1 || *c.Rate != 1 ||
		!reflect.DeepEqual(c.Untestable, []string{"study 7 tg32 @ d0 of A [six]: n=3+3 after the split: the Mann-Whitney test cannot reach p < 0.05 (its smallest p is 0.100)"}) {
		t.Errorf("benchmath A/A: %+v", c)
	}
	c = newAAControl(StatsBenchmath, analysis.MinPValueU(4, 4))
	c.add(7, cells, keys)
	c.finish()
	if c.Tested != 0 || c.Rate != nil || len(c.Untestable) != 2 || c.Words() != "A/A control: no cell could be tested (2 left out)" {
		t.Errorf("benchmath A/A at alpha = 4+4's smallest p: %+v", c)
	}
	// Welch can test 3+3.
	c = newAAControl(StatsWelch, DefaultAlpha)
	c.add(7, cells, keys)
	c.finish()
	if c.Tested != 2 || c.FalsePositives != 2 {
		t.Errorf("welch A/A of 3+3 and 4+4 rising halves: %+v", c)
	}
}

// TestCompareSidesWithAA: the comparison carries both studies' A/A control when asked.
func TestCompareSidesWithAA(t *testing.T) {
	base := cmpSide(1, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", 100, 101, 110, 111))
	nw := cmpSide(2, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", 100, 101, 101, 100))
	c, err := CompareSides(base, nw, CompareOptions{AA: true, Alpha: 0.1, Stats: StatsWelch})
	if err != nil {
		t.Fatal(err)
	}
	if c.AA == nil || c.AA.Stats != StatsWelch || c.AA.Alpha != 0.1 || c.AA.Tested != 2 || c.AA.FalsePositives != 1 ||
		c.AA.Cells[0].Study != 1 || c.AA.Cells[1].Study != 2 {
		t.Errorf("A/A %+v", c.AA)
	}
}

// fakeRecord is a notebook of studies in memory.
type fakeRecord struct {
	studies map[int64]StoredStudy
	legs    map[int64][]StoredLeg
	rows    map[int64][]StoredRow
}

func (f *fakeRecord) Study(_ context.Context, id int64) (StoredStudy, error) {
	s, ok := f.studies[id]
	if !ok {
		return s, errors.New("no such study")
	}
	return s, nil
}
func (f *fakeRecord) Legs(_ context.Context, id int64) ([]StoredLeg, error) { return f.legs[id], nil }
func (f *fakeRecord) Rows(_ context.Context, id int64) ([]StoredRow, error) { return f.rows[id], nil }

// recordedStudy stores the valid plan as study id, its tg32 rows by leg (ts each leg's
// samples), every leg finished ok.
func recordedStudy(t *testing.T, f *fakeRecord, id int64, edit func(doc string) string, ts map[string][]float64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	if edit != nil {
		doc = edit(doc)
	}
	if f.studies == nil {
		f.studies, f.legs, f.rows = map[int64]StoredStudy{}, map[int64][]StoredLeg{}, map[int64][]StoredRow{}
	}
	p, err := Decode("plan", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	_, canonical, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	f.studies[id] = StoredStudy{ID: id, Name: "study", Status: StatusComplete, PlanSHA256: "sha", PlanJSON: canonical, PlanDir: "testdata"}
	legs, err := Expand(p, "testdata")
	if err != nil {
		t.Fatal(err)
	}
	for i, lp := range legs {
		xs, ok := ts[lp.ID]
		if !ok {
			continue
		}
		legID := id*100 + int64(i)
		f.legs[id] = append(f.legs[id], StoredLeg{ID: legID, PlanLeg: lp.ID, Role: RoleLeg, Attempt: 1, State: LegFinished, Class: string(vocab.ClassOK),
			Argv: []string{"llama-bench", "-r", "3"}, Rows: 1, Results: 1})
		f.rows[id] = append(f.rows[id], StoredRow{LegID: legID, Seq: 0, Status: string(vocab.RowResult),
			Result: benchfmt.Result{NGen: 32, NDepth: int64(lp.Depths[0]), AvgTs: xs[0], SamplesTs: xs, NUbatch: 512, NBatch: 2048, FlashAttn: -1, TypeK: "f16", TypeV: "f16", NThreads: 1, NGPULayers: -1}})
	}
}

// TestLoadCompareSide: a study's side holds its plan's models and the result rows of the plan
// legs proper (the repeatability copies left out); a comparison of two recorded studies and an
// A/A control of one read them.
func TestLoadCompareSide(t *testing.T) {
	f := &fakeRecord{}
	recordedStudy(t, f, 1, nil, map[string][]float64{"tiny/d0": {100, 101, 99, 100}, "tiny/d0#start": {50, 50, 50}, "moe/d128": {70, 71, 69}})
	recordedStudy(t, f, 2, nil, map[string][]float64{"tiny/d0": {110, 111, 109, 110}, "tiny/d0#end": {50, 50, 50}})
	ctx := context.Background()
	side, err := LoadCompareSide(ctx, f, 1)
	if err != nil {
		t.Fatal(err)
	}
	if side.Adaptive || side.Study.Adaptive || side.Study.ID != 1 || side.Study.Status != StatusComplete || side.Study.PlanSHA256 != "sha" ||
		!reflect.DeepEqual(side.Study.Models, []ComparedModel{{"tiny", "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"}, {"moe", "b661d8b0483102bbf249468538c29552cb9a7ffd462197150b07d97886ca35bd"}}) {
		t.Errorf("side %+v", side.Study)
	}
	var got []string
	for _, r := range side.Rows {
		got = append(got, r.Leg+" "+r.Model+" "+r.Test)
	}
	if !reflect.DeepEqual(got, []string{"tiny/d0 tiny tg32", "moe/d128 moe tg32"}) || side.Rows[0].Depth != 0 || side.Rows[1].Depth != 128 ||
		!reflect.DeepEqual(side.Rows[0].SamplesTs, []float64{100, 101, 99, 100}) {
		t.Errorf("rows %q %+v", got, side.Rows)
	}
	if _, err := LoadCompareSide(ctx, f, 9); err == nil {
		t.Error("a study the notebook lacks loads")
	}

	c, err := CompareStudies(ctx, f, 1, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 1 || !c.Cells[0].Significant || math.Abs(c.Cells[0].Delta-0.1) > 1e-12 || !reflect.DeepEqual(c.OnlyBaseline, []string{"tg32 @ d128 of moe [" + side.Rows[1].Config + "]"}) {
		t.Errorf("comparison %+v", c)
	}
	for _, bad := range []struct {
		b, n int64
		o    CompareOptions
		want string
	}{{1, 1, CompareOptions{}, "study 1 is both"}, {1, 2, CompareOptions{Stats: "x"}, `statistics "x"`}, {9, 2, CompareOptions{}, "no such study"}, {1, 9, CompareOptions{}, "no such study"}} {
		if _, err := CompareStudiesWith(ctx, f, bad.b, bad.n, bad.o); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%d against %d: %v, want %q", bad.b, bad.n, err, bad.want)
		}
	}

	aa, s, err := AAControlOf(ctx, f, 1, CompareOptions{Stats: StatsWelch})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != 1 || aa.Stats != StatsWelch || aa.Alpha != DefaultAlpha || aa.Tested != 1 || len(aa.Untestable) != 1 || aa.Cells[0].Cell != "tg32 @ d0 of tiny ["+side.Rows[0].Config+"]" {
		t.Errorf("A/A of study 1: %+v", aa)
	}
	for _, alpha := range []float64{0, 1, 2} {
		if aa, _, err := AAControlOf(ctx, f, 1, CompareOptions{Alpha: alpha}); err != nil || aa.Alpha != DefaultAlpha {
			t.Errorf("A/A at alpha %g: %v %v", alpha, aa, err)
		}
	}
	if aa, _, err := AAControlOf(ctx, f, 1, CompareOptions{Alpha: 0.2, Stats: StatsBenchmath}); err != nil || aa.Alpha != 0.2 || aa.Stats != StatsBenchmath {
		t.Errorf("A/A at alpha 0.2 with benchmath: %+v %v", aa, err)
	}
	if _, _, err := AAControlOf(ctx, f, 1, CompareOptions{Stats: "x"}); err == nil {
		t.Error("A/A with unknown statistics")
	}
	if _, _, err := AAControlOf(ctx, f, 9, CompareOptions{}); err == nil {
		t.Error("A/A of a study the notebook lacks")
	}
	recordedStudy(t, f, 3, nil, nil)
	if _, _, err := AAControlOf(ctx, f, 3, CompareOptions{}); !errors.Is(err, ErrNotComparable) || !strings.Contains(err.Error(), "study 3 has no result cell yet: run it first") {
		t.Errorf("A/A of a study without results: %v", err)
	}
}

// TestCompareSidesRowOfNoPlanModel: a row whose model the plan does not name (a leg of every
// model whose file llama-bench printed under another path) keeps its place among the first
// model's cells: the sort is stable, it does not move ahead of them.
func TestCompareSidesRowOfNoPlanModel(t *testing.T) {
	three := []float64{100, 101, 99}
	base := cmpSide(1, []ComparedModel{{"A", "aa"}}, cmpRow("", "tg32", 0, "x", three...), cmpRow("A", "tg32", 0, "x", three...), cmpRow("A", "tg32", 9, "x", three...))
	nw := cmpSide(2, []ComparedModel{{"A", "aa"}}, cmpRow("A", "tg32", 0, "x", three...))
	c, err := CompareSides(base, nw, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tg32 @ d0 of  [x]", "tg32 @ d9 of A [x]"}; !reflect.DeepEqual(c.OnlyBaseline, want) {
		t.Errorf("only baseline %q, want %q", c.OnlyBaseline, want)
	}
}

// TestCompareSidesProcesses (issue 31): the default statistics compare the llama-bench
// processes. An adaptive cell's chunks are its processes: n processes of m repetitions a side,
// Welch's test on the process means, the sides' n and m in the word. A fixed cell is one
// process: a point estimate, no p-value, no interval, "?" and why, never significant, however
// far apart its repetitions put the two sides. The A/A control splits alternate processes,
// never one process's repetitions.
func TestCompareSidesProcesses(t *testing.T) {
	chunked := func(r CompareRow, chunks ...int) CompareRow { r.Chunks = chunks; return r }
	base := cmpSide(1, []ComparedModel{{"A", "aa"}},
		chunked(cmpRow("A", "tg32", 0, "x", 100, 101, 99, 102, 103, 101, 98, 99, 100, 100, 101, 99), 3, 3, 3, 3),
		cmpRow("A", "pp64", 0, "x", 100, 100.1, 99.9))
	nw := cmpSide(2, []ComparedModel{{"A", "aa"}},
		chunked(cmpRow("A", "tg32", 0, "x", 110, 111, 109, 112, 113, 111, 108, 109, 110, 110, 111, 109), 3, 3, 3, 3),
		cmpRow("A", "pp64", 0, "x", 120, 120.1, 119.9))
	c, err := CompareSides(base, nw, CompareOptions{AA: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stats != StatsProcess || len(c.Cells) != 2 {
		t.Fatalf("stats %q, %d cells", c.Stats, len(c.Cells))
	}
	pp, tg := c.Cells[0], c.Cells[1]
	if tg.Processes == nil || tg.Baseline.N != 4 || tg.New.N != 4 || tg.P == nil || !tg.Significant || math.Abs(tg.Delta-(110.25/100.25-1)) > 1e-12 ||
		!strings.HasPrefix(tg.Word, "+9.98% [") || !strings.HasSuffix(tg.Word, " n=4+4 processes, m=3+3)") || !(tg.DeltaLo < 0.1 && tg.DeltaHi > 0.1) {
		t.Errorf("four processes a side: %+v %q", tg, tg.Word)
	}
	if pp.Processes == nil || pp.P != nil || pp.Significant || pp.Baseline.N != 1 || pp.Baseline.Lo != pp.Baseline.Mean ||
		!strings.HasPrefix(pp.Word, "? no interval (n=1+1 processes, m=3+3: ") || !strings.Contains(pp.Word, "+20.00% between them") {
		t.Errorf("one process a side (its repetitions 20%% apart and tight): %+v %q", pp, pp.Word)
	}
	if c.AA == nil || c.AA.Stats != StatsProcess || c.AA.Tested != 2 || len(c.AA.Untestable) != 2 ||
		!strings.Contains(c.AA.Untestable[0], "1 process(es): the halves are alternate processes, 2 each at least") ||
		c.AA.Cells[0].Split != "odd against even processes (4 processes)" {
		t.Errorf("A/A control: %+v", c.AA)
	}
	// The old rules (a receipt made before): the same rows by Welch's test on the repetitions,
	// which calls the one-process cell significant.
	old, err := CompareSides(base, nw, CompareOptions{OldAuto: true})
	if err != nil || old.Stats != "" || old.Cells[0].P == nil || !old.Cells[0].Significant {
		t.Fatalf("old auto: %+v %v", old, err)
	}
}
