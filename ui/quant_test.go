package ui

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/app/study"
	"sparkbench/ui/uitest"
)

// fakeQuant is an in-memory QuantService: Validate is app/quant's own check against a fixed
// list of types, Register keeps the plan, Run feeds records (each after a receive from step,
// when set), HandOff writes a file unless one is there.
type fakeQuant struct {
	mu       sync.Mutex
	types    []string
	typesErr error
	corpus   string
	got      *quant.Plan
	status   string
	plan     *quant.Plan
	shown    []quant.Record // the records ShowQuant assembles
	recs     []quant.Record // the records RunQuant feeds
	step     chan struct{}
	handed   []quant.HandOff
	derived  []DerivedModel
	buildDir string   // the window's llama.cpp folder
	checked  []string // the build.dir of each plan ValidateQuant checked
}

func (f *fakeQuant) BuildDir() string { return f.buildDir }

func (f *fakeQuant) QuantTypes(context.Context) ([]string, error) { return f.types, f.typesErr }
func (f *fakeQuant) DefaultCorpus(context.Context) (string, error) {
	return f.corpus, nil
}

func (f *fakeQuant) ValidateQuant(_ context.Context, p *quant.Plan) ([]study.Problem, error) {
	f.mu.Lock()
	f.checked = append(f.checked, p.Build.Dir)
	f.mu.Unlock()
	q := *p
	q.Defaults()
	return quant.Validate(&q, quant.ValidateOptions{Types: f.types}), nil
}

func (f *fakeQuant) EstimateQuant(_ context.Context, p *quant.Plan) (string, error) {
	return fmt.Sprintf("about %dm0s (a guess)", 2*len(p.Quants)), nil
}

func (f *fakeQuant) RegisterQuant(_ context.Context, p *quant.Plan) (QuantRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = p
	sum, _, _ := p.SHA256()
	return QuantRegistration{StudyID: 7, Name: p.Name, PlanSHA256: sum, File: "/data/plans/x.json"}, nil
}

func (f *fakeQuant) ShowQuant(_ context.Context, id int64) (*QuantStudy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, err := quant.Assemble(f.plan, "", f.shown)
	if err != nil {
		return nil, err
	}
	return &QuantStudy{ID: id, Name: f.plan.Name, Status: f.status, PlanSHA256: strings.Repeat("e", 64), Plan: f.plan, Result: res}, nil
}

func (f *fakeQuant) RunQuant(ctx context.Context, _ int64, onLine func(string), onRecord func(quant.Record)) (QuantRunDone, error) {
	onLine("kld-base: base logits of the reference")
	for _, r := range f.recs {
		if f.step != nil {
			select {
			case <-f.step:
			case <-ctx.Done():
				return QuantRunDone{}, ctx.Err()
			}
		}
		onLine("bench/" + r.Type + "/d0: done")
		onRecord(r)
	}
	f.mu.Lock()
	f.status, f.shown = "complete", f.recs
	f.mu.Unlock()
	return QuantRunDone{Status: "complete", Complete: true, Lines: []string{"study 7 complete: 9 legs"}}, nil
}

func (f *fakeQuant) HandOff(_ context.Context, _ int64, out string, h quant.HandOff) (string, error) {
	if _, err := os.Stat(out); err == nil {
		return "", fmt.Errorf("%s exists; give a new file (nothing is overwritten)", out)
	}
	f.mu.Lock()
	f.handed = append(f.handed, h)
	f.mu.Unlock()
	return strings.Repeat("f", 64), os.WriteFile(out, []byte("{}\n"), 0o644)
}

func (f *fakeQuant) DerivedModels(context.Context) ([]DerivedModel, error) { return f.derived, nil }

var fakeTypes = []string{"Q4_0", "Q4_1", "Q8_0", "Q4_K_M", "IQ4_NL", "F16"}

