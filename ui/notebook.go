package ui

import (
	"context"
	"fmt"
	"sparkbench/app/study"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// JournalRow is one notebook journal entry as the timeline shows it.
type JournalRow struct {
	Seq     int64
	At      time.Time
	Kind    string
	StudyID int64
	Summary string // the payload, shortened
	// Sentence is the entry as people read it (workbench.JournalSentence); Tone groups its
	// kind for colour (workbench.JournalTone); Payload is the whole canonical JSON, shown
	// when the entry is expanded.
	Sentence string
	Tone     string
	Payload  string
}

// text is what the timeline shows of r after its number and time: its sentence, or (for a
// row without one) its kind and shortened payload.
func (r JournalRow) text() string {
	if r.Sentence != "" {
		return r.Sentence
	}
	return r.Kind + " " + r.Summary
}

// ChainStatus is the result of walking the journal's hash chain.
type ChainStatus struct {
	OK      bool
	Entries int
	Head    string
	Broken  string // the first broken entry and why
}

// NotebookService is the notebook as the Notebook section sees it.
type NotebookService interface {
	Journal(ctx context.Context) ([]JournalRow, error)
	Verify(ctx context.Context) (ChainStatus, error)
	// Import reads llama-bench output files (jsonl, json, csv, md) into imported legs and
	// says what it imported, one line per file.
	Import(ctx context.Context, paths []string) ([]string, error)
	// VerifyBundle checks a receipt bundle (folder or .tar.gz): ok, and one line per check.
	VerifyBundle(ctx context.Context, path string) (bool, []string, error)
}

// NotebookView is the journal timeline with filters, the chain's verification status and the
// import of llama-bench output files.
type NotebookView struct {
	Object   fyne.CanvasObject
	List     *widget.List
	Filter   *widget.Entry
	Kind     *widget.Select
	Study    *widget.Select // "all studies", "no study", "study N"
	Since    *widget.Entry  // YYYY-MM-DD: entries on or after that day (local time)
	Until    *widget.Entry  // YYYY-MM-DD: entries on or before that day
	DateErr  *widget.Label
	Chain    *widget.Label
	VerifyBt *widget.Button
	ImportBt *widget.Button
	BundleBt *widget.Button
	// CancelBt cancels the running chain check, import or bundle verification.
	CancelBt *widget.Button
	ops      *opCancel

	// The Predictions & findings tab (notebook_board.go).
	Tabs          *container.AppTabs
	Board         *widget.Table
	FindingsTable *widget.Table
	BoardNote     *widget.Label
	HumanBt       *widget.Button
	FindingBt     *widget.Button
	studies       StudyService
	report        *study.Report
	boardGen      uint64

	win  fyne.Window
	svc  NotebookService
	all  []JournalRow
	gen  uint64 // counts Reload calls: a journal read that finishes after a later one is dropped
	rows []JournalRow
	// Detail shows the selected entry: its sentence, kind, study and JSON payload (the
	// timeline row "expanded"); CopyPayload copies the payload.
	Detail      *widget.Label
	CopyPayload *widget.Button
	detailRow   *JournalRow
	wantSeq     int64  // SelectSeq's entry, selected again once the pending load has shown
	onLoaded    func() // after each journal load has been shown (the Find dialog searches again)
	// Updated receives after each background job has been shown (tests wait on it).
	Updated chan struct{}
}

func newNotebookView(win fyne.Window, svc NotebookService) *NotebookView {
	v := &NotebookView{win: win, svc: svc, Updated: make(chan struct{}, 16), Chain: widget.NewLabel("not verified yet")}
	v.Chain.Wrapping = fyne.TextWrapWord
	v.Filter = widget.NewEntry()
	v.Filter.SetPlaceHolder("filter: text in the entry, e.g. P1, tiny/d128, verdict")
	v.Filter.OnChanged = func(string) { v.apply() }
	v.Kind = widget.NewSelect([]string{"all kinds"}, func(string) { v.apply() })
	v.Kind.SetSelected("all kinds")
	v.Study = widget.NewSelect([]string{"all studies"}, func(string) {
		v.apply()
		v.loadBoard()
	})
	v.Study.SetSelected("all studies")
	v.Since, v.Until = widget.NewEntry(), widget.NewEntry()
	v.Since.SetPlaceHolder("from YYYY-MM-DD")
	v.Until.SetPlaceHolder("to YYYY-MM-DD")
	v.Since.OnChanged = func(string) { v.apply() }
	v.Until.OnChanged = func(string) { v.apply() }
	v.DateErr = widget.NewLabel("")
	v.List = newJournalList(func() []JournalRow { return v.rows })
	v.List.OnSelected = func(i widget.ListItemID) { v.expand(i) }
	v.Detail, v.CopyPayload = widget.NewLabel(""), widget.NewButton("Copy payload", v.copyPayload)
	v.CopyPayload.Disable()
	v.VerifyBt = widget.NewButton("Verify the chain", v.Verify)
	v.ImportBt = widget.NewButton("Import llama-bench output…", v.importDialog)
	v.BundleBt = widget.NewButton("Verify a bundle…", v.bundleDialog)
	v.ops = newOpCancel("Cancel")
	v.CancelBt = v.ops.Button
	if svc == nil {
		v.VerifyBt.Disable()
		v.ImportBt.Disable()
		v.BundleBt.Disable()
		v.Chain.SetText("the notebook is not open (see the Bench section)")
	}
	top := container.NewVBox(
		container.NewHBox(heading("Notebook"), v.VerifyBt, v.ImportBt, v.BundleBt, v.CancelBt, widget.NewButton("Refresh", v.Reload)),
		v.Chain,
		container.NewBorder(nil, nil, nil, container.NewHBox(v.Study, v.Kind, container.NewGridWrap(fyne.NewSize(150, 36), v.Since),
			container.NewGridWrap(fyne.NewSize(150, 36), v.Until)), v.Filter),
		v.DateErr,
	)
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Timeline", v.timeline()),
		container.NewTabItem("Predictions & findings", v.buildBoard()),
	)
	v.loadBoard()
	v.Object = container.NewBorder(top, nil, nil, nil, v.Tabs)
	return v
}

