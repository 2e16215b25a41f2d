package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
)

// Capacity study kinds the New study section offers besides throughput.
const (
	KindCapacity    = kinds.Capacity
	KindConcurrency = kinds.Concurrency
)

// CapacityWizard builds a capacity (slots × clients grid) or concurrency (the diagonal
// clients = slots, with arms) study by point and click: candidates from the Models section and
// server configurations, the P and C axes, request counts, the SLO, RSS and quality limits and
// the predictions, validated by app/capacity as you type, then frozen by Register.
type CapacityWizard struct {
	Object fyne.CanvasObject

	Name        *widget.Entry
	Models      *widget.CheckGroup // the picked models' paths, in the order picked
	ModelTable  *ModelPicker       // the models as a table with their facts (modelpicker.go)
	Configs     *ConfigRows        // the server configurations, a row of fields each (capconfigs.go)
	Serving     *servingForm       // open-loop serving: arrivals, rates or a max-rate search, SLO, workload (capwizard_serving.go)
	Flags       *widget.Entry      // flags every configuration gets
	ArmAxis     *widget.Entry      // concurrency: what the arms vary
	Slots       *widget.Entry
	Clients     *widget.Entry
	Passes      *widget.Select
	Warmups     *widget.Entry
	Measured    *widget.Entry
	NPredict    *widget.Entry
	CtxPerSlot  *widget.Entry
	TTFT        *widget.Entry
	E2E         *widget.Entry
	Completion  *widget.Entry
	RSS         *widget.Entry
	RateSpread  *widget.Entry // forward/reverse generation-rate spread max
	E2ESpread   *widget.Entry // forward/reverse observed-p95 E2E spread max
	Tolerance   *widget.Entry // the selection rule's objective tolerance
	Knee        *widget.Entry // the knee threshold (gain per doubling)
	PromptPlan  *widget.Entry
	Quality     *widget.Entry // the quality guard's case list (empty: no quality gate)
	QFloor      *widget.Entry
	Predictions *widget.List
	AddPred     *widget.Button
	RemovePred  *widget.Button
	Problems    *widget.Label
	Estimate    *widget.Label
	RegisterBtn *widget.Button
	SaveBtn     *widget.Button
	OpenBtn     *widget.Button
	CandNote    *widget.Label // how the candidates are made: from the form, or kept from an opened plan
	heading     *widget.Label

	// OnKind is told the kind of an opened plan (the workbench's kind chooser follows it).
	OnKind func(kind string)
	// openOther opens a plan file of the other kind in its wizard (set by the workbench).
	openOther func(path string) bool

	win    fyne.Window
	svc    CapacityService
	lib    app.ModelLibrary
	models func() []app.ModelEntry
	onDone func(id int64)
	kind   string
	preds  []capacity.Prediction

	// base is the plan last opened (paths made absolute): what the form has no control for is
	// kept from it, so a plan opened and saved again is the same plan. keepCands: its
	// candidates are not models × configurations, so they are kept as they are until the user
	// edits Models, Server configurations or Flags. loading: LoadPlan is filling the form.
	base      *capacity.Plan
	keepCands bool
	loading   bool

	formCheck
}

const passesBoth, passesForward = "forward, then reverse (counterbalanced)", "forward only"

