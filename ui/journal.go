package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// The Notebook section's timeline: one sentence per entry, a colour swatch and the tone's word
// for its kind (the colour is never the only cue), and the selected entry expanded below with
// its JSON payload.

// toneColours are Okabe & Ito's colour-blind-safe colours (plots' palette), one per tone of
// workbench.JournalTone; readable on the dark and the light theme alike.
var toneColours = map[string]color.NRGBA{
	"leg":        {0x00, 0x72, 0xB2, 0xFF}, // blue
	"verdict":    {0x00, 0x9E, 0x73, 0xFF}, // bluish green
	"prediction": {0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	"finding":    {0xE6, 0x9F, 0x00, 0xFF}, // orange
	"warning":    {0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	"receipt":    {0x56, 0xB4, 0xE9, 0xFF}, // sky blue
}

// toneColour is the swatch colour of a tone (grey for study lifecycle and unknown kinds).
func toneColour(tone string) color.NRGBA {
	if c, ok := toneColours[tone]; ok {
		return c
	}
	return color.NRGBA{0x99, 0x99, 0x99, 0xFF}
}

// journalLine is the timeline's text of one row.
func journalLine(r JournalRow) string {
	study := "—"
	if r.StudyID != 0 {
		study = fmt.Sprintf("study %d", r.StudyID)
	}
	tone := r.Tone
	if tone == "" {
		tone = r.Kind
	}
	return fmt.Sprintf("#%d  %s  %-9s  %-10s  %s", r.Seq, r.At.Local().Format("2006-01-02 15:04:05"), study, tone, r.text())
}

// newJournalList is a list of rows (read through rows at each draw), each a swatch and a line.
func newJournalList(rows func() []JournalRow) *widget.List {
	return widget.NewList(func() int { return len(rows()) },
		func() fyne.CanvasObject {
			sw := canvas.NewRectangle(color.Transparent)
			sw.SetMinSize(fyne.NewSize(6, 18))
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return container.NewBorder(nil, nil, sw, nil, l)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			r := rows()[i]
			c := o.(*fyne.Container)
			for _, obj := range c.Objects {
				switch x := obj.(type) {
				case *canvas.Rectangle:
					x.FillColor = toneColour(r.Tone)
					x.Refresh()
				case *widget.Label:
					x.SetText(journalLine(r))
				}
			}
		})
}

// timeline is the Timeline tab: the list above, the expanded entry below.
func (v *NotebookView) timeline() fyne.CanvasObject {
	v.Detail.Wrapping = fyne.TextWrapBreak
	v.Detail.TextStyle = fyne.TextStyle{Monospace: true}
	v.showDetail(nil)
	detail := container.NewBorder(container.NewHBox(heading("Entry"), v.CopyPayload), nil, nil, nil, container.NewVScroll(v.Detail))
	split := container.NewVSplit(v.List, detail)
	split.Offset = 0.7
	return split
}

// expand shows row i of the filtered timeline below it.
func (v *NotebookView) expand(i widget.ListItemID) {
	if i < 0 || i >= len(v.rows) {
		v.showDetail(nil)
		return
	}
	r := v.rows[i]
	v.showDetail(&r)
}

func (v *NotebookView) showDetail(r *JournalRow) {
	if v.Detail == nil {
		return
	}
	v.detailRow = r
	if r == nil {
		v.Detail.SetText("select an entry to read its payload (the JSON the journal's hash chain holds)")
		v.CopyPayload.Disable()
		return
	}
	v.Detail.SetText(fmt.Sprintf("#%d %s (%s)\n%s\n\n%s", r.Seq, r.Kind, r.At.Local().Format("2006-01-02 15:04:05.000"), r.text(), prettyJSON(r.Payload)))
	setEnabled(v.CopyPayload, r.Payload != "")
}

func (v *NotebookView) copyPayload() {
	if v.detailRow != nil {
		fyne.CurrentApp().Clipboard().SetContent(v.detailRow.Payload)
	}
}

// prettyJSON indents a payload for reading; text that is not JSON is shown as it is.
func prettyJSON(s string) string {
	if s == "" {
		return "(no payload)"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		return s
	}
	return b.String()
}

// SelectSeq shows journal entry seq in the timeline: the filters are cleared when they hide it,
// and the entry is selected and expanded — now, and again once a journal load under way has
// been shown. It says whether the entry is in the journal loaded now.
func (v *NotebookView) SelectSeq(seq int64) bool {
	v.wantSeq = seq
	return v.selectSeq(seq)
}

func (v *NotebookView) selectSeq(seq int64) bool {
	find := func() int {
		for i, r := range v.rows {
			if r.Seq == seq {
				return i
			}
		}
		return -1
	}
	i := find()
	if i < 0 {
		v.Study.SetSelected("all studies")
		v.Kind.SetSelected("all kinds")
		v.Filter.SetText("")
		v.Since.SetText("")
		v.Until.SetText("")
		i = find()
	}
	if i < 0 {
		return false
	}
	v.Tabs.SelectIndex(0)
	v.List.Select(i)
	v.List.ScrollTo(i)
	return true
}