func writeCorpus(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("a sentence of the corpus. ", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func waitQuantValidated(t *testing.T, v *QuantWizard, cond func() bool) {
	t.Helper()
	waitSignalled(t, v.validated, 10*time.Second, cond, func() string { return "problems:\n" + v.Problems.Text + "\nestimate: " + v.Estimate.Text })
}

// The ladder form offers the build's types, checks itself through the kind's rules as the user
// types (no type, a type the build does not know, a misspelt one, a field that does not parse),
// estimates disk and duration, and registers exactly the plan it describes, its files hashed
// and its build.dir the window's llama.cpp folder (the build it was validated against).
func TestQuantWizardValidatesAndRegisters(t *testing.T) {
	a := newTestApp(t)
	ref := filepath.Join(modelsDir(), "tiny-llama-f16.gguf")
	quantized := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(ref), app.InspectModel(quantized), {Path: "/x/broken.gguf", Err: "invalid magic"}}
	svc := &fakeQuant{types: fakeTypes, corpus: writeCorpus(t), buildDir: "/opt/llama.cpp/build/bin"}
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	var done int64
	v := build(func() *QuantWizard {
		return newQuantWizard(a.NewWindow("t"), svc, lib, func() []app.ModelEntry { return models }, func(id int64) { done = id })
	})
	waitSignalled(t, v.TypesLoaded, 10*time.Second, func() bool { return len(v.Quants.Options) == len(fakeTypes) }, nil)
	Locked(func() {
		if len(v.Reference.Options) != 2 || slices.Contains(v.Reference.Options, "/x/broken.gguf") {
			t.Fatalf("reference choices %v: the unreadable file must not be offered", v.Reference.Options)
		}
		if !strings.Contains(v.TypesNote.Text, "6 types, as this build's llama-quantize lists them") {
			t.Errorf("types note %q", v.TypesNote.Text)
		}
		test.Type(v.Name, "tiny ladder")
		v.Reference.SetSelected(ref)
	})
	waitQuantValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, "quants: empty; list the quant types to try") && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.MoreQuants.SetText("Q9_X") })
	waitQuantValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, "quants[0]: Q9_X is not a type this build's llama-quantize knows; it knows Q4_0, Q4_1") && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.MoreQuants.SetText("q4_0") })
	waitQuantValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `"q4_0": write the type as llama-quantize names it, Q4_0`)
	})
	Locked(func() {
		v.MoreQuants.SetText("")
		v.Quants.SetSelected([]string{"Q8_0", "Q4_0"})
		v.Depths.SetText("0,x")
	})
	waitQuantValidated(t, v, func() bool { return strings.Contains(v.Problems.Text, `depths: "x" is not a whole number`) })
	Locked(func() {
		v.Depths.SetText("0,256")
		if v.Maximize.Selected != "tg@256" || !slices.Contains(v.Maximize.Options, "pp@0") {
			t.Errorf("maximize %q of %v: want tg at the deepest depth, every TEST@DEPTH offered", v.Maximize.Selected, v.Maximize.Options)
		}
		v.NPrompt.SetText("32")
		v.NGen.SetText("8")
		v.Reps.SetText("2")
		v.Ctx.SetText("64")
		v.Chunks.SetText("2")
		v.SameTopP.SetText("90") // a percent, not a fraction
	})
	waitQuantValidated(t, v, func() bool { return strings.Contains(v.Problems.Text, "rule.limits.same_top_p_min: 90: a fraction") })
	Locked(func() {
		v.SameTopP.SetText("")
		v.KLDMean.SetText("0.01")
	})
	waitQuantValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" && !v.RegisterBtn.Disabled() })
	// predictions: checked with the plan (a type it does not list is refused), then registered with it
	if _, err := buildQuantPrediction("band", "x", "kld_mean", "Q8_0", "", "low", ""); err == nil || !strings.Contains(err.Error(), `lower bound: "low" is not a number`) {
		t.Fatalf("bad bound: %v", err)
	}
	bad, _ := buildQuantPrediction("band", "Q2_K stays close", "kld_mean", "Q2_K", "tg@256", "", "0.1")
	Locked(func() { v.AddPrediction(bad) })
	waitQuantValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `predictions[0].about.candidate: "Q2_K": want a candidate of this plan (Q8_0, Q4_0)`) && v.RegisterBtn.Disabled()
	})
	Locked(func() {
		v.Predictions.Select(0)
		test.Tap(v.RemovePred)
	})
	good, _ := buildQuantPrediction("band", "the chosen quant stays close", "kld_mean", quant.CandidateSelected, "tg@256", "", "0.01")
	speed, _ := buildQuantPrediction("question", "how fast is Q4_0 at 256", "speed", "Q4_0", "tg@256", "", "")
	Locked(func() {
		v.AddPrediction(good)
		v.AddPrediction(speed)
	})
	waitQuantValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" && len(v.preds) == 2 })
	// an importance matrix from a calibration text (here the corpus)
	Locked(func() {
		v.Calibration.SetText(svc.corpus)
		v.ImatrixChunks.SetText("four")
	})
	waitQuantValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `importance matrix chunks: "four" is not a whole number`)
	})
	Locked(func() { v.ImatrixChunks.SetText("4") })
	waitQuantValidated(t, v, func() bool {
		return v.Problems.Text == "no problems: ready to register" && strings.Contains(v.Estimate.Text, "an importance matrix (llama-imatrix, 4 chunks of 512 tokens)")
	})
	m := models[0]
	q8, _ := quant.EstimateBytes(m.Size, m.FileType, "Q8_0")
	q4, _ := quant.EstimateBytes(m.Size, m.FileType, "Q4_0")
	Locked(func() {
		for _, want := range []string{"2 candidate(s)", "KLD run on 2 chunks of 64 tokens and 2 speed leg(s) of 2 repetitions",
			"disk for the derived models at most " + app.HumanBytes(q8+q4), "estimated duration about 4m0s (a guess)"} {
			if !strings.Contains(v.Estimate.Text, want) {
				t.Errorf("estimate %q lacks %q", v.Estimate.Text, want)
			}
		}
	})

	result := make(chan error, 1)
	Locked(func() {
		v.Register(func(r QuantRegistration, err error) {
			if err == nil {
				v.onDone(r.StudyID)
			}
			result <- err
		})
	})
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	corpus, _ := os.ReadFile(svc.corpus)
	kld, tol := 0.01, 0.01
	want := &quant.Plan{Schema: quant.SchemaQuant, Name: "tiny ladder", Build: study.Build{Dir: "/opt/llama.cpp/build/bin"}, Reference: quant.FileRef{Path: ref, SHA256: strings.Repeat("ab", 32)},
		Quants: []string{"Q8_0", "Q4_0"}, Speed: quant.Speed{Depths: []int{0, 256}, NPrompt: 32, NGen: 8, Reps: 2, Threads: 1},
		Quality: quant.Quality{Corpus: quant.FileRef{Path: svc.corpus, SHA256: fmt.Sprintf("%x", sha256.Sum256(corpus))}, Ctx: 64, Chunks: 2},
		Imatrix: &quant.Imatrix{Calibration: quant.FileRef{Path: svc.corpus, SHA256: fmt.Sprintf("%x", sha256.Sum256(corpus))}, Chunks: 4},
		Memory:  quant.MemoryBench, Rule: quant.Rule{Maximize: "tg@256", Limits: quant.Limits{KLDMeanMax: &kld}, Tolerance: &tol},
		Predictions: []quant.Prediction{
			{ID: "P1", Text: "the chosen quant stays close", Kind: study.KindBand, About: quant.Selector{Figure: quant.FigureKLDMean, Candidate: quant.CandidateSelected}, Hi: &kld},
			{ID: "P2", Text: "how fast is Q4_0 at 256", Kind: study.KindQuestion, About: quant.Selector{Figure: quant.FigureSpeed, Candidate: "Q4_0", At: "tg@256"}}}}
	want.Defaults()
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(svc.got)
	if string(wj) != string(gj) || done != 7 {
		t.Fatalf("registered plan\n%s\nwant\n%s\n(done %d)", gj, wj, done)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if len(svc.checked) == 0 || slices.ContainsFunc(svc.checked, func(d string) bool { return d != "/opt/llama.cpp/build/bin" }) {
		t.Errorf("validated with build.dir %q, want the window's folder each time", svc.checked)
	}
}

