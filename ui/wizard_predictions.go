package ui

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
)

// AddPrediction appends a prediction (its ID is assigned: P1, P2, …).
func (v *WizardView) AddPrediction(p study.Prediction) {
	addPrediction(&v.preds, p, func(p *study.Prediction) *string { return &p.ID }, v.Predictions, v.Validate)
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

// predictionDialog adds a prediction with a form per kind and a selector picker.
func (v *WizardView) predictionDialog() {
	f := v.newPredictionForm()
	addPredictionDialog(v.win, f.content, f.build, v.AddPrediction)
}

// addPredictionDialog shows a kind's Add a prediction form (content) and hands the prediction
// it builds to add; a form that cannot build one says why and adds nothing.
func addPredictionDialog[P any](win fyne.Window, content fyne.CanvasObject, build func() (P, error), add func(P)) {
	dialog.ShowCustomConfirm("Add a prediction", "Add", "Cancel", content, func(ok bool) {
		if !ok {
			return
		}
		pr, err := build()
		if err != nil {
			dialog.ShowError(err, win)
			return
		}
		add(pr)
	}, win)
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
	ids := idsOf(p.Models, func(m study.Model) string { return m.ID })
	f := &predictionForm{}
	f.text, f.model = claimFields(ids)
	f.figure = widget.NewSelect([]string{string(study.FigureCell), string(study.FigureCrossing), string(study.FigureSlope),
		string(study.FigureCV), string(study.FigureEfficiency), string(study.FigureCeiling)}, nil)
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
	f.op, f.tol = comparisonFields()
	f.thanModel = widget.NewSelect(ids, nil)
	f.thanDepth = widget.NewEntry()
	f.thanDepth.SetPlaceHolder("right-hand depth")
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
		p.Tolerance, err = tolerancePercent(tol)
	}
	return p, err
}
