package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"

	"sparkbench/app"
)

// The About box (the Bench section's About sparkbench… button, or F1): sparkbench's build, the llama.cpp build the
// last doctor check found, and the notebook.

// aboutText is the About box's text for the doctor's last report (nil: not checked yet).
func aboutText(r *app.DoctorReport) string {
	lines := []string{app.VersionString()}
	switch {
	case r == nil:
		lines = append(lines, "llama.cpp: not checked yet (see the Bench section)")
	case r.Llama == nil:
		lines = append(lines, "llama.cpp: not found (see the Bench section for the fix)")
	default:
		lines = append(lines, fmt.Sprintf("llama.cpp: %s", strings.TrimPrefix(r.Llama.VersionLine, "version: ")),
			fmt.Sprintf("  in %s", r.Llama.Location.Dir))
		if len(r.Llama.Backends) > 0 {
			lines = append(lines, "  backends: "+strings.Join(r.Llama.Backends, ", "))
		}
	}
	if r != nil && r.NotebookPath != "" {
		lines = append(lines, "notebook: "+r.NotebookPath)
	}
	lines = append(lines, "", "A workbench for measuring local LLM inference with llama.cpp: pre-registered predictions, an append-only notebook, receipts anyone can re-verify (sparkbench verify).")
	return strings.Join(lines, "\n")
}

// ShowAbout opens the About box.
func (wb *Workbench) ShowAbout() {
	d := dialog.NewInformation("About sparkbench", aboutText(wb.lastReport), wb.Window)
	d.Show()
	wb.About = d
}

// addAbout offers the About box: a button in the Bench section's header, and F1 (no menu
// bar: it would move every section down).
func (wb *Workbench) addAbout() {
	wb.Bench.AboutButton.OnTapped = wb.ShowAbout
	wb.Window.Canvas().SetOnTypedKey(func(k *fyne.KeyEvent) {
		if k.Name == fyne.KeyF1 {
			wb.ShowAbout()
		}
	})
}
