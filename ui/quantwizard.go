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
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/quant"
	"sparkbench/app/study"
)

// QuantWizard builds a quantization ladder (docs/quant.md) by point and click: the reference
// model, the quant types the build's llama-quantize lists, the speed and quality settings and
// the rule that chooses, checked by the kind's own Validate as you type, then frozen by
// Register after showing the plan and its SHA-256, as the other New study forms do.
type QuantWizard struct {
	Object fyne.CanvasObject

	Name       *widget.Entry
	Reference  *widget.Select // a readable model of the Models section, or a file chosen here
	RefFile    *widget.Button // Choose file…
	RefNote    *widget.Label  // its file type, size and SHA-256 as the library knows it
	Quants     *widget.CheckGroup
	MoreQuants *widget.Entry // types written in (comma list): the listed ones are ticked above
	TypesNote  *widget.Label // where the list of types came from, or why there is none
	Depths     *widget.Entry
	NPrompt    *widget.Entry
	NGen       *widget.Entry
	Reps       *widget.Entry
	CVMax      *widget.Entry  // the speed legs' CV gate, one limit for tg and pp (empty: the defaults)
	OnCV       *widget.Select // what a CV flag does (speed.gates.on_cv)
	Threads    *widget.Entry
	Corpus     *widget.Entry // empty: the project's own corpus
	CorpusFile *widget.Button
	Ctx        *widget.Entry
	Chunks     *widget.Entry
	// The importance matrix (empty calibration: none): its calibration text, ctx and chunks.
	Calibration   *widget.Entry
	CalibFile     *widget.Button
	ImatrixCtx    *widget.Entry
	ImatrixChunks *widget.Entry
	Memory        *widget.Select
	Maximize      *widget.Select // TEST@DEPTH of the depths
	KLDMean       *widget.Entry
	KLDP99        *widget.Entry
	SameTopP      *widget.Entry
	PPLRatio      *widget.Entry
	FileMiB       *widget.Entry
	PeakRSS       *widget.Entry
	Tolerance     *widget.Entry
	Problems      *widget.Label
	Estimate      *widget.Label

	Predictions *widget.List
	AddPred     *widget.Button
	RemovePred  *widget.Button

	RegisterBtn *widget.Button

	win    fyne.Window
	svc    QuantService
	lib    app.ModelLibrary
	models func() []app.ModelEntry
	onDone func(id int64)
	chosen map[string]app.ModelEntry // reference files chosen with Choose file…
	preds  []quant.Prediction

	formCheck        // only the newest check's result is shown; mu also guards corpus
	corpus    string // the project corpus's path, once the service gave it
	// TypesLoaded receives after each listing of the build's types has been shown (tests wait on it).
	TypesLoaded chan struct{}
}

