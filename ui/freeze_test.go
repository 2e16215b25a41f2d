package ui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/ui/uitest"
)

var shownSHA = regexp.MustCompile(`plan sha256 ([0-9a-f]{64})`)

// waitDialog waits until the window's top dialog says want, and returns its text.
func waitDialog(t *testing.T, w fyne.Window, want string) string {
	t.Helper()
	var txt string
	waitSignalled(t, nil, 10*time.Second, func() bool {
		txt = uitest.DialogText(w.Canvas())
		return strings.Contains(txt, want)
	}, func() string { return "dialog: " + uitest.DialogText(w.Canvas()) })
	return txt
}

func fillCapacityForm(v *CapacityWizard, models ...string) {
	test.Type(v.Name, "tiny grid")
	v.Models.SetSelected(models)
	v.Flags.SetText("-t 1")
	v.Slots.SetText("1,2")
	v.Clients.SetText("1,2")
}

// Register… shows the plan exactly as it will be frozen, with its SHA-256, before anything is
// registered; confirming registers that plan (the same SHA-256), and Cancel registers nothing.
func TestCapacityRegisterShowsThePlanSHA256BeforeFreezing(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny)}
	svc := &fakeCapacity{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	var done int64
	v := build(func() *CapacityWizard {
		return newCapacityWizard(w, svc, lib, func() []app.ModelEntry { return models }, func(id int64) { done = id })
	})
	Locked(func() { fillCapacityForm(v, tiny) })
	waitCapValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })

	// Cancel at the confirmation: nothing is registered and the button comes back.
	Locked(func() { test.Tap(v.RegisterBtn) })
	txt := waitDialog(t, w, "plan sha256 ")
	Locked(func() {
		if svc.got != nil {
			t.Fatal("the plan was registered before it was confirmed")
		}
		if !v.RegisterBtn.Disabled() {
			t.Error("Register… is enabled while its confirmation is open")
		}
		if !uitest.TapDialogButton(w.Canvas(), "Cancel") {
			t.Fatalf("no Cancel button in %q", txt)
		}
	})
	waitCapValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() && w.Canvas().Overlays().Top() == nil })
	if svc.got != nil {
		t.Fatal("Cancel registered the plan")
	}

	// The SHA-256 shown is the plan's, models hashed in, before registering.
	Locked(func() { test.Tap(v.RegisterBtn) })
	txt = waitDialog(t, w, "plan sha256 ")
	m := shownSHA.FindStringSubmatch(txt)
	if m == nil {
		t.Fatalf("no SHA-256 in the confirmation: %q", txt)
	}
	var want string
	Locked(func() {
		p, errs := v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		p.Candidates[0].Model.SHA256 = strings.Repeat("ab", 32) // what the library hashed
		p.Defaults()
		want, _, _ = p.SHA256()
	})
	if m[1] != want {
		t.Fatalf("confirmation shows %s, the plan's SHA-256 is %s", m[1], want)
	}
	if svc.got != nil {
		t.Fatal("registered before confirming")
	}
	Locked(func() {
		if !uitest.TapDialogButton(w.Canvas(), "Register") {
			t.Fatal("no Register button in the confirmation")
		}
	})
	waitDialog(t, w, "Study registered")
	svc.mu.Lock()
	got := svc.got
	svc.mu.Unlock()
	if got == nil {
		t.Fatal("confirming did not register")
	}
	if sum, _, _ := got.SHA256(); sum != m[1] || done != 9 {
		t.Fatalf("registered plan SHA-256 %s (done %d), shown %s", sum, done, m[1])
	}
}

