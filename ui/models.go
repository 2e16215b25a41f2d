package ui

import (
	"fmt"
	"path/filepath"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
)

// ModelsView lists the GGUF files the doctor found, with their header metadata.
type ModelsView struct {
	Object fyne.CanvasObject
	Table  *widget.Table
	Count  *widget.Label
	rows   []app.ModelEntry
}

var modelColumns = []struct {
	title string
	width float32
	cell  func(m app.ModelEntry) string
}{
	{"File", 220, func(m app.ModelEntry) string { return filepath.Base(m.Path) }},
	{"Architecture", 110, func(m app.ModelEntry) string { return m.Architecture }},
	{"Params", 80, func(m app.ModelEntry) string { return app.HumanCount(m.Params) }},
	{"Type", 90, func(m app.ModelEntry) string { return m.FileType }},
	{"Context", 70, func(m app.ModelEntry) string { return fmt.Sprint(m.Context) }},
	{"Experts", 80, func(m app.ModelEntry) string {
		if m.Experts == 0 {
			return "—"
		}
		return fmt.Sprintf("%d (%d used)", m.Experts, m.ExpertsUsed)
	}},
	{"Size", 90, func(m app.ModelEntry) string { return app.HumanBytes(m.Size) }},
	{"Status", 260, func(m app.ModelEntry) string {
		if m.Err != "" {
			return "UNREADABLE: " + m.Err
		}
		return "header read"
	}},
}

func newModelsView() *ModelsView {
	v := &ModelsView{Count: widget.NewLabel("no models yet")}
	v.Table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.rows), len(modelColumns) },
		func() fyne.CanvasObject { return widget.NewLabel("") },
		func(id widget.TableCellID, o fyne.CanvasObject) {
			o.(*widget.Label).SetText(modelColumns[id.Col].cell(v.rows[id.Row]))
		})
	v.Table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	v.Table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		if id.Row < 0 {
			l.SetText(modelColumns[id.Col].title)
			l.TextStyle.Bold = true
		} else {
			l.SetText(fmt.Sprint(id.Row + 1))
		}
	}
	for i, c := range modelColumns {
		v.Table.SetColumnWidth(i, c.width)
	}
	v.Object = container.NewBorder(container.NewHBox(heading("Models"), v.Count), nil, nil, nil, v.Table)
	return v
}

// show replaces the rows. It runs on the UI goroutine.
func (v *ModelsView) show(models []app.ModelEntry) {
	v.rows = models
	v.Count.SetText(fmt.Sprintf("%d GGUF file(s)", len(models)))
	v.Table.Refresh()
}