func newCapacityWizard(win fyne.Window, svc CapacityService, lib app.ModelLibrary, models func() []app.ModelEntry, onDone func(int64)) *CapacityWizard {
	v := &CapacityWizard{win: win, svc: svc, lib: lib, models: models, onDone: onDone, kind: KindCapacity, formCheck: newFormCheck()}
	entry := func(text, hint string) *widget.Entry { return checkedEntry(text, hint, v.Validate) }
	candsEdited := func() {
		if !v.loading && v.keepCands {
			v.keepCands = false
			v.CandNote.SetText("candidates: models × server configurations (the opened plan's were replaced by your edit)")
		}
		v.Validate()
	}
	v.CandNote = widget.NewLabel("")
	v.CandNote.Wrapping = fyne.TextWrapWord
	v.Name = entry("", "e.g. slots x clients, Q8 vs Q4")
	v.Models = widget.NewCheckGroup(nil, func([]string) { candsEdited() })
	v.ModelTable = newModelPicker(v.Models, models, lib)
	v.Configs = newConfigRows(candsEdited)
	v.Serving = newServingForm(func() { v.Validate() })
	v.Flags = entry("", "llama-server flags of every configuration, e.g. -t 8 -ngl 99")
	v.Flags.OnChanged = func(string) { candsEdited() }
	v.ArmAxis = entry("server_flags", "what the arms vary, e.g. kv_cache_type")
	v.Slots = entry("1,2,4", "server slots P (--parallel), increasing comma list")
	v.Clients = entry("1,2,4", "client concurrency C, increasing comma list")
	v.Passes = widget.NewSelect([]string{passesBoth, passesForward}, func(string) { v.Validate() })
	v.Passes.SetSelected(passesBoth)
	v.Warmups = entry("4", "warmup requests per client level (discarded)")
	v.Measured = entry("8", "measured requests per client level")
	v.NPredict = entry("64", "tokens per request (ignore_eos)")
	v.CtxPerSlot = entry("2048", "context per slot (--ctx-size = this x P)")
	v.TTFT = entry("2000", "ms")
	v.E2E = entry("10000", "ms")
	v.Completion = entry("1", "fraction, 1 = every request")
	v.RSS = entry("8192", "MiB")
	v.RateSpread = entry(strconv.FormatFloat(capacity.DefaultGenRateSpreadMax, 'g', -1, 64), "fraction, e.g. 0.15 = passes within 15%")
	v.E2ESpread = entry(strconv.FormatFloat(capacity.DefaultE2EP95SpreadMax, 'g', -1, 64), "fraction, e.g. 0.20 = passes within 20%")
	v.Tolerance = entry(strconv.FormatFloat(capacity.DefaultObjectiveTolerance, 'g', -1, 64), "fraction: cells this close to the best rate are ranked by latency")
	v.Knee = entry(strconv.FormatFloat(capacity.DefaultKneeThreshold, 'g', -1, 64), "gain per doubling of slots below which the knee is declared")
	v.PromptPlan = entry("", "prompt plan file (empty: the built-in plan)")
	v.Quality = entry("", "quality cases file (empty: no quality gate)")
	v.QFloor = entry("", "quality floor, fraction of cases, e.g. 0.9")
	v.Problems = widget.NewLabel("")
	v.Problems.Wrapping = fyne.TextWrapWord
	v.Estimate = widget.NewLabel("")
	v.Estimate.Wrapping = fyne.TextWrapWord
	v.Predictions, v.RemovePred = predictionList(&v.preds, func(p capacity.Prediction) string {
		return fmt.Sprintf("%s  %s  [%s] %s", p.ID, p.Kind, p.About.String(), p.Text)
	}, v.Validate)
	v.AddPred = widget.NewButton("Add prediction…", v.predictionDialog)
	v.RegisterBtn = widget.NewButton("Register…", v.confirmRegister)
	v.RegisterBtn.Disable()
	v.SaveBtn = widget.NewButton("Save plan…", v.saveDialog)
	v.OpenBtn = widget.NewButton("Open plan…", v.openDialog)
	v.heading = heading("New capacity study")
	form := widget.NewForm(
		hinted("Name", v.Name, "the study's name in the notebook and its receipts (no llama.cpp flag)"),
		hinted("Models", container.NewVBox(v.ModelTable.Object, widget.NewButton("Refresh model list", v.RefreshModels), v.CandNote), "the GGUF files served, one llama-server -m per candidate; click a row to pick or unpick it"),
		hinted("Server configurations", v.Configs.Object, "llama-server configurations, a row each: candidates are models × rows; none: one, default"),
		hinted("Flags of every configuration", v.Flags, "llama-server flags written before each row's flags, checked against its --help"),
		hinted("Arm axis (concurrency)", v.ArmAxis, "concurrency plans: what the arms vary, recorded in the plan (no llama.cpp flag)"),
		hinted("Slots P", v.Slots, "server slots, one llama-server lifetime per value (llama-server --parallel)"),
		hinted("Clients C", v.Clients, "concurrent client streams of the load generator (no llama.cpp flag)"),
		hinted("Passes", v.Passes, "client levels in increasing order, then again in decreasing order to expose drift (no llama.cpp flag)"),
		hinted("Warmups", v.Warmups, "requests per client level discarded before measuring (no llama.cpp flag)"),
		hinted("Measured", v.Measured, "requests per client level measured (no llama.cpp flag)"),
		hinted("Tokens per request", v.NPredict, "tokens each request generates (the request's n_predict, with ignore_eos; no llama.cpp flag)"),
		hinted("Context per slot", v.CtxPerSlot, "context tokens per slot (llama-server --ctx-size is this × P)"),
		hinted("SLO: TTFT p95 max (ms)", v.TTFT, "a cell fails when its 95th-percentile time to first token is above this (no llama.cpp flag)"),
		hinted("SLO: E2E p95 max (ms)", v.E2E, "a cell fails when its 95th-percentile request time is above this (no llama.cpp flag)"),
		hinted("Completion rate min", v.Completion, "the share of requests that must complete (no llama.cpp flag)"),
		hinted("Peak RSS max (MiB)", v.RSS, "a lifetime fails when llama-server's resident memory peaks above this (no llama.cpp flag)"),
		hinted("Pass spread max: generation rate", v.RateSpread, "largest difference of a cell's generation rate between the passes (no llama.cpp flag)"),
		hinted("Pass spread max: E2E p95", v.E2ESpread, "largest difference of a cell's p95 request time between the passes (no llama.cpp flag)"),
		hinted("Selection tolerance", v.Tolerance, "cells this close to the best rate are ranked by latency (no llama.cpp flag)"),
		hinted("Knee threshold", v.Knee, "the gain per doubling of slots below which the knee is declared (no llama.cpp flag)"),
		hinted("Prompt plan", v.PromptPlan, "the prompts the requests send; empty: the built-in plan (no llama.cpp flag)"),
		hinted("Quality cases", v.Quality, "the quality guard's cases, asked of each candidate and P; empty: no quality gate (no llama.cpp flag)"),
		hinted("Quality floor", v.QFloor, "the share of quality cases a candidate must pass (no llama.cpp flag)"),
	)
	v.Object = studyFormPage(container.NewHBox(v.heading, v.RegisterBtn, v.SaveBtn, v.OpenBtn), []fyne.CanvasObject{form, heading("Open-loop serving"), v.Serving.Object},
		v.AddPred, v.RemovePred, v.Predictions, 160, v.Estimate, v.Problems)
	v.RefreshModels()
	return v
}

