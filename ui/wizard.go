package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// Registrar freezes a plan in the notebook (cmd wires study.Register with the notebook's hash
// cache; the plan is also written as a file beside the notebook).
type Registrar interface {
	Register(ctx context.Context, p *study.Plan) (study.Registration, error)
}

// Estimator estimates a plan's duration from the notebook's history of its models; a
// Registrar that implements it gives the New study form its estimated duration.
type Estimator interface {
	EstimateStudy(ctx context.Context, p *study.Plan) (study.Estimate, error)
}

// WizardView builds a throughput study by point and click: models, axes, limits and
// predictions, validated by app/study as you type, then frozen by Register after showing the
// plan SHA-256 that will be registered.
type WizardView struct {
	Object fyne.CanvasObject

	Name        *widget.Entry
	Models      *widget.CheckGroup
	Depths      *widget.Entry
	NPrompt     *widget.Entry
	NGen        *widget.Entry
	Reps        *widget.Entry
	Threads     *widget.Entry
	Ubatch      *widget.CheckGroup
	FlashAttn   *widget.CheckGroup
	KV          *widget.CheckGroup
	Split       *widget.Select
	CVTG        *widget.Entry
	CVPPDepth   *widget.Entry
	CVPPD0      *widget.Entry
	Bandwidth   *widget.Entry
	Predictions *widget.List
	Problems    *widget.Label
	Estimate    *widget.Label
	RegisterBtn *widget.Button
	SaveBtn     *widget.Button
	OpenBtn     *widget.Button
	AddPred     *widget.Button
	RemovePred  *widget.Button

	win fyne.Window
	reg Registrar
	// openOther opens a plan file of the other kind in its wizard (set by the workbench).
	openOther func(path string) bool
	lib       app.ModelLibrary
	models    func() []app.ModelEntry // the Models section's rows
	onDone    func(id int64)
	preds     []study.Prediction
	ids       map[string]string // model path -> ID, kept from an opened plan (its predictions name them)
	base      *study.Plan       // the opened plan: what the form has no control for is kept from it
	baseModel map[string]study.Model
	validated chan struct{}

	mu  sync.Mutex
	gen int // validation generation: only the newest result is shown
}

var kvChoices = map[string]study.KVType{"f16/f16": {K: "f16", V: "f16"}, "q8_0/q8_0": {K: "q8_0", V: "q8_0"}, "q4_0/q4_0": {K: "q4_0", V: "q4_0"}}