// Cancel while the files are being hashed calls the registration off.
func TestRegisterCancelledWhileHashing(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny)}
	reg := &fakeRegistrar{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}, block: true}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *WizardView { return newWizardView(w, reg, lib, func() []app.ModelEntry { return models }, nil) })
	Locked(func() {
		test.Type(v.Name, "tiny sweep")
		v.Models.SetSelected([]string{tiny})
		v.Depths.SetText("0,128")
	})
	waitValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	Locked(func() { test.Tap(v.RegisterBtn) })
	waitDialog(t, w, "hashing the models")
	Locked(func() {
		if !uitest.TapDialogButton(w.Canvas(), "Cancel") {
			t.Fatal("no Cancel button while hashing")
		}
	})
	waitValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	Locked(func() {
		if top := w.Canvas().Overlays().Top(); top != nil {
			t.Fatalf("a dialog is left after cancelling: %q", uitest.DialogText(w.Canvas()))
		}
	})
	if reg.got != nil {
		t.Fatal("a cancelled registration registered the plan")
	}
}

// The throughput wizard's Register… shows the SHA-256 it then registers.
func TestThroughputRegisterShowsThePlanSHA256BeforeFreezing(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny)}
	reg := &fakeRegistrar{}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *WizardView { return newWizardView(w, reg, lib, func() []app.ModelEntry { return models }, nil) })
	Locked(func() {
		test.Type(v.Name, "tiny sweep")
		v.Models.SetSelected([]string{tiny})
		v.Depths.SetText("0,128")
	})
	waitValidated(t, v, func() bool { return !v.RegisterBtn.Disabled() })
	Locked(func() { test.Tap(v.RegisterBtn) })
	txt := waitDialog(t, w, "plan sha256 ")
	m := shownSHA.FindStringSubmatch(txt)
	if m == nil || reg.got != nil {
		t.Fatalf("confirmation %q (registered already: %v)", txt, reg.got != nil)
	}
	Locked(func() {
		if !uitest.TapDialogButton(w.Canvas(), "Register") {
			t.Fatal("no Register button")
		}
	})
	waitDialog(t, w, "Study registered")
	if sum, _, _ := reg.got.SHA256(); sum != m[1] {
		t.Fatalf("registered %s, shown %s", sum, m[1])
	}
}