func newQuantWizard(win fyne.Window, svc QuantService, lib app.ModelLibrary, models func() []app.ModelEntry, onDone func(int64)) *QuantWizard {
	v := &QuantWizard{win: win, svc: svc, lib: lib, models: models, onDone: onDone, chosen: map[string]app.ModelEntry{},
		formCheck: newFormCheck(), TypesLoaded: make(chan struct{}, 4)}
	entry := func(text, hint string) *widget.Entry { return checkedEntry(text, hint, v.Validate) }
	wrap := func() *widget.Label {
		l := widget.NewLabel("")
		l.Wrapping = fyne.TextWrapWord
		return l
	}
	v.Name = entry("", "e.g. which quant of Llama 3.1 8B")
	v.RefNote, v.TypesNote, v.Problems, v.Estimate = wrap(), wrap(), wrap(), wrap()
	v.Reference = widget.NewSelect(nil, func(string) { v.referenceChanged() })
	v.Reference.PlaceHolder = "the unquantized (F32, F16, BF16) model"
	v.RefFile = widget.NewButton("Choose file…", func() {
		pickFile(prefLastModels, v.win, v.ChooseReference, ".gguf")
	})
	v.Quants = widget.NewCheckGroup(nil, func([]string) { v.Validate() })
	v.MoreQuants = entry("", "more types, comma list (as llama-quantize spells them)")
	v.Depths = entry("0,512", "KV depths, comma list")
	v.Depths.OnChanged = func(string) { v.offerFigures(); v.Validate() }
	v.NPrompt = entry("512", "prompt tokens (-p)")
	v.NGen = entry("128", "generated tokens (-n)")
	v.Reps = entry("5", "repetitions (-r)")
	v.CVMax = entry("", "a fraction; empty: 0.05 for tg and pp at d0, 0.10 for pp at depth")
	v.OnCV = widget.NewSelect([]string{onCVHaltText, onCVCountText}, func(string) { v.Validate() })
	v.OnCV.SetSelected(onCVHaltText)
	v.Threads = entry("1", "threads (-t)")
	v.Corpus = entry("", "empty: the project's own corpus (CC0); or a text file")
	v.CorpusFile = widget.NewButton("Choose file…", func() {
		pickFile(prefLastPlans, v.win, func(path string) { v.Corpus.SetText(path) })
	})
	v.Ctx = entry("128", "tokens per chunk (-c)")
	v.Chunks = entry("20", "chunks (--chunks)")
	v.Calibration = entry("", "empty: no importance matrix; or a calibration text file")
	v.CalibFile = widget.NewButton("Choose file…", func() {
		pickFile(prefLastPlans, v.win, func(path string) { v.Calibration.SetText(path) })
	})
	v.ImatrixCtx = entry("", "tokens per chunk (empty: 512)")
	v.ImatrixChunks = entry("", "chunks (empty: 16)")
	v.Memory = widget.NewSelect([]string{quant.MemoryBench, quant.MemoryNone}, func(string) { v.Validate() })
	v.Memory.SetSelected(quant.MemoryBench)
	v.Maximize = widget.NewSelect(nil, func(string) { v.Validate() })
	v.KLDMean = entry("", "empty: no limit, e.g. 0.01")
	v.KLDP99 = entry("", "empty: no limit, e.g. 0.1")
	v.SameTopP = entry("", "a fraction, empty: no limit, e.g. 0.9")
	v.PPLRatio = entry("", "empty: no limit, e.g. 1.05")
	v.FileMiB = entry("", "MiB, empty: no limit")
	v.PeakRSS = entry("", "MiB, empty: no limit")
	v.Tolerance = entry("0.01", "fraction of the best speed that counts as tied")
	v.Predictions, v.RemovePred = predictionList(&v.preds, quantPredictionLine, v.Validate)
	v.AddPred = widget.NewButton("Add prediction…", v.predictionDialog)
	v.RegisterBtn = widget.NewButton("Register…", v.confirmRegister)
	v.RegisterBtn.Disable()
	v.offerFigures()
	form := widget.NewForm(
		widget.NewFormItem("Name", v.Name),
		widget.NewFormItem("Reference model", container.NewVBox(container.NewBorder(nil, nil, nil, container.NewHBox(v.RefFile,
			widget.NewButton("Refresh model list", v.RefreshModels)), v.Reference), v.RefNote)),
		widget.NewFormItem("Quant types", container.NewVBox(container.NewGridWrap(fyne.NewSize(700, 240), container.NewVScroll(v.Quants)), v.MoreQuants, v.TypesNote)),
		widget.NewFormItem("Speed: depths", v.Depths),
		widget.NewFormItem("Speed: prompt tokens", v.NPrompt),
		widget.NewFormItem("Speed: generated tokens", v.NGen),
		widget.NewFormItem("Speed: repetitions", v.Reps),
		widget.NewFormItem("Speed: CV limit", v.CVMax),
		widget.NewFormItem("Speed: a CV flag", v.OnCV),
		widget.NewFormItem("Speed: threads", v.Threads),
		widget.NewFormItem("Quality corpus", container.NewBorder(nil, nil, nil, v.CorpusFile, v.Corpus)),
		widget.NewFormItem("Quality: context", v.Ctx),
		widget.NewFormItem("Quality: chunks", v.Chunks),
		widget.NewFormItem("Importance matrix: calibration", container.NewBorder(nil, nil, nil, v.CalibFile, v.Calibration)),
		widget.NewFormItem("Importance matrix: context", v.ImatrixCtx),
		widget.NewFormItem("Importance matrix: chunks", v.ImatrixChunks),
		widget.NewFormItem("Peak memory", v.Memory),
		widget.NewFormItem("Rule: maximise", v.Maximize),
		widget.NewFormItem("Limit: mean KLD max", v.KLDMean),
		widget.NewFormItem("Limit: KLD p99 max", v.KLDP99),
		widget.NewFormItem("Limit: same top p min", v.SameTopP),
		widget.NewFormItem("Limit: PPL ratio max", v.PPLRatio),
		widget.NewFormItem("Limit: file size max (MiB)", v.FileMiB),
		widget.NewFormItem("Limit: peak RSS max (MiB)", v.PeakRSS),
		widget.NewFormItem("Rule: tolerance", v.Tolerance),
	)
	v.Object = studyFormPage(container.NewHBox(heading("New quantization ladder"), v.RegisterBtn), []fyne.CanvasObject{form},
		v.AddPred, v.RemovePred, v.Predictions, 140, v.Estimate, v.Problems)
	v.RefreshModels()
	v.RefreshTypes()
	return v
}