// With the default search (no folder chosen) the plan names no build.dir: the kind's Register
// searches as validation did.
func TestQuantWizardDefaultBuild(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeQuant{types: fakeTypes, corpus: writeCorpus(t)}
	v := build(func() *QuantWizard { return newQuantWizard(a.NewWindow("t"), svc, nil, nil, nil) })
	Locked(func() {
		if p, _ := v.Plan(); p.Build.Dir != "" {
			t.Errorf("build.dir %q without a chosen folder", p.Build.Dir)
		}
		svc.buildDir = "/chosen/later"
		if p, _ := v.Plan(); p.Build.Dir != "/chosen/later" {
			t.Errorf("build.dir %q after the folder was chosen", p.Build.Dir)
		}
	})
}

// Without the build's list of types the form says why, and the types written in are still
// checked (here: not at all, as the kind does without a llama-quantize).
func TestQuantWizardWithoutTheTypes(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeQuant{typesErr: errors.New("no llama-quantize in /opt/x"), corpus: writeCorpus(t)}
	v := build(func() *QuantWizard { return newQuantWizard(a.NewWindow("t"), svc, nil, nil, nil) })
	waitSignalled(t, v.TypesLoaded, 10*time.Second, func() bool {
		return strings.Contains(v.TypesNote.Text, "could not list its types (no llama-quantize in /opt/x)")
	}, nil)
	Locked(func() {
		if len(v.Quants.Options) != 0 {
			t.Errorf("types offered without a list: %v", v.Quants.Options)
		}
	})
}