// A capacity plan opened in the wizard and saved again is the same plan; candidates that are
// not models × configurations are kept as they are until the user edits them.
func TestCapacityWizardOpensAndSavesPlans(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	moe := filepath.Join(modelsDir(), "tiny-moe-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny), app.InspectModel(moe)}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *CapacityWizard {
		return newCapacityWizard(w, &fakeCapacity{}, lib, func() []app.ModelEntry { return models }, nil)
	})
	dir := t.TempDir()
	q, floor := 0.5, 0.8
	w2 := 2
	sha := strings.Repeat("cd", 32)
	grid := &capacity.Plan{Schema: capacity.SchemaCapacity, Name: "opened grid", Description: "kept", Seed: 7,
		Candidates: []capacity.Candidate{
			{ID: "tiny-llama-f32-f16", Label: "tiny-llama-f32 f16", Role: "reference", Model: capacity.FileRef{Path: tiny, SHA256: sha}, ServerFlags: []string{"-t", "1", "-ctk", "f16"}, Markers: capacity.Markers{Must: []string{"CPU"}}},
			{ID: "tiny-llama-f32-q8", Label: "tiny-llama-f32 q8", Model: capacity.FileRef{Path: tiny, SHA256: sha}, ServerFlags: []string{"-t", "1", "-ctk", "q8_0"}},
			{ID: "tiny-moe-f32-f16", Label: "tiny-moe-f32 f16", Model: capacity.FileRef{Path: moe, SHA256: sha}, ServerFlags: []string{"-t", "1", "-ctk", "f16"}},
			{ID: "tiny-moe-f32-q8", Label: "tiny-moe-f32 q8", Model: capacity.FileRef{Path: moe, SHA256: sha}, ServerFlags: []string{"-t", "1", "-ctk", "q8_0"}},
		},
		Slots: []int{1, 2, 4}, Clients: []int{1, 4}, Passes: []string{capacity.PassForward}, Warmups: &w2, Measured: 3, NPredict: 16, CtxPerSlot: 256,
		PromptPlan:    capacity.DefaultPromptPlanRef(),
		Limits:        capacity.Limits{TTFTMsP95Max: 900, E2EMsP95Max: 5000, CompletionRateMin: 0.9, PeakRSSMiBMax: 2048, GenRateSpreadMax: 0.3, E2EP95SpreadMax: 0.4, ObjectiveTolerance: 0.05, QualityRetentionMin: &q, QualityFloor: &floor},
		QualityCases:  &capacity.FileRef{Path: filepath.Join(dir, "cases.json"), SHA256: sha},
		KneeThreshold: 0.3,
		Predictions:   []capacity.Prediction{{ID: "P1", Kind: "question", Text: "where is the knee?", About: capacity.Selector{Figure: capacity.FigureKnee, Candidate: "tiny-moe-f32-q8"}}},
	}
	grid.Defaults()
	wantSum, _, _ := grid.SHA256()
	roundTrip := func(p *capacity.Plan) string {
		t.Helper()
		var got string
		Locked(func() {
			v.LoadPlan(p, dir)
			back, errs := v.Plan()
			if len(errs) > 0 {
				t.Fatalf("the opened plan does not parse back: %v", errs)
			}
			data, err := v.PlanJSON(context.Background(), back)
			if err != nil {
				t.Fatal(err)
			}
			reread, err := capacity.Decode("saved.json", data)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ = reread.SHA256()
		})
		return got
	}
	if got := roundTrip(grid); got != wantSum {
		t.Fatalf("a models × configurations plan opened and saved: SHA-256 %s, want %s", got, wantSum)
	}
	Locked(func() {
		if v.keepCands || v.Flags.Text != "" || v.Configs.Text() != "f16: -t 1 -ctk f16\nq8: -t 1 -ctk q8_0" || v.Tolerance.Text != "0.05" || v.Knee.Text != "0.3" || v.RateSpread.Text != "0.3" || v.Passes.Selected != passesForward {
			t.Fatalf("form: keep %v flags %q configs %q tolerance %q knee %q spread %q passes %q", v.keepCands, v.Flags.Text, v.Configs.Text(), v.Tolerance.Text, v.Knee.Text, v.RateSpread.Text, v.Passes.Selected)
		}
	})

	// Candidates the form cannot express: kept, and said so; an edit replaces them.
	odd := *grid
	odd.Candidates = []capacity.Candidate{grid.Candidates[0], grid.Candidates[3]}
	odd.Candidates[1].ServerFlags = []string{"-t", "1", "--chat-template-kwargs", `{"a": 1}`}
	odd.Predictions = nil
	odd.Limits.QualityReference = "tiny-llama-f32-f16"
	oddSum, _, _ := odd.SHA256()
	if got := roundTrip(&odd); got != oddSum {
		t.Fatalf("a plan with its own candidates opened and saved: SHA-256 %s, want %s", got, oddSum)
	}
	Locked(func() {
		if !v.keepCands || !strings.Contains(v.CandNote.Text, "kept as they are") {
			t.Fatalf("keep %v, note %q", v.keepCands, v.CandNote.Text)
		}
		v.Configs.Rows[0].Field("t").SetText("2")
		p, _ := v.Plan()
		if v.keepCands || len(p.Candidates) != 2 || strings.Join(p.Candidates[0].ServerFlags, " ") != "-t 2 -ctk f16" {
			t.Fatalf("after an edit: keep %v, candidates %+v", v.keepCands, p.Candidates)
		}
	})
}