// RefreshModels offers the readable GGUF files of the Models section (and the files chosen
// here) as the reference, keeping the one chosen while it is still offered.
func (v *QuantWizard) RefreshModels() {
	var opts []string
	if v.models != nil {
		for _, m := range v.models() {
			if m.Err == "" {
				opts = append(opts, m.Path)
			}
		}
	}
	for p := range v.chosen {
		if !slices.Contains(opts, p) {
			opts = append(opts, p)
		}
	}
	slices.Sort(opts)
	v.Reference.Options = opts
	if v.Reference.Selected != "" && !slices.Contains(opts, v.Reference.Selected) {
		v.Reference.ClearSelected()
	}
	v.Reference.Refresh()
	v.Validate()
}

// ChooseReference makes a file the reference (the Choose file… button's choice).
func (v *QuantWizard) ChooseReference(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	go func() {
		m := app.InspectModel(path)
		onUI(func() {
			if m.Err != "" {
				dialog.ShowError(fmt.Errorf("%s could not be read as a GGUF model: %s", path, m.Err), v.win)
				return
			}
			v.chosen[path] = m
			v.RefreshModels()
			v.Reference.SetSelected(path)
		})
	}()
}

// refEntry is what the Models section (or Choose file…) read of the reference's header.
func (v *QuantWizard) refEntry(path string) (app.ModelEntry, bool) {
	if m, ok := v.chosen[path]; ok {
		return m, true
	}
	if v.models != nil {
		for _, m := range v.models() {
			if m.Path == path && m.Err == "" {
				return m, true
			}
		}
	}
	return app.ModelEntry{}, false
}

