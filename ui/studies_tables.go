package ui

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
	"sparkbench/app/study"
)

// reportRows is a table's row count over the report a view shows (none before it is loaded).
func reportRows(report **study.Report, n func(*study.Report) int) func() int {
	return func() int {
		if *report == nil {
			return 0
		}
		return n(*report)
	}
}

type column struct {
	title string
	width float32
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

func (v *StudiesView) scoreCell(r, c int) string {
	s := v.report.Scoreboard[r]
	switch c {
	case 0:
		return s.Prediction
	case 1:
		return s.Text
	case 2:
		return s.Expected
	case 3:
		w := s.Word
		if len(s.Deviations) > 0 {
			w += " (DEVIATION recorded)"
		}
		return w
	case 4:
		if s.Human != nil {
			return s.Human.Outcome
		}
		return ""
	}
	return ""
}

func (v *StudiesView) resultCell(r, c int) string {
	x := v.report.Results[r]
	switch c {
	case 0:
		return x.Model
	case 1:
		return x.Test
	case 2:
		return fmt.Sprint(x.Depth)
	case 3:
		return fmt.Sprintf("%.2f", x.Mean)
	case 4:
		return fmt.Sprintf("%.2f", x.SD)
	case 5:
		return fmt.Sprintf("%.1f%%", x.CV*100)
	case 6:
		return fmt.Sprint(x.Reps)
	case 7:
		return x.Leg
	case 8:
		return x.Source
	}
	return ""
}

func (v *StudiesView) legCell(r, c int) string {
	l := v.report.Legs[r]
	switch c {
	case 0:
		return l.Label
	case 1:
		return l.State
	case 2:
		return l.Class
	case 3:
		return fmt.Sprint(l.Rows)
	case 4:
		return fmt.Sprint(l.Results)
	case 5:
		if l.Duration > 0 {
			return l.Duration.Round(time.Millisecond).String()
		}
		return ""
	case 6:
		return l.Reason
	}
	return ""
}
