package ui

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
	"sparkbench/app/study"
)

// reportItems are the items of a report a view shows (none before it is loaded).
func reportItems[T any](report **study.Report, items func(*study.Report) []T) func() []T {
	return func() []T {
		if *report == nil {
			return nil
		}
		return items(*report)
	}
}

type column struct {
	title string
	width float32
}

// col is a column of a table of items: its title, its width and an item's text in it.
type col[T any] struct {
	title string
	width float32
	text  func(T) string
}

// cellText is item r's text in column c ("" outside the table).
func cellText[T any](cols []col[T], items []T, r, c int) string {
	if r < 0 || r >= len(items) || c < 0 || c >= len(cols) {
		return ""
	}
	return cols[c].text(items[r])
}

// newItemTable is a table of the items items() returns, one column per col.
func newItemTable[T any](cols []col[T], items func() []T) *widget.Table {
	heads := make([]column, len(cols))
	for i, c := range cols {
		heads[i] = column{c.title, c.width}
	}
	return newTable(heads, func() int { return len(items()) }, func(r, c int) string { return cellText(cols, items(), r, c) })
}

func newTable(cols []column, rows func() int, cell func(r, c int) string) *widget.Table {
	t := widget.NewTableWithHeaders(
		func() (int, int) { return rows(), len(cols) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(cell(id.Row, id.Col)) })
	t.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	t.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		if id.Row < 0 {
			l.SetText(cols[id.Col].title)
			l.TextStyle.Bold = true
		} else {
			l.SetText(fmt.Sprint(id.Row + 1))
		}
	}
	for i, c := range cols {
		t.SetColumnWidth(i, c.width)
	}
	return t
}

// humanOutcome is a prediction's human verdict ("" when none).
func humanOutcome(s study.ReportScore) string {
	if s.Human == nil {
		return ""
	}
	return s.Human.Outcome
}

var scoreCols = []col[study.ReportScore]{
	{"Prediction", 80, func(s study.ReportScore) string { return s.Prediction }},
	{"Claim", 300, func(s study.ReportScore) string { return s.Text }},
	{"Expected", 200, func(s study.ReportScore) string { return s.Expected }},
	{"Verdict", 200, func(s study.ReportScore) string {
		if len(s.Deviations) > 0 {
			return s.Word + " (DEVIATION recorded)"
		}
		return s.Word
	}},
	{"Human", 120, humanOutcome},
}

var resultCols = []col[study.ReportCell]{
	{"Model", 110, func(x study.ReportCell) string { return x.Model }},
	{"Test", 80, func(x study.ReportCell) string { return x.Test }},
	{"Depth", 70, func(x study.ReportCell) string { return fmt.Sprint(x.Depth) }},
	{"Mean t/s", 110, func(x study.ReportCell) string { return fmt.Sprintf("%.2f", x.Mean) }},
	{"± sd", 90, func(x study.ReportCell) string { return fmt.Sprintf("%.2f", x.SD) }},
	{"CV", 70, func(x study.ReportCell) string { return fmt.Sprintf("%.1f%%", x.CV*100) }},
	{"Reps", 50, func(x study.ReportCell) string { return fmt.Sprint(x.Reps) }},
	{"Processes", 90, processesText},
	{"95% CI over processes", 170, intervalText},
	{"Leg", 140, func(x study.ReportCell) string { return x.Leg }},
	{"Source", 150, func(x study.ReportCell) string { return x.Source }},
}

// processesText is a result cell's processes and repetitions: "n=6 m=3".
func processesText(x study.ReportCell) string {
	if x.Unit == nil {
		return "—"
	}
	return fmt.Sprintf("n=%d m=%s", x.Unit.N, x.Unit.M)
}

// intervalText is a result cell's interval over its processes, or why it has none.
func intervalText(x study.ReportCell) string {
	u := x.Unit
	switch h, ok := u.RelHalfWidth(); {
	case u == nil:
		return "—"
	case ok:
		return fmt.Sprintf("±%.2f%% [%.2f, %.2f]", h*100, *u.Lo, *u.Hi)
	case u.N == 1:
		return "none: one process"
	}
	return fmt.Sprintf("none: %d processes", u.N)
}

var legCols = []col[study.ReportLeg]{
	{"Leg", 170, func(l study.ReportLeg) string { return l.Label }},
	{"State", 90, func(l study.ReportLeg) string { return l.State }},
	{"Class", 90, func(l study.ReportLeg) string { return l.Class }},
	{"Rows", 60, func(l study.ReportLeg) string { return fmt.Sprint(l.Rows) }},
	{"Results", 70, func(l study.ReportLeg) string { return fmt.Sprint(l.Results) }},
	{"Duration", 90, func(l study.ReportLeg) string {
		if l.Duration > 0 {
			return l.Duration.Round(time.Millisecond).String()
		}
		return ""
	}},
	{"Reason", 360, func(l study.ReportLeg) string { return l.Reason }},
}

func (v *StudiesView) scores() []study.ReportScore {
	return reportItems(&v.report, func(r *study.Report) []study.ReportScore { return r.Scoreboard })()
}

func (v *StudiesView) results() []study.ReportCell {
	return reportItems(&v.report, func(r *study.Report) []study.ReportCell { return r.Results })()
}

func (v *StudiesView) legs() []study.ReportLeg {
	return reportItems(&v.report, func(r *study.Report) []study.ReportLeg { return r.Legs })()
}

func (v *StudiesView) scoreCell(r, c int) string  { return cellText(scoreCols, v.scores(), r, c) }
func (v *StudiesView) resultCell(r, c int) string { return cellText(resultCols, v.results(), r, c) }

// ResultCell is the text of the Results table's cell at row r (0: the first result), column
// c. For tests of the whole window.
func (v *StudiesView) ResultCell(r, c int) string { return v.resultCell(r, c) }

// ResultColumn is the index of the Results table's column with this header (-1: none).
func ResultColumn(header string) int {
	for i, c := range resultCols {
		if c.title == header {
			return i
		}
	}
	return -1
}
