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
	walkObjects(top, func(o fyne.CanvasObject) bool {
		switch x := o.(type) {
		case *widget.Label:
			b.WriteString(x.Text + "\n")
		case *widget.RichText:
			b.WriteString(x.String() + "\n")
		case *canvas.Text:
			b.WriteString(x.Text + "\n")
		}
		return false
	})
	return b.String()
}

// walkObjects visits o, then depth first every object of its containers and of its widgets'
// renderers, until visit says to stop (it then returns true).
func walkObjects(o fyne.CanvasObject, visit func(fyne.CanvasObject) (stop bool)) bool {
	if visit(o) {
		return true
	}
	if c, ok := o.(*fyne.Container); ok {
		for _, ch := range c.Objects {
			if walkObjects(ch, visit) {
				return true
			}
		}
	}
	if w, ok := o.(fyne.Widget); ok {
		for _, ch := range test.WidgetRenderer(w).Objects() {
			if walkObjects(ch, visit) {
				return true
			}
		}
	}
	return false
}

// find is the first object of the canvas's top overlay (a dialog), depth first through
// containers and widgets' renderers, for which match says true; nil when none does.
func find(c fyne.Canvas, match func(fyne.CanvasObject) bool) fyne.CanvasObject {
	top := c.Overlays().Top()
	if top == nil {
		return nil
	}
	var found fyne.CanvasObject
	walkObjects(top, func(o fyne.CanvasObject) bool {
		if match(o) {
			found = o
			return true
		}
		return false
	})
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