// SetKind switches between a capacity grid and a concurrency diagonal.
func (v *CapacityWizard) SetKind(kind string) {
	v.kind = kind
	if kind == KindConcurrency {
		v.heading.SetText("New concurrency study (clients = slots, arms)")
		v.Clients.Disable()
	} else {
		v.heading.SetText("New capacity study (slots × clients)")
		v.Clients.Enable()
	}
	v.Validate()
}

// RefreshModels lists the readable GGUF files of the Models section as choices.
func (v *CapacityWizard) RefreshModels() {
	offerModels(v.Models, v.models)
	v.ModelTable.Refresh()
	v.Configs.listDevices(v.svc)
	v.Validate()
}

// Plan builds the plan the form describes: candidates are models × server configurations.
// Errors are the fields that do not parse; the plan's own rules are app/capacity's Validate.
func (v *CapacityWizard) Plan() (*capacity.Plan, []string) {
	var errs []string
	add := errAdder(&errs)
	p := &capacity.Plan{Schema: capacity.SchemaCapacity, Name: strings.TrimSpace(v.Name.Text)}
	if v.kind == KindConcurrency {
		p.Schema, p.ArmAxis = capacity.SchemaConcurrency, strings.TrimSpace(v.ArmAxis.Text)
	}
	cfgs, cerrs := v.Configs.configs()
	errs = append(errs, cerrs...)
	common := strings.Fields(v.Flags.Text)
	used := map[string]bool{}
	for _, path := range v.Models.Selected {
		mid := modelID(path, used)
		for _, c := range cfgs {
			id, label, arm := mid, mid, c.name
			if len(cfgs) > 1 {
				id = slugRE.ReplaceAllString(mid+"-"+c.name, "-")
				label = mid + " " + c.name
			}
			if len(v.Models.Selected) > 1 {
				arm = mid + "/" + c.name
			}
			cand := capacity.Candidate{ID: id, Label: label, Model: capacity.FileRef{Path: path},
				ServerFlags: append(append([]string{}, common...), c.flags...)}
			if v.kind == KindConcurrency {
				cand.Arm = arm
			}
			p.Candidates = append(p.Candidates, cand)
		}
	}
	var err error
	p.Slots, err = parseInts("slots", v.Slots.Text)
	add(err)
	if v.kind != KindConcurrency {
		p.Clients, err = parseInts("clients", v.Clients.Text)
		add(err)
	}
	p.Passes = []string{capacity.PassForward, capacity.PassReverse}
	if v.Passes.Selected == passesForward {
		p.Passes = []string{capacity.PassForward}
	}
	one := func(field, s string) int {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %q is not a whole number", field, s))
		}
		return n
	}
	w := one("warmups", v.Warmups.Text)
	p.Warmups = &w
	p.Measured = one("measured", v.Measured.Text)
	p.NPredict = one("tokens per request", v.NPredict.Text)
	p.CtxPerSlot = one("context per slot", v.CtxPerSlot.Text)
	num := func(field, s string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %q is not a number", field, s))
		}
		return f
	}
	p.Limits.TTFTMsP95Max = num("TTFT p95 max", v.TTFT.Text)
	p.Limits.E2EMsP95Max = num("E2E p95 max", v.E2E.Text)
	p.Limits.CompletionRateMin = num("completion rate min", v.Completion.Text)
	p.Limits.PeakRSSMiBMax = num("peak RSS max", v.RSS.Text)
	p.Limits.GenRateSpreadMax = num("pass spread max (generation rate)", v.RateSpread.Text)
	p.Limits.E2EP95SpreadMax = num("pass spread max (E2E p95)", v.E2ESpread.Text)
	p.Limits.ObjectiveTolerance = num("selection tolerance", v.Tolerance.Text)
	p.KneeThreshold = num("knee threshold", v.Knee.Text)
	if pp := strings.TrimSpace(v.PromptPlan.Text); pp == "" {
		p.PromptPlan = capacity.DefaultPromptPlanRef()
	} else {
		p.PromptPlan = capacity.FileRef{Path: pp}
	}
	if q := strings.TrimSpace(v.Quality.Text); q != "" {
		p.QualityCases = &capacity.FileRef{Path: q}
	}
	p.Limits.QualityFloor, err = optFloat("quality floor", v.QFloor.Text)
	add(err)
	p.Predictions = append([]capacity.Prediction(nil), v.preds...)
	v.applyBase(p)
	var serrs []string
	p.Serving, serrs = v.Serving.serving() // the section is the plan's serving block (off: none)
	return p, append(errs, serrs...)
}

