package ui

import (
	"path/filepath"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
)

// Preference keys of the folders the file dialogs start in: each kind of file remembers where
// the user last found or put one.
const (
	prefLastModels   = "last.folder.models"
	prefLastPlans    = "last.folder.plans"
	prefLastReceipts = "last.folder.receipts"
	prefLastBundles  = "last.folder.bundles"
	prefLastImports  = "last.folder.imports"
	prefLastLlama    = "last.folder.llama"
)

// lastLocation is the folder remembered under key, when it still exists.
func lastLocation(key string) fyne.ListableURI {
	a := fyne.CurrentApp()
	if a == nil {
		return nil
	}
	dir := a.Preferences().String(key)
	if dir == "" {
		return nil
	}
	l, err := storage.ListerForURI(storage.NewFileURI(dir))
	if err != nil {
		return nil
	}
	return l
}

func rememberLocation(key, dir string) {
	if a := fyne.CurrentApp(); a != nil && dir != "" {
		a.Preferences().SetString(key, dir)
	}
}

// pickFolder shows a folder dialog starting in the folder last chosen under key; use gets the
// chosen folder's path (a failure is shown in a dialog; Cancel does nothing), and it is
// remembered.
func pickFolder(key string, win fyne.Window, use func(path string)) {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		switch {
		case err != nil:
			dialog.ShowError(err, win)
		case u != nil:
			rememberLocation(key, u.Path())
			use(u.Path())
		}
	}, win)
	if l := lastLocation(key); l != nil {
		d.SetLocation(l)
	}
	d.Show()
}

// pickFile shows a file dialog starting in the folder of the file last opened under key
// (filtered to exts when given); use gets the chosen file's path (a failure is shown in a
// dialog; Cancel does nothing), and its folder is remembered.
func pickFile(key string, win fyne.Window, use func(path string), exts ...string) {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		switch {
		case err != nil:
			dialog.ShowError(err, win)
		case r != nil:
			path := r.URI().Path()
			r.Close()
			rememberLocation(key, filepath.Dir(path))
			use(path)
		}
	}, win)
	if len(exts) > 0 {
		d.SetFilter(storage.NewExtensionFileFilter(exts))
	}
	if l := lastLocation(key); l != nil {
		d.SetLocation(l)
	}
	d.Show()
}

// showFileSave is dialog.ShowFileSave starting in the folder last saved to under key, with a
// suggested file name, and remembering the new folder.
func showFileSave(key, name string, cb func(fyne.URIWriteCloser, error), win fyne.Window) {
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err == nil && w != nil {
			rememberLocation(key, filepath.Dir(w.URI().Path()))
		}
		cb(w, err)
	}, win)
	if name != "" {
		d.SetFileName(name)
	}
	if l := lastLocation(key); l != nil {
		d.SetLocation(l)
	}
	d.Show()
}
