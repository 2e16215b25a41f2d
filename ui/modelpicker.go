package ui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
)

// ModelPicker is a New study form's model table: a row per model the form offers (its check
// group's options) with the GGUF facts the Models section reads (architecture, parameters,
// file type, size, experts) and its SHA-256 state from the model library, a search box that
// filters the rows, and a pick column. Clicking a row picks or unpicks its model in the check
// group, which stays the form's selection (in the order picked), so a plan picked in the table
// is the plan picked by path.
type ModelPicker struct {
	Object fyne.CanvasObject
	Search *widget.Entry
	Table  *widget.Table
	Count  *widget.Label

	picks  *widget.CheckGroup
	models func() []app.ModelEntry
	lib    app.ModelLibrary

	facts  map[string]app.ModelEntry  // by path, from the Models section
	status map[string]app.ModelStatus // by path, from the library
	rows   []app.ModelEntry           // the options the search lets through, in order
	// loaded receives after each background read of the library's hash states (tests wait on it).
	loaded chan struct{}
}

// pickerColumns are the table's columns after the pick mark: the file, the header facts,
// the SHA-256 state.
var pickerColumns = slices.Concat([]modelFact{{"File", 220, func(m app.ModelEntry) string { return filepath.Base(m.Path) }}},
	pickerFacts(), []modelFact{{"SHA-256", 260, nil}})

// pickerFacts are the header facts the table shows (all but the context length).
func pickerFacts() []modelFact {
	var out []modelFact
	for _, f := range modelFacts {
		if f.title != "Context" {
			out = append(out, f)
		}
	}
	return out
}

func newModelPicker(picks *widget.CheckGroup, models func() []app.ModelEntry, lib app.ModelLibrary) *ModelPicker {
	p := &ModelPicker{picks: picks, models: models, lib: lib, facts: map[string]app.ModelEntry{},
		status: map[string]app.ModelStatus{}, loaded: make(chan struct{}, 16)}
	p.Search = widget.NewEntry()
	p.Search.SetPlaceHolder("search: file, architecture, type, parameters…")
	p.Search.OnChanged = func(string) { p.filter() }
	p.Count = widget.NewLabel("")
	p.Table = widget.NewTableWithHeaders(
		func() (int, int) { return len(p.rows), len(pickerColumns) + 1 },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(p.Cell(id.Row, id.Col)) })
	p.Table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	p.Table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		switch {
		case id.Row >= 0:
			l.SetText("")
		case id.Col == 0:
			l.SetText("Pick")
		default:
			l.SetText(pickerColumns[id.Col-1].title)
		}
		l.TextStyle.Bold = true
	}
	p.Table.ShowHeaderColumn = false
	p.Table.SetColumnWidth(0, 50)
	for i, c := range pickerColumns {
		p.Table.SetColumnWidth(i+1, c.width)
	}
	p.Table.OnSelected = func(id widget.TableCellID) {
		p.Toggle(id.Row)
		p.Table.UnselectAll()
	}
	if prev := picks.OnChanged; prev != nil {
		picks.OnChanged = func(s []string) { prev(s); p.Table.Refresh() }
	}
	top := container.NewBorder(nil, nil, nil, p.Count, p.Search)
	p.Object = container.NewBorder(top, nil, nil, nil, container.NewGridWrap(fyne.NewSize(900, 180), p.Table))
	return p
}

// Cell is the text of a visible row's column (0: the pick mark, then pickerColumns).
func (p *ModelPicker) Cell(row, col int) string {
	m := p.rows[row]
	if col == 0 {
		if slices.Contains(p.picks.Selected, m.Path) {
			return "✓"
		}
		return ""
	}
	c := pickerColumns[col-1]
	if _, read := p.facts[m.Path]; !read && c.title != "File" {
		return "—" // a model only an opened plan names: the Models section has not read it
	}
	if c.cell != nil {
		return c.cell(m)
	}
	st, known := p.status[m.Path]
	return hashStateText(m, st, known, false)
}

// Rows are the paths of the visible rows, in order.
func (p *ModelPicker) Rows() []string {
	out := make([]string, len(p.rows))
	for i, m := range p.rows {
		out[i] = m.Path
	}
	return out
}

// Toggle picks the model of visible row i, or unpicks it when it is picked.
func (p *ModelPicker) Toggle(i int) {
	if i < 0 || i >= len(p.rows) {
		return
	}
	path := p.rows[i].Path
	sel := slices.Clone(p.picks.Selected)
	if j := slices.Index(sel, path); j >= 0 {
		sel = slices.Delete(sel, j, j+1)
	} else {
		sel = append(sel, path)
	}
	p.picks.SetSelected(sel)
	p.Table.Refresh()
}

// Refresh reads the facts of the offered models again and their SHA-256 states in the
// background (the library touches the notebook). UI goroutine.
func (p *ModelPicker) Refresh() {
	p.facts = map[string]app.ModelEntry{}
	if p.models != nil {
		for _, m := range p.models() {
			p.facts[m.Path] = m
		}
	}
	p.filter()
	if p.lib == nil {
		return
	}
	paths := slices.Clone(p.picks.Options)
	go func() {
		got := readStatuses(p.lib, paths)
		onUI(func() {
			for path, st := range got {
				p.status[path] = st
			}
			p.Table.Refresh()
			select {
			case p.loaded <- struct{}{}:
			default:
			}
		})
	}()
}

// filter shows the offered models whose file, facts or SHA-256 state hold every word of the
// search (any case).
func (p *ModelPicker) filter() {
	words := strings.Fields(strings.ToLower(p.Search.Text))
	p.rows = p.rows[:0]
	for _, path := range p.picks.Options {
		m, ok := p.facts[path]
		if !ok {
			m = app.ModelEntry{Path: path}
		}
		p.rows = append(p.rows, m)
		if !p.matches(len(p.rows)-1, words) {
			p.rows = p.rows[:len(p.rows)-1]
		}
	}
	p.Count.SetText(fmt.Sprintf("%d of %d models", len(p.rows), len(p.picks.Options)))
	p.Table.Refresh()
}

func (p *ModelPicker) matches(row int, words []string) bool {
	var b strings.Builder
	b.WriteString(strings.ToLower(p.rows[row].Path))
	for col := 1; col <= len(pickerColumns); col++ {
		b.WriteString(" " + strings.ToLower(p.Cell(row, col)))
	}
	text := b.String()
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}
