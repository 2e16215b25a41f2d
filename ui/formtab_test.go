package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// focusablesIn are the visible focusable widgets inside o, in tree order.
func focusablesIn(o fyne.CanvasObject) []fyne.Focusable {
	if o == nil || !o.Visible() {
		return nil
	}
	var out []fyne.Focusable
	if f, ok := o.(fyne.Focusable); ok {
		if d, ok := o.(fyne.Disableable); !ok || !d.Disabled() {
			out = append(out, f)
		}
	}
	for _, k := range childrenOf(o) {
		out = append(out, focusablesIn(k)...)
	}
	return out
}

// Keyboard navigation: in both New study forms (the capacity form with its serving section
// open), Tab from the Name field reaches every visible field of every form item, each item's
// first field after the one before it.
func TestNewStudyFormsTabThroughEveryField(t *testing.T) {
	a := newTestApp(t)
	for _, kind := range []string{"throughput", "capacity"} {
		var w fyne.Window
		var obj fyne.CanvasObject
		var name fyne.Focusable
		Locked(func() {
			w = a.NewWindow(kind)
			w.Resize(fyne.NewSize(1400, 4000))
			if kind == "throughput" {
				v := newWizardView(w, nil, nil, nil, nil)
				obj, name = v.Object, v.Name
			} else {
				v := newCapacityWizard(w, nil, nil, nil, nil)
				v.Serving.Enable.SetChecked(true)
				obj, name = v.Object, v.Name
			}
			w.SetContent(obj)
		})
		Locked(func() {
			c := w.Canvas()
			c.Focus(name)
			order := map[fyne.Focusable]int{name: 0}
			for i := 1; i < 2000; i++ {
				test.FocusNext(c)
				f := c.Focused()
				if f == name {
					break
				}
				if _, seen := order[f]; !seen {
					order[f] = i
				}
			}
			last, items := -1, 0
			for _, form := range formsIn(obj) {
				for _, it := range form.Items {
					fs := focusablesIn(it.Widget)
					if len(fs) == 0 {
						continue
					}
					items++
					first := -1
					for _, f := range fs {
						at, ok := order[f]
						if !ok {
							t.Errorf("%s form, %q: a %T is never reached by Tab", kind, it.Text, f)
							continue
						}
						if first < 0 || at < first {
							first = at
						}
					}
					if first >= 0 && first < last && it.Text != "Models" {
						t.Errorf("%s form, %q: reached at Tab %d, before the item above it (Tab %d)", kind, it.Text, first, last)
					}
					last = max(last, first)
				}
			}
			t.Logf("%s form: %d items with fields, %d controls reached by Tab", kind, items, len(order))
			if items < 20 {
				t.Errorf("%s form: %d items with fields, want every form item", kind, items)
			}
			w.Close()
		})
	}
}