func quantRecord(typ string, mib, tg, kld float64) quant.Record {
	return quant.Record{Type: typ, File: "/cache/" + typ + ".gguf", SHA256: strings.Repeat("1", 64), Bytes: int64(mib * (1 << 20)), Bits: mib / 4,
		Bench: []quant.BenchCell{{Test: "tg", Depth: 0, Mean: tg, N: 2}, {Test: "pp", Depth: 0, Mean: 10 * tg, N: 2}},
		KLD:   &quant.KLD{Mean: kld, P99: 10 * kld, SameTopP: 1 - kld, PPLRatio: 1 + kld}, PeakRSS: int64(2 * mib * (1 << 20))}
}

func ladderPlan() *quant.Plan {
	kld := 0.01
	p := &quant.Plan{Schema: quant.SchemaQuant, Name: "tiny ladder", Reference: quant.FileRef{Path: "/m/ref-f16.gguf"},
		Quants: []string{"Q8_0", "Q4_K_M", "Q4_0"}, Speed: quant.Speed{Depths: []int{0}},
		Rule: quant.Rule{Maximize: "tg@0", Limits: quant.Limits{KLDMeanMax: &kld}}}
	p.Defaults()
	return p
}

func waitQuant(t *testing.T, v *QuantPanel, cond func() bool) {
	t.Helper()
	waitSignalled(t, v.Updated, 10*time.Second, cond, func() string {
		return fmt.Sprintf("status %q, progress %q, rows %q", v.Status.Text, v.ProgressMsg.Text, v.Rows())
	})
}

