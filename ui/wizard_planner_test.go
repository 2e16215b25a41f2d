package ui

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sparkbench/app"
	"sparkbench/app/study"
)

// plannerRegistrar is a Registrar with the repetition planner: it answers with fixed lines and
// records the plans it was asked about.
type plannerRegistrar struct {
	fakeRegistrar
	mu    sync.Mutex
	asked []*study.Plan
}

func (r *plannerRegistrar) PlanRepetitions(_ context.Context, p *study.Plan) ([]string, error) {
	r.mu.Lock()
	r.asked = append(r.asked, p)
	r.mu.Unlock()
	return []string{"repetition planner (heading)", "  tg16 of tiny-llama-f32 (CV 2.00% over 10 past rows): … n ≈ 8 repetitions per arm"}, nil
}

// The New study form shows the planner's lines for a plan that compares arms (a comparison
// prediction, an adaptive block) and nothing for one that does not.
func TestWizardShowsTheRepetitionPlannerForComparisons(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	moe := filepath.Join(modelsDir(), "tiny-moe-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny), app.InspectModel(moe)}
	reg := &plannerRegistrar{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), reg, lib, func() []app.ModelEntry { return models }, func(int64) {})
	})
	Locked(func() {
		v.Name.SetText("planner")
		v.Models.SetSelected([]string{tiny, moe})
		v.Depths.SetText("0,128")
		v.NPrompt.SetText("32")
		v.NGen.SetText("16")
		v.Threads.SetText("1")
	})
	waitValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	Locked(func() {
		if v.Planner.Visible() || v.Planner.Text != "" {
			t.Fatalf("planner shown for a plan without comparisons: %q", v.Planner.Text)
		}
	})
	reg.mu.Lock()
	if len(reg.asked) != 0 {
		t.Fatalf("planner asked %d times for a plan without comparisons", len(reg.asked))
	}
	reg.mu.Unlock()
	p, err := buildPrediction("comparison", "tiny keeps up with moe at d128", "cell", "tiny-llama-f32", "tg16", "128", "", "", "", "", ">=", "tiny-moe-f32", "128", "0.05")
	if err != nil {
		t.Fatal(err)
	}
	Locked(func() { v.AddPrediction(p) })
	waitValidated(t, v, func() bool { return v.Planner.Visible() })
	Locked(func() {
		if !strings.HasPrefix(v.Planner.Text, "repetition planner (heading)\n  tg16 of tiny-llama-f32") {
			t.Fatalf("planner text %q", v.Planner.Text)
		}
	})
	reg.mu.Lock()
	last := reg.asked[len(reg.asked)-1]
	reg.mu.Unlock()
	if len(last.Predictions) != 1 || last.Predictions[0].Kind != study.KindComparison || len(last.Models) != 2 {
		t.Fatalf("planner asked about %+v", last)
	}
}
