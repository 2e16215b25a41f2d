package ui

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// The Compare section's fleet view beyond the side-by-side comparison: the fleet receipt (its
// own layout: hosts, the same cell on every host, one chart per figure, the constants ladder by
// host) written from the window, and the hosts and the ladder by host shown in the Hosts tab.

// FleetExporter is a FleetLister that also writes a fleet's receipt and describes its hosts
// (cmd's does, over `fleet receipt`'s own code).
type FleetExporter interface {
	// ExportFleet writes the fleet receipt of fleet id to out and says what it wrote.
	ExportFleet(ctx context.Context, id, out string) (ReceiptExport, error)
	// FleetHosts describes the fleet's hosts and its constants ladder by host, as text.
	FleetHosts(ctx context.Context, id string) (string, error)
}

var errNoFleetExport = errors.New("this window cannot write fleet receipts (use `sparkbench fleet receipt FLEET --out DIR`)")

// FleetChosen is the fleet last picked ("" when none).
func (v *CompareView) FleetChosen() string { return v.fleet }

// newFleetWidgets makes the fleet receipt button and the Hosts tab's text.
func (v *CompareView) newFleetWidgets() {
	v.FleetExportBt = widget.NewButton("Export fleet receipt…", v.exportFleetDialog)
	v.FleetHosts = widget.NewLabel("pick a fleet run to see its hosts and the constants ladder by host")
	v.FleetHosts.TextStyle.Monospace = true // its tables line up; the tab scrolls both ways
	setEnabled(v.FleetExportBt, false)
}

// fleetPicked shows the picked fleet's hosts and ladder (in the background) and offers its
// receipt when the service can write one.
func (v *CompareView) fleetPicked(f FleetChoice) {
	v.fleet = f.ID
	fx, ok := v.svc.(FleetExporter)
	setEnabled(v.FleetExportBt, ok && len(f.Members) >= 2)
	if !ok {
		return
	}
	v.FleetHosts.SetText("reading fleet " + f.ID + "…")
	go func() {
		text, err := fx.FleetHosts(context.Background(), f.ID)
		onUI(func() {
			if v.fleet != f.ID { // another fleet picked since
				return
			}
			if err != nil {
				text = "fleet " + f.ID + ": " + err.Error()
			}
			v.FleetHosts.SetText(text)
			v.signal()
		})
	}()
}

func (v *CompareView) exportFleetDialog() {
	id := v.fleet
	pickFolder(prefLastReceipts, v.win, func(dir string) {
		v.ExportFleet(id, filepath.Join(dir, fleetBundleName(id)), func(x ReceiptExport, err error) {
			if err != nil {
				dialog.ShowError(err, v.win)
				return
			}
			dialog.ShowInformation("Fleet receipt written", x.Summary, v.win)
		})
	})
}

// fleetBundleName is the folder a fleet's receipt is written to: fleet-NAME-START, with
// characters a file name should not carry replaced.
func fleetBundleName(id string) string {
	return "fleet-" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '-'
	}, id)
}

// ExportFleet writes fleet id's receipt to out in the background; done runs on the UI
// goroutine.
func (v *CompareView) ExportFleet(id, out string, done func(ReceiptExport, error)) {
	fx, _ := v.svc.(FleetExporter)
	go func() {
		var x ReceiptExport
		err := errNoFleetExport
		if fx != nil {
			x, err = fx.ExportFleet(context.Background(), id, out)
		}
		onUI(func() {
			done(x, err)
			v.signal()
		})
	}()
}
