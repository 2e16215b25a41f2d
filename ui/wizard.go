package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
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

	Name       *widget.Entry
	Models     *widget.CheckGroup // the picked models' paths, in the order picked
	ModelTable *ModelPicker       // the models as a table with their facts (modelpicker.go)
	Depths     *widget.Entry
	NPrompt    *widget.Entry
	NGen       *widget.Entry
	Reps       *widget.Entry
	Threads    *widget.Entry
	Ubatch     *widget.CheckGroup
	FlashAttn  *widget.CheckGroup
	KV         *widget.CheckGroup
	Split      *widget.Select
	CVTG       *widget.Entry
	CVPPDepth  *widget.Entry
	CVPPD0     *widget.Entry
	// OnCV is what a CV flag does (gates.on_cv): halt the leg, or count the row with its flag.
	OnCV *widget.Select
	// onCVWritten is the opened plan's on_cv as written ("" when left out), so that a plan
	// opened and saved again keeps its bytes.
	onCVWritten string
	Bandwidth   *widget.Entry
	Predictions *widget.List
	Problems    *widget.Label
	Estimate    *widget.Label
	// Planner is the repetition planner's answer (wizard_planner.go), shown for a plan that
	// compares arms; hidden otherwise.
	Planner     *widget.Label
	RegisterBtn *widget.Button
	SaveBtn     *widget.Button
	OpenBtn     *widget.Button
	AddPred     *widget.Button
	RemovePred  *widget.Button

	// The device axes (wizard_devices.go), each written to the plan only when set.
	Env            *widget.SelectEntry // build.env: KEY=VALUE of study.DeviceEnvNames
	EnvHint        *widget.Label       // the doctor's device notes; hidden when none
	Devices        *widget.CheckGroup  // none, auto and the build's devices as listed with Env
	DevicesNote    *widget.Label       // what the build lists
	NGL            *widget.Entry
	SplitMode      *widget.CheckGroup
	TensorSplit    *widget.Entry
	NCPUMoE        *widget.Entry
	Overrides      *widget.CheckGroup // override_tensors presets
	OverrideCustom *widget.Entry      // more override_tensors values, one per line
	NoKVOffload    *widget.CheckGroup
	LoadMode       *widget.CheckGroup
	RPC            *widget.Entry

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

	formCheck              // only the newest check's result is shown; mu also guards devQ
	devQ      *deviceQuery // the last listing of the build's devices (listDevices)

	envChoices []string // the Env drop-down's values (SetDoctorReport)
}

var kvChoices = map[string]study.KVType{"f16/f16": {K: "f16", V: "f16"}, "q8_0/q8_0": {K: "q8_0", V: "q8_0"}, "q4_0/q4_0": {K: "q4_0", V: "q4_0"}}

func newWizardView(win fyne.Window, reg Registrar, lib app.ModelLibrary, models func() []app.ModelEntry, onDone func(int64)) *WizardView {
	v := &WizardView{win: win, reg: reg, lib: lib, models: models, onDone: onDone, formCheck: newFormCheck()}
	entry := func(text, hint string) *widget.Entry { return checkedEntry(text, hint, v.Validate) }
	v.Name = entry("", "e.g. tg depth curve, Qwen3 vs Llama")
	v.Models = widget.NewCheckGroup(nil, func([]string) { v.Validate() })
	v.ModelTable = newModelPicker(v.Models, models, lib)
	v.Depths = entry("0,2048,4096,8192", "comma list of KV depths, e.g. 0,2048,4096")
	v.NPrompt = entry("512", "prompt tokens (-p), comma list")
	v.NGen = entry("128", "generated tokens (-n), comma list")
	v.Reps = entry("5", "repetitions (-r)")
	v.Threads = entry("", "threads (-t), comma list; empty: llama-bench's default")
	v.Ubatch = widget.NewCheckGroup(slices.Clone(ubatchChoices), func([]string) { v.Validate() })
	v.Ubatch.SetSelected([]string{"512"})
	v.Ubatch.Horizontal = true
	v.FlashAttn = widget.NewCheckGroup(slices.Clone(flashAttnChoices), func([]string) { v.Validate() })
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
	v.OnCV = widget.NewSelect([]string{onCVHaltText, onCVCountText}, func(string) { v.Validate() })
	v.OnCV.SetSelected(onCVHaltText)
	v.Bandwidth = entry("", "GB/s for ceilings, \"measure\", or empty")
	devices := v.newDeviceForm(entry)
	v.Problems = widget.NewLabel("")
	v.Problems.Wrapping = fyne.TextWrapWord
	v.Estimate = widget.NewLabel("")
	v.Planner = widget.NewLabel("")
	v.Planner.Wrapping = fyne.TextWrapWord
	v.Planner.Hide()
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
		hinted("Name", v.Name, "the study's name in the notebook and its receipts (no llama.cpp flag)"),
		hinted("Models", container.NewVBox(v.ModelTable.Object, refresh), "the GGUF files benchmarked, one llama-bench -m each; click a row to pick or unpick it"),
		hinted("Depths", v.Depths, "KV cache depths in tokens before each test (llama-bench -d)"),
		hinted("Prompt tokens", v.NPrompt, "prompt tokens of the prompt-processing tests (llama-bench -p)"),
		hinted("Generated tokens", v.NGen, "tokens generated by the generation tests (llama-bench -n)"),
		hinted("Repetitions", v.Reps, "repetitions of each test (llama-bench -r)"),
		hinted("Threads", v.Threads, "CPU threads (llama-bench -t)"),
		hinted("ubatch", v.Ubatch, "physical batch sizes in tokens (llama-bench -ub)"),
		hinted("Flash attention", v.FlashAttn, "flash attention on, off or auto (llama-bench -fa)"),
		hinted("KV cache (K/V)", v.KV, "KV cache data types of K and V (llama-bench -ctk and -ctv)"),
		hinted("Legs", v.Split, "how the tests are split into llama-bench processes: a leg per depth or combined (no llama.cpp flag)"),
		hinted("CV gate tg %", v.CVTG, "largest coefficient of variation of a generation test's repetitions before its leg is re-run (sparkbench's gate, no llama.cpp flag)"),
		hinted("CV gate pp at depth %", v.CVPPDepth, "the same gate for prompt processing at a depth above 0 (no llama.cpp flag)"),
		hinted("CV gate pp at d0 %", v.CVPPD0, "the same gate for prompt processing at depth 0 (no llama.cpp flag)"),
		hinted("A CV flag", v.OnCV, "what a CV flag does: halt the leg (the flagged process's row does not count, the leg runs again: unattended anomaly detection) or count the row with its flag (show and the receipt list it: precision studies, loaded machines); sparkbench's gate, no llama.cpp flag"),
		hinted("Bandwidth", v.Bandwidth, "memory bandwidth for the ceilings: GB/s, measure, or empty (sparkbench's probe, no llama.cpp flag)"),
	)
	v.Object = studyFormPage(container.NewHBox(heading("New throughput study"), v.RegisterBtn, v.SaveBtn, v.OpenBtn), []fyne.CanvasObject{form, devices},
		v.AddPred, v.RemovePred, v.Predictions, 180, container.NewVBox(v.Estimate, v.Planner), v.Problems)
	v.RefreshModels()
	return v
}

