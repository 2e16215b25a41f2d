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

// predictionDialog adds a band, comparison or question prediction about one figure of one
// candidate (a type of the plan, or the one the rule selects, or its runner-up); a comparison
// sets it against the same figure of another candidate (at another TEST@DEPTH for speed).
func (v *QuantWizard) predictionDialog() {
	f := v.newPredictionForm()
	addPredictionDialog(v.win, f.content, f.build, v.AddPrediction)
}

// quantPredictionForm is the ladder's Add a prediction dialog: the claim, the figure and the
// candidate, the speed figure's TEST@DEPTH only for speed, the band's bounds only for a band,
// the comparison's operator, right-hand candidate (and TEST@DEPTH) and tolerance only for a
// comparison.
type quantPredictionForm struct {
	content          fyne.CanvasObject
	kind, figure     *widget.Select
	cand, at         *widget.Select
	op, thanCand     *widget.Select
	thanAt           *widget.Select
	text, lo, hi     *widget.Entry
	tol              *widget.Entry
	kinds            *switchedForm
	atForm, thanForm *widget.Form
	figureNames      []string
}

func (v *QuantWizard) newPredictionForm() *quantPredictionForm {
	p, _ := v.Plan()
	f := &quantPredictionForm{}
	cands := append(slices.Clone(p.Quants), quant.CandidateSelected, quant.CandidateRunnerUp)
	f.text, f.cand = claimFields(cands)
	f.at = widget.NewSelect(slices.Clone(v.Maximize.Options), nil)
	f.at.SetSelected(v.Maximize.Selected)
	f.atForm = widget.NewForm(widget.NewFormItem("at (TEST@DEPTH)", f.at))
	f.op, f.tol = comparisonFields()
	f.thanCand = widget.NewSelect(cands, nil)
	if len(cands) > 1 {
		f.thanCand.SetSelected(cands[1])
	}
	f.thanAt = widget.NewSelect(slices.Clone(v.Maximize.Options), nil)
	f.thanAt.SetSelected(v.Maximize.Selected)
	f.thanForm = widget.NewForm(widget.NewFormItem("than at (TEST@DEPTH)", f.thanAt))
	f.kind, f.lo, f.hi, f.kinds = bandOrQuestion(widget.NewFormItem("Comparison", f.op), widget.NewFormItem("than candidate", f.thanCand),
		widget.NewFormItem("tolerance %", f.tol))
	for _, fig := range quant.Figures {
		f.figureNames = append(f.figureNames, string(fig))
	}
	f.figure = widget.NewSelect(f.figureNames, func(s string) { f.showAt() })
	f.figure.SetSelected(string(quant.FigureKLDMean))
	common := widget.NewForm(widget.NewFormItem("Kind", f.kind), widget.NewFormItem("Claim", f.text),
		widget.NewFormItem("About: figure", f.figure), widget.NewFormItem("candidate", f.cand))
	kindChanged := f.kind.OnChanged
	f.kind.OnChanged = func(s string) { kindChanged(s); f.showAt() }
	f.content = container.NewVBox(common, f.atForm, f.kinds.box, f.thanForm)
	f.showAt()
	return f
}

// showAt shows the TEST@DEPTH choices of a speed figure: the left-hand one, and the
// right-hand one of a comparison.
func (f *quantPredictionForm) showAt() {
	speed := f.figure != nil && f.figure.Selected == string(quant.FigureSpeed)
	setVisible(f.atForm, speed)
	setVisible(f.thanForm, speed && f.kind.Selected == string(study.KindComparison))
}

func (f *quantPredictionForm) build() (quant.Prediction, error) {
	p, err := buildQuantPrediction(f.kind.Selected, f.text.Text, f.figure.Selected, f.cand.Selected, f.at.Selected, f.lo.Text, f.hi.Text)
	if err != nil || p.Kind != study.KindComparison {
		return p, err
	}
	return quantComparison(p, f.op.Selected, f.thanCand.Selected, f.thanAt.Selected, f.tol.Text)
}

// quantComparison makes p a comparison of its figure against the same figure of candidate cand
// (for speed at TEST@DEPTH at, that of p when empty): op, and the tolerance in percent.
func quantComparison(p quant.Prediction, op, cand, at, tol string) (quant.Prediction, error) {
	p.Op = op
	than := p.About
	than.Candidate = cand
	if than.Figure == quant.FigureSpeed && at != "" {
		than.At = at
	}
	p.Than = &than
	var err error
	p.Tolerance, err = tolerancePercent(tol)
	return p, err
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