func newWizardView(win fyne.Window, reg Registrar, lib app.ModelLibrary, models func() []app.ModelEntry, onDone func(int64)) *WizardView {
	v := &WizardView{win: win, reg: reg, lib: lib, models: models, onDone: onDone, validated: make(chan struct{}, 16)}
	entry := func(text, hint string) *widget.Entry {
		e := widget.NewEntry()
		e.SetText(text)
		e.SetPlaceHolder(hint)
		e.OnChanged = func(string) { v.Validate() }
		return e
	}
	v.Name = entry("", "e.g. tg depth curve, Qwen3 vs Llama")
	v.Models = widget.NewCheckGroup(nil, func([]string) { v.Validate() })
	v.Depths = entry("0,2048,4096,8192", "comma list of KV depths, e.g. 0,2048,4096")
	v.NPrompt = entry("512", "prompt tokens (-p), comma list")
	v.NGen = entry("128", "generated tokens (-n), comma list")
	v.Reps = entry("5", "repetitions (-r)")
	v.Threads = entry("", "threads (-t), comma list; empty: llama-bench's default")
	v.Ubatch = widget.NewCheckGroup([]string{"128", "256", "512", "1024", "2048"}, func([]string) { v.Validate() })
	v.Ubatch.SetSelected([]string{"512"})
	v.Ubatch.Horizontal = true
	v.FlashAttn = widget.NewCheckGroup([]string{"auto", "on", "off"}, func([]string) { v.Validate() })
	v.FlashAttn.SetSelected([]string{"auto"})
	v.FlashAttn.Horizontal = true
	v.KV = widget.NewCheckGroup([]string{"f16/f16", "q8_0/q8_0", "q4_0/q4_0"}, func([]string) { v.Validate() })
	v.KV.SetSelected([]string{"f16/f16"})
	v.KV.Horizontal = true
	v.Split = widget.NewSelect([]string{string(study.SplitPerDepth), string(study.SplitCombined), string(study.SplitCombinedModel)}, func(string) { v.Validate() })
	v.Split.SetSelected(string(study.SplitPerDepth))
	v.CVTG = entry("5", "%")
	v.CVPPDepth = entry("10", "%")
	v.CVPPD0 = entry("5", "%")
	v.Bandwidth = entry("", "GB/s for ceilings, \"measure\", or empty")
	v.Problems = widget.NewLabel("")
	v.Problems.Wrapping = fyne.TextWrapWord
	v.Estimate = widget.NewLabel("")
	v.Predictions, v.RemovePred = predictionList(&v.preds, func(p study.Prediction) string {
		return fmt.Sprintf("%s  %s  [%s] %s — %s", p.ID, p.Kind, p.About.String(), p.Expectation(), p.Text)
	}, v.Validate)
	v.AddPred = widget.NewButton("Add prediction…", v.predictionDialog)
	v.RegisterBtn = widget.NewButton("Register…", v.confirmRegister)
	v.SaveBtn = widget.NewButton("Save plan…", v.saveDialog)
	v.OpenBtn = widget.NewButton("Open plan…", v.openDialog)
	v.RegisterBtn.Disable()
	refresh := widget.NewButton("Refresh model list", v.RefreshModels)

	form := widget.NewForm(
		widget.NewFormItem("Name", v.Name),
		widget.NewFormItem("Models", container.NewVBox(v.Models, refresh)),
		widget.NewFormItem("Depths", v.Depths),
		widget.NewFormItem("Prompt tokens", v.NPrompt),
		widget.NewFormItem("Generated tokens", v.NGen),
		widget.NewFormItem("Repetitions", v.Reps),
		widget.NewFormItem("Threads", v.Threads),
		widget.NewFormItem("ubatch", v.Ubatch),
		widget.NewFormItem("Flash attention", v.FlashAttn),
		widget.NewFormItem("KV cache (K/V)", v.KV),
		widget.NewFormItem("Legs", v.Split),
		widget.NewFormItem("CV gate tg %", v.CVTG),
		widget.NewFormItem("CV gate pp at depth %", v.CVPPDepth),
		widget.NewFormItem("CV gate pp at d0 %", v.CVPPD0),
		widget.NewFormItem("Bandwidth", v.Bandwidth),
	)
	preds := container.NewBorder(container.NewHBox(heading("Predictions (registered before anything runs)"), v.AddPred, v.RemovePred), nil, nil, nil, v.Predictions)
	preds.Resize(fyne.NewSize(600, 160))
	v.Object = container.NewVScroll(container.NewVBox(
		container.NewHBox(heading("New throughput study"), v.RegisterBtn, v.SaveBtn, v.OpenBtn),
		form,
		container.NewGridWrap(fyne.NewSize(900, 180), preds),
		heading("Checks"), v.Estimate, v.Problems,
	))
	v.RefreshModels()
	return v
}

// RefreshModels lists the readable GGUF files of the Models section as choices.
func (v *WizardView) RefreshModels() {
	offerModels(v.Models, v.models)
	v.Validate()
}

// offerModels makes the readable GGUF files of the Models section the choices of cg, keeping
// the ticked ones that are still offered.
func offerModels(cg *widget.CheckGroup, models func() []app.ModelEntry) {
	var opts []string
	if models != nil {
		for _, m := range models() {
			if m.Err == "" {
				opts = append(opts, m.Path)
			}
		}
	}
	var keep []string
	for _, s := range cg.Selected {
		if contains(opts, s) {
			keep = append(keep, s)
		}
	}
	cg.Options = opts
	cg.Selected = keep
	cg.Refresh()
}

var slugRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// modelID is a short, unique ID for a model path: its file name without .gguf.
func modelID(path string, used map[string]bool) string {
	id := slugRE.ReplaceAllString(strings.TrimSuffix(filepath.Base(path), ".gguf"), "-")
	if len(id) > 48 {
		id = id[:48]
	}
	base, n := id, 2
	for used[id] || id == "" {
		id = fmt.Sprintf("%s-%d", base, n)
		n++
	}
	used[id] = true
	return id
}

func parseInts(field, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a whole number", field, part)
		}
		out = append(out, n)
	}
	return out, nil
}

func parsePercent(field, s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number (percent)", field, s)
	}
	return f / 100, nil
}

