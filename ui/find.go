package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// Find in the notebook (Ctrl+F): every study's name, and the journal's entries — predictions,
// verdicts, findings, legs, every other entry — by their sentence and payload. A hit on a study
// opens it in the Studies section; a hit on an entry shows it, expanded, in the Notebook's
// timeline.

// FindHit is one match.
type FindHit struct {
	What    string // "study", or the entry's tone (leg, prediction, verdict, finding, …)
	StudyID int64
	Seq     int64 // the journal entry (0 for a study hit)
	Text    string
}

// maxHits bounds the hits listed (the count says how many there were).
const maxHits = 500

// matchAll says whether every word of the query appears in text (both lower case).
func matchAll(words []string, text string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// findHits searches studies and journal rows for every word of q (any case); studies first,
// then entries newest first. It returns at most maxHits hits and the total.
func findHits(q string, studies []StudySummary, rows []JournalRow) ([]FindHit, int) {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return nil, 0
	}
	var hits []FindHit
	total := 0
	add := func(h FindHit) {
		total++
		if len(hits) < maxHits {
			hits = append(hits, h)
		}
	}
	for _, s := range studies {
		if matchAll(words, strings.ToLower(fmt.Sprintf("study %d %s %s %s", s.ID, s.Name, s.Kind, s.Status))) {
			add(FindHit{What: "study", StudyID: s.ID, Text: fmt.Sprintf("%s (%s, %s)", s.Name, s.Kind, s.Status)})
		}
	}
	for _, r := range rows {
		if matchAll(words, strings.ToLower(r.Kind+" "+r.text()+" "+r.Payload)) {
			what := r.Tone
			if what == "" {
				what = r.Kind
			}
			add(FindHit{What: what, StudyID: r.StudyID, Seq: r.Seq, Text: r.text()})
		}
	}
	return hits, total
}

// FindView is the Find dialog's content: the query, the hits and what they are.
type FindView struct {
	Object  fyne.CanvasObject
	Query   *widget.Entry
	Results *widget.List
	Status  *widget.Label
	Hits    []FindHit

	studies func() []StudySummary
	rows    func() []JournalRow
	jump    func(FindHit)
	dlg     dialog.Dialog
}

func newFindView(studies func() []StudySummary, rows func() []JournalRow, jump func(FindHit)) *FindView {
	f := &FindView{Query: widget.NewEntry(), Status: widget.NewLabel(""), studies: studies, rows: rows, jump: jump}
	f.Status.Wrapping = fyne.TextWrapWord
	f.Query.SetPlaceHolder("find in every study: names, predictions, findings, legs, journal")
	f.Query.OnChanged = f.Search
	f.Query.OnSubmitted = func(string) {
		if len(f.Hits) > 0 {
			f.Jump(0)
		}
	}
	f.Results = widget.NewList(func() int { return len(f.Hits) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			h := f.Hits[i]
			where := fmt.Sprintf("study %d", h.StudyID)
			if h.StudyID == 0 {
				where = "no study"
			}
			if h.Seq != 0 {
				where += fmt.Sprintf(", entry #%d", h.Seq)
			}
			o.(*widget.Label).SetText(fmt.Sprintf("%-10s %s — %s", h.What, where, h.Text))
		})
	f.Results.OnSelected = func(i widget.ListItemID) { f.Jump(i) }
	f.Object = container.NewBorder(container.NewVBox(f.Query, f.Status), nil, nil, nil, f.Results)
	return f
}

// Search lists the hits of q and says how many there are, or that there are none and where
// it looked.
func (f *FindView) Search(q string) {
	studies, rows := f.studies(), f.rows()
	hits, total := findHits(q, studies, rows)
	f.Hits = hits
	f.Results.UnselectAll()
	f.Results.Refresh()
	switch {
	case strings.TrimSpace(q) == "":
		f.Status.SetText(fmt.Sprintf("type to search %d studies and %d journal entries", len(studies), len(rows)))
	case total == 0:
		f.Status.SetText(fmt.Sprintf("no hits for %q in %d studies and %d journal entries (every word must appear, in any case; names, predictions, findings, legs and journal entries are searched)", strings.TrimSpace(q), len(studies), len(rows)))
	case total > len(hits):
		f.Status.SetText(fmt.Sprintf("%d hits, the first %d listed: add a word to narrow them; Enter or a click jumps to one", total, len(hits)))
	default:
		f.Status.SetText(fmt.Sprintf("%d hit(s): Enter or a click jumps to one", total))
	}
}

// Jump goes to hit i and closes the dialog.
func (f *FindView) Jump(i int) {
	if i < 0 || i >= len(f.Hits) {
		return
	}
	h := f.Hits[i]
	if f.dlg != nil {
		f.dlg.Hide()
	}
	f.jump(h)
}

// Show opens the Find dialog over win, focused on the query (its text kept, searched again on
// the data loaded now).
func (f *FindView) Show(win fyne.Window) {
	if f.dlg == nil {
		f.dlg = dialog.NewCustom("Find in the notebook", "Close", f.Object, win)
		f.dlg.Resize(fyne.NewSize(900, 520))
	}
	f.Search(f.Query.Text)
	f.dlg.Show()
	win.Canvas().Focus(f.Query)
}
