package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app/workbench"
	"sparkbench/plots"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
)

// TestWindowComparesTwoCapacityStudies compares two real capacity studies in the Compare
// section (Fyne's test driver): the same shared cells, in the same order, as `capacity compare
// --json`, each with both generation rates and the per-request statistics; the studies headed
// baseline and new; the comparison exported from the window as a receipt that `sparkbench
// verify` re-makes byte for byte.
func TestWindowComparesTwoCapacityStudies(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nbPath := filepath.Join(dir, "notebook.db")
	registerAndRunCapacity(t, compareCapacityPlan(t, dir, "window cap A", []int{1, 2}), nbPath, "1")
	registerAndRunCapacity(t, compareCapacityPlan(t, dir, "window cap B", []int{1, 2}), nbPath, "2")
	code, stdout, stderr := runCapacity("compare", "1", "2", "--notebook", nbPath, "--json")
	var c workbench.CapacityComparison
	if code != 0 || json.Unmarshal([]byte(stdout), &c) != nil || len(c.Cells) == 0 {
		t.Fatalf("capacity compare --json: %d\n%s%s", code, stdout, stderr)
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	wb := openCompareWindow(t, nb, filepath.Join(dir, "data"))
	cv := wb.Compare
	waitFor(t, "the capacity studies offered", func() bool { return len(cv.Choose.Options) >= 2 })
	ui.Locked(func() {
		cv.ChooseIDs(1, 2)
		test.Tap(cv.CompareBt)
	})
	waitFor(t, "the comparison", func() bool { return cv.Result != nil && !cv.CompareBt.Disabled() })
	ui.Locked(func() {
		r := cv.Result
		if len(r.Cells) != len(c.Cells) {
			t.Fatalf("%d cells in the window, %d from the CLI", len(r.Cells), len(c.Cells))
		}
		for i, cell := range c.Cells {
			row := r.Cells[i]
			if row[0] != "2 vs 1" || row[1] != fmt.Sprintf("%s P%d/C%d", cell.Candidate, cell.Slots, cell.Clients) ||
				row[2] != workbench.RateText(cell.GenerationRate[0])+" t/s" || !strings.HasPrefix(row[4], "TTFT ") {
				t.Errorf("cell %d: window %q, CLI %+v", i, row, cell)
			}
		}
		if len(r.Studies) != 2 || !strings.HasSuffix(r.Studies[0], "baseline") || !strings.HasSuffix(r.Studies[1], "new") || r.Footer == "" {
			t.Errorf("studies %q footer %q", r.Studies, r.Footer)
		}
		// The Charts tab offers the receipt's overlaid charts, the slots chart first.
		files := workbench.CapacityCompareCharts(&c)
		if len(r.Charts) != len(files) || len(r.Charts) < 2 || r.Charts[0].Name != "slots" || len(cv.ChartPick.Options) != len(files) || cv.ChartPick.Selected != "slots" {
			t.Fatalf("charts %d (picker %q, selected %q), receipt charts %d", len(r.Charts), cv.ChartPick.Options, cv.ChartPick.Selected, len(files))
		}
		for _, nc := range r.Charts {
			want := "plots/slots.png"
			if nc.Name != "slots" {
				want = "plots/latency-" + strings.TrimPrefix(nc.Name, "latency ") + ".png"
			}
			if got, ok := files[want]; !ok || !reflect.DeepEqual(got, nc.Chart) {
				t.Errorf("window chart %q is not the receipt's %s", nc.Name, want)
			}
		}
	})
	// Picking a latency chart draws it.
	for len(cv.Chart.Frames) > 0 {
		<-cv.Chart.Frames
	}
	ui.Locked(func() { cv.ChartPick.SetSelected(cv.Result.Charts[1].Name) })
	select {
	case <-cv.Chart.Frames:
	case <-time.After(20 * time.Second):
		t.Fatal("the picked latency chart was never drawn")
	}
	ui.Locked(func() {
		if _, ok := cv.Chart.Chart().(plots.LatencyChart); !ok {
			t.Errorf("the chart shown is a %T, want the latency chart", cv.Chart.Chart())
		}
	})
	out := filepath.Join(dir, "window-capacity-comparison")
	done := make(chan error, 1)
	ui.Locked(func() { cv.Export(cv.Chosen(), out, func(_ ui.ReceiptExport, err error) { done <- err }) })
	if err := <-done; err != nil {
		t.Fatalf("export from the window: %v", err)
	}
	if code, stdout, stderr := runCLI("verify", out); code != 0 || !strings.Contains(stdout+stderr, "comparison.md re-made from comparison.json byte for byte") {
		t.Fatalf("verify the window's comparison: %d\n%s%s", code, stdout, stderr)
	}
}
