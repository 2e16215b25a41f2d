package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// applyBase keeps what the form has no control for from the plan last opened: description,
// build folder, seed, the quality retention bound and reference, the KV quality gate, the
// serving and telemetry sections, the RPC servers, the files' SHA-256 where the
// path is unchanged, and the candidates themselves when the form cannot express them (or
// their role, markers and model SHA-256 when it rebuilt the same candidate).
func (v *CapacityWizard) applyBase(p *capacity.Plan) {
	b := v.base
	if b == nil {
		return
	}
	p.Description, p.Build, p.Seed = b.Description, b.Build, b.Seed
	p.Limits.QualityRetentionMin = b.Limits.QualityRetentionMin
	p.Limits.QualityReference = b.Limits.QualityReference
	// Sections the form has no fields for (yet): kept unless the form set them.
	if p.KVQuality == nil {
		p.KVQuality = b.KVQuality
	}
	if p.Serving == nil {
		p.Serving = b.Serving
	}
	if p.Telemetry == nil {
		p.Telemetry = b.Telemetry
	}
	if p.RPCServers == nil {
		p.RPCServers = slices.Clone(b.RPCServers)
	}
	if p.PromptPlan.Path == b.PromptPlan.Path && p.PromptPlan.SHA256 == "" {
		p.PromptPlan.SHA256 = b.PromptPlan.SHA256
	}
	if q, bq := p.QualityCases, b.QualityCases; q != nil && bq != nil && q.Path == bq.Path && q.SHA256 == "" {
		q.SHA256 = bq.SHA256
	}
	if v.keepCands {
		p.Candidates = cloneCandidates(b.Candidates)
		return
	}
	byID := map[string]capacity.Candidate{}
	for _, c := range b.Candidates {
		byID[c.ID] = c
	}
	for i := range p.Candidates {
		c := &p.Candidates[i]
		if old, ok := byID[c.ID]; ok && old.Model.Path == c.Model.Path {
			c.Role, c.Markers, c.Model.SHA256, c.RPC = old.Role, old.Markers, old.Model.SHA256, old.RPC
		}
	}
}

func cloneCandidates(cs []capacity.Candidate) []capacity.Candidate {
	out := make([]capacity.Candidate, len(cs))
	for i, c := range cs {
		c.ServerFlags = slices.Clone(c.ServerFlags)
		c.Markers.Must = slices.Clone(c.Markers.Must)
		c.Markers.MustNot = slices.Clone(c.Markers.MustNot)
		out[i] = c
	}
	return out
}

// sameCandidates says whether two candidate lists are the same deployments, in order.
func sameCandidates(a, b []capacity.Candidate) bool {
	return slices.EqualFunc(a, b, func(x, y capacity.Candidate) bool {
		return x.ID == y.ID && x.Label == y.Label && x.Arm == y.Arm && x.Model.Path == y.Model.Path && slices.Equal(x.ServerFlags, y.ServerFlags) && x.RPC == y.RPC
	})
}