// A ladder run redraws the Pareto chart as each candidate's record arrives, assembled under
// the plan's rule; the table follows; the finished ladder shows the rule's choice.
func TestQuantPanelLiveChart(t *testing.T) {
	a := newTestApp(t)
	step := make(chan struct{})
	plan := ladderPlan()
	hi := 0.01
	plan.Predictions = []quant.Prediction{{ID: "P1", Text: "the chosen one is close", Kind: study.KindBand,
		About: quant.Selector{Figure: quant.FigureKLDMean, Candidate: quant.CandidateSelected}, Hi: &hi}}
	svc := &fakeQuant{plan: plan, status: "registered", step: step, recs: []quant.Record{
		quantRecord("Q8_0", 27, 50, 0.0005), quantRecord("Q4_K_M", 16, 70, 0.004), quantRecord("Q4_0", 14, 75, 0.02)}}
	v := build(func() *QuantPanel { return newQuantPanel(a, a.NewWindow("t"), svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(5) })
	waitQuant(t, v, func() bool { return v.Study() != nil && !v.RunButton.Disabled() })
	Locked(func() {
		if !strings.Contains(v.Selected.Text, "nothing measured yet") || len(v.ChartShown().Points) != 0 {
			t.Errorf("before a run: %q, %d points", v.Selected.Text, len(v.ChartShown().Points))
		}
		test.Tap(v.RunButton)
	})
	for i, want := range []int{1, 2, 3} {
		step <- struct{}{}
		waitSignalled(t, nil, 10*time.Second, func() bool { return len(v.ChartShown().Points) == want }, func() string {
			return fmt.Sprintf("chart after record %d: %+v", i+1, v.ChartShown())
		})
	}
	waitQuant(t, v, func() bool { return strings.HasPrefix(v.ProgressMsg.Text, "finished: study 7 complete") })
	waitQuant(t, v, func() bool { return v.Study() != nil && v.Study().Status == "complete" && len(v.Rows()) == 3 })
	Locked(func() {
		c := v.ChartShown()
		if c.Figure != "tg@0" || !c.Points[1].Selected || c.Points[1].Label != "Q4_K_M" || !c.Points[2].Rejected {
			t.Errorf("chart %+v: Q4_K_M selected, Q4_0 rejected (KLD above 0.01)", c)
		}
		rows := strings.Join(v.Rows(), "\n")
		if !strings.Contains(rows, "Q4_K_M: SELECTED ★") || !strings.Contains(rows, "Q4_0: rejected: kld_mean_above_maximum") || !strings.Contains(rows, "Q8_0: runner-up") {
			t.Errorf("rows:\n%s", rows)
		}
		if !strings.HasPrefix(v.Selected.Text, "selected Q4_K_M (runner-up Q8_0)") {
			t.Errorf("selected %q", v.Selected.Text)
		}
		if len(v.verdicts) != 1 || v.verdicts[0].Prediction != "P1" || v.verdicts[0].Outcome != study.Hit {
			t.Errorf("verdicts %+v", v.verdicts)
		}
		lines := strings.Join(v.ConsoleLines(), "\n")
		if !strings.Contains(lines, "kld-base: base logits") || !strings.Contains(lines, "Q4_0 measured (3 of 3 candidates)") {
			t.Errorf("console:\n%s", lines)
		}
	})
}

// Make a capacity plan…: refused for a ladder not finished, written to a new file (the
// dialog's options passed on) with its path and SHA-256 said, refused for a file that exists.
func TestQuantPanelHandOff(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeQuant{plan: ladderPlan(), status: "registered"}
	w := a.NewWindow("t")
	v := build(func() *QuantPanel { return newQuantPanel(a, w, svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(5) })
	// The button is disabled with the reason; the call itself refuses too.
	waitQuant(t, v, func() bool {
		return v.Study() != nil && v.HandOffButton.Disabled() &&
			v.HandOffMsg.Text == "Make a capacity plan is disabled: study 5 is registered: a ladder hands off its choice once it is complete"
	})
	out := filepath.Join(t.TempDir(), "serve.json")
	Locked(func() { v.HandOff(out, quant.HandOff{}, nil) })
	waitQuant(t, v, func() bool {
		return strings.Contains(v.HandOffMsg.Text, "study 5 is registered: a ladder hands off its choice once it is finished")
	})
	if _, err := os.Stat(out); err == nil || len(svc.handed) != 0 {
		t.Fatal("an unfinished ladder handed off")
	}

	svc.status, svc.shown = "complete", []quant.Record{quantRecord("Q8_0", 27, 50, 0.0005), quantRecord("Q4_K_M", 16, 70, 0.004), quantRecord("Q4_0", 14, 72, 0.02)}
	Locked(func() { v.Show(5) })
	waitQuant(t, v, func() bool { return v.Study() != nil && v.Study().Status == "complete" && !v.HandOffButton.Disabled() })
	c := w.Canvas()
	Locked(func() {
		uitest.TapDialogButton(c, "OK") // the refusal's dialog
		test.Tap(v.HandOffButton)
	})
	waitSignalled(t, nil, 10*time.Second, func() bool { return uitest.DialogEntry(c, handOffPlaceholder) != nil }, nil)
	Locked(func() {
		f := uitest.DialogEntry(c, handOffPlaceholder)
		if !strings.HasSuffix(f.Text, "tiny-ladder-capacity.json") {
			t.Errorf("suggested file %q", f.Text)
		}
		f.SetText(out)
		test.Type(uitest.DialogEntry(c, "server slots P, comma list (empty: 1,2,4)"), "1,2")
		test.Type(uitest.DialogEntry(c, "ms (empty: 5000)"), "800")
		if !uitest.TapDialogButton(c, "Write") {
			t.Fatal("no Write button")
		}
	})
	waitQuant(t, v, func() bool { return strings.HasPrefix(v.HandOffMsg.Text, "capacity plan "+out+", plan sha256 ffff") })
	if len(svc.handed) != 1 || !slices.Equal(svc.handed[0].Slots, []int{1, 2}) || svc.handed[0].TTFTMsP95Max != 800 || svc.handed[0].Clients != nil {
		t.Fatalf("handed off with %+v", svc.handed)
	}
	Locked(func() {
		uitest.TapDialogButton(c, "OK")
		v.HandOff(out, quant.HandOff{}, nil)
	})
	waitQuant(t, v, func() bool {
		return strings.Contains(v.HandOffMsg.Text, "exists; give a new file (nothing is overwritten)")
	})
}

// The derived-model cache is part of the Models list: each file marked derived from its parent
// (by name when the list has a file of that SHA-256), selectable, its provenance shown.
func TestModelsListsDerivedModels(t *testing.T) {
	a := newTestApp(t)
	parent := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	derived := filepath.Join(modelsDir(), "tiny-llama-f16.gguf") // any readable GGUF stands for a cache file
	orphan := filepath.Join(modelsDir(), "tiny-moe-f32.gguf")
	psha := strings.Repeat("cd", 32)
	lib := &fakeLibrary{sums: map[string]string{parent: psha}, expected: map[string]string{}}
	svc := &fakeQuant{derived: []DerivedModel{
		{Path: derived, Parent: psha, Type: "Q8_0", Build: "b8000 (abc)", SHA256: strings.Repeat("ef", 32), Bytes: 1 << 20,
			Argv: []string{"llama-quantize", parent, "out.gguf", "Q8_0"}, CreatedAt: "2026-12-01T10:00:00Z"},
		{Path: orphan, Parent: strings.Repeat("9", 64), Type: "Q4_0"}}}
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }, Library: lib, Quant: svc})
	})
	defer Locked(func() { wb.Window.Close() })
	m := wb.Models
	Locked(func() { m.Add([]string{parent}) })
	waitSignalled(t, m.Done, 10*time.Second, func() bool {
		return m.Count.Text == "3 GGUF file(s), 2 derived" && m.status[parent].SHA256 == psha
	}, func() string { return m.Count.Text })
	Locked(func() {
		if got := m.derivedText(derived); got != "derived: Q8_0 of tiny-llama-f32.gguf" {
			t.Errorf("derived column %q", got)
		}
		if got := m.derivedText(orphan); got != "derived: Q4_0 of parent 999999999999…" {
			t.Errorf("orphan's column %q", got)
		}
		if got := modelColumns[0].cell(m, app.ModelEntry{Path: derived}); got != "Q8_0 of tiny-llama-f32.gguf (derived)" {
			t.Errorf("derived file column %q", got)
		}
		if got := m.derivedText(parent); got != "—" {
			t.Errorf("the parent's column %q", got)
		}
		m.Select(rowOf(m, "tiny-llama-f16.gguf"))
		if !m.Provenance.Visible() || !strings.Contains(m.Provenance.Text, "quantized by b8000 (abc)") ||
			!strings.Contains(m.Provenance.Text, "argv: llama-quantize "+parent+" out.gguf Q8_0") || m.HashButton.Disabled() {
			t.Errorf("provenance %q (shown %v), hash button disabled %v", m.Provenance.Text, m.Provenance.Visible(), m.HashButton.Disabled())
		}
		m.Select(rowOf(m, "tiny-llama-f32.gguf"))
		if m.Provenance.Visible() {
			t.Error("provenance shown for a file that is not derived")
		}
		// the New study forms offer the derived models like any other
		if !slices.Contains(wb.Wizard.Models.Options, derived) {
			t.Errorf("throughput form's models %v", wb.Wizard.Models.Options)
		}
		// the ladder kind is offered beside the others, with its own form
		wb.Kind.SetSelected(kinds.Quant)
		if !wb.QuantWiz.Object.Visible() || wb.Wizard.Object.Visible() || wb.CapWiz.Object.Visible() {
			t.Error("choosing the quant kind does not show the ladder form alone")
		}
	})
}

