package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

func joinIntList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func percentText(f float64) string { return strconv.FormatFloat(f*100, 'f', -1, 64) }

// LoadPlan fills the form from a plan (planDir resolves its relative model paths). What the
// form has no control for (description, build folder, batch, extra args, repeatability,
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
	v.ModelTable.Refresh()
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
	v.onCVWritten = p.Gates.OnCV
	v.OnCV.SetSelected(onCVText(p.Gates.OnCV))
	switch b := p.Bandwidth; {
	case b == nil:
		v.Bandwidth.SetText("")
	case b.Measure:
		v.Bandwidth.SetText("measure")
	default:
		v.Bandwidth.SetText(strconv.FormatFloat(b.GBs, 'f', -1, 64))
	}
	v.loadDeviceFields(p)
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
	return refusalLines(probs)
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