// Plan builds the plan the form describes. Errors are the fields that do not parse; the
// plan's own rules are app/study's Validate.
func (v *WizardView) Plan() (*study.Plan, []string) {
	var errs []string
	add := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	p := &study.Plan{Schema: study.SchemaThroughput, Name: strings.TrimSpace(v.Name.Text)}
	used := map[string]bool{}
	for _, id := range v.ids {
		used[id] = true
	}
	for _, path := range v.Models.Selected {
		id, ok := v.ids[path]
		if !ok {
			id = modelID(path, used)
		}
		m := study.Model{ID: id, Path: path}
		if bm, ok := v.baseModel[path]; ok { // keep what the plan said of this file
			m.SHA256, m.Source, m.Revision = bm.SHA256, bm.Source, bm.Revision
		}
		p.Models = append(p.Models, m)
	}
	if b := v.base; b != nil {
		p.Description, p.Build = b.Description, b.Build
		p.Repeatability, p.Canary, p.Conditions = b.Repeatability, b.Canary, b.Conditions
		p.Axes.ExtraArgs, p.Axes.NGL, p.Axes.Batch = b.Axes.ExtraArgs, b.Axes.NGL, b.Axes.Batch
	}
	var err error
	p.Axes.Depths, err = parseInts("depths", v.Depths.Text)
	add(err)
	p.Axes.NPrompt, err = parseInts("prompt tokens", v.NPrompt.Text)
	add(err)
	p.Axes.NGen, err = parseInts("generated tokens", v.NGen.Text)
	add(err)
	reps, err := parseInts("repetitions", v.Reps.Text)
	add(err)
	if len(reps) == 1 {
		p.Axes.Reps = reps[0]
	} else if err == nil {
		errs = append(errs, "repetitions: give one number")
	}
	p.Axes.Threads, err = parseInts("threads", v.Threads.Text)
	add(err)
	for _, s := range v.Ubatch.Selected {
		n, _ := strconv.Atoi(s)
		p.Axes.Ubatch = append(p.Axes.Ubatch, n)
	}
	p.Axes.FlashAttn = append([]string(nil), v.FlashAttn.Selected...)
	for _, s := range v.KV.Selected {
		p.Axes.KV = append(p.Axes.KV, kvChoices[s])
	}
	if len(p.Axes.Ubatch) == 0 {
		errs = append(errs, "ubatch: tick at least one value")
	}
	if len(p.Axes.FlashAttn) == 0 {
		errs = append(errs, "flash attention: tick at least one of auto, on, off")
	}
	if len(p.Axes.KV) == 0 {
		errs = append(errs, "KV cache: tick at least one type")
	}
	p.Split = study.Split(v.Split.Selected)
	p.Gates.CVTG, err = parsePercent("CV gate tg", v.CVTG.Text)
	add(err)
	p.Gates.CVPPDepth, err = parsePercent("CV gate pp at depth", v.CVPPDepth.Text)
	add(err)
	p.Gates.CVPPD0, err = parsePercent("CV gate pp at d0", v.CVPPD0.Text)
	add(err)
	switch bw := strings.TrimSpace(v.Bandwidth.Text); {
	case bw == "":
	case strings.EqualFold(bw, "measure"):
		p.Bandwidth = &study.Bandwidth{Measure: true}
	default:
		f, err := strconv.ParseFloat(bw, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("bandwidth: %q is not a number of GB/s (or \"measure\")", bw))
		} else {
			p.Bandwidth = &study.Bandwidth{GBs: f}
		}
	}
	p.Predictions = append([]study.Prediction(nil), v.preds...)
	return p, errs
}

