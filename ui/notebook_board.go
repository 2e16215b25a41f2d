package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
)

// The Notebook section's "Predictions & findings" tab: for the study chosen in the study
// filter, its prediction scoreboard (computed verdict, human verdict and its rationale), its
// findings (F-numbers with the legs and predictions they rest on), and the Human verdict… and
// Add finding… dialogs, which record through the same calls as the Studies section.

// SetStudies gives the Notebook section the studies it shows scoreboards and findings of.
func (v *NotebookView) SetStudies(svc StudyService) {
	v.studies = svc
	v.loadBoard()
}

func (v *NotebookView) buildBoard() fyne.CanvasObject {
	v.BoardNote = widget.NewLabel("")
	v.BoardNote.Wrapping = fyne.TextWrapWord
	v.Board = newItemTable(boardCols, v.board)
	v.FindingsTable = newItemTable(findingCols, v.findings)
	v.HumanBt = widget.NewButton("Human verdict…", func() {
		if v.report != nil && len(v.report.Scoreboard) > 0 {
			humanVerdictDialog(v.win, v.report.Scoreboard, v.recordHuman)
		}
	})
	v.FindingBt = widget.NewButton("Add finding…", func() {
		if v.report != nil {
			addFindingDialog(v.win, v.recordFinding)
		}
	})
	v.HumanBt.Disable()
	v.FindingBt.Disable()
	split := container.NewVSplit(v.Board, container.NewBorder(heading("Findings"), nil, nil, nil, v.FindingsTable))
	split.Offset = 0.55
	return container.NewBorder(container.NewVBox(container.NewHBox(v.HumanBt, v.FindingBt), v.BoardNote), nil, nil, nil, split)
}

// boardStudy is the study the study filter names, or 0.
func (v *NotebookView) boardStudy() int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(v.Study.Selected, "study "), 10, 64)
	if err != nil || !strings.HasPrefix(v.Study.Selected, "study ") {
		return 0
	}
	return n
}

// loadBoard shows the scoreboard and findings of the study the filter names (the latest load
// wins when loads finish out of order).
func (v *NotebookView) loadBoard() {
	if v.Board == nil {
		return
	}
	v.boardGen++
	gen := v.boardGen
	id := v.boardStudy()
	if id == 0 || v.studies == nil {
		v.report = nil
		if v.studies == nil {
			v.BoardNote.SetText("studies are unavailable: the notebook is not open (see the Bench section)")
		} else {
			v.BoardNote.SetText("choose a study in the study filter above to see its predictions, verdicts and findings")
		}
		v.refreshBoard()
		return
	}
	v.BoardNote.SetText(fmt.Sprintf("study %d: loading…", id))
	svc := v.studies
	go func() {
		rep, err := svc.Show(context.Background(), id)
		onUI(func() {
			if gen != v.boardGen {
				return
			}
			if err != nil {
				v.report = nil
				v.BoardNote.SetText(fmt.Sprintf("study %d: %v (the verdicts of capacity and concurrency studies are in the Studies section)", id, err))
			} else {
				v.report = rep
				v.BoardNote.SetText(fmt.Sprintf("study %d, %s: %d prediction(s), %d finding(s)", id, rep.Study.Name, len(rep.Scoreboard), len(rep.Findings)))
			}
			v.refreshBoard()
			v.signal()
		})
	}()
}

func (v *NotebookView) refreshBoard() {
	setEnabled(v.HumanBt, v.report != nil && len(v.report.Scoreboard) > 0)
	setEnabled(v.FindingBt, v.report != nil)
	v.Board.Refresh()
	v.FindingsTable.Refresh()
}

func (v *NotebookView) recordHuman(h study.HumanVerdict, done func(error)) {
	id, svc := v.boardStudy(), v.studies
	go func() {
		err := svc.HumanVerdict(context.Background(), id, h)
		onUI(func() {
			done(err)
			v.loadBoard()
			v.Reload()
		})
	}()
}

func (v *NotebookView) recordFinding(f study.FindingRequest, done func(string, error)) {
	id, svc := v.boardStudy(), v.studies
	go func() {
		label, err := svc.AddFinding(context.Background(), id, f)
		onUI(func() {
			done(label, err)
			v.loadBoard()
			v.Reload()
		})
	}()
}

var boardCols = []col[study.ReportScore]{
	{"Prediction", 80, func(s study.ReportScore) string { return s.Prediction }},
	{"Claim", 260, func(s study.ReportScore) string { return s.Text }},
	{"Verdict", 170, func(s study.ReportScore) string { return s.Word }},
	{"Human", 70, humanOutcome},
	{"Rationale", 300, func(s study.ReportScore) string {
		if s.Human == nil {
			return ""
		}
		return s.Human.Rationale
	}},
}

var findingCols = []col[study.ReportFinding]{
	{"Finding", 70, func(f study.ReportFinding) string { return f.Label }},
	{"Text", 420, func(f study.ReportFinding) string { return f.Text }},
	{"Legs", 200, func(f study.ReportFinding) string { return strings.Join(f.Legs, ", ") }},
	{"Predictions", 120, func(f study.ReportFinding) string { return strings.Join(f.Predictions, ", ") }},
}

func (v *NotebookView) board() []study.ReportScore {
	return reportItems(&v.report, func(r *study.Report) []study.ReportScore { return r.Scoreboard })()
}

func (v *NotebookView) findings() []study.ReportFinding {
	return reportItems(&v.report, func(r *study.Report) []study.ReportFinding { return r.Findings })()
}

func (v *NotebookView) boardCell(r, c int) string   { return cellText(boardCols, v.board(), r, c) }
func (v *NotebookView) findingCell(r, c int) string { return cellText(findingCols, v.findings(), r, c) }