// LoadPlan fills the form from a capacity or concurrency plan (planDir resolves its relative
// paths). Candidates that are models × server configurations fill Models, Server
// configurations and Flags; others are kept as they are (CandNote says so) until those fields
// are edited. What the form has no control for is kept too, so a plan opened and saved again
// is the same plan.
func (v *CapacityWizard) LoadPlan(p *capacity.Plan, planDir string) {
	p.Defaults()
	b, err := p.Clone()
	if err != nil {
		dialog.ShowError(err, v.win)
		return
	}
	resolve := func(path string) string {
		path = study.ResolvePath(planDir, path)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return path
	}
	for i := range b.Candidates {
		b.Candidates[i].Model.Path = resolve(b.Candidates[i].Model.Path)
	}
	defaultPrompts := b.PromptPlan == capacity.DefaultPromptPlanRef()
	if !defaultPrompts {
		b.PromptPlan.Path = resolve(b.PromptPlan.Path)
	}
	if b.QualityCases != nil {
		b.QualityCases.Path = resolve(b.QualityCases.Path)
	}
	for _, f := range servingFiles(b.Serving) {
		f.Path = resolve(f.Path)
	}

	v.loading = true
	defer func() { v.loading = false }()
	v.base, v.keepCands = nil, false
	kind := KindCapacity
	if b.Concurrency() {
		kind = KindConcurrency
	}
	v.SetKind(kind)
	if v.OnKind != nil {
		v.OnKind(kind)
	}
	v.Name.SetText(b.Name)
	v.ArmAxis.SetText(b.ArmAxis)
	v.Slots.SetText(joinIntList(b.Slots))
	v.Clients.SetText(joinIntList(b.Clients))
	if slices.Equal(b.Passes, []string{capacity.PassForward}) {
		v.Passes.SetSelected(passesForward)
	} else {
		v.Passes.SetSelected(passesBoth)
	}
	v.Warmups.SetText(strconv.Itoa(b.WarmupCount()))
	v.Measured.SetText(strconv.Itoa(b.Measured))
	v.NPredict.SetText(strconv.Itoa(b.NPredict))
	v.CtxPerSlot.SetText(strconv.Itoa(b.CtxPerSlot))
	l := b.Limits
	v.TTFT.SetText(ftext(l.TTFTMsP95Max))
	v.E2E.SetText(ftext(l.E2EMsP95Max))
	v.Completion.SetText(ftext(l.CompletionRateMin))
	v.RSS.SetText(ftext(l.PeakRSSMiBMax))
	v.RateSpread.SetText(ftext(l.GenRateSpreadMax))
	v.E2ESpread.SetText(ftext(l.E2EP95SpreadMax))
	v.Tolerance.SetText(ftext(l.ObjectiveTolerance))
	v.Knee.SetText(ftext(b.KneeThreshold))
	if defaultPrompts {
		v.PromptPlan.SetText("")
	} else {
		v.PromptPlan.SetText(b.PromptPlan.Path)
	}
	if b.QualityCases != nil {
		v.Quality.SetText(b.QualityCases.Path)
	} else {
		v.Quality.SetText("")
	}
	if l.QualityFloor != nil {
		v.QFloor.SetText(ftext(*l.QualityFloor))
	} else {
		v.QFloor.SetText("")
	}
	v.Serving.load(b.Serving)
	v.fillCandidates(b.Candidates)
	v.preds = append([]capacity.Prediction(nil), b.Predictions...)
	v.Predictions.Refresh()

	// The form's own candidates: when they are the plan's, the form expresses them.
	v.base = b
	formed, _ := v.Plan()
	v.keepCands = !sameCandidates(formed.Candidates, b.Candidates)
	if v.keepCands {
		var names []string
		for _, c := range b.Candidates {
			names = append(names, c.ID)
		}
		v.CandNote.SetText(fmt.Sprintf("candidates: the opened plan's %d, kept as they are (%s); they are not models × server configurations, so editing Models, Server configurations or Flags replaces them with those the form describes", len(names), strings.Join(names, ", ")))
	} else {
		v.CandNote.SetText(fmt.Sprintf("candidates: the opened plan's %d, as models × server configurations", len(b.Candidates)))
	}
	v.Validate()
}

// fillCandidates writes candidates into Models and Server configurations as well as the form
// can: the models in order, and a configuration row per candidate of the first model (named
// from its label), holding all its flags (the rows split them into their fields and other
// flags); Flags of every configuration is left empty.
func (v *CapacityWizard) fillCandidates(cs []capacity.Candidate) {
	var paths []string
	for _, c := range cs {
		if !slices.Contains(paths, c.Model.Path) {
			paths = append(paths, c.Model.Path)
		}
		if !slices.Contains(v.Models.Options, c.Model.Path) {
			v.Models.Options = append(v.Models.Options, c.Model.Path)
		}
	}
	v.Models.SetSelected(paths)
	v.ModelTable.Refresh()
	var first []capacity.Candidate
	for _, c := range cs {
		if len(paths) > 0 && c.Model.Path == paths[0] {
			first = append(first, c)
		}
	}
	mid := modelID(paths0(paths), map[string]bool{})
	var cfgs []serverConfig
	for i, c := range first {
		name := "default"
		if len(first) > 1 {
			name = strings.TrimPrefix(c.Label, mid+" ")
			if name == c.Label || name == "" || strings.Contains(name, ":") {
				name = "c" + strconv.Itoa(i+1)
			}
		}
		if len(first) == 1 && len(c.ServerFlags) == 0 {
			break // one configuration without flags: no rows
		}
		cfgs = append(cfgs, serverConfig{name: name, flags: slices.Clone(c.ServerFlags)})
	}
	v.Flags.SetText("")
	v.Configs.SetConfigs(cfgs)
}

