// Package ui is sparkbench's Fyne front end. It holds every widget and window and no business
// rule: each action calls the same app core as the CLI.
package ui

import "fyne.io/fyne/v2"

// onUI runs f on Fyne's goroutine. It is the only place in sparkbench that calls fyne.Do:
// background work (doctor checks, runner events) hands its results here, never to a widget.
func onUI(f func()) { fyne.Do(f) }