// Validate re-checks the form in the background (files are hashed at Register) and shows every
// problem, the newest check winning.
func (v *CapacityWizard) Validate() {
	if v.Problems == nil || v.RegisterBtn == nil || v.Estimate == nil {
		return // still being built
	}
	p, errs := v.Plan()
	v.check(func(int) func() {
		lines := append([]string(nil), errs...)
		ok := len(errs) == 0
		estimate := ""
		if ok {
			p.Defaults()
			probLines, valid := problemLines(append(capacity.Validate(p, capacity.ValidateOptions{}), v.flagProblems(p)...))
			lines, ok = append(lines, probLines...), valid
			if ok {
				lives := capacity.Schedule(p, "")
				cells := 0
				for _, lt := range lives {
					cells += len(lt.Clients)
				}
				per := p.WarmupCount() + p.Measured
				estimate = fmt.Sprintf("%d server lifetimes, %d cells, %d requests of %d tokens (%d measured per cell)",
					len(lives), cells, cells*per, p.NPredict, p.Measured)
				if p.Limits.QualityGated() {
					estimate += fmt.Sprintf(", plus a quality guard per candidate and P (%d)", len(p.Candidates)*len(p.Slots))
				}
				if est, isEst := v.svc.(CapacityEstimator); isEst {
					if e, err := est.EstimateCapacity(context.Background(), p); err == nil {
						estimate += "; estimated duration " + e.String()
					} else {
						estimate += "; no estimated duration: " + err.Error()
					}
				}
			}
		}
		return func() {
			showProblems(v.Problems, lines)
			v.Estimate.SetText(estimate)
			setEnabled(v.RegisterBtn, ok && v.svc != nil)
		}
	})
}

