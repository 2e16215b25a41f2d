package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// formsIn are the forms inside o, forms inside their fields included: containers, and widgets
// through their renderers (cards, scrolls).
func formsIn(o fyne.CanvasObject) []*widget.Form {
	var out []*widget.Form
	if f, ok := o.(*widget.Form); ok {
		out = append(out, f)
		for _, it := range f.Items {
			out = append(out, formsIn(it.Widget)...)
		}
		return out
	}
	for _, k := range childrenOf(o) {
		out = append(out, formsIn(k)...)
	}
	return out
}

// childrenOf are o's objects: a container's, or a widget's through its renderer.
func childrenOf(o fyne.CanvasObject) []fyne.CanvasObject {
	switch x := o.(type) {
	case *fyne.Container:
		return x.Objects
	case fyne.Widget:
		return test.WidgetRenderer(x).Objects()
	}
	return nil
}

// Every field of both New study forms (a capacity configuration row's included) has a hint
// that says what it does and names its llama.cpp flag, or says it has none.
func TestNewStudyFormFieldsHaveHints(t *testing.T) {
	a := newTestApp(t)
	tw := build(func() *WizardView { return newWizardView(a.NewWindow("t"), nil, nil, nil, nil) })
	cw := build(func() *CapacityWizard { return newCapacityWizard(a.NewWindow("t"), nil, nil, nil, nil) })
	Locked(func() {
		cw.Configs.Add(serverConfig{name: "q8"})
		for name, obj := range map[string]fyne.CanvasObject{"throughput": tw.Object, "capacity": cw.Object} {
			forms := formsIn(obj)
			items := 0
			for _, f := range forms {
				for _, it := range f.Items {
					items++
					h := it.HintText
					names := strings.Contains(h, "llama-bench") || strings.Contains(h, "llama-server") || strings.Contains(h, "(-") || strings.Contains(h, "no llama.cpp flag")
					if len(h) < 20 || !names {
						t.Errorf("%s form, %q: hint %q does not say what it does and its llama.cpp flag (or that it has none)", name, it.Text, h)
					}
				}
			}
			want := map[string]int{"throughput": 16 + 10, "capacity": 23 + 1 + nConfigFields + 1 + 32}[name] // 32: the serving section
			if items != want {
				t.Errorf("%s form: %d fields in %d forms, want %d", name, items, len(forms), want)
			}
		}
	})
}
