package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/runner/llamacpp"
	"sparkbench/ui/uitest"
)

var listed = []StudySummary{
	{ID: 1, Name: "sparkbench demo", Kind: "throughput", Status: "complete", Legs: 6, Predictions: 3},
	{ID: 2, Name: "medium model depth curve at every depth from zero to one thousand and twenty-four tokens (screenshots)", Kind: "throughput", Status: "registered", Predictions: 1},
	{ID: 3, Name: "Medium slots x clients", Kind: "capacity", Status: "incomplete", Legs: 4, Predictions: 1},
}

func TestFilterAndSortStudies(t *testing.T) {
	ids := func(l []StudySummary) string {
		var s []string
		for _, x := range l {
			s = append(s, string(rune('0'+x.ID)))
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct{ q, sort, want string }{
		{"", SortNewest, "3,2,1"},
		{"", SortOldest, "1,2,3"},
		{"", SortName, "2,3,1"}, // by name, any case: medium model…, Medium slots…, sparkbench demo
		{"", SortStatus, "1,3,2"},
		{"MEDIUM", SortNewest, "3,2"},
		{"medium capacity", SortNewest, "3"},
		{"complete", SortOldest, "1,3"}, // "incomplete" holds "complete"
		{"nothing like it", SortNewest, ""},
	} {
		if got := ids(filterStudies(listed, c.q, c.sort)); got != c.want {
			t.Errorf("%q by %s: %s, want %s", c.q, c.sort, got, c.want)
		}
	}
}

type listedStudies struct{ *fakeStudies }

func (listedStudies) List(context.Context) ([]StudySummary, error) { return listed, nil }

// The Studies list shows every name whole (wrapped, never cut) with its state badge; the
// filter and the sort order change the rows, and a row still opens its own study.
func TestStudiesListFullNamesFilterSortBadges(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *StudiesView {
		return newStudiesView(a, a.NewWindow("t"), listedStudies{&fakeStudies{}})
	})
	Locked(func() { v.Reload(1) })
	waitSignalled(t, v.Updated, 10*time.Second, func() bool { return len(v.shown) == 3 && v.selected == 1 }, nil)
	Locked(func() {
		item := v.List.CreateItem()
		v.List.UpdateItem(1, item) // newest first: row 1 is study 2
		var texts []string
		var name *widget.Label
		test.WidgetRenderer(v.List) // laid out
		walk(item, func(o fyne.CanvasObject) {
			if l, ok := o.(*widget.Label); ok {
				texts = append(texts, l.Text)
				if name == nil {
					name = l
				}
			}
		})
		if len(texts) != 2 || texts[0] != "2 · "+listed[1].Name || texts[1] != "registered · throughput · 0 legs · 1 predictions" ||
			name.Truncation != fyne.TextTruncateOff || name.Wrapping != fyne.TextWrapWord {
			t.Errorf("row texts %q, name truncation %v wrapping %v", texts, name.Truncation, name.Wrapping)
		}
		if v.ListCount.Text != "3 of 3 studies" || v.List.Length() != 3 {
			t.Errorf("count %q", v.ListCount.Text)
		}
		test.Type(v.ListFilter, "medium")
		v.Sort.SetSelected(SortOldest)
		if len(v.shown) != 2 || v.shown[0].ID != 2 || v.ListCount.Text != "2 of 3 studies" {
			t.Fatalf("filtered %+v, %q", v.shown, v.ListCount.Text)
		}
		v.List.Select(1)
		if v.selected != 3 {
			t.Errorf("row 1 of the filtered list opened study %d, want 3", v.selected)
		}
	})
}

// walk visits o and every object inside it.
func walk(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	f(o)
	if c, ok := o.(*fyne.Container); ok {
		for _, x := range c.Objects {
			walk(x, f)
		}
	}
}

// The section shown last is where the next window opens; the About box names sparkbench's and
// llama.cpp's builds and the notebook, from the Bench button and from F1.
func TestLastSectionAndAbout(t *testing.T) {
	a := newTestApp(t)
	rep := app.DoctorReport{Llama: &llamacpp.Build{Location: llamacpp.Location{Dir: "/opt/llama/bin"}, VersionLine: "version: 7000 (abc1234)",
		Backends: []string{"CPU"}}, NotebookPath: "/data/notebook.db"}
	doctor := func(context.Context, string) app.DoctorReport { return rep }
	wb := build(func() *Workbench { return NewWorkbench(a, Deps{Doctor: doctor}) })
	waitChecked(t, wb.Bench)
	Locked(func() {
		if wb.LastSection() != "studies" {
			t.Errorf("first window's last section %q", wb.LastSection())
		}
		wb.ShowSection("notebook")
		test.Tap(wb.Bench.AboutButton)
		text := uitest.DialogText(wb.Window.Canvas())
		for _, want := range []string{app.VersionString(), "llama.cpp: 7000 (abc1234)", "in /opt/llama/bin", "backends: CPU", "notebook: /data/notebook.db"} {
			if !strings.Contains(text, want) {
				t.Errorf("About box lacks %q:\n%s", want, text)
			}
		}
		wb.About.Hide()
		wb.Window.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyF1})
		if !strings.Contains(uitest.DialogText(wb.Window.Canvas()), app.VersionString()) {
			t.Error("F1 did not open the About box")
		}
		wb.Window.Close()
	})
	second := build(func() *Workbench { return NewWorkbench(a, Deps{Doctor: doctor}) })
	Locked(func() {
		if !second.ShowSection("last") || second.nav.Selected().Text != "Notebook" {
			t.Errorf("the next window opened on %q", second.nav.Selected().Text)
		}
	})
	waitChecked(t, second.Bench)
}
