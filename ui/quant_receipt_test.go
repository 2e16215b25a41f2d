package ui

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/quant"
	"sparkbench/ui/uitest"
)

// receiptLadderStudies lists one ladder and exports a bundle of it: a receipt.md and a chart.
type receiptLadderStudies struct {
	ladderStudies
	mu   sync.Mutex
	ids  []int64
	outs []string
}

func (f *receiptLadderStudies) Receipt(_ context.Context, id int64, out string) (ReceiptExport, error) {
	f.mu.Lock()
	f.ids, f.outs = append(f.ids, id), append(f.outs, out)
	f.mu.Unlock()
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		return ReceiptExport{}, err
	}
	md := "# Quantization ladder tiny ladder\n\n| Type | Mean KLD |\n|---|---|\n| Q8_0 | 0.000500 |\n"
	return ReceiptExport{Summary: "wrote the ladder's receipt to " + out + "\nverified: OK",
		Files: map[string][]byte{"receipt.md": []byte(md), "plots/pareto.png": img.Bytes(), "records.json": []byte("[]")}}, nil
}

func (f *receiptLadderStudies) exports() ([]int64, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.ids...), append([]string(nil), f.outs...)
}

// A ladder's view exports its receipt as the other study views do: Ctrl+E (the Export receipt…
// button) asks for a folder and writes STUDY-ID-receipt there, the summary in the ladder's
// progress line, receipt.md and its charts previewed in the ladder's Receipt tab; as .tar.gz
// when ticked. The throughput view's widgets are left alone.
func TestQuantPanelExportsItsReceipt(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeQuant{plan: ladderPlan(), status: "registered"}
	studies := &receiptLadderStudies{}
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }, Studies: studies, Quant: svc})
	})
	defer Locked(func() { wb.Window.Close() })
	waitSignalled(t, wb.Studies.Updated, 10*time.Second, func() bool { return len(wb.Studies.studies) == 1 }, nil)
	Locked(func() { wb.Studies.Reload(5) })
	q := wb.Studies.Quant
	waitQuant(t, q, func() bool { return q.Study() != nil && !q.ReceiptButton.Disabled() })

	dir := t.TempDir()
	c := wb.Window.Canvas()
	Locked(func() {
		a.Preferences().SetString(prefLastReceipts, dir)
		wb.ShowSection("models")
		c.(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyE, Modifier: fyne.KeyModifierShortcutDefault})
		if wb.nav.Selected().Text != "Studies" {
			t.Errorf("Ctrl+E opened %q", wb.nav.Selected().Text)
		}
	})
	waitSignalled(t, nil, 10*time.Second, func() bool { return uitest.TapDialogButton(c, "Open") }, nil)
	var info string
	waitSignalled(t, nil, 10*time.Second, func() bool {
		info = uitest.DialogText(c)
		return strings.Contains(info, "Receipt written")
	}, func() string { return "dialog: " + uitest.DialogText(c) })
	want := filepath.Join(dir, "tiny-ladder-5-receipt")
	ids, outs := studies.exports()
	if len(ids) != 1 || ids[0] != 5 || outs[0] != want {
		t.Fatalf("exported %v to %v, want study 5 to %s", ids, outs, want)
	}
	Locked(func() {
		if !strings.Contains(info, "wrote the ladder's receipt to "+want) {
			t.Errorf("dialog %q", info)
		}
		if q.ProgressMsg.Text != "wrote the ladder's receipt to "+want+"\nverified: OK" || wb.Studies.ProgressMsg.Text != "" {
			t.Errorf("ladder's progress %q, throughput view's %q", q.ProgressMsg.Text, wb.Studies.ProgressMsg.Text)
		}
		if q.Tabs.Selected().Text != "Receipt" || len(q.ReceiptImgs.Objects) != 1 || !strings.Contains(q.Receipt.String(), "Q8_0  0.000500") {
			t.Errorf("preview: tab %q, %d chart(s), text %q", q.Tabs.Selected().Text, len(q.ReceiptImgs.Objects), q.Receipt.String())
		}
		if len(wb.Studies.ReceiptImgs.Objects) != 0 || q.ExportBar.Visible() || !q.CancelExport.Disabled() {
			t.Errorf("throughput preview %d chart(s); export bar shown %v, cancel enabled %v", len(wb.Studies.ReceiptImgs.Objects), q.ExportBar.Visible(), !q.CancelExport.Disabled())
		}
		uitest.TapDialogButton(c, "OK")
		q.ExportTarGz.SetChecked(true)
	})
	done := make(chan error, 1)
	Locked(func() { wb.Studies.ExportReceipt(dir, func(_ string, err error) { done <- err }) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, outs := studies.exports(); len(outs) != 2 || outs[1] != want+".tar.gz" {
		t.Fatalf("with .tar.gz ticked: %v", outs)
	}
	// While the ladder runs there is nothing stable to export.
	step := make(chan struct{})
	svc.step, svc.recs = step, []quant.Record{quantRecord("Q8_0", 27, 50, 0.0005)}
	Locked(func() { test.Tap(q.RunButton) })
	waitSignalled(t, nil, 10*time.Second, func() bool { return q.Running() && q.ReceiptButton.Disabled() }, nil)
	close(step)
	waitQuant(t, q, func() bool { return !q.Running() && !q.ReceiptButton.Disabled() })
}
