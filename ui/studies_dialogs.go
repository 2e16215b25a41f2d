package ui

import (
	"context"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
)

// RecordHuman records a human verdict for the shown study and reloads it.
func (v *StudiesView) RecordHuman(h study.HumanVerdict, done func(error)) {
	id := v.selected
	go func() {
		err := v.svc.HumanVerdict(context.Background(), id, h)
		onUI(func() {
			done(err)
			if err == nil {
				v.Select(id)
			}
		})
	}()
}

// RecordFinding adds a finding to the shown study and reloads it.
func (v *StudiesView) RecordFinding(f study.FindingRequest, done func(string, error)) {
	id := v.selected
	go func() {
		label, err := v.svc.AddFinding(context.Background(), id, f)
		onUI(func() {
			done(label, err)
			if err == nil {
				v.Select(id)
			}
		})
	}()
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (v *StudiesView) humanDialog() {
	if v.report == nil || len(v.report.Scoreboard) == 0 {
		dialog.ShowInformation("Human verdict", "This study has no prediction to judge.", v.win)
		return
	}
	humanVerdictDialog(v.win, v.report.Scoreboard, v.RecordHuman)
}

func (v *StudiesView) findingDialog() {
	addFindingDialog(v.win, v.RecordFinding)
}

// humanVerdictDialog asks for a human verdict (PASS, FAIL or NOTE) on one of the predictions,
// with its rationale, and records it; an error is shown in a dialog.
func humanVerdictDialog(win fyne.Window, board []study.ReportScore, record func(study.HumanVerdict, func(error))) {
	var ids []string
	for _, s := range board {
		ids = append(ids, s.Prediction)
	}
	pred := widget.NewSelect(ids, nil)
	pred.SetSelected(ids[0])
	outcome := widget.NewRadioGroup([]string{"PASS", "FAIL", "NOTE"}, nil)
	outcome.SetSelected("PASS")
	why := widget.NewMultiLineEntry()
	why.SetPlaceHolder("the rationale: what the evidence shows and why this verdict")
	dialog.ShowForm("Human verdict", "Record", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Prediction", pred), widget.NewFormItem("Verdict", outcome), widget.NewFormItem("Rationale", why),
	}, func(ok bool) {
		if !ok {
			return
		}
		record(study.HumanVerdict{Prediction: pred.Selected, Outcome: outcome.Selected, Rationale: why.Text}, func(err error) {
			if err != nil {
				dialog.ShowError(err, win)
			}
		})
	}, win)
}

// addFindingDialog asks for a finding with the legs and predictions it rests on, and records
// it (numbered F1, F2, …); the number or the error is shown in a dialog.
func addFindingDialog(win fyne.Window, record func(study.FindingRequest, func(string, error))) {
	text := widget.NewMultiLineEntry()
	text.SetPlaceHolder("what was found")
	legs := widget.NewEntry()
	legs.SetPlaceHolder("legs it rests on, e.g. tiny/d128, moe/d0")
	preds := widget.NewEntry()
	preds.SetPlaceHolder("predictions it bears on, e.g. P1, P3")
	dialog.ShowForm("Add a finding", "Record", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Finding", text), widget.NewFormItem("Legs", legs), widget.NewFormItem("Predictions", preds),
	}, func(ok bool) {
		if !ok {
			return
		}
		record(study.FindingRequest{Text: text.Text, Legs: splitList(legs.Text), Predictions: splitList(preds.Text)}, func(label string, err error) {
			if err != nil {
				dialog.ShowError(err, win)
				return
			}
			dialog.ShowInformation("Finding recorded", label+" is in the notebook's journal.", win)
		})
	}, win)
}

// showOneAtATime says why a second study does not start while one runs.
func showOneAtATime(win fyne.Window) {
	dialog.ShowInformation("Another study is running", "One study runs at a time (they would compete for the machine). Abort it or wait for it to finish, then run this one.", win)
}