// Validate re-checks the form in the background (no hashing: that happens at Register) and
// shows every problem, the newest check winning.
func (v *WizardView) Validate() {
	if v.Problems == nil || v.RegisterBtn == nil {
		return // still being built
	}
	p, errs := v.Plan()
	v.mu.Lock()
	v.gen++
	gen := v.gen
	v.mu.Unlock()
	go func() {
		var lines []string
		lines = append(lines, errs...)
		legs, tests, duration := 0, 0, ""
		ok := len(errs) == 0
		if len(errs) == 0 {
			p.Defaults()
			probs, _ := study.Validate(p, study.ValidateOptions{})
			for _, pr := range probs {
				if strings.HasSuffix(pr.Path, ".sha256") && strings.Contains(pr.Msg, "unhashed") {
					continue // Register hashes the models (cached) and fills these in
				}
				lines = append(lines, pr.String())
				if pr.Severity == study.SevError {
					ok = false
				}
			}
			if ok {
				if ls, err := study.Expand(p, ""); err == nil {
					legs = len(ls)
					for _, l := range ls {
						tests += l.ExpectedRows
					}
				}
				if est, isEst := v.reg.(Estimator); isEst {
					if e, err := est.EstimateStudy(context.Background(), p); err == nil {
						duration = "estimated duration " + e.String()
					} else {
						duration = "no estimated duration: " + err.Error()
					}
				}
			}
		}
		onUI(func() {
			v.mu.Lock()
			latest := gen == v.gen
			v.mu.Unlock()
			if !latest {
				return
			}
			if len(lines) == 0 {
				v.Problems.SetText("no problems: ready to register")
			} else {
				v.Problems.SetText(strings.Join(lines, "\n"))
			}
			if ok {
				reps := max(p.Axes.Reps, 1)
				text := fmt.Sprintf("%d legs, %d llama-bench tests of %d repetitions each", legs, tests, reps)
				if duration != "" {
					text += "; " + duration
				}
				v.Estimate.SetText(text + " (the ETA is shown while it runs)")
			} else {
				v.Estimate.SetText("")
			}
			setEnabled(v.RegisterBtn, ok && v.reg != nil)
			select {
			case v.validated <- struct{}{}:
			default:
			}
		})
	}()
}

// AddPrediction appends a prediction (its ID is assigned: P1, P2, …).
func (v *WizardView) AddPrediction(p study.Prediction) {
	ids := make([]string, len(v.preds))
	for i, q := range v.preds {
		ids[i] = q.ID
	}
	p.ID = nextPredictionID(ids)
	v.preds = append(v.preds, p)
	v.Predictions.Refresh()
	v.Validate()
}

// nextPredictionID is the first of P(n+1), P(n+2), … that no prediction has (n = len(ids)).
func nextPredictionID(ids []string) string {
	for n := len(ids) + 1; ; n++ {
		if id := fmt.Sprintf("P%d", n); !slices.Contains(ids, id) {
			return id
		}
	}
}

// predictionList is a wizard's list of *items with its Remove button (enabled while a row is
// selected); changed runs after a removal.
func predictionList[T any](items *[]T, line func(T) string, changed func()) (*widget.List, *widget.Button) {
	sel := -1
	var remove *widget.Button
	list := widget.NewList(func() int { return len(*items) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(line((*items)[i])) })
	remove = widget.NewButton("Remove", func() {
		if sel >= 0 && sel < len(*items) {
			*items = append((*items)[:sel], (*items)[sel+1:]...)
			sel = -1
			list.UnselectAll()
			list.Refresh()
			remove.Disable()
			changed()
		}
	})
	list.OnSelected = func(i widget.ListItemID) { sel = i; remove.Enable() }
	remove.Disable()
	return list, remove
}