// RefreshModels lists the readable GGUF files of the Models section as choices.
func (v *WizardView) RefreshModels() {
	offerModels(v.Models, v.models)
	v.ModelTable.Refresh()
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
	add := errAdder(&errs)
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
		p.Description, p.Build.Dir = b.Description, b.Build.Dir
		p.Adaptive, p.Telemetry = b.Adaptive, b.Telemetry
		p.Repeatability, p.Canary, p.Conditions = b.Repeatability, b.Canary, b.Conditions
		p.Axes.ExtraArgs, p.Axes.Batch = b.Axes.ExtraArgs, b.Axes.Batch
	}
	errs = append(errs, v.deviceAxes(p)...)
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
	p.Gates.OnCV = onCVOf(v.OnCV.Selected, v.onCVWritten)
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
	v.check(func(gen int) func() {
		var lines []string
		lines = append(lines, errs...)
		legs, tests, duration, planner := 0, 0, "", ""
		ok := len(errs) == 0
		// The build's devices with the form's env and endpoints: the Devices choices, and the
		// check of the device axes when the plan needs the build's devices (as study validate does).
		listed, devProbs, asked := v.listDevices(gen, p)
		if len(errs) == 0 {
			p.Defaults()
			opts := study.ValidateOptions{}
			checkDevs := asked && p.NeedsDevices()
			if checkDevs {
				opts.Devices = listed
			}
			probs, _ := study.Validate(p, opts)
			if checkDevs {
				probs = append(probs, devProbs...)
			}
			probLines, valid := problemLines(probs)
			lines, ok = append(lines, probLines...), valid
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
				planner = v.plannerText(p)
			}
		}
		return func() {
			if asked {
				v.offerDeviceChoices(listed, nil)
			}
			showProblems(v.Problems, lines)
			setText(v.Planner, planner)
			setVisible(v.Planner, planner != "")
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
		}
	})
}

// showProblems lists a plan's problems under its form, or says it is ready to register.
func showProblems(l *widget.Label, lines []string) {
	if len(lines) == 0 {
		l.SetText("no problems: ready to register")
	} else {
		l.SetText(strings.Join(lines, "\n"))
	}
}

// The CV flag choices of the study forms (gates.on_cv).
const (
	onCVHaltText  = "halt the leg (and run it again)"
	onCVCountText = "count the row with its flag"
)

// onCVOf is the plan's on_cv for a form choice: "count", or for halting the value the opened
// plan wrote ("halt" or left out, the default), so that an unchanged plan keeps its SHA-256.
func onCVOf(choice, written string) string {
	if choice == onCVCountText {
		return study.OnCVCount
	}
	if written == study.OnCVHalt {
		return study.OnCVHalt
	}
	return ""
}

// onCVText is the form choice for a plan's on_cv.
func onCVText(onCV string) string {
	if onCV == study.OnCVCount {
		return onCVCountText
	}
	return onCVHaltText
}
