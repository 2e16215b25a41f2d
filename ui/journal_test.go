package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
)

func readableRows() []JournalRow {
	at := time.Date(2026, 12, 3, 23, 41, 33, 0, time.Local)
	return []JournalRow{
		{Seq: 13, At: at, Kind: "leg.finished", StudyID: 1, Tone: "leg", Sentence: "leg tiny/d128 finished ok: 2 rows in 0.52 s",
			Payload: `{"bench_rows":2,"class":"ok","label":"tiny/d128","leg":3}`},
		{Seq: 5, At: at, Kind: "prediction.registered", StudyID: 2, Tone: "prediction", Sentence: "prediction P1 (band) registered: medium tg at d0 above 100 t/s",
			Payload: `{"key":"P1","text":"medium tg at d0 above 100 t/s"}`},
		{Seq: 4, At: at, Kind: "finding", StudyID: 1, Tone: "finding", Sentence: "finding F1: generation falls faster with depth",
			Payload: `{"label":"F1","title":"generation falls faster with depth"}`},
	}
}

// The timeline reads as sentences, each with its tone's swatch and word; selecting an entry
// expands it with its indented JSON payload; the text filter matches the sentence.
func TestJournalTimelineReadsAsSentences(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *NotebookView { return newNotebookView(a.NewWindow("t"), fakeJournal{readableRows()}) })
	Locked(v.Reload)
	waitSignalled(t, v.Updated, 10*time.Second, func() bool { return len(v.rows) == 3 }, func() string { return "the journal never loaded" })
	Locked(func() {
		item := v.List.CreateItem()
		v.List.UpdateItem(0, item)
		c := item.(*fyne.Container)
		var line string
		var swatch bool
		for _, o := range c.Objects {
			switch x := o.(type) {
			case *widget.Label:
				line = x.Text
			default:
				swatch = swatch || x != nil
			}
		}
		if !strings.HasPrefix(line, "#13  2026-12-03 23:41:33  study 1    leg         leg tiny/d128 finished ok: 2 rows in 0.52 s") || !swatch {
			t.Errorf("timeline line %q (swatch %v)", line, swatch)
		}
		if !v.CopyPayload.Disabled() || !strings.HasPrefix(v.Detail.Text, "select an entry") {
			t.Errorf("before a selection: %q", v.Detail.Text)
		}
		v.List.Select(0)
		want := "#13 leg.finished (2026-12-03 23:41:33.000)\nleg tiny/d128 finished ok: 2 rows in 0.52 s\n\n{\n  \"bench_rows\": 2,\n  \"class\": \"ok\","
		if !strings.HasPrefix(v.Detail.Text, want) || v.CopyPayload.Disabled() {
			t.Errorf("expanded entry:\n%s", v.Detail.Text)
		}
		test.Tap(v.CopyPayload)
		if got := a.Clipboard().Content(); got != readableRows()[0].Payload {
			t.Errorf("copied %q", got)
		}
		v.Filter.SetText("falls faster")
		if len(v.rows) != 1 || v.rows[0].Seq != 4 || !strings.HasPrefix(v.Detail.Text, "select an entry") {
			t.Errorf("filter on the sentence: %d rows, detail %q", len(v.rows), v.Detail.Text)
		}
	})
}

// journalStudies lists two studies for Find.
type journalStudies struct{ *fakeStudies }

func (journalStudies) List(context.Context) ([]StudySummary, error) {
	return []StudySummary{{ID: 1, Name: "sparkbench demo", Kind: "throughput", Status: "complete"},
		{ID: 2, Name: "medium model depth curve", Kind: "throughput", Status: "registered"}}, nil
}

// Ctrl+F opens Find over every study and journal entry: a study hit opens the study, an entry
// hit shows the entry expanded in the Notebook's timeline (its filters cleared); a query with
// no hits says so and where it looked.
func TestFindAcrossStudiesJumpsToTheHit(t *testing.T) {
	a := newTestApp(t)
	var wb *Workbench
	Locked(func() {
		wb = NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Studies: journalStudies{&fakeStudies{}}, Notebook: fakeJournal{readableRows()}})
	})
	waitSignalled(t, wb.Studies.Updated, 10*time.Second, func() bool { return len(wb.Studies.studies) == 2 }, nil)
	Locked(func() {
		wb.ShowSection("notebook")
		wb.Notebook.Filter.SetText("tiny") // hides the prediction entry, which Find will jump to
		wb.Window.Canvas().(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyF, Modifier: fyne.KeyModifierShortcutDefault})
		if wb.Window.Canvas().Focused() != wb.Find.Query {
			t.Error("Ctrl+F did not focus the query")
		}
	})
	waitSignalled(t, wb.Notebook.Updated, 10*time.Second, func() bool { return len(wb.Notebook.all) == 3 }, nil)
	Locked(func() {
		test.Type(wb.Find.Query, "MEDIUM")
		if len(wb.Find.Hits) != 2 || wb.Find.Hits[0].What != "study" || wb.Find.Hits[0].StudyID != 2 ||
			wb.Find.Hits[1].What != "prediction" || wb.Find.Hits[1].Seq != 5 || wb.Find.Status.Text != "2 hit(s): Enter or a click jumps to one" {
			t.Fatalf("hits %+v, status %q", wb.Find.Hits, wb.Find.Status.Text)
		}
		wb.Find.Results.Select(1)
		if wb.nav.Selected().Text != "Notebook" || wb.Notebook.Filter.Text != "" || wb.Notebook.detailRow == nil || wb.Notebook.detailRow.Seq != 5 {
			t.Fatalf("jump to entry 5: section %q, filter %q, detail %v", wb.nav.Selected().Text, wb.Notebook.Filter.Text, wb.Notebook.detailRow)
		}
		wb.Find.Query.SetText("")
		test.Type(wb.Find.Query, "no such words")
		if len(wb.Find.Hits) != 0 || wb.Find.Status.Text != `no hits for "no such words" in 2 studies and 3 journal entries (every word must appear, in any case; names, predictions, findings, legs and journal entries are searched)` {
			t.Fatalf("no hits: %q", wb.Find.Status.Text)
		}
		wb.Find.Query.SetText("demo")
		wb.Find.Query.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
		if wb.nav.Selected().Text != "Studies" {
			t.Fatalf("Enter on a study hit opened %q", wb.nav.Selected().Text)
		}
	})
	waitSignalled(t, wb.Studies.Updated, 10*time.Second, func() bool { return wb.Studies.selected == 1 }, func() string { return "study 1 was not shown" })
}
