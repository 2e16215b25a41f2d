package studyrun

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
)

// TestCompareStudiesBenchmath checks a benchmath comparison against numbers worked by hand, and
// that the default statistics of two fixed-repetition studies stay Welch's, byte for byte.
//
// tiny tg32 @ d0: 100..105 against 110..115 (six a side). The 36 differences new − base are
// 10 + (j − i): 5 once, 6 twice, … 10 six times, … 15 once; their median, the Hodges–Lehmann
// shift, is 10. The exact U test: the samples lie entirely apart, p = 2/C(12,6) = 2/924. The
// interval of the difference: P(U ≤ 5) = 0.0206 ≤ 0.025 < P(U ≤ 6) = 0.0325 for 6+6, so k = 6 and
// the interval is [d(6), d(31)] = [7, 13], over the baseline median 102.5: [+6.83%, +12.68%];
// the delta of the medians is 112.5/102.5 − 1 = +9.76%.
func TestCompareStudiesBenchmath(t *testing.T) {
	rec := newMemRecorder()
	ctx := context.Background()
	six := func(from float64) []float64 {
		return []float64{from, from + 1, from + 2, from + 3, from + 4, from + 5}
	}
	flat := []float64{50, 51, 49, 50.5, 49.5, 50}
	baseID := recordStudy(t, rec, loadValid(t), func(lp study.LegPlan, tg bool) []float64 {
		if lp.Models[0] == "tiny" && tg && lp.Depths[0] == 0 {
			return six(100)
		}
		return flat
	})
	np := loadValid(t)
	np.Name = "tiny depth curve, six reps again"
	newID := recordStudy(t, rec, np, func(lp study.LegPlan, tg bool) []float64 {
		if lp.Models[0] == "tiny" && tg && lp.Depths[0] == 0 && lp.Repeat == "" {
			return six(110)
		}
		return flat
	})

	c, err := study.CompareStudiesWith(ctx, rec, baseID, newID, study.CompareOptions{Stats: study.StatsBenchmath})
	if err != nil {
		t.Fatal(err)
	}
	sig := c.Cells[3]
	m := sig.Medians
	if c.Stats != study.StatsBenchmath || sig.Test != "tg32" || sig.Depth != 0 || m == nil || m.Test != analysis.TestMannWhitney {
		t.Fatalf("cell 3: %+v", sig)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9 }
	if !near(m.P, 2.0/924) || !near(*sig.P, 2.0/924) || !sig.Significant || !near(m.Shift, 10/102.5) ||
		!near(sig.DeltaLo, 7/102.5) || !near(sig.DeltaHi, 13/102.5) || !near(sig.Delta, 112.5/102.5-1) ||
		m.Base.Median != 102.5 || m.New.Median != 112.5 || m.Base.N != 6 {
		t.Errorf("significant cell: %+v medians %+v", sig, m)
	}
	if sig.Word != "+9.76% [+6.83%, +12.68%] (p=0.002 n=6+6)" {
		t.Errorf("word %q", sig.Word)
	}
	// The unchanged cells: "~" with an interval of the difference that holds 0.
	for _, cc := range c.Cells {
		if cc.Label() == sig.Label() {
			continue
		}
		if cc.Significant || !strings.HasPrefix(cc.Word, "~ [") || !(cc.DeltaLo <= 0 && cc.DeltaHi >= 0) || cc.Medians == nil {
			t.Errorf("%s: %q [%v, %v]", cc.Label(), cc.Word, cc.DeltaLo, cc.DeltaHi)
		}
	}

	// The default (auto) compares processes: each cell of a fixed-repetition study is one
	// llama-bench process, so every cell is a point estimate with no interval, the +9.76% too
	// (its six repetitions share one process).
	proc, err := study.CompareStudiesWith(ctx, rec, baseID, newID, study.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if proc.Stats != study.StatsProcess {
		t.Errorf("auto: stats %q", proc.Stats)
	}
	for _, cc := range proc.Cells {
		if cc.P != nil || cc.Significant || cc.Processes == nil || !strings.HasPrefix(cc.Word, "? no interval (n=1+1 processes, m=6+6: ") {
			t.Errorf("%s under auto: %q", cc.Label(), cc.Word)
		}
	}
	// Under the old rules (a receipt made before process-level statistics), auto on fixed
	// studies is Welch, as CompareStudies: the same JSON, without stats or medians.
	auto, err := study.CompareStudiesWith(ctx, rec, baseID, newID, study.CompareOptions{OldAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	welch, err := study.CompareStudies(ctx, rec, baseID, newID, 0)
	if err != nil {
		t.Fatal(err)
	}
	aj, _ := json.Marshal(auto)
	wj, _ := json.Marshal(welch)
	if string(aj) != string(wj) || strings.Contains(string(aj), `"stats"`) || strings.Contains(string(aj), `"medians"`) {
		t.Errorf("auto on fixed studies differs from Welch:\n%s\n%s", aj, wj)
	}
	if _, err := study.CompareStudiesWith(ctx, rec, baseID, newID, study.CompareOptions{Stats: "ttest"}); err == nil ||
		!strings.Contains(err.Error(), `statistics "ttest"`) {
		t.Errorf("unknown statistics: %v", err)
	}
}

// TestWelchServesThreeRepetitions is the case for keeping Welch: with three repetitions a side
// (a fixed plan's -r 3), the U test's smallest two-sided p-value is 2/C(6,3) = 0.1, so
// benchmath can never call a difference significant at 5%, however large; Welch's t-test finds
// the +10% of TestCompareStudiesBenchstat (p = 0.0036). The benchmath comparison says why.
func TestWelchServesThreeRepetitions(t *testing.T) {
	rec := newMemRecorder()
	record := func(name string, tg []float64) int64 {
		p := loadValid(t)
		p.Name = name
		return recordStudy(t, rec, p, func(lp study.LegPlan, isTG bool) []float64 {
			if lp.Models[0] == "tiny" && isTG && lp.Depths[0] == 0 && lp.Repeat == "" {
				return tg
			}
			return []float64{50, 51, 49}
		})
	}
	baseID, newID := record("three reps", []float64{100, 102, 98}), record("three reps, new", []float64{110, 112, 108})
	cell := func(stats string) study.CellComparison {
		c, err := study.CompareStudiesWith(context.Background(), rec, baseID, newID, study.CompareOptions{Stats: stats})
		if err != nil {
			t.Fatal(err)
		}
		return c.Cells[3]
	}
	w, b := cell(study.StatsWelch), cell(study.StatsBenchmath)
	if w.Test != "tg32" || b.Test != "tg32" || w.Depth != 0 || !w.Significant || b.Significant || math.Abs(*b.P-0.1) > 1e-12 || math.Abs(analysis.MinPValueU(3, 3)-0.1) > 1e-12 {
		t.Fatalf("welch %s p=%v; benchmath %s p=%v", w.Word, *w.P, b.Word, *b.P)
	}
	if !strings.Contains(strings.Join(b.Medians.Warnings, "; "), "n=3+3: the Mann-Whitney test cannot reach p < 0.05 at these counts (its smallest p is 0.100)") {
		t.Errorf("warnings %q", b.Medians.Warnings)
	}
}

// TestAAControlSplitsAdaptiveChunks runs an adaptive study on the fake bench and compares every
// cell with itself: benchmath (the study is adaptive), odd against even chunks, each cell's
// word the U test on the chunks' rows as the notebook holds them; then a bench whose every
// second process runs 10% faster: the control flags every cell (it measures what a second
// process of the same configuration does).
func TestAAControlSplitsAdaptiveChunks(t *testing.T) {
	for _, step := range []float64{0, 0.10} {
		t.Run(fmt.Sprintf("step %g", step), func(t *testing.T) {
			h := newHarness(t, adaptivePlan)
			seeded := &seededSamples{n: map[string]int{}, cv: 0.012}
			chunk := map[string]int{} // (leg, test rate) → its chunks so far: one call per test of a process
			h.bench.samples = func(leg string, reps int, ts float64) []float64 {
				key := fmt.Sprint(leg, ts)
				chunk[key]++
				if chunk[key]%2 == 0 {
					ts *= 1 + step
				}
				return seeded.draw(leg, reps, ts)
			}
			if _, err := h.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			aa, s, err := study.AAControlOf(context.Background(), h.rec, h.id, study.CompareOptions{Stats: study.StatsBenchmath})
			if err != nil {
				t.Fatal(err)
			}
			if !s.Adaptive || aa.Stats != study.StatsBenchmath || aa.Tested != len(aa.Cells) || aa.Tested == 0 || len(aa.Untestable) != 0 {
				t.Fatalf("control %+v", aa)
			}
			want := chunkHalves(t, h)
			fp := 0
			for _, x := range aa.Cells {
				halves, ok := want[x.Cell]
				if !ok {
					t.Fatalf("%s: no such cell in the notebook (%v)", x.Cell, want)
				}
				m := analysis.CompareMedians(halves[0], halves[1], 0.05)
				if x.Word != m.String() || x.Significant != m.Significant || !strings.HasPrefix(x.Split, "odd against even chunks") {
					t.Errorf("%s: %q (%s), recomputed from the chunk rows %q", x.Cell, x.Word, x.Split, m.String())
				}
				if x.Significant {
					fp++
				}
			}
			if aa.FalsePositives != fp || *aa.Rate != float64(fp)/float64(aa.Tested) {
				t.Errorf("false positives %d of %d, rate %v; counted %d", aa.FalsePositives, aa.Tested, *aa.Rate, fp)
			}
			if step > 0 && fp != aa.Tested {
				t.Errorf("a 10%% step between processes: %d of %d cells flagged", fp, aa.Tested)
			}
			t.Log(aa.Words())
			// The default, process-level: the halves are alternate processes, each compared by
			// its processes' means; the 10% step between processes flags every cell.
			pa, _, err := study.AAControlOf(context.Background(), h.rec, h.id, study.CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pa.Stats != study.StatsProcess || pa.Tested != aa.Tested || len(pa.Untestable) != 0 {
				t.Fatalf("process-level control %+v", pa)
			}
			for _, x := range pa.Cells {
				if !strings.HasPrefix(x.Split, "odd against even processes (") || !strings.Contains(x.Word, " processes, m=") {
					t.Errorf("%s: %q (%s)", x.Cell, x.Word, x.Split)
				}
			}
			if step > 0 && pa.FalsePositives != pa.Tested {
				t.Errorf("process level, a 10%% step between processes: %d of %d cells flagged", pa.FalsePositives, pa.Tested)
			}
			t.Log(pa.Words())
		})
	}
}

// chunkHalves reads every targeted cell's chunk rows from the notebook, in the order they ran,
// and splits them: odd chunks, even chunks (the cell named as the control names it).
func chunkHalves(t *testing.T, h *harness) map[string][2][]float64 {
	t.Helper()
	ctx := context.Background()
	legs, err := h.rec.Legs(ctx, h.id)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := h.rec.Rows(ctx, h.id)
	if err != nil {
		t.Fatal(err)
	}
	counted := map[int64]int{} // notebook leg → its chunk number within the plan leg (1-based)
	perLeg := map[string]int{}
	model := map[int64]string{}
	for _, l := range legs {
		if l.Role == study.RoleLeg && l.State == study.LegFinished && l.Class == "ok" {
			perLeg[l.PlanLeg]++
			counted[l.ID] = perLeg[l.PlanLeg]
			model[l.ID], _, _ = strings.Cut(l.PlanLeg, "/")
		}
	}
	out := map[string][2][]float64{}
	for _, r := range rows {
		k, ok := counted[r.LegID]
		if !ok || r.Status != "result" {
			continue
		}
		res := r.Result
		test := fmt.Sprintf("tg%d", res.NGen)
		if res.NGen == 0 {
			test = fmt.Sprintf("pp%d", res.NPrompt)
		}
		cell := fmt.Sprintf("%s @ d%d of %s [ub%d b%d fa-auto kv-%s/%s t%d ngl%d]", test, res.NDepth, model[r.LegID],
			res.NUbatch, res.NBatch, res.TypeK, res.TypeV, res.NThreads, res.NGPULayers)
		halves := out[cell]
		halves[(k+1)%2] = append(halves[(k+1)%2], res.SamplesTs...)
		out[cell] = halves
	}
	return out
}