// referenceChanged says what is known of the chosen reference: its file type and size, and its
// SHA-256 when the library has it (else Register hashes it), then checks the form.
func (v *QuantWizard) referenceChanged() {
	path := v.Reference.Selected
	m, _ := v.refEntry(path)
	what := fmt.Sprintf("%s, %s", orText(m.FileType, "file type unknown"), app.HumanBytes(m.Size))
	v.RefNote.SetText(what)
	if path != "" && v.lib != nil {
		go func() {
			st, err := v.lib.Status(context.Background(), path)
			onUI(func() {
				if v.Reference.Selected != path {
					return
				}
				switch {
				case err == nil && st.SHA256 != "":
					v.RefNote.SetText(fmt.Sprintf("%s; SHA-256 %s (%s, from the library)", what, st.SHA256, st.Status))
				default:
					v.RefNote.SetText(what + "; not hashed yet: Register hashes it (cached in the notebook)")
				}
			})
		}()
	}
	v.Validate()
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// RefreshTypes lists the build's quant types as the choices (the ticked ones still listed
// stay ticked) and learns the project corpus's path, in the background.
func (v *QuantWizard) RefreshTypes() {
	if v.svc == nil {
		v.TypesNote.SetText("quantization ladders are unavailable: the notebook is not open (see the Bench section)")
		return
	}
	go func() {
		ctx := context.Background()
		types, err := v.svc.QuantTypes(ctx)
		corpus, cerr := v.svc.DefaultCorpus(ctx)
		onUI(func() {
			if err != nil {
				v.TypesNote.SetText("the build's llama-quantize could not list its types (" + err.Error() + "): write the types above, or choose the llama.cpp folder in the Bench section")
			} else {
				v.TypesNote.SetText(fmt.Sprintf("%d types, as this build's llama-quantize lists them; their order in the plan (the tie-break's last word) is the order you tick them", len(types)))
			}
			keep := slices.DeleteFunc(slices.Clone(v.Quants.Selected), func(s string) bool { return !slices.Contains(types, s) })
			v.Quants.Options, v.Quants.Selected = types, keep
			v.Quants.Refresh()
			v.mu.Lock()
			if cerr == nil {
				v.corpus = corpus
			}
			v.mu.Unlock()
			if cerr != nil {
				v.Corpus.SetPlaceHolder("the project corpus is unavailable (" + cerr.Error() + "): choose a text file")
			}
			v.Validate()
			select {
			case v.TypesLoaded <- struct{}{}:
			default:
			}
		})
	}()
}

// offerFigures offers tg@D and pp@D of the depths as the figure to maximise, keeping the
// chosen one while its depth is listed (default: tg at the deepest depth).
func (v *QuantWizard) offerFigures() {
	depths, _ := parseInts("depths", v.Depths.Text)
	var opts []string
	for _, d := range depths {
		opts = append(opts, fmt.Sprintf("tg@%d", d), fmt.Sprintf("pp@%d", d))
	}
	sel := v.Maximize.Selected
	v.Maximize.Options = opts
	switch {
	case slices.Contains(opts, sel):
		v.Maximize.Refresh()
	case len(depths) > 0:
		v.Maximize.SetSelected(fmt.Sprintf("tg@%d", slices.Max(depths)))
	default:
		v.Maximize.ClearSelected()
	}
}

// quantList is the ticked types, then the ones written in that are not ticked, in order.
func (v *QuantWizard) quantList() []string {
	out := slices.Clone(v.Quants.Selected)
	for _, f := range strings.FieldsFunc(v.MoreQuants.Text, func(r rune) bool { return r == ',' || r == ' ' }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// Plan builds the plan the form describes (the files' SHA-256 are filled in by Register), its
// build.dir the window's llama.cpp folder when one is chosen: the build it is validated and run
// with, and the one the kind's Register checks it against. Errors are the fields that do not
// parse; the plan's own rules are the kind's Validate.
func (v *QuantWizard) Plan() (*quant.Plan, []string) {
	var errs []string
	add := errAdder(&errs)
	one := func(field, s string) int {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %q is not a whole number", field, s))
		}
		return n
	}
	p := &quant.Plan{Schema: quant.SchemaQuant, Name: strings.TrimSpace(v.Name.Text),
		Reference: quant.FileRef{Path: v.Reference.Selected}, Quants: v.quantList(), Memory: v.Memory.Selected}
	if v.svc != nil {
		p.Build.Dir = v.svc.BuildDir()
	}
	var err error
	p.Speed.Depths, err = parseInts("depths", v.Depths.Text)
	add(err)
	p.Speed.NPrompt = one("prompt tokens", v.NPrompt.Text)
	p.Speed.NGen = one("generated tokens", v.NGen.Text)
	p.Speed.Reps = one("repetitions", v.Reps.Text)
	p.Speed.Threads = one("threads", v.Threads.Text)
	cv, err := optFloat("CV limit", v.CVMax.Text)
	add(err)
	if cv != nil { // one limit for every test: a leg over it is flagged and run again
		p.Speed.Gates = study.Gates{CVTG: *cv, CVPPDepth: *cv, CVPPD0: *cv}
	}
	p.Speed.Gates.OnCV = onCVOf(v.OnCV.Selected, "") // or counted with its flag
	p.Quality.Corpus.Path = strings.TrimSpace(v.Corpus.Text)
	if p.Quality.Corpus.Path == "" {
		v.mu.Lock()
		p.Quality.Corpus.Path = v.corpus
		v.mu.Unlock()
	}
	p.Quality.Ctx = one("context", v.Ctx.Text)
	p.Quality.Chunks = one("chunks", v.Chunks.Text)
	if cal := strings.TrimSpace(v.Calibration.Text); cal != "" {
		p.Imatrix = &quant.Imatrix{Calibration: quant.FileRef{Path: cal}}
		ctx, err := optInt("importance matrix context", v.ImatrixCtx.Text)
		add(err)
		chunks, err := optInt("importance matrix chunks", v.ImatrixChunks.Text)
		add(err)
		if ctx != nil {
			p.Imatrix.Ctx = *ctx
		}
		if chunks != nil {
			p.Imatrix.Chunks = *chunks
		}
	}
	p.Rule.Maximize = v.Maximize.Selected
	l := &p.Rule.Limits
	for _, f := range []struct {
		field string
		e     *widget.Entry
		to    **float64
	}{{"mean KLD max", v.KLDMean, &l.KLDMeanMax}, {"KLD p99 max", v.KLDP99, &l.KLDP99Max}, {"same top p min", v.SameTopP, &l.SameTopPMin},
		{"PPL ratio max", v.PPLRatio, &l.PPLRatioMax}, {"file size max", v.FileMiB, &l.FileMiBMax}, {"peak RSS max", v.PeakRSS, &l.PeakRSSMiBMax},
		{"tolerance", v.Tolerance, &p.Rule.Tolerance}} {
		*f.to, err = optFloat(f.field, f.e.Text)
		add(err)
	}
	p.Predictions = slices.Clone(v.preds)
	return p, errs
}
