package ui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/ui/uitest"
)

// slowJournal's operations wait for their context: only Cancel ends them.
type slowJournal struct{ fakeJournal }

func (slowJournal) Verify(ctx context.Context) (ChainStatus, error) {
	<-ctx.Done()
	return ChainStatus{}, ctx.Err()
}
func (slowJournal) Import(ctx context.Context, _ []string) ([]string, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (slowJournal) VerifyBundle(ctx context.Context, _ string) (bool, []string, error) {
	<-ctx.Done()
	return false, nil, ctx.Err()
}

// The chain check, an import and a bundle verification can each be cancelled, and say so.
func TestNotebookOperationsCancel(t *testing.T) {
	a := newTestApp(t)
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *NotebookView { return newNotebookView(w, slowJournal{}) })
	if !v.CancelBt.Disabled() {
		t.Fatal("Cancel is enabled with nothing running")
	}
	cancelWhen := func(what string) {
		t.Helper()
		waitSignalled(t, nil, 5*time.Second, func() bool { return !v.CancelBt.Disabled() }, func() string { return what + ": Cancel never enabled" })
		Locked(func() { test.Tap(v.CancelBt) })
	}
	Locked(v.Verify)
	cancelWhen("chain check")
	waitSignalled(t, nil, 5*time.Second, func() bool { return strings.HasPrefix(v.Chain.Text, "chain check cancelled") && v.CancelBt.Disabled() },
		func() string { return "chain: " + v.Chain.Text })

	Locked(func() { v.Import([]string{"/x/bench.jsonl"}) })
	cancelWhen("import")
	waitSignalled(t, nil, 5*time.Second, func() bool { return strings.Contains(uitest.DialogText(w.Canvas()), "Nothing was imported") },
		func() string { return "dialog: " + uitest.DialogText(w.Canvas()) })

	got := make(chan error, 1)
	Locked(func() { v.VerifyBundle("/x/bundle", func(_ bool, _ []string, err error) { got <- err }) })
	cancelWhen("bundle verification")
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "was cancelled") {
			t.Fatalf("verify after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled verification never reported")
	}
}

// slowReceipts' export waits for its context.
type slowReceipts struct{ *fakeStudies }

func (slowReceipts) Receipt(ctx context.Context, _ int64, _ string) (ReceiptExport, error) {
	<-ctx.Done()
	return ReceiptExport{}, ctx.Err()
}

// Cancel export stops a receipt being written, and says nothing was written.
func TestExportReceiptCancel(t *testing.T) {
	a := newTestApp(t)
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *StudiesView { return newStudiesView(a, w, slowReceipts{&fakeStudies{}}) })
	got := make(chan error, 1)
	Locked(func() { v.ExportReceipt(t.TempDir(), func(_ string, err error) { got <- err }) })
	waitSignalled(t, nil, 5*time.Second, func() bool { return !v.CancelExport.Disabled() }, nil)
	Locked(func() { test.Tap(v.CancelExport) })
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "the export was cancelled: nothing was written") {
			t.Fatalf("export after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled export never reported")
	}
	Locked(func() {
		if !strings.Contains(v.ProgressMsg.Text, "cancelled") || !v.CancelExport.Disabled() || v.ExportBar.Visible() {
			t.Errorf("after cancel: %q, cancel enabled %v, bar %v", v.ProgressMsg.Text, !v.CancelExport.Disabled(), v.ExportBar.Visible())
		}
	})
}

type brokenJournal struct{ fakeJournal }

func (brokenJournal) Journal(context.Context) ([]JournalRow, error) {
	return nil, errors.New("disk I/O error")
}

// A journal that cannot be read is said in a dialog with what to do, as well as in the view.
func TestNotebookReadErrorIsADialog(t *testing.T) {
	a := newTestApp(t)
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *NotebookView { return newNotebookView(w, brokenJournal{}) })
	Locked(v.Reload)
	waitSignalled(t, nil, 5*time.Second, func() bool {
		return strings.Contains(uitest.DialogText(w.Canvas()), "journal could not be read: disk I/O error")
	}, func() string { return "dialog: " + uitest.DialogText(w.Canvas()) })
	Locked(func() {
		if !strings.Contains(v.Chain.Text, "disk I/O error") {
			t.Errorf("chain label %q", v.Chain.Text)
		}
	})
}