func paths0(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return paths[0]
}

// PlanJSON is the form's plan as a plan file (indented JSON, defaults filled in), each model's
// SHA-256 filled in from the library when the file was hashed before and is unchanged.
func (v *CapacityWizard) PlanJSON(ctx context.Context, p *capacity.Plan) ([]byte, error) {
	if v.lib != nil {
		for i := range p.Candidates {
			m := &p.Candidates[i].Model
			if m.SHA256 != "" {
				continue
			}
			if st, err := v.lib.Status(ctx, m.Path); err == nil && st.SHA256 != "" {
				m.SHA256 = st.SHA256
			}
		}
	}
	p.Defaults()
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}

// refusals are the form's parse errors and the plan's error-level problems (but a missing
// file SHA-256, which Register fills in): what would stop it from registering.
func (v *CapacityWizard) refusals(p *capacity.Plan, errs []string) []string {
	if len(errs) > 0 {
		return errs
	}
	q, err := p.Clone()
	if err != nil {
		return []string{err.Error()}
	}
	q.Defaults()
	return refusalLines(capacity.Validate(q, capacity.ValidateOptions{}))
}

func (v *CapacityWizard) saveDialog() {
	p, errs := v.Plan()
	if errs := v.refusals(p, errs); len(errs) > 0 {
		dialog.ShowError(fmt.Errorf("the plan is not saved: it would not register:\n%s", strings.Join(errs, "\n")), v.win)
		return
	}
	// The library lookups touch the notebook: off the UI goroutine.
	go func() {
		data, err := v.PlanJSON(context.Background(), p)
		onUI(func() {
			if err != nil {
				dialog.ShowError(err, v.win)
				return
			}
			showFileSave(prefLastPlans, slugify(p.Name)+".json", func(w fyne.URIWriteCloser, err error) {
				if err != nil {
					dialog.ShowError(err, v.win)
					return
				}
				if w == nil {
					return
				}
				if err := writePromptPlanBeside(w.URI().Path(), p); err != nil {
					w.Close()
					dialog.ShowError(err, v.win)
					return
				}
				if _, err := w.Write(data); err != nil {
					w.Close()
					dialog.ShowError(err, v.win)
					return
				}
				if err := w.Close(); err != nil {
					dialog.ShowError(err, v.win)
				}
			}, v.win)
		})
	}()
}

// writePromptPlanBeside prepares the folder a plan file is saved to: a plan on the built-in
// prompt plan names it relative to its own folder, so the built-in prompt plan is written
// beside it.
func writePromptPlanBeside(path string, p *capacity.Plan) error {
	if p.PromptPlan == capacity.DefaultPromptPlanRef() {
		if _, err := capacity.WriteDefaultPromptPlan(filepath.Dir(path)); err != nil {
			return fmt.Errorf("the plan uses the built-in prompt plan, which is written beside it: %w", err)
		}
	}
	return nil
}

func (v *CapacityWizard) openDialog() {
	pickFile(prefLastPlans, v.win, func(path string) {
		p, err := capacity.Load(path)
		if err != nil {
			if planSchema(path) == study.SchemaThroughput && v.openOther != nil && v.openOther(path) {
				return // a throughput plan: opened in the throughput wizard
			}
			dialog.ShowError(err, v.win)
			return
		}
		v.LoadPlan(p, filepath.Dir(path))
	})
}

// planSchema is the "schema" member of a plan file, or "" when it cannot be read.
func planSchema(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &head) != nil {
		return ""
	}
	return head.Schema
}
