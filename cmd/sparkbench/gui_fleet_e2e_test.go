package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/store"
	"sparkbench/ui"
)

// checkFleetInTheWindow: the Compare section offers the fleet run (its hosts' studies and
// statuses) and picking it compares the three hosts' studies side by side, the first host's
// the baseline, with the depth curves of all three overlaid.
func checkFleetInTheWindow(t *testing.T, nbPath string) {
	t.Helper()
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	wb := openCompareWindow(t, nb, filepath.Join(t.TempDir(), "data"))
	cv := wb.Compare
	var opt string
	waitFor(t, "the fleet offered", func() bool { // waitFor holds the UI lock
		if len(cv.FleetPick.Options) == 1 {
			opt = cv.FleetPick.Options[0]
		}
		return opt != ""
	})
	for _, want := range []string{"tiny fleet ", "local study 1 complete", "host-a study 2 complete", "host-b study 3 complete"} {
		if !strings.Contains(opt, want) {
			t.Errorf("the fleet's option %q lacks %q", opt, want)
		}
	}
	ui.Locked(func() { cv.FleetPick.SetSelected(opt) })
	waitFor(t, "the fleet's comparison", func() bool { return cv.Result != nil && !cv.CompareBt.Disabled() })
	ui.Locked(func() {
		r := cv.Result
		if got := cv.Chosen(); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Errorf("chosen %v, want the three members", got)
		}
		if len(r.Studies) != 3 || !strings.Contains(r.Studies[0], "@ local") || !strings.HasSuffix(r.Studies[0], "baseline") ||
			!strings.Contains(r.Studies[1], "@ host-a") || !strings.Contains(r.Studies[2], "@ host-b") {
			t.Errorf("studies %q", r.Studies)
		}
		if len(r.Cells) != 8 { // 4 cells (pp32 and tg32 at depths 0 and 64), each host against local
			t.Errorf("%d shared cells, want 8", len(r.Cells))
		}
		if r.Depth == nil || len(r.Depth.Series) != 3 {
			t.Errorf("depth curves: %+v", r.Depth)
		}
	})
	checkFleetHostsAndReceipt(t, cv)
}

// checkFleetHostsAndReceipt: the picked fleet's Fleet hosts tab lists its three hosts and the
// constants ladder by host (host-a's bandwidth from its label; the others have none), and the
// window writes the fleet's own receipt, which verify accepts.
func checkFleetHostsAndReceipt(t *testing.T, cv *ui.CompareView) {
	t.Helper()
	var text string
	waitFor(t, "the fleet's hosts", func() bool {
		text = cv.FleetHosts.Text
		return strings.Contains(text, "Constants ladder by host")
	})
	for _, want := range []string{"local", "host-a", "host-b", "complete", "baseline local"} {
		if !strings.Contains(text, want) {
			t.Errorf("Fleet hosts tab lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "no bandwidth figure"); n != 2 || !strings.Contains(text, "40 GB/s (host label)") {
		t.Errorf("the ladder by host says %d times that a host has no bandwidth figure (want 2), or lacks host-a's 40 GB/s from its label:\n%s", n, text)
	}
	if cv.FleetExportBt.Disabled() {
		t.Fatal("the fleet receipt button is disabled for a fleet of three complete hosts")
	}
	out := filepath.Join(t.TempDir(), "fleet-receipt")
	done := make(chan error, 1)
	var summary string
	ui.Locked(func() {
		cv.ExportFleet(cv.FleetChosen(), out, func(x ui.ReceiptExport, err error) { summary = x.Summary; done <- err })
	})
	if err := <-done; err != nil {
		t.Fatalf("the window's fleet receipt: %v", err)
	}
	if !strings.Contains(summary, "3 hosts side by side against local") {
		t.Errorf("summary %q", summary)
	}
	if code, stdout, errOut := runCLI("verify", out); code != 0 || !strings.Contains(stdout, "fleet bundle") {
		t.Fatalf("verify the window's fleet receipt: exit %d\n%s%s", code, stdout, errOut)
	}
}

// openCompareWindow opens the window on the notebook's studies, in its Compare section; it is
// closed when the test ends.
func openCompareWindow(t *testing.T, nb *store.Notebook, dataDir string) *ui.Workbench {
	t.Helper()
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Studies: studyService{nb: nb, dataDir: dataDir}, Notebook: notebookService{nb}, Compare: compareService{nb}})
	})
	t.Cleanup(func() { ui.Locked(func() { wb.Window.Close() }) })
	ui.Locked(func() { wb.ShowSection("compare") })
	return wb
}
