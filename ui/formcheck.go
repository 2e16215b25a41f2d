package ui

import (
	"fmt"
	"strings"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
)

// formCheck is how both New study forms check themselves as the user types: each check runs
// off the UI goroutine and only the newest one's result reaches the form; validated is
// signalled after each result shown (tests wait on it). mu also guards what a form's check
// shares with it (the wizard's device listing).
type formCheck struct {
	validated chan struct{}
	mu        sync.Mutex
	gen       int // the newest check's number
}

func newFormCheck() formCheck { return formCheck{validated: make(chan struct{}, 16)} }

// check starts check number gen: work runs in the background and returns what to show, which
// runs on the UI goroutine only if no newer check has started meanwhile.
func (c *formCheck) check(work func(gen int) (show func())) {
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.mu.Unlock()
	go func() {
		show := work(gen)
		onUI(func() {
			c.mu.Lock()
			latest := gen == c.gen
			c.mu.Unlock()
			if !latest {
				return
			}
			show()
			select {
			case c.validated <- struct{}{}:
			default:
			}
		})
	}()
}

// addPrediction appends p to *preds with the first free ID (P1, P2, …; id points at p's ID
// field), then refreshes the form's list and checks the form again.
func addPrediction[T any](preds *[]T, p T, id func(*T) *string, list *widget.List, recheck func()) {
	ids := make([]string, len(*preds))
	for i := range *preds {
		ids[i] = *id(&(*preds)[i])
	}
	*id(&p) = nextPredictionID(ids)
	*preds = append(*preds, p)
	list.Refresh()
	recheck()
}

// problemLines are a plan's problems as the form lists them, leaving out the files not hashed
// yet (Register hashes them and fills them in); ok is false when one is an error.
func problemLines(probs []study.Problem) (lines []string, ok bool) {
	ok = true
	for _, pr := range probs {
		if pr.Code == study.ProblemUnhashed {
			continue
		}
		lines = append(lines, pr.String())
		if pr.Severity == study.SevError {
			ok = false
		}
	}
	return lines, ok
}

// refusalLines are the error-level problems but the files not hashed yet (Register fills
// those in): what would stop a plan from registering.
func refusalLines(probs []study.Problem) []string {
	var out []string
	for _, pr := range probs {
		if pr.Severity == study.SevError && pr.Code != study.ProblemUnhashed {
			out = append(out, pr.String())
		}
	}
	return out
}

// showErrorLines shows a form's parse errors in one error dialog, a line each.
func showErrorLines(win fyne.Window, errs []string) {
	dialog.ShowError(fmt.Errorf("%s", strings.Join(errs, "\n")), win)
}

// errAdder is how a form's Plan collects the fields that do not parse: the function it returns
// appends a non-nil error's text to *errs.
func errAdder(errs *[]string) func(error) {
	return func(err error) {
		if err != nil {
			*errs = append(*errs, err.Error())
		}
	}
}

// claimFields are the first fields of an Add a prediction form: the claim in words, and the
// choice of what it is about among ids (the first one chosen).
func claimFields(ids []string) (*widget.Entry, *widget.Select) {
	text := widget.NewEntry()
	text.SetPlaceHolder("the claim in words")
	about := widget.NewSelect(ids, nil)
	if len(ids) > 0 {
		about.SetSelected(ids[0])
	}
	return text, about
}

// bandOrQuestion are the kind fields of an Add a prediction dialog that offers a band or a
// question (and a comparison, when its fields are given): the kind's choice (band first) and
// the band's bounds, shown only for a band, the comparison's only for a comparison.
func bandOrQuestion(comparison ...*widget.FormItem) (kind *widget.Select, lo, hi *widget.Entry, kinds *switchedForm) {
	lo, hi = widget.NewEntry(), widget.NewEntry()
	lo.SetPlaceHolder("lower bound (empty: open)")
	hi.SetPlaceHolder("upper bound (empty: open)")
	parts := map[string][]*widget.FormItem{
		"band":     {widget.NewFormItem("Band lo", lo), widget.NewFormItem("Band hi", hi)},
		"question": nil,
	}
	names := []string{"band", "question"}
	if len(comparison) > 0 {
		parts["comparison"] = comparison
		names = []string{"band", "comparison", "question"}
	}
	kinds = newSwitchedForm(parts)
	kind = widget.NewSelect(names, kinds.show)
	kind.SetSelected("band")
	return kind, lo, hi, kinds
}

// comparisonFields are a comparison's operator (>=, <=, within; >= chosen) and its tolerance
// in percent (0 written in), as the Add a prediction dialogs offer them.
func comparisonFields() (op *widget.Select, tol *widget.Entry) {
	op = widget.NewSelect([]string{">=", "<=", "within"}, nil)
	op.SetSelected(">=")
	tol = widget.NewEntry()
	tol.SetText("0")
	return op, tol
}

// tolerancePercent is a comparison's tolerance written in percent, as a fraction (empty: 0).
func tolerancePercent(tol string) (float64, error) {
	t, err := optFloat("tolerance", tol)
	if err != nil || t == nil {
		return 0, err
	}
	return *t / 100, nil
}

// studyFormPage lays out a New study form: the top row (heading and buttons), the form's
// sections, the predictions (the list under its Add and Remove buttons, predsHeight tall; none
// when list is nil), then the checks (estimate and problems), scrolling as one page.
func studyFormPage(top fyne.CanvasObject, sections []fyne.CanvasObject, add, remove *widget.Button, list *widget.List, predsHeight float32, estimate fyne.CanvasObject, problems *widget.Label) fyne.CanvasObject {
	objs := append([]fyne.CanvasObject{top}, sections...)
	if list != nil {
		preds := container.NewBorder(container.NewHBox(heading("Predictions (registered before anything runs)"), add, remove), nil, nil, nil, list)
		objs = append(objs, container.NewGridWrap(fyne.NewSize(900, predsHeight), preds))
	}
	objs = append(objs, heading("Checks"), estimate, problems)
	return container.NewVScroll(container.NewVBox(objs...))
}

// idsOf are the IDs of a plan's models or candidates, in order.
func idsOf[T any](xs []T, id func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

// checkedEntry is a form's text field: its text, its hint, and the form's check run on every
// change.
func checkedEntry(text, hint string, check func()) *widget.Entry {
	e := widget.NewEntry()
	e.SetText(text)
	e.SetPlaceHolder(hint)
	e.OnChanged = func(string) { check() }
	return e
}