// prepareFiles hashes the plan's models (cached in the notebook) and fills their SHA-256 in,
// then the defaults: the plan exactly as it will be frozen, and its SHA-256. It runs off the
// UI goroutine.
func (v *WizardView) prepareFiles(ctx context.Context, p *study.Plan) (*study.Plan, string, error) {
	paths := make([]string, len(p.Models))
	for i, m := range p.Models {
		paths[i] = m.Path
	}
	sums, err := modelHashes(ctx, v.lib, paths)
	if err != nil {
		return nil, "", err
	}
	for i := range p.Models {
		if sum, ok := sums[p.Models[i].Path]; ok {
			p.Models[i].SHA256 = sum
		}
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	return p, sum, err
}

// Register prepares the plan (models hashed) and registers it without asking: the Register…
// button asks first, showing the plan and its SHA-256. It runs in the background; done
// reports on the UI goroutine.
func (v *WizardView) Register(done func(study.Registration, error)) {
	p, errs := v.Plan()
	registerInBackground(p, errs, v.prepareFiles, v.registerPrepared, done)
}

func (v *WizardView) registerPrepared(ctx context.Context, p *study.Plan, sum string) (study.Registration, error) {
	if v.reg == nil {
		return study.Registration{}, errNoRegistrar
	}
	reg, err := v.reg.Register(ctx, p)
	if err == nil {
		err = checkRegistered(reg.PlanSHA256, sum, reg.StudyID)
	}
	return reg, err
}

func (v *WizardView) confirmRegister() {
	p, errs := v.Plan()
	if len(errs) > 0 {
		dialog.ShowError(fmt.Errorf("%s", strings.Join(errs, "\n")), v.win)
		return
	}
	msg := fmt.Sprintf("This freezes exactly this plan and its %d prediction(s) in the notebook; nothing registered can be edited afterwards (changes are amendments, or deviations once legs ran).", len(p.Predictions))
	freeze(v.win, v.RegisterBtn, "hashing the models (cached in the notebook)…", msg,
		func(ctx context.Context) (any, string, error) { return v.prepareFiles(ctx, p) },
		func(ctx context.Context, plan any, sum string) (registered, error) {
			reg, err := v.registerPrepared(ctx, plan.(*study.Plan), sum)
			return registered{reg.StudyID, reg.Existing, fmt.Sprintf("%s: study %d\nplan sha256 %s\n%d legs", reg.Name, reg.StudyID, reg.PlanSHA256, reg.Legs)}, err
		}, v.onDone)
}

// registered is what a Register call says, for the dialog that follows it.
type registered struct {
	id       int64
	existing bool
	text     string
}

// freeze is the Register… button of both wizards. It prepares the plan off the UI goroutine
// (hashing its files, with a dialog that can cancel it), then shows exactly what will be
// frozen, the plan's JSON and its SHA-256, and registers that plan only when confirmed. The
// button stays disabled from the click until the registration ends or is called off.
func freeze(win fyne.Window, btn *widget.Button, preparing, msg string,
	prepare func(ctx context.Context) (plan any, sum string, err error),
	register func(ctx context.Context, plan any, sum string) (registered, error), onDone func(int64)) {
	btn.Disable()
	ctx, cancel := context.WithCancel(context.Background())
	wait := dialog.NewCustom("Preparing the plan", "Cancel", widget.NewLabel(preparing), win)
	var finished atomic.Bool // the dialog is closed by the end of the preparation, not by Cancel
	wait.SetOnClosed(func() {
		if !finished.Load() {
			cancel()
		}
	})
	wait.Show()
	go func() {
		plan, sum, err := prepare(ctx)
		var preview []byte
		if err == nil {
			preview, err = json.MarshalIndent(plan, "", "  ")
		}
		onUI(func() {
			called := ctx.Err() != nil
			finished.Store(true)
			wait.Hide()
			cancel()
			if called {
				btn.Enable()
				return
			}
			if err != nil {
				btn.Enable()
				dialog.ShowError(err, win)
				return
			}
			confirmFreeze(win, btn, preview, sum, msg, func(done func(registered, error)) {
				go func() {
					reg, err := register(context.Background(), plan, sum)
					onUI(func() { done(reg, err) })
				}()
			}, onDone)
		})
	}()
}

// confirmFreeze shows the prepared plan and its SHA-256 and registers it when confirmed.
func confirmFreeze(win fyne.Window, btn *widget.Button, preview []byte, sum, msg string, register func(done func(registered, error)), onDone func(int64)) {
	label := widget.NewLabel(msg)
	label.Wrapping = fyne.TextWrapWord
	shaLabel := widget.NewLabel("plan sha256 " + sum)
	shaLabel.TextStyle = fyne.TextStyle{Monospace: true}
	text := widget.NewMultiLineEntry()
	text.SetText(string(preview))
	text.Disable()
	content := container.NewBorder(container.NewVBox(label, shaLabel), nil, nil, nil, container.NewGridWrap(fyne.NewSize(640, 320), text))
	dialog.ShowCustomConfirm("Register this study?", "Register", "Cancel", content, func(ok bool) {
		if !ok {
			btn.Enable()
			return
		}
		register(func(reg registered, err error) {
			btn.Enable()
			if err != nil {
				dialog.ShowError(err, win)
				return
			}
			how := "registered"
			if reg.existing {
				how = "was already registered (same plan SHA-256)"
			}
			dialog.ShowInformation("Study "+how, reg.text, win)
			if onDone != nil {
				onDone(reg.id)
			}
		})
	}, win)
}

// predictionDialog adds a prediction with a form per kind and a selector picker.
func (v *WizardView) predictionDialog() {
	f := v.newPredictionForm()
	dialog.ShowCustomConfirm("Add a prediction", "Add", "Cancel", f.content, func(ok bool) {
		if !ok {
			return
		}
		pr, err := f.build()
		if err != nil {
			dialog.ShowError(err, v.win)
			return
		}
		v.AddPrediction(pr)
	}, v.win)
}

// predictionForm is the Add a prediction dialog's content: the claim and its selector, then
// only the fields of the chosen kind (band bounds, fork arms, the comparison's right-hand
// side; none for a question), and the crossing line only for a crossing.
type predictionForm struct {
	content                               fyne.CanvasObject
	kind, figure, model, op, thanModel    *widget.Select
	text, test, depth, line, lo, hi, arms *widget.Entry
	thanDepth, tol                        *widget.Entry
	kinds                                 *switchedForm
	lineForm                              *widget.Form
}

func (v *WizardView) newPredictionForm() *predictionForm {
	p, _ := v.Plan()
	var ids []string
	for _, m := range p.Models {
		ids = append(ids, m.ID)
	}
	f := &predictionForm{}
	f.text = widget.NewEntry()
	f.text.SetPlaceHolder("the claim in words")
	f.figure = widget.NewSelect([]string{string(study.FigureCell), string(study.FigureCrossing), string(study.FigureSlope),
		string(study.FigureCV), string(study.FigureEfficiency), string(study.FigureCeiling)}, nil)
	f.model = widget.NewSelect(ids, nil)
	if len(ids) > 0 {
		f.model.SetSelected(ids[0])
	}
	f.test = widget.NewEntry()
	f.test.SetText("tg")
	f.depth = widget.NewEntry()
	f.depth.SetPlaceHolder("depth, e.g. 0")
	f.line = widget.NewEntry()
	f.line.SetPlaceHolder("crossing line in t/s, e.g. 70")
	f.lo, f.hi = widget.NewEntry(), widget.NewEntry()
	f.lo.SetPlaceHolder("lower bound (empty: open)")
	f.hi.SetPlaceHolder("upper bound (empty: open)")
	f.arms = widget.NewEntry()
	f.arms.SetPlaceHolder("fork arms: name:lo:hi; name:lo:hi (empty bound = open)")
	f.op = widget.NewSelect([]string{">=", "<=", "within"}, nil)
	f.op.SetSelected(">=")
	f.thanModel = widget.NewSelect(ids, nil)
	f.thanDepth = widget.NewEntry()
	f.thanDepth.SetPlaceHolder("right-hand depth")
	f.tol = widget.NewEntry()
	f.tol.SetText("0")
	f.kinds = newSwitchedForm(map[string][]*widget.FormItem{
		"band":       {widget.NewFormItem("Band lo", f.lo), widget.NewFormItem("Band hi", f.hi)},
		"fork":       {widget.NewFormItem("Fork arms", f.arms)},
		"comparison": {widget.NewFormItem("Comparison", f.op), widget.NewFormItem("than model", f.thanModel), widget.NewFormItem("than depth", f.thanDepth), widget.NewFormItem("tolerance %", f.tol)},
		"question":   nil,
	})
	f.lineForm = widget.NewForm(widget.NewFormItem("line", f.line))
	f.figure.OnChanged = func(s string) { setVisible(f.lineForm, s == string(study.FigureCrossing)) }
	f.figure.SetSelected(string(study.FigureCell))
	f.kind = widget.NewSelect([]string{"band", "fork", "comparison", "question"}, f.kinds.show)
	f.kind.SetSelected("band")
	common := widget.NewForm(widget.NewFormItem("Kind", f.kind), widget.NewFormItem("Claim", f.text),
		widget.NewFormItem("About: figure", f.figure), widget.NewFormItem("model", f.model),
		widget.NewFormItem("test", f.test), widget.NewFormItem("depth", f.depth))
	f.content = container.NewVBox(common, f.lineForm, f.kinds.box)
	return f
}

func (f *predictionForm) build() (study.Prediction, error) {
	return buildPrediction(f.kind.Selected, f.text.Text, f.figure.Selected, f.model.Selected, f.test.Text, f.depth.Text, f.line.Text,
		f.lo.Text, f.hi.Text, f.arms.Text, f.op.Selected, f.thanModel.Selected, f.thanDepth.Text, f.tol.Text)
}

// switchedForm is the part of a form that depends on a choice: one sub-form per choice, only
// the chosen one shown.
type switchedForm struct {
	forms map[string]*widget.Form
	box   *fyne.Container
}

func newSwitchedForm(parts map[string][]*widget.FormItem) *switchedForm {
	s := &switchedForm{forms: map[string]*widget.Form{}, box: container.NewVBox()}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := widget.NewForm(parts[k]...)
		f.Hide()
		s.forms[k] = f
		s.box.Add(f)
	}
	return s
}