// ladderStudies lists one ladder.
type ladderStudies struct{ fakeStudies }

func (f *ladderStudies) List(context.Context) ([]StudySummary, error) {
	return []StudySummary{{ID: 5, Name: "tiny ladder", Kind: kinds.Quant, Status: "registered"}}, nil
}

// A ladder in the studies list is shown in the quant panel.
func TestStudiesShowALadder(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeQuant{plan: ladderPlan(), status: "registered"}
	studies := &ladderStudies{}
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }, Studies: studies, Quant: svc})
	})
	defer Locked(func() { wb.Window.Close() })
	// the window's own start lists the studies first (its demo, 7, is not among them)
	waitSignalled(t, wb.Studies.Updated, 10*time.Second, func() bool { return len(wb.Studies.studies) == 1 }, nil)
	Locked(func() { wb.Studies.Reload(5) })
	waitQuant(t, wb.Studies.Quant, func() bool { return wb.Studies.Quant.Study() != nil })
	Locked(func() {
		if !wb.Studies.quantShown || !wb.Studies.Quant.Object.Visible() || wb.Studies.detail.Visible() {
			t.Error("the ladder is not shown in its panel")
		}
		if !strings.HasPrefix(wb.Studies.Quant.Title.Text, "tiny ladder (study 5, quant)") {
			t.Errorf("title %q", wb.Studies.Quant.Title.Text)
		}
	})
}

