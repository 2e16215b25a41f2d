package studyrun

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
)

// recordStudy registers p in rec and records every plan leg as finished with a pp and a tg row
// at the leg's depth, whose repetitions (samples_ts) samples gives.
func recordStudy(t *testing.T, rec *memRecorder, p *study.Plan, samples func(leg study.LegPlan, tg bool) []float64) int64 {
	t.Helper()
	ctx := context.Background()
	reg, err := study.Register(ctx, rec, p, filepath.Join(planDir, "valid.json"), sha256File)
	if err != nil {
		t.Fatal(err)
	}
	legs, err := study.Expand(p, planDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, lp := range legs {
		id, sink, err := rec.StartLeg(ctx, study.LegStart{StudyID: reg.StudyID, Label: lp.ID, Kind: "bench", PlanLeg: lp.ID, Role: study.RoleLeg, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		var rows []benchfmt.Result
		for _, tg := range []bool{false, true} {
			xs := samples(lp, tg)
			var sum float64
			for _, x := range xs {
				sum += x
			}
			r := benchfmt.Result{NDepth: int64(lp.Depths[0]), AvgTs: sum / float64(len(xs)), SamplesTs: xs,
				NUbatch: 512, NBatch: 2048, FlashAttn: -1, TypeK: "f16", TypeV: "f16", NThreads: 1, NGPULayers: -1}
			if tg {
				r.NGen = 32
			} else {
				r.NPrompt = 64
			}
			rows = append(rows, r)
		}
		if err := sink.AddBench(rows...); err != nil {
			t.Fatal(err)
		}
		if err := rec.FinishLeg(ctx, id, study.LegEnd{Class: "ok", RowStatus: []string{"result", "result"}}); err != nil {
			t.Fatal(err)
		}
	}
	return reg.StudyID
}

// TestCompareStudiesBenchstat checks a comparison against numbers worked by hand. With three
// repetitions a side of equal spread (sd 2), Welch's t-test has exactly 4 degrees of freedom,
// where Student's t has a closed form: with x = t / sqrt(t² + 4), the two-sided p-value is
// 1 - 1.5x + 0.5x³. The standard error is sqrt(4/3 + 4/3) = 1.63299.
//
//   - tiny tg32 @ d0: 100,102,98 against 110,112,108: +10.00%, t = 6.1237, p = 0.003602:
//     significant.
//   - tiny tg32 @ d128: 100,102,98 against 101,103,99: +1.00%, t = 0.61237, p = 0.573392: "~".
//
// Each mean's interval is ± t(0.975, 2) · 2 / sqrt(3) = ± 4.968275 t/s; the delta's is
// ± t(0.975, 4) · 1.63299 / 100 = ± 4.5339 points.
func TestCompareStudiesBenchstat(t *testing.T) {
	rec := newMemRecorder()
	ctx := context.Background()
	same := []float64{50, 51, 49}
	baseID := recordStudy(t, rec, loadValid(t), func(lp study.LegPlan, tg bool) []float64 {
		if lp.Models[0] == "tiny" && tg && lp.Depths[0] <= 128 {
			return []float64{100, 102, 98}
		}
		return same
	})
	np := loadValid(t)
	np.Name = "tiny depth curve, new build"
	newID := recordStudy(t, rec, np, func(lp study.LegPlan, tg bool) []float64 {
		switch {
		case lp.Repeat != "":
			return []float64{500, 500, 500} // repeatability copies are not the cell: never compared
		case lp.Models[0] == "tiny" && tg && lp.Depths[0] == 0:
			return []float64{110, 112, 108}
		case lp.Models[0] == "tiny" && tg && lp.Depths[0] == 128:
			return []float64{101, 103, 99}
		}
		return same
	})

	c, err := study.CompareStudies(ctx, rec, baseID, newID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Alpha != study.DefaultAlpha || c.Baseline.ID != baseID || c.New.ID != newID || len(c.OnlyBaseline)+len(c.OnlyNew) != 0 {
		t.Fatalf("comparison head: %+v", c)
	}
	// 2 models x 3 depths x (pp64, tg32); the baseline plan's model order, then test, depth.
	if len(c.Cells) != 12 || c.Cells[0].Model != "tiny" || c.Cells[0].Test != "pp64" || c.Cells[3].Test != "tg32" || c.Cells[6].Model != "moe" {
		t.Fatalf("cells: %d %+v", len(c.Cells), c.Cells)
	}
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol }
	sig, flat := c.Cells[3], c.Cells[4]
	if sig.Depth != 0 || flat.Depth != 128 || sig.ModelSHA256 != loadValid(t).Models[0].SHA256 || sig.NewModel != "tiny" {
		t.Fatalf("cells 3 and 4: %+v %+v", sig, flat)
	}
	if sig.Baseline.N != 3 || sig.New.N != 3 || sig.Baseline.Mean != 100 || sig.New.Mean != 110 ||
		!near(sig.Baseline.Hi-sig.Baseline.Mean, 4.968275, 1e-5) || !near(sig.New.Mean-sig.New.Lo, 4.968275, 1e-5) {
		t.Errorf("significant cell summaries: %+v %+v", sig.Baseline, sig.New)
	}
	if !near(sig.Delta, 0.10, 1e-12) || sig.P == nil || !near(*sig.P, 0.003602, 1e-6) || !sig.Significant ||
		!near(sig.DeltaLo, 0.054661, 1e-6) || !near(sig.DeltaHi, 0.145339, 1e-6) || sig.Word != "+10.00% (p=0.004 n=3+3)" {
		t.Errorf("significant cell: %+v p=%v", sig, *sig.P)
	}
	if !near(flat.Delta, 0.01, 1e-12) || flat.P == nil || !near(*flat.P, 0.573392, 1e-6) || flat.Significant ||
		!near(flat.DeltaLo, -0.035339, 1e-6) || flat.Word != "~ (p=0.573 n=3+3)" {
		t.Errorf("~ cell: %+v p=%v", flat, *flat.P)
	}
	for _, cc := range c.Cells {
		if cc == sig || cc == flat {
			continue
		}
		if cc.Delta != 0 || cc.Significant || !strings.HasPrefix(cc.Word, "~ (p=1.000") {
			t.Errorf("%s: unchanged cell reads %q", cc.Label(), cc.Word)
		}
		if !strings.HasPrefix(cc.BaselineSource, "leg ") || !strings.HasPrefix(cc.NewSource, "leg ") {
			t.Errorf("%s: sources %q %q", cc.Label(), cc.BaselineSource, cc.NewSource)
		}
	}

	// Refusals, each with its reason.
	if _, err := study.CompareStudies(ctx, rec, baseID, baseID, 0); !errors.Is(err, study.ErrNotComparable) || !strings.Contains(err.Error(), "both the baseline and the new study") {
		t.Errorf("same study: %v", err)
	}
	other := loadValid(t)
	other.Name = "another model"
	f16 := filepath.Join("..", "..", "..", "testdata", "models", "tiny-llama-f16.gguf")
	f16SHA, err := sha256File(f16)
	if err != nil {
		t.Fatal(err)
	}
	other.Models = []study.Model{{ID: "tiny", Path: f16, SHA256: f16SHA}} // the plan folder is as deep as this one
	other.Predictions = nil
	otherID := recordStudy(t, rec, other, func(study.LegPlan, bool) []float64 { return same })
	_, err = study.CompareStudies(ctx, rec, baseID, otherID, 0)
	if !errors.Is(err, study.ErrNotComparable) || !strings.Contains(err.Error(), "different model files") ||
		!strings.Contains(err.Error(), "tiny (sha256 "+f16SHA+")") || !strings.Contains(err.Error(), "tiny (sha256 "+sig.ModelSHA256+")") {
		t.Errorf("different models: %v", err)
	}
	few := loadValid(t)
	few.Name = "two reps"
	few.Axes.Reps = 2
	fewID := recordStudy(t, rec, few, func(lp study.LegPlan, tg bool) []float64 {
		if lp.ID == "moe/d256" && tg {
			return []float64{50, 51}
		}
		return same
	})
	_, err = study.CompareStudies(ctx, rec, baseID, fewID, 0)
	if !errors.Is(err, study.ErrNotComparable) || !strings.Contains(err.Error(), "need >= 3 reps") ||
		!strings.Contains(err.Error(), "tg32 @ d256 of moe [ub512 b2048 fa-auto kv-f16/f16 t1 ngl-1]: baseline 3 rep(s)") ||
		!strings.Contains(err.Error(), "new 2") || strings.Contains(err.Error(), "pp64") {
		t.Errorf("too few reps: %v", err)
	}
}