func (s *switchedForm) show(key string) {
	for k, f := range s.forms {
		setVisible(f, k == key && len(f.Items) > 0)
	}
	s.box.Refresh()
}

// shown says whether the sub-form of key is the one shown.
func (s *switchedForm) shown(key string) bool { f := s.forms[key]; return f != nil && f.Visible() }

func setVisible(o fyne.CanvasObject, on bool) {
	if on {
		o.Show()
	} else {
		o.Hide()
	}
}

func optFloat(field, s string) (*float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a number", field, s)
	}
	return &f, nil
}

func optInt(field, s string) (*int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a whole number", field, s)
	}
	return &n, nil
}

// buildPrediction turns the dialog's fields into a prediction (its rules are checked by
// app/study's Validate with the rest of the plan).
func buildPrediction(kind, text, figure, model, test, depth, line, lo, hi, arms, op, thanModel, thanDepth, tol string) (study.Prediction, error) {
	p := study.Prediction{Kind: study.PredictionKind(kind), Text: strings.TrimSpace(text),
		About: study.Selector{Figure: study.Figure(figure), Model: model, Test: strings.TrimSpace(test)}}
	var err error
	if p.About.Depth, err = optInt("depth", depth); err != nil {
		return p, err
	}
	if l, err := optFloat("line", line); err != nil {
		return p, err
	} else if l != nil {
		p.About.Line = *l
	}
	if p.About.Figure == study.FigureCeiling || p.About.Figure == study.FigureEfficiency {
		p.About.Conv = "tensor_exact"
	}
	switch p.Kind {
	case study.KindBand:
		if p.Lo, err = optFloat("lo", lo); err != nil {
			return p, err
		}
		if p.Hi, err = optFloat("hi", hi); err != nil {
			return p, err
		}
	case study.KindFork:
		for _, a := range strings.Split(arms, ";") {
			if strings.TrimSpace(a) == "" {
				continue
			}
			f := strings.Split(a, ":")
			if len(f) != 3 {
				return p, fmt.Errorf("fork arm %q: want name:lo:hi", strings.TrimSpace(a))
			}
			arm := study.Arm{Name: strings.TrimSpace(f[0])}
			if arm.Lo, err = optFloat("arm lo", f[1]); err != nil {
				return p, err
			}
			if arm.Hi, err = optFloat("arm hi", f[2]); err != nil {
				return p, err
			}
			p.Arms = append(p.Arms, arm)
		}
	case study.KindComparison:
		p.Op = op
		than := p.About
		than.Model = thanModel
		if d, err := optInt("than depth", thanDepth); err != nil {
			return p, err
		} else if d != nil {
			than.Depth = d
		}
		p.Than = &than
		t, err := optFloat("tolerance", tol)
		if err != nil {
			return p, err
		}
		if t != nil {
			p.Tolerance = *t / 100
		}
	}
	return p, nil
}