// Reload reads the journal (newest first).
func (v *NotebookView) Reload() {
	if v.svc == nil {
		return
	}
	v.gen++
	gen := v.gen
	go func() {
		rows, err := v.svc.Journal(context.Background())
		onUI(func() {
			if gen != v.gen {
				v.signal() // stale: the later Reload shows a journal at least as long
				return
			}
			if err != nil {
				v.Chain.SetText("could not read the journal: " + err.Error())
				dialog.ShowError(fmt.Errorf("the notebook's journal could not be read: %w. Check the notebook in the Bench section (its file, its disk), then Refresh", err), v.win)
			} else {
				v.all = rows
				kinds := []string{"all kinds"}
				seen := map[string]bool{}
				for _, r := range rows {
					if !seen[r.Kind] {
						seen[r.Kind] = true
						kinds = append(kinds, r.Kind)
					}
				}
				v.Kind.Options = kinds
				studies := []string{"all studies"}
				seenStudy := map[int64]bool{}
				noStudy := false
				for _, r := range rows {
					if r.StudyID == 0 {
						noStudy = true
					} else if !seenStudy[r.StudyID] {
						seenStudy[r.StudyID] = true
						studies = append(studies, fmt.Sprintf("study %d", r.StudyID))
					}
				}
				if noStudy {
					studies = append(studies, "no study")
				}
				v.Study.Options = studies
				v.apply()
				if v.wantSeq != 0 {
					v.selectSeq(v.wantSeq)
					v.wantSeq = 0
				}
				if v.onLoaded != nil {
					v.onLoaded()
				}
			}
			v.signal()
		})
	}()
}

func (v *NotebookView) apply() {
	if v.List == nil {
		return // still being built
	}
	text := strings.ToLower(strings.TrimSpace(v.Filter.Text))
	kind := v.Kind.Selected
	studySel := v.Study.Selected
	var errs []string
	day := func(field string, e *widget.Entry) (time.Time, bool) {
		s := strings.TrimSpace(e.Text)
		if s == "" {
			return time.Time{}, false
		}
		d, err := time.ParseInLocation("2006-01-02", s, time.Local)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %q: write the day as YYYY-MM-DD, e.g. 2026-12-02", field, s))
			return time.Time{}, false
		}
		return d, true
	}
	since, hasSince := day("from", v.Since)
	until, hasUntil := day("to", v.Until)
	v.DateErr.SetText(strings.Join(errs, "; "))
	v.rows = v.rows[:0]
	for _, r := range v.all {
		if kind != "" && kind != "all kinds" && r.Kind != kind {
			continue
		}
		switch {
		case studySel == "" || studySel == "all studies":
		case studySel == "no study":
			if r.StudyID != 0 {
				continue
			}
		case studySel != fmt.Sprintf("study %d", r.StudyID):
			continue
		}
		if hasSince && r.At.Before(since) || hasUntil && !r.At.Before(until.AddDate(0, 0, 1)) {
			continue
		}
		if text != "" && !strings.Contains(strings.ToLower(fmt.Sprintf("%d %s study %d %s %s", r.Seq, r.Kind, r.StudyID, r.Summary, r.Sentence)), text) {
			continue
		}
		v.rows = append(v.rows, r)
	}
	v.List.UnselectAll()
	v.List.Refresh()
	v.showDetail(nil)
}