// The ladder's Add a prediction dialog also offers a comparison: a figure of one candidate
// against the same figure of another (for speed, at a TEST@DEPTH of each), with an operator and
// a tolerance in percent; its fields are shown only for a comparison, and the kind's rules
// check it with the plan (a right-hand candidate the plan does not list is refused).
func TestQuantWizardComparisonPrediction(t *testing.T) {
	a := newTestApp(t)
	ref := filepath.Join(modelsDir(), "tiny-llama-f16.gguf")
	models := []app.ModelEntry{app.InspectModel(ref)}
	svc := &fakeQuant{types: fakeTypes, corpus: writeCorpus(t)}
	v := build(func() *QuantWizard {
		return newQuantWizard(a.NewWindow("t"), svc, nil, func() []app.ModelEntry { return models }, nil)
	})
	waitSignalled(t, v.TypesLoaded, 10*time.Second, func() bool { return len(v.Quants.Options) == len(fakeTypes) }, nil)
	Locked(func() {
		test.Type(v.Name, "tiny ladder")
		v.Reference.SetSelected(ref)
		v.Quants.SetSelected([]string{"Q8_0", "Q4_0"})
		v.Depths.SetText("0,256")
		v.Chunks.SetText("2")
	})
	waitQuantValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" })
	var pred quant.Prediction
	Locked(func() {
		f := v.newPredictionForm()
		if f.kinds.shown("comparison") || f.thanForm.Visible() {
			t.Error("the comparison's fields are shown for a band")
		}
		if !slices.Equal(f.kind.Options, []string{"band", "comparison", "question"}) {
			t.Errorf("kinds offered %v", f.kind.Options)
		}
		f.kind.SetSelected("comparison")
		f.text.SetText("Q4_0 is as fast at 256 as Q8_0 at 0")
		f.figure.SetSelected(string(quant.FigureSpeed))
		f.cand.SetSelected("Q4_0")
		f.at.SetSelected("tg@256")
		if !f.kinds.shown("comparison") || !f.thanForm.Visible() || f.kinds.shown("band") {
			t.Errorf("comparison fields shown %v, right-hand TEST@DEPTH shown %v", f.kinds.shown("comparison"), f.thanForm.Visible())
		}
		f.thanCand.SetSelected("Q8_0")
		f.thanAt.SetSelected("tg@0")
		f.op.SetSelected("within")
		f.tol.SetText("5")
		var err error
		if pred, err = f.build(); err != nil {
			t.Fatal(err)
		}
		f.tol.SetText("five")
		if _, err := f.build(); err == nil || !strings.Contains(err.Error(), `tolerance: "five" is not a number`) {
			t.Errorf("a tolerance that is not a number: %v", err)
		}
		f.figure.SetSelected(string(quant.FigureKLDMean))
		if f.thanForm.Visible() {
			t.Error("the right-hand TEST@DEPTH is shown for a KLD figure")
		}
	})
	want := quant.Prediction{Kind: study.KindComparison, Text: "Q4_0 is as fast at 256 as Q8_0 at 0", Op: "within", Tolerance: 0.05,
		About: quant.Selector{Figure: quant.FigureSpeed, Candidate: "Q4_0", At: "tg@256"}, Than: &quant.Selector{Figure: quant.FigureSpeed, Candidate: "Q8_0", At: "tg@0"}}
	if gj, wj := fmt.Sprintf("%+v %+v", pred, *pred.Than), fmt.Sprintf("%+v %+v", want, *want.Than); gj != wj {
		t.Fatalf("comparison\n%s\nwant\n%s", gj, wj)
	}
	bad, err := quantComparison(quant.Prediction{Kind: study.KindComparison, Text: "x", About: quant.Selector{Figure: quant.FigureKLDMean, Candidate: "Q4_0"}},
		"<=", "Q2_K", "", "")
	if err != nil {
		t.Fatal(err)
	}
	Locked(func() { v.AddPrediction(bad) })
	waitQuantValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `predictions[0].than.candidate: "Q2_K"`) && v.RegisterBtn.Disabled()
	})
	Locked(func() {
		v.Predictions.Select(0)
		test.Tap(v.RemovePred)
		v.AddPrediction(pred)
	})
	waitQuantValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" && len(v.preds) == 1 })
	Locked(func() {
		if got := quantPredictionLine(v.preds[0]); !strings.Contains(got, "within 5% of") {
			t.Errorf("listed as %q", got)
		}
	})
}

