package ui

import (
	"fmt"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/quant"
	"sparkbench/app/study"
)

// AddPrediction appends a ladder prediction (its ID is assigned: P1, P2, …).
func (v *QuantWizard) AddPrediction(p quant.Prediction) {
	addPrediction(&v.preds, p, func(p *quant.Prediction) *string { return &p.ID }, v.Predictions, v.Validate)
}

func quantPredictionLine(p quant.Prediction) string {
	return fmt.Sprintf("%s  %s  [%s] %s — %s", p.ID, p.Kind, p.About.String(), p.Expectation(), p.Text)
}

// predictionDialog adds a band or question prediction about one figure of one candidate (a
// type of the plan, or the one the rule selects, or its runner-up).
func (v *QuantWizard) predictionDialog() {
	f := v.newPredictionForm()
	addPredictionDialog(v.win, f.content, f.build, v.AddPrediction)
}

// quantPredictionForm is the ladder's Add a prediction dialog: the claim, the figure and the
// candidate, the speed figure's TEST@DEPTH only for speed, the band's bounds only for a band.
type quantPredictionForm struct {
	content      fyne.CanvasObject
	kind, figure *widget.Select
	cand, at     *widget.Select
	text, lo, hi *widget.Entry
	kinds        *switchedForm
	atForm       *widget.Form
	figureNames  []string
}

func (v *QuantWizard) newPredictionForm() *quantPredictionForm {
	p, _ := v.Plan()
	f := &quantPredictionForm{}
	f.text, f.cand = claimFields(append(slices.Clone(p.Quants), quant.CandidateSelected, quant.CandidateRunnerUp))
	f.at = widget.NewSelect(slices.Clone(v.Maximize.Options), nil)
	f.at.SetSelected(v.Maximize.Selected)
	f.atForm = widget.NewForm(widget.NewFormItem("at (TEST@DEPTH)", f.at))
	f.kind, f.lo, f.hi, f.kinds = bandOrQuestion()
	for _, fig := range quant.Figures {
		f.figureNames = append(f.figureNames, string(fig))
	}
	f.figure = widget.NewSelect(f.figureNames, func(s string) { setVisible(f.atForm, s == string(quant.FigureSpeed)) })
	f.figure.SetSelected(string(quant.FigureKLDMean))
	common := widget.NewForm(widget.NewFormItem("Kind", f.kind), widget.NewFormItem("Claim", f.text),
		widget.NewFormItem("About: figure", f.figure), widget.NewFormItem("candidate", f.cand))
	f.content = container.NewVBox(common, f.atForm, f.kinds.box)
	return f
}

func (f *quantPredictionForm) build() (quant.Prediction, error) {
	return buildQuantPrediction(f.kind.Selected, f.text.Text, f.figure.Selected, f.cand.Selected, f.at.Selected, f.lo.Text, f.hi.Text)
}

// buildQuantPrediction turns the dialog's fields into a prediction (its rules are checked by
// the kind's Validate with the rest of the plan); at is kept only for a speed figure.
func buildQuantPrediction(kind, text, figure, cand, at, lo, hi string) (quant.Prediction, error) {
	p := quant.Prediction{Kind: study.PredictionKind(kind), Text: strings.TrimSpace(text),
		About: quant.Selector{Figure: quant.Figure(figure), Candidate: cand}}
	if p.About.Figure == quant.FigureSpeed {
		p.About.At = at
	}
	if p.Kind != study.KindBand {
		return p, nil
	}
	var err error
	if p.Lo, err = optFloat("lower bound", lo); err != nil {
		return p, err
	}
	p.Hi, err = optFloat("upper bound", hi)
	return p, err
}