func joinIntList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func percentText(f float64) string { return strconv.FormatFloat(f*100, 'f', -1, 64) }

// LoadPlan fills the form from a plan (planDir resolves its relative model paths). What the
// form has no control for (description, build folder, batch, ngl, extra args, repeatability,
// canary, conditions, the models' SHA-256, source and revision) is kept from the plan, so a
// plan opened and saved again is the same plan.
func (v *WizardView) LoadPlan(p *study.Plan, planDir string) {
	p.Defaults()
	v.base = p
	v.baseModel = map[string]study.Model{}
	v.ids = map[string]string{}
	var paths []string
	for _, m := range p.Models {
		path := study.ResolvePath(planDir, m.Path)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		v.ids[path] = m.ID
		v.baseModel[path] = m
		paths = append(paths, path)
		if !contains(v.Models.Options, path) {
			v.Models.Options = append(v.Models.Options, path)
		}
	}
	v.Name.SetText(p.Name)
	v.Models.SetSelected(paths)
	v.Depths.SetText(joinIntList(p.Axes.Depths))
	v.NPrompt.SetText(joinIntList(p.Axes.NPrompt))
	v.NGen.SetText(joinIntList(p.Axes.NGen))
	v.Reps.SetText(strconv.Itoa(p.Axes.Reps))
	v.Threads.SetText(joinIntList(p.Axes.Threads))
	var ubs []string
	for _, u := range p.Axes.Ubatch {
		ubs = append(ubs, strconv.Itoa(u))
	}
	v.Ubatch.SetSelected(ubs)
	v.FlashAttn.SetSelected(p.Axes.FlashAttn)
	var kvs []string
	for _, kv := range p.Axes.KV {
		kvs = append(kvs, kv.K+"/"+kv.V)
	}
	v.KV.SetSelected(kvs)
	v.Split.SetSelected(string(p.Split))
	v.CVTG.SetText(percentText(p.Gates.CVTG))
	v.CVPPDepth.SetText(percentText(p.Gates.CVPPDepth))
	v.CVPPD0.SetText(percentText(p.Gates.CVPPD0))
	switch b := p.Bandwidth; {
	case b == nil:
		v.Bandwidth.SetText("")
	case b.Measure:
		v.Bandwidth.SetText("measure")
	default:
		v.Bandwidth.SetText(strconv.FormatFloat(b.GBs, 'f', -1, 64))
	}
	v.preds = append([]study.Prediction(nil), p.Predictions...)
	v.Predictions.Refresh()
	v.Validate()
}

