package ui

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// The Studies section's list: every study's full name (wrapped, never cut), a state badge (a
// coloured dot and the status word), its kind and counts; a filter and a sort order above it.

// Sort orders of the studies list.
const (
	SortNewest = "newest first"
	SortOldest = "oldest first"
	SortName   = "name"
	SortStatus = "status"
)

var studySorts = []string{SortNewest, SortOldest, SortName, SortStatus}

// statusColours are the badge colours (Okabe & Ito); the status word is always written too.
var statusColours = map[string]color.NRGBA{
	"complete":   {0x00, 0x9E, 0x73, 0xFF}, // bluish green
	"running":    {0x00, 0x72, 0xB2, 0xFF}, // blue
	"incomplete": {0xE6, 0x9F, 0x00, 0xFF}, // orange
	"halted":     {0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	"imported":   {0x56, 0xB4, 0xE9, 0xFF}, // sky blue
}

func statusColour(s string) color.NRGBA {
	if c, ok := statusColours[s]; ok {
		return c
	}
	return color.NRGBA{0x99, 0x99, 0x99, 0xFF} // registered, unknown
}

// studyRowHeight leaves room for a name of three lines and the badge line.
const studyRowHeight = 86

// newStudyList is the list of the shown studies (read through rows at each draw).
func newStudyList(rows func() []StudySummary) *widget.List {
	return widget.NewList(func() int { return len(rows()) },
		func() fyne.CanvasObject {
			name := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
			name.Wrapping = fyne.TextWrapWord
			dot := canvas.NewCircle(color.Transparent)
			badge := widget.NewLabel("")
			spacer := canvas.NewRectangle(color.Transparent)
			spacer.SetMinSize(fyne.NewSize(10, studyRowHeight))
			line := container.NewBorder(nil, nil, container.NewGridWrap(fyne.NewSize(12, 12), dot), nil, badge)
			return container.NewStack(spacer, container.NewBorder(nil, line, nil, nil, name))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			s := rows()[i]
			stack := o.(*fyne.Container)
			body := stack.Objects[1].(*fyne.Container)
			var name *widget.Label
			var line *fyne.Container
			for _, x := range body.Objects {
				switch x := x.(type) {
				case *widget.Label:
					name = x
				case *fyne.Container:
					line = x
				}
			}
			name.SetText(fmt.Sprintf("%d · %s", s.ID, s.Name))
			for _, x := range line.Objects {
				switch x := x.(type) {
				case *widget.Label:
					x.SetText(studyBadge(s))
				case *fyne.Container:
					dot := x.Objects[0].(*canvas.Circle)
					dot.FillColor = statusColour(s.Status)
					dot.Refresh()
				}
			}
		})
}

// studyBadge is a study's second line: "complete · throughput · 6 legs · 3 predictions".
func studyBadge(s StudySummary) string {
	return fmt.Sprintf("%s · %s · %d legs · %d predictions", s.Status, s.Kind, s.Legs, s.Predictions)
}

// filterStudies keeps the studies whose ID, name, kind or status hold every word of q (any
// case), in the order sortBy names.
func filterStudies(list []StudySummary, q, sortBy string) []StudySummary {
	words := strings.Fields(strings.ToLower(q))
	var out []StudySummary
	for _, s := range list {
		if matchAll(words, strings.ToLower(fmt.Sprintf("%d %s %s %s", s.ID, s.Name, s.Kind, s.Status))) {
			out = append(out, s)
		}
	}
	cmpID := func(a, b StudySummary) int { return int(b.ID - a.ID) }
	switch sortBy {
	case SortOldest:
		slices.SortStableFunc(out, func(a, b StudySummary) int { return int(a.ID - b.ID) })
	case SortName:
		slices.SortStableFunc(out, func(a, b StudySummary) int {
			if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
				return c
			}
			return cmpID(a, b)
		})
	case SortStatus:
		slices.SortStableFunc(out, func(a, b StudySummary) int {
			if c := strings.Compare(a.Status, b.Status); c != 0 {
				return c
			}
			return cmpID(a, b)
		})
	default:
		slices.SortStableFunc(out, cmpID)
	}
	return out
}

// applyList shows the studies the filter keeps, in the chosen order, the shown study
// selected when it is among them.
func (v *StudiesView) applyList() {
	if v.ListFilter == nil || v.Sort == nil || v.ListCount == nil {
		return // still being built
	}
	v.shown = filterStudies(v.studies, v.ListFilter.Text, v.Sort.Selected)
	v.List.UnselectAll()
	v.List.Refresh()
	if i := v.shownIndex(v.selected); i >= 0 {
		v.List.Select(i)
	}
	v.ListCount.SetText(fmt.Sprintf("%d of %d studies", len(v.shown), len(v.studies)))
}

// shownIndex is the list row of study id, or -1.
func (v *StudiesView) shownIndex(id int64) int {
	for i, s := range v.shown {
		if s.ID == id {
			return i
		}
	}
	return -1
}

// listPane is the left pane: heading, filter, sort, the list and Refresh.
func (v *StudiesView) listPane() fyne.CanvasObject {
	v.ListCount = widget.NewLabel("")
	v.ListFilter = widget.NewEntry()
	v.ListFilter.SetPlaceHolder("filter: name, id, kind, status")
	v.ListFilter.OnChanged = func(string) { v.applyList() }
	v.Sort = widget.NewSelect(studySorts, func(string) { v.applyList() })
	v.Sort.SetSelected(SortNewest)
	top := container.NewVBox(container.NewHBox(heading("Studies"), v.ListCount), v.ListFilter, v.Sort)
	return container.NewBorder(top, widget.NewButton("Refresh", func() { v.Reload(0) }), nil, nil, v.List)
}
