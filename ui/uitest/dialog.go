package uitest

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// DialogText is the text of a canvas's top overlay (a dialog), one line per label, rich text
// or canvas text found in it; "" when no overlay is shown. Call it on the UI goroutine (under
// ui.Locked in tests).
func DialogText(c fyne.Canvas) string {
	top := c.Overlays().Top()
	if top == nil {
		return ""
	}
	var b strings.Builder
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			b.WriteString(x.Text + "\n")
		case *widget.RichText:
			b.WriteString(x.String() + "\n")
		case *canvas.Text:
			b.WriteString(x.Text + "\n")
		}
		if c, ok := o.(*fyne.Container); ok {
			for _, ch := range c.Objects {
				walk(ch)
			}
		}
		if w, ok := o.(fyne.Widget); ok {
			for _, ch := range test.WidgetRenderer(w).Objects() {
				walk(ch)
			}
		}
	}
	walk(top)
	return b.String()
}

// find is the first object of the canvas's top overlay (a dialog), depth first through
// containers and widgets' renderers, for which match says true; nil when none does.
func find(c fyne.Canvas, match func(fyne.CanvasObject) bool) fyne.CanvasObject {
	top := c.Overlays().Top()
	if top == nil {
		return nil
	}
	var found fyne.CanvasObject
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		if found != nil {
			return
		}
		if match(o) {
			found = o
			return
		}
		if c, ok := o.(*fyne.Container); ok {
			for _, ch := range c.Objects {
				walk(ch)
			}
		}
		if w, ok := o.(fyne.Widget); ok {
			for _, ch := range test.WidgetRenderer(w).Objects() {
				walk(ch)
			}
		}
	}
	walk(top)
	return found
}

// TapDialogButton taps the enabled button labelled text in the canvas's top overlay (a
// dialog) and says whether it found one. Call it on the UI goroutine (under ui.Locked).
func TapDialogButton(c fyne.Canvas, text string) bool {
	o := find(c, func(o fyne.CanvasObject) bool {
		b, ok := o.(*widget.Button)
		return ok && b.Text == text && !b.Disabled()
	})
	if o == nil {
		return false
	}
	test.Tap(o.(*widget.Button))
	return true
}

// DialogEntry is the entry with the given placeholder in the canvas's top overlay (a dialog),
// or nil. Call it on the UI goroutine (under ui.Locked).
func DialogEntry(c fyne.Canvas, placeholder string) *widget.Entry {
	o := find(c, func(o fyne.CanvasObject) bool {
		e, ok := o.(*widget.Entry)
		return ok && e.PlaceHolder == placeholder
	})
	if o == nil {
		return nil
	}
	return o.(*widget.Entry)
}
