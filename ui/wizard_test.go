package ui

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/study"
)

type fakeRegistrar struct{ got *study.Plan }

func (f *fakeRegistrar) Register(_ context.Context, p *study.Plan) (study.Registration, error) {
	f.got = p
	sum, _, _ := p.SHA256()
	return study.Registration{StudyID: 42, Name: p.Name, PlanSHA256: sum, Legs: 4}, nil
}

func waitValidated(t *testing.T, v *WizardView, cond func() bool) {
	t.Helper()
	waitSignalled(t, v.validated, 10*time.Second, cond, func() string { return "problems:\n" + v.Problems.Text })
}

// waitSignalled checks cond under the UI lock until it holds, again each time ch receives and
// at least every 20 ms; after limit the test fails, with explain()'s text (read under the lock)
// when explain is set.
func waitSignalled(t *testing.T, ch <-chan struct{}, limit time.Duration, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.After(limit)
	for {
		var ok bool
		Locked(func() { ok = cond() })
		if ok {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			if explain == nil {
				t.Fatal("condition never met")
			}
			var why string
			Locked(func() { why = explain() })
			t.Fatalf("condition never met; %s", why)
		}
	}
}

func TestWizardBuildsValidatesAndRegisters(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	moe := filepath.Join(modelsDir(), "tiny-moe-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny), app.InspectModel(moe), {Path: "/x/broken.gguf", Err: "invalid magic"}}
	reg := &fakeRegistrar{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	var done int64
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), reg, lib, func() []app.ModelEntry { return models }, func(id int64) { done = id })
	})

	Locked(func() {
		if len(v.Models.Options) != 2 {
			t.Fatalf("model choices %v: the unreadable file must not be offered", v.Models.Options)
		}
		test.Type(v.Name, "tiny depth curve")
		v.Models.SetSelected([]string{tiny, moe})
		v.Depths.SetText("0,128,8192") // 8192 + 512 exceeds the tiny models' 4096 context
		v.Threads.SetText("1")
	})
	waitValidated(t, v, func() bool { return strings.Contains(v.Problems.Text, "exceeds model") })
	Locked(func() {
		if !v.RegisterBtn.Disabled() {
			t.Fatal("Register must stay disabled while the plan is invalid")
		}
		v.Depths.SetText("0,128")
		v.NPrompt.SetText("32")
		v.NGen.SetText("16")
		v.Reps.SetText("x")
	})
	waitValidated(t, v, func() bool { return strings.Contains(v.Problems.Text, `repetitions: "x" is not a whole number`) })
	Locked(func() { v.Reps.SetText("3") })
	waitValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	Locked(func() {
		if !strings.HasPrefix(v.Estimate.Text, "4 legs, 8 llama-bench tests") {
			t.Errorf("estimate %q", v.Estimate.Text)
		}
	})
	p, err := buildPrediction("band", "tiny tg fast at d0", "cell", "tiny-llama-f32", "tg", "0", "", "1000", "", "", "", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	Locked(func() { v.AddPrediction(p) })
	bad, err := buildPrediction("fork", "arms", "depth_slope", "tiny-llama-f32", "tg", "128", "", "", "", "steep::-0.2; broken", "", "", "", "")
	if err == nil || !strings.Contains(err.Error(), `fork arm "broken": want name:lo:hi`) {
		t.Fatalf("bad fork arms: %v", err)
	}
	_ = bad
	waitValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" })

	result := make(chan error, 1)
	Locked(func() {
		v.Register(func(r study.Registration, err error) {
			if err == nil && r.StudyID == 42 {
				v.onDone(r.StudyID)
			}
			result <- err
		})
	})
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	g := reg.got
	if g == nil || len(g.Models) != 2 || g.Models[0].ID != "tiny-llama-f32" || g.Models[0].SHA256 != strings.Repeat("ab", 32) ||
		len(g.Predictions) != 1 || g.Predictions[0].ID != "P1" || g.Axes.Threads[0] != 1 || done != 42 {
		t.Fatalf("registered plan: %+v (done %d)", g, done)
	}
}

// A model whose SHA-256 differs from the expected one is refused before anything is
// registered: the notebook is left unchanged.
func TestWizardRefusesAMismatchedModel(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	reg := &fakeRegistrar{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{tiny: strings.Repeat("cd", 32)}}
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), reg, lib, func() []app.ModelEntry { return []app.ModelEntry{app.InspectModel(tiny)} }, nil)
	})
	Locked(func() {
		test.Type(v.Name, "mismatch")
		v.Models.SetSelected([]string{tiny})
		v.Depths.SetText("0")
		v.NPrompt.SetText("32")
		v.NGen.SetText("16")
	})
	waitValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	result := make(chan error, 1)
	Locked(func() { v.Register(func(_ study.Registration, err error) { result <- err }) })
	err := <-result
	if err == nil || !strings.Contains(err.Error(), "MISMATCH") || !strings.Contains(err.Error(), "download it again") {
		t.Fatalf("want a MISMATCH refusal, got %v", err)
	}
	if reg.got != nil {
		t.Fatal("a refused plan reached the notebook")
	}
}

// A plan file opens into the form and saves back to the same plan (same SHA-256).
func TestWizardOpensAndSavesPlans(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), &fakeRegistrar{}, nil, func() []app.ModelEntry { return nil }, nil)
	})
	planFile := filepath.Join(modelsDir(), "..", "..", "app", "study", "testdata", "valid.json")
	orig, err := study.Load(planFile)
	if err != nil {
		t.Fatal(err)
	}
	orig.Defaults()
	var saved []byte
	Locked(func() {
		p, _ := study.Load(planFile)
		v.LoadPlan(p, filepath.Dir(planFile))
		if v.Name.Text != "tiny depth curve" || len(v.Models.Selected) != 2 || v.Depths.Text != "0,128,256" || len(v.preds) != 4 {
			t.Fatalf("form: %q %v %q %d", v.Name.Text, v.Models.Selected, v.Depths.Text, len(v.preds))
		}
		saved, err = v.PlanJSON()
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := study.Decode("saved.json", saved)
	if err != nil {
		t.Fatal(err)
	}
	// The same plan, its relative model paths made absolute.
	if got.Models[0].ID != "tiny" || got.Models[1].ID != "moe" || len(got.Predictions) != 4 || got.Axes.Reps != 3 || got.Repeatability == nil {
		t.Fatalf("saved plan: %+v", got)
	}
	want := *orig
	for i := range want.Models {
		want.Models[i].Path = got.Models[i].Path
	}
	ws, _, _ := want.SHA256()
	gs, _, _ := got.SHA256()
	if ws != gs {
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		t.Fatalf("round trip changed the plan:\nwant %s\n got %s", a, b)
	}
}

func TestWizardSavedPlanCarriesKnownHashes(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	lib := &fakeLibrary{sums: map[string]string{tiny: strings.Repeat("ab", 32)}, expected: map[string]string{}}
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), &fakeRegistrar{}, lib, func() []app.ModelEntry { return []app.ModelEntry{app.InspectModel(tiny)} }, nil)
	})
	Locked(func() {
		v.Name.SetText("saved")
		v.Models.SetSelected([]string{tiny})
	})
	data, err := v.PlanJSONWithHashes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := study.Decode("saved.json", data)
	if err != nil || p.Models[0].SHA256 != strings.Repeat("ab", 32) {
		t.Fatalf("saved plan: %+v %v", p, err)
	}
}