// flagProblems are the server flags of the plan's candidates (every configuration's fields,
// other flags and the flags of every configuration) that the build's llama-server --help does
// not list, when the service can list them (ServerFlagLister); none otherwise (Register checks
// them). It runs off the UI goroutine.
func (v *CapacityWizard) flagProblems(p *capacity.Plan) []study.Problem {
	lister, ok := v.svc.(ServerFlagLister)
	if !ok {
		return nil
	}
	known, bin, err := lister.ServerFlags(context.Background())
	if err != nil {
		return nil // no build to ask: Register says so
	}
	return capacity.CheckServerFlags(p, known, bin)
}

// AddPrediction appends a prediction (its ID is assigned: P1, P2, …).
func (v *CapacityWizard) AddPrediction(p capacity.Prediction) {
	addPrediction(&v.preds, p, func(p *capacity.Prediction) *string { return &p.ID }, v.Predictions, v.Validate)
}

// prepareFiles hashes the plan's files and fills their SHA-256 in: the models (cached in the
// notebook), a chosen prompt plan and the quality cases; then the defaults. It returns the plan
// exactly as it will be frozen and its SHA-256. It runs off the UI goroutine.
func (v *CapacityWizard) prepareFiles(ctx context.Context, p *capacity.Plan) (*capacity.Plan, string, error) {
	paths := make([]string, len(p.Candidates))
	for i, c := range p.Candidates {
		paths[i] = c.Model.Path
	}
	sums, err := modelHashes(ctx, v.lib, paths)
	if err != nil {
		return nil, "", err
	}
	for i := range p.Candidates {
		if sum, ok := sums[p.Candidates[i].Model.Path]; ok {
			p.Candidates[i].Model.SHA256 = sum
		}
	}
	file := func(what string, f *capacity.FileRef) error {
		if f.SHA256 != "" {
			return nil // from an opened plan: Register checks the file still matches it
		}
		if !filepath.IsAbs(f.Path) {
			return fmt.Errorf("%s %q: give the file's full path (the plan is written to the data folder's plans/)", what, f.Path)
		}
		sum, err := app.HashFile(ctx, f.Path, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		f.SHA256 = sum
		return nil
	}
	if p.PromptPlan != capacity.DefaultPromptPlanRef() {
		if err := file("prompt plan", &p.PromptPlan); err != nil {
			return nil, "", err
		}
	}
	if p.QualityCases != nil {
		if err := file("quality cases", p.QualityCases); err != nil {
			return nil, "", err
		}
	}
	for _, f := range servingFiles(p.Serving) {
		if err := file("serving workload file", f); err != nil {
			return nil, "", err
		}
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	return p, sum, err
}

// Register prepares the plan (its files hashed) and registers it without asking: the
// Register… button asks first, showing the plan and its SHA-256. It runs in the background;
// done reports on the UI goroutine.
func (v *CapacityWizard) Register(done func(capacity.Registration, error)) {
	p, errs := v.Plan()
	registerInBackground(p, errs, v.prepareFiles, v.registerPrepared, done)
}

func (v *CapacityWizard) registerPrepared(ctx context.Context, p *capacity.Plan, sum string) (capacity.Registration, error) {
	if v.svc == nil {
		return capacity.Registration{}, errNoRegistrar
	}
	reg, err := v.svc.RegisterCapacity(ctx, p)
	if err == nil {
		err = checkRegistered(reg.PlanSHA256, sum, reg.StudyID)
	}
	return reg, err
}

func (v *CapacityWizard) confirmRegister() {
	p, errs := v.Plan()
	if len(errs) > 0 {
		showErrorLines(v.win, errs)
		return
	}
	msg := fmt.Sprintf("This freezes exactly this plan and its %d prediction(s) in the notebook; nothing registered can be edited afterwards.", len(p.Predictions))
	freeze(v.win, v.RegisterBtn, "hashing the models (cached in the notebook), the prompt plan and the quality cases…", msg,
		func(ctx context.Context) (any, string, error) { return v.prepareFiles(ctx, p) },
		func(ctx context.Context, plan any, sum string) (registered, error) {
			reg, err := v.registerPrepared(ctx, plan.(*capacity.Plan), sum)
			return registered{reg.StudyID, reg.Existing, fmt.Sprintf("%s: study %d (%s)\nplan sha256 %s", reg.Name, reg.StudyID, reg.Kind, reg.PlanSHA256)}, err
		}, v.onDone)
}

var capFigures = []string{
	string(capacity.FigureCellRate), string(capacity.FigurePerStreamRate), string(capacity.FigureTTFTP95), string(capacity.FigureE2EP95),
	string(capacity.FigureSelectedRate), string(capacity.FigureSelectedSlots), string(capacity.FigureSelectedClients),
	string(capacity.FigureSelectedGain), string(capacity.FigureSpeedup), string(capacity.FigureGainPerDoubling),
	string(capacity.FigureKnee), string(capacity.FigureTTFTGrowth),
}

// predictionDialog adds a band or question prediction about one figure of one candidate.
func (v *CapacityWizard) predictionDialog() {
	f := v.newPredictionForm()
	addPredictionDialog(v.win, f.content, f.build, v.AddPrediction)
}

// capPredictionForm is the capacity Add a prediction dialog's content: the claim and its
// selector (slots and clients only for the per-cell figures), and the band's bounds only for
// a band.
type capPredictionForm struct {
	content              fyne.CanvasObject
	kind, figure, cand   *widget.Select
	text, slots, clients *widget.Entry
	lo, hi               *widget.Entry
	kinds                *switchedForm
	cellForm             *widget.Form
}

// capCellFigures are the figures about one cell (slots P, clients C).
var capCellFigures = []string{string(capacity.FigureCellRate), string(capacity.FigurePerStreamRate), string(capacity.FigureTTFTP95), string(capacity.FigureE2EP95)}

func (v *CapacityWizard) newPredictionForm() *capPredictionForm {
	p, _ := v.Plan()
	f := &capPredictionForm{}
	f.text, f.cand = claimFields(idsOf(p.Candidates, func(c capacity.Candidate) string { return c.ID }))
	f.slots, f.clients = widget.NewEntry(), widget.NewEntry()
	f.slots.SetPlaceHolder("P (cell figures)")
	f.clients.SetPlaceHolder("C (cell figures of capacity plans)")
	f.kind, f.lo, f.hi, f.kinds = bandOrQuestion()
	f.cellForm = widget.NewForm(widget.NewFormItem("slots", f.slots), widget.NewFormItem("clients", f.clients))
	f.figure = widget.NewSelect(capFigures, func(s string) { setVisible(f.cellForm, slices.Contains(capCellFigures, s)) })
	f.figure.SetSelected(string(capacity.FigureSelectedGain))
	common := widget.NewForm(widget.NewFormItem("Kind", f.kind), widget.NewFormItem("Claim", f.text),
		widget.NewFormItem("About: figure", f.figure), widget.NewFormItem("candidate", f.cand))
	f.content = container.NewVBox(common, f.cellForm, f.kinds.box)
	return f
}

func (f *capPredictionForm) build() (capacity.Prediction, error) {
	return buildCapacityPrediction(f.kind.Selected, f.text.Text, f.figure.Selected, f.cand.Selected, f.slots.Text, f.clients.Text, f.lo.Text, f.hi.Text)
}

// buildCapacityPrediction turns the dialog's fields into a prediction (its rules are checked by
// app/capacity's Validate with the rest of the plan).
func buildCapacityPrediction(kind, text, figure, cand, slots, clients, lo, hi string) (capacity.Prediction, error) {
	p := capacity.Prediction{Kind: study.PredictionKind(kind), Text: strings.TrimSpace(text),
		About: capacity.Selector{Figure: capacity.Figure(figure), Candidate: cand}}
	var err error
	if p.About.Slots, err = optInt("slots", slots); err != nil {
		return p, err
	}
	if p.About.Clients, err = optInt("clients", clients); err != nil {
		return p, err
	}
	if p.Lo, err = optFloat("lower bound", lo); err != nil {
		return p, err
	}
	if p.Hi, err = optFloat("upper bound", hi); err != nil {
		return p, err
	}
	return p, nil
}