// Verify walks the hash chain in the background and shows the result (Cancel stops it).
func (v *NotebookView) Verify() {
	v.Chain.SetText("verifying…")
	ctx, end := v.ops.start()
	go func() {
		st, err := v.svc.Verify(ctx)
		onUI(func() {
			end()
			switch {
			case ctx.Err() != nil && err != nil:
				v.Chain.SetText("chain check cancelled: press Verify the chain to run it again")
			case err != nil:
				v.Chain.SetText("could not verify: " + err.Error())
				dialog.ShowError(fmt.Errorf("the chain could not be checked: %w. Check the notebook in the Bench section, then Verify the chain again", err), v.win)
			case st.OK:
				v.Chain.SetText(fmt.Sprintf("chain intact: %d entries, head %s (write it down: a truncated journal would end on another head)", st.Entries, st.Head))
			default:
				v.Chain.SetText("CHAIN BROKEN at " + st.Broken)
			}
			v.signal()
		})
	}()
}

// Import imports files and shows what happened (Cancel stops it: an import is one
// transaction, so a cancelled one leaves the notebook as it was).
func (v *NotebookView) Import(paths []string) {
	ctx, end := v.ops.start()
	go func() {
		lines, err := v.svc.Import(ctx, paths)
		onUI(func() {
			end()
			if ctx.Err() != nil && err != nil {
				dialog.ShowInformation("Import cancelled", "Nothing was imported: the notebook is as it was.", v.win)
			} else if err != nil {
				dialog.ShowError(err, v.win)
			} else {
				dialog.ShowInformation("Imported", strings.Join(lines, "\n"), v.win)
			}
			v.signal()
			v.Reload()
		})
	}()
}

func (v *NotebookView) importDialog() {
	pickFile(prefLastImports, v.win, func(path string) { v.Import([]string{path}) })
}

func (v *NotebookView) signal() {
	select {
	case v.Updated <- struct{}{}:
	default:
	}
}

// VerifyBundle checks a bundle in the background (Cancel stops it, with an error saying so);
// done runs on the UI goroutine.
func (v *NotebookView) VerifyBundle(path string, done func(ok bool, lines []string, err error)) {
	ctx, end := v.ops.start()
	go func() {
		ok, lines, err := v.svc.VerifyBundle(ctx, path)
		if ctx.Err() != nil {
			ok, lines, err = false, nil, fmt.Errorf("the verification of %s was cancelled: nothing was checked to the end", path)
		}
		onUI(func() {
			end()
			done(ok, lines, err)
		})
	}()
}

// bundleDialog asks which kind of bundle to verify — a folder, or a .tar.gz as exported or
// received — then picks it and verifies it.
func (v *NotebookView) bundleDialog() {
	var d dialog.Dialog
	pick := func(folder bool) func() {
		return func() {
			d.Hide()
			if folder {
				pickFolder(prefLastBundles, v.win, v.verifyPicked)
				return
			}
			pickFile(prefLastBundles, v.win, v.verifyPicked, ".gz", ".tgz")
		}
	}
	d = dialog.NewCustom("Verify a bundle", "Cancel", container.NewVBox(
		widget.NewLabel("A receipt bundle is a folder or a .tar.gz archive: which one?"),
		container.NewHBox(widget.NewButton("A folder…", pick(true)), widget.NewButton("A .tar.gz file…", pick(false))),
	), v.win)
	d.Show()
}

// verifyPicked verifies the bundle at path and shows each check's result in a dialog.
func (v *NotebookView) verifyPicked(path string) {
	v.VerifyBundle(path, func(ok bool, lines []string, err error) {
		switch {
		case err != nil:
			dialog.ShowError(err, v.win)
		case ok:
			dialog.ShowInformation("Bundle verified", strings.Join(lines, "\n"), v.win)
		default:
			dialog.ShowError(fmt.Errorf("the bundle does not verify:\n%s", strings.Join(lines, "\n")), v.win)
		}
	})
}