// Either wizard's Open plan… hands a plan of the other kind to the other wizard, and the kind
// chooser follows.
func TestOpenPlanGoesToTheWizardOfItsKind(t *testing.T) {
	a := newTestApp(t)
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }})
	})
	defer Locked(func() { wb.Window.Close() })
	dir := t.TempDir()
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	capPath := filepath.Join(dir, "grid.json")
	p := capPlan()
	p.Candidates[0].Model.Path = tiny
	data, _ := json.Marshal(p)
	if err := os.WriteFile(capPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	thrPath := filepath.Join(dir, "sweep.json")
	tp := &study.Plan{Schema: study.SchemaThroughput, Name: "sweep", Models: []study.Model{{ID: "tiny", Path: tiny}}}
	tp.Defaults()
	data, _ = json.Marshal(tp)
	if err := os.WriteFile(thrPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	Locked(func() {
		if planSchema(capPath) != capacity.SchemaCapacity || planSchema(thrPath) != study.SchemaThroughput || planSchema(filepath.Join(dir, "none")) != "" {
			t.Fatal("planSchema")
		}
		if !wb.Wizard.openOther(capPath) || wb.Kind.Selected != KindCapacity || wb.CapWiz.Name.Text != "grid" || wb.CapWiz.Object.Visible() == false {
			t.Fatalf("capacity plan from the throughput wizard: kind %q name %q", wb.Kind.Selected, wb.CapWiz.Name.Text)
		}
		if !wb.CapWiz.openOther(thrPath) || wb.Kind.Selected != "throughput" || wb.Wizard.Name.Text != "sweep" {
			t.Fatalf("throughput plan from the capacity wizard: kind %q name %q", wb.Kind.Selected, wb.Wizard.Name.Text)
		}
		if wb.Wizard.openOther(thrPath) {
			t.Fatal("a throughput plan was taken as a capacity plan")
		}
	})
}

// The Add a prediction dialogs show only the fields of the chosen kind (and the crossing line
// or the cell's P and C only for figures that need them), and build the prediction from them.
func TestPredictionFormsShowTheFieldsOfTheirKind(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny)}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *WizardView {
		return newWizardView(w, &fakeRegistrar{}, nil, func() []app.ModelEntry { return models }, nil)
	})
	Locked(func() {
		v.Models.SetSelected([]string{tiny})
		f := v.newPredictionForm()
		shown := func() string {
			var on []string
			for _, k := range []string{"band", "comparison", "fork", "question"} {
				if f.kinds.shown(k) {
					on = append(on, k)
				}
			}
			if f.lineForm.Visible() {
				on = append(on, "line")
			}
			return strings.Join(on, ",")
		}
		if got := shown(); got != "band" {
			t.Fatalf("band: shown %q", got)
		}
		f.kind.SetSelected("fork")
		f.figure.SetSelected(string(study.FigureCrossing))
		if got := shown(); got != "fork,line" {
			t.Fatalf("fork about a crossing: shown %q", got)
		}
		f.kind.SetSelected("question")
		f.figure.SetSelected(string(study.FigureSlope))
		if got := shown(); got != "" {
			t.Fatalf("question: shown %q", got)
		}
		f.kind.SetSelected("comparison")
		if got := shown(); got != "comparison" {
			t.Fatalf("comparison: shown %q", got)
		}
		f.kind.SetSelected("fork")
		f.figure.SetSelected(string(study.FigureCell))
		f.text.SetText("tg falls with depth")
		f.depth.SetText("128")
		f.arms.SetText("steep::20; flat:20:")
		pr, err := f.build()
		if err != nil || pr.Kind != study.KindFork || len(pr.Arms) != 2 {
			t.Fatalf("fork built: %+v, %v", pr, err)
		}
	})
	cw := build(func() *CapacityWizard {
		return newCapacityWizard(w, &fakeCapacity{}, nil, func() []app.ModelEntry { return models }, nil)
	})
	Locked(func() {
		fillCapacityForm(cw, tiny)
		f := cw.newPredictionForm()
		if !f.kinds.shown("band") || f.cellForm.Visible() {
			t.Fatalf("band about the selected gain: band %v cell %v", f.kinds.shown("band"), f.cellForm.Visible())
		}
		f.kind.SetSelected("question")
		f.figure.SetSelected(string(capacity.FigureCellRate))
		if f.kinds.shown("band") || !f.cellForm.Visible() {
			t.Fatalf("question about a cell: band %v cell %v", f.kinds.shown("band"), f.cellForm.Visible())
		}
		f.text.SetText("P2 C2 beats 10 t/s?")
		f.slots.SetText("2")
		f.clients.SetText("2")
		pr, err := f.build()
		if err != nil || pr.About.Slots == nil || *pr.About.Slots != 2 || pr.Kind != study.KindQuestion {
			t.Fatalf("question built: %+v, %v", pr, err)
		}
	})
}
