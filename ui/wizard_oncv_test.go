package ui

import (
	"testing"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/study"
)

// The study forms offer what a CV flag does (gates.on_cv): left on halt, the plan leaves the
// field out (the golden plans keep their SHA-256); count writes "count"; a plan opened with an
// explicit "halt" keeps it, and one opened with "count" shows and keeps count. The quant form
// writes speed.gates.on_cv the same way.
func TestStudyFormsOfferWhatACVFlagDoes(t *testing.T) {
	a := newTestApp(t)
	models := []app.ModelEntry{{Path: "/models/a.gguf"}}
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), &fakeRegistrar{}, nil, func() []app.ModelEntry { return models }, nil)
	})
	plan := func() *study.Plan {
		t.Helper()
		p, errs := v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return p
	}
	Locked(func() {
		test.Type(v.Name, "on cv")
		v.Models.SetSelected([]string{"/models/a.gguf"})
		if got := plan().Gates.OnCV; got != "" || v.OnCV.Selected != onCVHaltText {
			t.Errorf("default: on_cv %q, shown %q", got, v.OnCV.Selected)
		}
		v.OnCV.SetSelected(onCVCountText)
		if got := plan().Gates.OnCV; got != study.OnCVCount {
			t.Errorf("count chosen: on_cv %q", got)
		}
		for _, written := range []string{study.OnCVHalt, study.OnCVCount, ""} {
			p := plan()
			p.Gates.OnCV = written
			v.LoadPlan(p, t.TempDir())
			want := onCVHaltText
			if written == study.OnCVCount {
				want = onCVCountText
			}
			if v.OnCV.Selected != want || plan().Gates.OnCV != written {
				t.Errorf("opened with on_cv %q: shown %q, saved %q", written, v.OnCV.Selected, plan().Gates.OnCV)
			}
		}
	})
	q := build(func() *QuantWizard {
		return newQuantWizard(a.NewWindow("q"), &fakeQuant{types: fakeTypes, corpus: writeCorpus(t)}, nil, nil, nil)
	})
	Locked(func() {
		if p, _ := q.Plan(); p.Speed.Gates.OnCV != "" {
			t.Errorf("quant default: on_cv %q", p.Speed.Gates.OnCV)
		}
		q.OnCV.SetSelected(onCVCountText)
		if p, _ := q.Plan(); p.Speed.Gates.OnCV != study.OnCVCount {
			t.Errorf("quant count chosen: on_cv %q", p.Speed.Gates.OnCV)
		}
	})
}
