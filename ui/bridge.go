// Package ui is sparkbench's Fyne front end. It holds every widget and window and no business
// rule: each action calls the same app core as the CLI.
package ui

import (
	"sync"

	"fyne.io/fyne/v2"
)

// uiMu serialises the functions handed to onUI. In the app they already run one at a time on
// Fyne's goroutine and the lock is never contended; Fyne's test driver runs fyne.Do inline on
// the calling goroutine, and the lock gives tests the same one-at-a-time guarantee (tests read
// widget state under it too). A function run by onUI must not call onUI itself.
var uiMu sync.Mutex

// onUI runs f on Fyne's goroutine. It is the only place in sparkbench that calls fyne.Do:
// background work (doctor checks, hashing, runner events) hands its results here, never to a
// widget directly.
func onUI(f func()) {
	fyne.Do(func() {
		uiMu.Lock()
		defer uiMu.Unlock()
		f()
	})
}

// Locked runs f under the same lock as the functions handed to onUI: tests outside this
// package read and drive widgets through it while background work updates them.
func Locked(f func()) {
	uiMu.Lock()
	defer uiMu.Unlock()
	f()
}
