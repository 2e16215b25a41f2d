package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
)

// ExportReceipt writes the overview's receipt with the section's options and machine line into
// out (a new folder or .tar.gz), in the background; done reports on the UI goroutine.
func (v *OverviewView) ExportReceipt(out string, done func(error)) {
	ex, ok := v.svc.(OverviewExporter)
	if !ok {
		done(fmt.Errorf("the overview's receipt is unavailable here: use sparkbench overview receipt --out DIR"))
		return
	}
	opts, machine := v.options(), strings.TrimSpace(v.Machine.Text)
	v.Receipt.Disable()
	v.Status.SetText("writing the overview's receipt to " + out + "…")
	go func() {
		err := ex.ExportOverview(context.Background(), opts, machine, out)
		onUI(func() {
			v.Receipt.Enable()
			if err != nil {
				v.Status.SetText("no receipt: " + err.Error())
			} else {
				v.Status.SetText("wrote the overview's receipt to " + out + "; check it anywhere with sparkbench verify " + out)
			}
			done(err)
		})
	}()
}

// receiptDialog asks for a folder and writes the receipt into a new folder in it.
func (v *OverviewView) receiptDialog() {
	win := windowOf(v.Object)
	if win == nil {
		return
	}
	dialog.ShowFolderOpen(func(dir fyne.ListableURI, err error) {
		if err != nil || dir == nil {
			return
		}
		out := filepath.Join(dir.Path(), "sparkbench-overview-"+time.Now().Format("20060102-150405"))
		v.ExportReceipt(out, func(err error) {
			if err != nil {
				dialog.ShowError(err, win)
			}
		})
	}, win)
}