// PlanJSON is the form's plan as a plan file (indented JSON, defaults filled in).
func (v *WizardView) PlanJSON() ([]byte, error) {
	p, errs := v.Plan()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	p.Defaults()
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}

// PlanJSONWithHashes is PlanJSON with each model's SHA-256 filled in from the library when
// the file was hashed before (and is unchanged), so the saved plan registers as it is.
func (v *WizardView) PlanJSONWithHashes(ctx context.Context) ([]byte, error) {
	p, errs := v.Plan()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if v.lib != nil {
		for i := range p.Models {
			if p.Models[i].SHA256 != "" {
				continue
			}
			if st, err := v.lib.Status(ctx, p.Models[i].Path); err == nil && st.SHA256 != "" {
				p.Models[i].SHA256 = st.SHA256
			}
		}
	}
	p.Defaults()
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}

// refusals are the form's parse errors and the plan's error-level problems (but a missing
// model SHA-256, which Register fills in): what would stop it from registering.
func (v *WizardView) refusals() []string {
	p, errs := v.Plan()
	if len(errs) > 0 {
		return errs
	}
	p.Defaults()
	probs, _ := study.Validate(p, study.ValidateOptions{})
	for _, pr := range probs {
		if pr.Severity == study.SevError && !(strings.HasSuffix(pr.Path, ".sha256") && strings.Contains(pr.Msg, "unhashed")) {
			errs = append(errs, pr.String())
		}
	}
	return errs
}

func (v *WizardView) saveDialog() {
	if errs := v.refusals(); len(errs) > 0 {
		dialog.ShowError(fmt.Errorf("the plan is not saved: it would not register:\n%s", strings.Join(errs, "\n")), v.win)
		return
	}
	// The library lookups touch the notebook: off the UI goroutine.
	go func() {
		data, err := v.PlanJSONWithHashes(context.Background())
		onUI(func() {
			if err != nil {
				dialog.ShowError(err, v.win)
				return
			}
			v.showSave(data)
		})
	}()
}

func (v *WizardView) showSave(data []byte) {
	name := "plan.json"
	if n := strings.TrimSpace(v.Name.Text); n != "" {
		name = slugify(n) + ".json"
	}
	showFileSave(prefLastPlans, name, func(w fyne.URIWriteCloser, err error) {
		if err != nil {
			dialog.ShowError(err, v.win)
			return
		}
		if w == nil {
			return
		}
		defer w.Close()
		if _, err := w.Write(data); err != nil {
			dialog.ShowError(err, v.win)
		}
	}, v.win)
}

func (v *WizardView) openDialog() {
	pickFile(prefLastPlans, v.win, func(path string) {
		p, err := study.Load(path)
		if err != nil {
			if s := planSchema(path); (s == capacity.SchemaCapacity || s == capacity.SchemaConcurrency) && v.openOther != nil && v.openOther(path) {
				return // a capacity or concurrency plan: opened in the capacity wizard
			}
			dialog.ShowError(err, v.win)
			return
		}
		v.LoadPlan(p, filepath.Dir(path))
	})
}