// An incomplete ladder selects nothing, and the window says so: the selection line and the
// pending candidate's row name the missing leg, and Make a capacity plan… is disabled with the
// reason (a call refuses too; nothing is handed off).
func TestQuantPanelIncompleteLadderHandsNothingOff(t *testing.T) {
	a := newTestApp(t)
	crashed := quantRecord("Q4_0", 14, 72, 0.004)
	crashed.Bench = crashed.Bench[1:] // tg@0 missing
	crashed.Incomplete = []string{"bench/Q4_0/d0: llama-bench crashed: killed by SIGSEGV"}
	crashed.MissingLegs = []string{"bench/Q4_0/d0"}
	svc := &fakeQuant{plan: ladderPlan(), status: "incomplete",
		shown: []quant.Record{quantRecord("Q8_0", 27, 50, 0.0005), quantRecord("Q4_K_M", 16, 70, 0.004), crashed}}
	w := a.NewWindow("t")
	v := build(func() *QuantPanel { return newQuantPanel(a, w, svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(5) })
	const reason = "Make a capacity plan is disabled: the ladder is incomplete, no selection (missing legs: bench/Q4_0/d0); Run measures what is missing"
	waitSignalled(t, nil, 10*time.Second, func() bool {
		return v.Study() != nil && len(v.Rows()) == 3 && v.HandOffMsg.Text == reason
	}, func() string { return fmt.Sprintf("hand-off line %q, rows %q", v.HandOffMsg.Text, v.Rows()) })
	Locked(func() {
		if !v.HandOffButton.Disabled() {
			t.Error("Make a capacity plan… is enabled on an incomplete ladder")
		}
		if !strings.HasPrefix(v.Selected.Text, "incomplete, no selection: 1 candidate(s) pending (missing legs: bench/Q4_0/d0)") {
			t.Errorf("selected %q", v.Selected.Text)
		}
		rows := strings.Join(v.Rows(), "\n")
		if !strings.Contains(rows, "Q4_0: pending: missing bench/Q4_0/d0") || strings.Contains(rows, "SELECTED") || strings.Contains(rows, "runner-up") || strings.Contains(rows, "rejected") {
			t.Errorf("rows:\n%s", rows)
		}
	})
	out := filepath.Join(t.TempDir(), "serve.json")
	Locked(func() { v.HandOff(out, quant.HandOff{}, nil) })
	waitQuant(t, v, func() bool {
		return strings.Contains(v.HandOffMsg.Text, "no capacity plan: the ladder is incomplete, no selection")
	})
	if _, err := os.Stat(out); err == nil || len(svc.handed) != 0 {
		t.Fatal("an incomplete ladder handed off")
	}
}
